"""Part 1: the causal and padding masks."""
import os

import pytest
import torch

from autograder.lab import (DEVICE_HINT, describe_value, device_ignored, diagnosed, expect_equal, expect_tensor,
                            fail, mask_constant, padding_followed, read_source, replied)
from cases import tokens_with_padding

pytestmark = pytest.mark.part("masks")

CAUSAL_HINT = "query i may attend keys j <= i: True on and below the diagonal (torch.tril), False above it"
PADDING_HINT = "True where the key is a real token (tokens != pad_id), shaped (B, 1, 1, T) with [:, None, None, :]"


@pytest.mark.points(3)
@pytest.mark.public
def test_causal_mask_values(student):
    """Causal mask: True on and below the diagonal, for T = 7, 4 and 1"""
    sizes = (7, 4, 1)  # the largest first: it tells the mistakes apart
    for seq_len, reply in zip(sizes, student.call_many("attention.causal_mask", [(n,) for n in sizes])):
        got = replied(reply).result
        expected = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
        with diagnosed("causal_mask", got, seq_len):
            expect_equal(got, expected, f"causal_mask({seq_len})", "mask", CAUSAL_HINT)


@pytest.mark.points(2)
def test_causal_mask_is_a_square_bool_tensor(student):
    """Causal mask: a (T, T) torch.bool tensor"""
    got = student.call("attention.causal_mask", 6).result
    expect_tensor(got, torch.zeros(6, 6, dtype=torch.bool), "causal_mask(6)", "mask")
    require_a_mask(got, "causal_mask(6)", CAUSAL_HINT)


@pytest.mark.points(1)
def test_causal_mask_accepts_a_device(student):
    """Causal mask: made on the device asked for (device="cpu" works, and the device argument is used)"""
    got = student.call("attention.causal_mask", 3, kwargs={"device": "cpu"}).result
    # The call must accept a device and give a tensor; its values and layout are the other causal tests'
    # to judge (one defect, one charge).
    if not isinstance(got, torch.Tensor):
        fail('causal_mask(3, device="cpu")', f"mask should be a torch.Tensor, got {describe_value(got)}")
    require_a_mask(got, 'causal_mask(3, device="cpu")', CAUSAL_HINT)
    try:  # read by the trusted parent, never run: this machine has no second device to ask for
        source = read_source(os.path.join(student.staged.dir, "attention.py"))
    except (OSError, ValueError):
        source = ""
    why = device_ignored(source)
    if why:
        fail("causal_mask(seq_len, device)", why, DEVICE_HINT)


def _padding_cases():
    yield "pad_id=0, padding at the end", tokens_with_padding([6, 4, 1], 6, 0, seed=10), 0
    yield "pad_id=5, padding at the end", tokens_with_padding([3, 6], 6, 5, seed=11), 5
    middle = tokens_with_padding([7, 7], 7, 0, seed=12)
    middle[0, 2], middle[1, 5] = 0, 0
    yield "pad_id=0, padding in the middle", middle, 0


@pytest.mark.points(3)
@pytest.mark.public
def test_padding_mask_values(student):
    """Padding mask: False exactly at the padding tokens"""
    cases = list(_padding_cases())
    for (label, tokens, pad_id), reply in zip(cases, student.call_many("attention.padding_mask",
                                                                       [(tokens, pad_id) for _, tokens, pad_id in cases])):
        got = replied(reply).result
        expected = (tokens != pad_id)[:, None, None, :]
        with diagnosed("padding_mask", got, tokens, pad_id):
            expect_equal(got, expected, f"padding_mask(tokens {tuple(tokens.shape)}, {label})", "mask",
                         padding_followed(got, tokens, pad_id) or PADDING_HINT)


@pytest.mark.points(2)
def test_padding_mask_shape_and_dtype(student):
    """Padding mask: a (B, 1, 1, T) torch.bool tensor"""
    tokens = tokens_with_padding([5, 3, 2, 5], 5, 0, seed=13)
    got = student.call("attention.padding_mask", tokens, 0).result
    expect_tensor(got, torch.zeros(4, 1, 1, 5, dtype=torch.bool), "padding_mask(tokens (4, 5), pad_id=0)", "mask")
    require_a_mask(got, "padding_mask(tokens (4, 5), pad_id=0)", PADDING_HINT)


def require_a_mask(got, case, hint):
    """The gate of the shape, dtype and device tests: a mask that follows something (the right one of every
    case here holds both True and False); a constant one earns none of them (points need the work)."""
    constant = mask_constant(got)
    if constant:
        fail(case, constant, hint)


@pytest.mark.points(1)
def test_padding_mask_batch_of_one(student):
    """Padding mask: works for a batch of one"""
    tokens = tokens_with_padding([2], 4, 0, seed=14)
    got = student.call("attention.padding_mask", tokens, 0).result
    # Its shape is expect_tensor's to judge; a wrong value gets the padding the mask measurably followed.
    with diagnosed("padding_mask", got, tokens, 0):
        expect_equal(got, (tokens != 0)[:, None, None, :], "padding_mask(tokens (1, 4), pad_id=0)", "mask",
                     padding_followed(got, tokens, 0))
