"""Run a fixed set of contract probes on submission folders, without the grader.

    python tests/variant_checker.py OUT.pt FOLDER [FOLDER...]

For each folder it imports attention.py and mha.py (folder first on sys.path, fresh
modules each time), calls every probe and saves ``{folder: {probe: record}}`` to OUT.pt,
where a record is ``{"part", "value", "forbidden"}``: the probe's result (tensors and
plain values, or "raised <Error>") and the forbidden built-ins called while it ran.
The parent compares records with the reference's (tests/grading/test_variant_table.py).
All folders share one process, so torch is imported once.
"""
import ast
import importlib
import sys
from pathlib import Path

import torch

torch.set_num_threads(1)

STUDENT_MODULES = ("attention", "mha")
FORBIDDEN_ANYWHERE = {"MultiheadAttention", "multi_head_attention_forward"}
PROJECTIONS = ("w_q", "w_k", "w_v", "w_o")

_forbidden_calls = []


def _tripwire(name, original):
    def wrapper(*args, **kwargs):
        _forbidden_calls.append(name)
        return original(*args, **kwargs)
    return wrapper


def install_tripwires():
    """Record every call of a forbidden built-in (the call still works)."""
    F = torch.nn.functional
    for attr in ("scaled_dot_product_attention", "multi_head_attention_forward"):
        setattr(F, attr, _tripwire(f"F.{attr}", getattr(F, attr)))
    cls = torch.nn.MultiheadAttention
    cls.__init__ = _tripwire("nn.MultiheadAttention", cls.__init__)


# --- inputs --------------------------------------------------------------------------------

def randn(*shape, dtype=torch.float64, scale=1.0):
    return torch.randn(*shape, dtype=dtype) * scale


def qkv(lead, t_q, t_k, d_k, d_v, dtype=torch.float64, scale=1.0):
    return (randn(*lead, t_q, d_k, dtype=dtype, scale=scale),
            randn(*lead, t_k, d_k, dtype=dtype, scale=scale),
            randn(*lead, t_k, d_v, dtype=dtype))


def random_mask(t_q, t_k):
    """A 0/1 mask with the first key always allowed, so no row is fully blocked."""
    mask = torch.rand(t_q, t_k) > 0.5
    mask[:, 0] = True
    return mask


def tril(t):
    return torch.ones(t, t, dtype=torch.bool).tril()


def mha(lab, d_model=16, n_heads=4, bias=True):
    """A float64 MultiHeadAttention with seeded weights copied in by name."""
    model = lab.mha.MultiHeadAttention(d_model, n_heads, bias=bias).double()
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name in PROJECTIONS:
            layer = getattr(model, name)
            layer.weight.copy_(torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / 4)
            if bias:
                layer.bias.copy_(torch.randn(d_model, generator=gen, dtype=torch.float64))
    return model


def dtype_name(tensor):
    return str(tensor.dtype) if isinstance(tensor, torch.Tensor) else type(tensor).__name__


# --- probes: name -> (part, fn(lab)) -------------------------------------------------------

PROBES = {}


def probe(part):
    def register(fn):
        PROBES[fn.__name__] = (part, fn)
        return fn
    return register


@probe("masks")
def causal_mask_1(lab):
    return lab.attention.causal_mask(1)


@probe("masks")
def causal_mask_5(lab):
    return lab.attention.causal_mask(5)


@probe("masks")
def padding_mask_pad_0(lab):
    return lab.attention.padding_mask(torch.tensor([[5, 3, 0, 0], [7, 0, 2, 0]]), 0)


@probe("masks")
def padding_mask_pad_1(lab):
    return lab.attention.padding_mask(torch.tensor([[1, 4, 4, 1, 2]]), 1)


@probe("attention")
def sdpa_2d(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((), 3, 5, 4, 6))


@probe("attention")
def sdpa_3d(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((2,), 3, 5, 4, 6))


@probe("attention")
def sdpa_4d(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((2, 3), 4, 5, 8, 2))


@probe("attention")
def sdpa_bool_causal_mask(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((2, 2), 5, 5, 4, 4), mask=tril(5))


@probe("attention")
def sdpa_bool_padding_mask(lab):
    keep = torch.tensor([[True, True, True, False], [True, False, True, False]])
    return lab.attention.scaled_dot_product_attention(*qkv((2, 2), 3, 4, 4, 4), mask=keep[:, None, None, :])


@probe("attention")
def sdpa_int_mask(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((2,), 4, 6, 4, 3), mask=random_mask(4, 6).long())


@probe("attention")
def sdpa_float_mask(lab):
    return lab.attention.scaled_dot_product_attention(*qkv((2,), 4, 6, 4, 3), mask=random_mask(4, 6).double())


