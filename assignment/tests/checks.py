"""Oracles and failure messages shared by the public cases (cases.py).

The oracle is PyTorch itself: ``torch.nn.functional.scaled_dot_product_attention``
for attention and ``torch.nn.MultiheadAttention`` for multi-head attention. Your
code may not call them (see the README); the tests may.

Every failure goes through :func:`fail`, so messages look alike: the input case,
what is wrong (shape, dtype, or the largest error and where), and a hint. Nothing
here needs pytest: the same cases also run as the playground's otter checks.
"""
import contextlib
import importlib
import linecache
import math
import sys
import traceback
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

# The grader's own tolerances (atol + rtol * |expected|), copied from its table: do not edit.
TOLERANCE = {
    torch.float16: dict(atol=0.01, rtol=0.01),
    torch.float32: dict(atol=2e-05, rtol=0.0001),
    torch.float64: dict(atol=1e-10, rtol=1e-08),
}
# (end of the grader's tolerances)

FORMULA = (
    "follow the formula: scores = Q K^T / sqrt(d_k); blocked scores -> -inf; "
    "softmax over the keys (dim=-1); output = weights @ V"
)


# ----------------------------------------------------------------------------- inputs

# The grader's seeded inputs, copied from autograder/judging/seeded.py: do not edit.
def randn(*shape, seed=0, dtype=torch.float64, scale=1.0):
    """Normal samples from a private generator seeded with ``seed``, drawn in float64, scaled, then
    cast: the same values on every run, and a float32 input is its float64 twin rounded."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=generator, dtype=torch.float64) * scale).to(dtype)
# (end of the grader's seeded inputs)


def lower_triangle(t_q, t_k=None):
    """Causal pattern built without your code: True where key j <= query i."""
    t_k = t_q if t_k is None else t_k
    return torch.arange(t_k)[None, :] <= torch.arange(t_q)[:, None]  # (T_q, T_k)


def causal_mask_hint(seq_len):
    """Hint for a wrong causal_mask(seq_len), in the grade's words when it is a mask it names."""
    allowed = lower_triangle(seq_len)
    diagonal = torch.eye(seq_len, dtype=torch.bool)

    def hint(got):
        for pattern, name in [(allowed.mT, "causal_leaks_future"), (allowed & ~diagonal, "causal_hides_diagonal"),
                              (~allowed, "causal_polarity_flipped")]:
            if torch.equal(got.detach().bool(), pattern):
                return MISTAKES["causal_mask"][name]
        return ("mask[i, j] is True when query i may attend key j, that is j <= i: "
                "True on and below the diagonal, False above it")
    return hint


def padding_mask_hint(tokens, pad_id):
    """Hint for a wrong padding_mask(tokens, pad_id): the grade's words when it names the mask, else which padding
    the mask followed (measured), else the contract."""
    def hint(got):
        if torch.equal(got.detach().bool().reshape(tokens.shape), tokens == pad_id):
            return MISTAKES["padding_mask"]["padding_polarity_flipped"]
        return (padding_followed(got, tokens, pad_id)
                or "True where the key is a real token, False where it equals pad_id")
    return hint


