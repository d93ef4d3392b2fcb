"""Part 2: scaled dot-product attention values, shapes and masks.

Each property is charged by one test. Leading dims are one test's (2-D, 3-D and 4-D inputs, each at its own
rank); every other test passes when the code is right on the same inputs at 3-D or 4-D (check_sdpa's any_rank),
so code that takes only one rank loses that test and nothing else."""
import pytest
import torch

from attention_checks import check_sdpa
from autograder.lab import catalogue, fail
from cases import AttentionCase

pytestmark = pytest.mark.part("attention")


@pytest.mark.points(3)
@pytest.mark.public
def test_attention_3d_without_mask(student, reference):
    """Attention: batched 3-D inputs, no mask"""
    check_sdpa(student, reference, AttentionCase((2,), 5, 5, 8, 8, seed=1))


@pytest.mark.points(4)
def test_attention_any_number_of_leading_dims(student, reference):
    """Layout: 2-D inputs with no batch dim, 3-D, and 4-D (batch, heads, T, d_k), each at its own rank"""
    # One property, one test (issue 46): code that takes one rank only loses these points once, whichever it is.
    for case in (AttentionCase((), 4, 4, 6, 6, seed=2), AttentionCase((2,), 5, 5, 8, 8, seed=1),
                 AttentionCase((2, 3), 5, 5, 4, 4, seed=3)):
        check_sdpa(student, reference, case, any_rank=False)


@pytest.mark.points(2)
def test_attention_more_keys_than_queries(student, reference):
    """Attention: T_q != T_k (3 queries, 7 keys)"""
    check_sdpa(student, reference, AttentionCase((2,), 3, 7, 8, 8, seed=4))


@pytest.mark.points(2)
def test_attention_value_width_differs(student, reference):
    """Attention: d_v != d_k (output takes the value's width)"""
    check_sdpa(student, reference, AttentionCase((2,), 5, 6, 8, 3, seed=5))


@pytest.mark.points(2)
def test_attention_batch_of_one_and_single_position(student, reference):
    """Attention: batch size 1, and a sequence of length 1"""
    check_sdpa(student, reference, AttentionCase((1,), 4, 4, 8, 8, seed=6))
    check_sdpa(student, reference, AttentionCase((2,), 1, 1, 8, 8, seed=7))


@pytest.mark.points(3)
@pytest.mark.public
def test_attention_causal_mask(student, reference):
    """Attention: (T, T) causal bool mask broadcast over the batch"""
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 8, 8, mask="causal", seed=8))
    check_sdpa(student, reference, AttentionCase((2, 2), 5, 5, 4, 4, mask="causal", seed=9))


@pytest.mark.points(3)
def test_attention_padding_mask(student, reference):
    """Attention: (B, 1, 1, T_k) padding mask on 4-D inputs"""
    check_sdpa(student, reference, AttentionCase((3, 2), 5, 5, 4, 4, mask="padding", seed=10))


@pytest.mark.points(1)
def test_attention_int_mask(student, reference):
    """Attention: integer masks (1 = may attend, 0 = blocked), random and (T, T) causal"""
    check_sdpa(student, reference, AttentionCase((2,), 5, 5, 8, 8, mask="random", mask_dtype=torch.int64, seed=11))
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 8, 8, mask="causal", mask_dtype=torch.int64, seed=15))


@pytest.mark.points(1)
def test_attention_float_mask(student, reference):
    """Attention: float masks (1.0 = may attend, 0.0 = blocked), random and (T, T) causal"""
    check_sdpa(student, reference, AttentionCase((2,), 5, 5, 8, 8, mask="random", mask_dtype=torch.float32, seed=12))
    check_sdpa(student, reference, AttentionCase((2, 2), 6, 6, 4, 4, mask="causal", mask_dtype=torch.float32, seed=16))


@pytest.mark.points(2)
def test_attention_numeric_masks_with_other_values(student, reference):
    """Attention: numeric masks hold other values than 1 (2, -3, 2.5, -1, 0.5): every nonzero value may attend"""
    # The int and float mask tests hold 0 and 1 only, so code that reads 1 as the only "may attend" value
    # (1 - mask) loses this test alone.
    check_sdpa(student, reference, AttentionCase((2,), 5, 5, 8, 8, mask="nonbinary", mask_dtype=torch.int64, seed=17))
    check_sdpa(student, reference, AttentionCase((2,), 6, 6, 8, 8, mask="nonbinary", mask_dtype=torch.float32, seed=18))


@pytest.mark.points(2)
def test_attention_blocked_positions_get_exactly_zero(student, reference):
    """Attention: blocked positions get exactly 0 weight"""
    # The one test of the fill value: a finite fill such as -100 passes every value test (its leak is far below
    # their tolerance) and is charged here.
    reply = check_sdpa(student, reference, AttentionCase((2,), 6, 6, 8, 8, mask="random", seed=13))
    case, weights = reply.case, reply.result[1]
    mask = case.inputs()[3]
    leaked = weights[~mask.expand_as(weights)]
    if (leaked != 0).any():
        largest = leaked.abs().max().item()
        fail(case.describe(), f"blocked positions have nonzero weight (largest {largest:.3g})",
             "fill blocked scores with float(\"-inf\") before the softmax",
             mistake=catalogue.FINITE_FILL_LEAKS if largest < 1e-6 else None)


@pytest.mark.points(1)
def test_attention_module_matches_the_function(student, reference):
    """Attention: ScaledDotProductAttention().forward has the same contract"""
    case = AttentionCase((2,), 5, 5, 8, 8, mask="causal", seed=14)
    check_sdpa(student, reference, case, target="attention.ScaledDotProductAttention", init={})
