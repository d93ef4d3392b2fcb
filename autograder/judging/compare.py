"""Compare a student's tensors with the reference, in the trusted grader, with messages that teach.

Tolerances are per dtype and stated here once. They are loose enough for every correct way of
writing attention (einsum or matmul, pre-scaled query, ``-inf`` or ``finfo.min`` or ``-1e9`` fill,
a hand-written stable softmax) and far tighter than any of the common bugs.
"""
import contextlib

import torch

from autograder.judging import catalogue
from autograder.judging.properties import (dtype_changed, returned_an_input, sizes_merged, sizes_of_one,
                                           sizes_permuted, where_differ)  # one source with the public checks
from autograder.judging.errors import StudentError

TOLERANCES = {  # dtype -> (atol, rtol)
    torch.float16: (1e-2, 1e-2),
    torch.float32: (2e-5, 1e-4),
    torch.float64: (1e-10, 1e-8),
}
GRAD_TOLERANCES = {
    torch.float32: (1e-4, 1e-3),
    torch.float64: (1e-9, 1e-7),
}


def expect_close(got, expected, case, what="output", hint=None, check_dtype=True, grad=False, mask=None,
                 float32_ok=False):
    """Fail with a teaching message unless ``got`` matches ``expected`` within the dtype's tolerance.

    For weights, ``mask`` (the mask the case used) lets the message say whether only blocked or
    only allowed positions differ. ``float32_ok``: a float64 result that is only float32-accurate
    passes, for a test that is about something else (precision is charged once, where it is tested)."""
    expect_tensor(got, expected, case, what, check_dtype=check_dtype)
    atol, rtol = (GRAD_TOLERANCES if grad else TOLERANCES).get(expected.dtype, TOLERANCES[torch.float32])
    got64, exp64 = got.double(), expected.double()
    if not torch.isfinite(got64[torch.isfinite(exp64)]).all():
        index = _first_index(~torch.isfinite(got64) & torch.isfinite(exp64))
        # The hint for inf/NaN, never the case's general one (a masking hint on an overflow misleads).
        fail(case, f"{what} has inf/NaN at index {index} where {exp64[index].item():.6g} was expected", NONFINITE_HINT,
             figure=matrix_figure(what, expected, got))
    finite = torch.isfinite(exp64)
    error = torch.where(finite, (got64 - exp64).abs(), torch.zeros_like(exp64))
    allowed = atol + rtol * exp64.abs().nan_to_num(0.0)
    if (error > allowed).any():
        if _float32_precision(got, expected, error, exp64):
            if float32_ok:
                return
            fail(case, f"{what} values differ at float32 precision: max abs error {error.max().item():.3g} in a "
                       f"float64 computation (float32 keeps about 7 digits, float64 about 16)",
                 FLOAT32_HINT,
                 figure=matrix_figure(what, expected, got), mistake=catalogue.FLOAT32_IN_FLOAT64)
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
             dtype_changed(got.dtype, expected.dtype))


def expect_pair(result, case, names=("output", "weights"), inputs=None):
    """The student's function should return a tuple like ``(output, weights)``; ``inputs`` ({name: tensor}): what
    it was given, named when it returned one of them."""
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        fail(case, f"should return a tuple ({', '.join(names)}), got {describe_value(result)}",
             returned_an_input(result, inputs or {}))
    return result


def fail(case, problem, hint=None, figure=None, mistake=None):
    """Raise the failure for the student: what went wrong and one hint. A catalogued mistake, named now
    or later by ``diagnosed``, replaces the hint: one hint per failure, the most specific one."""
    bare = f"{case}: {problem}"
    message = bare + (f"\n  hint: {hint}" if hint else "")
    error = StudentError(message, figure=figure, unnamed=bare)
    raise error.named(mistake) if mistake else error


NONFINITE_HINT = ("inf/NaN where a finite value belongs: exp() of a large score overflows (subtract the row max "
                  "before exp, or use torch.softmax), or a row has every key blocked")
FLOAT32_EPS = torch.finfo(torch.float32).eps
# The hint for a float64 result that is only float32-accurate; the public checks copy it (autograder/platforms/generate.py).
FLOAT32_HINT = ("keep every constant and intermediate in the input's dtype: math.sqrt(d_k) or query.new_tensor(d_k), "
                "not torch.Tensor([d_k]) or torch.FloatTensor(...), which are float32, "
                "and no .float() or dtype=torch.float32 on the way")
