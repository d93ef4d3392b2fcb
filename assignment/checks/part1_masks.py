"""Otter check "part1_masks": Part 1: causal_mask and padding_mask.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "part1_masks"


def public_case(case):
    import sys
    from pathlib import Path

    # otter runs this file with exec() and no __file__, but the code still knows its path.
    lab = Path(public_case.__code__.co_filename).resolve().parent.parent
    sys.path.insert(0, str(lab / "tests"))
    try:
        from cases import run_case
    finally:
        sys.path.remove(str(lab / "tests"))
    run_case(case, lab)


@test_case(name="causal_mask_is_a_square_bool_tensor", points=1)
def causal_mask_is_a_square_bool_tensor():
    public_case("causal_mask_is_a_square_bool_tensor")


@test_case(name="causal_mask_allows_the_past_and_blocks_the_future", points=2)
def causal_mask_allows_the_past_and_blocks_the_future():
    public_case("causal_mask_allows_the_past_and_blocks_the_future")


@test_case(name="causal_mask_is_created_on_the_requested_device", points=1)
def causal_mask_is_created_on_the_requested_device():
    public_case("causal_mask_is_created_on_the_requested_device")


@test_case(name="padding_mask_is_bool_with_shape_batch_1_1_seq", points=1)
def padding_mask_is_bool_with_shape_batch_1_1_seq():
    public_case("padding_mask_is_bool_with_shape_batch_1_1_seq")


@test_case(name="padding_mask_is_true_exactly_at_real_tokens", points=2)
def padding_mask_is_true_exactly_at_real_tokens():
    public_case("padding_mask_is_true_exactly_at_real_tokens")
