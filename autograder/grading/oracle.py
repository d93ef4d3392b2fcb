"""The known-good attention an "oracle" child lends the student's mha.py (trusted side).

MHA's parts are graded on top of a correct attention (``student.Student``, mode="oracle"), so that a
bug in attention.py costs points only in the attention parts. That attention is the reference's own:
the contract's four names cut from ``solution/attention.py``'s source, written by the parent as the
``attention.py`` of the oracle child's folder, and nowhere else. The child that runs the student's
attention for the attention tests is started from the same secret-free zygote and holds no correct
attention at all: not in ``sys.modules``, not on its heap, not among the files it can read
(``docs/security.md``, "No correct attention within reach"; ``tests/containment/test_no_oracle.py``).

What the oracle folder holds (``oracle_files``):

* ``mha.py``: the student's, as staged;
* ``attention.py``: the reference's ``causal_mask``, ``padding_mask``, ``scaled_dot_product_attention``
  and ``ScaledDotProductAttention`` (whose constructor takes and ignores any arguments, so a student's
  MHA may build its attention as it likes: ``ScaledDotProductAttention(dropout=0.1)``), then a loader
  for every other name: a helper, a constant or a class of the student's own attention.py, which mha.py
  may import. It is loaded from ``student_attention.py`` only when asked for, with the contract's names
  in it replaced by the reference's, so its helpers call the good attention;
* ``student_attention.py``: the student's attention.py, unless the scanner refused it: then any other
  name fails with the scanner's line, and the file is not in the folder at all.

Only MHA-level parts are graded in that child: no attention test ever runs in oracle mode.

A "below" child (``below_files``) holds the same, plus ``kit_lent.py``: the reference's methods the lab's
table lends (``LENT_METHODS``: split_heads and merge_heads, cut from ``solution/mha.py``'s AST, never forward
or step). A test of MHA's forward or step that fails on the student's own lower parts runs there once more,
with the lab's sizes, layers and those methods in the student's object (``protocol.Lend``): when that passes,
the bug lives below and is charged by its own part alone. The heads part is never graded in that child.
"""
import ast
import functools
import os

from autograder import rules
from autograder.containment.protocol import LENT_MODULE, STUDENT_MODULES
from autograder.parts import LENT_METHODS
from autograder.paths import KIT_ROOT

REFERENCE_ATTENTION = os.path.join(KIT_ROOT, "solution", "attention.py")
CONTRACT = ("causal_mask", "padding_mask", "scaled_dot_product_attention", "ScaledDotProductAttention")
CONTRACT_CLASS = "ScaledDotProductAttention"
STUDENT_COPY = "student_attention.py"
MARKER = "__kit_oracle__"  # the oracle file's frames are the grader's, never shown as the student's lines

# The oracle's own code after the reference's: the student's other names, loaded on first use (PEP 562).
_LOADER = '''
# --- the student's other names: a helper, a constant, a class of their own attention.py -------------
import importlib.util as _importlib_util
import os as _os

__kit_oracle__ = True
_REFUSED = {refused!r}
_CONTRACT = {{_name: globals()[_name] for _name in {contract!r}}}
_STUDENT_FILE = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {student_copy!r})
_own = {{}}


class RefusedFile(ImportError):
    """mha.py asked for a name of an attention.py the grader refused (and never copied here)."""


def _student_module(name):
    if _REFUSED is not None:
        raise RefusedFile(f"mha.py uses {{name}} from attention.py, which the grader refused: {{_REFUSED}}")
    if "error" in _own:
        raise _own["error"]
    if "module" not in _own:
        spec = _importlib_util.spec_from_file_location("attention", _STUDENT_FILE)
        student = _importlib_util.module_from_spec(spec)
        try:
            spec.loader.exec_module(student)
        except BaseException as err:  # remembered: every later lookup fails the same way
            _own["error"] = err
            raise
        _own["aliases"] = {{id(getattr(student, n)): n for n in _CONTRACT if hasattr(student, n)}}
        vars(student).update(_CONTRACT)  # its helpers call the good attention
        _own["module"] = student
    return _own["module"]


def __getattr__(name):
    if name.startswith("__") and name != "__all__":
        raise AttributeError(name)  # import machinery probes (__path__, ...): no need to load the file
    if name == "__all__":  # `from attention import *`: the student's public names, or the contract's
        try:
            student = _student_module(name)
        except Exception:
            return list(_CONTRACT)
        return getattr(student, "__all__", [n for n in vars(student) if not n.startswith("_")])
    student = _student_module(name)
    value = getattr(student, name)  # AttributeError: the name is not in the student's file either
    alias = _own["aliases"].get(id(value))  # `attention = scaled_dot_product_attention`: the good one
    return _CONTRACT[alias] if alias else value
'''


