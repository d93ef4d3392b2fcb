"""assignment/submit.py: the zip on good folders, one-line refusals on bad ones, and its scanner."""
import importlib.util
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

SUBMIT = ROOT / "assignment" / "submit.py"
SOLUTION = ROOT / "solution"
FILES = ["attention.py", "mha.py"]


def load_submit():
    """Import submit.py by path, the way the grader does."""
    spec = importlib.util.spec_from_file_location("lab_submit", SUBMIT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


submit = load_submit()


def make_folder(tmp_path, **edits):
    """A copy of the reference in tmp_path/sub; edits map 'attention'/'mha' to an edit function or None (delete)."""
    folder = tmp_path / "sub"
    folder.mkdir()
    for name in FILES:
        shutil.copy(SOLUTION / name, folder / name)
    for stem, edit in edits.items():
        path = folder / f"{stem}.py"
        if edit is None:
            path.unlink()
        else:
            path.write_text(edit(path.read_text()))
    return folder


def run_submit(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)


# ----------------------------------------------------------------------------- the zip

@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
def test_good_folder_gives_a_zip_of_exactly_the_two_files(tmp_path):
    folder = make_folder(tmp_path)
    (folder / "notes.txt").write_text("not for the zip")
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, folder, cwd=out)
    assert proc.returncode == 0, proc.stderr
    assert "Gradescope" in proc.stdout
    with zipfile.ZipFile(out / "submission.zip") as archive:
        assert sorted(archive.namelist()) == FILES
        for name in FILES:
            assert archive.read(name) == (folder / name).read_bytes()


@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
def test_default_folder_is_the_one_holding_submit_py(tmp_path):
    folder = make_folder(tmp_path)
    shutil.copy(SUBMIT, folder / "submit.py")
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(folder / "submit.py", cwd=out)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out / "submission.zip") as archive:
        assert sorted(archive.namelist()) == FILES


BAD_FOLDERS = {
    "missing file": ({"mha": None}, "mha.py not found"),
    "syntax error": ({"attention": lambda s: s + "\ndef broken(:\n"}, "attention.py has a syntax error at line"),
    "import error": ({"mha": lambda s: "from attention import no_such_name_lab03\n" + s}, "cannot import mha.py"),
    "hidden call": ({"attention": lambda s: s + "\nexec('x = 1')\n"}, "exec is not allowed"),
    "error at import time": ({"attention": lambda s: s + "\n1 / 0\n"}, "ZeroDivisionError"),
    "forbidden sdpa": ({"attention": lambda s: s + "\nimport torch.nn.functional as F\n"
                                                   "SDPA = F.scaled_dot_product_attention\n"},
                       "torch.nn.functional.scaled_dot_product_attention, which is not allowed"),
    "forbidden mha": ({"mha": lambda s: s + "\nREFERENCE = nn.MultiheadAttention\n"},
                      "torch.nn.MultiheadAttention, which is not allowed"),
}


@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_bad_folder_gets_one_line_exit_1_and_no_zip(tmp_path, case):
    edits, expected = BAD_FOLDERS[case]
    folder = make_folder(tmp_path, **edits)
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, folder, cwd=out)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("submit: "), proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert list(out.iterdir()) == [], "a refused submission must leave no zip behind"


@pytest.mark.parametrize("case", ["syntax error", "forbidden sdpa"])
def test_a_refused_submission_removes_the_stale_zip_and_says_so(tmp_path, case):
    edits, expected = BAD_FOLDERS[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / "submission.zip").write_bytes(b"an earlier, passing version")
    proc = run_submit(SUBMIT, make_folder(tmp_path, **edits), cwd=out)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "removed the old submission.zip" in lines[0], proc.stderr
    assert not (out / "submission.zip").exists(), "a failed make submit must not leave the old zip to upload"


def test_a_refused_submission_without_an_old_zip_mentions_none(tmp_path):
    edits, _ = BAD_FOLDERS["syntax error"]
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, make_folder(tmp_path, **edits), cwd=out)
    assert proc.returncode == 1 and "removed" not in proc.stderr, proc.stderr


def without_solution_of(text, function):
    """The reference text with the solution region of ``function`` (its first one) back to the stub."""
    head, tail = text.split(function)
    begin, end = tail.index("### BEGIN SOLUTION"), tail.index("### END SOLUTION") + len("### END SOLUTION")
    return head + function + tail[:begin] + "raise NotImplementedError" + tail[end:]


@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
def test_unwritten_extra_credit_is_named_as_optional_and_nothing_else_is_flagged(tmp_path):
    folder = make_folder(tmp_path)
    for name, function in [("attention.py", "def tiled_attention("), ("mha.py", "def step(")]:
        original = (SOLUTION / name).read_text()
        (folder / name).write_text(without_solution_of(original, function))
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, folder, cwd=out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[1:] == [
        "Optional extra credit not written (this costs nothing else): "
        "tiled_attention (attention.py), MultiHeadAttention.step (mha.py)."], proc.stdout


