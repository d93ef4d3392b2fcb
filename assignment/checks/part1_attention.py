"""Otter check "part1_attention": Part 1: scaled_dot_product_attention.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "part1_attention"


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


@test_case(name="attention_returns_output_and_weights_with_the_right_shapes", points=1)
def attention_returns_output_and_weights_with_the_right_shapes():
    public_case("attention_returns_output_and_weights_with_the_right_shapes")


@test_case(name="attention_weights_match_pytorch", points=2)
def attention_weights_match_pytorch():
    public_case("attention_weights_match_pytorch")


@test_case(name="attention_output_matches_pytorch", points=2)
def attention_output_matches_pytorch():
    public_case("attention_output_matches_pytorch")


@test_case(name="attention_weights_are_non_negative_and_rows_sum_to_one", points=1)
def attention_weights_are_non_negative_and_rows_sum_to_one():
    public_case("attention_weights_are_non_negative_and_rows_sum_to_one")


@test_case(name="attention_works_in_float32", points=1)
def attention_works_in_float32():
    public_case("attention_works_in_float32")


@test_case(name="attention_is_float64_accurate_in_float64", points=1)
def attention_is_float64_accurate_in_float64():
    public_case("attention_is_float64_accurate_in_float64")


@test_case(name="gradients_flow_back_to_query_key_and_value", points=1)
def gradients_flow_back_to_query_key_and_value():
    public_case("gradients_flow_back_to_query_key_and_value")


@test_case(name="module_wrapper_matches_pytorch", points=1)
def module_wrapper_matches_pytorch():
    public_case("module_wrapper_matches_pytorch")


@test_case(name="causal_mask_in_attention_matches_pytorch", points=3)
def causal_mask_in_attention_matches_pytorch():
    public_case("causal_mask_in_attention_matches_pytorch")


@test_case(name="causal_attention_gives_future_keys_exactly_zero_weight", points=2)
def causal_attention_gives_future_keys_exactly_zero_weight():
    public_case("causal_attention_gives_future_keys_exactly_zero_weight")


@test_case(name="padding_mask_in_attention_matches_pytorch", points=2)
def padding_mask_in_attention_matches_pytorch():
    public_case("padding_mask_in_attention_matches_pytorch")


@test_case(name="numeric_masks_mean_nonzero_may_attend", points=1)
def numeric_masks_mean_nonzero_may_attend():
    public_case("numeric_masks_mean_nonzero_may_attend")


@test_case(name="attention_leaves_its_inputs_unchanged", points=1)
def attention_leaves_its_inputs_unchanged():
    public_case("attention_leaves_its_inputs_unchanged")


@test_case(name="attention_stays_finite_on_large_scores", points=1)
def attention_stays_finite_on_large_scores():
    public_case("attention_stays_finite_on_large_scores")
