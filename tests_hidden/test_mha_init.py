"""Part 4: constructing MultiHeadAttention.

Construction does not depend on attention.py, so these run on top of a known-good attention
(mode="oracle"): a broken attention.py, which mha.py imports, cannot cost these points.
"""
import pytest

from autograder.compare import fail

pytestmark = pytest.mark.part("mha_init")

MHA = "mha.MultiHeadAttention"


def _attrs(student, d_model, n_heads, **kwargs):
    return student.call(MHA, init={"args": [d_model, n_heads], "kwargs": kwargs}, attrs=True, mode="oracle").attrs


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
                 "store self.d_model, self.n_heads and self.d_k = d_model // n_heads")


@pytest.mark.points(3)
def test_exactly_four_projections(student):
    """Construction: w_q, w_k, w_v, w_o are nn.Linear(d_model, d_model) and nothing else"""
    attrs = _attrs(student, 16, 4)
    expected = {name: {"in": 16, "out": 16, "bias": True} for name in ("w_q", "w_k", "w_v", "w_o")}
    if attrs.get("linears") != expected:
        fail("MultiHeadAttention(16, 4)", f"linear layers are {attrs.get('linears')}, expected {expected}",
             "exactly four nn.Linear(d_model, d_model) named w_q, w_k, w_v, w_o; the heads come from splitting, not from more layers")
    extra = sorted(set(attrs["parameters"]) - {f"{n}.{p}" for n in expected for p in ("weight", "bias")})
    if extra:
        fail("MultiHeadAttention(16, 4)", f"unexpected parameters {extra}", "the four projections hold every parameter")


@pytest.mark.points(1)
def test_bias_can_be_turned_off(student):
    """Construction: bias=False gives projections without bias"""
    attrs = _attrs(student, 16, 4, bias=False)
    with_bias = sorted(name for name, layer in (attrs.get("linears") or {}).items() if layer["bias"])
    if with_bias or len(attrs.get("linears") or {}) != 4:
        fail("MultiHeadAttention(16, 4, bias=False)", f"layers with bias: {with_bias or 'none'}; layers: "
             f"{sorted(attrs.get('linears') or {})}", "pass bias=bias to every nn.Linear")


@pytest.mark.points(3)
@pytest.mark.public
def test_indivisible_sizes_raise_dimension_mismatch(student):
    """Construction: MultiHeadAttention(16, 5) raises DimensionMismatchError naming 16 and 5"""
    outcome = student.try_call(MHA, init={"args": [16, 5]}, mode="oracle")
    if not hasattr(outcome, "raised"):
        fail("MultiHeadAttention(16, 5)", "no exception was raised", "check d_model % n_heads != 0 in __init__")
    if not outcome.raised("DimensionMismatchError") or not outcome.raised("ValueError"):
        fail("MultiHeadAttention(16, 5)", f"raised {outcome.message}",
             "raise the DimensionMismatchError given in mha.py (a ValueError subclass)")
    message = outcome.error.get("message", "")
    if "16" not in message or "5" not in message:
        fail("MultiHeadAttention(16, 5)", f"the message {message!r} should name both numbers",
             'e.g. f"d_model={d_model} is not divisible by n_heads={n_heads}"')


@pytest.mark.points(1)
def test_non_positive_sizes_raise_value_error(student):
    """Construction: non-positive sizes raise ValueError"""
    for args in ((0, 4), (16, 0), (-8, 2)):
        outcome = student.try_call(MHA, init={"args": list(args)}, mode="oracle")
        if not hasattr(outcome, "raised") or not outcome.raised("ValueError"):
            got = outcome.message if hasattr(outcome, "raised") else "no exception"
            fail(f"MultiHeadAttention{args}", f"expected a ValueError, got {got}",
                 "check d_model > 0 and n_heads > 0 before anything else")
