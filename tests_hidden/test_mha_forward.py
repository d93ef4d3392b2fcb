"""Part 6: the MultiHeadAttention forward pass, with the reference's weights loaded in."""
import pytest
import torch

from attention_checks import with_hint, with_parts_below
from autograder.lab import (FORWARD_INPUTS_MODIFIED, FORWARD_INPUTS_MODIFIED_HINT, GRADIENT_ONLY_WRONG,
                            WEIGHTS_RIGHT_OUTPUT_WRONG,
                            StudentError, blocked_weight, forward_already_wrong, diagnosed, expect_close, expect_pair, expect_tensor, fail,
                            no_gradient, not_a_distribution, rows_per_key, scores_off)
from cases import MHACase, randn, reference_grads

pytestmark = pytest.mark.part("mha_forward")

MHA = "mha.MultiHeadAttention"
GRAD_OUTPUT_MISMATCH = "Mismatch in shape: grad_output"  # torch's words when a result and its grad_output differ
HINT = ("project with w_q/w_k/w_v, split_heads, attend per head, merge_heads, then project with w_o; "
        "weights are per head: (B, n_heads, T_q, T_k), not averaged")
def check_mha(student, reference, case, request, inputs_untouched=False):
    """Compare output and weights with the reference module holding the same parameters; with
    ``inputs_untouched``, also check that forward left query, key, value and mask as they were."""
    module, state = case.state(reference[1])
    query, key, value, mask = case.inputs()
    expected_out, expected_weights = module(query, key, value, mask)
    init = {"args": [case.d_model, case.n_heads], "kwargs": {"bias": case.bias}}

    def compare(where):
        reply = student.call(MHA, query, key, value, mask, init=init, state=state, **where)
        out, weights = expect_pair(reply.result, case.describe())
        for got, want, what in ((weights, expected_weights, "weights"), (out, expected_out, "output")):
            if torch.is_tensor(got) and got.shape == want.shape:  # a dtype changed: its own measured property, first
                expect_tensor(got, want, case.describe(), what)
        try:
            with diagnosed("mha", (out, weights), state, case.n_heads, query, key, value, mask):
                expect_close(weights, expected_weights.detach(), case.describe(), "weights", HINT, mask=mask)
                expect_close(out, expected_out.detach(), case.describe(), "output", HINT)
        except StudentError as error:
            if error.mistake is not None:
                raise
            # No catalogued cause: the property of the student's own weights that failed, if one did. Not "two calls
            # differ": each call builds the module anew, so a parameter the state does not hold differs by design.
            finding = rows_per_key(weights, query.size(-2), key.size(-2)) or not_a_distribution(weights) or \
                blocked_weight(weights, mask) or _heads_finding(module, weights, expected_weights, query, key, mask)
            if finding:
                raise with_hint(error, finding) from None
            raise
        changed = [name for name, flag in zip(("query", "key", "value", "mask"), reply.inputs_modified) if flag]
        if inputs_untouched and changed:
            fail(case.describe(), FORWARD_INPUTS_MODIFIED.format(", ".join(changed)), FORWARD_INPUTS_MODIFIED_HINT)

    with_parts_below(compare, request, student, reference, module, runs="forward")


def forward_differs(result, expected):
    """Where the student's own (output, weights) on a gradient test's inputs already differ from the lab's, in
    a sentence, or None: its gradients then follow from a wrong forward (the forward tests name why)."""
    for what, got, want in zip(("output", "weights"), result, expected):
        found = forward_already_wrong(what, got, want)
        if found:
            return found
    return None


def _heads_finding(module, weights, expected_weights, query, key, mask):
    """The weights right in every head (so the bug follows attention), else how they depart from a softmax of
    the heads' Q K^T / sqrt(d_k), with the heads projected and split by the lab (``scores_off``); or None."""
    expected = expected_weights.detach()
    if torch.is_tensor(weights) and weights.shape == expected.shape and torch.allclose(
            weights.detach().to(expected.dtype), expected, atol=1e-4, rtol=1e-4):
        return WEIGHTS_RIGHT_OUTPUT_WRONG
    with torch.no_grad():
        q, k = module.split_heads(module.w_q(query)), module.split_heads(module.w_k(key))  # (B, h, T, d_k)
    return scores_off(weights, q, k, mask)


@pytest.mark.points(4)
@pytest.mark.public
def test_self_attention_without_mask(student, reference, request):
    """MHA forward: self-attention, no mask"""
    check_mha(student, reference, MHACase(), request)


