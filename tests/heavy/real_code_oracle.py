"""An independent judge of submissions, built from torch's own attention (never the kit's reference).

    python tests/heavy/real_code_oracle.py OUT.json FOLDER [FOLDER...]

For each folder it imports attention.py and mha.py, checks every part of the contract against
``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``, and writes
``{folder: {part: [what is wrong, ...]}}`` (an empty list: the part is right). The weights come from
the built-in too: attention applied to an identity matrix as the values returns the weights.

Its cases and seeds are its own (not the hidden suite's); its tolerances are stated below. The
multi-head parts follow the contract's fairness rule: MultiHeadAttention is judged on top of the
submission's own attention first, and, if that fails, on top of the built-in attention (a bug in
attention.py belongs to the attention parts); as in the grader, only the contract's names are swapped, so a
helper class mha.py imports from attention.py keeps its bug there. Each part's cases vary what that part is about: d_v != d_k
is the attention part's, so the gradients part keeps d_v == d_k; a crash on a numeric mask is the
attention part's, so the in-place check judges only the calls that ran. All folders run in one process.
"""
import ast
import importlib
import json
import sys
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

torch.set_num_threads(1)

BUILTIN_SDPA = F.scaled_dot_product_attention
BUILTIN_MHA = torch.nn.MultiheadAttention
TOLERANCE = {  # float64 results must be float64-accurate: a float32 intermediate shows at about 1e-8
    torch.float32: {"atol": 1e-5, "rtol": 1e-4},
    torch.float64: {"atol": 1e-11, "rtol": 1e-9},
}
FORBIDDEN_NAMES = {"MultiheadAttention", "multi_head_attention_forward"}
CONTRACT = ("causal_mask", "padding_mask", "scaled_dot_product_attention", "ScaledDotProductAttention")

_watching = {"on": False, "calls": []}


class Wrong(Exception):
    """One check of a part failed."""


class unwatched:
    """The oracle's own calls of the built-ins are not the submission's."""

    def __enter__(self):
        self.was, _watching["on"] = _watching["on"], False

    def __exit__(self, *exc):
        _watching["on"] = self.was


# --- the built-in truth --------------------------------------------------------------------------

def allowed(mask):
    return None if mask is None else (mask if mask.dtype == torch.bool else mask != 0)


def builtin_attention(query, key, value, mask=None):
    """(output, weights) from F.scaled_dot_product_attention alone."""
    allow = allowed(mask)
    output = BUILTIN_SDPA(query, key, value, attn_mask=allow)
    eye = torch.eye(key.size(-2), dtype=query.dtype).expand(*key.shape[:-1], key.size(-2))
    weights = BUILTIN_SDPA(query, key, eye, attn_mask=allow)
    return output, weights


def builtin_mha(module, query, key, value, mask):
    """nn.MultiheadAttention holding the submission's parameters (read by the contract's names)."""
    d_model, n_heads = module.d_model, module.n_heads
    bias = module.w_q.bias is not None
    with unwatched():
        reference = BUILTIN_MHA(d_model, n_heads, bias=bias, batch_first=True, dtype=query.dtype)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([module.w_q.weight, module.w_k.weight, module.w_v.weight]))
        reference.out_proj.weight.copy_(module.w_o.weight)
        if bias:
            reference.in_proj_bias.copy_(torch.cat([module.w_q.bias, module.w_k.bias, module.w_v.bias]))
            reference.out_proj.bias.copy_(module.w_o.bias)
    attn_mask = key_padding_mask = None
    if mask is not None and mask.dim() == 2:  # (T_q, T_k); nn.MultiheadAttention's True means "blocked"
        attn_mask = ~allowed(mask)
    elif mask is not None:  # (B, 1, 1, T_k) padding
        key_padding_mask = ~allowed(mask)[:, 0, 0, :]
    with unwatched():
        return reference, reference(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                    need_weights=True, average_attn_weights=False)


