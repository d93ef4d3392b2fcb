"""The checker: one student file against the tables (``autograder.rule.tables``), read as text, never run.

``find_forbidden_calls`` gives every finding of one file: kind "builtin" (one of torch's attention
built-ins, named in the code) or "hidden" (code the checker cannot prove harmless). ``file_findings``
is the one call the grader, `make test` and `make submit` make: a file of the pair, with the other
beside it. Each finding's message says where, what, and what to write instead (the hints below);
``refusal`` is the one text for a test that runs a refused file.

The language the checker analyses completely (anything else is a finding, with what to write instead):

* **Statements:** the module's top-level imports (each module bound once, never rebound); def, class,
  assignments, augmented and annotated assignments, if/for/while/try/with/return/raise/assert/del/pass/
  break/continue, global and nonlocal. No match, async or await; nothing deeper than MAX_DEPTH.
* **Definitions:** a class derives from the file's own classes, ``object``, Python's exceptions or one of
  ``BASES`` (torch's layers, autograd's Function, typing's plain bases), takes no keyword (no metaclass),
  and binds no special name but ``SPECIAL_METHODS`` (no protocol hook a library calls by itself:
  ``__array_interface__``, ``__torch_function__``, ``__getattr__``, ``__index__``, ``__del__``, descriptors,
  ``__slots__``...). A module binds no special name but ``MODULE_SPECIALS``.
* **Decorators:** expressions of the same language (``staticmethod``, ``property``, ``x.setter``,
  ``functools.lru_cache``, a function of the file's own); a refused one is to be removed.
* **Expressions:** a module only at the head of ``module.name``, with the name listed in ``ALLOWED``;
  built-ins from ``ALLOWED_BUILTINS`` (``type`` with one argument, only named or compared); an attribute
  of a value is a listed member (``MEMBERS``) or a name the two files define, never one of the library's
  own unlisted attributes (``LIBRARY_NAMES``, computed by walking what the tables reach:
  ``autograder/platforms/rule_reach.py``); a private name only on the ``self`` of a method of the file's
  class (or ``cls`` of a classmethod); a special name only as ``super().__init__``, ``Base.__init__(self)``,
  ``type(x).__name__`` and ``x.__class__.__name__``; getattr/setattr with a written name (a write by
  ``f"w_{i}"`` on self), hasattr with any written name; ``str.format`` on a written template only.
* **Self is the file's own object:** it is a method's first parameter and never rebound; no instance method
  is read through its class (the class's name, ``cls``, ``super(A, B)``, or the class body itself), and a
  class is created, tested, raised, caught or derived from, never kept or passed as a value. So a method's
  ``self._x`` reads an object of the file's own class, whose bases the walk follows privately too.

The allowed libraries' entries that interpret an object given to them (``numpy.array``/``asarray``,
``torch.tensor``/``as_tensor``, ``print``, ``len``, ``iter``, ``sorted``...) see an object of a student's
class as plain Python: it has no protocol hook (above), so it is a sequence of the student's own values
(``__len__``/``__getitem__``/``__iter__``) or an opaque object; ``Tensor.type("name")`` checks the name
against torch's tensor types (no import); an array's ``.data`` is a buffer over that array's own bytes.
"""
import ast
import builtins
import difflib
import io
import string
import types
from pathlib import Path
from typing import NamedTuple

from autograder.rule.library_names import LIBRARY_NAMES
from autograder.rule.source import read_source
from autograder.rule.tables import (ALLOWED_BUILTINS, ALLOWED_IMPORTS, ANNOTATION_ONLY, ANNOTATION_SYNTAX,
                                    ATTRIBUTE_FUNCTIONS, BASES, FILES, FORBIDDEN, INTERPRETER_MEMBERS, MAX_DEPTH,
                                    MAX_NODES, MEMBERS, MODULE_SPECIALS, MODULES, REFUSED_NAMES,
                                    REFUSED_SYNTAX, SPECIAL_METHODS, STUDENT_MODULES, TRANSFORMERS)

# The hint a finding ends with when its check gives none of its own; every refusal says what to write.
BUILTIN_HINT = "write it yourself with matmul, softmax and masked_fill"
HIDDEN_HINT = "write the call out plainly, e.g. torch.softmax(scores, dim=-1)"
IMPORT_HINT = f"this lab's files may import only {ALLOWED_IMPORTS}"
MEMBER_HINT = "use the tensor and layer methods listed in README.md section 5, or your own attributes"
TOP_IMPORT_HINT = "import modules once, at the top of the file (import torch.nn.functional as F)"


class Violation(NamedTuple):
    filename: str
    line: int
    name: str  # what is not allowed, e.g. "torch.nn.MultiheadAttention" or "exec"
    message: str  # one line, ready to show to the student
    # "builtin": one of torch's attention built-ins, named in the code;
    # "hidden": code the checker cannot prove harmless (every test that runs the file gets no points).
    kind: str = "builtin"


# ----------------------------------------------------------------------------- the from-scratch rule

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


def _dunder(name):
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _importable(module):
    return module in MODULES or module in ANNOTATION_ONLY or module in STUDENT_MODULES


def _module_names(path, annotation):
    """The names code may take from the module at ``path``; annotations may also take ANNOTATION_ONLY's."""
    names = set(MODULES.get(path, ()))
    if annotation:
        names |= set(ANNOTATION_ONLY.get(path, ()))
        names |= {m[len(path) + 1:].split(".")[0] for m in ANNOTATION_ONLY if m.startswith(path + ".")}
    return names


