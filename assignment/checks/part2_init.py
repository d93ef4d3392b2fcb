"""Otter check "part2_init": Part 2: building MultiHeadAttention.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "part2_init"


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


@test_case(name="mha_stores_its_sizes", points=1)
def mha_stores_its_sizes():
    public_case("mha_stores_its_sizes")


@test_case(name="mha_has_four_linear_projections_and_nothing_else", points=1)
def mha_has_four_linear_projections_and_nothing_else():
    public_case("mha_has_four_linear_projections_and_nothing_else")


@test_case(name="mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model", points=2)
def mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model():
    public_case("mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model")


@test_case(name="mha_raises_value_error_for_non_positive_sizes", points=1)
def mha_raises_value_error_for_non_positive_sizes():
    public_case("mha_raises_value_error_for_non_positive_sizes")
