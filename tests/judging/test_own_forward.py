"""The gradients part judges a submission against its own forward (autograder/judging/own_forward.py):
a forward bug is charged by the value tests only, a backward bug by the gradients part."""
import json
import math
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from autograder.judging import own_forward
from conftest import ROOT, public_checks, run_grader
from variant_builder import build_mutant, load_mutants

MUTANTS = {m["name"]: m for m in load_mutants()}


def seeded(*shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def scores(q, k):
    return q.double() @ k.double().mT / math.sqrt(q.size(-1))


@pytest.mark.parametrize("shift", [300.0, -1000.0])
def test_shift_all_scores_moves_every_score_by_the_same_constant(shift):
    q, k = seeded(2, 6, 16, seed=1), seeded(2, 6, 16, seed=2)
    big_q, big_k = own_forward.shift_all_scores(q, k, shift)
    moved = scores(big_q, big_k) - scores(q, k)
    torch.testing.assert_close(moved, torch.full_like(moved, shift), atol=1e-9, rtol=0)


def test_shift_all_scores_needs_more_features_than_positions():
    with pytest.raises(ValueError, match="d_k > T_q"):
        own_forward.shift_all_scores(seeded(2, 6, 6, seed=1), seeded(2, 6, 6, seed=2), 300.0)


def test_grad_outputs_leave_out_inf_and_nan_values():
    weights = torch.tensor([[1.0, float("-inf")], [float("nan"), 2.0]])
    _, grad_weights = own_forward.grad_outputs_for((torch.ones(3), weights), seed=0)
    assert grad_weights[0, 1] == 0 and grad_weights[1, 0] == 0 and grad_weights[0, 0] != 0


def test_projected_difference_counts_nothing_where_the_weight_is_zero():
    weight = torch.tensor([2.0, 0.0], dtype=torch.float64)
    plus, minus = torch.tensor([3.0, float("-inf")]), torch.tensor([1.0, float("-inf")])
    assert own_forward.projected_difference((plus,), (minus,), [weight]) == 4.0


def test_projected_difference_of_huge_equal_values_is_zero():
    """The difference is taken before the weighting: +-1.7e308 that does not move is no overflow."""
    huge = torch.tensor([1.7e308, -1.7e308], dtype=torch.float64)
    assert own_forward.projected_difference((huge,), (huge.clone(),), [torch.tensor([3.0, 5.0]).double()]) == 0.0


def test_projected_difference_of_a_result_of_another_shape_is_none():
    weight = [torch.ones(2, dtype=torch.float64)]
    assert own_forward.projected_difference((torch.ones(3),), (torch.ones(3),), weight) is None


def _directional_errors(forward, backward_scale=1.0):
    """The mismatch along each direction, for autograd's gradient of ``forward`` times ``backward_scale``."""
    x = seeded(3, 4, seed=3)
    weight = seeded(3, 4, seed=4)
    leaf = x.clone().requires_grad_()
    (grad,) = torch.autograd.grad((forward(leaf) * weight).sum(), leaf)
    grad = grad * backward_scale
    errors = []
    for d in own_forward.directions(x.shape, seed=5):
        difference = own_forward.projected_difference((forward(x + own_forward.FD_STEP * d),),
                                                      (forward(x - own_forward.FD_STEP * d),), [weight])
        claimed = float((grad * d).sum())
        errors.append(own_forward.directional_mismatch(claimed, difference / (2 * own_forward.FD_STEP),
                                                       float(grad.norm())))
    return errors


def test_a_backward_that_differentiates_the_forward_agrees_with_finite_differences():
    assert _directional_errors(lambda x: torch.softmax(x, dim=-1) * x) == [0.0] * own_forward.DIRECTIONS


def test_a_float32_accurate_forward_still_agrees():
    """Precision is the float64 test's charge: float32 rounding stays inside the tolerance."""
    assert _directional_errors(lambda x: (torch.softmax(x.float(), dim=-1) * x.float()).double()) == [0.0] * 2


def test_a_backward_off_by_a_factor_disagrees():
    assert all(error > 0 for error in _directional_errors(lambda x: torch.softmax(x, dim=-1) * x, 0.5))


# --- graded: one forward bug and one backward bug -----------------------------------------------

@pytest.fixture(scope="module")
def graded():
    """The two mutants graded once, in a folder a sandbox uid can enter (as conftest's open_tmp)."""
    root = Path(tempfile.mkdtemp(prefix="kit-test-"))
    root.chmod(0o755)
    yield _grade(root)
    shutil.rmtree(root, ignore_errors=True)


ONE_LINE = "    return value * 1.0, query @ key.transpose(-2, -1)"  # issue 46: once 16/100, all 14 gradient points


def build_one_line_forward(dest):
    """The untouched stubs, with scaled_dot_product_attention's raise replaced by ONE_LINE: not attention."""
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "assignment" / "mha.py", dest / "mha.py")
    text = (ROOT / "assignment" / "attention.py").read_text()
    start = text.index("def scaled_dot_product_attention(")
    stub = text.index("    raise NotImplementedError", start)
    (dest / "attention.py").write_text(text[:stub] + ONE_LINE + text[stub + len("    raise NotImplementedError"):])


