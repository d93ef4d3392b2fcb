"""The parent's proof that a function can only raise (autograder/grading/raises.py): the measured memory call of a
function never written, or left as the stub, needs no fresh child. Any binding the grammar cannot follow
withholds the proof, and then the call runs as always."""
import textwrap

import pytest

from autograder.grading.raises import only_raises
from conftest import ROOT

STUB = (ROOT / "assignment" / "attention.py").read_bytes()
REFERENCE = (ROOT / "solution" / "attention.py").read_bytes()
MHA = (ROOT / "solution" / "mha.py").read_bytes()
NOT_WRITTEN = b'"""Masks and attention; tiled_attention is extra credit, not done."""\nimport torch\n\n\ndef f(x):\n    return x\n'


def proof(attention, mha=MHA):
    return only_raises({"attention.py": attention, "mha.py": mha}, "attention", "tiled_attention")


def test_a_function_never_written_can_only_be_missing():
    assert proof(NOT_WRITTEN) == "AttributeError"


def test_the_untouched_stub_can_only_raise_not_implemented():
    assert proof(STUB) == "NotImplementedError"


def test_a_written_function_is_not_proved_to_raise():
    assert proof(REFERENCE) is None


@pytest.mark.parametrize("binding", [
    "tiled_attention = f",
    "globals()['tiled_attention'] = f",
    "setattr(sys.modules[__name__], 'tiled_attention', f)",
    "globals().update(tiled_attention=f)",
    "from helpers import *",
    "def __getattr__(name):\n    return f",
    "import helpers as tiled_attention",
    "for tiled_attention in [f]:\n    pass",
])
def test_any_other_way_to_bind_the_name_withholds_the_proof(binding):
    assert proof(NOT_WRITTEN + b"\n" + binding.encode() + b"\n") is None


def test_the_other_file_binding_it_on_the_module_withholds_the_proof():
    patched = MHA + b"\nimport attention\nattention.tiled_attention = lambda *a, **k: None\n"
    assert proof(NOT_WRITTEN, patched) is None


def test_a_file_that_does_not_compile_binds_nothing():
    assert proof(NOT_WRITTEN, b"def broken(:\n    tiled_attention = 1\n") == "AttributeError"


def stub_with(body, decorator=""):
    return textwrap.dedent(f'''
        import torch
        {decorator}
        def tiled_attention(query, key, value, causal=False, block_size=64):
            """Extra credit."""
    ''').encode() + textwrap.indent(textwrap.dedent(body), "    ").encode()


@pytest.mark.parametrize("body", ["raise NotImplementedError\n", "raise NotImplementedError('extra credit')\n"])
def test_a_stub_raising_a_constant_is_proved(body):
    assert proof(stub_with(body)) == "NotImplementedError"


@pytest.mark.parametrize("body, decorator", [
    ("if block_size > 1:\n    raise NotImplementedError\nreturn query\n", ""),
    ("raise NotImplementedError(query.shape)\n", ""),
    ("raise NotImplementedError\n", "@torch.no_grad()"),
    ("raise ValueError('not yet')\n", ""),
])
def test_a_body_that_may_do_more_or_raise_otherwise_is_not_a_stub(body, decorator):
    assert proof(stub_with(body, decorator)) is None


def test_a_rebound_exception_name_withholds_the_stub_proof():
    assert proof(stub_with("raise NotImplementedError\n") + b"\nNotImplementedError = RuntimeError\n") is None


def test_a_second_definition_withholds_the_stub_proof():
    assert proof(stub_with("raise NotImplementedError\n") + b"\ntiled_attention = tiled_attention\n") is None
