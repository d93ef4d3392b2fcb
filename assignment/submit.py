"""Check attention.py and mha.py, then pack them into submission.zip for Gradescope.

    python submit.py          # the files next to this script
    python submit.py DIR      # the files in DIR

Both files must exist, parse, import, stay away from the functions this lab forbids, and
use only what the lab allows (README.md, section 5): the modules and names in MODULES, torch's
public API, the built-ins that compute, getattr with a written name only. The zip is written to the current folder and
holds exactly the two files.

The grader reuses :func:`find_forbidden_calls` by importing this file, so it uses
the standard library only and does nothing at import time.
"""
import argparse
import ast
import builtins
import io
import os
import subprocess
import sys
import tempfile
import tokenize
import zipfile
from pathlib import Path
from typing import NamedTuple

FILES = ("attention.py", "mha.py")
ZIP_NAME = "submission.zip"
IMPORT_TIMEOUT = 120  # seconds: a cold `import torch` can be slow on a laptop
UPLOAD = "upload it to the LAB-03 'Attention from Scratch' assignment on Gradescope"

# What each forbidden name really is, for messages.
FORBIDDEN = {
    "scaled_dot_product_attention": "torch.nn.functional.scaled_dot_product_attention",
    "MultiheadAttention": "torch.nn.MultiheadAttention",
    "multi_head_attention_forward": "torch.nn.functional.multi_head_attention_forward",
    "flex_attention": "torch.nn.attention.flex_attention",
}
# torch's whole transformer layers: attention and more, built in.
TRANSFORMERS = ("Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                "TransformerDecoderLayer")
STUDENT_MODULES = {"attention", "mha"}  # your own modules: their names are always fine

# What a file may use is an allow-list (README.md, section 5): what correct attention code needs,
# collected from correct submissions and from published implementations (the Annotated
# Transformer, minGPT, nanoGPT, d2l, einops-style code). Anything else is refused, with one line.
ALL_PUBLIC = None  # a module that only computes: every public name of it is fine
MODULES = {
    "torch": ALL_PUBLIC,  # minus private names and TORCH_REFUSED, below
    "math": ALL_PUBLIC,
    "itertools": ALL_PUBLIC,
    "__future__": ALL_PUBLIC,
    "typing": {"Any", "Callable", "ClassVar", "Dict", "Final", "FrozenSet", "Generic", "Iterable", "Iterator",
               "List", "Literal", "Mapping", "NamedTuple", "Optional", "Protocol", "Sequence", "Set", "Tuple",
               "Type", "TypeVar", "Union", "TYPE_CHECKING", "Annotated", "TypeAlias", "cast", "overload"},
    "dataclasses": {"dataclass", "field"},
    "copy": {"copy", "deepcopy"},
    "functools": {"partial", "lru_cache", "cache", "cached_property", "wraps", "reduce"},
    "collections": {"namedtuple", "OrderedDict", "defaultdict", "deque", "Counter"},
    "warnings": {"warn"},
    "sys": {"stdout", "stderr", "exit", "float_info", "maxsize"},
    "time": {"time", "perf_counter", "monotonic"},
    "numpy": {"array", "asarray", "ndarray", "ones", "zeros", "ones_like", "zeros_like", "full", "eye", "arange",
              "triu", "tril", "sqrt", "exp", "log", "sum", "max", "min", "maximum", "minimum", "where", "matmul",
              "dot", "einsum", "transpose", "reshape", "concatenate", "stack", "inf", "pi", "newaxis",
              "float16", "float32", "float64", "int32", "int64", "uint8", "bool_", "finfo", "iinfo"},
    "einops": {"rearrange", "reduce", "repeat", "einsum", "pack", "unpack", "parse_shape"},
    "einops.layers.torch": {"Rearrange", "Reduce", "EinMix"},
}
ALLOWED_IMPORTS = ", ".join(sorted(m for m in MODULES if m != "__future__")) + " and your own attention"
# Parts of torch's public API that run or load code the grader cannot read (the compiler, operator
# registries, loaders and savers of files, C++ extensions), watch it (the profiler), or are attention built-ins
# (torch.nn.attention). Refused wherever they appear in a torch path (torch.nn.functional.torch.jit too).
TORCH_REFUSED = {"ops", "jit", "compile", "compiler", "library", "hub", "package", "classes", "profiler",
                 "overrides", "utils", "multiprocessing", "distributed", "fx", "export", "onnx", "load",
                 "serialization", "attention", "from_file", "save", "UntypedStorage", "TypedStorage"}
# Python's built-ins correct code uses: any other one, unless the file defines that name itself, is refused.
ALLOWED_BUILTINS = {
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow", "print",
    "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum",
    "super", "tuple", "type", "zip", "None", "True", "False", "NotImplemented", "Ellipsis", "__name__", "__doc__",
    "__file__"} | {name for name in dir(builtins) if name.endswith(("Error", "Exception", "Warning"))} | {
    "StopIteration", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
# Built-ins that run strings as code, hand out namespaces, or reach objects by computed name: refused
# wherever the name appears (as a parameter, an import alias...), so no redefinition hides a use.
# getattr and its kin are fine only when called with a literal name: getattr(obj, "name", default).
REFUSED_NAMES = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "open",
                 "help", "__builtins__", "__build_class__", "__loader__", "__spec__"}
ATTRIBUTE_FUNCTIONS = {"getattr", "setattr", "delattr", "hasattr"}
# Special (dunder) attributes correct code reads: super().__init__, type(self).__name__, torch.__version__.
# Every other one (__dict__, __globals__, __closure__, __class__.__mro__, __self__, ...) reaches inside objects.
ALLOWED_DUNDERS = {"__init__", "__name__", "__qualname__", "__class__", "__doc__", "__version__"}
# What is a module (not a function or a value) among the paths a file can name without importing them.
TORCH_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.special",
                 "torch.fft", "torch.autograd", "torch.func"}

