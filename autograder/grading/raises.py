"""Proofs from syntax that a submission's function can only raise, and which exception (trusted side).

Used to spare a fresh child a call whose outcome is already known (``Student._fails_as_before``): the
measured memory call of an extra-credit function the student never wrote, or left as the stub. And, for a
method of the student's ``nn.Module`` (``method_only_raises``), to spare an MHA test's retries on the lab's
lower parts, which all run that method (``Student.method_only_raises``, ``with_parts_below``). The proof is
the parent's, read from the staged files, never run; the child's earlier error is only the second half of the
evidence. Either half alone can only turn a call into the failure it would be anyway: a file outside the small
grammar below gets no proof, and then the call runs as always.
"""
import ast
import functools
import inspect

STUB_ERROR = "NotImplementedError"


def only_raises(sources, module, function):
    """The exception a call of ``module.function`` must end in, proved from ``sources`` ({file name: bytes}, every
    file the call may run), or None when not proved:

    - ``"AttributeError"`` (not defined): no file binds the name (no def, class, assignment, deletion, import,
      parameter, keyword argument or attribute store of it), none holds it in a string other than a docstring
      (a computed binding needs one), none star-imports, and ``module`` has no module ``__getattr__``;
    - the stub's exception (``"NotImplementedError"``): the name's one binding is an undecorated module-level
      ``def`` in ``module`` whose body is a docstring at most and ``raise NotImplementedError``, bare or with
      constant arguments, a name no file binds.

    A file that does not compile is left out: importing it runs none of it."""
    trees = _compiled(sources)
    if f"{module}.py" not in trees:
        return None
    bound, bindings = set(), []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                return None
            if _names_in_string(node, function):
                return None
            for each in _bound(node):
                bound.add(each)
                if each == function:
                    bindings.append((name, node))
    own = trees[f"{module}.py"]
    if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__"
           for node in own.body):
        return None
    if not bindings:
        return "AttributeError"
    if len(bindings) == 1 and bindings[0][0] == f"{module}.py" and bindings[0][1] in own.body \
            and _is_stub(bindings[0][1]) and STUB_ERROR not in bound:
        return STUB_ERROR
    return None


def _compiled(sources):
    """{file name: tree} of the ``sources`` that parse: a file that does not compile runs nothing, so binds nothing."""
    trees = {}
    for name, source in sources.items():
        try:
            trees[name] = ast.parse(source)
        except (SyntaxError, ValueError, TypeError):
            continue
    return trees


def _bound(node):
    """The names ``node`` binds, or could bind on a module or object by name."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.attr
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield alias.asname or alias.name.split(".")[0]
            yield alias.name.split(".")[-1]
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.keyword) and node.arg is not None:
        yield node.arg
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest


def _names_in_string(node, function):
    """Whether ``node`` is a statement or expression holding a string with ``function`` in it, docstrings (a
    string that is a whole statement, which binds nothing) left out."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False
    return any(isinstance(child, ast.Constant) and isinstance(child.value, str) and function in child.value
               for child in ast.iter_child_nodes(node))


