"""The kit's own mutation engine: single defects generated from the reference, never listed by hand.

Each operator walks the AST of solution/attention.py and solution/mha.py and proposes one change of one
node inside an nbgrader solution region (``### BEGIN SOLUTION`` ... ``### END SOLUTION``: the code a student
writes; the stubs' text around it is the lab's). A mutant is the reference with that node's source text
replaced by the changed node, unparsed; everything else (comments, layout) stays as written.

Generation is deterministic: the same reference gives the same mutants, in the same (sorted) order, with ids
that do not move when unrelated lines do (``file:function:operator:hash`` of the replaced text and its
replacement). Two changes that give the same file are one mutant.

    python tests/mutation/mutation_engine.py          # how many mutants each operator makes
"""
import ast
import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solution"
FILES = ("attention.py", "mha.py")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"

ARITH = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult, ast.FloorDiv],
         ast.FloorDiv: [ast.Div], ast.MatMult: [ast.Mult], ast.Mod: [ast.FloorDiv]}
COMPARE = {ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt, ast.GtE],
           ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt, ast.LtE], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is]}
DIM_CALLS = {"size", "transpose", "softmax", "sum", "amax", "cat", "unsqueeze", "max", "mean"}
# Names a student could confuse, by role: a Name is swapped only for a peer the same function defines.
PEERS = [("query", "key", "value"), ("q", "k", "v"), ("T_q", "T_k"), ("d_model", "n_heads"), ("B", "T", "h", "d_k"),
         ("scores", "weights"), ("row_max", "new_max", "safe_max"), ("rows", "cols")]
ATTR_PEERS = [("w_q", "w_k", "w_v", "w_o"), ("d_model", "n_heads", "d_k")]
IN_PLACE = {"masked_fill", "transpose", "exp", "add", "mul", "div", "sub", "tril", "contiguous_"}
INPLACE_BINOP = {ast.Add: "add_", ast.Sub: "sub_", ast.Mult: "mul_", ast.Div: "div_"}
RESHAPES = {"view": "reshape", "reshape": "view"}
REPEATS = 1  # the same change (query -> value) at its first place in a function only: repeats add little


@dataclass(frozen=True)
class Mutant:
    """One change of one file of the reference: ``text`` is the whole mutated file (markers kept)."""
    id: str
    file: str
    operator: str
    line: int
    before: str
    after: str
    text: str

    def describe(self):
        return f"{self.file}:{self.line} [{self.operator}] {self.before}  ->  {self.after}"


def solution_lines(text):
    """The line numbers (1-based) strictly inside the solution regions of ``text``."""
    inside, lines = False, set()
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def _parse(source):
    """The tree with each node's enclosing function (``node.function``) and its parent (``node.parent``)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node
    def mark(node, function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node
        node.function = function
        for child in ast.iter_child_nodes(node):
            mark(child, function)
    mark(tree, None)
    return tree


def _defined(function):
    """The names a function binds: its arguments and every name it assigns."""
    if function is None:
        return set()
    names = {a.arg for a in function.args.args + function.args.kwonlyargs}
    names |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _method(node):
    """``name`` for a call ``x.name(...)``, else None."""
    return node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None


def _is_module(node):
    return isinstance(node, ast.Name) and node.id in ("torch", "math", "nn", "self", "F")


def _int(node):
    """The value of an int literal (``-1`` included), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _num(value):
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _with(node, **fields):
    new = copy.deepcopy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _call(func, *args, **keywords):
    return ast.Call(func=ast.parse(func, mode="eval").body, args=list(args),
                    keywords=[ast.keyword(arg=k, value=v) for k, v in keywords.items()])


# --- operators: each yields replacement nodes for one node ---------------------------------------

def arithmetic(node):
    if isinstance(node, ast.BinOp):
        for op in ARITH.get(type(node.op), []):
            yield _with(node, op=op())
        if isinstance(node.op, (ast.Sub, ast.Div, ast.MatMult)):
            yield _with(node, left=copy.deepcopy(node.right), right=copy.deepcopy(node.left))


def comparison(node):
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        for op in COMPARE.get(type(node.ops[0]), []):
            yield _with(node, ops=[op()])
    if isinstance(node, ast.BoolOp):
        yield _with(node, op=ast.And() if isinstance(node.op, ast.Or) else ast.Or())
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
        yield copy.deepcopy(node.operand)  # a negation dropped


