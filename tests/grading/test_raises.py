"""The parent's proof that a function can only raise (autograder/grading/raises.py): the measured memory call of a
function never written, or left as the stub, needs no fresh child. Any binding the grammar cannot follow
withholds the proof, and then the call runs as always."""
import sys
import textwrap

import pytest
import torch

from autograder.grading.raises import method_only_raises, only_raises
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


# --- a method of MultiHeadAttention, as torch reaches it (``method_only_raises``) ---------------------------

STUB_MHA = (ROOT / "assignment" / "mha.py").read_text()
SOLUTION_MHA = MHA.decode()


def method_proof(mha_text, method="forward", attention=REFERENCE):
    return method_only_raises({"attention.py": attention, "mha.py": mha_text.encode()}, "mha", "MultiHeadAttention",
                              method)


def without_step(text):
    """The solution's mha.py with its extra-credit ``step`` cut out, as a student who skipped it hands it in."""
    start = text.index("    def step(")
    end = text.find("\n    def ", start + 1)
    return text[:start] + (text[end + 1:] if end != -1 else "")


def in_init(text, line):
    """``text`` with ``line`` run at the end of MultiHeadAttention.__init__ (an ``if True:`` reaches past the stub's
    raise without changing what runs: the raise comes first in the stub, and the grader's lent construction
    runs __init__ too)."""
    head = text.index("class MultiHeadAttention")
    at = text.index("    def __init__(", head)
    body = text.index("\n", text.index(":\n", at)) + 1
    return text[:body] + f"        {line}\n" + text[body:]


def test_the_untouched_stubs_forward_and_step_can_only_raise_not_implemented():
    assert method_proof(STUB_MHA, "forward") == method_proof(STUB_MHA, "step") == "NotImplementedError"


def test_a_step_never_written_can_only_be_missing():
    assert method_proof(without_step(SOLUTION_MHA), "step") == "AttributeError"


def test_written_methods_are_not_proved_to_raise():
    assert method_proof(SOLUTION_MHA, "forward") is None
    assert method_proof(SOLUTION_MHA, "step") is None


def test_a_method_torch_gives_every_module_is_never_proved_missing():
    no_forward = STUB_MHA.replace("    def forward(", "    def not_forward(")
    assert method_proof(no_forward, "forward") is None, "nn.Module has a forward of its own"


@pytest.mark.parametrize("line", [
    "self.forward = self.split_heads",
    "self._call_impl = lambda *args, **kwargs: args[0]",
    "self._compiled_call_impl = lambda *args, **kwargs: args[0]",
    "self.__class__ = Helper",
    "setattr(self, 'forward', self.split_heads)",
    "setattr(self, name, self.split_heads)",
    "object.__setattr__(self, name, self.split_heads)",
    "type(self).__call__ = lambda self, *args: args[0]",
    "self.add_module(name, nn.Identity())",
    "self.register_module('_forward_hooks', nn.Identity())",
    "vars(self).update(forward=self.split_heads)",
    "self._forward_pre_hooks = {}",
])
def test_any_way_to_reach_past_the_stub_forward_withholds_the_proof(line):
    assert method_proof(in_init(STUB_MHA, line), "forward") is None


@pytest.mark.parametrize("change", [
    ("class MultiHeadAttention(nn.Module):", "class MultiHeadAttention(Helper):"),
    ("class MultiHeadAttention(nn.Module):", "@functools.cache\nclass MultiHeadAttention(nn.Module):"),
    ("class MultiHeadAttention(nn.Module):", "class MultiHeadAttention(nn.Module, metaclass=type):"),
    ("import torch.nn as nn", "import torch.nn as nn\nnn = helpers"),
    ("    def forward(", "    def __call__(self, *args):\n        return args[0]\n\n    def forward("),
    ("    def forward(", "    def __getattribute__(self, name):\n        return object.__getattribute__(self, name)\n\n"
                       "    def forward("),
    ("    def forward(", "    forward = None\n\n    def forward("),
    ("    def forward(", "    @torch.no_grad()\n    def forward("),
])
def test_a_class_torch_may_not_reach_as_written_withholds_the_proof(change):
    old, new = change
    assert old in STUB_MHA
    assert method_proof(STUB_MHA.replace(old, new, 1), "forward") is None


@pytest.mark.parametrize("tail", [
    "MultiHeadAttention.forward = lambda self, *args: args[0]",
    "MultiHeadAttention = Helper",
    "nn.Module.__call__ = lambda self, *args: args[0]",
    "from helpers import *",
    "NAME = 'forward'",
])
def test_a_binding_after_the_class_withholds_the_proof(tail):
    assert method_proof(STUB_MHA + "\n" + tail + "\n", "forward") is None


@pytest.mark.parametrize("line", [
    "self.step = self.forward",
    "self.add_module('step', nn.Identity())",
    "self.register_buffer(name, torch.zeros(1))",
])
def test_any_way_to_bind_a_step_never_written_withholds_the_proof(line):
    assert method_proof(in_init(without_step(SOLUTION_MHA), line), "step") is None


def test_the_other_file_patching_the_class_withholds_the_proof():
    patched = REFERENCE + b"\nimport mha\nmha.MultiHeadAttention.forward = lambda self, *args: args[0]\n"
    assert method_proof(STUB_MHA, "forward", attention=patched) is None


@pytest.mark.parametrize("mha_text, method, error", [
    (STUB_MHA, "forward", NotImplementedError),
    (STUB_MHA, "step", NotImplementedError),
    (without_step(SOLUTION_MHA), "step", AttributeError),
])
def test_what_is_proved_is_what_the_call_raises(tmp_path, monkeypatch, mha_text, method, error):
    """The proof checked against the running code (the kit's own files, run here, not a submission's)."""
    assert method_proof(mha_text, method) == error.__name__
    (tmp_path / "attention.py").write_bytes(REFERENCE)
    (tmp_path / "mha.py").write_text(mha_text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("attention", "mha"):
        sys.modules.pop(name, None)
    try:
        import mha
        x = torch.randn(2, 3, 8)
        try:
            module = mha.MultiHeadAttention(8, 2)
        except NotImplementedError:  # the stub's __init__: the grader's lent construction leaves a bare module
            module = mha.MultiHeadAttention.__new__(mha.MultiHeadAttention)
            torch.nn.Module.__init__(module)
        with pytest.raises(error):
            module(x, x, x) if method == "forward" else module.step(x[:, :1], None)
    finally:
        for name in ("attention", "mha"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize("line", [
    "vars(self)[name] = self.split_heads",
    "self.__dict__[name] = self.split_heads",
    "globals()['MultiHeadAttention'] = Helper",
    "exec(code)",
])
def test_a_namespace_reached_by_a_computed_key_withholds_the_proof(line):
    """The rule's scanner refuses these too; the proof does not rely on it."""
    assert method_proof(in_init(STUB_MHA, line), "forward") is None