# --- inputs ----------------------------------------------------------------------------------------

def randn(*shape, seed, dtype=torch.float32, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=generator, dtype=torch.float64) * scale).to(dtype)


def qkv(lead, t_q, t_k, d_k, d_v, seed, dtype=torch.float32, scale=1.0):
    return (randn(*lead, t_q, d_k, seed=seed, dtype=dtype, scale=scale),
            randn(*lead, t_k, d_k, seed=seed + 1, dtype=dtype, scale=scale),
            randn(*lead, t_k, d_v, seed=seed + 2, dtype=dtype))


def holes(shape, seed):
    """A random 0/1 pattern where every query keeps its first key."""
    keep = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5
    keep[..., 0] = True
    return keep


def tril(t):
    return torch.ones(t, t, dtype=torch.bool).tril()


def padding(lengths, total):
    return (torch.arange(total)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


# --- comparing -------------------------------------------------------------------------------------

def same(got, want, what):
    if not isinstance(got, torch.Tensor):
        raise Wrong(f"{what}: got {type(got).__name__}, expected a tensor")
    if got.shape != want.shape or got.dtype != want.dtype:
        raise Wrong(f"{what}: got {tuple(got.shape)} {got.dtype}, expected {tuple(want.shape)} {want.dtype}")
    tol = TOLERANCE[want.dtype] if want.is_floating_point() else {"atol": 0, "rtol": 0}
    if not torch.allclose(got.double(), want.double(), equal_nan=False, **tol):
        error = (got.double() - want.double()).abs().nan_to_num(float("inf")).max().item()
        raise Wrong(f"{what}: max abs error {error:.3g}")


def pair(result, what):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Wrong(f"{what}: should return (output, weights)")
    return result


# --- the parts -------------------------------------------------------------------------------------

def check_masks(lab):
    for t in (1, 4, 7):
        same(lab.attention.causal_mask(t), tril(t), f"causal_mask({t})")
    same(lab.attention.causal_mask(3, device="cpu"), tril(3), "causal_mask(3, device='cpu')")
    try:  # made where asked: a mask made on the CPU whatever `device` says cannot pass for a meta tensor
        meta = lab.attention.causal_mask(3, device="meta")
    except Exception as err:  # e.g. .type(torch.BoolTensor) copies to the CPU, which a meta tensor cannot
        raise Wrong(f"causal_mask(3, device='meta'): {type(err).__name__}: {err}") from None
    if not isinstance(meta, torch.Tensor) or meta.device.type != "meta" or meta.shape != (3, 3) or meta.dtype != torch.bool:
        raise Wrong(f"causal_mask(3, device='meta'): got {meta!r}, expected a (3, 3) bool tensor on the meta device")
    tokens = torch.tensor([[4, 9, 9, 0, 0], [3, 0, 7, 1, 0], [2, 2, 2, 2, 2]])
    for pad_id in (0, 2, 9):
        same(lab.attention.padding_mask(tokens, pad_id), (tokens != pad_id)[:, None, None, :],
             f"padding_mask(pad_id={pad_id})")
    same(lab.attention.padding_mask(tokens[:1], 0), (tokens[:1] != 0)[:, None, None, :], "padding_mask, B = 1")


ATTENTION_CASES = [  # (what, lead dims, T_q, T_k, d_k, d_v, mask maker)
    ("3-D", (3,), 4, 4, 8, 8, None),
    ("2-D", (), 5, 5, 4, 4, None),
    ("4-D", (2, 2), 4, 4, 8, 8, None),
    ("T_q != T_k", (2,), 2, 6, 4, 4, None),
    ("d_v != d_k", (2,), 4, 5, 8, 2, None),
    ("one position", (3,), 1, 1, 4, 4, None),
    ("(T, T) bool causal, 3-D", (2,), 5, 5, 8, 8, lambda s: tril(5)),
    ("(T, T) bool causal, 4-D", (2, 3), 4, 4, 4, 4, lambda s: tril(4)),
    ("(B, 1, 1, T) padding, 4-D", (3, 2), 5, 5, 4, 4, lambda s: padding([5, 3, 1], 5)),
    ("random int mask", (2,), 4, 6, 8, 8, lambda s: holes((2, 4, 6), s).long()),
    ("random float mask", (2,), 4, 6, 8, 8, lambda s: holes((2, 4, 6), s).float()),
    ("(T, T) int causal", (2,), 5, 5, 8, 8, lambda s: tril(5).int()),
    ("(T, T) float causal", (2, 2), 6, 6, 4, 4, lambda s: tril(6).double()),
]


def check_attention(lab):
    for n, (what, lead, t_q, t_k, d_k, d_v, make) in enumerate(ATTENTION_CASES):
        q, k, v = qkv(lead, t_q, t_k, d_k, d_v, seed=1000 + 10 * n)
        mask = make(n) if make else None
        want_out, want_weights = builtin_attention(q, k, v, mask)
        given = None if mask is None else mask.clone()  # the oracle's own checks never see an edit made in place
        out, weights = pair(lab.attention.scaled_dot_product_attention(q, k, v, given), what)
        same(weights, want_weights, f"{what}: weights")
        same(out, want_out, f"{what}: output")
        if mask is not None and bool((weights[~allowed(mask).expand_as(weights)] != 0).any()):
            raise Wrong(f"{what}: blocked positions get nonzero weight")
    q, k, v = qkv((2,), 5, 5, 8, 8, seed=1200)
    out, weights = pair(lab.attention.ScaledDotProductAttention()(q, k, v, tril(5)), "the module")
    want_out, want_weights = builtin_attention(q, k, v, tril(5))
    same(weights, want_weights, "ScaledDotProductAttention: weights")
    same(out, want_out, "ScaledDotProductAttention: output")


def own_rank(sdpa):
    """``sdpa`` itself when it takes 3-D inputs, else ``sdpa`` called on them as (B, 1, T, d) 4-D inputs: code that
    takes one rank only is the attention part's (its layout cases), so the gradients part judges it at that rank."""
    q, k, v = qkv((2,), 3, 3, 4, 4, seed=1299)
    try:
        output, weights = pair(sdpa(q, k, v, None), "rank")
        if output.shape == q.shape and weights.shape == (2, 3, 3):
            return sdpa
    except Exception:  # noqa: BLE001 - any failure at 3-D: try 4-D
        pass

    def at_4d(query, key, value, mask=None):
        lift = [t if t is None or t.dim() != 3 else t.unsqueeze(1) for t in (query, key, value, mask)]
        output, weights = pair(sdpa(*lift), "4-D")
        return output.squeeze(1), weights.squeeze(1)
    return at_4d


def check_gradients(lab):
    """Judged on the submission's own forward, as the part is about the dtype, stability and the backward:
    a wrong forward is the attention part's (one defect, one charge), and so are leading dims (own_rank)."""
    sdpa = own_rank(lab.attention.scaled_dot_product_attention)
    q, k, v = qkv((2,), 5, 5, 8, 8, seed=1300, dtype=torch.float64)
    got = pair(sdpa(q, k, v, tril(5)), "float64")
    if any(t.dtype != torch.float64 for t in got):
        raise Wrong(f"float64 inputs give {[str(t.dtype) for t in got]}")
    want = builtin_attention(q, k, v, tril(5))
    if all(near(g, w) for g, w in zip(got, want)):  # right values: then float64-accurate
        same(got[1], want[1], "float64 causal: weights")
        same(got[0], want[0], "float64 causal: output")
    elif not all(near(g, w) for g, w in zip(got, pair(sdpa(q.float(), k.float(), v.float(), tril(5)), "float32"))):
        raise Wrong("float64 results differ from the same code's float32 results")
    for n, (dtype, shift) in enumerate(((torch.float32, 300.0), (torch.float64, -1000.0))):
        q, k, v = qkv((2,), 6, 6, 16, 16, seed=1310 + 10 * n, dtype=dtype)
        before = pair(sdpa(q, k, v, None), "large scores")[0]
        after, weights = pair(sdpa(*every_score_shifted(q, k, shift), v, None), "large scores")
        if not (torch.isfinite(after).all() and torch.isfinite(weights).all()):
            raise Wrong(f"scores shifted by {shift:g}, {dtype}: inf/NaN")
        if not near(after, before, 1e-3, 1e-3):
            raise Wrong(f"scores shifted by {shift:g}, {dtype}: the output changed (softmax ignores a constant shift)")
    for n, mask in enumerate((None, mixed(5))):
        q, k, v = qkv((2,), 5, 5, 8, 8, seed=1330 + 10 * n, dtype=torch.float64)
        result = pair(sdpa(q, k, v, mask), "gradients")
        weights = [randn(*t.shape, seed=1335 + 3 * n + i, dtype=torch.float64).masked_fill(~torch.isfinite(t), 0)
                   for i, t in enumerate(result)]  # inf/NaN values (-inf scores returned as weights) left out

        def projected(a, b, c):
            return sum(torch.where(w != 0, t * w, 0.0).sum() for t, w in zip(pair(sdpa(a, b, c, mask), "gradients"), weights))

        for name, g in zip(("query", "key", "value"), gradients(lambda a, b, c: (projected(a, b, c),), (q, k, v), (1.0,))):
            if g is None or not g.any():
                raise Wrong(f"no gradient reaches the {name}")
        for i, name in enumerate(("query", "key", "value")):
            def along(x, i=i):
                return projected(*[x if j == i else t for j, t in enumerate((q, k, v))])
            # loose enough for a float32-accurate forward: precision is judged above
            if not torch.autograd.gradcheck(along, ((q, k, v)[i].clone().requires_grad_(),), eps=1e-3, atol=1e-4,
                                            rtol=1e-2, raise_exception=False):
                raise Wrong(f"the gradient w.r.t. the {name} (mask {mask is not None}) disagrees with finite "
                            "differences of the same forward")
    for n, numeric in enumerate((False, True)):  # a bool mask, then a float one (a crash there is not in place)
        q, k, v = qkv((2,), 5, 5, 8, 8, seed=1350 + 10 * n)
        mask = holes((2, 5, 5), 1351 + 10 * n)
        inputs = (q, k, v, mask.float() if numeric else mask)
        unchanged_after(lambda: sdpa(*inputs), inputs, "the call", tolerate_crash=numeric)


def near(got, want, atol=1e-4, rtol=1e-3):
    """Same shape and values to float32 accuracy (NaN where NaN)."""
    return (isinstance(got, torch.Tensor) and got.shape == want.shape
            and torch.allclose(got.double(), want.double(), atol=atol, rtol=rtol, equal_nan=True))


def every_score_shifted(q, k, shift):
    """(q + a, k + b): a orthogonal to the keys, b to the queries (null spaces from an SVD), a.b = shift sqrt(d)."""
    def null_direction(rows):
        _, _, vh = torch.linalg.svd(rows.double())  # rows (..., T, d): the last d - T right singular vectors
        return vh[..., rows.size(-2):, :].sum(-2)
    a, b = null_direction(k), null_direction(q)
    dot = (a * b).sum(-1, keepdim=True)
    a = a * shift * q.size(-1) ** 0.5 / dot
    return (q.double() + a[..., None, :]).to(q.dtype), (k.double() + b[..., None, :]).to(k.dtype)


def mixed(t):
    """(T, T), T >= 4: every row and column allows two keys and blocks two, as does the inverse."""
    offset = (torch.arange(t)[None, :] - torch.arange(t)[:, None]) % t
    return (offset == 0) | (offset == 2)


def unchanged_after(call, inputs, who, tolerate_crash=False):
    before = [t.clone() for t in inputs]
    try:
        call()
    except Exception:  # noqa: BLE001 - a crash is judged by the part that meets it
        if not tolerate_crash:
            raise
        return
    for name, a, b in zip(("query", "key", "value", "mask"), before, inputs):
        if not torch.equal(a, b):
            raise Wrong(f"{who} modified its {name} in place")


def gradients(function, inputs, grad_outputs):
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    outputs = function(*leaves)
    total = sum((o * g).sum() for o, g in zip(outputs, grad_outputs) if isinstance(o, torch.Tensor) and o.requires_grad)
    if not isinstance(total, torch.Tensor):
        return [None] * len(leaves)
    return torch.autograd.grad(total, leaves, allow_unused=True)


def check_mha_init(lab):
    MHA = lab.mha.MultiHeadAttention
    for d_model, n_heads in ((16, 4), (12, 3), (8, 8), (6, 1)):
        module = MHA(d_model, n_heads)
        got = tuple(getattr(module, name, None) for name in ("d_model", "n_heads", "d_k"))
        if got != (d_model, n_heads, d_model // n_heads) or type(got[2]) is not int:
            raise Wrong(f"MultiHeadAttention({d_model}, {n_heads}) stores {got}")
    for bias in (True, False):
        module = MHA(16, 4, bias=bias)
        linears = {name: (m.in_features, m.out_features, m.bias is not None)
                   for name, m in module.named_modules() if isinstance(m, torch.nn.Linear)}
        if linears != {name: (16, 16, bias) for name in ("w_q", "w_k", "w_v", "w_o")}:
            raise Wrong(f"bias={bias}: linear layers {linears}")
        names = {name for name, _ in module.named_parameters()}
        if names != {f"w_{p}.{kind}" for p in "qkvo" for kind in (("weight", "bias") if bias else ("weight",))}:
            raise Wrong(f"bias={bias}: parameters {sorted(names)}")
    try:
        MHA(16, 5)
    except lab.mha.DimensionMismatchError as error:
        if not isinstance(error, ValueError) or "16" not in str(error) or "5" not in str(error):
            raise Wrong(f"MultiHeadAttention(16, 5) raised {error!r}") from None
    else:
        raise Wrong("MultiHeadAttention(16, 5) raised no DimensionMismatchError")
    for args in ((0, 4), (16, 0), (-8, 2)):
        try:
            MHA(*args)
        except ValueError:
            continue
        raise Wrong(f"MultiHeadAttention{args} raised no ValueError")


def check_heads(lab):
    module = lab.mha.MultiHeadAttention(24, 4)
    x = torch.arange(3 * 7 * 24, dtype=torch.float32).reshape(3, 7, 24)
    heads = x.unflatten(-1, (4, 6)).transpose(1, 2)
    same(module.split_heads(x), heads, "split_heads")
    same(module.merge_heads(heads), x, "merge_heads")
    same(module.merge_heads(module.split_heads(x)), x, "merge_heads(split_heads(x))")


MHA_CASES = [  # (what, d_model, n_heads, B, T_q, T_k, cross, mask, bias, dtype)
    ("self, no mask", 16, 4, 2, 5, 5, False, None, True, torch.float32),
    ("self, causal", 12, 3, 3, 6, 6, False, "causal", True, torch.float32),
    ("cross, padding", 16, 2, 3, 4, 7, True, "padding", True, torch.float32),
    ("cross, no bias", 8, 2, 2, 5, 6, True, None, False, torch.float32),
    ("one head", 8, 1, 2, 5, 5, False, "causal", True, torch.float32),
    ("d_k = 1", 6, 6, 2, 4, 4, False, None, True, torch.float32),
    ("float64, causal", 24, 3, 2, 5, 5, False, "causal", True, torch.float64),
]


def mha_inputs(case, seed):
    what, d_model, n_heads, batch, t_q, t_k, cross, mask, bias, dtype = case
    x = randn(batch, t_q, d_model, seed=seed, dtype=dtype)
    key = randn(batch, t_k, d_model, seed=seed + 1, dtype=dtype) if cross else x
    value = randn(batch, t_k, d_model, seed=seed + 2, dtype=dtype) if cross else x
    made = {None: None, "causal": tril(t_q), "padding": padding([max(1, t_k - 2 * b) for b in range(batch)], t_k)}
    return x, key, value, made[mask]


def seeded_module(lab, d_model, n_heads, bias, dtype, seed):
    module = lab.mha.MultiHeadAttention(d_model, n_heads, bias=bias).to(dtype)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("w_q", "w_k", "w_v", "w_o"):
            layer = getattr(module, name)
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=generator, dtype=torch.float64) / d_model ** 0.5)
            if bias:
                layer.bias.copy_(torch.randn(layer.bias.shape, generator=generator, dtype=torch.float64) / 4)
    return module