def axis(node):
    """A dim argument of a reduction, size, transpose or cat moved by one (or to the other end)."""
    if _method(node) not in DIM_CALLS:
        return
    slots = [(None, i, arg) for i, arg in enumerate(node.args)] + [(k, None, k.value) for k in node.keywords if k.arg == "dim"]
    for keyword, index, value in slots:
        dim = _int(value)
        if dim is None:
            continue
        for other in sorted({dim - 1, dim + 1, -dim} - {dim, 0 if dim < 0 else None} - {None}):
            if dim < 0 and other >= 0 or dim >= 0 and other < 0:
                continue
            new = copy.deepcopy(node)
            if keyword is None:
                new.args[index] = _num(other)
            else:
                next(k for k in new.keywords if k.arg == "dim").value = _num(other)
            yield new


def triangle(node):
    """tril/triu: the diagonal off by one either way, or the other triangle."""
    name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
    if name in ("tril", "triu"):
        for diagonal in (-1, 1):
            yield _with(node, keywords=[*copy.deepcopy(node.keywords), ast.keyword("diagonal", _num(diagonal))])
        yield _with(node, func=_with(node.func, attr="triu" if name == "tril" else "tril"))


def slices(node):
    """A slice bound off by one, or an index tuple's None and ':' moved."""
    if isinstance(node, ast.Slice):
        for field in ("lower", "upper"):
            bound = getattr(node, field)
            if bound is None:
                continue
            value = _int(bound)
            if value is not None:
                yield _with(node, **{field: _num(value - 1)})
            else:
                for delta, op in ((1, ast.Add()), (1, ast.Sub())):
                    yield _with(node, **{field: ast.BinOp(copy.deepcopy(bound), op, ast.Constant(delta))})
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) > 2:
        elts = node.slice.elts
        for i in range(len(elts) - 1):
            if ast.dump(elts[i]) != ast.dump(elts[i + 1]):
                swapped = [copy.deepcopy(e) for e in elts]
                swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
                yield _with(node, slice=ast.Tuple(swapped, ast.Load()))


def transposes(node):
    """A transpose dropped or added, or the order of a view's sizes permuted."""
    if _method(node) == "transpose":
        yield copy.deepcopy(node.func.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        right = ast.Call(ast.Attribute(copy.deepcopy(node.right), "transpose", ast.Load()), [_num(-2), _num(-1)], [])
        yield _with(node, right=right)
    if _method(node) in ("view", "reshape") and len(node.args) > 2:
        for i in range(len(node.args) - 1):
            args = [copy.deepcopy(a) for a in node.args]
            args[i], args[i + 1] = args[i + 1], args[i]
            yield _with(node, args=args)


def dropped_call(node):
    """A call replaced by what it works on: the receiver of a method, else the first argument."""
    if not isinstance(node, ast.Call) or _method(node) in ("size", "new_full", "new_zeros"):
        return
    if isinstance(node.func, ast.Attribute) and not _is_module(node.func.value):
        yield copy.deepcopy(node.func.value)
    elif node.args and not isinstance(node.args[0], ast.Constant):
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("Linear", "arange", "ones", "maximum", "cat"):
            return
        yield copy.deepcopy(node.args[0])


def extra_call(node):
    """A tensor's assigned or returned value detached from autograd, or cast to float32."""
    if isinstance(node.parent, (ast.Assign, ast.Return)) and node is node.parent.value \
            and isinstance(node, (ast.BinOp, ast.Call)) and _method(node) not in ("size",) \
            and node.function is not None and node.function.name != "__init__":
        for method in ("detach", "float"):
            yield ast.Call(ast.Attribute(copy.deepcopy(node), method, ast.Load()), [], [])


def wrong_name(node):
    """A name replaced by a peer of the same role that the same function defines (query -> key, T_q -> T_k)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        defined = _defined(node.function)
        for group in PEERS:
            if node.id in group:
                yield from (ast.Name(other, ast.Load()) for other in group if other != node.id and other in defined)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
            and isinstance(node.ctx, ast.Load):
        for group in ATTR_PEERS:
            if node.attr in group:
                yield from (_with(node, attr=other) for other in group if other != node.attr)


def constant(node):
    """A number changed; -inf as a fill made finite, zero or +inf."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "-inf":
        yield from (ast.Constant(-1e9), ast.Constant(-1e4), ast.Constant(0.0), _call("float", ast.Constant("inf")))
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.parent, ast.UnaryOp):
        if isinstance(node.parent, ast.Call) and _method(node.parent) in DIM_CALLS \
                or isinstance(node.parent, ast.keyword) and node.parent.arg == "dim":
            return  # a dim: the axis operator's
        yield from (ast.Constant(node.value + 1),) + ((ast.Constant(0),) if node.value not in (0, 0.0) else ())


def bias_flag(node):
    if isinstance(node, ast.keyword) and node.arg == "bias":
        yield from (ast.keyword("bias", ast.Constant(True)), ast.keyword("bias", ast.Constant(False)),
                    ast.keyword("bias", ast.UnaryOp(ast.Not(), copy.deepcopy(node.value))))