def _is_module_path(path, annotation):
    return path in MODULES or (annotation and path in ANNOTATION_ONLY)


def _suggest(name, choices):
    close = difflib.get_close_matches(name, sorted(choices), n=2, cutoff=0.75)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _literal_template(node):
    """Is ``node`` a string literal whose {fields} read no attribute and no item (str.format stays plain)?"""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(node.value) if field]
    except ValueError:
        return False
    return not any("." in field or "[" in field for field in fields)


def _own_name_pattern(node):
    """f"w_{i}": a name built at run time that starts with a written letter, so it is never special or
    private; setattr(self, f"w_{i}", ...) may write such a name (never read one)."""
    return (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
            and isinstance(node.values[0].value, str) and node.values[0].value[:1].isalpha())


# nn.Module's methods that give a layer an attribute by a written name (register_buffer("mask", ...): self.mask).
REGISTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})


class _Exports(NamedTuple):
    modules: dict  # top-level name -> the module it is bound to (import torch.nn as nn: nn -> torch.nn)
    names: frozenset  # every top-level name (what `from attention import *` brings)
    own: frozenset  # the attribute names it defines (a base class there gives self.helper here)
    classes: frozenset  # the classes it defines
    methods: frozenset  # the instance methods its classes define (never read through a class)


def _exports(source):
    """What the other student file offers to `from attention import ...`, or None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    modules, names = {}, set()
    for node in _top_level(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                modules[name] = alias.name if alias.asname else name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name != "*" and f"{node.module}.{alias.name}" in MODULES:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in tree.body:
        for child in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
    names |= set(modules)
    nodes = list(ast.walk(tree))
    return _Exports(modules, frozenset(n for n in names if not n.startswith("_")), frozenset(_own_names(nodes)),
                    frozenset(_classes(nodes)), frozenset(_instance_methods(nodes)))


def _own_names_of(node):
    """The attribute names ``node`` itself defines (for the line of a finding)."""
    names = set(_own_names(ast.walk(node))) if isinstance(node, ast.stmt) else set()
    return names | ({node.attr} if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) else set())


def _own_names(nodes):
    """Attribute names the ``nodes`` of a file (``ast.walk``'s) define: self.x = ..., methods and class
    attributes, setattr(obj, "x", ...)."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    targets = statement.targets if isinstance(statement, ast.Assign) else [
                        statement.target] if isinstance(statement, ast.AnnAssign) else []
                    yield from (t.id for t in targets if isinstance(t, ast.Name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and len(node.args) == 3 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            yield node.args[1].value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REGISTERS
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value  # self.register_buffer("mask", ...) gives self.mask
        elif (isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "namedtuple"
                                              or getattr(node.func, "attr", None) == "namedtuple") and len(node.args) == 2):
            fields = node.args[1]  # namedtuple("Out", "output weights") or (..., ["output", "weights"])
            if isinstance(fields, ast.Constant) and isinstance(fields.value, str):
                yield from fields.value.replace(",", " ").split()
            elif isinstance(fields, (ast.List, ast.Tuple)):
                yield from (e.value for e in fields.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def _instance_methods(nodes):
    """The names of the instance methods the ``nodes`` of a file define in class bodies (not static or class
    methods): read through a class, such a method takes any object as its self."""
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _dunder(statement.name) \
                        and _method_kind(statement) == "method":
                    yield statement.name


def _method_kind(function):
    """"static", "class" or "method": what the decorators of a def in a class body make it."""
    names = {getattr(d, "id", getattr(d, "attr", None)) for d in function.decorator_list}
    return "static" if "staticmethod" in names else "class" if "classmethod" in names else "method"


def _classes(nodes):
    """The classes the ``nodes`` of a file define."""
    return {node.name for node in nodes if isinstance(node, ast.ClassDef)}


def _top_level(tree):
    """The statements run when the module loads: the body, and the bodies of its top-level if and try."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If):
            pending += node.body + node.orelse
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            pending += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]


class _Checker:
    """Checks one file against the rule. It reads the tree once with an explicit stack (no recursion),
    then passes over its nodes, listed once in ``ast.walk``'s order, to bind names, to collect the file's
    own attributes and to check each node; every name, attribute and call is decided by the tables;
    anything else is a finding. (The order matters: a line keeps its first "hidden" finding.)"""

    def __init__(self, source, filename, sibling):
        self.source, self.filename, self.sibling = source, filename, sibling
        self.violations = {}  # (line, name or "") -> Violation
        self.parent = {}  # id(node) -> its parent
        self.modules = {}  # name -> module path, bound once by a top-level import
        self.own_modules = set()  # names bound to your other file (import attention)
        self.annotation_only = {}  # name -> dotted path, for names only annotations may use
        self.bound = set()  # every name the file binds
        self.rebound = set()  # top-level names bound otherwise than by a class statement or an import
        self.imported_values = {}  # name -> the dotted paths an import binds it to (from torch.nn import Module)
        self.class_aliases = set()  # names bound to a class of your other file (from attention import A as B)
        self.unread_imports = set()  # names imported from your other file when it cannot be read
        self.aliased = set()  # ids of the class names a top-level `Alias = YourClass` names
        self.local_names = {}  # id of a def, lambda or comprehension -> the names bound in it
        self.own = set()  # attribute names your file defines
        self.in_annotation = set()  # ids of the nodes inside a type annotation
        self.in_decorator = set()  # ids of the nodes inside a decorator
        self.own_prefixes = set()  # "w_" for setattr(self, f"w_{name}", ...): its names are your own too
        self.classes = set()  # the classes the two files define
        self.methods = set()  # the instance methods those classes define
        self.lines = None  # the file's lines as bytes, split once, for the code a finding quotes
        self.nodes = []  # every node of the tree, in ast.walk's order

    # -- findings

    def add(self, node, name, message, kind="hidden", hint=None):
        key = (node.lineno, name if kind == "builtin" else "")
        if key not in self.violations:
            hint = hint if hint is not None else (BUILTIN_HINT if kind == "builtin" else HIDDEN_HINT)
            if id(node) in self.in_decorator and kind != "builtin":  # @torch.jit.ignore and the like
                hint = f"remove the decorator @{self.decorator_of(node)}: the grader runs your code as plain Python"
            self.violations[key] = Violation(self.filename, node.lineno, name,
                                             f"{self.filename}, line {node.lineno}: {message}; {hint}", kind)

    def decorator_of(self, node):
        """The code of the whole decorator ``node`` stands in."""
        while id(self.parent.get(id(node))) in self.in_decorator:
            node = self.parent[id(node)]
        return self.shown(node)

    def shown(self, node):
        text = " ".join(self.segment(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    def segment(self, node):
        """The code of ``node``, as ``ast.get_source_segment`` gives it. That splits the whole file on every
        call; this splits it once (a long file with many findings took a twentieth of a second per grade)."""
        if getattr(node, "end_lineno", None) is None or getattr(node, "end_col_offset", None) is None:
            return ""
        if self.lines is None:  # split on \n, \r and \r\n, as the parser does (not on form feeds)
            self.lines = [line.encode() for line in io.StringIO(self.source, newline="").readlines()]
        first, last = node.lineno - 1, node.end_lineno - 1  # the offsets count UTF-8 bytes
        if first == last:
            return self.lines[first][node.col_offset:node.end_col_offset].decode()
        return (self.lines[first][node.col_offset:] + b"".join(self.lines[first + 1:last])
                + self.lines[last][:node.end_col_offset]).decode()

    def builtin(self, node, path):
        """Report ``path`` if it is one of torch's attention built-ins; True if it was."""
        name = _builtin(path)
        if name is None:
            return False
        shown = self.shown(node) or path
        what = f"{shown} is {name}, which" if shown != name else name
        self.add(node, name, f"{what} is not allowed in this lab", "builtin")
        return True

    # -- the pass over the tree

    def run(self, tree):
        if not self.index(tree):
            return
        self.nodes = list(ast.walk(tree))
        self.bind(tree)
        for node in self.nodes:
            self.check(node)

    def index(self, tree):
        """Parent links and annotation spans; False (with a finding) for code too large or too deep to check."""
        stack, count = [(tree, 0, False, False)], 0
        while stack:
            node, depth, annotation, decorator = stack.pop()
            count += 1
            if depth > MAX_DEPTH or count > MAX_NODES:
                line = getattr(node, "lineno", 1)
                what = f"nested more than {MAX_DEPTH} levels deep" if depth > MAX_DEPTH else "too large"
                self.violations = {}
                self.add(types.SimpleNamespace(lineno=line), "too deep",
                         f"the code here is {what} for the grader to check",
                         hint="split it into shorter expressions and functions")
                return False
            if annotation:
                self.in_annotation.add(id(node))
            if decorator:
                self.in_decorator.add(id(node))
            for field, child in ast.iter_fields(node):
                children = child if isinstance(child, list) else [child]
                for item in children:
                    if isinstance(item, ast.AST):
                        self.parent[id(item)] = node
                        starts = field in ("annotation", "returns") and not isinstance(node, ast.Lambda)
                        stack.append((item, depth + 1, annotation or starts, decorator or field == "decorator_list"))
        return True

    # -- what each name is bound to

    def bind(self, tree):
        top = {id(node) for node in _top_level(tree)}
        for node in self.nodes:
            if isinstance(node, ast.Import):
                self.bind_import(node, id(node) in top)
            elif isinstance(node, ast.ImportFrom):
                self.bind_from(node, id(node) in top)
        for node in self.nodes:
            for name in self.binds(node):
                self.bound.add(name)
                if not isinstance(node, ast.ClassDef) and isinstance(self.scope(node), ast.Module):
                    self.rebound.add(name)  # a local B (B, T, _ = x.shape) leaves a class B a class
                if name in REFUSED_NAMES or name in ATTRIBUTE_FUNCTIONS:
                    self.add(node, name, f"the name {name} is reserved for Python's own built-in",
                             hint="give it another name")
                elif (name in self.modules or name in self.own_modules) and not isinstance(node, ast.alias):
                    self.add(node, name, f"{name} is the module {self.modules.get(name, name)} (imported at the "
                                         "top of the file) and may not be bound to anything else",
                             hint="give the other value another name")
        self.collect_own()

    def binds(self, node):
        """The names ``node`` binds, other than by an import (those are bound in bind_import/bind_from)."""
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            return [node.id]
        if isinstance(node, ast.arg):
            return [node.arg]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, ast.ExceptHandler) and node.name:
            return [node.name]
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return list(node.names)
        return []

    def bind_name(self, node, name, path, kind, top):
        """Bind ``name`` by an import: kind "module", "own" (your other file), "annotation" or "value"."""
        if kind in ("module", "own"):
            if not top:
                self.add(node, name, f"importing the module {path} inside a function or class is not allowed",
                         hint=TOP_IMPORT_HINT)
            known = self.modules.get(name) if kind == "module" else (name if name in self.own_modules else None)
            if name in self.bound or (name in self.modules or name in self.own_modules) and known != path:
                self.add(node, name, f"{name} is imported twice, as two different things",
                         hint="give each import its own name")
            (self.own_modules.add(name) if kind == "own" else self.modules.__setitem__(name, path))
        else:
            if name in self.modules or name in self.own_modules:
                self.add(node, name, f"{name} is the module {self.modules.get(name, name)} and may not be "
                                     "imported again as something else", hint="give the other import another name")
            self.bound.add(name)
            if kind == "annotation":
                self.annotation_only[name] = path
            elif path is not None:
                self.imported_values.setdefault(name, set()).add(path)  # from torch.nn import Module

    def bind_import(self, node, top):
        for alias in node.names:
            parts = alias.name.split(".")
            refused = [".".join(parts[:i]) for i in range(1, len(parts) + 1)
                       if not _importable(".".join(parts[:i]))]
            if refused:
                self.add(node, alias.name, f"importing {alias.name} is not allowed", hint=IMPORT_HINT)
                continue
            name = alias.asname or parts[0]
            path = alias.name if alias.asname else parts[0]
            self.bind_name(node, name, path, "own" if path in STUDENT_MODULES else "module", top)

    def bind_from(self, node, top):
        module = node.module or ""
        if node.level:
            self.add(node, "." * node.level + module, f"the relative import from {'.' * node.level}{module} is not "
                                                        "allowed", hint="write `from attention import ...`")
            return
        if not _importable(module):
            self.add(node, module, f"importing {module} is not allowed", hint=IMPORT_HINT)
            return
        for alias in node.names:
            if module in STUDENT_MODULES:
                self.bind_own(node, alias, top)
                continue
            if alias.name == "*":
                self.add(node, f"{module}.*", f"from {module} import * is not allowed",
                         hint=f"import the names you use, e.g. from {module} import ...")
                continue
            name, path = alias.asname or alias.name, f"{module}.{alias.name}"
            if alias.name in MODULES.get(module, ()):
                self.bind_name(node, name, path, "module" if path in MODULES else "value", top)
            elif alias.name in ANNOTATION_ONLY.get(module, ()):
                self.bind_name(node, name, path, "annotation", top)
            elif not self.builtin(node, path):
                self.add(node, path, f"{path} is not among the names this lab allows from {module}"
                                     f"{_suggest(alias.name, MODULES.get(module, ()))}", hint=IMPORT_HINT)

    def bind_own(self, node, alias, top):
        """`from attention import x`: a module of that file stays a module here; anything else is a value."""
        exports = self.sibling
        if alias.name == "*":
            if exports is None:
                return
            for name in exports.names:
                kind = "module" if name in exports.modules else "value"
                self.bind_name(node, name, exports.modules.get(name), kind, top)
                if name in exports.classes:
                    self.class_aliases.add(name)
            return
        name = alias.asname or alias.name
        if exports is not None and alias.name in exports.modules:
            self.bind_name(node, name, exports.modules[alias.name], "module", top)
        else:
            self.bind_name(node, name, None, "value", top)
            if exports is not None and alias.name in exports.classes:  # a class of yours, under this name here
                self.class_aliases.add(name)
            elif exports is None:  # the other file cannot be read: nothing of it runs, whatever it is
                self.unread_imports.add(name)

    def top_level_aliases(self, tree):
        """Names a top-level ``Alias = YourClass`` binds: another name of the class (a class still, so its methods
        are never read through it), not a value."""
        aliases, grown = set(), True
        while grown:
            grown = False
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                        and isinstance(node.value, ast.Name) and node.value.id in self.classes | aliases
                        and node.targets[0].id not in aliases):
                    aliases.add(node.targets[0].id)
                    self.aliased.add(id(node.value))
                    grown = True
        self.rebound -= aliases
        return aliases

    def collect_own(self):
        """Your files' attribute names (this one's and the other's); a name of the interpreter's is refused."""
        for name in set(_own_names(self.nodes)):
            if name in INTERPRETER_MEMBERS:
                line = next(getattr(n, "lineno", 1) for n in self.nodes if name in _own_names_of(n))
                self.add(types.SimpleNamespace(lineno=line), name,
                         f"the attribute name {name} is one of Python's own (it reaches the interpreter's frames "
                         "and code)", hint="give your attribute another name")
            elif not _dunder(name):
                self.own.add(name)
        if self.sibling is not None:
            self.own |= {name for name in self.sibling.own if name not in INTERPRETER_MEMBERS and not _dunder(name)}
        self.classes = _classes(self.nodes) | self.class_aliases | (
            self.sibling.classes if self.sibling is not None else frozenset())
        self.classes |= self.top_level_aliases(self.nodes[0])
        self.methods = set(_instance_methods(self.nodes)) | (
            self.sibling.methods if self.sibling is not None else frozenset())
        self.own_prefixes = {node.args[1].values[0].value for node in self.nodes
                             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                             and node.func.id == "setattr" and len(node.args) == 3 and _own_name_pattern(node.args[1])}

    # -- what each expression stands for

    def resolve(self, node):
        """("module", path), ("own", name) for your other file, ("leaf", path) for a module's name, or
        ("value", None): what ``node`` stands for, following attributes and getattr with a written name."""
        annotation = id(node) in self.in_annotation
        attrs = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif self.literal_getattr(node):
                attrs.append(node.args[1].value)
                node = node.args[0]
            else:
                break
        if not isinstance(node, ast.Name):
            return ("value", None)
        if node.id in self.modules:
            kind, path = "module", self.modules[node.id]
        elif node.id in self.own_modules:
            kind, path = "own", node.id
        else:
            return ("value", None)
        for attr in reversed(attrs):
            if kind == "module":
                child = f"{path}.{attr}"
                kind, path = ("module" if _is_module_path(child, annotation) else "leaf"), child
            elif kind == "own" and self.sibling is not None and attr in self.sibling.modules:
                kind, path = "module", self.sibling.modules[attr]
            else:
                return ("value", None)
        return (kind, path)

    def written_name_call(self, node):
        """getattr, setattr, hasattr or delattr with a written name: the same as naming the attribute."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))

    def literal_getattr(self, node):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) in (2, 3) and not node.keywords and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str))

    # -- the checks

    def check(self, node):
        kind = type(node).__name__
        if kind in REFUSED_SYNTAX:
            self.add(node, kind, f"{REFUSED_SYNTAX[kind]} is not allowed in this lab's files",
                     hint="write it with plain functions, if and for")
        elif id(node) in self.in_annotation and not isinstance(node, ANNOTATION_SYNTAX):
            self.add(node, "annotation", f"the annotation {self.shown(node)} computes something",
                     hint="annotations may hold names, subscripts and strings only, e.g. Optional[Tensor]")
        elif isinstance(node, ast.BinOp) and id(node) in self.in_annotation and not isinstance(node.op, ast.BitOr):
            self.add(node, "annotation", f"the annotation {self.shown(node)} computes something",
                     hint="annotations may hold names, subscripts and strings only, e.g. Optional[Tensor]")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.check_name(node)
        elif isinstance(node, ast.Name) and node.id in ("self", "cls"):  # a store or a del
            self.add(node, node.id, f"assigning to {node.id} is not allowed: it would no longer be your own object",
                     hint="give the value another name")
        elif isinstance(node, ast.Attribute):
            self.check_member(node, node.value, node.attr, not isinstance(node.ctx, ast.Load))
            kind, path = self.resolve(node)
            if kind in ("module", "own") and not self.chain_head(node):
                self.module_as_value(node, path)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS:
            self.check_attribute_function(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            self.check_type_call(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REGISTERS:
            self.check_registered_name(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign,
                             ast.AugAssign)):
            self.check_special_binding(node)
        if isinstance(node, ast.ClassDef):
            self.check_class(node)

    # -- the language by construct: special methods, classes, type()

    def check_special_binding(self, node):
        """A special name bound in a class body (def or assignment) must be one of SPECIAL_METHODS, and one
        bound at the top of a module one of MODULE_SPECIALS: any other is a hook that a library or the
        interpreter calls by itself (numpy's __array_interface__, torch's __torch_function__)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]
        where = self.parent.get(id(node))
        for name in (n for n in names if _dunder(n)):
            if isinstance(where, ast.ClassDef):
                if name in SPECIAL_METHODS and not isinstance(node, ast.ClassDef):
                    continue
                allowed = ", ".join(SPECIAL_METHODS)
                self.add(node, name, f"defining {name} is not allowed: a library or Python itself calls such a "
                                     "special method on its own, which the grader cannot follow",
                         hint=f"remove it, and write a plain method you call yourself; a class may define only "
                              f"{allowed}")
            elif isinstance(where, ast.Module) and name in MODULE_SPECIALS:
                continue
            else:
                self.add(node, name, f"binding the special name {name} is not allowed here",
                         hint="give it a plain name (a module may set only __all__)")

    def check_class(self, node):
        """A class statement takes no keywords (no metaclass=) and does not derive from type (a metaclass)."""
        if node.keywords:
            self.add(node, "class keywords", f"class {node.name}(..., {node.keywords[0].arg}=...) is not allowed: a "
                                             "metaclass or class keyword runs code when the class is made",
                     hint=f"write class {node.name}(Base): with plain base classes")
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "type" and "type" not in self.bound:
                self.add(node, "metaclass", f"class {node.name}(type) makes a metaclass, which builds classes "
                                            "from a dict of any names", hint="derive from object or nn.Module")
            elif not self.allowed_base(base):
                self.add(node, "base class", f"class {node.name}({self.shown(base)}) is not allowed: an object of "
                                             "yours would hold that class's private parts",
                         hint="derive from nn.Module, autograd's Function, a class of yours or an exception; "
                              "keep a tensor as an attribute rather than deriving from it")

    def allowed_base(self, base):
        """Your own class, object, a Python exception, or one of BASES (Generic[T] and namedtuple(...) too)."""
        if isinstance(base, ast.Subscript):  # Generic[T], Protocol[T]
            base = base.value
        if isinstance(base, ast.Call):  # class Pair(namedtuple("Pair", "output weights"))
            base = base.func
        if isinstance(base, ast.Name):
            if (base.id in self.classes or base.id in self.unread_imports) and base.id not in self.rebound:
                return True
            if base.id in self.imported_values:
                return self.imported_values[base.id] <= BASES and base.id not in self.rebound
            return base.id not in self.bound and base.id in ALLOWED_BUILTINS and (
                base.id == "object" or base.id.endswith(("Error", "Exception", "Warning")))
        kind, path = self.resolve(base)
        if kind == "leaf":
            return path in BASES
        return isinstance(base, ast.Attribute) and base.attr in self.classes  # attention.MyAttention

    def check_type_call(self, node):
        """type(x) gives x's class: only its name (type(self).__name__) or a comparison (type(x) is T) is
        allowed. type(name, bases, dict) makes a class from a dict, whose keys may be any special name, and
        calling what type(x) gave could do the same (the class of a class is type)."""
        if "type" in self.bound:
            return
        parent = self.parent.get(id(node))
        if len(node.args) != 1 or node.keywords:
            self.add(node, "type", f"{self.shown(node)} is not allowed: type() with three arguments makes a class "
                                   "from a dict of any names", hint="write a class statement")
            return
        named = isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "__name__"
        compared = isinstance(parent, ast.Compare)
        checked = (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                   and parent.func.id in ("isinstance", "issubclass") and node in parent.args[1:])
        if not (named or compared or checked):
            self.add(node, "type", f"{self.shown(node)} is not allowed here: type(x) may be compared or named "
                                   "(type(x).__name__), not used otherwise",
                     hint="use isinstance(x, ...) to test a type, or type(x).__name__ for its name")

    def check_registered_name(self, node):
        """register_buffer("name", ...) and the like give the object an attribute by that name: never a special
        one (a layer registered as __array__ would answer numpy's protocol)."""
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and _dunder(node.args[0].value):
            self.add(node, node.args[0].value, f"{self.shown(node)} is not allowed: it gives your object the special "
                                               f"name {node.args[0].value}", hint="register it under a plain name")

    def chain_head(self, node):
        """Does ``node`` stand at the head of a longer name (``node.attr``, or getattr(node, "attr"))?"""
        parent = self.parent.get(id(node))
        return (isinstance(parent, ast.Attribute) and parent.value is node) or (
            self.written_name_call(parent) and parent.args[0] is node)

    def check_class_as_value(self, node):
        """Your class by name may be called, derived from, tested (isinstance), raised or caught, named in an
        annotation or given to super(); as any other value (stored, passed) its methods could be read through it."""
        parent = self.parent.get(id(node))
        if id(node) in self.in_annotation or id(node) in self.in_decorator or self.chain_head(node) \
                or id(node) in self.aliased:
            return
        if isinstance(parent, ast.Call) and (parent.func is node or (
                isinstance(parent.func, ast.Name) and parent.func.id in ("isinstance", "issubclass", "super"))):
            return
        if isinstance(parent, (ast.ClassDef, ast.ExceptHandler, ast.Raise, ast.Compare)):
            return
        if isinstance(parent, ast.Tuple) and isinstance(self.parent.get(id(parent)), (ast.ExceptHandler, ast.Call)):
            return  # except (A, B) and isinstance(x, (A, B))
        self.add(node, node.id, f"your class {node.id} used as a value is not allowed: its methods could be read "
                                "through it", hint=f"create the object here with {node.id}(...) and keep that")

    def scope(self, node):
        """The innermost def, lambda, class or module ``node`` is in."""
        scope = self.parent.get(id(node))
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                          ast.ClassDef, ast.Module)):
            scope = self.parent.get(id(scope))
        return scope

    def locally_bound(self, node):
        """Is the name ``node`` reads bound in a def, lambda or comprehension around it (a local B, not class B)?"""
        scope = self.parent.get(id(node))
        while scope is not None:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                                  ast.DictComp, ast.GeneratorExp)):
                if id(scope) not in self.local_names:
                    self.local_names[id(scope)] = {name for inner in ast.walk(scope) for name in self.binds(inner)
                                                   if inner is not scope}
                if node.id in self.local_names[id(scope)]:
                    return True
            scope = self.parent.get(id(scope))
        return False

    def check_name(self, node):
        name, parent = node.id, self.parent.get(id(node))
        head = self.chain_head(node)
        if name in self.classes and name not in self.rebound and not self.locally_bound(node):
            self.check_class_as_value(node)
        if name in self.methods and isinstance(self.scope(node), ast.ClassDef) and id(node) not in self.in_decorator:
            self.add(node, name, f"the method {name} used as a value in its class body is not allowed: through "
                                 "the class it would take any object as its self",
                     hint="call it on your object (self.name(...)) from a method instead")
        if name in self.annotation_only:
            if id(node) not in self.in_annotation:
                self.add(node, name, f"{self.annotation_only[name]} may only be used in type annotations",
                         hint=f"keep {name} in annotations such as x: {name}[...], or remove it")
        elif name in self.modules or name in self.own_modules:
            if not head:
                self.module_as_value(node, self.modules.get(name, name))
        elif name in ATTRIBUTE_FUNCTIONS:
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.add(node, name, f"{name} passed around as a value is not allowed",
                         hint="name the attribute, e.g. self.w_q")
        elif name in REFUSED_NAMES or (_dunder(name) and name not in ALLOWED_BUILTINS):
            self.add(node, name, f"{name} is not allowed: it can run or reach code the grader cannot read")
        elif name not in self.bound and hasattr(builtins, name) and name not in ALLOWED_BUILTINS:
            self.add(node, name, f"the built-in {name} is not allowed in this lab's files",
                     hint="correct attention code does not need it")

    def module_as_value(self, node, path):
        parent, shown = self.parent.get(id(node)), self.shown(node)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            hint = f"import it by name instead: import {path} as {parent.targets[0].id}"
        else:
            hint = f"call its functions directly, e.g. {shown}.<function>(...)"
        self.add(node, f"module {shown} as a value", f"the module {shown} used as a value hides what is called "
                                                     "from it", hint=hint)

    def check_member(self, node, owner, attr, store):
        """``owner.attr`` (or getattr/setattr with the written name ``attr``)."""
        annotation = id(node) in self.in_annotation
        kind, path = self.resolve(owner)
        shown = self.shown(node) or attr
        if kind == "module":
            if attr.startswith("_") and not _dunder(attr):
                self.add(node, f"{path}.{attr}", f"{shown} is not allowed: private names of {path} reach past "
                                                 "what the grader can check")
            elif attr in _module_names(path, annotation):
                if store:
                    self.add(node, f"{path}.{attr}", f"assigning to {shown} changes {path} itself",
                             hint="keep your own values in your own names and objects")
            elif not self.builtin(node, f"{path}.{attr}"):
                listed = _module_names(path, annotation)
                why = f"{path}.{attr} is not among the names this lab allows from {path}{_suggest(attr, listed)}"
                if attr in ANNOTATION_ONLY.get(path, ()) or f"{path}.{attr}" in ANNOTATION_ONLY:
                    why = f"{path}.{attr} may only be used in type annotations"
                self.add(node, f"{path}.{attr}", f"{shown} is not allowed: {why}", hint="see README.md section 5")
            return
        if kind == "own":
            if _dunder(attr) or attr.startswith("_"):
                self.add(node, attr, f"{shown} is not allowed: private and special names of your other file "
                                     "are its own", hint="import the name you need: from attention import ...")
            return
        parent = self.parent.get(id(node))
        if kind == "leaf" and store:
            self.add(node, attr, f"assigning to {shown} changes {path} itself",
                     hint="keep your own values in your own names and objects")
        elif _dunder(attr):
            called = isinstance(parent, ast.Call) and parent.func is node
            via_super = isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
            own_class = isinstance(owner, ast.Name) and owner.id in self.classes  # Base.__init__(self), Base yours
            init = attr == "__init__" and called and (via_super or own_class or kind == "leaf")
            class_name = (attr == "__class__" and not store and isinstance(parent, ast.Attribute)
                          and parent.attr == "__name__")  # self.__class__.__name__: a string, as type(self).__name__
            if not (init or class_name or (attr == "__name__" and not store)):  # a name is a string
                self.add(node, attr, f"{shown} is not allowed: {attr} reaches inside other objects",
                         hint="special names are only for super().__init__(...); use type(x), isinstance, len")
        elif attr in self.methods and self.unbound_super(owner) and not store:
            self.add(node, attr, f"{shown} is not allowed: this super() hands out the method unbound, to take any "
                                 "object as its self", hint=f"write super().{attr}(...) in a method of your class")
        elif attr in self.methods and self.class_reference(owner) and not store:
            self.add(node, attr, f"{shown} is not allowed: a method read through its class takes any object as "
                                 "its self", hint=f"call it on your object: self.{attr}(...) or obj.{attr}(...)")
        elif attr.startswith("_"):
            if not (self.own_self(owner) or (isinstance(owner, ast.Name) and owner.id in self.classes)):
                self.add(node, attr, f"{shown} is not allowed: private names are only for your own objects "
                                     "(self._name in a method of your class)")
        elif attr in LIBRARY_NAMES and attr not in MEMBERS and not store:
            self.library_name(node, attr, shown)
        elif attr == "format" and not store:
            if not _literal_template(owner):
                self.add(node, attr, f"{shown} is not allowed: a template that is not written out can read "
                                     "any attribute", hint='use an f-string, e.g. f"{d_model} is not divisible"')
        elif attr not in MEMBERS and attr not in self.own and not self.own_by_prefix(attr) and not store:
            self.add(node, attr, f"{shown} is not allowed: {attr} is neither a member this lab lists for "
                                 f"tensors, layers and Python values nor a name your file defines"
                                 f"{_suggest(attr, MEMBERS | self.own)}", hint=MEMBER_HINT)

    def unbound_super(self, node):
        """Is ``node`` a super() that gives unbound methods: super(A, B) whose second argument is not the self
        of a method of yours, or super() in a def that is not an instance method?"""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"):
            return False
        if node.args:
            return len(node.args) != 2 or not (self.own_self(node.args[1]) and node.args[1].id == "self")
        function = self.scope(node)
        return not (isinstance(function, ast.FunctionDef) and isinstance(self.parent.get(id(function)), ast.ClassDef)
                    and _method_kind(function) == "method")

    def class_reference(self, node):
        """Is ``node`` one of your classes (its name, cls, or module.Class)?"""
        if isinstance(node, ast.Name):
            return node.id in self.classes or node.id == "cls"
        return isinstance(node, ast.Attribute) and node.attr in self.classes

    def own_self(self, node):
        """Is ``node`` the self (or cls) of a method of your class: the first parameter of the def that binds
        that name, a def in a class body (self: an instance method; cls: a classmethod)? Then it is your own
        object, since no method is read through its class (``class_reference``) and self is never rebound."""
        if not (isinstance(node, ast.Name) and node.id in ("self", "cls")):
            return False
        function = self.parent.get(id(node))
        while function is not None:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.id in {
                    a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}:
                break
            function = self.parent.get(id(function))
        if not isinstance(function, ast.FunctionDef) or not isinstance(self.parent.get(id(function)), ast.ClassDef):
            return False
        first = (function.args.posonlyargs + function.args.args)[:1]
        kind = _method_kind(function)
        return bool(first) and first[0].arg == node.id and (kind == "method") == (node.id == "self") and kind != "static"

    def library_name(self, node, attr, shown):
        """``attr`` is a library's own attribute (``LIBRARY_NAMES``): a name of yours that equals it would read
        theirs on such a value, which reaches past the tables (numpy's arrays: .ctypes, raw memory)."""
        example = LIBRARY_NAMES[attr]
        self.add(node, attr, f"{shown} is not allowed: {attr} is also an attribute of library objects ({example}) "
                             "that this lab does not list, so the grader cannot tell yours from theirs",
                 hint=f"give your attribute another name, e.g. {attr.strip('_')}_"
                      if attr in self.own or self.own_by_prefix(attr) else MEMBER_HINT)

    def own_by_prefix(self, attr):
        """self.w_o after setattr(self, f"w_{name}", ...): a name with a prefix your file writes that way."""
        return attr not in INTERPRETER_MEMBERS and any(attr.startswith(prefix) for prefix in self.own_prefixes)

    def check_attribute_function(self, node):
        func, args = node.func.id, node.args
        arity = {"getattr": (2, 3), "setattr": (3,), "hasattr": (2,), "delattr": (2,)}[func]
        plain = f"name the attribute, e.g. self.w_q, or {func}(obj, \"name\")"
        if node.keywords or len(args) not in arity:
            self.add(node, func, f"{self.shown(node)} is not allowed: {func} takes its arguments in order here",
                     hint=plain)
        elif func == "hasattr" and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            kind, path = self.resolve(args[0])  # a bool: whether the object has it, never the attribute itself
            if kind == "module":  # hasattr(F, "scaled_dot_product_attention") still names the built-in
                self.builtin(node, f"{path}.{args[1].value}")
        elif isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            self.check_member(node, args[0], args[1].value, func in ("setattr", "delattr"))
        elif not (func == "setattr" and isinstance(args[0], ast.Name) and args[0].id == "self"
                  and _own_name_pattern(args[1])):
            # Only a write is provable: setattr(self, f"w_{i}", ...) can write a plain name, never read one.
            # A read by a computed name (getattr(self, f"g{n}")) could reach whatever any object holds.
            if func == "setattr":
                hint = f"{plain}, or setattr(self, f\"w_{{i}}\", ...) with written letters first, on self"
            else:
                hint = "write the name out (self.w_q(x)), or keep the layers in an nn.ModuleDict: self.proj[name]"
            self.add(node, f"{func} with a computed name",
                     f"{func}({self.shown(args[0])}, <computed name>) is not allowed: it hides which attribute "
                     "is used", hint=hint)


