"""Oracles and failure messages shared by the public cases (cases.py).

The oracle is PyTorch itself: ``torch.nn.functional.scaled_dot_product_attention``
for attention and ``torch.nn.MultiheadAttention`` for multi-head attention. Your
code may not call them (see the README); the tests may.

Every failure goes through :func:`fail`, so messages look alike: the input case,
what is wrong (shape, dtype, or the largest error and where), and a hint. Nothing
here needs pytest: the same cases also run as the playground's otter checks.
"""
import importlib
import linecache
import math
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

# The grader's seeded inputs, copied from autograder/seeded.py: do not edit.
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
    except Exception as exc:  # any import-time error is the student's to fix
        raise CheckFailed(f"cannot import {name}.py: {type(exc).__name__}: {exc}") from None
    if Path(module.__file__).resolve() != path:
        raise CheckFailed(f"`import {name}` found {module.__file__}, not {path}")
    return module


def explain(exc, folder):
    """A short account of an exception raised in the student's code in ``folder``, or None if it was not."""
    frames = []  # (function, file, line) of the student's frames, outermost first
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if Path(code.co_filename).resolve().parent == folder:
            where = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
            frames.append((where, Path(code.co_filename).name, tb.tb_lineno))
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
    return f"{type(exc).__name__}: {text}\n    raised in {chain}\n    > {source}" + (f"\n    hint: {hint}" if hint else "")


# The grader's hints for torch errors, copied from autograder/error_hints.py: do not edit.
# torch errors students meet, by a piece of their message, and what usually causes them.
ERROR_HINTS = [
    ("view size is not compatible with input tensor's size and stride",
     "view needs contiguous memory, and a transposed tensor is not: call .contiguous() before .view(...), "
     "or use .reshape(...)"),
]


def error_hint(message):
    """The hint for an exception's message, or None; torch's messages can span lines."""
    text = " ".join(message.split())
    return next((hint for pattern, hint in ERROR_HINTS if pattern in text), None)
# (end of the grader's hints)


def _dtype_hint(expected):
    if expected == torch.bool:
        return "a mask must be torch.bool; comparisons such as != or <= give bool tensors"
    return "keep the input dtype: tensors you create need dtype=query.dtype (the default is float32)"


def _first(mask):
    return tuple(int(i) for i in mask.nonzero()[0])


def _explain(hint, got):
    return hint(got) if callable(hint) else hint


def check_layout(got, shape, dtype, *, case, what, hint=None):
    """Fail unless ``got`` is a tensor with this shape and dtype."""
    if not isinstance(got, torch.Tensor):
        fail(case, f"{what} should be a torch.Tensor, got {type(got).__name__}")
    if got.shape != shape:
        fail(case, f"{what} has the wrong shape",
             f"expected shape {tuple(shape)}, got {tuple(got.shape)}", hint=_explain(hint, got))
    if got.dtype != dtype:
        fail(case, f"{what} has dtype {got.dtype}, expected {dtype}", hint=_dtype_hint(dtype))


def check_tensor(got, expected, *, case, what, hint=None):
    """Fail unless ``got`` has the shape, dtype and values of ``expected``.

    ``hint`` is a string, or a function of ``got`` that returns one (or None),
    called only on failure, to name the likely bug.
    """
    check_layout(got, expected.shape, expected.dtype, case=case, what=what, hint=hint)
    got = got.detach()
    if expected.dtype == torch.bool:
        wrong = got != expected
        if wrong.any():
            at = _first(wrong)
            fail(case, f"{what} is wrong at {int(wrong.sum())} of {wrong.numel()} positions",
                 f"shape {tuple(got.shape)} as expected; first wrong index {at}: "
                 f"got {bool(got[at])}, expected {bool(expected[at])}", hint=_explain(hint, got))
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
        fail(case, f"{what} is wrong at {int(wrong.sum())} of {wrong.numel()} elements",
             f"shape {tuple(got.shape)} as expected; max abs error {float(error[at]):.3g} "
             f"at index {at}: got {float(got[at]):.6g}, expected {float(expected[at]):.6g}",
             hint=_explain(hint, got))


