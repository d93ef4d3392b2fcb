"""Otter check "part2_forward": Part 2: MultiHeadAttention.forward.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "part2_forward"


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


@test_case(name="mha_forward_returns_output_and_per_head_weights", points=1)
def mha_forward_returns_output_and_per_head_weights():
    public_case("mha_forward_returns_output_and_per_head_weights")


@test_case(name="mha_self_attention_matches_pytorch", points=2)
def mha_self_attention_matches_pytorch():
    public_case("mha_self_attention_matches_pytorch")


@test_case(name="mha_causal_self_attention_matches_pytorch", points=2)
def mha_causal_self_attention_matches_pytorch():
    public_case("mha_causal_self_attention_matches_pytorch")


@test_case(name="mha_cross_attention_with_padding_matches_pytorch", points=2)
def mha_cross_attention_with_padding_matches_pytorch():
    public_case("mha_cross_attention_with_padding_matches_pytorch")


@test_case(name="mha_gradients_reach_every_input_and_parameter", points=1)
def mha_gradients_reach_every_input_and_parameter():
    public_case("mha_gradients_reach_every_input_and_parameter")
