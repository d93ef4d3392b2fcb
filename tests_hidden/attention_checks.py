"""Shared checks of scaled_dot_product_attention against the reference (used by several parts)."""
import torch

from autograder import catalogue
from autograder.compare import diagnosed, expect_close, expect_pair
from autograder.student import Failure, StudentError

HINTS = {
    "none": "scores = Q K^T / sqrt(d_k) with d_k = query.size(-1); softmax over the keys (dim=-1); output = weights @ V",
    "causal": "blocked scores must be -inf (or very negative) BEFORE the softmax; True in a bool mask means 'may attend'",
    "padding": "the (B, 1, 1, T_k) mask broadcasts over heads and queries; True means 'may attend'",
    "random": "the mask is broadcast to the scores as given; True (or nonzero) means 'may attend'",
}


def sdpa_expected(reference, case):
    q, k, v, mask = case.inputs()
    return (q, k, v, mask), reference[0].scaled_dot_product_attention(q, k, v, mask)


def check_sdpa(student, reference, case, target="attention.scaled_dot_product_attention", float32_ok=False,
               **request):
    """Call the student's attention on ``case`` and compare weights and output with the reference.
    ``float32_ok``: a float64 result that is only float32-accurate passes (the test is about something else)."""
    (q, k, v, mask), (out, weights) = sdpa_expected(reference, case)
    reply = student.call(target, q, k, v, mask, **request)
    got_out, got_weights = expect_pair(reply.result, case.describe())
    hint = HINTS[case.mask if case.mask_dtype == torch.bool else "random"]
    if case.mask != "none" and case.mask_dtype != torch.bool:
        hint = "a numeric mask means nonzero = may attend, 0 = blocked (it is not added to the scores)"
    try:
        with diagnosed("sdpa", (got_out, got_weights), q, k, v, mask):
            expect_close(got_weights, weights, case.describe(), "weights", hint, mask=mask, float32_ok=float32_ok)
            expect_close(got_out, out, case.describe(), "output", hint, float32_ok=float32_ok)
    except StudentError as error:
        if error.mistake is not None and error.mistake.name == "numeric_mask_ignored":
            raise _if_bool_ignored_too(student, target, request, (q, k, v, mask != 0), error) from None
        raise
    return reply


def _if_bool_ignored_too(student, target, request, inputs, error):
    """A numeric mask ignored: ask again with the same mask as bool, and say "every mask" if that is ignored too."""
    again = student.try_call(target, *inputs, **request)
    if not isinstance(again, Failure) and isinstance(again.result, (tuple, list)) and len(again.result) == 2:
        if catalogue.diagnose("sdpa", tuple(again.result), *inputs) is catalogue.MASK_IGNORED:
            return error.named(catalogue.MASK_IGNORED)
    return error