def _grade(root):
    batch, out = root / "batch", root / "out"
    for name in ("no_scaling", "weights_detached"):
        build_mutant(MUTANTS[name], batch / name)
    build_one_line_forward(batch / "one_line_forward")
    run = run_grader("grade", batch, "--out", out, "--jobs", 2)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


def gradient_tests(out, name):
    tests = json.loads((out / name / "results.json").read_text())["tests"]
    return [t for t in tests if t["tags"] == ["gradients"]]


def test_a_forward_bug_costs_no_gradient_points(graded):
    lost = [t["name"] for t in gradient_tests(graded, "no_scaling") if t["score"] < t["max_score"]]
    assert not lost, f"a missing 1/sqrt(d_k) was charged in the gradients part too: {lost}"


def test_a_detached_backward_loses_gradient_points(graded):
    lost = [t for t in gradient_tests(graded, "weights_detached") if t["score"] < t["max_score"]]
    assert any(t["name"].startswith("Gradients:") for t in lost), "detached weights kept every gradient point"


def test_a_forward_that_is_not_attention_earns_no_gradient_points(graded):
    kept = [t["name"] for t in gradient_tests(graded, "one_line_forward") if t["score"] > 0]
    assert not kept, f"`{ONE_LINE.strip()}` kept gradient points: {kept}"
    assert all("your forward is not attention" in t["output"] for t in gradient_tests(graded, "one_line_forward"))


# --- the gate: is the student's forward attention? (judged without the reference) --------------