@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
def test_unfinished_core_functions_are_named_before_upload(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, ROOT / "assignment", cwd=out)
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stdout.splitlines() if line.startswith("Note: still raise"))
    for name in ("causal_mask (attention.py)", "ScaledDotProductAttention.forward (attention.py)",
                 "MultiHeadAttention.__init__ (mha.py)", "MultiHeadAttention.forward (mha.py)"):
        assert name in note, note
    assert "tiled_attention" not in note and "step" not in note, "extra credit is listed on its own line"


@pytest.mark.slow  # submit.py imports the files in a fresh python (a torch import each)
def test_the_reference_gets_no_note(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = run_submit(SUBMIT, make_folder(tmp_path), cwd=out)
    assert proc.returncode == 0 and "NotImplementedError" not in proc.stdout and "extra credit" not in proc.stdout


# ----------------------------------------------------------------------------- find_forbidden_calls

SDPA = "torch.nn.functional.scaled_dot_product_attention"
MHA = "torch.nn.MultiheadAttention"
MHA_FORWARD = "torch.nn.functional.multi_head_attention_forward"

FLAGGED = {
    "F alias": ("import torch.nn.functional as F\nF.scaled_dot_product_attention(q, k, v)", SDPA),
    "full path": ("import torch\ntorch.nn.functional.scaled_dot_product_attention(q, k, v)", SDPA),
    "from import": ("from torch.nn.functional import scaled_dot_product_attention", SDPA),
    "from import as": ("from torch.nn.functional import scaled_dot_product_attention as sdpa", SDPA),
    "functional as": ("from torch.nn import functional as fn\nfn.scaled_dot_product_attention(q, k, v)", SDPA),
    "getattr": ("import torch\ngetattr(torch.nn.functional, 'scaled_dot_product_attention')", SDPA),
    "nn.MultiheadAttention": ("import torch.nn as nn\nnn.MultiheadAttention(8, 2)", MHA),
    "torch.nn.MultiheadAttention": ("import torch\ntorch.nn.MultiheadAttention(8, 2)", MHA),
    "from torch import nn": ("from torch import nn\nlayer = nn.MultiheadAttention(8, 2)", MHA),
    "import MultiheadAttention": ("from torch.nn import MultiheadAttention", MHA),
    "mha forward": ("import torch.nn.functional as F\nF.multi_head_attention_forward(x)", MHA_FORWARD),
    "import mha forward": ("from torch.nn.functional import multi_head_attention_forward", MHA_FORWARD),
    "transformer layer": ("import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(8, 2)", "torch.nn.TransformerEncoderLayer"),
}

# Code that can hide what it calls: flagged as kind "hidden", whatever it would have called.
HIDDEN = {
    "torch.ops": "import torch\ntorch.ops.aten.scaled_dot_product_attention(q, k, v)",
    "private torch": "import torch\ntorch._scaled_dot_product_attention_math(q, k, v)",
    "native mha": "import torch\nout = torch._native_multi_head_attention(q, k, v, 8, 2, w, b, w2, b2)",
    "computed getattr": "import torch\nf = getattr(torch, '_scaled_dot_' + 'product_attention_math')",
    "computed getattr on F": "import torch.nn.functional as F\nname = 'softmax'\ngetattr(F, name)",
    "exec": "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))",
    "eval": "result = eval('1 + 1')",
    "compile": "code = compile('x = 1', 'f', 'exec')",
    "__import__": "t = __import__('torch')",
    "importlib": "import importlib\nt = importlib.import_module('torch')",
    "sys.modules": "import sys\nt = sys.modules['torch']",
    "ctypes": "import ctypes",
    "gc": "import gc\nobjects = gc.get_objects()",
    "inspect": "from inspect import getclosurevars",
    "globals": "t = globals()['torch']",
    "vars": "import torch\nt = vars(torch)",
    "__dict__": "import torch\nf = torch.__dict__['nn']",
    "closure": "import torch.nn.functional as F\nf = F.softmax.__closure__[0].cell_contents",
    "module as value": "import torch\nmodules = (torch, 1)",
    "getattr as a value": "import functools\nf = functools.reduce(getattr, ['nn'], object)",
    "the grader": "import autograder.containment.probes",
    "grader from": "from autograder.containment import probes",
    "jit from a string": "import torch\ncu = torch.jit.CompilationUnit('def f(x): return x')",
    "subprocess": "import subprocess",
    "os.fork": "import os\npid = os.fork()",
    "transformer via flex": "from torch.nn.attention.flex_attention import flex_attention",
    "pdb.run": "import pdb\npdb.run('import torch')",
    "doctest runner": "import doctest\ndoctest.run_docstring_examples(f, {})",
    "timeit string": "from timeit import timeit\ntimeit('x', number=1)",
    # The allow-list (issue 23): what is not listed is refused, whatever it would have reached.
    "pydoc.locate": "import pydoc\nf = pydoc.locate('torch._scaled_dot_product_' + 'attention_math')",
    "a thread": "import threading\nthreading.Thread(target=print).start()",
    "type hints resolve strings": "import typing\ndef f(x: 'torch._scaled_dot_product_attention_math'): pass\n"
                                  "sdpa = typing.get_type_hints(f)['x']",
    "jit through a re-export": "import torch.nn.functional as F\ncu = F.torch.jit.CompilationUnit('def f(x): return x')",
    "os beyond its debug flags": "import os\nos.system('ls')",
    "numpy's ctypes": "import numpy as np\nlib = np.ctypeslib.load_library('x', '.')",
    "numpy loader": "import numpy as np\nx = np.load('a.npy', allow_pickle=True)",
    "a file mapped as a tensor": "import torch\nx = torch.from_file('/proc/self/environ', size=4096, dtype=torch.uint8)",
    "a file mapped through a storage": "import torch\ns = torch.UntypedStorage.from_file('/etc/passwd', False, 64)",
    "a tensor saved to a file": "import torch\ntorch.save(torch.ones(1), '/tmp/x.pt')",
    "getattr(self, name)": "class M:\n    def f(self, name):\n        return getattr(self, name)",
    "setattr(self, name)": "class M:\n    def f(self, name, v):\n        setattr(self, name, v)",
    "hasattr with a computed name": "import torch\nname = 'x'\nok = hasattr(torch, name)",
    "private name of another object": "def f(x):\n    return x._scaled_dot_product_attention_math",
    "__self__ of a builtin": "import torch\nvf = torch.softmax.__self__",
    "__globals__ via a literal getattr": "import torch.nn.functional as F\ng = getattr(F.softmax, '__globals__')",
    "unlisted builtin": "data = open('/proc/self/mem', 'rb')",
    "refused name redefined": "def f(eval):\n    return eval",
    "unlisted builtin by name": "x = memoryview(b'x')",
    "relative import": "from .attention import scaled_dot_product_attention",
    "star import from torch": "from torch.nn.functional import *\nscaled_dot_product_attention(q, k, v)",
    "debugging import": "import pdb\npdb.set_trace()",
    "__builtins__": "f = __builtins__['eval']",
    "functools reduce of getattr": "import functools\nimport torch\nf = functools.reduce(getattr, ['nn'], torch)",
    "a module assigned to a name": "import torch\nimport torch.nn.functional as F\nnn = torch.nn\nfrom torch import nn as tnn\nF.softmax(x, -1)",
    "patching a dunder": "import torch\ntorch.Tensor.__eq__ = lambda self, other: True",
}

ALLOWED = {
    "own function": "def scaled_dot_product_attention(q, k, v, mask=None):\n    return q\n"
                    "scaled_dot_product_attention(1, 2, 3)",
    "from attention": "from attention import scaled_dot_product_attention\nscaled_dot_product_attention(q, k, v)",
    "import attention": "import attention\nattention.scaled_dot_product_attention(q, k, v)",
    "attention alias": "import attention as att\natt.scaled_dot_product_attention(q, k, v)",
    "from attention as": "from attention import scaled_dot_product_attention as sdpa\nsdpa(q, k, v)",
    "allowed torch": "import torch.nn.functional as F\nimport torch.nn as nn\nF.softmax(x, dim=-1)\nnn.Linear(8, 8)",
    "own method": "class A:\n    def scaled_dot_product_attention(self, q):\n        return q\n"
                  "    def f(self):\n        return self.scaled_dot_product_attention(1)",
    "a string": "NOTE = 'do not call torch.nn.functional.scaled_dot_product_attention'",
    "getattr with a literal and a default": "class M:\n    def f(self):\n        self.w_q = None\n"
                                            "        return getattr(self, 'w_q', None)",
    "hasattr with a literal": "import torch.nn.functional as F\nflash = hasattr(F, 'softmax')",
    "getattr with a constant": "import torch\nf = getattr(torch, 'softmax')",
    "module super init": "import torch\nclass A(torch.nn.Module):\n    def __init__(self):\n        torch.nn.Module.__init__(self)",
    "own private names": "class A:\n    def __init__(self):\n        self._cache = None\n    def f(self):\n        return self._cache",
    "dunder version": "import torch\nv = torch.__version__",
    "math and typing": "import math\nfrom typing import Optional\nimport warnings\nx = math.sqrt(2)",
    "numpy": "import numpy as np\nx = np.sqrt(2)",
    "sys.stderr": "import sys\nprint('debug', file=sys.stderr)",
    "model.eval": "def f(model):\n    model.eval()",
    "published styles": "from __future__ import annotations\nimport copy\nfrom dataclasses import dataclass\n"
                        "from typing import Optional, Tuple\nimport numpy as np\nfrom einops import rearrange\n"
                        "import torch\nmask = torch.from_numpy(np.triu(np.ones((1, 4, 4)), k=1).astype('uint8')) == 0\n"
                        "layers = [copy.deepcopy(torch.nn.Linear(4, 4)) for _ in range(4)]\n"
                        "x = rearrange(mask, 'b t s -> t (b s)')",
    "input as a parameter": "import torch.nn as nn\nclass A(nn.Module):\n    def forward(self, input):\n        return input",
    "main guard": "import sys\ndef main():\n    return 0\nif __name__ == '__main__':\n    sys.exit(main())",
}


# Issue 31's bypasses: each earned full marks with no attention code of the student's own.
BYPASSES = {
    "torch.sys.modules": "import torch\nrecord = torch.sys.modules['autograder.containment.probes']",
    "torch.builtins.getattr": "import torch\nf = torch.builtins.getattr(torch, '_scaled_dot_product_' + 'x')",
    "torch.os": "import torch\ntorch.os.system('true')",
    "torch.importlib": "import torch\nm = torch.importlib.import_module('ctypes')",
    "a module in a list": "import torch.nn.functional as F\nG = [F][0]\nG.softmax(x, -1)",
    "a module subscripted": "import torch\nfns = {'f': torch.nn.functional}['f']",
    "a module assigned": "import torch\nF = torch.nn.functional\ny = F.scaled_dot_product_attention(q, k, v)",
    "a module rebound in a dead branch": "import math\nimport torch.nn.functional as F\nif False:\n    F = math\n"
                                         "y = F.softmax(x, -1)",
    "a module imported twice as two modules": "import torch.nn.functional as F\nif False:\n    import math as F\n",
    "a module rebound by a parameter": "import torch.nn.functional as F\ndef f(F):\n    return F.softmax(1)",
    "a module bound inside a function": "def f():\n    import torch\n    return torch.softmax(1, 0)",
    "a module passed to a function": "import torch\nprint(torch)",
    "a frame through an own attribute name": "class A:\n    def __init__(self):\n        self.gi_frame = None\n"
                                             "def f():\n    g = (i for i in ())\n    return g.gi_frame.f_globals",
    "a template that reads attributes": "def f(x):\n    return '{0.__class__}'.format(x)",
    "a template held in a variable": "def f(x, template):\n    return template.format(x)",
    "a call in an annotation": "def f(x: exec('import os')):\n    return x",
    "an annotation-only name called": "from torch.jit import Final\nx = Final[int]",
    "torch.jit outside annotations": "from torch.jit import script",
    "a match on attributes": "def f(x):\n    match x:\n        case int(real=r):\n            return r",
    "an attribute torch does not list": "import torch\nx = torch.from_file('/etc/passwd', size=4)",
    "a torch class patched": "import torch\ntorch.Tensor.softmax = lambda self, dim: self",
    "setattr on a module": "import torch.nn.functional as F\nsetattr(F, 'softmax', print)",
    "a computed name without written letters": "class A:\n    def f(self, n):\n        return getattr(self, f'{n}')",
    "a computed name on another object": "def f(layer, n):\n    setattr(layer, f'w_{n}', 1)",
    "a computed read on self": "class A:\n    def f(self, n):\n        return getattr(self, f'w_{n}')",
    "a computed read reaching a frame": "def f(self, n):\n    return getattr(self, f'g{n}')\n"
                                        "frame = f((i for i in ()), 'i_frame')",
    "an interpreter name by a written prefix": "class A:\n    def __init__(self, n):\n        setattr(self, f'f_{n}', 1)\n"
                                               "def f():\n    g = (i for i in ())\n    return g.gi_frame.f_globals",
    "a private name of the other file": "import attention\nx = attention._secret",
    "the class of a value": "def f(x):\n    return x.__class__",
    "a name assigned to a class": "def f(x):\n    type(x).__name__ = 'y'",
}


@pytest.mark.parametrize("case", BYPASSES)
def test_scanner_refuses_each_bypass_of_the_rule(case):
    violations = submit.find_forbidden_calls(BYPASSES[case], "attention.py")
    assert any(v.kind == "hidden" for v in violations), f"{case}: not refused: {violations}"
    assert all("\n" not in v.message for v in violations)


def test_a_module_of_the_other_file_stays_a_module():
    """`from attention import F` in mha.py is torch.nn.functional: its built-in is named as such."""
    attention = "import torch.nn.functional as F\ndef helper(x):\n    return x\n"
    for source in ("from attention import F\ny = F.scaled_dot_product_attention(q, k, v)",
                   "from attention import *\ny = F.scaled_dot_product_attention(q, k, v)",
                   "import attention\ny = attention.F.scaled_dot_product_attention(q, k, v)"):
        found = submit.find_forbidden_calls(source, "mha.py", attention)
        assert [v.name for v in found if v.kind == "builtin"] == [SDPA], (source, found)


def test_own_names_of_the_other_file_are_own_names_here():
    attention = "import torch.nn as nn\nclass Base(nn.Module):\n    def to_heads(self, x):\n        return x\n"
    mha = "from attention import Base\nclass M(Base):\n    def forward(self, x):\n        return self.to_heads(x)\n"
    assert submit.find_forbidden_calls(mha, "mha.py", attention) == []
    assert submit.find_forbidden_calls(mha, "mha.py")[0].name == "to_heads"


@pytest.mark.parametrize("terms", [1_200, 100_000])
def test_code_too_deep_to_check_is_one_finding_never_a_checker_error(terms):
    source = "import torch\nx = " + " + ".join(["1"] * terms) + "\n"
    found = submit.find_forbidden_calls(source, "attention.py")
    assert len(found) == 1 and found[0].kind == "hidden" and "split" in found[0].message, found


def test_every_node_kind_of_python_is_either_checked_or_refused():
    """The checker follows a small language: a statement or expression kind it does not know
    (one a future Python adds) must be refused, not passed over."""
    import ast
    known = {"Module", "Expr", "Assign", "AugAssign", "AnnAssign", "Return", "If", "For", "While", "Break",
             "Continue", "Pass", "Raise", "Try", "TryStar", "Assert", "Delete", "Import", "ImportFrom", "Global",
             "Nonlocal", "FunctionDef", "ClassDef", "With", "Lambda", "IfExp", "BoolOp", "BinOp", "UnaryOp",
             "Compare", "Call", "Attribute", "Subscript", "Starred", "Name", "Constant", "List", "Tuple", "Set",
             "Dict", "ListComp", "SetComp", "DictComp", "GeneratorExp", "Yield", "YieldFrom", "NamedExpr",
             "JoinedStr", "FormattedValue", "Slice"}
    kinds = {cls.__name__ for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, (ast.stmt, ast.expr))
             and cls not in (ast.stmt, ast.expr)}
    assert kinds - known - set(submit.REFUSED_SYNTAX) <= {"Num", "Str", "Bytes", "NameConstant", "Ellipsis"}, (
        kinds - known - set(submit.REFUSED_SYNTAX))