BUILTIN_HINT = "write it yourself with matmul, softmax and masked_fill"
HIDDEN_HINT = "write the call out plainly, e.g. torch.softmax(scores, dim=-1)"
IMPORT_HINT = f"this lab's files may import only {ALLOWED_IMPORTS}"


class Violation(NamedTuple):
    filename: str
    line: int
    name: str  # what is not allowed, e.g. "torch.nn.MultiheadAttention" or "exec"
    message: str  # one line, ready to show to the student
    # "builtin": one of torch's attention built-ins, named in the code;
    # "hidden": code that can hide what it calls from the grader (exec, computed names, private torch).
    kind: str = "builtin"


class SubmitError(Exception):
    """A problem with the submission, explained in one line."""


class UnreadableSource(ValueError):
    """Bytes Python would not read as source code; the message is one line for the student."""


# ----------------------------------------------------------------------------- reading a file

def read_source(path) -> str:
    """The text of the Python file at ``path``, decoded as Python itself decodes it (see
    :func:`decode_source`). The grader, the public tests and this script all read your files
    with it, so they agree with Python and with each other. Raises OSError if it cannot be read."""
    path = Path(path)
    return decode_source(path.read_bytes(), path.name)


def decode_source(data: bytes, filename: str) -> str:
    """``data`` decoded as Python decodes a source file: UTF-8 unless a PEP 263 coding line says
    otherwise, a UTF-8 byte-order mark dropped, and CRLF or CR line endings read as newlines.
    Raises UnreadableSource with one line to show for bytes Python would refuse to import."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:  # bytes on the first two lines that are not UTF-8, or a coding line Python rejects
        encoding, refused = "utf-8", f"{filename} has a coding line Python does not accept ({exc.msg}): " \
                                     "save it as UTF-8 without one"
    else:
        refused = None
    try:
        text = data.decode(encoding)  # "utf-8-sig" (detect_encoding's name when a BOM is there) drops it
    except UnicodeDecodeError as exc:
        if not _python_reads(data):
            line = data.count(b"\n", 0, exc.start) + 1
            shown = "UTF-8" if encoding.startswith("utf-8") else encoding
            raise UnreadableSource(f"{filename} is not valid {shown} (byte 0x{data[exc.start]:02x} at line {line}): "
                                   "save it as UTF-8") from None
        text = data.decode(encoding, errors="replace")  # Python skips such bytes in comments: so do we
    if refused:
        raise UnreadableSource(refused)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _python_reads(data):
    """Does Python import these bytes? It skips undecodable bytes in comments (3.11 does)."""
    try:
        compile(data, "<source>", "exec", flags=ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        return False
    return True


# ----------------------------------------------------------------------------- forbidden calls

def _builtin(path):
    """The forbidden attention built-in a dotted path like 'torch.nn.functional.x' names, or None."""
    parts = path.split(".")
    if parts[0] in STUDENT_MODULES:
        return None
    last = parts[-1]
    if last in ("MultiheadAttention", "multi_head_attention_forward"):
        return FORBIDDEN[last]
    # Only torch's: your own scaled_dot_product_attention is the point of the lab.
    if parts[0] == "torch" and "scaled_dot_product" in last:
        return FORBIDDEN["scaled_dot_product_attention"]
    if parts[0] == "torch" and (last in TRANSFORMERS or last == "flex_attention"):
        return f"torch.nn.{last}" if last in TRANSFORMERS else FORBIDDEN[last]
    return None


def _private(part):
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _dunder(part):
    return part.startswith("__") and part.endswith("__") and len(part) > 4


def _module_of(path):
    """The allow-listed module a dotted path starts with ('numpy' for 'numpy.triu'), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in MODULES:
            return ".".join(parts[:i])
    return None


