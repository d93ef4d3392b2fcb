"""Part 3: dtypes, numerical stability, gradients and leaving the inputs alone."""
import pytest
import torch

from attention_checks import check_sdpa, sdpa_expected
from autograder.compare import expect_close, fail
from cases import AttentionCase, randn, reference_grads

pytestmark = pytest.mark.part("gradients")

SDPA = "attention.scaled_dot_product_attention"


@pytest.mark.points(3)
def test_float64_in_float64_out(student, reference):
    """Dtypes: float64 inputs give float64 output and weights, to float64 precision"""
    check_sdpa(student, reference, AttentionCase((2,), 5, 5, 8, 8, mask="causal", dtype=torch.float64, seed=20))


@pytest.mark.points(3)
def test_large_scores_stay_finite(student, reference):
    """Stability: large-magnitude scores (inputs x 30) give finite, correct weights"""
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 16, 8, mask="causal", scale=30.0, seed=21))
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 16, 8, scale=30.0, dtype=torch.float64, seed=22))


def _check_gradients(student, reference, case):
    (q, k, v, mask), _ = sdpa_expected(reference, case)
    grad_out = randn(*case.batch, case.t_q, case.d_v, seed=case.seed + 50, dtype=case.dtype)
    grad_weights = randn(*case.batch, case.t_q, case.t_k, seed=case.seed + 51, dtype=case.dtype)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, weights = reference[0].scaled_dot_product_attention(*leaves, mask)
    expected = reference_grads([out, weights], leaves, [grad_out, grad_weights])
    reply = student.call(SDPA, q, k, v, mask, grad={"inputs": [0, 1, 2], "grad_outputs": [grad_out, grad_weights]})
    grads = reply.grads or {}
    if not grads.get("connected"):
        fail(case.describe(), "no gradient flows from output and weights back to query, key and value",
             "do not detach, call .item()/.numpy(), or compute under torch.no_grad()")
    for name, got, want in zip(("query", "key", "value"), grads["inputs"], expected):
        if got is None:
            fail(case.describe(), f"the {name} gets no gradient", "every input must take part in the computation graph")
        expect_close(got, want, case.describe(), f"gradient w.r.t. {name}", grad=True)


@pytest.mark.points(3)
def test_gradients_without_mask(student, reference):
    """Gradients: d(output, weights)/d(query, key, value) match, no mask"""
    _check_gradients(student, reference, AttentionCase((2,), 4, 5, 6, 3, dtype=torch.float64, seed=23))


@pytest.mark.points(2)
@pytest.mark.public  # its twin in the public tests: gradients_flow_back_to_query_key_and_value
def test_gradients_with_causal_mask(student, reference):
    """Gradients: match with a causal mask"""
    _check_gradients(student, reference, AttentionCase((2,), 5, 5, 4, 4, mask="causal", dtype=torch.float64, seed=24))


@pytest.mark.points(3)
def test_inputs_are_not_modified(student, reference):
    """In place: query, key, value and mask are left unchanged"""
    case = AttentionCase((2,), 5, 5, 8, 8, mask="random", mask_dtype=torch.float32, seed=25)
    q, k, v, mask = case.inputs()
    reply = student.call(SDPA, q, k, v, mask)
    changed = [name for name, flag in zip(("query", "key", "value", "mask"), reply.inputs_modified) if flag]
    if changed:
        fail(case.describe(), f"the call modified its input {', '.join(changed)} in place",
             "use out-of-place ops (masked_fill, not masked_fill_; x / s, not x /= s)")