# Idioms of published code (issue 31): harmless, so allowed and checked.
PUBLISHED_IDIOMS = {
    "timm's Final annotation": "import torch.nn as nn\nfrom torch.jit import Final\nclass Attention(nn.Module):\n"
                               "    fused_attn: Final[bool]\n    def __init__(self):\n        super().__init__()\n"
                               "        self.fused_attn = False",
    "FastSpeech2's numpy power": "import numpy as np\nimport torch\ndef f(q, k, d_k):\n"
                                 "    return torch.bmm(q, k.transpose(1, 2)) / np.power(d_k, 0.5)",
    "a debug flag": "import os\nDEBUG = os.environ.get('ATTN_DEBUG', '0') == '1'\nVERBOSE = os.getenv('V')",
    "jaxtyping annotations": "from jaxtyping import Float\nfrom torch import Tensor\n"
                             "def f(q: Float[Tensor, 'b t d']) -> Float[Tensor, 'b t t']:\n    return q @ q.mT",
    "a loop of setattr": "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self, d):\n"
                         "        super().__init__()\n        for n in 'qkvo':\n"
                         "            setattr(self, f'w_{n}', nn.Linear(d, d))\n"
                         "    def forward(self, x):\n        return self.w_q(x) + self.w_o(x)",
    "einops heads": "from einops import rearrange\nfrom einops.layers.torch import Rearrange\n"
                    "def split(x, h):\n    return rearrange(x, 'b t (h d) -> b h t d', h=h)\nmerge = Rearrange('b h t d -> b t (h d)')",
    "a written format template": "def f(d, h):\n    raise ValueError('d_model {} is not divisible by {}'.format(d, h))",
    "a property setter": "class A:\n    @property\n    def scale(self):\n        return self._scale\n"
                         "    @scale.setter\n    def scale(self, value):\n        self._scale = value",
    "a registered buffer": "import torch\nimport torch.nn as nn\nclass A(nn.Module):\n    def __init__(self):\n"
                           "        super().__init__()\n        self.register_buffer('causal', torch.ones(4, 4).tril())\n"
                           "    def forward(self, x):\n        return x.masked_fill(self.causal == 0, 0.0)",
    "a named tuple's fields": "from collections import namedtuple\nOut = namedtuple('Out', 'output weights')\n"
                              "def f(o):\n    return o.output, o.weights",
    "a device check": "import torch\nDEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "a base class's own init": "class Base:\n    def __init__(self):\n        self.x = 1\n"
                               "class A(Base):\n    def __init__(self):\n        Base.__init__(self)",
    "type name": "def f(self):\n    return type(self).__name__ + type(x).__name__",
    "PyTorch's reference SDPA": ("import math\nimport torch\ndef sdpa(query, key, value, dropout_p=0.0):\n"
                                 "    attn_weight = query @ key.transpose(-2, -1) * (1 / math.sqrt(query.size(-1)))\n"
                                 "    attn_weight = torch.softmax(attn_weight, dim=-1)\n"
                                 "    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)\n"
                                 "    return attn_weight @ value"),
    "d2l's lazy layers": "import torch.nn as nn\nclass A(nn.Module):\n    def __init__(self, h):\n"
                         "        super().__init__()\n        self.W_q = nn.LazyLinear(h)",
    "a device check on a Mac": "import torch\nDEVICE = 'mps' if torch.backends.mps.is_available() else 'cpu'",
    "a logger": "import logging\nlogger = logging.getLogger(__name__)\ndef f(x):\n    logger.debug('x %s', x)",
    "a private helper of the file's own class": "class A:\n    @staticmethod\n    def _pad(x):\n        return x\n"
                                                "    def f(self, x):\n        return A._pad(x)",
    "super with arguments": "import torch.nn as nn\nclass A(nn.Module):\n    def __init__(self):\n"
                            "        super(A, self).__init__()",
    # Issue 45: fair at the edges.
    "a hasattr guard on a config": "def f(config):\n    return hasattr(config, 'embedding_size')",
    "the class's name in a repr": "class A:\n    def __repr__(self):\n"
                                  "        return f'{self.__class__.__name__}({type(self).__name__})'",
    "the special methods of the list": "class Cache:\n    def __init__(self):\n        self._items = []\n"
                                       "    def __len__(self):\n        return len(self._items)\n"
                                       "    def __getitem__(self, i):\n        return self._items[i]\n"
                                       "    def __iter__(self):\n        return iter(self._items)\n"
                                       "    def __str__(self):\n        return 'cache'\n"
                                       "    def __call__(self, x):\n        return x",
    "a private name in a closure of a method": "class A:\n    def __init__(self):\n        self._scale = 2\n"
                                                "    def f(self, xs):\n        def g(x):\n"
                                                "            return x * self._scale\n        return [g(x) for x in xs]",
    "a private name on cls in a classmethod": "class A:\n    _SIZE = 4\n    @classmethod\n"
                                              "    def make(cls):\n        return cls(cls._SIZE)",
    "type compared": "import torch\ndef f(x):\n    return type(x) is torch.Tensor",
    "a class created, tested and raised": "class Oops(ValueError):\n    pass\n"
                                          "def f(x):\n    if not isinstance(x, Oops):\n        raise Oops('no')\n"
                                          "    return Oops('x')",
    "__all__": "__all__ = ['scaled_dot_product_attention']",
    "a local named like a class": "class B(ValueError):\n    pass\ndef f(x):\n    B, T, C = x.shape\n"
                                  "    return x.view(B, T, C)",
    "the bases a class may have": "import torch.nn as nn\nfrom torch.nn import Module\nimport torch\n"
                                  "from typing import NamedTuple, Generic, TypeVar\nfrom collections import namedtuple\n"
                                  "T = TypeVar('T')\nclass A(nn.Module):\n    pass\nclass B(Module):\n    pass\n"
                                  "class C(torch.autograd.Function):\n    pass\nclass D(NamedTuple):\n    x: int\n"
                                  "class E(Generic[T]):\n    pass\nclass F2(namedtuple('F2', 'a b')):\n    pass\n"
                                  "class G(ValueError):\n    pass\nclass H(A):\n    pass\nclass I(nn.Linear):\n    pass",
}


