"""Part 3: dtypes, numerical stability, gradients and leaving the inputs alone."""
import pytest
import torch

from attention_checks import check_sdpa, sdpa_expected
from autograder.grading import catalogue
from autograder.grading.compare import expect_close, fail
from autograder.grading.error_hints import NO_GRADIENT_HINT
from autograder.grading.student import Failure, RuleViolation, StudentError
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
    # Precision and d_v != d_k are charged once, where they are tested (float64 above, the attention part)
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 16, 16, mask="causal", scale=30.0, seed=21))
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 16, 16, scale=30.0, dtype=torch.float64, seed=22),
               float32_ok=True)


def _check_gradients(student, reference, case):
    """Gradients to float64 accuracy, but a float32-accurate one passes: precision is the float64 test's."""
    (q, k, v, mask), _ = sdpa_expected(reference, case)
    grad_out = randn(*case.batch, case.t_q, case.d_v, seed=case.seed + 50, dtype=case.dtype)
    grad_weights = randn(*case.batch, case.t_q, case.t_k, seed=case.seed + 51, dtype=case.dtype)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, weights = reference[0].scaled_dot_product_attention(*leaves, mask)
    expected = reference_grads([out, weights], leaves, [grad_out, grad_weights])
    reply = student.try_call(SDPA, q, k, v, mask, grad={"inputs": [0, 1, 2], "grad_outputs": [grad_out, grad_weights]})
    if isinstance(reply, Failure):  # a (weights, output) pair fails in backward on its shapes: say swapped
        swapped = student.try_call(SDPA, q, k, v, mask)
        if not isinstance(swapped, Failure) and catalogue.diagnose("sdpa", swapped.result, q, k, v, mask) is catalogue.SWAPPED:
            fail(case.describe(), "the call failed in backward", None, mistake=catalogue.SWAPPED)
        raise (RuleViolation if reply.rule else StudentError)(reply.message)
    grads = reply.grads or {}
    if not grads.get("connected"):
        fail(case.describe(), "no gradient flows from output and weights back to query, key and value",
             NO_GRADIENT_HINT)
    for name, got, want in zip(("query", "key", "value"), grads["inputs"], expected):
        if got is None:
            fail(case.describe(), f"the {name} gets no gradient", "every input must take part in the computation graph")
        expect_close(got, want, case.describe(), f"gradient w.r.t. {name}", grad=True, float32_ok=True)


@pytest.mark.points(3)
def test_gradients_without_mask(student, reference):
    """Gradients: d(output, weights)/d(query, key, value) match, no mask"""
    # d_v == d_k: a value width mistaken for d_k is the attention part's (one defect, one charge)
    _check_gradients(student, reference, AttentionCase((2,), 4, 5, 6, 6, dtype=torch.float64, seed=23))


@pytest.mark.points(2)
@pytest.mark.public  # its twin in the public tests: gradients_flow_back_to_query_key_and_value
def test_gradients_with_causal_mask(student, reference):
    """Gradients: match with a causal mask"""
    _check_gradients(student, reference, AttentionCase((2,), 5, 5, 4, 4, mask="causal", dtype=torch.float64, seed=24))


@pytest.mark.points(3)
def test_inputs_are_not_modified(student, reference):
    """In place: query, key, value and mask are left unchanged"""
    # A bool mask first: code that converts a numeric mask to a new tensor may still edit a bool one in place
    # (mask.eq_(0), mask.logical_not_()). A crash on the float mask says nothing about in-place edits: it is
    # charged in the attention part, where the numeric masks are tested.
    bool_case = AttentionCase((2,), 5, 5, 8, 8, mask="random", seed=25)
    float_case = AttentionCase((2,), 5, 5, 8, 8, mask="random", mask_dtype=torch.float32, seed=26)
    for case in (bool_case, float_case):
        q, k, v, mask = case.inputs()
        reply = student.call(SDPA, q, k, v, mask) if case is bool_case else student.try_call(SDPA, q, k, v, mask)
        if isinstance(reply, Failure):
            continue
        changed = [name for name, flag in zip(("query", "key", "value", "mask"), reply.inputs_modified) if flag]
        if changed:
            fail(case.describe(), f"the call modified its input {', '.join(changed)} in place",
                 "use out-of-place ops (masked_fill, not masked_fill_; mask == 0 or ~mask, not mask.eq_(0); "
                 "x / s, not x /= s)")
