"""scaled_dot_product_attention and ScaledDotProductAttention, checked against PyTorch's own."""
import pytest
import torch

from checks import (FORMULA, attention_hint, check_attention, check_layout, check_tensor, describe,
                    fail, lower_triangle, randn, torch_attention, unpack_pair)

# (name, query shape, key shape, value shape): 2-D, 3-D and 4-D inputs,
# including T_q != T_k and d_v != d_k.
SHAPES = [
    ("2-D", (5, 4), (5, 4), (5, 4)),
    ("3-D, T_q != T_k, d_v != d_k", (2, 3, 4), (2, 6, 4), (2, 6, 5)),
    ("4-D (batch, heads)", (2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)),
]


def qkv(q_shape, k_shape, v_shape, dtype=torch.float64):
    """Query, key and value of the given shapes, each from its own fixed seed."""
    return tuple(randn(*shape, dtype=dtype, seed=seed)
                 for seed, shape in enumerate((q_shape, k_shape, v_shape), start=1))


def attend(attention, query, key, value, mask=None):
    """Call the student's function and return (output, weights, case)."""
    case = f"scaled_dot_product_attention({describe(q=query, k=key, v=value, mask=mask)})"
    result = attention.scaled_dot_product_attention(query, key, value, mask)
    output, weights = unpack_pair(result, case=case, what="scaled_dot_product_attention")
    return output, weights, case


# ----------------------------------------------------------------------------- values

@pytest.mark.points(1)
def test_attention_returns_output_and_weights_with_the_right_shapes(attention):
    for name, q_shape, k_shape, v_shape in SHAPES:
        query, key, value = qkv(q_shape, k_shape, v_shape)
        output, weights, case = attend(attention, query, key, value)
        check_layout(output, (*q_shape[:-1], v_shape[-1]), torch.float64, case=case, what="output",
                     hint="output is (..., T_q, d_v): one row per query, as wide as value")
        check_layout(weights, (*q_shape[:-1], k_shape[-2]), torch.float64, case=case, what="weights",
                     hint="weights are (..., T_q, T_k): one row per query, one column per key")


@pytest.mark.points(2)
def test_attention_weights_match_pytorch(attention):
    for name, *shapes in SHAPES:
        query, key, value = qkv(*shapes)
        _, weights, case = attend(attention, query, key, value)
        check_tensor(weights, torch_attention(query, key, value)[1], case=f"{name}: {case}", what="weights",
                     hint=lambda got: attention_hint(query, key, value, None, got) or FORMULA)


@pytest.mark.points(2)
def test_attention_output_matches_pytorch(attention):
    for name, *shapes in SHAPES:
        query, key, value = qkv(*shapes)
        output, weights, case = attend(attention, query, key, value)
        check_tensor(output, torch_attention(query, key, value)[0], case=f"{name}: {case}", what="output",
                     hint=lambda got: attention_hint(query, key, value, None, weights)
                     or "output = weights @ value: the weighted sum of the values")


@pytest.mark.points(1)
def test_attention_weights_are_non_negative_and_rows_sum_to_one(attention):
    query, key, value = qkv((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8))
    _, weights, case = attend(attention, query, key, value)
    check_layout(weights, (2, 3, 5, 7), torch.float64, case=case, what="weights")
    if (weights < 0).any():
        fail(case, f"weights contain negative values (min {float(weights.min()):.3g})",
             hint="weights come out of a softmax, so they are never negative")
    sums = weights.detach().sum(dim=-1)
    check_tensor(sums, torch.ones_like(sums), case=case, what="row sums of weights (sum over the keys)",
                 hint=lambda _: attention_hint(query, key, value, None, weights) or FORMULA)


@pytest.mark.points(1)
def test_attention_works_in_float32(attention):
    query, key, value = qkv((2, 5, 8), (2, 5, 8), (2, 5, 8), dtype=torch.float32)
    output, weights, case = attend(attention, query, key, value)
    check_attention((output, weights), query, key, value, case=case, what="scaled_dot_product_attention")


@pytest.mark.points(1)
def test_module_wrapper_matches_pytorch(attention):
    query, key, value = qkv((2, 5, 4), (2, 5, 4), (2, 5, 6))
    mask = lower_triangle(5)
    case = f"ScaledDotProductAttention()({describe(q=query, k=key, v=value, mask=mask)})"
    result = attention.ScaledDotProductAttention()(query, key, value, mask)
    check_attention(result, query, key, value, mask, case=case, what="ScaledDotProductAttention.forward")


# ----------------------------------------------------------------------------- masks in attention

@pytest.mark.points(3)
def test_causal_mask_in_attention_matches_pytorch(attention):
    for shapes in [((2, 5, 4), (2, 5, 4), (2, 5, 3)),          # 3-D inputs
                   ((2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 8))]:  # a (T, T) mask broadcast over batch and heads
        query, key, value = qkv(*shapes)
        mask = lower_triangle(query.size(-2))
        output, weights, case = attend(attention, query, key, value, mask)
        check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention")


@pytest.mark.points(2)
def test_causal_attention_gives_future_keys_exactly_zero_weight(attention):
    query, key, value = qkv((2, 6, 4), (2, 6, 4), (2, 6, 4))
    _, weights, case = attend(attention, query, key, value, lower_triangle(6))
    check_layout(weights, (2, 6, 6), torch.float64, case=case, what="weights")
    future = ~lower_triangle(6).expand(2, 6, 6)
    leaked = future & (weights.detach() != 0)
    if leaked.any():
        b, i, j = (int(n) for n in leaked.nonzero()[0])
        fail(case, f"future leak at {int(leaked.sum())} positions: weights[{b}, {i}, {j}] = "
                   f"{float(weights[b, i, j]):.3g}, but key {j} comes after query {i}",
             hint=attention_hint(query, key, value, lower_triangle(6), weights)
             or "fill blocked scores with -inf before the softmax: they then get exactly 0 weight")


@pytest.mark.points(2)
def test_padding_mask_in_attention_matches_pytorch(attention):
    query, key, value = qkv((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4))  # (B, h, T, d_k)
    real = torch.tensor([[True, True, True, False, False],
                         [True, True, True, True, True]])
    mask = real[:, None, None, :]  # (B, 1, 1, T): broadcast over heads and queries
    output, weights, case = attend(attention, query, key, value, mask)
    check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention")


@pytest.mark.points(1)
def test_numeric_masks_mean_nonzero_may_attend(attention):
    query, key, value = qkv((2, 5, 4), (2, 5, 4), (2, 5, 4))
    for dtype in (torch.int64, torch.float32):
        mask = lower_triangle(5).to(dtype)  # 1 = may attend, 0 = blocked
        output, weights, case = attend(attention, query, key, value, mask)
        check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention")