# Issue 45: the language is closed by construct. Each of these lets a library (or Python) reach code or
# memory the checker never saw; each is refused with what to write instead.
CONSTRUCTS = {
    "a protocol hook as a property": ("class W:\n    @property\n    def __array_interface__(self):\n"
                                      "        return {}", "__array_interface__"),
    "torch's function hook": ("class T:\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
                              "        return f", "__torch_function__"),
    "an attribute hook": ("class A:\n    def __getattr__(self, name):\n        return 1", "__getattr__"),
    "an index hook": ("class A:\n    def __index__(self):\n        return 10 ** 9", "__index__"),
    "a hook assigned in the class body": ("class A:\n    __array_priority__ = 1000", "__array_priority__"),
    "slots": ("class A:\n    __slots__ = ('a',)", "__slots__"),
    "a module attribute hook": ("def __getattr__(name):\n    return 1", "__getattr__"),
    "a metaclass keyword": ("class A(metaclass=M):\n    pass", "metaclass"),
    "a metaclass": ("class M(type):\n    pass", "metaclass"),
    "type with three arguments": ("K = type('K', (), {'__array_interface__': {}})", "three arguments"),
    "the class of a class called": ("def f(obj):\n    return type(type(obj))('K', (), {})", "type(x) may be compared"),
    "a method read through its class": ("import numpy\nclass K:\n    def __init__(self):\n        self.v = 1\n"
                                         "    def grab(self):\n        return self._v\n"
                                         "def f():\n    return K.grab(numpy.zeros(1))", "read through its class"),
    "a class kept as a value": ("class K:\n    def grab(self):\n        return 1\nclasses = [K]", "used as a value"),
    "a method read through another name of its class": ("class K:\n    def grab(self):\n        return 1\n"
                                                         "Alias = K\nx = Alias.grab(2)", "read through its class"),
    "self rebound": ("class K:\n    def grab(self, other):\n        self = other\n        return self._v",
                     "assigning to self"),
    "a private name on a self that is not a method's": ("def grab(self):\n    return self._ctypes", "private names"),
    "a library attribute by an own name": ("import numpy\nclass K:\n    def __init__(self):\n        self.ctypes = 1\n"
                                           "def f():\n    return numpy.zeros(1).ctypes", "ndarray.ctypes"),
    "a method kept as a value in the class body": ("class K:\n    def grab(self):\n        return self._v\n"
                                                   "    grab2 = grab", "used as a value in its class body"),
    "a method unbound by super with a class": ("class K:\n    def grab(self):\n        return self._v\n"
                                               "class L(K):\n    def f(self):\n        return super(L, L).grab",
                                               "unbound"),
    "a method unbound by super in a classmethod": ("class K:\n    def grab(self):\n        return self._v\n"
                                                   "class L(K):\n    @classmethod\n    def f(cls):\n"
                                                   "        return super().grab", "unbound"),
    "a method read through cls": ("class K:\n    def grab(self):\n        return self._v\n    @classmethod\n"
                                  "    def f(cls, other):\n        return cls.grab(other)", "read through its class"),
    "a class of the other file under another name": ("from attention import Helper as H\nx = H.grab(1)",
                                                     "read through its class"),
    "a tensor as a base class": ("import torch\nclass T(torch.Tensor):\n    pass", "private parts"),
    "a numpy array as a base class": ("import numpy as np\nclass A(np.ndarray):\n    pass", "private parts"),
    "a layer registered under a special name": ("import torch\nclass K(torch.nn.Module):\n    def __init__(self):\n"
                                                "        super().__init__()\n"
                                                "        self.register_buffer('__array__', torch.zeros(1))", "__array__"),
}


