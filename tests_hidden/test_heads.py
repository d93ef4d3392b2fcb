"""Part 5: splitting the model dim into heads and merging it back.

Like construction, head reshaping does not depend on attention.py: graded with mode="oracle". A test that
fails on the student's construction runs again on the lab's (``with_parts_below``): a construction bug is
charged by the construction part alone.
"""
import pytest
import torch

from attention_checks import with_hint, with_parts_below
from autograder.lab import StudentError, diagnosed, expect_close, expect_tensor, fail, heads_not_merged, no_gradient
from cases import randn

pytestmark = pytest.mark.part("heads")

MHA = "mha.MultiHeadAttention"
SIZES = {"args": [12, 3]}  # d_model = 12, 3 heads of d_k = 4
SPLIT_HINT = "view to (B, T, n_heads, d_k) first, then transpose(1, 2); viewing straight to (B, n_heads, T, d_k) mixes positions"
MERGE_HINT = "transpose(1, 2) back to (B, T, n_heads, d_k) first, then .contiguous().view(B, T, d_model)"


def check_method(student, reference, request, method, x, check, **call):
    """``check(reply)`` on ``MultiHeadAttention(12, 3).<method>(x)`` (``call``: more request fields): on the
    student's construction, then on the lab's when that fails."""
    def compare(where):
        check(student.call(MHA, x, init=SIZES, method=method, **call, **where))

    with_parts_below(compare, request, student, reference, reference[1].MultiHeadAttention(*SIZES["args"]),
                     parts=("construction",), own={"mode": "oracle"})


def _split(x):
    B, T, d_model = x.shape
    return x.view(B, T, 3, d_model // 3).transpose(1, 2)  # (B, h, T, d_k)


def check_form(student, reference, request, method, x, expected, label, finding=lambda got: None):
    """The result's form: shape and dtype (float64 in, float64 out), and a gradient flowing back to ``x``. A
    reshape's precision and gradient are checked here, as nothing above it may charge them (the lab's own
    split_heads and merge_heads stand in for the student's there). ``finding(result)``: a measured property
    that explains a wrong shape, or None."""
    def check(reply):
        try:
            expect_tensor(reply.result, expected, label, "result")
        except StudentError as error:
            found = finding(reply.result)
            if found:
                raise with_hint(error, found) from None
            raise
        grads = reply.grads or {}
        if not grads.get("connected") or grads["inputs"][0] is None:
            fail(label, "no gradient flows back to x", no_gradient([("x", None)]))

    # 0-dim grad_output: any shape the result has; intermediate: x arrives as a layer's output would, so an
    # in-place transpose_ of a view of it is as right as it is inside forward
    grad = {"inputs": [0], "grad_outputs": [torch.tensor(1.0, dtype=x.dtype)], "intermediate": True}
    check_method(student, reference, request, method, x, check, grad=grad)


@pytest.mark.points(2)
@pytest.mark.public
def test_split_heads_shape(student, reference, request):
    """split_heads: (B, T, d_model) -> (B, n_heads, T, d_k), keeping the dtype and the gradient"""
    x = randn(2, 5, 12, seed=40, dtype=torch.float64)
    check_form(student, reference, request, "split_heads", x, _split(x),
               "MultiHeadAttention(12, 3).split_heads(x (2, 5, 12) float64)")


@pytest.mark.points(3)
def test_split_heads_layout(student, reference, request):
    """split_heads: head i holds features [i*d_k, (i+1)*d_k) of every position"""
    x = torch.arange(2 * 5 * 12, dtype=torch.float32).reshape(2, 5, 12)  # every entry names its place

    def check(reply):
        got = reply.result
        with diagnosed("split_heads", got, x, 3):
            expect_close(got, _split(x), "MultiHeadAttention(12, 3).split_heads(x = arange (2, 5, 12))", "result",
                         SPLIT_HINT)

    check_method(student, reference, request, "split_heads", x, check)


@pytest.mark.points(2)
def test_merge_heads_shape(student, reference, request):
    """merge_heads: (B, n_heads, T, d_k) -> (B, T, d_model), keeping the dtype and the gradient"""
    x = randn(2, 5, 12, seed=41, dtype=torch.float64)
    check_form(student, reference, request, "merge_heads", _split(x), x,
               "MultiHeadAttention(12, 3).merge_heads(x (2, 3, 5, 4) float64)",
               finding=lambda got: heads_not_merged(got, _split(x)))


@pytest.mark.points(3)
def test_merge_heads_inverts_split_heads(student, reference, request):
    """merge_heads: exactly undoes split_heads"""
    x = torch.arange(2 * 5 * 12, dtype=torch.float32).reshape(2, 5, 12)

    def check(reply):
        got = reply.result
        with diagnosed("merge_heads", got, _split(x), 3):
            expect_close(got, x, "MultiHeadAttention(12, 3).merge_heads(split_heads(x = arange (2, 5, 12)))",
                         "result", heads_not_merged(got, _split(x)) or MERGE_HINT)

    check_method(student, reference, request, "merge_heads", _split(x), check)