def find_forbidden_calls(source: str, filename: str, sibling: "str | None" = None) -> "list[Violation]":
    """Every use of torch's attention built-ins in ``source`` (kind "builtin") and everything the rule
    cannot prove harmless (kind "hidden"), in line order: see the tables above and README.md section 5.

    ``sibling`` is the text of your other file (attention.py for mha.py and back), so that
    `from attention import torch` is known to be a module. Code too large or too deep to check is
    one finding, never an error of the checker. Raises SyntaxError if ``source`` does not parse.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except (RecursionError, MemoryError):
        return [Violation(filename, 1, "too deep", f"{filename}, line 1: the code is nested too deeply for Python "
                                                   "to read; split it into shorter expressions", "hidden")]
    except ValueError as exc:  # a NUL byte (older Pythons raise ValueError, not SyntaxError)
        raise SyntaxError(str(exc)) from None
    checker = _Checker(source, filename, None if sibling is None else _exports(sibling))
    checker.run(tree)
    return sorted(checker.violations.values(), key=lambda v: (v.line, v.name))


def refusal(violations, name):
    """What a test that runs ``name`` (a function or class of a refused file) says, in `make test` and in
    the grade alike: the first finding, how many more, and why no such test counts."""
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    return (f"{name} is not graded: {violations[0].message}{more}. The grader cannot tell what such code "
            "calls, so no test that runs it counts (the from-scratch rule).")


def file_findings(folder, filename) -> "list[Violation]":
    """find_forbidden_calls on ``folder/filename``, with the other file of the pair as its sibling: the one
    call `make submit`, `make test` and the grader all make. Raises OSError if the file cannot be read,
    UnreadableSource for bytes Python refuses, SyntaxError if it does not parse."""
    folder = Path(folder)
    other = next(f for f in FILES if f != filename) if filename in FILES else None
    try:
        sibling = read_source(folder / other) if other else None
    except (OSError, ValueError):
        sibling = None  # missing or unreadable: it is reported on its own, and imports nothing here
    return find_forbidden_calls(read_source(folder / filename), filename, sibling)