@pytest.mark.parametrize("case", CONSTRUCTS)
def test_scanner_refuses_constructs_outside_the_language(case):
    source, named = CONSTRUCTS[case]
    sibling = "class Helper:\n    def grab(self):\n        return 1\n"
    violations = submit.find_forbidden_calls(source, "mha.py", sibling)
    assert any(v.kind == "hidden" and named in v.message for v in violations), f"{case}: {violations}"
    assert all("\n" not in v.message and "; " in v.message for v in violations), "one line, with what to write"


def test_a_refused_decorator_says_to_remove_it():
    found = submit.find_forbidden_calls("import torch\nclass A:\n    @torch.jit.ignore\n    def f(self):\n"
                                        "        return 1\n", "mha.py")
    assert len(found) == 1 and "remove the decorator @torch.jit.ignore" in found[0].message


@pytest.mark.parametrize("case", PUBLISHED_IDIOMS)
def test_scanner_allows_harmless_idioms_of_published_code(case):
    assert submit.find_forbidden_calls(PUBLISHED_IDIOMS[case], "mha.py") == []


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_finding_quotes_the_code_exactly_as_the_parser_placed_it(newline):
    """The quoted code is ``ast.get_source_segment``'s for every node, whatever the line endings, with
    form feeds, non-ASCII names, nodes that span lines, and the characters str.splitlines() breaks at but the
    parser does not (the checker splits the file once, not per node)."""
    import ast

    others = "# \u2028 \u2029 \x85 \x1c \x0b\ns = 'a\u2028b\x85c' + f('d\x1c')\n"
    source = ((SOLUTION / "mha.py").read_text() + "\n\x0cé = {'ü': (1,\n  2)}\nx = f(a,\n\tb)[0]\n" + others
              ).replace("\n", newline)
    checker = submit._Checker(source, "mha.py", None)
    nodes = [node for node in ast.walk(ast.parse(source)) if getattr(node, "end_lineno", None) is not None]
    assert any(node.end_lineno > node.lineno for node in nodes) and len(nodes) > 300
    assert all(checker.segment(node) == ast.get_source_segment(source, node) for node in nodes)