@pytest.mark.points(4)
def test_self_attention_with_causal_mask(student, reference, request):
    """MHA forward: self-attention with a (T, T) causal mask"""
    check_mha(student, reference, MHACase(t_q=6, t_k=6, mask="causal", seed=101), request)


@pytest.mark.points(4)
def test_cross_attention_with_padding_mask(student, reference, request):
    """MHA forward: cross-attention (T_q != T_k, key != value) with a padding mask, inputs left unchanged"""
    # Inputs checked in this one test, on top of the student's attention first: an in-place edit made by
    # attention.py passes here with the note (it is charged in the gradients part's in-place test).
    check_mha(student, reference, MHACase(batch=3, t_q=4, t_k=7, cross=True, mask="padding", seed=102), request,
              inputs_untouched=True)


@pytest.mark.points(2)
def test_without_bias(student, reference, request):
    """MHA forward: bias=False"""
    check_mha(student, reference, MHACase(bias=False, cross=True, t_k=6, seed=103), request)


@pytest.mark.points(2)
def test_one_head(student, reference, request):
    """MHA forward: one head (d_k = d_model)"""
    check_mha(student, reference, MHACase(d_model=8, n_heads=1, mask="causal", seed=104), request)


@pytest.mark.points(2)
def test_heads_of_width_one(student, reference, request):
    """MHA forward: d_k = 1 (as many heads as features)"""
    check_mha(student, reference, MHACase(d_model=4, n_heads=4, seed=105), request)


@pytest.mark.points(2)
def test_float64(student, reference, request):
    """MHA forward: float64 weights and inputs stay float64, to float64 precision"""
    # d_k = 8: sqrt(8) is not exact in float32, so a float32 scale or softmax shows (sqrt(4) would hide it)
    check_mha(student, reference, MHACase(d_model=24, n_heads=3, dtype=torch.float64, mask="causal", seed=106),
              request)


@pytest.mark.points(3)
def test_gradients_reach_parameters_and_inputs(student, reference, request):
    """MHA forward: gradients w.r.t. every parameter and the inputs match"""
    case = MHACase(cross=True, t_q=4, t_k=6, mask="padding", dtype=torch.float64, seed=107)
    module, state = case.state(reference[1])
    query, key, value, mask = case.inputs()
    grad_out = randn(case.batch, case.t_q, case.d_model, seed=150, dtype=case.dtype)
    grad_weights = randn(case.batch, case.n_heads, case.t_q, case.t_k, seed=151, dtype=case.dtype)
    leaves = [t.clone().requires_grad_(True) for t in (query, key, value)]
    params = dict(module.named_parameters())
    out, weights = module(*leaves, mask)
    expected = reference_grads([out, weights], leaves + list(params.values()), [grad_out, grad_weights])

    init = {"args": [case.d_model, case.n_heads]}

    def compare(where):
        try:
            reply = student.call(MHA, query, key, value, mask, state=state, init=init, **where,
                                 grad={"inputs": [0, 1, 2], "params": True, "grad_outputs": [grad_out, grad_weights]})
        except StudentError as error:  # a result not of the lab's shapes cannot take the lab's grad_outputs
            if GRAD_OUTPUT_MISMATCH not in str(error):
                raise
            plain = student.try_call(MHA, query, key, value, mask, state=state, init=init, **where)
            result = getattr(plain, "result", None)
            pair = result if isinstance(result, (tuple, list)) and len(result) == 2 else (None, None)
            # grad_outputs have the lab's shapes, so one of the pair's shapes differs: forward_differs names it
            fail(case.describe(), forward_differs(pair, (out, weights)), rows_per_key(pair[1], case.t_q, case.t_k))
        expect_pair(reply.result, case.describe())
        grads = reply.grads or {}
        names = ["query", "key", "value", *params]
        if not grads.get("connected"):
            fail(case.describe(), "no gradient flows back from output and weights",
                 no_gradient([(each, None) for each in names]))
        got = dict(zip(("query", "key", "value"), grads["inputs"]))
        got.update(grads["params"])
        missing = [(name, None) for name in names if got.get(name) is None]  # named first: the finding that explains
        if missing:
            fail(case.describe(), "not every input and parameter gets a gradient", no_gradient(missing))
        for name, want in zip(names, expected):
            # float32-accurate gradients pass: precision is charged once, in test_float64
            try:
                expect_close(got[name], want, case.describe(), f"gradient w.r.t. {name}", HINT, grad=True,
                             float32_ok=True)
            except StudentError as error:
                finding = forward_differs(reply.result, (out, weights)) or GRADIENT_ONLY_WRONG.format(name)
                raise with_hint(error, finding) from None

    with_parts_below(compare, request, student, reference, module, runs="forward")