def check_mha_forward(lab):
    for n, case in enumerate(MHA_CASES):
        what, d_model, n_heads, _, _, _, cross, _, bias, dtype = case
        query, key, value, mask = mha_inputs(case, seed=2000 + 10 * n)
        module = seeded_module(lab, d_model, n_heads, bias, dtype, seed=2005 + 10 * n)
        _, (want_out, want_weights) = builtin_mha(module, query, key, value, mask)
        inputs = (query, key, value, mask)
        before = [t.clone() for t in inputs if t is not None]
        out, weights = pair(module(query, key, value, mask), what)
        same(weights, want_weights.detach(), f"{what}: weights")
        same(out, want_out.detach(), f"{what}: output")
        if mask is not None and cross:
            for name, a, b in zip(("query", "key", "value", "mask"), before, inputs):
                if not torch.equal(a, b):
                    raise Wrong(f"{what}: forward modified its {name} in place")
    case = ("gradients", 16, 4, 2, 4, 6, True, "padding", True, torch.float64)
    query, key, value, mask = mha_inputs(case, seed=2100)
    module = seeded_module(lab, 16, 4, True, torch.float64, seed=2105)
    reference, _ = builtin_mha(module, query, key, value, mask)
    grad_out, grad_weights = randn(2, 4, 16, seed=2110, dtype=torch.float64), randn(2, 4, 4, 6, seed=2111,
                                                                                   dtype=torch.float64)
    for name, (got, want) in zip(("query", "key", "value", "w_q", "w_o"), parameter_gradients(
            module, reference, (query, key, value), mask, (grad_out, grad_weights))):
        if got is None:
            raise Wrong(f"gradients: no gradient reaches {name}")
        same(got, want, f"gradient w.r.t. {name}")


