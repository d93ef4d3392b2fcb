"""feedback.md (autograder/reports/feedback.py), from records written by hand: what a student reads."""
import pytest

from autograder.reports.feedback import OUTPUT_SHOWN, feedback_markdown, printed_output, sandbox_description
from autograder.reports.inert_text import fenced
from conftest import SHIPPED_PARTS
from autograder.reports.results import results_json
from test_results import MIXED, record, result

pytestmark = pytest.mark.usefixtures("shipped_parts")  # records written with the shipped parts' names
PART_TITLES = SHIPPED_PARTS["PART_TITLES"]


def feedback(rec):
    return feedback_markdown(rec, results_json(rec))


def test_every_part_has_a_row_with_its_title_and_score():
    text = feedback(MIXED)
    assert f"| {PART_TITLES['masks']} | 3 / 5 |" in text, text
    assert f"| {PART_TITLES['heads']} | 4 / 5 |" in text, text


def test_each_failed_test_is_listed_under_what_to_fix_with_its_message():
    text = feedback(MIXED)
    fixes = text.split("## What to fix", 1)[1]
    assert "(0 / 2)" in fixes and "wrong mask" in fixes and "wrong shape" in fixes, fixes


def test_a_submission_that_passes_everything_has_nothing_to_fix():
    assert "## What to fix" not in feedback(record(result("masks", 3.0), result("heads", 2.0)))


def test_a_passed_test_with_a_message_becomes_a_note():
    text = feedback(record(result("masks", 3.0, message="passed on torch's attention; fix attention.py first")))
    assert "## Notes" in text and "- a masks test: passed on torch's attention" in text, text


def test_what_the_code_printed_is_shown_in_a_fence_it_cannot_close():
    text = feedback(record(result("masks", 1.0), output="hello\n```\n# Injected heading"))
    printed = text.split("## What your code printed", 1)[1]
    assert "````\nhello\n```\n# Injected heading\n````" in printed, printed


def test_long_output_is_cut_and_the_rest_counted_with_what_the_sandbox_dropped():
    shown, note = printed_output({"output": "x" * (OUTPUT_SHOWN + 100), "output_dropped": 500})
    assert shown == "x" * OUTPUT_SHOWN
    assert note == "600 more bytes of output not kept; printing does not affect grading."


def test_short_output_is_shown_whole():
    assert printed_output({"output": "done\n", "output_dropped": 0}) == ("done\n", None)


@pytest.mark.parametrize("digits", [9, 4301, 100_000])
def test_printed_text_that_looks_like_the_graders_count_is_only_text(digits):
    """The student's text and the grader's count travel apart: a printed marker is shown as printed, counts
    nothing, and cannot crash the report (int() refuses more than 4,300 digits)."""
    forged = f"[... {'1' * digits} more bytes of output not kept]"
    record_ = record(result("masks", 1.0), output="hi\n" + forged)
    shown, note = printed_output(record_)
    cut = len(("hi\n" + forged)[OUTPUT_SHOWN:])  # what the report itself cuts, counted by the grader
    assert shown == ("hi\n" + forged)[:OUTPUT_SHOWN]
    assert note == (f"{cut} more bytes of output not kept; printing does not affect grading." if cut else None)
    outside = feedback(record_).split(fenced(shown), 1)[1]
    assert ("more bytes" in outside) == bool(cut) and "1" * 9 not in outside, outside


def test_the_graders_count_is_said_outside_the_printed_text():
    text = feedback(record(result("masks", 1.0), output="hello", output_dropped=70_000))
    printed, after = text.split("## What your code printed", 1)[1].split(fenced("hello"), 1)
    assert "_70000 more bytes of output not kept" in after, text


def test_the_footer_names_the_isolation_layers_and_time():
    assert "_Sandbox: namespaces isolation (cgroup-memory); graded in 1.2 s._" in feedback(MIXED)


def test_a_weaker_level_without_layers_or_cgroup_says_so():
    description = sandbox_description({"isolation": "uid", "containment": []})
    assert description == "uid isolation (no Landlock or seccomp layer available, limits per process, no cgroup)"


def test_a_uid_level_with_landlock_names_it():
    description = sandbox_description({"isolation": "uid", "containment": ["landlock-fs", "cgroup-memory"]})
    assert description == "uid isolation (landlock-fs, cgroup-memory)"


def test_feedback_shows_the_hidden_tests_and_says_students_see_them_later():
    """feedback.md is the instructor's full copy: it lists the hidden tests' failures and says so truthfully."""
    text = feedback(MIXED)
    assert "wrong shape" in text.split("## What to fix", 1)[1], "the failed hidden test is listed with its message"
    assert "This report shows every test. On Gradescope, 2 of these tests are not shown" in text, text