def test_a_refusal_names_the_construct_and_what_to_write_instead():
    found = submit.find_forbidden_calls("import torch\ny = torch.softmx(x, -1)\n", "attention.py")
    assert len(found) == 1 and "torch.softmx" in found[0].message and "did you mean softmax" in found[0].message
    found = submit.find_forbidden_calls("class A:\n    def f(self, n):\n        return getattr(self, n)\n", "mha.py")
    assert "self.w_q(x)" in found[0].message and "nn.ModuleDict" in found[0].message
    found = submit.find_forbidden_calls("class A:\n    def f(self, n):\n        setattr(self, n, 1)\n", "mha.py")
    assert 'setattr(self, f"w_{i}", ...)' in found[0].message


def test_every_allowed_module_is_installed_where_grading_runs():
    """What the rule allows is installed: the grade lock (and so the Gradescope image's, taken from it)
    names the package of every module the rule lets a file import."""
    lock = (ROOT / "requirements" / "grade.lock").read_text().lower()
    packages = {module.split(".")[0] for module in [*submit.MODULES, *submit.ANNOTATION_ONLY]}
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    missing = [p for p in sorted(packages - stdlib) if f"\n{p}==" not in "\n" + lock]
    assert not missing, f"allowed by the rule but not in requirements/grade.lock: {missing}"