def parameter_gradients(module, reference, inputs, mask, grad_outputs):
    """(got, expected) gradients for the inputs, w_q's and w_o's weights (the built-in's in_proj holds w_q first)."""
    def run(function, params):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        outputs = function(*leaves)
        total = sum((o * g).sum() for o, g in zip(outputs, grad_outputs) if isinstance(o, torch.Tensor) and o.requires_grad)
        return torch.autograd.grad(total, leaves + params, allow_unused=True)

    got = run(lambda q, k, v: pair(module(q, k, v, mask), "gradients"), [module.w_q.weight, module.w_o.weight])
    attn_mask = ~mask[:, 0, 0, :]
    with unwatched():
            want = run(lambda q, k, v: reference(q, k, v, key_padding_mask=attn_mask, need_weights=True,
                                             average_attn_weights=False),
                   [reference.in_proj_weight, reference.out_proj.weight])
    d = module.d_model
    want = list(want[:3]) + [want[3][:d], want[4]]
    return zip(got, want)


def with_builtin_attention(lab):
    """Swap the submission's attention for the built-in: in attention.py and wherever mha.py bound it."""
    originals = {name: getattr(lab.attention, name, None) for name in CONTRACT}

    class BuiltinModule(torch.nn.Module):
        def forward(self, query, key, value, mask=None):
            return builtin_attention(query, key, value, mask)

    swaps = {"scaled_dot_product_attention": builtin_attention, "ScaledDotProductAttention": BuiltinModule}
    for name, replacement in swaps.items():
        setattr(lab.attention, name, replacement)
        for attr, value in list(vars(lab.mha).items()):
            if value is not None and value is originals[name]:
                setattr(lab.mha, attr, replacement)