@functools.lru_cache(maxsize=4)
def oracle_source(refused=None, reference=REFERENCE_ATTENTION):
    """The oracle child's attention.py: the reference's imports and contract definitions (cut from its
    source by ``ast``, so the oracle is the reference, never a copy of it), the contract class made to
    accept any constructor arguments, and the loader of the student's other names. ``refused``: the
    scanner's line when it refused the student's attention.py (then no other name loads)."""
    tree = ast.parse(rules.read_source(reference))
    kept = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    defined = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    missing = [name for name in CONTRACT if name not in defined]
    if missing:
        raise ValueError(f"{reference} does not define {', '.join(missing)}: the oracle needs the lab's contract")
    for name in CONTRACT:
        node = defined[name]
        if name == CONTRACT_CLASS:
            node.body = [stmt for stmt in node.body if not _is_init(stmt)] + [_ANY_ARGUMENTS_INIT]
        kept.append(node)
    head = f'"""The reference attention lent to mha.py in oracle mode (written by the grader; see {__name__})."""\n'
    code = ast.unparse(ast.fix_missing_locations(ast.Module(body=kept, type_ignores=[])))
    return head + code + "\n" + _LOADER.format(refused=refused, contract=CONTRACT, student_copy=STUDENT_COPY)


def _is_init(statement):
    return isinstance(statement, ast.FunctionDef) and statement.name == "__init__"


# The student's MHA may build its attention with its own arguments (a dropout, a temperature): accepted
# and ignored, since the reference computes exactly what the contract names (and runs without dropout).
_ANY_ARGUMENTS_INIT = ast.parse("def __init__(self, *args, **kwargs):\n    super().__init__()\n").body[0]


def oracle_files(staged_dir, refused=None):
    """{file name: bytes} for an oracle child's folder: the student's mha.py, the oracle attention.py and,
    unless the scanner refused it (``refused``: its line), the student's attention.py as ``STUDENT_COPY``."""
    files = {"attention.py": oracle_source(refused).encode()}
    for name, target in (("mha.py", "mha.py"), ("attention.py", STUDENT_COPY)):
        if target == STUDENT_COPY and refused is not None:
            continue
        path = os.path.join(staged_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                files[target] = handle.read()
    return files


@functools.lru_cache(maxsize=4)
def lent_source(lent=tuple(LENT_METHODS.items()), solution=os.path.dirname(REFERENCE_ATTENTION)):
    """``kit_lent.py``: the reference's imports, then each lent method as a function of its own (``self`` first),
    cut from ``solution/<module>.py``'s class by ``ast``; marked as the grader's, so no error points into it."""
    kept, methods = [], []
    for target, names in lent:
        module, cls = target.split(".")
        path = os.path.join(solution, f"{module}.py")
        tree = ast.parse(rules.read_source(path))
        kept += [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                 and getattr(node, "module", None) not in STUDENT_MODULES]  # never the student's files
        body = next((node.body for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls), [])
        defined = {node.name: node for node in body if isinstance(node, ast.FunctionDef)}
        missing = [name for name in names if name not in defined]
        if missing:
            raise ValueError(f"{path}: {cls} does not define {', '.join(missing)}, which the lab lends")
        methods += [defined[name] for name in names]
    head = f'"""The reference\'s methods lent in mode "below" (written by the grader; see {__name__})."""\n'
    code = ast.unparse(ast.fix_missing_locations(ast.Module(body=kept + methods, type_ignores=[])))
    return head + code + f"\n{MARKER} = True\n"


def below_files(staged_dir, refused=None):
    """{file name: bytes} for a "below" child: an oracle child's files and the lent methods (``lent_source``)."""
    return {**oracle_files(staged_dir, refused), f"{LENT_MODULE}.py": lent_source().encode()}