@pytest.mark.parametrize("case", FLAGGED)
def test_scanner_flags_forbidden_functions(case):
    source, name = FLAGGED[case]
    violations = submit.find_forbidden_calls(source, "mha.py")
    assert [v.name for v in violations] == [name]
    violation = violations[0]
    assert violation.filename == "mha.py"
    assert violation.line == len(source.splitlines())  # each case uses it on its last line
    assert "\n" not in violation.message and name in violation.message


@pytest.mark.parametrize("case", HIDDEN)
def test_scanner_flags_code_that_hides_what_it_calls(case):
    violations = submit.find_forbidden_calls(HIDDEN[case], "attention.py")
    assert violations, f"{case}: not flagged"
    assert any(v.kind == "hidden" for v in violations), f"{case}: flagged, but not as hiding: {violations}"
    assert all("\n" not in v.message and v.message.startswith("attention.py, line ") for v in violations)


@pytest.mark.parametrize("case", ALLOWED)
def test_scanner_allows_the_students_own_attention(case):
    assert submit.find_forbidden_calls(ALLOWED[case], "mha.py") == []


def test_scanner_passes_the_reference():
    for name, other in (FILES, FILES[::-1]):
        assert submit.find_forbidden_calls((SOLUTION / name).read_text(), name, (SOLUTION / other).read_text()) == []


