"""MultiHeadAttention: construction, split_heads/merge_heads, and forward against nn.MultiheadAttention."""
import pytest
import torch

from checks import (check_layout, check_mha, check_tensor, describe, fail, lower_triangle,
                    projections, randn, split_hint, torch_mha, unpack_pair)


def build(mha, d_model, n_heads, bias=True):
    """The student's module in float64, so comparisons can be tight."""
    return mha.MultiHeadAttention(d_model, n_heads, bias=bias).double()


# ----------------------------------------------------------------------------- construction

@pytest.mark.points(1)
def test_mha_stores_its_sizes(mha):
    for d_model, n_heads in [(12, 3), (8, 1), (8, 8)]:
        model = mha.MultiHeadAttention(d_model, n_heads)
        case = f"MultiHeadAttention({d_model}, {n_heads})"
        for name, expected in [("d_model", d_model), ("n_heads", n_heads), ("d_k", d_model // n_heads)]:
            got = getattr(model, name, "<missing>")
            if got != expected:
                fail(case, f"self.{name} is {got!r}, expected {expected}",
                     hint="store d_model, n_heads and d_k = d_model // n_heads on self")


@pytest.mark.points(1)
def test_mha_has_four_linear_projections_and_nothing_else(mha):
    for bias in (True, False):
        d_model = 12
        model = mha.MultiHeadAttention(d_model, 3, bias=bias)
        case = f"MultiHeadAttention({d_model}, 3, bias={bias})"
        for name, layer in zip(("w_q", "w_k", "w_v", "w_o"), projections(model, case=case)):
            if (layer.in_features, layer.out_features) != (d_model, d_model):
                fail(case, f"{name} maps {layer.in_features} -> {layer.out_features} features, "
                           f"expected {d_model} -> {d_model}",
                     hint="all four projections are nn.Linear(d_model, d_model): the heads share them")
            if (layer.bias is not None) != bias:
                fail(case, f"{name} {'has no' if bias else 'has a'} bias",
                     hint="pass bias=bias on to every nn.Linear")
        expected = 4 * (d_model * d_model + (d_model if bias else 0))
        count = sum(p.numel() for p in model.parameters())
        if count != expected:
            fail(case, f"the module has {count} parameters, expected {expected} (the four projections)",
                 hint="MultiHeadAttention has no layers besides w_q, w_k, w_v and w_o")


@pytest.mark.points(2)
def test_mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model(mha):
    case = "MultiHeadAttention(16, 5)"
    try:
        mha.MultiHeadAttention(16, 5)
    except mha.DimensionMismatchError as exc:
        message = str(exc)
    except ValueError as exc:
        fail(case, f"raised {type(exc).__name__}: {exc}",
             hint="raise DimensionMismatchError (defined at the top of mha.py), not a plain ValueError")
    else:
        fail(case, "created a module, but 16 is not divisible by 5",
             hint="check d_model % n_heads != 0 and raise DimensionMismatchError")
    if "16" not in message or "5" not in message:
        fail(case, f"the error message {message!r} should name both numbers",
             hint='for example "d_model=16 is not divisible by n_heads=5"')


@pytest.mark.points(1)
def test_mha_raises_value_error_for_non_positive_sizes(mha):
    for d_model, n_heads in [(0, 2), (-8, 2), (8, 0)]:
        case = f"MultiHeadAttention({d_model}, {n_heads})"
        try:
            mha.MultiHeadAttention(d_model, n_heads)
        except ValueError:
            continue
        except ZeroDivisionError:
            fail(case, "raised ZeroDivisionError",
                 hint="check that both sizes are positive before d_model % n_heads")
        fail(case, "created a module", hint="raise ValueError when d_model or n_heads is not positive")


# ----------------------------------------------------------------------------- split / merge heads

@pytest.mark.points(1)
def test_split_heads_returns_batch_heads_seq_d_k(mha):
    model = build(mha, 12, 3)
    x = randn(2, 5, 12)
    check_layout(model.split_heads(x), (2, 3, 5, 4), torch.float64,
                 case=f"MultiHeadAttention(12, 3).split_heads(x {tuple(x.shape)})",
                 what="split_heads(x)", hint=split_hint(x, 3))


@pytest.mark.points(2)
def test_split_heads_gives_head_i_its_own_slice_of_features(mha):
    model = build(mha, 12, 3)
    x = randn(2, 5, 12)
    # Head i holds features [i*d_k, (i+1)*d_k) of every position.
    expected = torch.stack([x[:, :, 4 * i: 4 * (i + 1)] for i in range(3)], dim=1)  # (B, h, T, d_k)
    check_tensor(model.split_heads(x), expected,
                 case=f"MultiHeadAttention(12, 3).split_heads(x {tuple(x.shape)})",
                 what="split_heads(x)", hint=split_hint(x, 3))


@pytest.mark.points(2)
def test_merge_heads_undoes_split_heads(mha):
    model = build(mha, 12, 3)
    heads = randn(2, 3, 5, 4)  # (B, h, T, d_k)
    expected = torch.cat([heads[:, i] for i in range(3)], dim=-1)  # (B, T, d_model), head by head
    merge_hint = ("merge_heads is the inverse of split_heads: swap dims 1 and 2 back to "
                  "(B, T, n_heads, d_k), then flatten the last two dims (.contiguous() first if you use view)")
    check_tensor(model.merge_heads(heads), expected, case=f"merge_heads(x {tuple(heads.shape)})",
                 what="merge_heads(x)", hint=merge_hint)
    x = randn(2, 5, 12)
    check_tensor(model.merge_heads(model.split_heads(x)), x, case=f"merge_heads(split_heads(x {tuple(x.shape)}))",
                 what="the round trip", hint="merge_heads is right, so split_heads must be wrong: see its tests")


# ----------------------------------------------------------------------------- forward

def run(model, label, query, key, value, mask=None):
    """Call the student's forward; ``label`` names the module in messages."""
    case = f"{label}({describe(query=query, key=key, value=value, mask=mask)})"
    return model(query, key, value, mask), case


@pytest.mark.points(1)
def test_mha_forward_returns_output_and_per_head_weights(mha):
    model = build(mha, 8, 2)
    query, memory = randn(2, 3, 8, seed=1), randn(2, 6, 8, seed=2)  # T_q = 3, T_k = 6
    result, case = run(model, "MultiHeadAttention(8, 2)", query, memory, memory)
    output, weights = unpack_pair(result, case=case, what="MultiHeadAttention.forward")
    check_layout(output, (2, 3, 8), torch.float64, case=case, what="output",
                 hint="the output has the query's shape (B, T_q, d_model)")
    check_layout(weights, (2, 2, 3, 6), torch.float64, case=case, what="weights",
                 hint="return the weights of every head, (B, n_heads, T_q, T_k), not their average")


@pytest.mark.points(2)
def test_mha_self_attention_matches_pytorch(mha):
    model = build(mha, 8, 2)
    x = randn(2, 5, 8)
    result, case = run(model, "MultiHeadAttention(8, 2)", x, x, x)
    check_mha(result, torch_mha(model, 2, x, x, x, case=case), model, 2, x, x, x, case=case)


@pytest.mark.points(2)
def test_mha_causal_self_attention_matches_pytorch(mha):
    model = build(mha, 12, 3)
    x = randn(2, 6, 12)
    causal = lower_triangle(6)  # (T, T), passed on unchanged
    result, case = run(model, "MultiHeadAttention(12, 3)", x, x, x, causal)
    check_mha(result, torch_mha(model, 3, x, x, x, allowed=causal, case=case), model, 3, x, x, x, causal, case=case)


@pytest.mark.points(2)
def test_mha_cross_attention_with_padding_matches_pytorch(mha):
    model = build(mha, 8, 2, bias=False)
    query, key, value = randn(2, 3, 8, seed=1), randn(2, 6, 8, seed=2), randn(2, 6, 8, seed=3)
    real = torch.tensor([[True, True, True, True, False, False],
                         [True, True, True, True, True, True]])
    padding = real[:, None, None, :]  # (B, 1, 1, T_k)
    result, case = run(model, "MultiHeadAttention(8, 2, bias=False)", query, key, value, padding)
    expected = torch_mha(model, 2, query, key, value, real_keys=real, case=case)
    check_mha(result, expected, model, 2, query, key, value, padding, case=case)