def describe(**tensors):
    """'q (2, 5, 4) float64, mask (5, 5) bool': the input case, for messages."""
    parts = []
    for name, t in tensors.items():
        if t is not None:
            parts.append(f"{name} {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------- messages

class CheckFailed(AssertionError):
    """A case failed; the message is all the student needs (pytest shows it without a traceback)."""


class ForbiddenCall(CheckFailed):
    """The case's run called one of torch's attention built-ins from the student's code (the rule)."""


class NotWritten(NotImplementedError):
    """An optional function the file does not define at all: like one that raises NotImplementedError."""


# ----------------------------------------------------------------------------- is it attention?

# The gradient, in-place and large-score cases judge your code against your own forward, so their points are for
# a forward that does attention's work (rightly or not: the other cases say). The grader's gate decides it.
GATE_HINT = ("this case's points are for a forward that is attention: weights = softmax over the keys of the "
             "masked scores, output = weights @ value (the value cases say what is wrong)")

# The grader's gate of its gradients part, copied from autograder/judging/own_forward.py: do not edit.
GATE_ATOL = 0.0001


def not_attention(result, value, mask=None):
    """Why ``result`` is not attention over ``value``, or None when it is: a pair (output, weights), in either
    order, whose weights are a distribution along one dim, the keys' or another (nonnegative, none of the sums
    along it above 1 or at 0) and whose output is those weights applied to the values
    (``weights @ value``), or whose output is the softmax over the keys of the returned weights (scores returned
    as weights) applied to the values. Lenient on purpose: a forward that does the work wrongly (a softmax
    over the queries, a mask ignored, read the wrong way or applied after the softmax) passes, its bug the
    attention part's charge alone; one that skips it (no softmax, no weighted sum, zeros, weights that ignore
    the scores) does not. ``mask`` is the call's, unused: blocked keys are the mask tests' charge."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2
            and all(isinstance(t, torch.Tensor) and t.is_floating_point() for t in result)):
        return "it does not return a pair of floating-point tensors (output, weights)"
    reasons = [_not_attention(output, weights, value) for output, weights in (result, result[::-1])]
    return None if None in reasons else reasons[0]


def _not_attention(output, weights, value):
    weights, output, value = weights.detach().double(), output.detach().double(), value.detach().double()
    if weights.dim() < 2 or weights.size(-1) != value.size(-2):
        return f"its weights have shape {tuple(weights.shape)}: not one weight per key ({value.size(-2)} keys)"
    if output.shape[:-1] != weights.shape[:-1]:
        return f"its output {tuple(output.shape)} does not have a row per row of its weights {tuple(weights.shape)}"
    # Rows holding inf/NaN (a query whose every key is blocked, or -inf scores) are left out, as the gradient
    # tests leave them out: undefined, never graded.
    rows = torch.isfinite(output).all(-1)  # (..., T_q)
    if rows.any() and _applied(torch.softmax(weights, dim=-1), value, output, rows):
        # scores returned as weights (-inf where blocked): the output is their softmax applied to the values
        return _spread_evenly(torch.softmax(weights, dim=-1), rows)
    finite = torch.isfinite(weights).all(-1) & rows
    if not finite.any():
        return "its weights or output hold inf or NaN in every row"
    weights = weights.masked_fill(~finite[..., None], 0.0)
    if (weights < -GATE_ATOL).any():
        return f"its weights are not a distribution: a weight is {weights.min().item():.3g}"
    # A softmax taken over any one dim does the work (over the keys is right; over the queries, or the batch or
    # the heads, as an implicit nn.Softmax() does, is the attention part's bug): its sums along that dim are 1.
    rows = weights.sum(-1)[finite]
    sums_per_dim = [rows] + [weights.sum(d) for d in range(weights.dim() - 1)]
    if not any(((sums > GATE_ATOL) & (sums < 1 + GATE_ATOL)).all() for sums in sums_per_dim):
        worst = rows[(rows - 1).abs().argmax()]
        return f"its weights are not a distribution over the keys: a row sums to {float(worst):.6g}, not 1"
    if not _applied(weights, value, output, finite):
        return "its output is not its weights applied to the values (weights @ value)"
    return _spread_evenly(weights, finite)


def _applied(weights, value, output, rows):
    """Whether ``output`` is ``weights @ value`` at the ``rows`` (a bool mask of the queries), to GATE_ATOL."""
    try:
        applied = weights @ value
    except RuntimeError:
        return False
    return applied.shape == output.shape and bool(torch.allclose(output[rows], applied[rows], atol=GATE_ATOL,
                                                                 rtol=GATE_ATOL))


def _spread_evenly(weights, rows):
    """Why the weights at ``rows`` (a bool mask of the queries) ignore the scores, or None: when every such row
    that weighs two keys or more weighs them all alike (and one does). Random inputs give no two keys the same
    score, so a softmax of any scores tells them apart; uniform weights are attention without the scores."""
    weights = weights[rows]  # (n, T_k)
    weighted = weights > GATE_ATOL
    several = weighted.sum(-1) >= 2
    if not several.any():
        return None
    weights, weighted = weights[several], weighted[several]
    spread = weights.masked_fill(~weighted, -math.inf).amax(-1) - weights.masked_fill(~weighted, math.inf).amin(-1)
    if (spread > GATE_ATOL).any():
        return None
    keys = int(weighted[0].sum())
    return (f"its weights ignore the scores: every query spreads its weight evenly over the keys it attends "
            f"(e.g. {keys} keys at {float(weights[0][weighted[0]][0]):.4g} each), whatever Q K^T says")
# (end of the grader's gate)


def require_attention(result, value, mask=None, case=""):
    """Fail the case unless ``result`` is attention over ``value`` (the grader's gate)."""
    reason = not_attention(result, value, mask)
    if reason is not None:
        fail(case, f"your forward is not attention: {reason}", hint=GATE_HINT)


# ----------------------------------------------------------------------------- the from-scratch rule

# torch's attention built-ins (the README's rule), watched while your code runs. The tests' own
# oracles call them too; a call counts only when the nearest caller outside torch is your file.
WATCHED = {
    ("torch.nn.functional", "scaled_dot_product_attention"): "torch.nn.functional.scaled_dot_product_attention",
    ("torch.nn.functional", "multi_head_attention_forward"): "torch.nn.functional.multi_head_attention_forward",
}
_TORCH = Path(torch.__file__).resolve().parent
# Where the student's files are; what they called, while recording. One record for every copy of this module: one
# imported again in the same process (a notebook's reload, the public tests run twice) finds the built-ins wrapped
# already, by the first copy, whose wrappers write here.
_watch = getattr(nn.MultiheadAttention.forward, "_lab_watch", None) or {"folder": None, "called": None}


def watch_forbidden_calls(folder):
    """Wrap the watched built-ins (once; before the student's files are imported, so that a name they
    import is the wrapper) and take calls made from files in ``folder`` as the student's."""
    _watch["folder"] = Path(folder).resolve()
    for (module_name, name), shown in WATCHED.items():
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        if getattr(original, "_lab_watched", False):
            continue

        def watched(*args, _original=original, _shown=shown, **kwargs):
            caller = _student_caller()
            if caller is not None and _watch["called"] is not None:
                _watch["called"].setdefault(_shown, caller)
            return _original(*args, **kwargs)
        watched._lab_watched = True
        watched._lab_watch = _watch
        setattr(module, name, watched)
    forward = nn.MultiheadAttention.forward
    if not getattr(forward, "_lab_watched", False):
        def watched_forward(self, *args, **kwargs):
            caller = _student_caller()
            if caller is not None and _watch["called"] is not None:
                _watch["called"].setdefault("torch.nn.MultiheadAttention", caller)
            return forward(self, *args, **kwargs)
        watched_forward._lab_watched = True
        watched_forward._lab_watch = _watch  # the anchor a later copy of this module finds the record by
        nn.MultiheadAttention.forward = watched_forward


def _student_caller():
    """(function, file, line) of the nearest caller outside torch, if it is the student's; else None."""
    frame = sys._getframe(2)
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(_TORCH):
        frame = frame.f_back
    if frame is None or _watch["folder"] is None or Path(frame.f_code.co_filename).resolve().parent != _watch["folder"]:
        return None
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name), Path(code.co_filename).name, frame.f_lineno


@contextlib.contextmanager
def forbidden_calls():
    """Record the watched built-ins the student's code calls inside the block: {name: (function, file, line)}."""
    previous, _watch["called"] = _watch["called"], {}
    try:
        yield _watch["called"]
    finally:
        _watch["called"] = previous


def forbidden_message(called):
    """The grader's words for a test whose code called a forbidden built-in."""
    function, file, line = next(iter(called.values()))
    return (f"{function} called {', '.join(called)}, which the from-scratch rule forbids: this test gets no points. "
            f"Build it from matmul/softmax/masked_fill instead.\n    called at {file}, line {line}")


def fail(case, problem, *details, hint=None):
    """Fail the case with a short message: the case first, then details and a hint."""
    lines = [f"{case}: {problem}"]
    lines += [f"    {detail}" for detail in details]
    if hint:
        lines.append(f"    hint: {hint}")
    # `from None`: a failure raised while handling the student's exception shows no chain.
    raise CheckFailed("\n".join(lines)) from None


def import_student(name, folder):
    """Import the student's ``name``.py, which must be the one in ``folder`` (already on sys.path)."""
    path = folder / f"{name}.py"
    if not path.is_file():
        raise CheckFailed(f"{name}.py not found in {folder}")
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # any import-time error is the student's to fix: said with its line, as make submit does
        raise CheckFailed(f"cannot import {name}.py: {type(exc).__name__}: {exc}{_line_in(exc, folder)}") from None
    if Path(module.__file__).resolve() != path:
        raise CheckFailed(f"`import {name}` found {module.__file__}, not {path}")
    return module


def _line_in(exc, folder):
    """" (attention.py, line 23)": the innermost line of the student's files in ``folder`` an exception passed
    through, or "" (a SyntaxError names its own line)."""
    where = [frame for frame in traceback.extract_tb(exc.__traceback__)
             if Path(frame.filename).resolve().parent == Path(folder).resolve()]
    return f" ({Path(where[-1].filename).name}, line {where[-1].lineno})" if where else ""


def explain(exc, folder):
    """A short account of an exception raised in the student's code in ``folder``, or None if it was not."""
    frames = []  # (function, file, line) of the student's frames, outermost first
    called = None  # the outermost of them: the call the case made, whose arguments went in
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if Path(code.co_filename).resolve().parent == folder:
            where = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
            frames.append((where, Path(code.co_filename).name, tb.tb_lineno))
            called = called or tb.tb_frame
        last = tb
        tb = tb.tb_next
    if not frames:
        return None
    where, file, line = frames[-1]
    raised_here = Path(last.tb_frame.f_code.co_filename).resolve() == folder / file
    if isinstance(exc, NotImplementedError) and raised_here and last.tb_lineno == line:
        return f"{where} is not implemented yet (NotImplementedError in {file})"
    chain = " <- ".join(f"{w} ({f}, line {n})" for w, f, n in reversed(frames))
    source = linecache.getline(str(folder / file), line).strip()
    text = " ".join(str(exc).split())  # torch's messages can span lines
    hint = error_hint(text)
    went_in = shapes_in(_arguments(called))
    return (f"{type(exc).__name__}: {text}\n    raised in {chain}\n    > {source}" + (f"\n    {went_in}" if went_in else "")
            + (f"\n    hint: {hint}" if hint else ""))


def _arguments(frame):
    """The positional arguments a student's function was called with (self left out), read from its frame."""
    code = frame.f_code
    names = [n for n in code.co_varnames[:code.co_argcount] if n != "self"]
    return [frame.f_locals.get(n) for n in names]


# The grader's hints for torch errors, copied from autograder/judging/error_hints.py: do not edit.
import ast

# torch errors students meet, by a piece of their message, and what usually causes them.
INPLACE_ERROR = "modified by an inplace operation"
ERROR_HINTS = [
    ("view size is not compatible with input tensor's size and stride",
     "view needs contiguous memory, and a transposed tensor is not: call .contiguous() before .view(...), "
     "or use .reshape(...)"),
    (INPLACE_ERROR,
     "an in-place edit broke autograd: a method ending in _ (masked_fill_, add_, ...) or +=, /= changed a "
     "tensor the backward pass still needs (torch names the op that made it); use the out-of-place form: "
     "weights = weights.masked_fill(...), x = x / s"),
]

# When a call changed the caller's query, key, value or mask: what the failure says, and its hint.
INPUTS_MODIFIED = "the call modified its input {} in place"
INPUTS_MODIFIED_HINT = ("use out-of-place ops (masked_fill, not masked_fill_; mask == 0 or ~mask, not mask.eq_(0); "
                        "x / s, not x /= s)")
FORWARD_INPUTS_MODIFIED = "forward modified its input {} in place"
FORWARD_INPUTS_MODIFIED_HINT = ("use out-of-place ops in forward and in the attention it calls (masked_fill, not "
                                "masked_fill_; mask == 0 or ~mask, not mask.eq_(0))")

# When tiled_attention built the whole (T_q, T_k) score matrix after all.
TILED_MEMORY_HINT = ("compute scores one (T_q, block_size) block at a time; calling scaled_dot_product_attention "
                     "builds the whole matrix")
TILED_MATRIX_BUILT = "one (T, T) score matrix is {:.0f} MiB, so it was (at least partly) built"
TILED_SHAPE_HINT = "return acc / l, one row per query and the value's width"
TILED_ROW_0 = ("row 0 of the output is not value[0], though query 0 may attend to key 0 alone (causal): the memory "
               "points need an output computed by attention")
TILED_ROW_0_HINT = "return acc / l, where acc sums the softmax weights times the value rows"

# When MultiHeadAttention.step re-projects the past, or its cache holds something else than the projected past.
STEP_PROJECT_HINT = "project only the new token (B, 1, d_model); the cache already holds the past keys and values"
STEP_CACHE_HINT = "return (k, v) with every past token's projected key and value, (B, n_heads, t, d_k) each"


def error_hint(message):
    """The hint for an exception's message, or None; torch's messages can span lines."""
    text = " ".join(message.split())
    return next((hint for pattern, hint in ERROR_HINTS if pattern in text), None)


def inplace_edits(source, file):
    """'file, line N: code' for each in-place edit in ``source`` (a call of a method ending in one _,
    or an augmented assignment such as x /= s): where a backward error about an in-place edit, which
    names no line of the student's code, comes from (the first three). [] for a source that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.splitlines()
    found = sorted({node.lineno for node in ast.walk(tree)
                    if isinstance(node, ast.AugAssign)
                    or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr.endswith("_") and not node.func.attr.endswith("__")
                        and node.func.attr != "requires_grad_")})
    return [f"{file}, line {n}: {lines[n - 1].strip()[:120]}" for n in found[:3]]


def valid_size_refused(d_model, n_heads, error_name):
    """Why ``MultiHeadAttention(d_model, n_heads)`` raising ``error_name`` is the student's condition, in one
    line: when the error is DimensionMismatchError and the sizes divide evenly; else None. Without it
    every test that builds the module repeats the same error, with no hint."""
    if (error_name != "DimensionMismatchError" or not all(type(n) is int and n > 0 for n in (d_model, n_heads))
            or d_model % n_heads):
        return None
    return (f"MultiHeadAttention({d_model}, {n_heads}) raised DimensionMismatchError for a valid size "
            f"({d_model} = {n_heads} heads x {d_model // n_heads}): check your condition (d_model % n_heads != 0)")


# A mask made on the CPU whatever ``device`` says passes every test this machine can run (it has no other
# device, and torch's "meta" device costs seconds of imports on first use), so it is found from the text.
DEVICE_HINT = "pass device=device to the function that creates the tensor (torch.ones(..., device=device))"

# MultiHeadAttention(16, 5): what to raise, when nothing or another exception was raised (the same words on both sides).
MISMATCH_NOT_RAISED_HINT = "check d_model % n_heads != 0 in __init__ and raise DimensionMismatchError"
MISMATCH_HINT = "raise the DimensionMismatchError given in mha.py (a ValueError subclass)"
PLAIN_VALUE_ERROR_HINT = MISMATCH_HINT + ", not a plain ValueError"

# A test that a size is refused earns its points only when a valid size builds; said under the valid size's error.
VALID_SIZE_REFUSED_TOO = ("A valid size is refused too, so refusing this one earns nothing: raise only for sizes that "
                          "are wrong (a constructor that always raises refuses nothing in particular)")


def device_ignored(source, function="causal_mask"):
    """Why ``function`` (defined at the top of ``source``, with a ``device`` parameter) makes its tensor on
    the CPU whatever ``device`` says, in a sentence; None when the text shows nothing of the kind."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            args = node.args
            if "device" not in [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]:
                return None
            if not any(isinstance(n, ast.Name) and n.id == "device" and isinstance(n.ctx, ast.Load)
                       for n in ast.walk(node)):
                return f"{function} never uses its device argument, so the mask is made on the CPU whatever the caller asks for"
            for n in ast.walk(node):  # .cpu(), or .type(torch.BoolTensor): a legacy type names a CPU tensor
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                        n.func.attr == "cpu" or (n.func.attr == "type" and n.args and isinstance(n.args[0], ast.Attribute)
                                                 and n.args[0].attr.endswith("Tensor"))):
                    return (f"{function} moves the mask to the CPU with .{n.func.attr}(...) (line {n.lineno}), "
                            f"whatever device the caller asks for")
    return None
# (end of the grader's hints)


# The grader's measured properties, copied from autograder/judging/properties.py: do not edit.
import itertools
import math

import torch