@probe("attention")
def sdpa_numeric_mask_other_values(lab):
    """Nonzero = may attend: a float mask whose allowed keys hold 2.5 and -1 as well as 1."""
    mask = random_mask(4, 6).double() * torch.tensor([1.0, 2.5, -1.0, 1.0, 2.5, -1.0])
    return lab.attention.scaled_dot_product_attention(*qkv((2,), 4, 6, 4, 3), mask=mask)


@probe("attention")
def sdpa_blocked_weights_exactly_zero(lab):
    """Blocked keys get a weight of exactly 0 (a finite fill such as -100 leaks a tiny weight)."""
    mask = random_mask(4, 6)
    _, weights = lab.attention.scaled_dot_product_attention(*qkv((2,), 4, 6, 4, 3), mask=mask)
    return bool((weights[~mask.expand_as(weights)] == 0).all())


@probe("attention")
def module_with_mask(lab):
    return lab.attention.ScaledDotProductAttention()(*qkv((2,), 5, 5, 4, 4), mask=tril(5))


@probe("gradients")
def sdpa_grads(lab):
    q, k, v = (t.requires_grad_() for t in qkv((2,), 4, 5, 4, 3))
    output, _ = lab.attention.scaled_dot_product_attention(q, k, v, mask=random_mask(4, 5))
    output.backward(torch.randn_like(output))
    return tuple("no grad" if t.grad is None else t.grad for t in (q, k, v))


@probe("gradients")
def sdpa_float32_dtype(lab):
    output, weights = lab.attention.scaled_dot_product_attention(*qkv((2,), 3, 4, 4, 4, dtype=torch.float32))
    return dtype_name(output), dtype_name(weights), output, weights


@probe("gradients")
def sdpa_float64_dtype(lab):
    output, weights = lab.attention.scaled_dot_product_attention(*qkv((2,), 3, 4, 4, 4))
    return dtype_name(output), dtype_name(weights)


@probe("gradients")
def sdpa_large_scores(lab):
    q, k, v = qkv((2,), 4, 4, 8, 4, dtype=torch.float32, scale=30.0)
    return lab.attention.scaled_dot_product_attention(q, k, v, mask=tril(4))


@probe("gradients")
def sdpa_inputs_unchanged(lab):
    inputs = (*qkv((2,), 4, 4, 4, 4), random_mask(4, 4).double())
    before = [t.clone() for t in inputs]
    lab.attention.scaled_dot_product_attention(*inputs)
    return tuple(torch.equal(a, b) for a, b in zip(before, inputs))


@probe("gradients")
def sdpa_inputs_unchanged_bool_mask(lab):
    inputs = (*qkv((2,), 4, 4, 4, 4), random_mask(4, 4))
    before = [t.clone() for t in inputs]
    lab.attention.scaled_dot_product_attention(*inputs)
    return tuple(torch.equal(a, b) for a, b in zip(before, inputs))


@probe("gradients")
def sdpa_float64_accuracy(lab):
    """The float64 output's error against softmax(Q K^T / sqrt(d_k)) V in float64, times 1e10: a float32 step shows."""
    q, k, v = qkv((2,), 3, 4, 8, 8)
    output, _ = lab.attention.scaled_dot_product_attention(q, k, v)
    own = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ v
    return ((output - own).abs().max() * 1e10).round()


@probe("mha_init")
def dimension_mismatch(lab):
    try:
        lab.mha.MultiHeadAttention(16, 5)
    except Exception as error:  # noqa: BLE001 - the type is the result
        names_both = "16" in str(error) and "5" in str(error)
        return isinstance(error, lab.mha.DimensionMismatchError), isinstance(error, ValueError), names_both
    return "no error"


@probe("mha_init")
def non_positive_sizes(lab):
    try:
        lab.mha.MultiHeadAttention(0, 2)
    except Exception as error:  # noqa: BLE001 - the type is the result
        return isinstance(error, ValueError)
    return "no error"


@probe("mha_init")
def mha_attributes(lab):
    model = lab.mha.MultiHeadAttention(24, 3, bias=False)
    layers = tuple((name, tuple(getattr(model, name).weight.shape), getattr(model, name).bias is None)
                   for name in PROJECTIONS)
    return model.d_model, model.n_heads, model.d_k, type(model.d_k).__name__, layers


@probe("heads")
def split_heads(lab):
    return mha(lab, 12, 3).split_heads(torch.arange(2 * 5 * 12, dtype=torch.float64).view(2, 5, 12))


@probe("heads")
def merge_heads(lab):
    return mha(lab, 12, 3).merge_heads(torch.arange(2 * 3 * 5 * 4, dtype=torch.float64).view(2, 3, 5, 4))


@probe("mha_forward")
def mha_self_attention(lab):
    x = randn(2, 5, 16)
    return mha(lab)(x, x, x)


