"""Hints for torch errors (autograder/judging/error_hints.py): one table, in the reports and the public checks."""
import json

import pytest

from autograder.judging.error_hints import ERROR_HINTS, device_ignored, error_hint, inplace_edits
from autograder.containment.protocol import ErrorInfo, Where
from autograder.grading.student import describe_error
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


INPLACE_MESSAGE = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
                   "[torch.DoubleTensor [2, 5, 5]], which is output 0 of Softmax, is at version 1; expected version 0 "
                   "instead.")


def test_an_inplace_edit_that_breaks_autograd_gets_its_hint():
    assert error_hint(INPLACE_MESSAGE).startswith("an in-place edit broke autograd")


def test_inplace_edits_are_found_with_their_file_and_line():
    source = "def f(w, s):\n    w = w / s\n    w.masked_fill_(s, 0.0)\n    s += 1\n    return w.requires_grad_()\n"
    assert inplace_edits(source, "attention.py") == ["attention.py, line 3: w.masked_fill_(s, 0.0)",
                                                     "attention.py, line 4: s += 1"]


def test_a_backward_error_names_the_inplace_edits_of_the_staged_files(tmp_path):
    """torch raises it in the backward pass, where no line of the student's is on the stack."""
    (tmp_path / "attention.py").write_text("def f(w):\n    w.masked_fill_(w > 0, 0.0)\n    return w\n")
    (tmp_path / "mha.py").write_text("x = 1\n")
    error = ErrorInfo("RuntimeError", [], INPLACE_MESSAGE, "calling attention.scaled_dot_product_attention")
    lines = describe_error(error, str(tmp_path)).splitlines()
    assert lines[1:] == ["  in-place edit: attention.py, line 2: w.masked_fill_(w > 0, 0.0)",
                         f"  hint: {error_hint(INPLACE_MESSAGE)}"], lines


def test_the_public_checks_find_the_same_inplace_edits():
    source = "def f(w):\n    w.add_(1)\n    w *= 2\n"
    assert public_checks().inplace_edits(source, "mha.py") == inplace_edits(source, "mha.py")


# --- a causal mask that ignores `device` (found from the text: this machine has one device) ---------

MASK_ON = "def causal_mask(seq_len, device=None):\n    return {}\n"


def test_a_mask_that_never_reads_device_is_named():
    source = MASK_ON.format("torch.ones(seq_len, seq_len, dtype=torch.bool).tril()")
    assert "never uses its device argument" in device_ignored(source)


@pytest.mark.parametrize("move", [".type(torch.BoolTensor)", ".cpu()"])
def test_a_mask_moved_to_the_cpu_after_using_device_is_named(move):
    source = MASK_ON.format(f"torch.ones(seq_len, seq_len, device=device).tril(){move}")
    assert "moves the mask to the CPU" in device_ignored(source) and "line 2" in device_ignored(source)


@pytest.mark.parametrize("code", ["torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()",
                                  "torch.ones(seq_len, seq_len).tril().bool().to(device)",
                                  "torch.tril(torch.ones(seq_len, seq_len, device=device)).type(torch.bool)"])
def test_a_mask_made_where_asked_is_not_named(code):
    assert device_ignored(MASK_ON.format(code)) is None


def test_a_source_that_does_not_parse_or_lacks_the_function_says_nothing():
    assert device_ignored("def causal_mask(:") is None
    assert device_ignored("def padding_mask(tokens, pad_id, device=None):\n    return tokens\n") is None