def check_rules(lab):
    if _watching["calls"]:
        raise Wrong(f"called {sorted(set(_watching['calls']))} while running")
    for module in (lab.attention, lab.mha):
        for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if name in FORBIDDEN_NAMES:
                raise Wrong(f"{Path(module.__file__).name} names {name}")
            if isinstance(node, ast.Attribute) and node.attr == "scaled_dot_product_attention":
                owner = ast.unparse(node.value)
                if owner.split(".")[-1] in ("F", "functional"):
                    raise Wrong(f"{Path(module.__file__).name} calls {owner}.scaled_dot_product_attention")


# --- running ---------------------------------------------------------------------------------------

class Lab:
    def __init__(self, folder):
        for name in ("attention", "mha"):
            sys.modules.pop(name, None)
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
        try:
            self.attention = importlib.import_module("attention")
            self.mha = importlib.import_module("mha")
        finally:
            sys.path.remove(str(folder))


def watched(check, lab):
    """Run one part's check with the tripwires armed; a forbidden call makes the part wrong."""
    _watching["on"] = True
    try:
        check(lab)
        return []
    except Wrong as wrong:
        return [str(wrong)]
    except Exception as error:  # noqa: BLE001 - a crash is a wrong answer
        where = traceback.extract_tb(error.__traceback__)[-1]
        return [f"raised {type(error).__name__}: {str(error)[:200]} ({Path(where.filename).name}:{where.lineno})"]
    finally:
        _watching["on"] = False