def view_reshape(node):
    method = _method(node)
    if method in RESHAPES:
        yield _with(node, func=_with(node.func, attr=RESHAPES[method]))


def in_place(node):
    """The out-of-place form made in-place: on the tensor it is called on, or on a binary op's left operand."""
    method = _method(node)
    if method in IN_PLACE and not _is_module(node.func.value):
        yield _with(node, func=_with(node.func, attr=method + "_"))
    if isinstance(node, ast.BinOp) and type(node.op) in INPLACE_BINOP and isinstance(node.left, ast.Name):
        yield ast.Call(ast.Attribute(copy.deepcopy(node.left), INPLACE_BINOP[type(node.op)], ast.Load()),
                       [copy.deepcopy(node.right)], [])


def dropout(node):
    """Dropout on the attention weights (always on) or on the merged heads (on while the module trains)."""
    if isinstance(node, ast.Call) and _method(node) == "softmax":
        yield _call("torch.dropout", copy.deepcopy(node), ast.Constant(0.1), ast.Constant(True))
    if isinstance(node, ast.Call) and _method(node) == "merge_heads":
        yield _call("torch.dropout", copy.deepcopy(node), ast.Constant(0.1), ast.parse("self.training").body[0].value)


OPERATORS = {"arithmetic": arithmetic, "comparison": comparison, "axis": axis, "triangle": triangle, "slice": slices,
             "transpose": transposes, "dropped_call": dropped_call, "extra_call": extra_call, "wrong_name": wrong_name,
             "constant": constant, "bias_flag": bias_flag, "view_reshape": view_reshape, "in_place": in_place,
             "dropout": dropout}


# --- generation -----------------------------------------------------------------------------------

def _offsets(text):
    starts, total = [0], 0
    for line in text.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _replace(text, starts, node, replacement):
    """``text`` with ``node``'s source replaced by ``replacement`` (the file is ASCII: columns are characters)."""
    begin = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    return text[:begin] + replacement + text[end:], text[begin:end]


def mutants_of(file):
    """Every mutant of solution/``file``, sorted by id, one per distinct mutated text."""
    text = (SOLUTION / file).read_text()
    if not text.isascii():
        raise ValueError(f"solution/{file} is not ASCII: the engine counts columns as characters")
    inside, starts, tree = solution_lines(text), _offsets(text), _parse(text)
    found, seen = {}, {}
    for node in sorted(ast.walk(tree), key=_position):  # in the file's order: ids number repeats top down
        if not hasattr(node, "lineno") or not {node.lineno, node.end_lineno} <= inside:
            continue
        for name, operator in OPERATORS.items():
            for new in operator(node):
                after = _unparse(new)
                mutated, before = _replace(text, starts, node, after)
                if mutated == text or mutated in found or not _parses(mutated):
                    continue
                function = node.function.name if node.function else "<module>"
                digest = hashlib.sha1(f"{before}\0{after}".encode()).hexdigest()[:8]
                base = f"{Path(file).stem}:{function}:{name}:{digest}"
                seen[base] = seen.get(base, 0) + 1  # the same change at a later place of the same function
                if seen[base] > REPEATS:
                    continue
                found[mutated] = Mutant(base if seen[base] == 1 else f"{base}.{seen[base]}", file, name,
                                        node.lineno, before, after, mutated)
    return sorted(found.values(), key=lambda m: m.id)


def _position(node):
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), -getattr(node, "end_lineno", 0),
            -getattr(node, "end_col_offset", 0), type(node).__name__)


def _unparse(node):
    if isinstance(node, ast.keyword):
        return f"{node.arg}={ast.unparse(node.value)}"
    return ast.unparse(node)


def _parses(text):
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def generate():
    """Every mutant of the reference, both files, sorted by id."""
    return sorted((m for file in FILES for m in mutants_of(file)), key=lambda m: m.id)


def sample(mutants, size):
    """A deterministic spread of ``size`` mutants: evenly spaced over the sorted list."""
    if size >= len(mutants):
        return list(mutants)
    step = len(mutants) / size
    return [mutants[int(i * step)] for i in range(size)]


def without_markers(text):
    return "".join(line for line in text.splitlines(keepends=True) if line.strip() not in (BEGIN, END))


def write_submission(mutant, dest):
    """The mutant as a student's submission folder: attention.py and mha.py, the markers removed."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for file in FILES:
        text = mutant.text if mutant is not None and file == mutant.file else (SOLUTION / file).read_text()
        (dest / file).write_text(without_markers(text))
    return dest


if __name__ == "__main__":
    everything = generate()
    for name in OPERATORS:
        print(f"{name:<14} {sum(m.operator == name for m in everything):>4}")
    print(f"{'total':<14} {len(everything):>4}")