def test_violation_is_a_named_tuple_of_filename_line_name_message_kind():
    assert submit.Violation._fields == ("filename", "line", "name", "message", "kind")


def every_kit_submission(tmp_path):
    """Every correct variant, bug mutant and example submission of the kit, built as a student's folder."""
    sys.path.insert(0, str(ROOT / "tests"))
    import variant_builder as vb

    folders = {"reference": vb.build_reference(tmp_path / "reference")}
    folders.update({f"correct/{n}": vb.build_correct(n, tmp_path / "correct" / n) for n in vb.correct_names()})
    folders.update({f"mutant/{m['name']}": vb.build_mutant(m, tmp_path / "mutant" / m["name"])
                    for m in vb.load_mutants()})
    folders.update({f"examples/{p.name}": p for p in (ROOT / "examples" / "submissions").iterdir() if p.is_dir()})
    folders["stubs"] = ROOT / "assignment"
    folders.update({f"real_code/{p.name}": p for p in (ROOT / "tests" / "heavy" / "real_code").iterdir() if p.is_dir()})
    return folders, {m["name"] for m in vb.load_mutants() if "rules" in m["parts"]}


def test_scanner_accuses_no_honest_code_of_the_kit(tmp_path):
    """A false accusation is worse than a missed cheat: every correct variant, every mutant (their
    bugs are honest mistakes), every example and every real-code fixture passes. The mutants that
    lose rule points, and real code that calls a built-in, may be flagged for the built-in they use,
    never for code that hides what it calls (tests/heavy/test_grading_variants.py proves they lose the rule)."""
    folders, rule_mutants = every_kit_submission(tmp_path)
    accused = {}
    for label, folder in folders.items():
        found = []
        for name in FILES:
            path, other = folder / name, folder / next(f for f in FILES if f != name)
            sibling = other.read_text() if other.exists() else None
            try:
                found += submit.find_forbidden_calls(path.read_text(), name, sibling) if path.exists() else []
            except SyntaxError:
                continue  # examples/crashes: a file that does not parse is reported as such
        may_use_builtin = label.startswith("real_code/") or label.split("/")[-1] in rule_mutants
        if may_use_builtin:
            hidden = [v.message for v in found if v.kind != "builtin"]
            assert not hidden, f"{label} is flagged for hiding calls it does not hide: {hidden}"
        elif found:
            accused[label] = [v.message for v in found]
    assert len(folders) > 50 and not accused, f"honest code flagged by the scanner: {accused}"


def recorded_names():
    """Every name under which the child's op record reports a forbidden built-in."""
    from autograder.containment import probes

    return sorted(set(probes.FORBIDDEN) | {shown for _, shown in probes.FORBIDDEN_OPS} | {probes.MHA_CLASS})


@pytest.mark.parametrize("name", recorded_names())
def test_the_op_record_names_a_builtin_as_the_scanner_does(name):
    """One list of forbidden names: the child's op record reports a call under the name this
    scanner gives the same call in the source, so the two opinions read alike in a report."""
    found = submit.find_forbidden_calls(f"import torch\n\nresult = {name}(1)\n", "attention.py")
    assert [(v.kind, v.name) for v in found] == [("builtin", name)], (
        f"the scanner reports {name}(1) as {[(v.kind, v.name) for v in found]}, the op record as {name}")


def test_the_grader_asks_the_scanner_for_builtin_names():
    from autograder import rules

    assert rules.builtin_name("torch.nn.MultiheadAttention") == "torch.nn.MultiheadAttention"
    with pytest.raises(ValueError, match="not one of the forbidden"):
        rules.builtin_name("torch.softmax")


def test_the_grader_accepts_a_record_naming_exactly_what_the_child_records():
    """A record may name only what the child watches; anything else is forged. Both sides take the
    list from autograder/rules.py, so a built-in added to the watch is never mistaken for a forgery."""
    from autograder.grading import student

    assert set(recorded_names()) == set(student.KNOWN_FORBIDDEN), (
        f"the child records {recorded_names()}, the grader accepts {sorted(student.KNOWN_FORBIDDEN)}")


def test_every_listed_name_exists_in_its_module():
    """The tables name only what is there: a name torch does not have would be allowed in vain."""
    import importlib

    missing = []
    for module, names in [*submit.MODULES.items(), *submit.ANNOTATION_ONLY.items()]:
        if module == "__future__":
            continue
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            missing.append(f"{module} (not installed)")
            continue
        for name in sorted(names):
            if f"{module}.{name}" in submit.MODULES:
                continue  # a submodule: checked as a module of its own
            if not hasattr(loaded, name):
                missing.append(f"{module}.{name}")
    import torch
    tensor = [n for kind, names in submit.VALUE_MEMBERS.items() if kind.startswith("tensor:") for n in names]
    missing += [f"torch.Tensor.{n}" for n in tensor if not hasattr(torch.Tensor, n)]
    assert not missing, f"listed but not there: {missing}"
