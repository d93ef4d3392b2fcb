"""Proofs from syntax that a submission's function can only raise, and which exception (trusted side).

Used to spare a fresh child a call whose outcome is already known (``Student._fails_as_before``): the
measured memory call of an extra-credit function the student never wrote, or left as the stub. The proof is
the parent's, read from the staged files, never run; the child's earlier error is only the second half of the
evidence. Either half alone can only turn a call into the failure it would be anyway: a file outside the small
grammar below gets no proof, and then the call runs as always.
"""
import ast

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
    trees = {}
    for name, source in sources.items():
        try:
            trees[name] = ast.parse(source)
        except (SyntaxError, ValueError, TypeError):
            continue  # a file that does not compile runs nothing, so binds nothing
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
