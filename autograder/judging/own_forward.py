"""Judge a student's gradients and stability against the student's own forward, not the reference's.

A forward bug (a missing 1/sqrt(d_k), a wrong softmax axis) is charged by the value tests. The
gradient and stability tests ask a different question, whose answer the parent computes itself
from forward results the child returned for inputs the parent chose:

* gradients: does the backward differentiate what the forward computes? The child's claimed
  gradient of ``sum(result * grad_outputs)`` is checked along random unit directions against a
  central finite difference of that same sum, evaluated on the student's forward at perturbed
  inputs (``torch.autograd.gradcheck``'s fast mode, with the forward run in the sandbox);
* stability: softmax is unchanged when every score moves by one constant, so the student's
  output at inputs whose scores are all shifted by a large constant must equal its output at
  the unshifted inputs (``shift_all_scores``).

Both questions presume a forward that is attention: ``not_attention`` is the gate of every test of the
part, judged from the same returned results, so code that does not do the work earns none of its points.
"""
import math

import torch

FD_STEP = 1e-3  # central differences in float64: truncation ~step^2, a float32-accurate forward's noise ~1e-7/step
FD_RTOL, FD_ATOL = 1e-3, 1e-6  # of |gradient| (the directions are unit vectors)
DIRECTIONS = 2  # random directions per input; a wrong backward misses one by chance with probability ~0
# When the output moved with the shift though it stayed finite: softmax is shift-invariant.
SHIFT_HINT = "compute the softmax as torch.softmax does: subtract each row's max before exp()"


def float_outputs(result):
    """The positions of ``result``'s floating-point tensors (a lone tensor is position 0)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [i for i, item in enumerate(items) if isinstance(item, torch.Tensor) and item.is_floating_point()]


def grad_outputs_for(result, seed):
    """One seeded float64 weight per floating-point tensor of ``result``, None elsewhere, in the
    child's ``protocol.Gradients`` order: a projection of whatever the student returned, in its order.
    Zero where the result is inf or NaN (a -inf score returned as a weight): only finite values are judged."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    generator = torch.Generator().manual_seed(seed)
    weights = []
    for i, item in enumerate(items):
        if i not in float_outputs(result):
            weights.append(None)
            continue
        weight = torch.randn(item.shape, generator=generator, dtype=torch.float64)
        weights.append(weight.masked_fill(~torch.isfinite(item), 0.0))
    return weights


def projected_difference(plus, minus, grad_outputs):
    """``sum(grad_outputs * (plus - minus))`` over the weighted tensors of two results, in float64, computed
    in the parent: the difference first, so that huge but equal values cancel exactly. Positions of zero
    weight do not count (inf - inf there is no NaN). None when a result does not hold tensors of the shapes
    the weights were made for."""
    plus, minus = (r if isinstance(r, (tuple, list)) else (r,) for r in (plus, minus))
    if not len(plus) == len(minus) == len(grad_outputs):
        return None
    total = 0.0
    for a, b, weight in zip(plus, minus, grad_outputs):
        if weight is None:
            continue
        if not all(isinstance(t, torch.Tensor) and t.shape == weight.shape and t.is_floating_point() for t in (a, b)):
            return None
        total += float(torch.where(weight != 0, (a.double() - b.double()) * weight, 0.0).sum())
    return total


def directions(shape, seed, count=DIRECTIONS):
    """``count`` seeded random float64 unit vectors of ``shape``."""
    generator = torch.Generator().manual_seed(seed)
    found = []
    for _ in range(count):
        d = torch.randn(shape, generator=generator, dtype=torch.float64)
        found.append(d / d.norm())
    return found


def directional_mismatch(claimed, finite_difference, gradient_norm):
    """How far the backward's directional derivative is from the finite difference, past the tolerance
    (0.0 when it agrees; inf when either is not finite)."""
    if not (math.isfinite(claimed) and math.isfinite(finite_difference)):
        return math.inf
    return max(abs(claimed - finite_difference) - (FD_ATOL + FD_RTOL * gradient_norm), 0.0)


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


# The gate of every test of the gradients part: its points are for a forward that is attention, judged from
# the student's own returns (never the reference), so a value bug (the attention part's charge) still passes.
GATE_ATOL = 1e-4  # float32-loose: a float32 step in a float64 run is the dtype test's charge, not the gate's


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


def _applied(weights, value, output, rows):
    """Whether ``output`` is ``weights @ value`` at the ``rows`` (a bool mask of the queries), to GATE_ATOL."""
    try:
        applied = weights @ value
    except RuntimeError:
        return False
    return applied.shape == output.shape and bool(torch.allclose(output[rows], applied[rows], atol=GATE_ATOL,
                                                                 rtol=GATE_ATOL))
