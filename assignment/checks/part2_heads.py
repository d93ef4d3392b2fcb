"""Otter check "part2_heads": Part 2: split_heads and merge_heads.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "part2_heads"


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


@test_case(name="split_heads_returns_batch_heads_seq_d_k", points=1)
def split_heads_returns_batch_heads_seq_d_k():
    public_case("split_heads_returns_batch_heads_seq_d_k")


@test_case(name="split_heads_gives_head_i_its_own_slice_of_features", points=2)
def split_heads_gives_head_i_its_own_slice_of_features():
    public_case("split_heads_gives_head_i_its_own_slice_of_features")


@test_case(name="merge_heads_undoes_split_heads", points=2)
def merge_heads_undoes_split_heads():
    public_case("merge_heads_undoes_split_heads")