def attention(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


Q, K, V = seeded(2, 4, 8, seed=1), seeded(2, 5, 8, seed=2), seeded(2, 5, 3, seed=3)
CAUSAL = torch.ones(4, 5, dtype=torch.bool).tril()


def test_attention_passes_the_gate_even_with_a_value_bug():
    """A missing scale or a swapped pair is the attention part's charge: still attention."""
    assert own_forward.not_attention(attention(Q, K, V), V) is None
    assert own_forward.not_attention(attention(Q * 8, K, V)[::-1], V) is None
    assert own_forward.not_attention(attention(Q, K, V, CAUSAL), V, CAUSAL.double()) is None


@pytest.mark.parametrize("bug", ["softmax over the queries", "mask ignored", "mask after the softmax",
                                 "scores returned as weights"])
def test_a_forward_that_does_the_work_wrongly_passes_the_gate(bug):
    """One defect, one charge: these are the attention part's (the mask and value tests), not the gradients part's."""
    scores = Q @ K.mT / math.sqrt(Q.size(-1))
    weights = {"softmax over the queries": torch.softmax(scores, dim=-2), "mask ignored": torch.softmax(scores, -1),
               "mask after the softmax": torch.softmax(scores, -1).masked_fill(~CAUSAL, 0.0),
               "scores returned as weights": torch.softmax(scores, -1)}[bug]
    returned = scores if bug == "scores returned as weights" else weights
    assert own_forward.not_attention((weights @ V, returned), V, CAUSAL) is None


def test_scores_returned_as_weights_and_the_value_as_output_are_not_attention():
    """The one-line forward of issue 46: `return value * 1.0, query @ key.transpose(-2, -1)`."""
    query = seeded(2, 5, 8, seed=4)  # T_q == T_k: the value's rows could pass for the output's
    assert "not a distribution" in own_forward.not_attention((V * 1.0, query @ K.mT), V)
    assert "a row per row of its weights" in own_forward.not_attention((V * 1.0, Q @ K.mT), V)


def test_zeros_are_not_attention():
    assert "a row sums to 0" in own_forward.not_attention((torch.zeros(2, 4, 3), torch.zeros(2, 4, 5)), V)


def test_an_output_that_is_not_the_weights_applied_to_the_values_is_not_attention():
    output, weights = attention(Q, K, V)
    assert "weights @ value" in own_forward.not_attention((output * 2, weights), V)


def test_a_softmax_over_another_dim_still_does_attentions_work():
    """nn.Softmax() with its implicit dim takes the batch dim of 3-D scores: a bug of the attention part, charged
    there once, not again in gradients (tests/heavy/real_code/hyunwoongko_helper_class)."""
    weights_over_batch = torch.softmax(Q @ K.mT, dim=0)
    assert own_forward.not_attention((weights_over_batch @ V, weights_over_batch), V) is None


def test_make_test_applies_the_grades_gate():
    """assignment/tests/checks.py holds the students' copy of the gate (a region the generator renders from
    own_forward.py; tests/platforms/test_generation.py fails on drift): it decides every forward as the grader's."""
    public = public_checks()
    weights_over_queries, weights_over_batch = torch.softmax(Q @ K.mT, dim=-2), torch.softmax(Q @ K.mT, dim=0)
    for result, mask in [((weights_over_batch @ V, weights_over_batch), None), (attention(Q, K, V), None), (attention(Q, K, V)[::-1], None), ((V * 1.0, Q @ K.mT), None),
                         ((torch.zeros(2, 4, 3), torch.zeros(2, 4, 5)), None),
                         ((weights_over_queries @ V, weights_over_queries), None), (attention(Q, K, V), CAUSAL),
                         (attention(Q, K, V, CAUSAL), CAUSAL), ((attention(Q, K, V)[0] * 2, attention(Q, K, V)[1]), None),
                         (uniform(Q, K, V), None), (uniform(Q, K, V, CAUSAL), CAUSAL)]:
        assert public.not_attention(result, V, mask) == own_forward.not_attention(result, V, mask)
    assert public.GATE_ATOL == own_forward.GATE_ATOL


def uniform(q, k, v, mask=None):
    scores = torch.zeros(*q.shape[:-1], k.size(-2), dtype=q.dtype)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def test_weights_that_ignore_the_scores_are_not_attention():
    """Issue 46: an output that ignores the scores earns no stability, dtype or in-place points."""
    assert "ignore the scores" in own_forward.not_attention(uniform(Q, K, V), V)
    assert "ignore the scores" in own_forward.not_attention(uniform(Q, K, V, CAUSAL), V, CAUSAL)
    zeros = torch.zeros(2, 4, 5, dtype=torch.float64)  # zero scores returned as the weights
    assert "ignore the scores" in own_forward.not_attention((uniform(Q, K, V)[0], zeros), V)


def test_rows_with_a_single_key_cannot_tell_whether_the_scores_were_used():
    one_key = seeded(2, 1, 3, seed=5)
    assert own_forward.not_attention(attention(Q, K[:, :1], one_key), one_key) is None
    diagonal = torch.eye(4, 5, dtype=torch.bool)  # every query sees one key
    assert own_forward.not_attention(uniform(Q, K, V, diagonal), V, diagonal) is None