PROPERTY_ATOL = 1e-4  # float32-loose: a float32 step in a float64 run is the precision test's to charge
# How each property's sentence opens, by property: how a report (or a test) tells which properties a text states.
PROPERTY_WORDS = {
    "not a distribution": ("the weights are not a distribution",),
    "blocked key weighted": ("a key the mask blocks got weight",),
    "output is not weights @ value": ("the output is not your weights applied to the values",),
    "random": ("two calls on the same inputs returned different results",),
    "sizes permuted": ("the sizes are right but in the wrong order",),
    "sizes merged or split": ("in one dim where two belong", "in two dims where one belongs"),
    "dims of size 1 missing or extra": ("in order, without its ", "of size 1 more: remove"),
    "dtype or device changed": ("the dtype changed", "the device changed"),
    "padding polarity": ("the mask is True at the padding",),
    "another pad_id": ("the mask follows pad_id=",),
    "first sentence's padding": ("every sentence got the first sentence's padding",),
    "scores scaled": ("the weights are softmax(c · Q K^T / sqrt(d_k)) with c = ",),
    "weights right, output wrong": ("your weights are right in every head, the output is not",),
    "rows scaled": ("each wrong output row is a multiple of the right one",),
    "rows across blocks": ("only the output rows whose keys span more than one block are wrong",),
    "not a weighted average": ("is not a weighted average of the value rows",),
    "not finite": ("where attention's output is finite",),
    "a row of one block wrong": ("is wrong though every key it may attend lies in the first block",
                                 "is wrong though all the keys lie in one block"),
    "one block right, more wrong": ("the output is right when one block holds every key",),
    "one block wrong": ("the output is wrong even when one block holds every key",),
    "projection not of the new token": ("the projection ran ", "was given an input of shape "),
    "cached steps wrong": ("step 1 is right and steps",),
    "every step wrong": ("every step is wrong, the first (no cache yet) too",),
    "forward already wrong": ("on these inputs is already wrong",),
    "only the gradient wrong": ("your forward's output and weights are right, the gradient",
                                "your forward's output is right, the gradient"),
    "no gradient": ("no gradient reaches ",),
    "backward not of the forward": ("does not match your own forward",),  # a finite difference of it, measured
    "sizes stored wrong": ("the sizes stored are not the ones given",),
    "bias not followed": ("bias=True gave ", "bias=False gave "),
    "size not refused": ("was not refused with a ValueError",),
    # student.forbidden_message and the public checks' twin: said only where the op recorder saw the call
    "a forbidden built-in called": ("which the from-scratch rule forbids",),
    # error_hints.PLAIN_VALUE_ERROR_HINT: said only where the call raised a ValueError that is not the lab's class
    "a plain ValueError raised": ("not a plain ValueError",),
    "scores not from Q K^T": ("the weights are not a softmax of any multiple of Q K^T",),
    "a row per key": ("one row per key where one per query belongs",),
    "returned an input": ("as it was given: nothing was computed",),
    "heads not merged": ("the heads are back in place but not flattened", "holds values of other positions",
                         "each position holds its own values in the wrong order"),
    "where the matrices differ": ("; only positions ", "; only blocked positions", "; only allowed positions"),
    "mask constant": ("at every position: it follows nothing",),
    "sampled rows not attention": ("rows compared with attention",),
}


# How a test of a higher part that passed only on the lab's own lower parts is noted (one defect, one charge):
# by the lowest part that had to stand in, the same words in `make test` and the grade.
ATTENTION_STOOD_IN = ("MultiHeadAttention is right when given a correct attention: it passed with the lab's attention "
                      "in place of yours, so only the attention tests count that bug.")
CONSTRUCTION_STOOD_IN = ("MultiHeadAttention is right on a correct construction: it passed once the lab's sizes and four "
                         "projections stood in for your __init__'s, so only the construction tests count that bug.")
HEADS_STOOD_IN = ("MultiHeadAttention is right on a correct split_heads and merge_heads: it passed once the lab's stood "
                  "in for yours, so only the head split/merge tests count that bug.")


def properties_named(text):
    """The properties (PROPERTY_WORDS' names) whose sentences ``text`` holds."""
    return {name for name, openings in PROPERTY_WORDS.items() if any(words in text for words in openings)}


def _at(index):
    return "(" + ", ".join(str(int(i)) for i in index) + ")"