def _path_problem(path):
    """Why the dotted path of a module's name (torch.nn.functional.softmax, numpy.triu) is refused, or None."""
    parts = path.split(".")
    root = parts[0]
    if root in STUDENT_MODULES or root.startswith("<"):
        return None
    if root == "torch":
        for part in parts[1:]:
            if _dunder(part):
                if part not in ALLOWED_DUNDERS:
                    return f"{part} reaches inside torch"
            elif part.startswith("_"):
                return "private torch names are not allowed"
            if part in TORCH_REFUSED:
                return f"torch's {part} runs or loads code the grader cannot read"
        return None
    module = _module_of(path)
    if module is None:
        return f"{root} is not a module this lab allows"
    rest = parts[len(module.split(".")):]
    if rest:
        name, allowed = rest[0], MODULES[module]
        if allowed is ALL_PUBLIC and (name.startswith("_") and name not in ALLOWED_DUNDERS):
            return f"private names of {module} are not allowed"
        if allowed is not ALL_PUBLIC and name not in allowed:
            listed = f" ({', '.join(sorted(allowed))})" if len(allowed) <= 8 else ""
            return f"{module}.{name} is not among the names this lab allows from {module}{listed}"
    return None


def _module_allowed(module):
    """May the lab's code import ``module``? Only the allow-listed modules, torch's public modules and
    your own two files."""
    root = module.split(".")[0]
    if root in STUDENT_MODULES:
        return module in STUDENT_MODULES
    if root == "torch":
        return _path_problem(module) is None
    return module in MODULES


