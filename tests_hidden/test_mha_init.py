"""Part 4: constructing MultiHeadAttention.

The structure is read here from the parameter tensors the child sends (names, shapes, count),
and an exception's ancestry from the submission's own source: never from the child's word.

Construction does not depend on attention.py, so these run on top of a known-good attention
(mode="oracle"): a broken attention.py, which mha.py imports, cannot cost these points.
"""
import pytest
import torch

from autograder.lab import (MISMATCH_HINT, MISMATCH_NOT_RAISED_HINT, PLAIN_VALUE_ERROR_HINT, VALID_SIZE_REFUSED_TOO,
                            StudentError, bias_not_followed, fail, size_not_refused, sizes_stored)

pytestmark = pytest.mark.part("mha_init")

MHA = "mha.MultiHeadAttention"
PROJECTIONS = ("w_q", "w_k", "w_v", "w_o")
# For code that raises its DimensionMismatchError, whose class no longer descends from ValueError.
NOT_A_VALUE_ERROR = ("your DimensionMismatchError is not a ValueError: keep its class as mha.py gives it, "
                     "class DimensionMismatchError(ValueError)")


def _attrs(student, d_model, n_heads, **kwargs):
    return student.call(MHA, init={"args": [d_model, n_heads], "kwargs": kwargs}, attrs=True, mode="oracle").attrs


def _layers(attrs):
    """{layer: {"in", "out", "bias"}} read here from the parameter tensors the child sent (a weight
    (out, in), maybe a bias (out,)), and the parameters that fit no such layer."""
    params = attrs.get("parameters") if isinstance(attrs.get("parameters"), dict) else {}
    layers, odd = {}, []
    for name, tensor in sorted(params.items()):
        layer, _, kind = name.rpartition(".")
        if not isinstance(tensor, torch.Tensor) or kind not in ("weight", "bias"):
            odd.append(name)
        elif kind == "weight" and tensor.dim() == 2:
            layers.setdefault(layer, {"bias": False}).update({"in": tensor.shape[1], "out": tensor.shape[0]})
        elif kind == "bias" and tensor.dim() == 1:
            layers.setdefault(layer, {"bias": False})["bias"] = True
        else:
            odd.append(name)
    return layers, odd


@pytest.mark.points(2)
@pytest.mark.public
def test_sizes_are_stored(student):
    """Construction: d_model, n_heads and d_k = d_model // n_heads are stored"""
    for d_model, n_heads in ((16, 4), (12, 3), (8, 8)):
        attrs = _attrs(student, d_model, n_heads)
        expected = {"d_model": d_model, "n_heads": n_heads, "d_k": d_model // n_heads}
        got = {name: attrs.get(name) for name in expected}
        if got != expected:
            fail(f"MultiHeadAttention({d_model}, {n_heads})", f"attributes are {got}, expected {expected}",
                 sizes_stored(got, expected) or "store self.d_model, self.n_heads and self.d_k = d_model // n_heads")


@pytest.mark.points(3)
def test_exactly_four_projections(student):
    """Construction: w_q, w_k, w_v, w_o are nn.Linear(d_model, d_model) and nothing else"""
    layers, odd = _layers(_attrs(student, 16, 4))
    expected = {name: {"in": 16, "out": 16, "bias": True} for name in PROJECTIONS}
    if layers != expected:
        shapes_right = {name: {**layer, "bias": True} for name, layer in layers.items()} == expected
        fail("MultiHeadAttention(16, 4)", f"linear layers are {layers}, expected {expected}",
             shapes_right and bias_not_followed({name: layers[name]["bias"] for name in expected}, True)
             or "exactly four nn.Linear(d_model, d_model) named w_q, w_k, w_v, w_o; the heads come from splitting, "
                "not from more layers")
    if odd:
        fail("MultiHeadAttention(16, 4)", f"unexpected parameters {odd}", "the four projections hold every parameter")


@pytest.mark.points(1)
def test_bias_can_be_turned_off(student):
    """Construction: bias=False gives projections without bias"""
    layers, _ = _layers(_attrs(student, 16, 4, bias=False))
    with_bias = sorted(name for name, layer in layers.items() if layer["bias"])
    if with_bias or len(layers) != 4:
        fail("MultiHeadAttention(16, 4, bias=False)", f"layers with bias: {with_bias or 'none'}; layers: "
             f"{sorted(layers)}",
             bias_not_followed({name: layers[name]["bias"] for name in PROJECTIONS if name in layers}, False)
             or "pass bias=bias to every nn.Linear")


def _require_valid_size_builds(student):
    """A test that a size is refused is worth points only when a valid size is not: a constructor that
    always raises would pass it otherwise."""
    try:
        student.call(MHA, init={"args": [16, 4]}, mode="oracle")  # its message explains a valid size refused
    except StudentError as refused:
        raise StudentError(f"{refused}\n{VALID_SIZE_REFUSED_TOO}") from None


@pytest.mark.points(3)
@pytest.mark.public
def test_indivisible_sizes_raise_dimension_mismatch(student):
    """Construction: MultiHeadAttention(16, 5) raises DimensionMismatchError naming 16 and 5"""
    _require_valid_size_builds(student)
    outcome = student.try_call(MHA, init={"args": [16, 5]}, mode="oracle")
    if not hasattr(outcome, "raised"):
        fail("MultiHeadAttention(16, 5)", "no exception was raised", MISMATCH_NOT_RAISED_HINT)
    if not outcome.raised("DimensionMismatchError"):
        fail("MultiHeadAttention(16, 5)", f"raised {outcome.message}",
             PLAIN_VALUE_ERROR_HINT if outcome.raised("ValueError") else MISMATCH_HINT)
    if not outcome.raised("ValueError"):
        fail("MultiHeadAttention(16, 5)", f"raised {outcome.message}", NOT_A_VALUE_ERROR)
    message = outcome.error.message
    if "16" not in message or "5" not in message:
        fail("MultiHeadAttention(16, 5)", f"the message {message!r} should name both numbers",
             'e.g. f"d_model={d_model} is not divisible by n_heads={n_heads}"')


@pytest.mark.points(1)
def test_non_positive_sizes_raise_value_error(student):
    """Construction: non-positive sizes raise ValueError"""
    _require_valid_size_builds(student)
    sizes = ((0, 4), (16, 0), (-8, 2))
    outcomes = [student.try_call(MHA, init={"args": list(args)}, mode="oracle") for args in sizes]
    for args, outcome in zip(sizes, outcomes):
        if not hasattr(outcome, "raised") or not outcome.raised("ValueError"):
            got = outcome.message if hasattr(outcome, "raised") else "no exception"
            own_error = hasattr(outcome, "raised") and outcome.raised("DimensionMismatchError")
            written = not (hasattr(outcome, "raised") and outcome.raised("NotImplementedError"))
            fail(f"MultiHeadAttention{args}", f"expected a ValueError, got {got}",
                 NOT_A_VALUE_ERROR if own_error else size_not_refused(zip(sizes, map(_did, outcomes))) if written
                 else None)


def _did(outcome):
    """What constructing did, in size_not_refused's words: "ValueError", "created a module" or the error raised."""
    if not hasattr(outcome, "raised"):
        return "created a module"
    return "ValueError" if outcome.raised("ValueError") else outcome.error.type if outcome.error else "an error"