def _worst(values):
    """The index of the largest entry of ``values``, as a tuple."""
    flat = int(values.flatten().argmax())
    index = []
    for size in reversed(values.shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def _first_true(t):
    """The index of the first True entry of ``t``, as a tuple."""
    return tuple(int(i) for i in t.nonzero()[0].tolist())


def not_a_distribution(weights):
    """Why ``weights`` are not a distribution over the keys (a weight is negative or not finite, or a row does
    not sum to 1: which row, what sum), or None."""
    w = weights.detach().double()
    if w.dim() < 1 or not w.numel():
        return None
    if not torch.isfinite(w).all():
        return f"the weights are not a distribution: they hold inf/NaN, first at {_at(_first_true(~torch.isfinite(w)))}"
    if (w < -PROPERTY_ATOL).any():
        at = _worst(-w)
        return f"the weights are not a distribution: weight {_at(at)} is {w[at].item():.4g}, below 0"
    off = (w.sum(-1) - 1).abs()
    if (off > PROPERTY_ATOL).any():
        row = _worst(off)
        return (f"the weights are not a distribution over the keys: row {_at(row)} sums to "
                f"{w.sum(-1)[row].item():.4g}, not 1")
    return None


def blocked_weight(weights, mask):
    """Which keys the mask blocks got weight, or None: "above the diagonal only" for a (T, T) mask whose
    leaks all lie there, "padding position p of sentence b" for a (B, 1, 1, T) mask, else the first index."""
    if mask is None:
        return None
    w = weights.detach().double()
    allowed = mask != 0  # a bool mask too: True != 0
    try:
        blocked = ~allowed.expand_as(w)
    except RuntimeError:
        return None
    leaked = blocked & (w.abs() > 0) & torch.isfinite(w)
    if not leaked.any():
        return None
    largest = w[leaked].abs().max().item()
    pattern = leaked.reshape(-1, *w.shape[-2:]).any(dim=0)  # (T_q, T_k): leaked in any matrix
    t_q, t_k = pattern.shape
    if mask.dim() == 4 and mask.shape[1:3] == (1, 1):  # a padding mask: which sentence, which position
        sentence, *_, position = _first_true(leaked)
        return (f"a key the mask blocks got weight (up to {largest:.3g}): padding position {int(position)} of "
                f"sentence {int(sentence)}")
    where = ""
    if t_q == t_k and t_q > 1 and not (pattern & ~torch.ones(t_q, t_k, dtype=torch.bool).triu(1)).any():
        where = ": positions above the diagonal only (the future)"
    return f"a key the mask blocks got weight (up to {largest:.3g}), first at index {_at(_first_true(leaked))}{where}"


def output_not_applied(output, weights, value):
    """Why ``output`` is not ``weights @ value`` (the student's own weights), or None."""
    w, out, v = (t.detach().double() for t in (weights, output, value))
    try:
        applied = w @ v
    except RuntimeError:
        return f"the output is not your weights applied to the values: weights {tuple(w.shape)} and values {tuple(v.shape)} do not multiply"
    if applied.shape != out.shape:
        return (f"the output is not your weights applied to the values: it has shape {tuple(out.shape)}, "
                f"weights @ value has {tuple(applied.shape)}")
    error = (out - applied).abs().nan_to_num(float("inf"))
    if (error > PROPERTY_ATOL * (1 + applied.abs())).any():
        at = _worst(error)
        return (f"the output is not your weights applied to the values: output{_at(at)} is {out[at].item():.4g}, "
                f"(weights @ value){_at(at)} is {applied[at].item():.4g}")
    return None


SCORE_FIT = 1e-3  # of the log-weights' spread: what a float32 softmax of c · Q K^T / sqrt(d_k) stays within


def scores_off(weights, query, key, mask=None):
    """How the weights depart from a softmax over the allowed keys of Q K^T / sqrt(d_k), read from their logs,
    or None: a softmax of c times those scores for one c != 1 (the scale: which c, what it divides by), or of
    no multiple of them (the scores are made of something else). Weights that are not a distribution, or
    that weigh a blocked key, are other properties' (checked first); rows with fewer than two positive
    allowed weights say nothing here."""
    if not all(torch.is_tensor(t) for t in (weights, query, key)) or query.dim() < 2 or key.dim() < 2:
        return None
    w = weights.detach().double()
    width = query.size(-1)  # d_k
    try:
        s = (query.detach().double() @ key.detach().double().transpose(-2, -1) / math.sqrt(width)).expand(w.shape)
        keep = (w > 1e-30) & torch.isfinite(w)
        keep = keep if mask is None else keep & (mask != 0).expand(w.shape)
    except RuntimeError:
        return None
    counted = keep.sum(-1, keepdim=True)
    rows = counted >= 2
    keep = keep & rows
    if not keep.any():
        return None
    logs = torch.where(keep, w.clamp_min(1e-300).log(), torch.zeros_like(w))
    s = torch.where(keep, s, torch.zeros_like(s))
    n = counted.clamp_min(1)
    x = torch.where(keep, s - s.sum(-1, keepdim=True) / n, torch.zeros_like(s))  # centred in each row
    y = torch.where(keep, logs - logs.sum(-1, keepdim=True) / n, torch.zeros_like(s))
    if float((x * x).sum()) == 0.0:
        return None
    c = float((x * y).sum() / (x * x).sum())
    departure = (y - c * x).abs()
    if float(departure.max()) > SCORE_FIT * max(1.0, float(y.abs().max())):
        return (f"the weights are not a softmax of any multiple of Q K^T / sqrt(d_k) over the allowed keys: their "
                f"logs depart from the best fit (c = {c:.4g}) by up to {float(departure.max()):.3g}, at "
                f"{_at(_worst(departure))}: the scores are built from other tensors or entries than query @ key^T")
    if abs(c - 1) <= SCORE_FIT:
        return None
    divisor = f"divided by {math.sqrt(width) / c:.4g}" if c > 0 else f"times {-c / math.sqrt(width):.4g}, negated"
    return (f"the weights are softmax(c · Q K^T / sqrt(d_k)) with c = {c:.4g}, not 1: your scores are Q K^T "
            f"{divisor}, where sqrt(d_k) = {math.sqrt(width):.4g} (d_k = query.size(-1) = {width})")


def tiled_rows(got, expected, value, causal, block_size):
    """Which rows of a tiled attention's output are wrong and how, measured against the right output, or None:
    every wrong row a multiple of the right one (its weights do not sum to 1), only the rows whose allowed keys
    span more than one block (causal: query i sees keys 0..i), a row outside the value rows' range (no weighted
    average of them gives it), or a wrong row whose allowed keys all lie in one block; first, an inf or NaN where
    the right output is finite. ``block_size`` None: the
    call's own (unknown), so a row spans one block only if it may attend to a single key."""
    if not (torch.is_tensor(got) and torch.is_tensor(expected) and got.shape == expected.shape):
        return None
    g, e, v = got.detach().double(), expected.detach().double(), value.detach().double()
    broken = ~torch.isfinite(g) & torch.isfinite(e)
    if broken.any():
        at = _first_true(broken)
        return (f"output row {_at(at[:-1])} holds {g[at].item()} where attention's output is finite: find the step "
                f"that makes it (exp() of a large score, 0/0 where every key of a block is masked, or -inf - -inf)")
    wrong = ((g - e).abs() > PROPERTY_ATOL * (1 + e.abs())).any(-1)  # (..., T_q)
    if not wrong.any() or not torch.isfinite(g).all():
        return None
    ratio = (g * e).sum(-1) / (e * e).sum(-1).clamp_min(1e-300)  # (..., T_q): the best multiple of each row
    scaled = ((g - ratio[..., None] * e).abs() <= PROPERTY_ATOL * (1 + g.abs())).all(-1)
    if scaled[wrong].all():
        row = _first_true(wrong)
        return (f"each wrong output row is a multiple of the right one (row {_at(row)} is {ratio[row].item():.4g} times "
                f"it): the weights of those rows do not sum to 1")
    rows, size = torch.arange(g.size(-2)), block_size or 1  # unknown: as if one key a block
    spans = rows >= size if causal else torch.full_like(rows, v.size(-2) > size, dtype=torch.bool)
    if block_size and not spans.all() and not (wrong & ~spans).any():
        return (f"only the output rows whose keys span more than one block are wrong (block_size={block_size}; the "
                f"first wrong row is {int(wrong.reshape(-1, wrong.size(-1)).any(0).nonzero()[0])}): the blocks' "
                f"partial results are combined wrongly")
    low, high = v.amin(-2, keepdim=True), v.amax(-2, keepdim=True)  # (..., 1, d_v): no average leaves this range
    outside = ((g < low - PROPERTY_ATOL) | (g > high + PROPERTY_ATOL))
    if outside.any():
        at = _first_true(outside)
        return (f"output row {_at(at[:-1])} is not a weighted average of the value rows: feature {at[-1]} is "
                f"{g[at].item():.4g}, outside the values' range [{low[at[:-2] + (0, at[-1])].item():.4g}, "
                f"{high[at[:-2] + (0, at[-1])].item():.4g}]")
    if (wrong & ~spans).any():
        row = _first_true(wrong & ~spans)
        where = f"block_size={block_size}" if block_size else "any block size"
        if causal:
            return (f"output row {_at(row)} is wrong though every key it may attend lies in the first block ({where}, "
                    f"causal): check what one block computes, and what the later blocks, every key of them masked "
                    f"for this row, add to it")
        return (f"output row {_at(row)} is wrong though all the keys lie in one block ({where}): one block's result "
                f"is wrong already")
    return None


def tiled_blocks(outputs, expected, keys):
    """What a tiled attention's outputs at several block sizes on the same inputs tell against the right output,
    or None: right when one block holds every key (block_size >= ``keys``, T_k) but wrong with a smaller block,
    or wrong even with one block. ``outputs``: {block_size: what the call returned}."""
    e = expected.detach().double()

    def right(got):
        return torch.is_tensor(got) and got.shape == e.shape and bool(
            ((got.detach().double() - e).abs() <= PROPERTY_ATOL * (1 + e.abs())).all())
    whole = [size for size in sorted(outputs) if size >= keys]
    if not whole or not torch.is_tensor(outputs[whole[0]]) or outputs[whole[0]].shape != e.shape:
        return None
    one = whole[0]
    if not right(outputs[one]):
        return (f"the output is wrong even when one block holds every key (block_size={one} >= {keys} keys): check "
                f"what one block computes, and where the running max, sum and output start")
    wrong = [size for size in sorted(outputs) if size < keys and torch.is_tensor(outputs[size])
             and outputs[size].shape == e.shape and not right(outputs[size])]
    if wrong:
        return (f"the output is right when one block holds every key (block_size={one} >= {keys} keys) and wrong with "
                f"block_size={wrong[0]}: the blocks after the first are handled wrongly (how their partial results "
                f"are combined or, with causal=True, where their keys sit)")
    return None


def step_projections(layer, seen, steps, d_model):
    """What decoding ``steps`` tokens one at a time fed ``layer`` (``seen``: the input shape a hook saw at each of
    its calls), when it is not the new token alone at every step, or None."""
    if len(seen) != steps:
        return (f"the projection ran {len(seen)} times in {steps} steps ({layer}): once a step, on the new token, "
                f"is what the cache needs")
    for t, shape in enumerate(seen, start=1):
        if list(shape[-2:]) != [1, d_model]:
            return (f"at step {t}, {layer} was given an input of shape {list(shape)}, not the new token alone "
                    f"(B, 1, {d_model}): the cache already holds the past keys and values")
    return None


def decode_steps(outputs, expected):
    """Which steps of token-by-token decoding are wrong against ``expected`` (B, T, d_model), or None: the first
    step (no cache yet) right and later ones wrong, or every step wrong, the first too."""
    if not all(torch.is_tensor(y) for y in outputs) or not outputs:
        return None
    wrong = []
    for t, y in enumerate(outputs[:expected.size(1)]):
        e = expected[:, t:t + 1].detach().double()
        if y.shape != e.shape or ((y.detach().double() - e).abs().nan_to_num(float("inf"))
                                  > PROPERTY_ATOL * (1 + e.abs())).any():
            wrong.append(t + 1)
    if not wrong:
        return None
    if wrong[0] > 1:
        return (f"step 1 is right and steps {', '.join(map(str, wrong))} of {len(outputs)} are not: step 1 has no "
                f"cache yet, so what the cache brings from the earlier tokens is wrong")
    if len(wrong) == len(outputs):
        return ("every step is wrong, the first (no cache yet) too: the new token's own attention is wrong before "
                "any cache is involved")
    return None


# Measured on a gradient test's own call: the forward's results are right, so what differs is the backward.
GRADIENT_ONLY_WRONG = ("your forward's output and weights are right, the gradient w.r.t. {} is not: part of the "
                       "forward is hidden from autograd (.detach(), .data, torch.no_grad()) or goes another way "
                       "backward than forward")


# The same for tiled_attention, whose result is its output alone.
TILED_GRADIENT_ONLY_WRONG = GRADIENT_ONLY_WRONG.replace("output and weights are", "output is")


def forward_already_wrong(what, got, expected):
    """Why a gradient test's gradients, judged against the lab's, are wrong when the forward is: the student's
    ``what`` on the test's inputs (``got``) departs from the lab's (``expected``), in a sentence; or None."""
    want = expected.detach().double()
    if not torch.is_tensor(got) or got.shape != want.shape:
        how = "its shape"
    elif not torch.isfinite(got.detach()[torch.isfinite(want)]).all():
        how = "it holds inf/NaN where the lab's is finite"
    else:
        error = (got.detach().double() - want).abs().nan_to_num(0.0)
        if not (error > PROPERTY_ATOL * (1 + want.abs().nan_to_num(0.0))).any():
            return None
        how = f"by up to {error.max().item():.3g}"
    return f"your forward's {what} on these inputs is already wrong ({how}), so its gradients are too: the forward tests say why"


def sampled_rows(seq_len, count=32):
    """The rows a long output is compared at: every ``seq_len // count``-th from 0, and the last."""
    return list(range(0, seq_len, max(1, seq_len // count))) + [seq_len - 1]


def rows_not_attention(got, expected, rows):
    """Where the ``rows`` (indices) of a long output ``got`` depart from attention's ``expected`` (those rows, in
    order), in a sentence; or None. Loose (float32 summed over thousands of keys): it tells attention from an
    output that is not, which earns no points for the memory it saved."""
    mine = got.detach()[rows].double()
    want = expected.detach().double()
    error = (mine - want).abs().nan_to_num(math.inf)
    wrong = (error > 1e-3 * (1 + want.abs())).any(-1)  # (len(rows),)
    if not wrong.any():
        return None
    first = int(wrong.nonzero()[0])
    return (f"row {rows[first]} of the output is wrong by up to {error[first].max().item():.3g} ({int(wrong.sum())} of "
            f"{len(rows)} rows compared with attention): the memory points need an output computed by attention")


# Measured by comparing the weights first: they match, so the bug is in what follows attention.
WEIGHTS_RIGHT_OUTPUT_WRONG = ("your weights are right in every head, the output is not: what follows attention is "
                              "wrong (value goes through w_v; merge_heads swaps back to (B, T, n_heads, d_k) before "
                              "flattening; w_o comes last)")


def calls_differ(first, second):
    """Why two calls on the same inputs are not the same (randomness such as dropout), or None."""
    firsts = first if isinstance(first, (tuple, list)) else (first,)
    seconds = second if isinstance(second, (tuple, list)) else (second,)
    for i, (a, b) in enumerate(zip(firsts, seconds)):
        if torch.is_tensor(a) and torch.is_tensor(b) and a.shape == b.shape and not torch.equal(
                a.detach().nan_to_num(), b.detach().nan_to_num()):
            error = (a.detach().double() - b.detach().double()).abs().nan_to_num(float("inf")).max().item()
            return (f"two calls on the same inputs returned different results (item {i} differs by up to "
                    f"{error:.3g}): the code is random, e.g. dropout or torch.rand; attention here is deterministic")
    return None


def no_gradient(grads):
    """Which inputs autograd gave no gradient, or an all-zero one (``grads``: (name, gradient or None) pairs,
    None where the result holds no gradient at all), or None when each got one."""
    none = [name for name, grad in grads if grad is None]
    zeros = [name for name, grad in grads if torch.is_tensor(grad) and not grad.any()]
    if not none and not zeros:
        return None
    names = none + zeros
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    shown = f" (the gradient w.r.t. {', '.join(zeros)} is all zeros)" if zeros else ""
    return (f"no gradient reaches {listed}{shown}: the result does not depend on {'it' if len(names) == 1 else 'them'} "
            f"through autograd; do not detach, call .item()/.numpy(), or compute under torch.no_grad()")


def sizes_stored(got, expected):
    """Which of the sizes a module stored (``got``: {attribute: value}) are not ``expected``'s ints, or None."""
    wrong = [f"self.{name} is {got.get(name, '<missing>')!r}" + (" (a float)" if isinstance(got.get(name), float) else "")
             + f", not {value}" for name, value in expected.items()
             if type(got.get(name)) is not int or got.get(name) != value]
    if not wrong:
        return None
    return (f"the sizes stored are not the ones given: {'; '.join(wrong)}: store d_model, n_heads and "
            f"d_k = d_model // n_heads as ints (// keeps an int; / gives a float)")


def bias_not_followed(biased, bias):
    """Which projections (``biased``: {name: has a bias}) did not follow ``bias``, or None."""
    wrong = [name for name, has in biased.items() if has != bias]
    if not wrong:
        return None
    return (f"bias={bias} gave {', '.join(wrong)} {'no bias' if bias else 'a bias'}: pass bias=bias on to every "
            f"nn.Linear")


def size_not_refused(outcomes):
    """Which sizes that are not positive MultiHeadAttention did not refuse with a ValueError, or None.
    ``outcomes``: ((d_model, n_heads), what it did: "ValueError", "created a module" or the error it raised)."""
    wrong = [f"MultiHeadAttention{tuple(sizes)} " + (did if did == "created a module" else f"raised {did}")
             for sizes, did in outcomes if did != "ValueError"]
    if not wrong:
        return None
    return (f"a size that is not positive was not refused with a ValueError: {'; '.join(wrong)}: check "
            f"d_model > 0 and n_heads > 0 first, before d_model % n_heads")


def sizes_permuted(got_shape, expected_shape):
    """Why a shape is wrong when its sizes are right but in another order (which dims moved), or None."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    if got == expected or sorted(got) != sorted(expected):
        return None
    return (f"the sizes are right but in the wrong order: got {got}, expected {expected} (check how you unpack "
            f"x.shape and which dims you transpose)")


def sizes_merged(got_shape, expected_shape):
    """Why a shape is wrong when it holds the expected sizes but two of them in one dim, or one of them split in
    two (a view or reshape missing): which sizes, or None. Sizes of 1 are left out (an unsqueeze, not a view)."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    for fewer, more, merged in ((got, expected, True), (expected, got, False)):
        if len(more) != len(fewer) + 1:
            continue
        for i, j in itertools.combinations(range(len(more)), 2):
            a, b = more[i], more[j]
            rest = [size for k, size in enumerate(more) if k not in (i, j)]
            if 1 not in (a, b) and sorted(rest + [a * b]) == sorted(fewer):
                where = "in one dim where two belong" if merged else f"in two dims where one belongs ({a * b})"
                return (f"the result {got} has the sizes of {expected} but with {a} and {b} {where}: "
                        f"a view or reshape {'into' if merged else 'that joins'} them is missing")
    return None


def sizes_of_one(got_shape, expected_shape):
    """Why a shape is wrong when it holds the expected sizes in order, but with dims of size 1 missing or extra (an
    unsqueeze or ``[:, None]`` missing, or a squeeze or ``keepdim`` missing): which, or None."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    if len(got) == len(expected) or [s for s in got if s != 1] != [s for s in expected if s != 1]:
        return None
    count = abs(len(expected) - len(got))
    dims = f"{count} dim{'s' if count > 1 else ''} of size 1"
    if len(got) < len(expected):
        return (f"the result {got} has the sizes of {expected} in order, without its {dims}: add "
                f"{'them' if count > 1 else 'it'} (unsqueeze, or None in an index as in x[:, None])")
    return (f"the result {got} has the sizes of {expected} in order, with {dims} more: remove "
            f"{'them' if count > 1 else 'it'} (squeeze, or keepdim=False)")


def returned_an_input(got, inputs):
    """Which of ``inputs`` ({name: tensor}, in order) a call returned as it was given, in a sentence, or None."""
    if not torch.is_tensor(got):
        return None
    for name, given in inputs.items():
        if torch.is_tensor(given) and got.shape == given.shape and torch.equal(got.detach(), given.detach()):
            return (f"it returned its {name} as it was given: nothing was computed; return the pair "
                    f"scaled_dot_product_attention gives, (output, weights)")
    return None


def rows_per_key(got, t_q, t_k):
    """Why a result (..., rows, cols) of a call with T_q != T_k has a row per key, T_k rows where one per query
    belongs: its queries were made from the key or the value; or None."""
    if not torch.is_tensor(got) or got.dim() < 2 or t_q == t_k or got.size(-2) != t_k:
        return None
    return (f"the result has {t_k} rows, one row per key where one per query belongs ({t_q} queries): the queries "
            f"were made from the key or the value; project the query (w_q(query)) and attend with it")


def heads_not_merged(got, heads):
    """What a wrong merge_heads result shows, measured against the ``heads`` (B, h, T, d_k) it was given (their
    values distinct): not flattened, a position holding values of others, or its own values in another order; or None."""
    if not torch.is_tensor(got) or not torch.is_tensor(heads) or heads.dim() != 4:
        return None
    b, h, t, d_k = heads.shape
    if tuple(got.shape) == (b, t, h, d_k):
        return ("the result is (B, T, n_heads, d_k): the heads are back in place but not flattened; view or "
                "reshape it to (B, T, d_model)")
    if tuple(got.shape) != (b, t, h * d_k):
        return None
    own = heads.detach().transpose(1, 2).reshape(b, t, h * d_k)  # each position's values, head by head
    got = got.detach().to(own.dtype)
    if not torch.equal(got.flatten().sort().values, own.flatten().sort().values):
        return None  # not the given values rearranged: the other tests' to explain
    mixed = (got.sort(dim=-1).values != own.sort(dim=-1).values).any(dim=-1)  # (B, T)
    if mixed.any():
        where = tuple(int(i) for i in mixed.nonzero()[0])
        return (f"row (batch, position) = {where} of the result holds values of other positions: swap dims 1 and 2 "
                f"back to (B, T, n_heads, d_k) before you flatten")
    if torch.equal(got, own):
        return None
    return ("each position holds its own values in the wrong order: head i's d_k features belong at "
            "[i*d_k, (i+1)*d_k), so flatten (n_heads, d_k) as it is, after transpose(1, 2)")


def dtype_changed(got, expected):
    """Why a result of dtype ``got`` is not of dtype ``expected``: a floating-point result not of its inputs'
    dtype, or a mask that is not torch.bool; None otherwise."""
    if got == expected:
        return None
    if expected == torch.bool:
        return (f"the dtype changed: got {got}, a mask is torch.bool: comparisons such as != or <= and "
                f"torch.ones(..., dtype=torch.bool) give one; no .float(), .int() or arithmetic on the way")
    if not expected.is_floating_point:
        return None
    return (f"the dtype changed: got {got}, the inputs are {expected}: keep their dtype all the way (tensors you "
            f"create need dtype=query.dtype; no .float(), .double() or dtype=torch.float32 on the way)")


def dtype_or_device_changed(got, expected):
    """Why ``got`` has another dtype or device than ``expected``, or None."""
    if got.dtype != expected.dtype:
        return dtype_changed(got.dtype, expected.dtype) or f"the dtype changed: got {got.dtype}, expected {expected.dtype}"
    if got.device != expected.device:
        return f"the device changed: got {got.device}, the inputs are on {expected.device}"
    return None


def mask_constant(mask):
    """The words when ``mask`` holds one value at every position, else None. Asked on a case whose right mask
    holds both values: a constant one follows neither the positions nor the tokens (no work done), so a test of
    its shape, dtype or device does not earn its points on it."""
    if not torch.is_tensor(mask) or mask.numel() < 2:
        return None
    first = mask.flatten()[0]
    if not bool((mask == first).all()):
        return None
    return (f"the mask is {first.item()} at every position: it follows nothing, so its shape, dtype and device "
            "earn no points yet")


def padding_followed(got, tokens, pad_id):
    """Which padding a wrong padding mask follows, measured against ``tokens`` (B, T): True at the padding,
    another pad id, or the first sentence's padding for every sentence; None when it is none of these."""
    if not torch.is_tensor(got) or got.numel() != tokens.numel():
        return None
    got = got.detach().reshape(tokens.shape).bool()
    if torch.equal(got, tokens != pad_id):
        return None
    if torch.equal(got, tokens == pad_id):
        return f"the mask is True at the padding (tokens == {pad_id}): True must mean 'may attend'"
    for other in torch.unique(tokens).tolist() + [0]:
        if other != pad_id and torch.equal(got, tokens != other):
            return f"the mask follows pad_id={other}, not the pad_id={pad_id} it was given"
    if tokens.size(0) > 1 and torch.equal(got, (tokens[:1] != pad_id).expand_as(tokens)):
        return "every sentence got the first sentence's padding: compare each row of tokens with pad_id"
    return None


def attention_properties(output, weights, value, mask=None):
    """The first property of an (output, weights) pair that fails, in the order that explains the rest: the
    weights a distribution, no weight on a blocked key, output = weights @ value. None when all hold."""
    if not (torch.is_tensor(output) and torch.is_tensor(weights) and torch.is_tensor(value)):
        return None
    return (not_a_distribution(weights) or blocked_weight(weights, mask)
            or output_not_applied(output, weights, value))


def where_differ(differs, mask=None):
    """A sentence saying which entries of the (..., T_q, T_k) matrices differ, when a pattern shows."""
    if differs.dim() < 2 or not differs.numel():
        return ""
    rows, cols = differs.shape[-2:]
    pattern = differs.reshape(-1, rows, cols).any(dim=0)  # (T_q, T_k): differs in any matrix
    regions = {}
    if rows == cols and rows > 1:
        upper = torch.ones(rows, cols, dtype=torch.bool).triu(1)
        regions["above the diagonal"] = upper
        regions["below the diagonal"] = upper.T
        regions["on the diagonal"] = torch.eye(rows, dtype=torch.bool)
    allowed = None if mask is None else (mask if mask.dtype == torch.bool else mask != 0).expand(differs.shape)
    if allowed is not None:
        blocked = (~allowed & differs).any(), (allowed & differs).any()
        if blocked[0] and not blocked[1]:
            return "; only blocked positions (mask False/0) differ"
        if blocked[1] and not blocked[0]:
            return "; only allowed positions differ (the blocked ones are right)"
    for label, region in regions.items():
        if pattern.any() and not (pattern & ~region).any():
            return f"; only positions {label} differ"
    if pattern.all():
        return "; every entry differs"
    return ""


def mask_picture(mask):
    """A small (T_q, T_k) bool mask as rows of 1 and 0, for a failure message (None when too big to read)."""
    m = mask.detach().reshape(-1, mask.shape[-1]) if mask.dim() != 2 else mask.detach()
    if max(m.shape) > 12:
        return None
    return " / ".join("".join("1" if bool(x) else "0" for x in row) for row in m)


def shapes_in(values):
    """'the call got (2, 3, 4) float64, (2, 6, 4) float64, None': what went into a call that raised, in order
    (None when no tensor did); a student's error message then shows which operand had which shape."""
    if not any(torch.is_tensor(v) for v in values):
        return None
    shown = [f"{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}" if torch.is_tensor(v) else type(v).__name__
             if not isinstance(v, (int, float, bool, type(None))) else repr(v) for v in values]
    return "the call got " + ", ".join(shown)
# (end of the grader's measured properties)


# The grader's float32-in-float64 diagnosis, copied from autograder/judging/compare.py and catalogue.py: do not edit.
FLOAT32_EPS = torch.finfo(torch.float32).eps
FLOAT32_IN_FLOAT64 = 'A float32 constant or intermediate in a float64 computation: the result is only float32-accurate (a torch.Tensor/torch.FloatTensor constant, a .float() cast or dtype=torch.float32 somewhere on the way) (see "Part 1: `attention.py`" in the lab text)'
FLOAT32_HINT = "keep every constant and intermediate in the input's dtype: math.sqrt(d_k) or query.new_tensor(d_k), not torch.Tensor([d_k]) or torch.FloatTensor(...), which are float32, and no .float() or dtype=torch.float32 on the way"
FLOAT64_DEPARTS = 'values differ from your own float32 result on the same inputs{}: a step that works in float32 goes wrong in float64'


def _float32_precision(got, expected, error, exp64):
    """A float64 result that is only float32-accurate: every error within a few float32 ulps."""
    if got.dtype != torch.float64 or expected.dtype != torch.float64:
        return False
    return bool((error <= 64 * FLOAT32_EPS * (1 + exp64.abs().nan_to_num(0.0))).all())
# (end of the grader's float32-in-float64 diagnosis)


# The grader's large-scores test, copied from autograder/judging/own_forward.py and catalogue.py: do not edit.
UNSTABLE_SOFTMAX = 'Your softmax overflows on large scores: exp() of a large score is inf. Subtract the row max first, or use torch.softmax (see "Scaled dot-product attention" in the lab text)'
SHIFT_HINT = "compute the softmax as torch.softmax does: subtract each row's max before exp()"


def shift_all_scores(query, key, shift):
    """``(query', key')`` whose scores ``query' key'^T / sqrt(d_k)`` are those of ``(query, key)`` plus
    ``shift``, the same constant at every (query, key) pair, in exact arithmetic.

    query' = query + a and key' = key + b, with a orthogonal to every key row and b to every query
    row (per leading index), so the cross terms vanish and a.b = shift * sqrt(d_k) is all that is
    added. Needs d_k > T_q and d_k > T_k. Computed in float64, returned in the inputs' dtype."""
    t_q, d_k = query.shape[-2:]
    t_k = key.size(-2)
    if d_k <= max(t_q, t_k):
        raise ValueError(f"shifting every score needs d_k > T_q and d_k > T_k, got d_k={d_k}, T_q={t_q}, T_k={t_k}")
    q, k = query.double(), key.double()
    w = torch.ones(d_k, dtype=torch.float64).expand(*q.shape[:-2], d_k)
    a, b = _orthogonal_to_rows(k, w), _orthogonal_to_rows(q, w)
    overlap = (a * b).sum(-1, keepdim=True)  # (..., 1)
    if bool((overlap.abs() < 1e-6).any()):
        raise ValueError("the queries' and keys' orthogonal complements barely overlap; pick other inputs")
    factor = (abs(shift) * math.sqrt(d_k) / overlap.abs()).sqrt()
    a, b = a * factor, b * factor * overlap.sign() * math.copysign(1.0, shift)
    return (q + a[..., None, :]).to(query.dtype), (k + b[..., None, :]).to(key.dtype)


def _orthogonal_to_rows(rows, w):
    """The part of ``w`` (..., d) orthogonal to every row of ``rows`` (..., T, d)."""
    coefficients = torch.linalg.solve(rows @ rows.mT, rows @ w[..., None])  # (..., T, 1)
    return w - (rows.mT @ coefficients)[..., 0]
# (end of the grader's large-scores test)


# The grader's words for the mistakes it names, copied from autograder/judging/catalogue.py: do not edit.
MISTAKES = {  # kind -> {name: what the grade says}
    'causal_mask': {
        'causal_leaks_future': 'Your causal mask lets each query see the future: it is True above the diagonal (torch.triu or a transposed mask) instead of on and below it (see "2. Causal masking" in the lab text)',
        'causal_hides_diagonal': 'Your causal mask hides the diagonal: a token must be able to attend to itself (torch.tril with diagonal=0, not -1) (see "2. Causal masking" in the lab text)',
        'causal_polarity_flipped': 'Your causal mask marks the blocked positions with True; in this lab True means \'may attend\' (see "The mask convention (used everywhere)" in the lab text)',
    },
    'padding_mask': {
        'padding_polarity_flipped': 'Your padding mask is True at the padding tokens; in this lab True means \'may attend\', so it should be tokens != pad_id (see "The mask convention (used everywhere)" in the lab text)',
    },
    'sdpa': {
        'no_scaling': 'You did not scale the scores: divide Q K^T by sqrt(d_k) (see "Scaled dot-product attention" in the lab text)',
        'scale_by_d_k': 'You scaled the scores by 1/d_k; the formula divides by sqrt(d_k) (see "Scaled dot-product attention" in the lab text)',
        'scale_by_d_v': 'You scaled by the value\'s width; d_k is the query\'s last dim (see "Scaled dot-product attention" in the lab text)',
        'softmax_wrong_axis': 'Your softmax runs over the queries (dim=-2); each query\'s weights must sum to 1 over the keys, so use dim=-1 (see "Scaled dot-product attention" in the lab text)',
        'mask_polarity_flipped': 'You blocked the positions where the mask is True (or nonzero); in this lab True means \'may attend\', so fill where the mask is False (see "The mask convention (used everywhere)" in the lab text)',
        'masked_with_zero': 'You filled blocked scores with 0; a score of 0 still gets weight after the softmax, so fill with -inf (or a very negative number) (see "Scaled dot-product attention" in the lab text)',
        'mask_after_softmax': 'You applied the mask after the softmax, so the remaining weights no longer sum to 1; mask the scores before the softmax (see "Scaled dot-product attention" in the lab text)',
        'numeric_mask_additive': 'You added the numeric mask to the scores; here a numeric mask means nonzero = may attend and 0 = blocked, like a bool mask (see "The mask convention (used everywhere)" in the lab text)',
        'mask_ignored': 'Your code ignores the mask (bool masks too): blocked keys get weight. Fill the scores with -inf where the mask is False (or 0) before the softmax (see "The mask convention (used everywhere)" in the lab text)',
        'numeric_mask_ignored': 'Your code ignores a numeric (int or float) mask, while it applies a bool one; convert it with mask != 0 and apply it like a bool mask (see "The mask convention (used everywhere)" in the lab text)',
        'numeric_mask_only_one_attends': 'Your code lets only the mask value 1 attend (1 - mask, or mask == 1): a numeric mask means nonzero = may attend, so 2.0 or -1 attend too; block where mask == 0 (see "The mask convention (used everywhere)" in the lab text)',
        'unstable_softmax': 'Your softmax overflows on large scores: exp() of a large score is inf. Subtract the row max first, or use torch.softmax (see "Scaled dot-product attention" in the lab text)',
        'output_weights_swapped': 'You return (weights, output): the pair is swapped; return (output, weights), in that order (see "Scaled dot-product attention" in the lab text)',
    },
    'split_heads': {
        'split_without_transpose': 'Your split_heads reshapes straight to (B, n_heads, T, d_k), which mixes positions across heads: view to (B, T, n_heads, d_k), then transpose(1, 2) (see "Part 2: `mha.py`" in the lab text)',
    },
    'merge_heads': {
        'merge_without_transpose': 'Your merge_heads reshapes (B, n_heads, T, d_k) straight to (B, T, d_model) without transpose(1, 2) first, which interleaves heads and positions (see "Part 2: `mha.py`" in the lab text)',
    },
    'mha': {
        'split_without_transpose': 'Your split_heads reshapes straight to (B, n_heads, T, d_k), which mixes positions across heads: view to (B, T, n_heads, d_k), then transpose(1, 2) (see "Multi-head attention" in the lab text)',
        'split_and_merge_without_transpose': 'Your split_heads reshapes straight to (B, n_heads, T, d_k), which mixes positions across heads: view to (B, T, n_heads, d_k), then transpose(1, 2); merge_heads has the same problem (see "Multi-head attention" in the lab text)',
        'merge_without_transpose': 'Your merge_heads reshapes straight back without transpose(1, 2), so features of different positions get mixed (see "Multi-head attention" in the lab text)',
        'no_output_projection': 'Your forward returns the merged heads without the output projection w_o (see "Multi-head attention" in the lab text)',
        'key_value_swapped': 'Your forward swaps the key and value projections (w_k on the value or w_v on the key) (see "Multi-head attention" in the lab text)',
        'kv_from_query': 'Your forward projects the query for keys and values too; in cross-attention they come from the key and value inputs (see "Multi-head attention" in the lab text)',
        'only_query_projected': 'Only the query is projected: keys and values must go through w_k and w_v (see "Multi-head attention" in the lab text)',
        'scale_by_sqrt_d_model': 'You scaled by sqrt(d_model); each head\'s scores are scaled by the head width, sqrt(d_k) with d_k = d_model // n_heads (see "Multi-head attention" in the lab text)',
        'weights_averaged_over_heads': 'You averaged the attention weights over the heads; return every head\'s weights, (B, n_heads, T_q, T_k) (see "Multi-head attention" in the lab text)',
        'mha_output_weights_swapped': 'You return (weights, output): the pair is swapped; return (output, weights), in that order (see "Multi-head attention" in the lab text)',
    },
    'tiled': {
        'tiled_no_rescale': 'Your running sum and output are not rescaled when the running max grows: multiply both by exp(old_max - new_max) before adding a block (see "Extra credit" in the lab text)',
        'tiled_causal_off_by_one': 'Your causal block boundary is off by one: query i may attend keys j <= i, so block (start + offset) > i is blocked, not >= i nor > i + 1 (see "Extra credit" in the lab text)',
        'tiled_block_offset_forgotten': 'Your causal mask inside a block forgets where the block starts: key positions are start + 0, 1, ..., not 0, 1, ... (see "Extra credit" in the lab text)',
    },
    'decode': {
        'cache_unprojected_tokens': 'Your cache stores the new tokens as they come, not their projected keys and values: append split_heads(w_k(x)) and split_heads(w_v(x)) (see "Extra credit" in the lab text)',
    },
    'layout': {
        'fixed_leading_dims': 'Your attention works for some numbers of leading dims and not for others (torch.bmm takes only 3-D inputs, key.transpose(1, 2) or (2, 3) and fixed-size unpacking fix the rank): use key.transpose(-2, -1) and @ (torch.matmul), which work for 2-D, 3-D and 4-D inputs alike (see "Scaled dot-product attention" in the lab text)',
    },
    'fill': {
        'finite_fill_leaks': 'Your blocked scores are filled with a finite value that is not negative enough (such as -100): exp(fill - max) still gives blocked keys a tiny nonzero weight. Fill with float("-inf") (or torch.finfo(scores.dtype).min) (see "Scaled dot-product attention" in the lab text)',
    },
}
# (end of the grader's words for the mistakes)


def copies(*tensors):
    """Fresh copies of the inputs, as the grader sends your code: what it does to them cannot change the test's own."""
    return tuple(t.clone() if torch.is_tensor(t) else t for t in tensors)


def modified_inputs(sent, after, names=("query", "key", "value", "mask")):
    """The names of the inputs a call changed in place: ``sent`` are untouched copies of what it was given,
    ``after`` the tensors it was given, read after the call (as the grader compares them)."""
    return [name for name, before, now in zip(names, sent, after)
            if torch.is_tensor(before) and not (now.shape == before.shape and now.dtype == before.dtype
                                                and torch.equal(now.detach(), before))]


class LargestTensor(torch.overrides.TorchFunctionMode):
    """Inside the block, ``.bytes`` is the size of the largest tensor any torch call returned: a cheap stand-in
    for the grader's peak memory (a (T, T) score matrix is one such tensor)."""

    def __init__(self):
        super().__init__()
        self.bytes = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for t in result if isinstance(result, (tuple, list)) else (result,):
            if torch.is_tensor(t):
                self.bytes = max(self.bytes, t.numel() * t.element_size())
        return result


def _first(mask):
    return tuple(int(i) for i in mask.nonzero()[0])


def _explain(hint, got):
    return hint(got) if callable(hint) else hint


def check_layout(got, shape, dtype, *, case, what, hint=None, float32_ok=False):
    """Fail unless ``got`` is a tensor with this shape and dtype. ``float32_ok``: float32 where float64 is
    expected passes (the dtype is one case's charge per function, the precision case's, as in the grade)."""
    if not isinstance(got, torch.Tensor):
        fail(case, f"{what} should be a torch.Tensor, got {type(got).__name__}")
    if got.shape != shape:
        fail(case, f"{what} has the wrong shape",
             f"expected shape {tuple(shape)}, got {tuple(got.shape)}",
             hint=sizes_permuted(got.shape, shape) or sizes_of_one(got.shape, shape) or _explain(hint, got)
             or sizes_merged(got.shape, shape))
    if got.dtype != dtype and not (float32_ok and (got.dtype, dtype) == (torch.float32, torch.float64)):
        fail(case, f"{what} has dtype {got.dtype}, expected {dtype}", hint=dtype_changed(got.dtype, dtype))


def check_tensor(got, expected, *, case, what, hint=None, precision=False, mask=None):
    """Fail unless ``got`` has the shape, dtype and values of ``expected``.

    ``hint`` is a string, or a function of ``got`` that returns one (or None),
    called only on failure, to name the likely bug. A float64 result that is only
    float32-accurate, or float32 where float64 is expected, is charged once, by the case that checks precision
    (``precision=True``), as the grader does; the other cases accept it. For weights, ``mask`` (the case's) lets
    the message say, as the grade's does, whether only blocked or only allowed positions differ.
    """
    check_layout(got, expected.shape, expected.dtype, case=case, what=what, hint=hint, float32_ok=not precision)
    got = got.detach().to(expected.dtype)  # float32 for float64 (precision=False): its values are judged below
    if expected.dtype == torch.bool:
        wrong = got != expected
        if wrong.any():
            at = _first(wrong)
            pictures = [f"expected {mask_picture(expected)}", f"got      {mask_picture(got)}"] \
                if mask_picture(expected) else []
            fail(case, f"{what} is wrong at {int(wrong.sum())} of {wrong.numel()} positions",
                 f"shape {tuple(got.shape)} as expected; first wrong index {at}: "
                 f"got {bool(got[at])}, expected {bool(expected[at])}{where_differ(wrong)}", *pictures,
                 hint=_explain(hint, got))
        return
    wrong = ~torch.isclose(got, expected, **TOLERANCE[expected.dtype])
    nan = got.isnan() & ~expected.isnan()
    if nan.any():
        at = _first(nan)
        fail(case, f"{what} holds NaN at {int(nan.sum())} of {nan.numel()} elements",
             f"shape {tuple(got.shape)} as expected; first at index {at}: "
             f"got NaN where {float(expected[at]):.6g} was expected", hint=_explain(hint, got))
    if wrong.any():
        error = (got - expected).abs().nan_to_num(nan=math.inf)
        at = tuple(int(i) for i in torch.unravel_index(error.argmax(), error.shape))
        pair = _pair(float(got[at]), float(expected[at]))
        exp64 = expected.double()
        if _float32_precision(got, expected, error.double(), exp64):
            if not precision:
                return  # charged once, by the precision case
            fail(case, f"{what} is only float32-accurate at {int(wrong.sum())} of {wrong.numel()} elements",
                 f"max abs error {float(error[at]):.3g} in a float64 computation (float32 keeps about 7 digits, "
                 f"float64 about 16) at index {at}: {pair}", f"likely bug: {FLOAT32_IN_FLOAT64}", hint=FLOAT32_HINT)
        fail(case, f"{what} is wrong at {int(wrong.sum())} of {wrong.numel()} elements",
             f"shape {tuple(got.shape)} as expected; max abs error {float(error[at]):.3g} at index {at}: {pair}"
             f"{where_differ(wrong, mask) if what.startswith('weights') else ''}", hint=_explain(hint, got))


def _pair(got, expected):
    """'got 0.58221912, expected 0.58221906': six digits, or two more than it takes to tell them apart."""
    digits = 6
    for needed in range(1, 16):
        if f"{got:.{needed}g}" != f"{expected:.{needed}g}":
            digits = max(6, needed + 2)
            break
    return f"got {got:.{digits}g}, expected {expected:.{digits}g}"


def unpack_pair(result, *, case, what, expected=None, shapes=None, inputs=None, either_order=False):
    """The (output, weights) pair a function must return, or a clear failure. One that came back as
    (weights, output) is called swapped (as the grader's catalogue does): told by the ``expected`` pair's
    values, or by the ``shapes`` (output's, weights'), when the two differ. ``inputs`` ({name: tensor}): what the
    function was given, named when it returned one of them. ``either_order``: a swapped pair is put back in
    order, not failed (the cases of dtypes, stability and gradients, as in the grade: the order is the value
    cases' charge)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(case, f"{what} must return a tuple (output, weights), got {type(result).__name__}",
             hint=returned_an_input(result, inputs or {}))
    if all(map(torch.is_tensor, result)) and (
            (expected is not None and all(map(_close, result, expected[::-1])))
            or (shapes is not None and shapes[0] != shapes[1]
                and [tuple(t.shape) for t in result] == [tuple(shape) for shape in shapes[::-1]])):
        if either_order:
            return result[::-1]
        words = (MISTAKES["mha"]["mha_output_weights_swapped"] if what.startswith("MultiHeadAttention")
                 else MISTAKES["sdpa"]["output_weights_swapped"])
        fail(case, f"{what} returned (weights, output): the pair is swapped", hint=words)
    return result


def _close(a, b):
    """``a`` equals ``b`` to ``b``'s tolerance (compared in ``b``'s dtype: a float32 result against float64)."""
    return a.shape == b.shape and torch.allclose(a.detach().to(b.dtype), b, **TOLERANCE[b.dtype], equal_nan=True)


# ----------------------------------------------------------------------------- attention

def torch_attention(query, key, value, mask=None, scale=None, additive=False, differentiable=False):
    """``(output, weights)`` computed by PyTorch. ``mask``: True/nonzero = may attend (``additive``: a float
    mask added to the scores, as PyTorch reads one; for naming that mistake only). ``differentiable``: in the
    autograd graph (a stand-in for the student's attention), not detached (an expected value)."""
    allowed = None if mask is None else mask.to(query.dtype) if additive else mask.bool()  # nonzero -> True
    with contextlib.nullcontext() if differentiable else torch.no_grad():
        torch_output = F.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scale)
        # Attending over the identity matrix returns the weights themselves.
        eye = torch.eye(key.size(-2), dtype=query.dtype).expand(*key.shape[:-2], -1, -1)
        torch_weights = F.scaled_dot_product_attention(query, key, eye, attn_mask=allowed, scale=scale)
    return torch_output, torch_weights


# What the usual mistakes give, each computed by PyTorch's attention on changed inputs, for naming them only.

def _weights_over_the_queries(query, key, mask):
    """The softmax taken over the queries (dim=-2): the keys attending to the queries, transposed. A key no
    query may attend gets NaN, as a softmax over scores that are all -inf gives."""
    weights = torch_attention(key, query, query, None if mask is None else mask.mT,
                              scale=1 / math.sqrt(query.size(-1)))[1].mT  # (..., T_q, T_k)
    if mask is None:
        return weights
    return weights.masked_fill(~mask.bool().any(dim=-2, keepdim=True), float("nan"))


def _weights_masked_after_the_softmax(query, key, mask):
    """The weights without the mask, with the blocked ones zeroed afterwards: rows no longer sum to 1."""
    return torch_attention(query, key, key)[1] * mask.bool()


def _weights_with_blocked_scores_zero(query, key, mask):
    """Blocked scores filled with 0: each query sees a blocked key as a key of zeros, whose score is 0."""
    t_q, t_k, d_k = query.size(-2), key.size(-2), query.size(-1)
    allowed = torch.broadcast_to(mask.bool(), (*query.shape[:-1], t_k))  # (..., T_q, T_k)
    keys = key.unsqueeze(-3).expand(*allowed.shape, d_k).masked_fill(~allowed[..., None], 0.0)  # (..., T_q, T_k, d_k)
    return torch_attention(query.unsqueeze(-2), keys, keys, scale=1 / math.sqrt(d_k))[1].squeeze(-2)


def output_without_rescaling(query, key, value, causal, block_size):
    """What a tiled attention gives when it never rescales: key j of block b is weighed by exp(s_j - m_b), with m_b
    the running max after block b, not the final max m. That is PyTorch's attention with m - m_b added to the
    scores of block b (a softmax does not see a shift common to a row): no tiled loop needed to name the mistake."""
    t_q, t_k = query.size(-2), key.size(-2)
    allowed = lower_triangle(t_q, t_k) if causal else torch.ones(t_q, t_k, dtype=torch.bool)  # (T_q, T_k)
    scores = (query @ key.mT / math.sqrt(query.size(-1))).masked_fill(~allowed, float("-inf"))  # (..., T_q, T_k)
    blocks = -(-t_k // block_size)
    padded = torch.nn.functional.pad(scores, (0, blocks * block_size - t_k), value=float("-inf"))
    block_max = padded.unflatten(-1, (blocks, block_size)).amax(dim=-1)  # (..., T_q, blocks)
    running = block_max.cummax(dim=-1).values  # the max after each block
    shift = (running[..., -1:] - running).masked_fill(running.isinf(), 0.0)  # a block with no key allowed yet: 0
    shift = shift.repeat_interleave(block_size, dim=-1)[..., :t_k]  # (..., T_q, T_k), per key
    return torch_attention(query, key, value, shift.masked_fill(~allowed, float("-inf")), additive=True)[0]


def _nonbinary(mask):
    """A numeric mask with nonzero values other than 1."""
    return mask is not None and mask.dtype != torch.bool and bool(((mask != 0) & (mask != 1)).any())


def likely_bug(got, candidates, right):
    """The grade's words for the first ``(weights of a mistake, its words)`` whose weights ``got`` matches, or None.
    Each candidate is a function of no arguments (computed only when needed); one that cannot run is skipped, and
    so is one that ``right()`` (the right result) also matches: as the grade's catalogue, a mistake that gives the
    right result on these inputs is never named."""
    for compute, words in candidates:
        try:
            candidate = compute()
        except (RuntimeError, ValueError, IndexError):
            continue
        if candidate is not None and _close(got, candidate) and not _close(right(), candidate):
            return words
    return None


def _leak_hint(query, key, value, mask, w):
    """Hint when keys the mask blocks got weight (None if none did)."""
    allowed = mask.bool().expand_as(w)
    if not (w[~allowed] != 0).any():
        return None
    settled = w.nan_to_num(0.0)  # a row whose keys are all blocked comes out NaN
    if (settled[allowed] == 0).all():
        return MISTAKES["sdpa"]["mask_polarity_flipped"]
    numeric = mask.dtype != torch.bool
    named = likely_bug(w, [
        (lambda: _weights_over_the_queries(query, key, mask), MISTAKES["sdpa"]["softmax_wrong_axis"]),
        (lambda: torch_attention(query, key, value)[1],
         MISTAKES["sdpa"]["numeric_mask_ignored" if numeric else "mask_ignored"]),
        (lambda: torch_attention(query, key, value, mask, additive=True)[1] if numeric else None,
         MISTAKES["sdpa"]["numeric_mask_additive"]),
        (lambda: _weights_with_blocked_scores_zero(query, key, mask), MISTAKES["sdpa"]["masked_with_zero"]),
    ], right=lambda: torch_attention(query, key, value, mask)[1])
    if named:
        return named
    if not_a_distribution(w) is None and (w[~allowed].abs() < 1e-20).all():  # tiny but not 0: a finite fill
        return MISTAKES["fill"]["finite_fill_leaks"]
    return not_a_distribution(w) or blocked_weight(w, mask)


def attention_hint(query, key, value, mask, weights):
    """Name the usual mistake behind wrong attention weights, in the grade's words when it names it (None if no
    pattern fits)."""
    t_q, t_k, d_k, d_v = query.size(-2), key.size(-2), query.size(-1), value.size(-1)
    if not torch.is_tensor(weights) or tuple(weights.shape[-2:]) != (t_q, t_k):
        return "weights are (..., T_q, T_k): one row per query, one column per key (scores = Q K^T)"
    w = weights.detach()
    if w.shape != torch_attention(query, key, value, mask)[1].shape:
        return "keep the leading (batch, head) dims of the inputs; transpose only the last two dims of key"
    leak = None if mask is None else _leak_hint(query, key, value, mask, w)
    if leak:
        return leak
    named = likely_bug(w, [
        (lambda: _weights_over_the_queries(query, key, mask), MISTAKES["sdpa"]["softmax_wrong_axis"]),
        (lambda: None if mask is None else _weights_masked_after_the_softmax(query, key, mask),
         MISTAKES["sdpa"]["mask_after_softmax"]),
        (lambda: torch_attention(query, key, value, mask == 1)[1] if _nonbinary(mask) else None,
         MISTAKES["sdpa"]["numeric_mask_only_one_attends"]),
        (lambda: torch_attention(query, key, value, mask, scale=1.0)[1], MISTAKES["sdpa"]["no_scaling"]),
        (lambda: torch_attention(query, key, value, mask, scale=1.0 / d_k)[1], MISTAKES["sdpa"]["scale_by_d_k"]),
        (lambda: torch_attention(query, key, value, mask, scale=1.0 / math.sqrt(d_v))[1] if d_v != d_k else None,
         MISTAKES["sdpa"]["scale_by_d_v"]),
        (lambda: torch_attention(query, key, value, mask, scale=math.sqrt(d_k))[1],
         "multiplied by sqrt(d_k): divide the scores by sqrt(d_k) instead"),
    ], right=lambda: torch_attention(query, key, value, mask)[1])
    return named or not_a_distribution(w)


def check_attention(result, query, key, value, mask=None, *, case, what, again=None):
    """Compare an (output, weights) pair with PyTorch, weights first (they explain the output). ``again``: a
    function of no arguments that calls the code again on the same inputs, to tell randomness when it fails."""
    expected_output, expected_weights = torch_attention(query, key, value, mask)
    output, weights = unpack_pair(result, case=case, what=what, expected=(expected_output, expected_weights),
                                  inputs={"query": query, "key": key, "value": value})

    def random():
        return None if again is None else calls_differ((output, weights), again())
    check_tensor(weights, expected_weights, case=case, what="weights", mask=mask,
                 hint=lambda got: random() or attention_hint(query, key, value, mask, got)
                 or scores_off(got, query, key, mask) or FORMULA)
    check_tensor(output, expected_output, case=case, what="output",
                 hint=lambda got: random() or output_not_applied(got, weights, value)
                 or "the weights are right, so compute output = weights @ value")


# ----------------------------------------------------------------------------- multi-head

def projections(model, *, case):
    """The four nn.Linear projections of a MultiHeadAttention, or a clear failure."""
    names = ("w_q", "w_k", "w_v", "w_o")
    missing = [n for n in names if not isinstance(getattr(model, n, None), nn.Linear)]
    if missing:
        fail(case, f"MultiHeadAttention has no nn.Linear attribute(s) {', '.join(missing)}",
             hint="create self.w_q, self.w_k, self.w_v and self.w_o in __init__, with these exact names")
    return [getattr(model, n) for n in names]


def torch_mha(model, n_heads, query, key, value, allowed=None, real_keys=None, *, case):
    """PyTorch's MultiheadAttention with ``model``'s weights copied in: (output, weights).

    ``allowed``: (T_q, T_k) bool, True = may attend. ``real_keys``: (B, T_k) bool,
    True = not padding. nn.MultiheadAttention uses the opposite polarity (True =
    blocked), hence the ``~``.
    """
    w_q, w_k, w_v, w_o = projections(model, case=case)
    bias = w_q.bias is not None
    reference = nn.MultiheadAttention(w_q.in_features, n_heads, bias=bias,
                                      batch_first=True, dtype=query.dtype)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([w_q.weight, w_k.weight, w_v.weight]))
        reference.out_proj.weight.copy_(w_o.weight)
        if bias:
            reference.in_proj_bias.copy_(torch.cat([w_q.bias, w_k.bias, w_v.bias]))
            reference.out_proj.bias.copy_(w_o.bias)
        return reference(
            query, key, value, attn_mask=_blocked(allowed, real_keys, n_heads, query.size(1)),
            need_weights=True, average_attn_weights=False,
        )


def _blocked(allowed, real_keys, n_heads, t_q):
    """One (B * n_heads, T_q, T_k) mask, True = blocked, for nn.MultiheadAttention.

    Folding the padding in here (rather than passing key_padding_mask) gives the same numbers
    and spares torch a slow first-use import in every `make test`.
    """
    if real_keys is None:
        return None if allowed is None else ~allowed
    blocked = (~real_keys[:, None, :]).expand(-1, t_q, -1)  # (B, T_q, T_k)
    if allowed is not None:
        blocked = blocked | ~allowed
    return blocked.repeat_interleave(n_heads, dim=0)  # (B * n_heads, T_q, T_k)


def _heads(x, n_heads):
    """(B, T, d_model) -> (B, n_heads, T, d_k), for diagnosing only."""
    return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)


def _heads_without_transpose(x, n_heads):
    """(B, T, d_model) reshaped straight to (B, n_heads, T, d_k): the split that mixes positions across heads."""
    return x.reshape(x.size(0), n_heads, x.size(1), -1)


def mha_hint(model, n_heads, query, key, value, mask):
    """Hint for wrong MultiHeadAttention weights (a function of what the student returned), in the grade's words
    when the weights are those of a mistake it names."""
    def hint(got):
        rows = rows_per_key(got, query.size(-2), key.size(-2))  # the grade's first finding too
        if rows:
            return rows
        w_q, w_k, w_v, _ = projections(model, case="")
        with torch.no_grad():
            q, k, v = (_heads(w(x), n_heads) for w, x in [(w_q, query), (w_k, key), (w_v, value)])
        d_model = query.size(-1)
        got = got.detach()

        def weights(q=q, k=k, **kwargs):  # the heads' weights, computed by PyTorch on (changed) heads
            return torch_attention(q, k, k, mask, **kwargs)[1]
        named = likely_bug(got, [
            (lambda: weights().mean(dim=1), MISTAKES["mha"]["weights_averaged_over_heads"]),
            (lambda: weights(scale=1 / math.sqrt(d_model)) if n_heads > 1 else None,
             MISTAKES["mha"]["scale_by_sqrt_d_model"]),
            (lambda: weights(*(_heads_without_transpose(w(x), n_heads) for w, x in [(w_q, query), (w_k, key)])),
             MISTAKES["mha"]["split_without_transpose"]),
            (lambda: weights(k=_heads(w_v(key), n_heads)), MISTAKES["mha"]["key_value_swapped"]),
            (lambda: weights(k=_heads(w_k(query), n_heads)), MISTAKES["mha"]["kv_from_query"]),
            (lambda: weights(k=_heads(key, n_heads)), MISTAKES["mha"]["only_query_projected"]),
        ], right=weights)
        if named:
            return named
        bug = attention_hint(q, k, v, mask, got)
        if bug:
            return f"the heads' weights show an attention bug: {bug}"
        return blocked_weight(got, mask) or scores_off(got, q, k, mask)
    return hint


def output_hint(model, n_heads, value, weights):
    """Hint for a wrong MultiHeadAttention output once the weights are right (a function of the output)."""
    def hint(got):
        _, _, w_v, w_o = projections(model, case="")
        with torch.no_grad():
            heads = weights.detach() @ _heads(w_v(value), n_heads)  # (B, h, T_q, d_k)
            merged = heads.transpose(1, 2).flatten(2)  # (B, T_q, d_model)
            named = likely_bug(got.detach(), [
                (lambda: merged, MISTAKES["mha"]["no_output_projection"]),
                (lambda: w_o(heads.reshape(merged.shape)), MISTAKES["mha"]["merge_without_transpose"]),
            ], right=lambda: w_o(merged))
        return named or WEIGHTS_RIGHT_OUTPUT_WRONG
    return hint


def check_mha(result, expected, model, n_heads, query, key, value, mask=None, *, case, precision=False):
    """Compare MultiHeadAttention's (output, weights) with PyTorch's ``expected`` pair (``precision``: see check_tensor)."""
    output, weights = unpack_pair(result, case=case, what="MultiHeadAttention.forward", expected=expected)
    expected_output, expected_weights = expected
    check_tensor(weights, expected_weights, case=case, what="weights (B, n_heads, T_q, T_k)", mask=mask,
                 hint=mha_hint(model, n_heads, query, key, value, mask), precision=precision)
    check_tensor(output, expected_output, case=case, what="output (B, T_q, d_model)",
                 hint=output_hint(model, n_heads, value, expected_weights), precision=precision)


def split_hint(x, n_heads):
    """Hint for a wrong split_heads result (a function of what the student returned)."""
    batch, seq, d_model = x.shape
    d_k = d_model // n_heads

    def hint(got):
        if tuple(got.shape) == (batch, seq, n_heads, d_k):
            return "you return (B, T, n_heads, d_k): swap dims 1 and 2 to get (B, n_heads, T, d_k)"
        if got.shape == (batch, n_heads, seq, d_k) and torch.equal(got, x.reshape(batch, n_heads, seq, d_k)):
            return MISTAKES["split_heads"]["split_without_transpose"]
        if got.shape != (batch, n_heads, seq, d_k):
            return sizes_permuted(got.shape, (batch, n_heads, seq, d_k))
        return "head i must hold features [i*d_k, (i+1)*d_k) of every position"
    return hint


def merge_hint(x):
    """Hint for a wrong merge_heads result, ``x`` (B, n_heads, T, d_k) the heads it was given."""
    def hint(got):
        if _close(got.detach(), x.reshape(x.size(0), x.size(2), -1)):
            return MISTAKES["merge_heads"]["merge_without_transpose"]
        return heads_not_merged(got, x) or ("merge_heads is the inverse of split_heads: swap dims 1 and 2 back to "
                                            "(B, T, n_heads, d_k), then flatten the last two dims (.contiguous() "
                                            "first if you use view)")
    return hint