def _is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _bound_names(tree):
    """Every name the file binds somewhere: a built-in of that name is then the file's own."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _defined_names(node):
    """The names ``node`` itself defines (a def, a parameter, an import alias, ...), for REFUSED_NAMES."""
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.alias):
        return [node.asname or node.name]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return node.names
    return []


class _Scanner(ast.NodeVisitor):
    """Finds forbidden functions by resolving names through imports and simple aliases, and refuses
    whatever is not on the lab's allow-lists: a call is only judged fairly if the grader can read it."""

    def __init__(self, filename):
        self.filename = filename
        self.bindings = {}  # local name -> dotted path it stands for
        self.modules = set()  # dotted paths known to be modules (imported as such)
        self.star_modules = set()  # modules imported with `from M import *`
        self.violations = {}  # (line, name) -> Violation
        self.attribute_bases = set()  # ids of nodes that are the object of an attribute access
        self.bound = set()  # every name the file binds

    # -- names

    def path(self, node):
        """Dotted path an expression stands for ('torch.nn.functional'), or None."""
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            func, args = self.path(node.func), node.args
            if func == "getattr" and len(args) >= 2 and _is_str(args[1]):
                base = self.path(args[0])
                return None if base is None else f"{base}.{args[1].value}"
        return None

    def is_module(self, path):
        return path in self.modules or path in TORCH_MODULES

    def bind(self, tree):
        """Record what each imported or simply assigned name stands for."""
        self.bound = _bound_names(tree)
        for _ in range(3):  # a few rounds resolve chains like `nn = torch.nn; F = nn.functional`
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        parts = alias.name.split(".")
                        self.modules.update(".".join(parts[:i + 1]) for i in range(len(parts)))
                        if alias.asname:
                            self.bindings[alias.asname] = alias.name
                        else:  # `import torch.nn.functional` binds `torch`
                            self.bindings[parts[0]] = parts[0]
                elif isinstance(node, ast.ImportFrom):
                    module = "." * node.level + (node.module or "")
                    if not node.level and node.module:  # `from M import x`: M is a module
                        parts = node.module.split(".")
                        self.modules.update(".".join(parts[:i + 1]) for i in range(len(parts)))
                    for alias in node.names:
                        if alias.name == "*":
                            self.star_modules.add(module)
                        else:
                            self.bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
                            if f"{module}.{alias.name}" in TORCH_MODULES | set(MODULES):
                                self.modules.add(f"{module}.{alias.name}")
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.bindings[node.name] = f"<local>.{node.name}"
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], self.path(node.value)
                    if isinstance(target, ast.Name) and value is not None and value != target.id:
                        self.bindings[target.id] = value
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                self.attribute_bases.add(id(node.value))

    def module_path(self, path):
        """Is ``path`` rooted at a module (torch, numpy, an import), rather than at a local value?"""
        return path is not None and (self.is_module(path.split(".")[0]) or path.split(".")[0] in self.modules)

    # -- reports

    def add(self, node, name, message, kind):
        # One "hidden" finding per line, the first seen: the outermost, fullest expression.
        key = (node.lineno, name if kind == "builtin" else "")
        if key not in self.violations:
            self.violations[key] = Violation(
                self.filename, node.lineno, name, f"{self.filename}, line {node.lineno}: {message}", kind)

    def report(self, node, used):
        shown = used if isinstance(node, (ast.Import, ast.ImportFrom)) else ast.unparse(node)
        why = _path_problem(used) if self.module_path(used) else None
        if why is not None and _builtin(used) is None:  # torch._scaled_dot_product_attention_math hides more than it names
            hint = HIDDEN_HINT if used.split(".")[0] == "torch" else "use torch's own function for it"
            self.hidden(node, used, f"{shown} is not allowed: {why}", hint)
            return
        if why is not None and used.split(".")[0] == "torch" and any(_private(p) for p in used.split(".")):
            self.hidden(node, used, f"{shown} is not allowed: {why}")
            return
        name = _builtin(used)
        if name is not None:
            what = f"{shown} is {name}, which" if shown != name else name
            self.add(node, name, f"{what} is not allowed in this lab; {BUILTIN_HINT}", "builtin")

    def hidden(self, node, name, message, hint=HIDDEN_HINT):
        self.add(node, name, f"{message}; {hint}", "hidden")

    def refuse_import(self, node, module, detail=""):
        self.hidden(node, module, f"importing {module} is not allowed{detail}", IMPORT_HINT)

    def visit_ImportFrom(self, node):
        module = "." * node.level + (node.module or "")
        if node.level:
            self.hidden(node, module, f"the relative import from {module} is not allowed",
                        "write `from attention import ...`")
            return
        if not _module_allowed(module):
            self.refuse_import(node, module)
            return
        for alias in node.names:
            if alias.name == "*":
                if module not in STUDENT_MODULES:
                    self.hidden(node, f"{module}.*", f"from {module} import * is not allowed",
                                f"import the names you use, e.g. from {module} import ...")
                continue
            self.check_defined(node, alias.asname or alias.name)
            if module in STUDENT_MODULES:
                continue
            self.report(node, f"{module}.{alias.name}")

    def visit_Import(self, node):
        for alias in node.names:
            if not _module_allowed(alias.name):
                self.refuse_import(node, alias.name)
            else:
                self.report(node, alias.name)
            if alias.asname:
                self.check_defined(node, alias.asname)

    def check_defined(self, node, name):
        if name in REFUSED_NAMES or name in ATTRIBUTE_FUNCTIONS:
            self.hidden(node, name, f"the name {name} is reserved for Python's own built-in",
                        "give it another name")

    def generic_visit(self, node):
        for name in _defined_names(node):
            self.check_defined(node, name)
        super().generic_visit(node)

    def visit_Attribute(self, node):
        path = self.path(node)
        patched = isinstance(node.ctx, ast.Store) and _dunder(node.attr)  # torch.Tensor.__eq__ = f only patches
        if path is not None:
            self.report(node.value if patched else node, self.path(node.value) if patched else path)
        self.check_attribute(node, node.value, node.attr, isinstance(node.ctx, ast.Store))
        self.check_value_use(node, path)
        self.generic_visit(node)

    def check_attribute(self, node, owner, attr, store=False):
        """The allow-list for attribute names on any object: special names from ALLOWED_DUNDERS only
        (an assignment such as torch.Tensor.__eq__ = f only patches), private names on your own self/cls."""
        if _dunder(attr):
            if attr not in ALLOWED_DUNDERS and not store:
                self.hidden(node, attr, f"{ast.unparse(node)} is not allowed: {attr} reaches inside other objects")
            return
        if _private(attr) or attr.startswith("__"):
            root = owner
            while isinstance(root, ast.Attribute):
                root = root.value
            own = isinstance(root, ast.Name) and root.id in ("self", "cls") and root.id not in self.bindings
            if not own:
                self.hidden(node, attr, f"{ast.unparse(node)} is not allowed: private names are only for your "
                                        "own objects (self._name)")

    def visit_Call(self, node):
        func = node.func.id if isinstance(node.func, ast.Name) else None
        if func in ATTRIBUTE_FUNCTIONS:
            literal = len(node.args) >= 2 and _is_str(node.args[1])
            if not literal or node.keywords or len(node.args) > (3 if func in ("getattr", "setattr") else 2):
                self.hidden(node, f"{func} with a computed name",
                            f"{func}({', '.join(ast.unparse(a) for a in node.args[:1])}, <computed name>) is not "
                            "allowed: it hides which attribute is used",
                            f"name the attribute, e.g. self.w_q, or {func}(obj, \"name\")")
            else:
                if self.module_path(self.path(node.args[0])):
                    self.report(node, f"{self.path(node.args[0])}.{node.args[1].value}")
                self.check_attribute(node, node.args[0], node.args[1].value, store=False)
        self.generic_visit(node)

    def visit_Name(self, node):
        bound = self.bindings.get(node.id, node.id)
        self.check_defined(node, node.id) if not isinstance(node.ctx, ast.Load) else None
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id in REFUSED_NAMES or (_dunder(node.id) and node.id not in ALLOWED_BUILTINS):
            self.hidden(node, node.id, f"{node.id} is not allowed: it can run or reach code the grader cannot read")
        elif node.id in ATTRIBUTE_FUNCTIONS:
            if not self._called(node):
                self.hidden(node, node.id, f"{node.id} passed around as a value is not allowed")
        elif node.id not in self.bound and hasattr(builtins, node.id) and node.id not in ALLOWED_BUILTINS:
            self.hidden(node, node.id, f"the built-in {node.id} is not allowed in this lab's files",
                        "correct attention code does not need it")
        elif node.id in FORBIDDEN and node.id not in self.bindings:
            # A bare forbidden name that nothing in the file defines came from a star import.
            torch_stars = sorted(m for m in self.star_modules if m.split(".")[0] == "torch")
            if torch_stars:
                self.report(node, f"{torch_stars[0]}.{node.id}")
        self.check_value_use(node, bound)

    def check_value_use(self, node, path):
        """A module may be named (torch.softmax) or aliased (F = torch.nn.functional), but passed
        around as a value (in a tuple, to a function) it hides which of its functions is used."""
        if path is None or not isinstance(node.ctx, ast.Load) or not self.is_module(path):
            return
        if path.split(".")[0] in STUDENT_MODULES:  # your own module (or a local of that name) hides nothing of torch
            return
        if id(node) in self.attribute_bases or self._aliased(node) or self._getattr_base(node):
            return
        self.hidden(node, f"module {path} as a value", f"the module {ast.unparse(node)} used as a value hides "
                                                       "what is called from it")

    # -- what surrounds a node (ast has no parent links; _link_parents sets them)

    def _called(self, node):
        parent = getattr(node, "_parent", None)
        return isinstance(parent, ast.Call) and parent.func is node

    def _aliased(self, node):
        parent = getattr(node, "_parent", None)
        return (isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name))

    def _getattr_base(self, node):
        parent = getattr(node, "_parent", None)
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id in ATTRIBUTE_FUNCTIONS and parent.args and parent.args[0] is node
                and len(parent.args) >= 2 and _is_str(parent.args[1]))


