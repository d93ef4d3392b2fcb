"""Part 3: dtypes, numerical stability, gradients and leaving the inputs alone, each judged on the student's own
forward (autograder/judging/own_forward.py): a wrong forward is the attention part's charge, not this part's.
The gate of every test: that forward is attention (require_attention), or the part's points are not earned.
Each runs its case at the rank the student's code takes (handled_rank): leading dims are the layout test's charge."""
import pytest
import torch

from attention_checks import check_sdpa, handled_rank, sdpa_expected
from autograder.lab import (FD_STEP, FLOAT32_HINT, FLOAT64_DEPARTS, INPUTS_MODIFIED, INPUTS_MODIFIED_HINT, SHIFT_HINT,
                            Failure, calls_differ, catalogue, describe_value, dtype_changed, directional_mismatch,
                            directions, fail, float_outputs, grad_outputs_for, matrix_figure, no_gradient, not_attention,
                            projected_difference, replied, shift_all_scores)
from cases import AttentionCase

pytestmark = pytest.mark.part("gradients")

SDPA = "attention.scaled_dot_product_attention"


# A forward bug is the value tests' charge (attention part), never this part's: every test below judges the
# student's code against its own forward, and compares with the reference only where that forward is right.
OUTPUT_NAMES = ("output", "weights")
GATE_HINT = ("this part's points are for a forward that is attention: weights = softmax over the keys of the "
             "masked scores, output = weights @ value (the attention part's tests say what is wrong)")
CLOSE_GATE = (1e-4, 1e-3)  # (atol, rtol): "the forward is right" (its precision aside), and "the same result"


@pytest.mark.points(3)
def test_float64_in_float64_out(student, reference):
    """Dtypes: float64 inputs give float64 output and weights, to float64 precision"""
    case = handled_rank(student, AttentionCase((2,), 5, 5, 8, 8, mask="causal", dtype=torch.float64, seed=20))
    (q, k, v, mask), expected = sdpa_expected(reference, case)
    reply = student.call(SDPA, q, k, v, mask)
    require_attention(case, reply.result, v, mask)
    for i in float_outputs(reply.result):
        got = _items(reply.result)[i]
        if got.dtype != torch.float64:
            fail(case.describe(), f"{_name(i)} has dtype {str(got.dtype).replace('torch.', '')}, expected float64",
                 dtype_changed(got.dtype, q.dtype))
    if _close(reply.result, expected):  # a right forward: now its precision, to float64 accuracy
        check_sdpa(student, reference, case)
        return
    # Wrong values are the attention part's; a float64 run that disagrees with the student's own float32 run is this test's.
    own32 = student.try_call(SDPA, q.float(), k.float(), v.float(), mask)
    if isinstance(own32, Failure) or _close(reply.result, own32.result):
        return
    for i, (got, own) in enumerate(zip(_items(reply.result), _items(own32.result))):
        if not _close(got, own):
            error = (got.double() - own.double()).abs().nan_to_num(nan=float("inf")).max().item() \
                if isinstance(got, torch.Tensor) and isinstance(own, torch.Tensor) and got.shape == own.shape else None
            fail(case.describe(), f"{_name(i)} " + FLOAT64_DEPARTS.format(
                 f" (max abs error {error:.3g})" if error is not None else ""), FLOAT32_HINT,
                 figure=matrix_figure(_name(i), own, got) if error is not None else None)
    fail(case.describe(), f"returned {describe_value(reply.result)} in float64 and {describe_value(own32.result)} "
                          "in float32 for the same inputs")