def _is_stub(node):
    """An undecorated def whose body is a docstring at most, then ``raise NotImplementedError`` (constant args)."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return False
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].cause is not None:
        return False
    raised = body[0].exc
    if isinstance(raised, ast.Call):
        if raised.keywords or not all(isinstance(arg, ast.Constant) for arg in raised.args):
            return False
        raised = raised.func
    return isinstance(raised, ast.Name) and raised.id == STUB_ERROR


# --- a method of the student's nn.Module, as torch reaches it ------------------------------------

def method_only_raises(sources, module, cls, method):
    """The exception ``module.cls(...).method`` must end in when torch reaches it (``obj(...)`` for ``forward``,
    ``obj.method(...)`` else), whatever ran before it on the object, proved from ``sources`` (as ``only_raises``
    takes them), or None when not proved. Used where every retry of a test runs the student's own ``method``
    (``attention_checks.with_parts_below``): then no retry can pass. Only for files the rule's scanner leaves no
    "hidden" finding in (the caller's part: no computed attribute name but a written one, no ``exec``).

    - ``"AttributeError"`` (not written): torch's ``nn.Module`` has no ``method``, and no file binds it on an
      object (no attribute store, keyword argument, or string holding it) nor ``cls``'s body at all;
    - the stub's exception: ``cls``'s body binds ``method`` once, by the stub's ``def`` (``_is_stub``).

    In both, ``cls`` must be reached as written: its name's one binding is an undecorated module-level class of
    ``module`` with no keywords, derived from torch's ``nn.Module`` alone; its body binds no special name but
    ``__init__`` and none of ``nn.Module``'s own (``_call_impl``, hooks...) but ``__init__`` and ``forward``; no file
    stores such a name on any object, star-imports, or names an attribute to ``setattr``-like calls or
    ``nn.Module``'s ``add_module``/``register_*`` other than by a written string."""
    trees = _compiled(sources)
    own = trees.get(f"{module}.py")
    if own is None:
        return None
    guarded = module_names() | {method}
    classes = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                return None
            if _names_in_string(node, method) or _unsafe_store(node, guarded) or _names_attribute(node, guarded) \
                    or _reflective(node):
                return None
            if isinstance(node, ast.keyword) and node.arg == method:
                return None
            if cls in _bound(node):
                classes.append(node)
    if len(classes) != 1 or classes[0] not in own.body or not _plain_module_class(classes[0], own):
        return None
    body_bindings = [(each, node) for node in classes[0].body for each in _bound_at_top(node)]
    if any(_special(each) or each in module_names() for each, _ in body_bindings
           if each not in ("__init__", "forward", method)):
        return None
    defs = [node for each, node in body_bindings if each == method]
    if not defs:
        return None if method in module_names() else "AttributeError"
    if len(defs) == 1 and _is_stub(defs[0]) and not any(STUB_ERROR in _bound(node) for tree in trees.values()
                                                         for node in ast.walk(tree)):
        return STUB_ERROR
    return None


@functools.lru_cache(maxsize=1)
def module_names():
    """Every name torch's ``nn.Module`` class and a fresh instance hold: what its ``__call__`` and attribute lookup
    read (``_call_impl``, ``_compiled_call_impl``, the hook dicts, ``_modules``...), computed from torch here."""
    import torch  # the proof's parent has it loaded; importing this module needs no torch
    return frozenset(dir(torch.nn.Module)) | frozenset(vars(torch.nn.Module()))


@functools.lru_cache(maxsize=1)
def naming_calls():
    """Calls that name an attribute by a string: Python's ``*attr`` built-ins and ``nn.Module``'s public methods
    that take a ``name`` (``add_module``, ``register_buffer``...), computed from torch here."""
    import torch
    torch_ones = {name for name in dir(torch.nn.Module) if not name.startswith("_")
                  and callable(getattr(torch.nn.Module, name))
                  and "name" in inspect.signature(getattr(torch.nn.Module, name)).parameters}
    return frozenset({"getattr", "setattr", "delattr", "hasattr"} | torch_ones)


# What reaches a namespace by a computed key (``vars(self)[name] = f``, ``object.__setattr__``, ``self.__dict__``):
# the rule's scanner refuses them all; the proof withholds itself on them too, rather than rely on that.
REFLECTIVE = frozenset({"vars", "globals", "locals", "exec", "eval", "compile", "__import__", "__builtins__"})
READ_SPECIALS = frozenset({"__init__", "__name__", "__class__", "__doc__"})  # super().__init__, x.__class__.__name__


def _reflective(node):
    return (isinstance(node, ast.Name) and node.id in REFLECTIVE) or \
        (isinstance(node, ast.Attribute) and _special(node.attr) and node.attr not in READ_SPECIALS)


def _special(name):
    return name.startswith("__") and name.endswith("__")


def _unsafe_store(node, guarded):
    """An attribute store or deletion of a special name or one of ``guarded``, on any object."""
    return isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) \
        and (_special(node.attr) or node.attr in guarded)


def _names_attribute(node, guarded):
    """A call of ``naming_calls`` whose attribute name is not a written string, or is a special or guarded one."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else None
    if func not in naming_calls():
        return False
    position = 1 if func in ("getattr", "setattr", "delattr", "hasattr") else 0
    named = [kw.value for kw in node.keywords if kw.arg == "name"] or node.args[position:position + 1]
    if len(named) != 1 or not isinstance(named[0], ast.Constant) or not isinstance(named[0].value, str):
        return True
    return _special(named[0].value) or named[0].value in guarded


def _bound_at_top(node):
    """The names one statement of a class body binds in that body (not inside its functions)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.Lambda):
            continue
        yield from (name for name in _bound(inner) if not isinstance(inner, (ast.arg, ast.keyword)))


def _plain_module_class(node, tree):
    """An undecorated class with no keywords whose bases are each torch's ``nn.Module``, as ``tree`` imports it."""
    return isinstance(node, ast.ClassDef) and not node.decorator_list and not node.keywords and node.bases \
        and all(_is_torch_module(base, tree) for base in node.bases)


def _is_torch_module(base, tree):
    """``nn.Module``, ``torch.nn.Module`` or ``Module``, its head name bound in ``tree`` by one import of torch alone."""
    path = []
    while isinstance(base, ast.Attribute):
        path.insert(0, base.attr)
        base = base.value
    if not isinstance(base, ast.Name):
        return False
    binds = [node for node in ast.walk(tree) if base.id in _bound(node)]
    if len(binds) != 1 or not isinstance(binds[0], (ast.Import, ast.ImportFrom)) or getattr(binds[0], "level", 0):
        return False
    alias = next(a for a in binds[0].names if (a.asname or a.name.split(".")[0]) == base.id
                 or a.name.split(".")[-1] == base.id)
    if isinstance(binds[0], ast.Import):
        full = (alias.name if alias.asname else alias.name.split(".")[0]).split(".")
    else:
        full = [*(binds[0].module or "").split("."), alias.name]
    return full + path == ["torch", "nn", "Module"]