def unpack_pair(result, *, case, what, expected=None):
    """The (output, weights) pair a function must return, or a clear failure; given the ``expected``
    pair, one that came back as (weights, output) is called swapped (as the grader's catalogue does)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(case, f"{what} must return a tuple (output, weights), got {type(result).__name__}")
    if expected is not None and all(map(torch.is_tensor, result)) and all(map(_close, result, expected[::-1])):
        fail(case, f"{what} returned (weights, output): the pair is swapped",
             hint="return (output, weights), in that order")
    return result


def _close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, **TOLERANCE[b.dtype], equal_nan=True)


# ----------------------------------------------------------------------------- attention

def torch_attention(query, key, value, mask=None, scale=None):
    """``(output, weights)`` computed by PyTorch. ``mask``: True/nonzero = may attend."""
    allowed = None if mask is None else mask.bool()  # nonzero -> True
    with torch.no_grad():
        torch_output = F.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scale)
        # Attending over the identity matrix returns the weights themselves.
        eye = torch.eye(key.size(-2), dtype=query.dtype).expand(*key.shape[:-2], -1, -1)
        torch_weights = F.scaled_dot_product_attention(query, key, eye, attn_mask=allowed, scale=scale)
    return torch_output, torch_weights


def _leak_hint(query, key, value, mask, w):
    """Hint when keys the mask blocks got weight (None if none did)."""
    allowed = mask.bool().expand_as(w)
    if not (w[~allowed] != 0).any():
        return None
    settled = w.nan_to_num(0.0)  # a row whose keys are all blocked comes out NaN
    if (settled[allowed] == 0).all():
        return ("mask polarity is inverted: True (or nonzero) means MAY attend; "
                "block the positions where the mask is False (or 0)")
    if w.isnan().any():
        return ("weights contain NaN, which a softmax over scores that are all -inf gives: "
                "take the softmax over the keys (dim=-1), where every row keeps an allowed key")
    if _close(w, torch_attention(query, key, value)[1]):
        return "the mask was ignored: use it to fill blocked scores with -inf before the softmax"
    if torch.equal(allowed, lower_triangle(*w.shape[-2:]).expand_as(w)):
        return ("future leak: query i gives weight to a key j > i; "
                "fill blocked scores with -inf before the softmax so they get exactly 0")
    return "blocked keys got weight: fill their scores with -inf (not 0) before the softmax"


def attention_hint(query, key, value, mask, weights):
    """Name the usual mistake behind wrong attention weights (None if no pattern fits)."""
    t_q, t_k, d_k = query.size(-2), key.size(-2), query.size(-1)
    if not torch.is_tensor(weights) or tuple(weights.shape[-2:]) != (t_q, t_k):
        return "weights are (..., T_q, T_k): one row per query, one column per key (scores = Q K^T)"
    w = weights.detach()
    if w.shape != torch_attention(query, key, value, mask)[1].shape:
        return "keep the leading (batch, head) dims of the inputs; transpose only the last two dims of key"
    leak = None if mask is None else _leak_hint(query, key, value, mask, w)
    if leak:
        return leak
    if not torch.allclose(w.sum(-1), torch.ones((), dtype=w.dtype)):
        if t_q == t_k and torch.allclose(w.sum(-2), torch.ones((), dtype=w.dtype)):
            return "softmax over the wrong axis: each row (one query) must sum to 1 over the keys, use dim=-1"
        if mask is None:
            return "each row of weights must sum to 1: take the softmax over the keys (dim=-1)"
        return "rows must sum to 1: mask the scores before the softmax, not the weights after it"
    for scale, text in [
        (1.0, "missing scaling: divide the scores by sqrt(d_k), where d_k = query.size(-1)"),
        (1.0 / d_k, "scaled by 1/d_k: divide the scores by sqrt(d_k), not by d_k"),
        (math.sqrt(d_k), "multiplied by sqrt(d_k): divide the scores by sqrt(d_k) instead"),
    ]:
        if _close(w, torch_attention(query, key, value, mask, scale=scale)[1]):
            return text
    return None


def check_attention(result, query, key, value, mask=None, *, case, what):
    """Compare an (output, weights) pair with PyTorch, weights first (they explain the output)."""
    expected_output, expected_weights = torch_attention(query, key, value, mask)
    output, weights = unpack_pair(result, case=case, what=what, expected=(expected_output, expected_weights))
    check_tensor(weights, expected_weights, case=case, what="weights",
                 hint=lambda got: attention_hint(query, key, value, mask, got) or FORMULA)
    check_tensor(output, expected_output, case=case, what="output",
                 hint="the weights are right, so compute output = weights @ value")


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


def mha_hint(model, n_heads, query, key, value, mask):
    """Hint for wrong MultiHeadAttention weights (a function of what the student returned)."""
    def hint(got):
        if got.dim() == 3:
            return "return the weights of every head, (B, n_heads, T_q, T_k), not their average"
        w_q, w_k, w_v, _ = projections(model, case="")
        with torch.no_grad():
            q, k, v = (_heads(w(x), n_heads) for w, x in [(w_q, query), (w_k, key), (w_v, value)])
        d_model = query.size(-1)
        if n_heads > 1 and _close(got.detach(), torch_attention(q, k, v, mask, scale=1 / math.sqrt(d_model))[1]):
            return (f"scaled by sqrt(d_model): each head divides its scores by sqrt(d_k), the head width "
                    f"(d_k = d_model // n_heads = {d_model // n_heads}), which scaled_dot_product_attention does "
                    "for you when you pass it the split heads")
        bug = attention_hint(q, k, v, mask, got)
        if bug:
            return f"the heads' weights show an attention bug: {bug}"
        return ("check split_heads (head i = features [i*d_k, (i+1)*d_k)), that w_q and w_k project "
                "query and key, and that the mask reaches attention unchanged")
    return hint


def output_hint(model, n_heads, value, weights):
    """Hint for a wrong MultiHeadAttention output once the weights are right (a function of the output)."""
    def hint(got):
        _, _, w_v, w_o = projections(model, case="")
        with torch.no_grad():
            heads = weights.detach() @ _heads(w_v(value), n_heads)  # (B, h, T_q, d_k)
            merged = heads.transpose(1, 2).flatten(2)  # (B, T_q, d_model)
        if _close(got.detach(), merged):
            return "you return the merged heads as they are: the output projection w_o comes last, self.w_o(merged)"
        return ("the weights are right, so look at the values and after attention: value goes through w_v; "
                "merge_heads swaps back to (B, T, n_heads, d_k) before flattening; w_o comes last")
    return hint


def check_mha(result, expected, model, n_heads, query, key, value, mask=None, *, case):
    """Compare MultiHeadAttention's (output, weights) with PyTorch's ``expected`` pair."""
    output, weights = unpack_pair(result, case=case, what="MultiHeadAttention.forward", expected=expected)
    expected_output, expected_weights = expected
    check_tensor(weights, expected_weights, case=case, what="weights (B, n_heads, T_q, T_k)",
                 hint=mha_hint(model, n_heads, query, key, value, mask))
    check_tensor(output, expected_output, case=case, what="output (B, T_q, d_model)",
                 hint=output_hint(model, n_heads, value, expected_weights))


def split_hint(x, n_heads):
    """Hint for a wrong split_heads result (a function of what the student returned)."""
    batch, seq, d_model = x.shape
    d_k = d_model // n_heads

    def hint(got):
        if tuple(got.shape) == (batch, seq, n_heads, d_k):
            return "you return (B, T, n_heads, d_k): swap dims 1 and 2 to get (B, n_heads, T, d_k)"
        if got.shape == (batch, n_heads, seq, d_k) and torch.equal(got, x.reshape(batch, n_heads, seq, d_k)):
            return ("heads transposed: reshaping straight to (B, n_heads, T, d_k) mixes positions "
                    "into heads; reshape to (B, T, n_heads, d_k) first, then swap dims 1 and 2")
        return "head i must hold features [i*d_k, (i+1)*d_k) of every position"
    return hint