@pytest.mark.points(3)
def test_large_scores_stay_finite(student, reference):
    """Stability: scores shifted by a large constant give finite weights and the same output (softmax is shift-invariant)"""
    # No mask: a fill value is charged once, in the mask tests. The output is compared with the student's own
    # output at the unshifted inputs, so a value bug (the attention part's) passes here.
    for case, shift in ((AttentionCase((2,), 6, 6, 16, 16, seed=21), 300.0),  # float32: exp(300) = inf
                        (AttentionCase((2,), 6, 6, 16, 16, dtype=torch.float64, seed=22), -1000.0)):  # exp(-1000) = 0
        case = handled_rank(student, case)
        q, k, v, _ = case.inputs()
        big_q, big_k = shift_all_scores(q, k, shift)
        plain, shifted = student.call_many(SDPA, [(q, k, v, None), (big_q, big_k, v, None)])  # one request
        plain = replied(plain)
        require_attention(case, plain.result, v)
        shifted = replied(shifted)
        what = (f"{case.describe()}, then the query and key moved so that every score is shifted by {shift:g} "
                "(the same constant for every query and key)")
        positions = float_outputs(plain.result)
        if not positions or float_outputs(shifted.result) != positions:
            fail(what, f"returned {describe_value(shifted.result)} for the shifted inputs, {describe_value(plain.result)} "
                       "for the plain ones")
        for i in positions:
            got, before = _items(shifted.result)[i], _items(plain.result)[i]
            if not torch.isfinite(got).all() and torch.isfinite(before).all():
                fail(what, f"{_name(i)} has inf/NaN, while it is finite before the shift", mistake=catalogue.UNSTABLE_SOFTMAX)
        out, before = _items(shifted.result)[positions[0]], _items(plain.result)[positions[0]]
        if out.shape != before.shape:
            fail(what, f"{_name(positions[0])} has shape {tuple(out.shape)}, {tuple(before.shape)} before the shift")
        if not _close(out, before):
            error = (out.double() - before.double()).abs().max().item()
            fail(what, f"{_name(positions[0])} changed by up to {error:.3g}; a softmax over the keys does not "
                       "change when every score moves by the same constant",
                 _random(student, (q, k, v), None) or SHIFT_HINT)  # randomness, not the shift, may have moved it


def require_attention(case, result, value, mask=None):
    """The part's gate, on a forward the test made anyway: fail unless ``result`` is attention over ``value``."""
    reason = not_attention(result, value, mask)
    if reason is not None:
        fail(case.describe(), f"your forward is not attention: {reason}", GATE_HINT)


def _check_gradients(student, case):
    """The student's backward against finite differences of the student's own forward (float64 inputs)."""
    case = handled_rank(student, case)
    q, k, v, mask = case.inputs()
    inputs = (q, k, v)
    # The forward and every forward at perturbed inputs, in one request: none depends on another's result.
    moves = {index: directions(x.shape, seed=case.seed + 60 + index) for index, x in enumerate(inputs)}
    perturbed = [_moved(inputs, index, sign * FD_STEP * direction) + (mask,)
                 for index, found in moves.items() for direction in found for sign in (1.0, -1.0)]
    plain, *forwards = student.call_many(SDPA, [(q, k, v, mask)] + perturbed)
    plain = replied(plain)
    require_attention(case, plain.result, v, mask)
    if not float_outputs(plain.result):
        fail(case.describe(), f"returned {describe_value(plain.result)}: no floating-point tensor to differentiate")
    grad_outputs = grad_outputs_for(plain.result, seed=case.seed + 50)  # zero where the result is inf/NaN
    if not any(g is not None and g.any() for g in grad_outputs):
        fail(case.describe(), "the result is inf/NaN everywhere, so its gradients cannot be checked")
    reply = student.call(SDPA, q, k, v, mask, grad={"inputs": [0, 1, 2], "grad_outputs": grad_outputs})
    grads = reply.grads or {}
    names = ("query", "key", "value")
    if not grads.get("connected"):
        fail(case.describe(), "no gradient flows from output and weights back to query, key and value",
             no_gradient([(each, None) for each in names]))
    missing = no_gradient(zip(names, grads["inputs"]))
    for index, (name, got) in enumerate(zip(names, grads["inputs"])):
        x = inputs[index]
        if got is None:
            fail(case.describe(), f"the {name} gets no gradient", missing)
        if not isinstance(got, torch.Tensor) or got.shape != x.shape or not torch.isfinite(got).all():
            fail(case.describe(), f"the gradient w.r.t. {name} is {describe_value(got)}: expected a finite tensor of "
                                  f"shape {tuple(x.shape)}")
        if not got.any():
            fail(case.describe(), f"the gradient w.r.t. {name} is all zeros", missing)
        for direction in moves[index]:
            plus, minus, *forwards = forwards
            _check_direction(student, case, inputs, mask, index, direction, got, grad_outputs, (plus, minus))


def _moved(inputs, index, step):
    """``inputs`` with ``step`` added to the one at ``index``."""
    return tuple(x + step if i == index else x for i, x in enumerate(inputs))