@probe("mha_forward")
def mha_causal_mask(lab):
    x = randn(2, 5, 16)
    return mha(lab)(x, x, x, mask=tril(5))


@probe("mha_forward")
def mha_padding_mask(lab):
    x = randn(2, 5, 16)
    keep = torch.tensor([[True] * 5, [True, True, True, False, False]])
    return mha(lab)(x, x, x, mask=keep[:, None, None, :])


@probe("mha_forward")
def mha_cross_attention(lab):
    return mha(lab)(randn(2, 3, 16), randn(2, 6, 16), randn(2, 6, 16))


@probe("mha_forward")
def mha_no_bias(lab):
    return mha(lab, 8, 2, bias=False)(randn(1, 4, 8), randn(1, 6, 8), randn(1, 6, 8))


@probe("mha_forward")
def mha_grads(lab):
    model = mha(lab)
    x = randn(2, 5, 16, scale=1.0).requires_grad_()
    output, _ = model(x, x, x, mask=tril(5))
    output.backward(torch.randn_like(output))
    grads = [getattr(model, name).weight.grad for name in PROJECTIONS] + [x.grad]
    return tuple("no grad" if g is None else g for g in grads)


@probe("rules")
def forbidden_in_source(lab):
    found = set()
    for module in (lab.attention, lab.mha):
        found.update(forbidden_names(Path(module.__file__).read_text()))
    return sorted(found)


def forbidden_names(source):
    """Forbidden built-ins named in the code (not in docstrings or comments)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ANYWHERE:
            yield node.attr
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_ANYWHERE:
            yield node.id
        elif isinstance(node, ast.alias) and node.name in FORBIDDEN_ANYWHERE:
            yield node.name
        elif isinstance(node, ast.Attribute) and node.attr == "scaled_dot_product_attention":
            # the student's own function may be reached as attention.scaled_dot_product_attention
            if ast.unparse(node.value).split(".")[-1] in ("F", "functional"):
                yield "F.scaled_dot_product_attention"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("functional"):
            yield from (f"F.{a.name}" for a in node.names if a.name == "scaled_dot_product_attention")


# --- running -------------------------------------------------------------------------------

class Lab:
    def __init__(self, folder):
        for name in STUDENT_MODULES:
            sys.modules.pop(name, None)
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
        try:
            self.attention = importlib.import_module("attention")
            self.mha = importlib.import_module("mha")
        finally:
            sys.path.remove(str(folder))



# --- extra credit ------------------------------------------------------------------------------

@probe("extra")
def tiled_values(lab):
    q, k, v = qkv((2,), 11, 11, 4, 3)
    return tuple(lab.attention.tiled_attention(q, k, v, causal=c, block_size=b) for c in (False, True) for b in (1, 4, 64))


@probe("extra")
def tiled_uses_little_memory(lab):
    """Whether the peak RSS grows by less than half of one (T, T) float32 matrix (T = 4096)."""
    q, k, v = (torch.randn(4096, 16) for _ in range(3))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    start = _status_kib("VmRSS")
    lab.attention.tiled_attention(q, k, v, causal=True)
    return (_status_kib("VmHWM") - start) * 1024 < 4096 * 4096 * 4 / 2


def _status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


@probe("extra")
def step_outputs(lab):
    model, x, cache, outputs = mha(lab), randn(2, 5, 16), None, []
    for t in range(5):
        y, cache = model.step(x[:, t:t + 1], cache)
        outputs.append(y)
    return torch.cat(outputs, dim=1)


@probe("extra")
def step_projected_shapes(lab):
    model, x, cache, seen = mha(lab), randn(2, 4, 16), None, []
    hooks = [getattr(model, n).register_forward_pre_hook(lambda _, i: seen.append(tuple(i[0].shape))) for n in ("w_k", "w_v")]
    for t in range(4):
        _, cache = model.step(x[:, t:t + 1], cache)
    for hook in hooks:
        hook.remove()
    return tuple(seen), tuple(tuple(c.shape) for c in cache)


def run_probes(folder):
    """Every probe's record for the submission in `folder`."""
    try:
        lab = Lab(folder)
    except Exception as error:  # noqa: BLE001 - a broken import is a result too
        lab, broken = None, f"import raised {type(error).__name__}"
    records = {}
    for name, (part, fn) in PROBES.items():
        torch.manual_seed(0)
        del _forbidden_calls[:]
        try:
            value = fn(lab) if lab else broken
        except Exception as error:  # noqa: BLE001 - a raising probe is a result too
            value = f"raised {type(error).__name__}"
        records[name] = {"part": part, "value": detach(value), "forbidden": sorted(set(_forbidden_calls))}
    return records


def detach(value):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return tuple(detach(v) for v in value)
    return value


def main(out, *folders):
    install_tripwires()
    torch.save({folder: run_probes(folder) for folder in folders}, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
