"""The reference solution agrees with PyTorch's own attention.

Oracles: ``torch.nn.functional.scaled_dot_product_attention`` for outputs and, fed an
identity matrix as the values, for the attention weights themselves (softmax(...) @ I is
the weight matrix); ``torch.nn.MultiheadAttention(batch_first=True)`` with the reference's
projection weights copied in. Note the built-ins' mask conventions: F.sdpa takes a bool
``attn_mask`` with True = may attend (ours), but treats a float mask as additive, so masks
reach it as ``mask != 0``; nn.MultiheadAttention's ``attn_mask`` and ``key_padding_mask``
use True = BLOCKED, the opposite of ours.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def assert_close(got, expected, what):
    torch.testing.assert_close(got, expected, msg=lambda m: f"{what} disagrees with the built-in: {m}")


def allowed(mask):
    """Our mask convention as a bool tensor: True = may attend."""
    return mask if mask.dtype == torch.bool else mask != 0


def builtin_attention(query, key, value, mask=None):
    """(output, weights) from F.scaled_dot_product_attention alone."""
    attn_mask = None if mask is None else allowed(mask)
    output = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask)
    T_k = key.size(-2)
    eye = torch.eye(T_k, dtype=key.dtype).expand(*key.shape[:-1], T_k)  # (..., T_k, T_k)
    weights = F.scaled_dot_product_attention(query, key, eye, attn_mask=attn_mask)  # (..., T_q, T_k)
    return output, weights


# ---------------------------------------------------------------- masks used by the cases


def causal(T):
    return torch.ones(T, T).tril().bool()  # (T, T)


def padded(B, T):
    """(B, 1, 1, T) padding mask: sequence b has its last b positions padded (never all)."""
    lengths = torch.arange(T, T - B, -1).clamp(min=1)  # (B,)
    return (torch.arange(T) < lengths[:, None])[:, None, None, :]


def random_mask(*shape):
    mask = torch.rand(shape) > 0.4
    mask[..., 0] = True  # no fully blocked rows: they are undefined
    return mask


# name: (query shape, key shape, value shape, mask maker or None)
SDPA_CASES = {
    "2d": ((5, 8), (5, 8), (5, 8), None),
    "3d": ((2, 5, 8), (2, 5, 8), (2, 5, 8), None),
    "4d": ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), None),
    "Tq!=Tk": ((2, 3, 4, 8), (2, 3, 7, 8), (2, 3, 7, 8), None),
    "dv!=dk": ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 3), None),
    "batch1": ((1, 5, 8), (1, 5, 8), (1, 5, 8), None),
    "seq1": ((2, 1, 8), (2, 1, 8), (2, 1, 4), None),
    "Tq1": ((2, 1, 8), (2, 6, 8), (2, 6, 8), None),
    "causal-2d": ((6, 8), (6, 8), (6, 8), lambda: causal(6)),
    "causal-4d": ((2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 4), lambda: causal(6)),
    "padding-4d": ((3, 2, 6, 8), (3, 2, 6, 8), (3, 2, 6, 8), lambda: padded(3, 6)),
    "padding-Tq!=Tk": ((3, 2, 4, 8), (3, 2, 6, 8), (3, 2, 6, 8), lambda: padded(3, 6)),
    "random-bool-3d": ((2, 5, 8), (2, 7, 8), (2, 7, 8), lambda: random_mask(2, 5, 7)),
    "int-mask": ((2, 6, 8), (2, 6, 8), (2, 6, 8), lambda: causal(6).long() * 3),
    "float-mask": ((2, 6, 8), (2, 6, 8), (2, 6, 8), lambda: causal(6).float() * 0.5),
    "int-padding": ((3, 2, 6, 8), (3, 2, 6, 8), (3, 2, 6, 8), lambda: padded(3, 6).int()),
}
DTYPES = [torch.float32, torch.float64]


def make_case(name, dtype):
    q_shape, k_shape, v_shape, make_mask = SDPA_CASES[name]
    q, k, v = (torch.randn(shape, dtype=dtype) for shape in (q_shape, k_shape, v_shape))
    return q, k, v, None if make_mask is None else make_mask()


# ---------------------------------------------------------------- masks


@pytest.mark.parametrize("T", [1, 2, 7])
def test_causal_mask_is_the_lower_triangle(reference, T):
    mask = reference.attention.causal_mask(T)
    assert mask.dtype == torch.bool and mask.shape == (T, T), f"got {mask.dtype} {tuple(mask.shape)}"
    assert torch.equal(mask, torch.ones(T, T, dtype=torch.bool).tril())


def test_padding_mask_marks_real_tokens(reference):
    tokens = torch.tensor([[4, 9, 0, 0], [7, 0, 3, 0]])
    mask = reference.attention.padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 4), f"got {tuple(mask.shape)}"
    assert torch.equal(mask, (tokens != 0)[:, None, None, :])


# ---------------------------------------------------------------- scaled dot-product attention


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", SDPA_CASES)
def test_sdpa_output_matches_builtin(reference, name, dtype):
    q, k, v, mask = make_case(name, dtype)
    output, _ = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    expected, _ = builtin_attention(q, k, v, mask)
    assert output.dtype == dtype, f"output dtype {output.dtype}, inputs {dtype}"
    assert_close(output, expected, f"output ({name}, {dtype})")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", SDPA_CASES)
def test_sdpa_weights_match_builtin(reference, name, dtype):
    q, k, v, mask = make_case(name, dtype)
    _, weights = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    _, expected = builtin_attention(q, k, v, mask)
    assert weights.dtype == dtype, f"weights dtype {weights.dtype}, inputs {dtype}"
    assert_close(weights, expected, f"weights ({name}, {dtype})")


@pytest.mark.parametrize("name", SDPA_CASES)
def test_sdpa_weight_rows_sum_to_one(reference, name):
    q, k, v, mask = make_case(name, torch.float64)
    _, weights = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), f"row sums ({name})")


@pytest.mark.parametrize("name", [name for name, case in SDPA_CASES.items() if case[3] is not None])
def test_sdpa_blocked_weights_are_exactly_zero(reference, name):
    q, k, v, mask = make_case(name, torch.float32)
    _, weights = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    blocked = ~allowed(mask).expand_as(weights)
    assert blocked.any(), "the case blocks nothing"
    leaked = weights[blocked].abs().max().item()
    assert leaked == 0, f"blocked positions got weight up to {leaked} ({name})"


@pytest.mark.parametrize("scale", [1e2, 1e4])
def test_sdpa_stays_finite_for_large_scores(reference, scale):
    q, k, v, mask = make_case("causal-4d", torch.float32)
    q, k = q * scale, k * scale
    output, weights = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all(), "non-finite values: unstable softmax"
    expected_output, expected_weights = builtin_attention(q, k, v, mask)
    assert_close(output, expected_output, f"output at scale {scale}")
    assert_close(weights, expected_weights, f"weights at scale {scale}")


@pytest.mark.parametrize("name", ["4d", "Tq!=Tk", "dv!=dk", "causal-4d", "padding-4d", "float-mask"])
def test_sdpa_gradients_match_builtin(reference, name):
    q, k, v, mask = make_case(name, torch.float64)
    inputs = [t.requires_grad_() for t in (q, k, v)]
    output, weights = reference.attention.scaled_dot_product_attention(*inputs, mask)
    expected_output, expected_weights = builtin_attention(*inputs, mask)
    g_out, g_w = torch.randn_like(output), torch.randn_like(weights)  # random upstream grads
    got = torch.autograd.grad((output * g_out).sum() + (weights * g_w).sum(), inputs)
    expected = torch.autograd.grad((expected_output * g_out).sum() + (expected_weights * g_w).sum(), inputs)
    for input_name, g, e in zip("qkv", got, expected):
        assert_close(g, e, f"gradient w.r.t. {input_name} ({name})")


@pytest.mark.parametrize("name", ["4d", "causal-4d", "float-mask"])
def test_sdpa_does_not_modify_inputs(reference, name):
    q, k, v, mask = make_case(name, torch.float32)
    tensors = [t for t in (q, k, v, mask) if t is not None]
    copies = [t.clone() for t in tensors]
    versions = [t._version for t in tensors]  # bumped by any in-place op, even one that restores values
    reference.attention.scaled_dot_product_attention(q, k, v, mask)
    for t, copy, version in zip(tensors, copies, versions):
        assert torch.equal(t, copy) and t._version == version, "an input was modified in place"


def test_sdpa_module_matches_function(reference):
    q, k, v, mask = make_case("causal-4d", torch.float32)
    got = reference.attention.ScaledDotProductAttention()(q, k, v, mask)
    expected = reference.attention.scaled_dot_product_attention(q, k, v, mask)
    for part, g, e in zip(("output", "weights"), got, expected):
        assert torch.equal(g, e), f"ScaledDotProductAttention {part} differs from the function"


# ---------------------------------------------------------------- multi-head attention


def paired_mha(reference, d_model, n_heads, bias, dtype):
    """The reference MultiHeadAttention and an nn.MultiheadAttention holding the same weights."""
    ours = reference.mha.MultiHeadAttention(d_model, n_heads, bias=bias).to(dtype)
    theirs = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).to(dtype)
    projections = (ours.w_q, ours.w_k, ours.w_v)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))  # (3 d_model, d_model)
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
            theirs.out_proj.bias.copy_(ours.w_o.bias)
    return ours, theirs


def builtin_mha(module, query, key, value, mask_kind, mask):
    """Call nn.MultiheadAttention with our mask turned into its True = BLOCKED convention."""
    kwargs = {}
    if mask_kind == "causal":
        kwargs["attn_mask"] = ~mask  # (T_q, T_k)
    elif mask_kind == "padding":
        kwargs["key_padding_mask"] = ~mask[:, 0, 0, :]  # (B, T_k)
    return module(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)


MHA_CASES = [  # (attention kind, mask kind)
    ("self", None),
    ("self", "causal"),
    ("self", "padding"),
    ("cross", None),
    ("cross", "padding"),
]


def make_mha_inputs(kind, mask_kind, B=3, T_q=5, T_k=7, d_model=12, dtype=torch.float32):
    if kind == "self":
        query = key = value = torch.randn(B, T_q, d_model, dtype=dtype)
        T_k = T_q
    else:  # cross: the query attends another sequence, and key != value
        query = torch.randn(B, T_q, d_model, dtype=dtype)
        key, value = torch.randn(2, B, T_k, d_model, dtype=dtype)
    mask = {None: None, "causal": causal(T_q), "padding": padded(B, T_k)}[mask_kind]
    return query, key, value, mask


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("kind, mask_kind", MHA_CASES)
def test_mha_matches_builtin(reference, kind, mask_kind, bias, dtype):
    ours, theirs = paired_mha(reference, d_model=12, n_heads=3, bias=bias, dtype=dtype)
    query, key, value, mask = make_mha_inputs(kind, mask_kind, dtype=dtype)
    output, weights = ours(query, key, value, mask)
    expected_output, expected_weights = builtin_mha(theirs, query, key, value, mask_kind, mask)
    assert output.shape == (3, 5, 12) and output.dtype == dtype, f"got {output.dtype} {tuple(output.shape)}"
    assert_close(output, expected_output, f"MHA output ({kind}, mask={mask_kind})")
    assert_close(weights, expected_weights, f"per-head MHA weights ({kind}, mask={mask_kind})")


@pytest.mark.parametrize("kind, mask_kind", [("self", "causal"), ("cross", "padding")])
def test_mha_gradients_match_builtin(reference, kind, mask_kind):
    ours, theirs = paired_mha(reference, d_model=12, n_heads=3, bias=True, dtype=torch.float64)
    query, key, value, mask = make_mha_inputs(kind, mask_kind, dtype=torch.float64)
    inputs = [t.requires_grad_() for t in {id(t): t for t in (query, key, value)}.values()]  # self: one tensor
    output, _ = ours(query, key, value, mask)
    expected, _ = builtin_mha(theirs, query, key, value, mask_kind, mask)
    g = torch.randn_like(output)
    got = torch.autograd.grad((output * g).sum(), inputs)
    want = torch.autograd.grad((expected * g).sum(), inputs)
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, f"MHA gradient w.r.t. input {i} ({kind}, mask={mask_kind})")


def test_mha_rejects_indivisible_sizes(reference):
    with pytest.raises(reference.mha.DimensionMismatchError) as info:
        reference.mha.MultiHeadAttention(16, 5)
    assert "16" in str(info.value) and "5" in str(info.value), f"message must name both sizes: {info.value}"
    assert isinstance(info.value, ValueError), "DimensionMismatchError must be a ValueError"


@pytest.mark.parametrize("d_model, n_heads", [(0, 1), (8, 0), (-8, 2), (8, -2)])
def test_mha_rejects_non_positive_sizes(reference, d_model, n_heads):
    with pytest.raises(ValueError):
        reference.mha.MultiHeadAttention(d_model, n_heads)


@pytest.mark.parametrize("bias", [True, False])
def test_mha_has_exactly_four_projections(reference, bias):
    module = reference.mha.MultiHeadAttention(12, 3, bias=bias)
    assert (module.d_model, module.n_heads, module.d_k) == (12, 3, 4)
    assert sorted(name for name, _ in module.named_children()) == ["w_k", "w_o", "w_q", "w_v"]
    for name, layer in module.named_children():
        assert isinstance(layer, nn.Linear) and layer.weight.shape == (12, 12), f"{name} is {layer}"
        assert (layer.bias is not None) == bias, f"{name}: bias should be {bias}"


def test_split_heads_gives_head_i_features_i_times_dk(reference):
    module = reference.mha.MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    heads = module.split_heads(x)
    assert heads.shape == (2, 3, 5, 4), f"got {tuple(heads.shape)}"
    for i in range(3):
        assert torch.equal(heads[:, i], x[..., i * 4:(i + 1) * 4]), f"head {i} holds the wrong features"


def test_merge_heads_inverts_split_heads(reference):
    module = reference.mha.MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    assert torch.equal(module.merge_heads(module.split_heads(x)), x), "merge_heads(split_heads(x)) != x"
    heads = torch.randn(2, 5, 3, 4).transpose(1, 2)  # (B, h, T, d_k), not contiguous
    assert torch.equal(module.split_heads(module.merge_heads(heads)), heads), "split_heads(merge_heads(y)) != y"
