"""Shared checks of scaled_dot_product_attention against the reference (used by several parts)."""
import torch

from autograder.compare import diagnosed, expect_close, expect_pair

HINTS = {
    "none": "scores = Q K^T / sqrt(d_k) with d_k = query.size(-1); softmax over the keys (dim=-1); output = weights @ V",
    "causal": "blocked scores must be -inf (or very negative) BEFORE the softmax; True in a bool mask means 'may attend'",
    "padding": "the (B, 1, 1, T_k) mask broadcasts over heads and queries; True means 'may attend'",
    "random": "the mask is broadcast to the scores as given; True (or nonzero) means 'may attend'",
}


def sdpa_expected(reference, case):
    q, k, v, mask = case.inputs()
    return (q, k, v, mask), reference[0].scaled_dot_product_attention(q, k, v, mask)


def check_sdpa(student, reference, case, target="attention.scaled_dot_product_attention", **request):
    """Call the student's attention on ``case`` and compare weights and output with the reference."""
    (q, k, v, mask), (out, weights) = sdpa_expected(reference, case)
    reply = student.call(target, q, k, v, mask, **request)
    got_out, got_weights = expect_pair(reply.result, case.describe())
    hint = HINTS[case.mask if case.mask_dtype == torch.bool else "random"]
    if case.mask != "none" and case.mask_dtype != torch.bool:
        hint = "a numeric mask means nonzero = may attend, 0 = blocked (it is not added to the scores)"
    with diagnosed("sdpa", (got_out, got_weights), q, k, v, mask):
        expect_close(got_weights, weights, case.describe(), "weights", hint, mask=mask)
        expect_close(got_out, out, case.describe(), "output", hint)
    return reply