def judge(folder):
    lab = Lab(folder)
    verdict = {}
    for part, check in (("masks", check_masks), ("attention", check_attention), ("gradients", check_gradients),
                        ("mha_init", check_mha_init), ("heads", check_heads)):
        del _watching["calls"][:]
        verdict[part] = watched(check, lab) + forbidden_calls(part)
    del _watching["calls"][:]
    own = watched(check_mha_forward, lab) + forbidden_calls("mha_forward")
    verdict["mha_forward"] = own
    if own:  # judged again on top of the built-in attention
        lab = Lab(folder)
        with_builtin_attention(lab)
        del _watching["calls"][:]
        verdict["mha_forward"] = watched(check_mha_forward, lab) + forbidden_calls("mha_forward")
    rules_calls = []
    lab = Lab(folder)
    for check in (check_attention, check_mha_forward):
        del _watching["calls"][:]
        watched(check, lab)
        rules_calls += _watching["calls"]
    _watching["calls"][:] = rules_calls
    verdict["rules"] = watched(check_rules, lab)
    return verdict


def forbidden_calls(part):
    calls = sorted(set(_watching["calls"]))
    return [f"{part}: called the forbidden {', '.join(calls)}"] if calls else []


def install_tripwires():
    def tripwire(name, original):
        def wrapper(*args, **kwargs):
            if _watching["on"]:
                _watching["calls"].append(name)
            return original(*args, **kwargs)
        return wrapper

    F.scaled_dot_product_attention = tripwire("F.scaled_dot_product_attention", BUILTIN_SDPA)
    F.multi_head_attention_forward = tripwire("F.multi_head_attention_forward", F.multi_head_attention_forward)
    torch.nn.MultiheadAttention.__init__ = tripwire("nn.MultiheadAttention", torch.nn.MultiheadAttention.__init__)


def main(out, *folders):
    install_tripwires()
    Path(out).write_text(json.dumps({folder: judge(folder) for folder in folders}, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])
