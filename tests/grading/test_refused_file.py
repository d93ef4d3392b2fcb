"""A file the scanner refused never runs (issue 31, item 4), in a real sandbox.

The "oracle" child lends mha.py a working attention, and loads the student's attention.py only for
names beyond the four of the contract (a helper). A refused attention.py is not copied into that
child at all: such a name fails with the scanner's line, so MHA earns nothing from the refused code.
"""
import os
import textwrap
from types import SimpleNamespace

import pytest
import torch

from autograder.config import Limits
from autograder.containment import isolation
from autograder.containment.zygote import Zygote
from autograder.grading.student import Failure, Student
from autograder.paths import KIT_ROOT

pytestmark = pytest.mark.slow  # a zygote imports torch

# Working code the scanner refuses: it names torch's attention built-in (in a function never called).
REFUSED_ATTENTION = """\
    import torch

    def split_heads(x, n_heads):
        batch, length, width = x.shape
        return x.view(batch, length, n_heads, width // n_heads).transpose(1, 2)

    def scaled_dot_product_attention(query, key, value, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(query, key, value), None
    """
MHA_WITH_A_HELPER = """\
    from attention import split_heads

    def heads(x):
        return split_heads(x, 2)
    """


@pytest.fixture(scope="module")
def zygote():
    started = Zygote(isolation.choose_level(), hidden=[KIT_ROOT])
    yield started
    started.stop()


def student_over(tmp_path, zygote, attention, mha):
    staged = tmp_path / "staged"
    staged.mkdir()
    tmp_path.chmod(0o755)
    (staged / "attention.py").write_text(textwrap.dedent(attention))
    (staged / "mha.py").write_text(textwrap.dedent(mha))
    return Student(zygote, SimpleNamespace(dir=str(staged)), Limits(call_seconds=20))


def test_a_helper_from_a_refused_attention_py_earns_mha_nothing(tmp_path, zygote):
    student = student_over(tmp_path, zygote, REFUSED_ATTENTION, MHA_WITH_A_HELPER)
    try:
        outcome = student.try_call("mha.heads", torch.randn(1, 3, 4), mode="oracle")
    finally:
        student.close()
    assert isinstance(outcome, Failure), "mha.py ran a helper of the attention.py the scanner refused"
    assert "mha.py uses split_heads from attention.py, which the grader refused: attention.py, line " in outcome.message
    assert "scaled_dot_product_attention" in outcome.message, outcome.message


def test_a_helper_from_an_accepted_attention_py_still_comes_from_the_students_file(tmp_path, zygote):
    """The control: the same helper, in a file the scanner accepts, is lent to mha.py as before."""
    accepted = REFUSED_ATTENTION.replace("torch.nn.functional.scaled_dot_product_attention(query, key, value)", "query")
    student = student_over(tmp_path, zygote, accepted, MHA_WITH_A_HELPER)
    try:
        reply = student.call("mha.heads", torch.randn(1, 3, 4), mode="oracle")
    finally:
        student.close()
    assert tuple(reply.result.shape) == (1, 2, 3, 2)


def test_the_oracle_child_never_holds_a_refused_attention_py(tmp_path, zygote):
    """Left out of the child's folder: even mha.py code that reads it finds nothing to run."""
    contract_only = "from attention import causal_mask\n\ndef mask(n):\n    return causal_mask(n)\n"
    student = student_over(tmp_path, zygote, REFUSED_ATTENTION, contract_only)
    try:
        assert student.call("mha.mask", 3, mode="oracle").result.dtype == torch.bool, "the contract's names still work"
        scratch = [name for name in os.listdir(tmp_path) if ".run" in name]
    finally:
        student.close()
    folders = [tmp_path / name for name in scratch if os.path.isdir(tmp_path / name) and not name.endswith(".root")]
    assert folders, scratch
    for folder in folders:  # its attention.py is the reference's (autograder/grading/oracle.py), and nothing else
        assert sorted(os.listdir(folder)) == ["attention.py", "mha.py"], os.listdir(folder)
        assert "__kit_oracle__" in (folder / "attention.py").read_text(), "the oracle, not the refused file"
