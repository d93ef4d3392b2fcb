"""The oracle folder (autograder/grading/oracle.py): the student's mha.py beside the reference's attention,
written by the parent for MHA's parts only.

Each test writes the folder ``oracle_files`` gives and imports it as the child does
(``probes.Submission``), in this process.
"""
import sys
import textwrap

import pytest
import torch

from autograder.containment.probes import ImportFailed, Submission, construct, describe_exception
from autograder.containment.protocol import LENT_MODULE, STUDENT_MODULES, Construct, Lend
from autograder.grading import oracle


@pytest.fixture
def staged(tmp_path):
    """The student's staged files (write them with ``write``)."""
    folder = tmp_path / "staged"
    folder.mkdir()
    return folder


@pytest.fixture
def child_folder(tmp_path, monkeypatch):
    """Where the oracle child's files go, first on sys.path; "attention" and "mha" leave sys.modules as found."""
    folder = tmp_path / "child"
    folder.mkdir()
    saved = {name: sys.modules.pop(name) for name in STUDENT_MODULES if name in sys.modules}
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in STUDENT_MODULES:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


def write(folder, attention=None, mha=None):
    for name, text in (("attention.py", attention), ("mha.py", mha)):
        if text is not None:
            (folder / name).write_text(textwrap.dedent(text))


def oracle_child(staged, child_folder, refused=None):
    for name, data in oracle.oracle_files(str(staged), refused).items():
        (child_folder / name).write_bytes(data)
    return Submission(str(child_folder))


BROKEN_ATTENTION = "raise RuntimeError('attention.py is broken')\n"


def test_the_oracle_is_the_reference_on_every_mask_kind(staged, child_folder, reference):
    write(staged, mha="from attention import *\n")
    lent = oracle_child(staged, child_folder).module("mha")
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 4, dtype=torch.float64) for _ in range(3))
    tokens = torch.tensor([[3, 1, 0, 0, 0], [4, 4, 4, 2, 0]])
    assert torch.equal(lent.causal_mask(5), reference.attention.causal_mask(5))
    assert torch.equal(lent.padding_mask(tokens, 0), reference.attention.padding_mask(tokens, 0))
    for mask in (None, lent.causal_mask(5), lent.padding_mask(tokens, 0), lent.causal_mask(5).double()):
        for got, expected in zip(lent.scaled_dot_product_attention(q, k, v, mask),
                                 reference.attention.scaled_dot_product_attention(q, k, v, mask)):
            torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_the_oracles_attention_class_takes_whatever_arguments_the_students_mha_builds_it_with(staged, child_folder):
    write(staged, mha="""\
        from attention import ScaledDotProductAttention

        attend = ScaledDotProductAttention(0.1, temperature=2.0)
        """)
    mha = oracle_child(staged, child_folder).module("mha")
    x = torch.randn(1, 3, 4)
    expected = torch.softmax(x @ x.transpose(-2, -1) / 2, dim=-1) @ x
    torch.testing.assert_close(mha.attend(x, x, x)[0], expected)


def test_the_oracle_is_cut_from_the_reference_source_not_copied():
    source = oracle.oracle_source()
    for name in oracle.CONTRACT:
        assert f"def {name}(" in source or f"class {name}(" in source
    assert "def tiled_attention" not in source, "only the contract's names: the extra credit is not lent"


def test_a_reference_without_the_contract_is_refused_in_one_line(tmp_path):
    broken = tmp_path / "attention.py"
    broken.write_text("import torch\n\ndef causal_mask(n):\n    return None\n")
    with pytest.raises(ValueError, match="does not define padding_mask, scaled_dot_product_attention"):
        oracle.oracle_source(reference=str(broken))


def test_mha_imports_even_when_the_students_attention_py_is_broken(staged, child_folder):
    write(staged, attention=BROKEN_ATTENTION, mha="""\
        from attention import causal_mask, scaled_dot_product_attention

        def attend(x):
            return scaled_dot_product_attention(x, x, x, causal_mask(x.size(-2)))[1]
        """)
    weights = oracle_child(staged, child_folder).module("mha").attend(torch.randn(1, 3, 4))
    assert torch.equal(weights[0, 0, 1:], torch.zeros(2)), "the oracle's causal mask hides the future"


def test_a_helper_comes_from_the_students_file_and_calls_the_oracle(staged, child_folder):
    write(staged, attention="""\
        import torch

        def scaled_dot_product_attention(q, k, v, mask=None):
            return torch.zeros_like(q), None  # wrong: the oracle replaces it

        attention = scaled_dot_product_attention

        def doubled(q, k, v):
            return 2 * scaled_dot_product_attention(q, k, v)[0]
        """, mha="from attention import attention, doubled\n")
    mha = oracle_child(staged, child_folder).module("mha")
    x = torch.randn(1, 3, 4)
    expected = torch.softmax(x @ x.transpose(-2, -1) / 2, dim=-1) @ x
    torch.testing.assert_close(mha.doubled(x, x, x), 2 * expected)
    torch.testing.assert_close(mha.attention(x, x, x)[0], expected, msg="an alias of a contract name is the oracle's")