# A float64 run whose values depart from the student's own float32 run on the same inputs (``{}``: the largest
# difference, or nothing): the precision test's finding when the values are wrong either way.
FLOAT64_DEPARTS = ("values differ from your own float32 result on the same inputs{}: "
                   "a step that works in float32 goes wrong in float64")


def _float32_precision(got, expected, error, exp64):
    """A float64 result that is only float32-accurate: every error within a few float32 ulps."""
    if got.dtype != torch.float64 or expected.dtype != torch.float64:
        return False
    return bool((error <= 64 * FLOAT32_EPS * (1 + exp64.abs().nan_to_num(0.0))).all())


@contextlib.contextmanager
def diagnosed(kind, got, *inputs):
    """If a comparison inside fails, name the catalogued mistake (if any) that ``got`` matches on ``inputs``."""
    try:
        yield
    except StudentError as err:
        try:
            if err.mistake is catalogue.FLOAT32_IN_FLOAT64:  # which float32 step: the scale or the softmax?
                found = catalogue.precision_cause(kind, got, *inputs)
            else:
                found = catalogue.diagnose(kind, got, *inputs) if err.mistake is None else None
        except Exception:  # noqa: BLE001 - naming the bug is a bonus: it must never cost the failure its message
            found = None
        if found is None:
            raise
        raise err.named(found) from None


# --- where results differ, in words and as a small picture -----------------------------------

def matrix_figure(what, expected, got):
    """The (T_q, T_k) matrix of expected and got with the largest error, as plain lists, for the report's
    heatmaps; ``where`` names it (e.g. "batch 1, head 2") when the tensor holds more than one. None when
    there is none to draw: the picture is a bonus, never the reason a comparison cannot fail cleanly."""
    try:
        return _matrix_figure(what, expected, got)
    except Exception:  # noqa: BLE001
        return None


def _matrix_figure(what, expected, got):
    if not isinstance(got, torch.Tensor) or expected.dim() < 2 or got.shape != expected.shape:
        return None
    where = None
    if what == "mask":  # (T, T) causal or (B, 1, 1, T) padding: show it as rows of keys
        expected2, got2 = (t.reshape(-1, t.shape[-1]).double() for t in (expected, got))
    else:
        index = _worst_matrix(expected.double(), got.double())
        expected2, got2 = expected[index].double(), got[index].double()
        where = _name_matrix(index, expected.dim())
    if max(expected2.shape) > 16:
        return None
    figure = {"what": what, "expected": expected2.tolist(), "got": got2.tolist()}
    if where:
        figure["where"] = where
    return figure


def _worst_matrix(expected, got):
    """Index of the leading dims whose (rows, cols) matrix has the largest error (NaN/inf count as infinite)."""
    lead = expected.shape[:-2]
    if not lead.numel():
        return ()
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    error = torch.where(same, torch.zeros_like(got), (got - expected).abs().nan_to_num(nan=float("inf")))
    worst = int(error.reshape(lead.numel(), -1).amax(dim=1).argmax())  # the first one on ties
    # By hand, not torch.unravel_index: its argument check imports sympy on first use, a cost
    # every forked grader that draws a failing submission's heatmap would pay again.
    index = []
    for size in reversed(lead):
        worst, i = divmod(worst, size)
        index.append(i)
    return tuple(reversed(index))


def _name_matrix(index, dims):
    """ "batch 1, head 2" for (B, h, T_q, T_k) tensors, "batch 1" for (B, T_q, T_k); None for one matrix."""
    if not index:
        return None
    if dims == 3:
        return f"batch {index[0]}"
    if dims == 4:
        return f"batch {index[0]}, head {index[1]}"
    return "index " + str(index)


def describe_value(value):
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _first_index(mask):
    return tuple(int(i) for i in mask.nonzero()[0].tolist())


def _shape_hint(got, expected):
    measured = sizes_permuted(got, expected) or sizes_merged(got, expected) or sizes_of_one(got, expected)
    if measured:
        return measured
    if len(got) != len(expected):
        return "a dimension is missing or extra: check keepdim, unsqueeze/[:, None] and squeeze"
    return None
