"""Compare a student's tensors with the reference, in the trusted grader, with messages that teach.

Tolerances are per dtype and stated here once. They are loose enough for every correct way of
writing attention (einsum or matmul, pre-scaled query, ``-inf`` or ``finfo.min`` or ``-1e9`` fill,
a hand-written stable softmax) and far tighter than any of the common bugs.
"""
import torch

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


def expect_close(got, expected, case, what="output", hint=None, check_dtype=True, grad=False):
    """Fail with a teaching message unless ``got`` matches ``expected`` within the dtype's tolerance."""
    expect_tensor(got, expected, case, what, check_dtype=check_dtype)
    atol, rtol = (GRAD_TOLERANCES if grad else TOLERANCES).get(expected.dtype, TOLERANCES[torch.float32])
    got64, exp64 = got.double(), expected.double()
    if not torch.isfinite(got64[torch.isfinite(exp64)]).all():
        index = _first_index(~torch.isfinite(got64) & torch.isfinite(exp64))
        fail(case, f"{what} has inf/NaN at index {index} where {expected_value(exp64, index)} was expected",
             hint or "an unstable softmax overflows on large scores: subtract the row max, or use torch.softmax")
    finite = torch.isfinite(exp64)
    error = torch.where(finite, (got64 - exp64).abs(), torch.zeros_like(exp64))
    allowed = atol + rtol * exp64.abs().nan_to_num(0.0)
    if (error > allowed).any():
        index = _first_index(error == error.max())
        fail(case, f"{what} values differ: max abs error {error.max().item():.3g} at index {index} "
                   f"(expected {exp64[index].item():.6g}, got {got64[index].item():.6g}; "
                   f"tolerance {atol:g} + {rtol:g}*|expected|)", hint)


def expect_equal(got, expected, case, what="output", hint=None):
    """Exact match (masks, which are booleans)."""
    expect_tensor(got, expected, case, what)
    if not torch.equal(got, expected):
        index = _first_index(got != expected)
        fail(case, f"{what} differs at index {index}: expected {expected[index].item()}, "
                   f"got {got[index].item()}", hint)


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


def fail(case, problem, hint=None):
    message = f"{case}: {problem}"
    if hint:
        message += f"\n  hint: {hint}"
    raise StudentError(message)


def describe_value(value):
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def expected_value(tensor, index):
    return f"{tensor[index].item():.6g}"


def _first_index(mask):
    return tuple(int(i) for i in mask.nonzero()[0].tolist())


def _shape_hint(got, expected):
    if len(got) == len(expected) and sorted(got) == sorted(expected):
        return "the right sizes in the wrong order: check which dims you transposed or permuted"
    if len(got) != len(expected):
        return "a dimension is missing or extra: check keepdim, unsqueeze/[:, None] and squeeze"
    return None
