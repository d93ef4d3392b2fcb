"""Compare a student's tensors with the reference, in the trusted grader, with messages that teach.

Tolerances are per dtype and stated here once. They are loose enough for every correct way of
writing attention (einsum or matmul, pre-scaled query, ``-inf`` or ``finfo.min`` or ``-1e9`` fill,
a hand-written stable softmax) and far tighter than any of the common bugs.
"""
import contextlib

import torch

from autograder import catalogue
from autograder.student import StudentError

TOLERANCES = {  # dtype -> (atol, rtol)
    torch.float16: (1e-2, 1e-2),
    torch.float32: (2e-5, 1e-4),
    torch.float64: (1e-10, 1e-8),
}
GRAD_TOLERANCES = {
    torch.float32: (1e-4, 1e-3),
    torch.float64: (1e-9, 1e-7),
}


def expect_close(got, expected, case, what="output", hint=None, check_dtype=True, grad=False, mask=None):
    """Fail with a teaching message unless ``got`` matches ``expected`` within the dtype's tolerance.

    For weights, ``mask`` (the mask the case used) lets the message say whether only blocked or
    only allowed positions differ."""
    expect_tensor(got, expected, case, what, check_dtype=check_dtype)
    atol, rtol = (GRAD_TOLERANCES if grad else TOLERANCES).get(expected.dtype, TOLERANCES[torch.float32])
    got64, exp64 = got.double(), expected.double()
    if not torch.isfinite(got64[torch.isfinite(exp64)]).all():
        index = _first_index(~torch.isfinite(got64) & torch.isfinite(exp64))
        fail(case, f"{what} has inf/NaN at index {index} where {exp64[index].item():.6g} was expected",
             hint or "an unstable softmax overflows on large scores: subtract the row max, or use torch.softmax",
             figure=matrix_figure(what, expected, got))
    finite = torch.isfinite(exp64)
    error = torch.where(finite, (got64 - exp64).abs(), torch.zeros_like(exp64))
    allowed = atol + rtol * exp64.abs().nan_to_num(0.0)
    if (error > allowed).any():
        index = _first_index(error == error.max())
        where = where_differ(error > allowed, mask) if what == "weights" else ""
        fail(case, f"{what} values differ: max abs error {error.max().item():.3g} at index {index} "
                   f"(expected {exp64[index].item():.6g}, got {got64[index].item():.6g}; "
                   f"tolerance {atol:g} + {rtol:g}*|expected|){where}", hint,
             figure=matrix_figure(what, expected, got))


def expect_equal(got, expected, case, what="output", hint=None):
    """Exact match (masks, which are booleans)."""
    expect_tensor(got, expected, case, what)
    if not torch.equal(got, expected):
        index = _first_index(got != expected)
        fail(case, f"{what} differs at index {index}: expected {expected[index].item()}, "
                   f"got {got[index].item()}{where_differ(got != expected)}", hint,
             figure=matrix_figure(what, expected, got))


def expect_tensor(got, expected, case, what="output", check_dtype=True):
    if not isinstance(got, torch.Tensor):
        fail(case, f"{what} should be a torch.Tensor, got {describe_value(got)}")
    if tuple(got.shape) != tuple(expected.shape):
        fail(case, f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}",
             _shape_hint(tuple(got.shape), tuple(expected.shape)))
    if check_dtype and got.dtype != expected.dtype:
        fail(case, f"{what} has dtype {got.dtype}, expected {expected.dtype}",
             "keep the input's dtype: do not create float32 tensors or call .float() along the way"
             if expected.is_floating_point() else None)


def expect_pair(result, case, names=("output", "weights")):
    """The student's function should return a tuple like ``(output, weights)``."""
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        fail(case, f"should return a tuple ({', '.join(names)}), got {describe_value(result)}")
    return result


def fail(case, problem, hint=None, figure=None):
    message = f"{case}: {problem}"
    if hint:
        message += f"\n  hint: {hint}"
    raise StudentError(message, figure=figure)


@contextlib.contextmanager
def diagnosed(kind, got, *inputs):
    """If a comparison inside fails, name the catalogued mistake (if any) that ``got`` matches on ``inputs``."""
    try:
        yield
    except StudentError as err:
        found = catalogue.diagnose(kind, got, *inputs) if err.mistake is None else None
        if found is None:
            raise
        raise err.named(found) from None


# --- where results differ, in words and as a small picture -----------------------------------

def where_differ(differs, mask=None):
    """A sentence saying which entries of the (..., T_q, T_k) matrices differ, when a pattern shows."""
    if differs.dim() < 2:
        return ""
    rows, cols = differs.shape[-2:]
    pattern = differs.reshape(-1, rows, cols).any(dim=0)  # (T_q, T_k): differs in any matrix
    regions = {}
    if rows == cols and rows > 1:
        upper = torch.ones(rows, cols, dtype=torch.bool).triu(1)
        regions["above the diagonal"] = upper
        regions["below the diagonal"] = upper.T
        regions["on the diagonal"] = torch.eye(rows, dtype=torch.bool)
    if mask is not None:
        allowed = (mask if mask.dtype == torch.bool else mask != 0).expand(differs.shape)
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


def matrix_figure(what, expected, got):
    """The first (T_q, T_k) matrix of expected and got, as plain lists, for the report's heatmaps."""
    if not isinstance(got, torch.Tensor) or expected.dim() < 2 or got.shape != expected.shape:
        return None
    if what == "mask":  # (T, T) causal or (B, 1, 1, T) padding: show it as rows of keys
        expected2, got2 = (t.reshape(-1, t.shape[-1]).double() for t in (expected, got))
    else:
        first = (0,) * (expected.dim() - 2)
        expected2, got2 = expected[first].double(), got[first].double()
    if max(expected2.shape) > 16:
        return None
    return {"what": what, "expected": expected2.tolist(), "got": got2.tolist()}


def describe_value(value):
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _first_index(mask):
    return tuple(int(i) for i in mask.nonzero()[0].tolist())


def _shape_hint(got, expected):
    if len(got) == len(expected) and sorted(got) == sorted(expected):
        return "the right sizes in the wrong order: check which dims you transposed or permuted"
    if len(got) != len(expected):
        return "a dimension is missing or extra: check keepdim, unsqueeze/[:, None] and squeeze"
    return None