def _link_parents(tree):
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child._parent = parent


def find_forbidden_calls(source: str, filename: str) -> "list[Violation]":
    """Every use of a forbidden torch function in ``source``, and everything the lab's allow-lists
    do not hold, in line order.

    Flags torch's attention built-ins (torch.nn.functional.scaled_dot_product_attention,
    torch.nn.MultiheadAttention, torch.nn.functional.multi_head_attention_forward, the
    torch.nn.Transformer* layers, flex_attention) through any alias (``import torch.nn.functional
    as F``, ``from torch import nn``, ``x = torch.nn``); and, as kind "hidden", whatever is not
    allowed: an import or a name outside MODULES, a private or refused torch name (TORCH_REFUSED), a
    built-in outside ALLOWED_BUILTINS, getattr and its kin with a computed name, a special attribute
    outside ALLOWED_DUNDERS, a private name on anything but self/cls, a module passed around as a
    value, a star import from anything but your own attention. Your own
    ``scaled_dot_product_attention`` and names from your own ``attention`` module are fine.
    Raises SyntaxError if ``source`` does not parse.
    """
    tree = ast.parse(source, filename=filename)
    _link_parents(tree)
    scanner = _Scanner(filename)
    scanner.bind(tree)
    scanner.visit(tree)
    return sorted(scanner.violations.values(), key=lambda v: (v.line, v.name))


