"""What the parent keeps of a child's text is bounded in the parent (autograder/bounds.py): whatever a
child sends, no report grows past a fixed size. The child is a stand-in that forges its replies, as
student code can (tests/grading/test_student.py)."""
import os

from autograder import bounds
from autograder.reports.report import write_submission
from test_student import handle

HUGE = "y" * 240_000
TESTS = 100  # more tests than the hidden suite has
REPORT_BOUND = 512 << 10  # bytes of any one report of a submission with TESTS tests, whatever its child sent


def huge_error(request):
    where = {"file": HUGE, "line": 1, "function": HUGE, "code": HUGE}
    return {"ok": False, "error": {"type": HUGE, "mro": [HUGE], "message": HUGE, "phase": HUGE, "where": where}}


def test_result(message, i):
    return {"name": f"test {i}", "nodeid": f"tests_hidden/test_masks.py::t{i}", "part": "masks", "points": 1.0,
            "visibility": "visible", "passed": False, "message": message, "grader_error": False,
            "mistake": None, "figure": None}


test_result.__test__ = False  # a helper, not a test


def test_a_child_raising_a_240000_character_error_in_every_call_gives_reports_under_a_fixed_size(tmp_path):
    student = handle(tmp_path, script=huge_error)
    messages = [student.try_call("attention.causal_mask", i).message for i in range(TESTS)]
    record = bounds.bound_record({
        "tests": [test_result(m, i) for i, m in enumerate(messages)], "problems": [], "found": {"attention.py": "x"},
        "output": HUGE * 4, "output_dropped": 0, "events": [f"event {i}: {HUGE}" for i in range(TESTS)],
        "isolation": "namespaces", "containment": [], "execution_time": 1.0})
    write_submission(str(tmp_path / "out"), "s", record)
    for name in ("results.json", "feedback.md", "feedback.html"):
        size = os.path.getsize(tmp_path / "out" / "s" / name)
        assert size < REPORT_BOUND, f"{name} is {size} bytes"


def test_each_message_is_cut_and_past_the_total_only_first_lines_are_kept():
    record = bounds.bound_record({"tests": [test_result("line\n" + HUGE, i) for i in range(100)]})
    lengths = [len(t["message"]) for t in record["tests"]]
    assert max(lengths) == bounds.TEST_MESSAGE and record["tests"][0]["message"].endswith(bounds.CUT_MARK)
    assert sum(lengths) <= bounds.MESSAGES_TOTAL + 100 * len("line")
    assert record["tests"][-1]["message"] == "line"


def test_events_are_kept_once_each_cut_and_counted_past_the_limit():
    record = bounds.bound_record({"tests": [], "events": ["same"] * 5 + [f"{i} {HUGE}" for i in range(50)]})
    assert record["events"][0] == "same" and len(record["events"]) == bounds.EVENTS
    assert all(len(event) <= bounds.EVENT_TEXT for event in record["events"])
    assert record["events"][-1] == f"{50 + 1 - bounds.EVENTS + 1} more events of this kind not listed"


def test_printed_output_past_the_submissions_bound_is_counted_not_kept(tmp_path):
    student = handle(tmp_path)
    for i in range(8):  # each child printed its own cap's worth
        child = type("Printed", (), {"close": lambda self: None, "output_dropped": 10,
                                     "output_text": lambda self: "p" * bounds.CHILD_OUTPUT})()
        student._retire(child)
    kept = sum(len(text) for text in student.output)
    assert kept == bounds.SUBMISSION_OUTPUT
    assert student.output_dropped == 8 * 10 + 8 * bounds.CHILD_OUTPUT - bounds.SUBMISSION_OUTPUT