def test_a_helper_from_a_broken_attention_py_fails_the_mha_import_with_the_students_line(staged, child_folder):
    write(staged, attention="import torch\n" + BROKEN_ATTENTION, mha="from attention import helper\n")
    with pytest.raises(ImportFailed) as failed:
        oracle_child(staged, child_folder).module("mha")
    info = failed.value.info
    assert (info.type, info.message, info.phase) == ("RuntimeError", "attention.py is broken", "importing mha.py")
    assert (info.where.file, info.where.line) == ("attention.py", 2), "the student's own file and line"


def test_a_refused_attention_py_is_not_in_the_folder_and_its_helpers_fail_with_the_scanners_line(staged, child_folder):
    write(staged, attention="raise RuntimeError('attention.py ran')\n", mha="from attention import helper\n")
    line = "attention.py, line 3: torch.nn.MultiheadAttention is not allowed"
    files = oracle.oracle_files(str(staged), line)
    assert set(files) == {"attention.py", "mha.py"}, "the refused file never reaches the child"
    with pytest.raises(ImportFailed) as failed:
        oracle_child(staged, child_folder, line).module("mha")
    assert (failed.value.info.type, failed.value.info.message) == (
        "RefusedFile", f"mha.py uses helper from attention.py, which the grader refused: {line}")


def test_a_refused_attention_py_still_lends_the_contracts_names(staged, child_folder):
    write(staged, attention="raise RuntimeError('attention.py ran')\n", mha="from attention import *\n")
    mha = oracle_child(staged, child_folder, "refused").module("mha")
    assert torch.equal(mha.causal_mask(2), torch.tensor([[True, False], [True, True]]))


def test_an_error_inside_the_oracle_points_at_the_students_mha_line_not_the_oracle(staged, child_folder):
    write(staged, mha="""\
        from attention import scaled_dot_product_attention

        def attend(x):
            return scaled_dot_product_attention(x, x[..., :2], x)
        """)
    mha = oracle_child(staged, child_folder).module("mha")
    with pytest.raises(RuntimeError) as raised:
        mha.attend(torch.randn(1, 3, 4))
    where = describe_exception(raised.value, "calling mha.attend").where
    assert (where.file, where.line, where.function) == ("mha.py", 4, "attend")


# --- a "below" child: the lab's lower parts lent to the student's module ---------------------------

def below_child(staged, child_folder):
    for name, data in oracle.below_files(str(staged)).items():
        (child_folder / name).write_bytes(data)
    return Submission(str(child_folder))


BROKEN_MHA = """\
    import torch.nn as nn

    class MultiHeadAttention(nn.Module):
        def __init__(self, d_model, n_heads, bias=True):
            super().__init__()
            self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads + 1
            self.w_q = nn.Linear(d_model, d_model, bias=False)

        def split_heads(self, x):
            return x

        def merge_heads(self, x):
            return x
    """


def test_only_the_lent_methods_are_cut_from_the_reference_never_forward_or_step():
    source = oracle.lent_source()
    assert "def split_heads(self, x)" in source and "def merge_heads(self, x)" in source
    for name in ("forward", "step", "__init__", "scaled_dot_product_attention("):
        assert f"def {name}" not in source and "from attention" not in source
    assert f"{oracle.MARKER} = True" in source, "its frames are the grader's, never shown as the student's"


def test_only_a_below_child_holds_the_lent_methods(staged):
    write(staged, attention="x = 1\n", mha="y = 2\n")
    assert f"{LENT_MODULE}.py" not in oracle.oracle_files(str(staged))
    below = oracle.below_files(str(staged))
    assert below[f"{LENT_MODULE}.py"] == oracle.lent_source().encode()
    assert set(below) - {f"{LENT_MODULE}.py"} == set(oracle.oracle_files(str(staged)))


def test_a_lend_replaces_the_students_sizes_layers_and_methods_with_the_labs(staged, child_folder, reference):
    write(staged, mha=BROKEN_MHA)
    submission = below_child(staged, child_folder)
    cls = submission.module("mha").MultiHeadAttention
    lend = Lend({"d_model": 12, "n_heads": 3, "d_k": 4}, {n: [12, 12, True] for n in ("w_q", "w_k", "w_v", "w_o")},
                ["split_heads", "merge_heads"])
    module = construct(cls, Construct([12, 3]), lend, str(child_folder))
    x = torch.randn(2, 5, 12)
    expected = reference.mha.MultiHeadAttention(12, 3)
    assert module.d_k == 4 and module.w_q.bias is not None and module.w_o.in_features == 12
    assert torch.equal(module.split_heads(x), expected.split_heads(x))
    assert torch.equal(module.merge_heads(module.split_heads(x)), x)


def test_an_init_that_raises_leaves_a_bare_module_for_the_lent_parts(staged, child_folder):
    write(staged, mha="""\
        import torch.nn as nn

        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, n_heads, bias=True):
                raise NotImplementedError
        """)
    cls = below_child(staged, child_folder).module("mha").MultiHeadAttention
    module = construct(cls, Construct([8, 2]), Lend({"d_k": 4}, {"w_o": [8, 8, False]}), str(child_folder))
    assert isinstance(module, cls) and module.d_k == 4 and module.w_o.bias is None
    with pytest.raises(NotImplementedError):
        construct(cls, Construct([8, 2]), None, str(child_folder))
