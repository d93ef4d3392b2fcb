"""Hints for torch errors (autograder/error_hints.py): one table, in the reports and the public checks."""
import json

import pytest

from autograder.error_hints import ERROR_HINTS, error_hint
from autograder.protocol import ErrorInfo, Where
from autograder.student import describe_error
from conftest import public_checks, run_grader
from variant_builder import build_mutant

VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one dimension spans\n"
              "across two contiguous subspaces). Use .reshape(...) instead.")
# A transposed tensor flattened with view: the public suite's hint test uses the same mistake.
MERGE_VIEW = {"name": "merge_heads_view_without_contiguous", "file": "mha.py",
              "find": "x = x.transpose(1, 2).contiguous()", "replace": "x = x.transpose(1, 2)"}


def test_a_known_error_gets_its_hint_even_across_line_breaks():
    assert error_hint(VIEW_ERROR).startswith("view needs contiguous memory")


def test_an_unknown_error_gets_no_hint():
    assert error_hint("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x3)") is None


def test_the_report_gives_the_hint_after_where_the_error_was_raised():
    error = ErrorInfo("RuntimeError", [], VIEW_ERROR, "calling mha.MultiHeadAttention",
                      Where("mha.py", 40, "merge_heads", "return x.view(B, T, -1)"))
    lines = describe_error(error).splitlines()
    assert lines[-2].startswith("  at mha.py line 40") and lines[-1] == f"  hint: {error_hint(VIEW_ERROR)}"


def test_not_implemented_yet_gets_no_hint():
    error = ErrorInfo("NotImplementedError", [], VIEW_ERROR, "calling mha.MultiHeadAttention")
    assert "hint" not in describe_error(error)


def test_the_public_checks_hold_the_same_table():
    assert public_checks().ERROR_HINTS == ERROR_HINTS, "assignment/tests/checks.py's hints drifted: run `make stubs`"


@pytest.mark.slow  # grades one submission
def test_a_graded_view_error_carries_the_hint_the_public_tests_give(open_tmp):
    submission = build_mutant(MERGE_VIEW, open_tmp / "submission")
    run = run_grader("grade", submission, "--out", open_tmp / "out")
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((open_tmp / "out" / "submission" / "results.json").read_text())
    hinted = [t["name"] for t in report["tests"] if f"hint: {error_hint(VIEW_ERROR)}" in t.get("output", "")]
    assert hinted, "no test of the graded report shows the view hint:\n" + "\n".join(
        t.get("output", "")[:300] for t in report["tests"] if t["status"] == "failed")