def _check_direction(student, case, inputs, mask, index, direction, grad, grad_outputs, forwards):
    """One random direction: the backward's directional derivative against a central finite difference of
    the student's own forward, both of sum(result * grad_outputs), computed here from returned results
    (``forwards``: the student's replies at the inputs moved by +FD_STEP and -FD_STEP along it)."""
    results = [replied(reply).result for reply in forwards]
    name = ("query", "key", "value")[index]
    difference = projected_difference(*results, grad_outputs)
    if difference is None:
        fail(case.describe(), f"a small change of the {name} changed the shapes or types of the result")
    finite_difference = difference / (2 * FD_STEP)
    claimed = float((grad.double() * direction).sum())
    if directional_mismatch(claimed, finite_difference, float(grad.double().norm())):
        fail(case.describe(), f"the gradient w.r.t. {name} does not match your own forward: along a random "
                              f"direction your backward gives {claimed:.6g}, while finite differences of your "
                              f"scaled_dot_product_attention give {finite_difference:.6g}",
             _random(student, inputs, mask)
             or "the backward must differentiate what forward computes: no .detach() or .data on the way, no in-place "
                "edit of a tensor autograd saved, no custom autograd.Function with a wrong backward")


def _random(student, inputs, mask):
    """Why two calls on the same inputs differ (randomness explains a failed comparison first), or None."""
    replies = student.try_call_many(SDPA, [(*inputs, mask)] * 2)
    if any(isinstance(reply, Failure) for reply in replies):
        return None
    return calls_differ(*(reply.result for reply in replies))


def _items(result):
    return result if isinstance(result, (tuple, list)) else (result,)


def _name(i):
    return OUTPUT_NAMES[i] if i < len(OUTPUT_NAMES) else f"item {i} of the result"


def _close(got, expected):
    """Same structure and float32-close values (NaN where NaN): the gate of the tests above."""
    got, expected = _items(got), _items(expected)
    if len(got) != len(expected):
        return False
    atol, rtol = CLOSE_GATE
    for a, b in zip(got, expected):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.is_floating_point() and b.is_floating_point()):
            return False
        if not torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol, equal_nan=True):
            return False
    return True


@pytest.mark.points(3)
def test_gradients_without_mask(student, reference):
    """Gradients: d(output, weights)/d(query, key, value) agree with finite differences of your forward, no mask"""
    # d_v == d_k: a value width mistaken for d_k is the attention part's (one defect, one charge)
    _check_gradients(student, AttentionCase((2,), 4, 5, 6, 6, dtype=torch.float64, seed=23))


@pytest.mark.points(2)
@pytest.mark.public  # its twin in the public tests: gradients_flow_back_to_query_key_and_value
def test_gradients_with_mask(student, reference):
    """Gradients: agree with finite differences of your forward, with a bool mask"""
    # Every row and column allows a key and blocks one: a mask read the wrong way round or a softmax over the
    # queries (the attention part's charges) blocks no whole row or column, so the forward stays finite and
    # its gradients can be judged (inf/NaN values, such as -inf scores returned as weights, are left out).
    _check_gradients(student, AttentionCase((2,), 5, 5, 4, 4, mask="mixed", dtype=torch.float64, seed=24))


@pytest.mark.points(3)
def test_inputs_are_not_modified(student, reference):
    """In place: query, key, value and mask are left unchanged"""
    # A bool mask first: code that converts a numeric mask to a new tensor may still edit a bool one in place
    # (mask.eq_(0), mask.logical_not_()). A crash on the float mask says nothing about in-place edits: it is
    # charged in the attention part, where the numeric masks are tested.
    bool_case = AttentionCase((2,), 5, 5, 8, 8, mask="random", seed=25)
    float_case = AttentionCase((2,), 5, 5, 8, 8, mask="random", mask_dtype=torch.float32, seed=26)
    for case in (bool_case, float_case):
        case = handled_rank(student, case)
        q, k, v, mask = case.inputs()
        reply = student.call(SDPA, q, k, v, mask) if case.mask_dtype == torch.bool else student.try_call(SDPA, q, k, v, mask)
        if isinstance(reply, Failure):
            continue
        changed = [name for name, flag in zip(("query", "key", "value", "mask"), reply.inputs_modified) if flag]
        if changed:
            fail(case.describe(), INPUTS_MODIFIED.format(", ".join(changed)), INPUTS_MODIFIED_HINT)
        if case.mask_dtype == torch.bool:  # after the edits: an edited value is this test's charge, not the gate's
            require_attention(case, reply.result, v, mask)
