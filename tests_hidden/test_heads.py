"""Part 5: splitting the model dim into heads and merging it back.

Like construction, head reshaping does not depend on attention.py: graded with mode="oracle".
"""
import pytest
import torch

from autograder.lab import diagnosed, expect_close, expect_tensor
from cases import randn

pytestmark = pytest.mark.part("heads")

MHA = "mha.MultiHeadAttention"
SIZES = {"args": [12, 3]}  # d_model = 12, 3 heads of d_k = 4
SPLIT_HINT = "view to (B, T, n_heads, d_k) first, then transpose(1, 2); viewing straight to (B, n_heads, T, d_k) mixes positions"
MERGE_HINT = "transpose(1, 2) back to (B, T, n_heads, d_k) first, then .contiguous().view(B, T, d_model)"


def _split(x):
    B, T, d_model = x.shape
    return x.view(B, T, 3, d_model // 3).transpose(1, 2)  # (B, h, T, d_k)


@pytest.mark.points(2)
@pytest.mark.public
def test_split_heads_shape(student):
    """split_heads: (B, T, d_model) -> (B, n_heads, T, d_k)"""
    x = randn(2, 5, 12, seed=40, dtype=torch.float32)
    got = student.call(MHA, x, init=SIZES, method="split_heads", mode="oracle").result
    expect_tensor(got, _split(x), "MultiHeadAttention(12, 3).split_heads(x (2, 5, 12))", "result")


@pytest.mark.points(3)
def test_split_heads_layout(student):
    """split_heads: head i holds features [i*d_k, (i+1)*d_k) of every position"""
    x = torch.arange(2 * 5 * 12, dtype=torch.float32).reshape(2, 5, 12)  # every entry names its place
    got = student.call(MHA, x, init=SIZES, method="split_heads", mode="oracle").result
    with diagnosed("split_heads", got, x, 3):
        expect_close(got, _split(x), "MultiHeadAttention(12, 3).split_heads(x = arange (2, 5, 12))", "result",
                     SPLIT_HINT)


@pytest.mark.points(2)
def test_merge_heads_shape(student):
    """merge_heads: (B, n_heads, T, d_k) -> (B, T, d_model)"""
    x = randn(2, 5, 12, seed=41, dtype=torch.float32)
    got = student.call(MHA, _split(x), init=SIZES, method="merge_heads", mode="oracle").result
    expect_tensor(got, x, "MultiHeadAttention(12, 3).merge_heads(x (2, 3, 5, 4))", "result")


@pytest.mark.points(3)
def test_merge_heads_inverts_split_heads(student):
    """merge_heads: exactly undoes split_heads"""
    x = torch.arange(2 * 5 * 12, dtype=torch.float32).reshape(2, 5, 12)
    got = student.call(MHA, _split(x), init=SIZES, method="merge_heads", mode="oracle").result
    with diagnosed("merge_heads", got, _split(x), 3):
        expect_close(got, x, "MultiHeadAttention(12, 3).merge_heads(split_heads(x = arange (2, 5, 12)))", "result",
                     MERGE_HINT)