# ----------------------------------------------------------------------------- checks

# Runs in a child process, so a crash or a hang at import time cannot take submit.py down.
_IMPORT_CHECK = r"""
import os, sys, traceback
folder = os.path.abspath(sys.argv[1])
sys.path.insert(0, folder)
sys.dont_write_bytecode = True
for name in ("attention", "mha"):
    try:
        __import__(name)
    except BaseException as exc:
        where = [f for f in traceback.extract_tb(exc.__traceback__)
                 if os.path.dirname(os.path.abspath(f.filename)) == folder]
        at = f" ({os.path.basename(where[-1].filename)}, line {where[-1].lineno})" if where else ""
        extra = " (is torch installed for this python?)" if getattr(exc, "name", "") == "torch" else ""
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        print(f"\nIMPORT-FAILED cannot import {name}.py: {text}{at}{extra}")
        sys.exit(3)
"""


def check_source(folder, filename):
    """Fail unless the file exists, parses and uses no forbidden function."""
    path = folder / filename
    if not path.is_file():
        raise SubmitError(f"{filename} not found in {folder}")
    try:
        source = read_source(path)
    except UnreadableSource as exc:
        raise SubmitError(str(exc)) from None
    try:
        violations = find_forbidden_calls(source, filename)
    except SyntaxError as exc:
        raise SubmitError(f"{filename} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise SubmitError(violations[0].message + more)
    return source


def check_imports(folder):
    """Fail unless both files import, in a fresh Python with the folder first on sys.path."""
    try:
        child = subprocess.run([sys.executable, "-c", _IMPORT_CHECK, str(folder)], cwd=folder,
                               capture_output=True, text=True, timeout=IMPORT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"importing your files took over {IMPORT_TIMEOUT} s: "
                          "does code outside the functions run at import time?") from None
    if child.returncode == 0:
        return
    failed = [line for line in child.stdout.splitlines() if line.startswith("IMPORT-FAILED ")]
    if failed:
        raise SubmitError(failed[-1].removeprefix("IMPORT-FAILED "))
    raise SubmitError(f"importing your files stopped Python (exit code {child.returncode})")


EXTRA_CREDIT = {"tiled_attention", "MultiHeadAttention.step"}  # optional: skipping them costs nothing else


def unfinished(source, filename):
    """'causal_mask (attention.py)' for every function that still raises NotImplementedError."""
    def names_it(node):
        node = node.func if isinstance(node, ast.Call) else node
        return isinstance(node, ast.Name) and node.id == "NotImplementedError"

    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and any(
                        isinstance(n, ast.Raise) and n.exc is not None and names_it(n.exc) for n in ast.walk(child)):
                    found.append(name)
                walk(child, f"{name}.")
    walk(ast.parse(source), "")
    return [f"{name} ({filename})" for name in found if not any(name.startswith(f"{f}.") for f in found)]


def remove_stale_zip(target):
    """Delete an earlier zip so it cannot be uploaded by mistake; return a note for the message."""
    try:
        target.unlink()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f" (and the old {target.name} could not be removed: {exc.strerror}; do not upload it)"
    return f" (removed the old {target.name}: it held an earlier version of your files)"


def write_zip(folder, target):
    """Write the two files to ``target`` atomically: no half-written zip on failure."""
    handle, temporary = tempfile.mkstemp(suffix=".zip", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for filename in FILES:
                archive.write(folder / filename, arcname=filename)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check attention.py and mha.py and build submission.zip.")
    parser.add_argument("folder", nargs="?", default=Path(__file__).resolve().parent, type=Path,
                        help="folder holding attention.py and mha.py (default: the folder of submit.py)")
    folder = parser.parse_args(argv).folder.resolve()
    target = Path.cwd() / ZIP_NAME
    try:
        if not folder.is_dir():
            raise SubmitError(f"{folder} is not a folder")
        sources = [check_source(folder, filename) for filename in FILES]
        check_imports(folder)
        write_zip(folder, target)
    except SubmitError as exc:
        print(f"submit: {exc}{remove_stale_zip(target)}", file=sys.stderr)
        return 1
    print(f"Wrote {target} with {' and '.join(FILES)}: {UPLOAD}.")
    todo = [name for source, filename in zip(sources, FILES) for name in unfinished(source, filename)]
    core = [name for name in todo if name.split(" ")[0] not in EXTRA_CREDIT]
    extra = [name for name in todo if name.split(" ")[0] in EXTRA_CREDIT]
    if core:
        print(f"Note: still raise NotImplementedError: {', '.join(core)}; run the tests before you upload.")
    if extra:
        print(f"Optional extra credit not written (this costs nothing else): {', '.join(extra)}.")
    return 0

if __name__ == "__main__":
    sys.exit(main())
