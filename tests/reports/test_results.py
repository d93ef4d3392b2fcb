"""The results dict (autograder/reports/results.py) against Gradescope's results.json schema.

Built from records written by hand, without running the grader: what each field is, its type,
the values Gradescope accepts, how tests are numbered and scored, what stays hidden from a
student before the due date, and what ``extra_data`` carries for the instructor.
"""
import json
import subprocess
import sys

import pytest

from autograder.grading.discover import Submitter
from autograder.reports.results import part_scores, results_json

from conftest import ROOT, SHIPPED_PARTS

pytestmark = pytest.mark.usefixtures("shipped_parts")  # records written with the shipped parts' names
PARTS = SHIPPED_PARTS["PARTS"]


# Gradescope's results.json: the fields it reads at the top and in each test, and their types.
TOP_FIELDS = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
              "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
              "extra_data": dict, "tests": list, "leaderboard": list}
TEST_FIELDS = {"score": (int, float), "max_score": (int, float), "status": str, "name": str, "name_format": str,
               "number": str, "output": str, "output_format": str, "tags": list, "visibility": str,
               "extra_data": dict}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
STATUSES = {"passed", "failed"}


def result(part="masks", points=2.0, passed=True, visibility="visible", message="", **extra):
    """One test's result as plugin.result_of records it."""
    return {"name": f"a {part} test", "nodeid": f"tests_hidden/test_{part}.py::t", "part": part, "points": points,
            "visibility": visibility, "passed": passed, "message": message, "grader_error": False,
            "mistake": None, "figure": None, **extra}


def record(*tests, **fields):
    """A graded submission's record, as the grader hands it to the reports."""
    return {"tests": list(tests), "problems": [], "output": "", "events": [], "isolation": "namespaces",
            "containment": ["cgroup-memory"], "execution_time": 1.25, **fields}


MIXED = record(result("masks", 3.0), result("masks", 2.0, passed=False, message="wrong mask"),
               result("heads", 4.0, visibility="after_due_date"),
               result("heads", 1.0, passed=False, visibility="after_due_date", message="wrong shape",
                      mistake="heads_not_split"),
               result("extra", 5.0))


# --- the schema -------------------------------------------------------------------------------

def test_top_level_fields_are_gradescopes_with_their_types():
    results = results_json(MIXED)
    unknown = set(results) - set(TOP_FIELDS)
    assert not unknown, f"fields Gradescope does not read: {sorted(unknown)}"
    for field, value in results.items():
        assert isinstance(value, TOP_FIELDS[field]), f"{field} is a {type(value).__name__}"
    assert {"score", "output", "tests", "extra_data"} <= set(results)


def test_output_formats_are_ones_gradescope_renders():
    results = results_json(MIXED)
    assert results["output_format"] in FORMATS and results["test_output_format"] in FORMATS
    assert all(test["output_format"] in FORMATS for test in results["tests"])


def test_each_test_has_gradescopes_fields_with_their_types():
    for test in results_json(MIXED)["tests"]:
        unknown = set(test) - set(TEST_FIELDS)
        assert not unknown, f"{test['name']}: fields Gradescope does not read: {sorted(unknown)}"
        for field, value in test.items():
            assert isinstance(value, TEST_FIELDS[field]), f"{test['name']}: {field} is a {type(value).__name__}"
        assert test["status"] in STATUSES and test["visibility"] in VISIBILITIES
        assert all(isinstance(tag, str) for tag in test["tags"])


def test_results_survive_a_json_round_trip_unchanged():
    results = results_json(MIXED, (Submitter("Ada", "ada@example.edu", "s1"),))
    assert json.loads(json.dumps(results)) == results


# --- scores and numbers -----------------------------------------------------------------------

def test_a_passed_test_earns_its_points_and_a_failed_one_none():
    tests = results_json(MIXED)["tests"]
    assert [(t["status"], t["score"], t["max_score"]) for t in tests[:2]] == [("passed", 3.0, 3.0), ("failed", 0.0, 2.0)]


def test_tests_are_numbered_part_then_place_within_the_part():
    numbers = [t["number"] for t in results_json(MIXED)["tests"]]
    masks, heads, extra = (PARTS.index(p) + 1 for p in ("masks", "heads", "extra"))
    assert numbers == [f"{masks}.1", f"{masks}.2", f"{heads}.1", f"{heads}.2", f"{extra}.1"]


def test_a_part_not_in_the_table_is_numbered_after_every_part():
    tests = results_json(record(result("other"), result("masks")))["tests"]
    assert tests[0]["number"] == f"{len(PARTS) + 1}.1", "an unknown part should come last, not fail"
    assert tests[0]["tags"] == ["other"]


def test_each_test_is_tagged_with_its_part_only():
    assert [t["tags"] for t in results_json(MIXED)["tests"]] == [["masks"], ["masks"], ["heads"], ["heads"], ["extra"]]


def test_extra_credit_counts_in_the_score_but_not_in_the_maximum():
    results = results_json(MIXED)
    assert results["score"] == 3.0 + 4.0 + 5.0
    assert results["extra_data"]["max_score"] == 3.0 + 2.0 + 4.0 + 1.0
    assert (results["extra_data"]["extra_credit"], results["extra_data"]["extra_credit_max"]) == (5.0, 5.0)


def test_part_scores_sum_each_part_in_the_labs_order():
    results = results_json(record(result("heads", 4.0), result("masks", 1.0, passed=False), result("masks", 2.0)))
    assert list(part_scores(results).items()) == [("masks", (2.0, 3.0)), ("heads", (4.0, 4.0))]


def test_scores_are_rounded_so_that_float_sums_do_not_show():
    results = results_json(record(*(result("masks", 0.1) for _ in range(3))))
    assert results["score"] == 0.3 and results["extra_data"]["max_score"] == 0.3


# --- what the output says ---------------------------------------------------------------------

def test_a_passed_tests_note_is_its_message_as_it_is():
    results = results_json(record(result(message="ran in float64 too")))
    assert results["tests"][0]["output"] == "ran in float64 too"


def test_a_failed_tests_message_is_fenced_with_its_text_heatmap():
    figure = {"what": "mask", "expected": [[1.0, 0.0], [1.0, 1.0]], "got": [[1.0, 1.0], [1.0, 1.0]]}
    output = results_json(record(result(passed=False, message="mask differs", figure=figure)))["tests"][0]["output"]
    assert output.startswith("```\nmask differs\n") and output.endswith("\n```"), output
    assert output.count("\n") > 4, f"no text heatmap under the message:\n{output}"


def test_the_instructors_view_states_the_total():
    output = results_json(MIXED)["output"]
    assert "**Score: 12 / 10 (including 5 of 5 extra-credit points).**" in output, output
    assert "3 of 5 tests passed." in output, output


def test_the_instructors_view_says_it_shows_every_test_and_when_gradescope_shows_the_hidden_ones():
    """Gradescope shows an after_due_date test whole after the due date, and the total only then."""
    output = results_json(MIXED)["output"]
    assert ("This report shows every test. On Gradescope, 2 of these tests are not shown to the student at once: "
            "they are shown after the due date, and the student's total with them.") in output, output
    assert "details appear" not in output, output


def test_each_visibility_is_told_as_gradescope_applies_it():
    """after_published waits for the published grades; hidden is never shown and does not hold back the total."""
    later = record(result("masks", 3.0), result("heads", 1.0, visibility="hidden"),
                   result("heads", 1.0, visibility="after_published"), result("heads", 1.0, visibility="after_published"))
    assert ("3 of these tests are not shown to the student at once: 2 are shown once the grades are published, "
            "1 is never shown; the student's total is shown with the tests shown once the grades are published."
            ) in results_json(later)["output"]
    never = record(result("masks", 3.0), result("heads", 1.0, visibility="hidden"))
    assert "1 hidden test also counts: it is never shown. A passing" in results_json(never, student_view=True)["output"]


def test_an_all_visible_report_says_nothing_of_hidden_tests():
    output = results_json(record(result(points=3.0), result(points=2.0, passed=False, message="no")))["output"]
    assert "hidden" not in output and "not shown" not in output, output


def test_a_students_view_hides_the_total_while_points_are_hidden():
    output = results_json(MIXED, student_view=True)["output"]
    assert "Score:" not in output and "12" not in output, f"the total shows before the due date:\n{output}"
    assert "tests passed" not in output, f"how many hidden tests passed shows before the due date:\n{output}"
    assert "**Visible tests: 8 / 10 points, 2 of 3 passed.**" in output, output
    assert "2 hidden tests also count: they are shown after the due date, and your total with them." in output, output


def test_a_students_view_states_the_total_when_every_point_is_visible():
    visible = record(result(points=3.0), result(points=2.0, passed=False, message="no"))
    assert "**Score: 3 / 5.**" in results_json(visible, student_view=True)["output"]


def test_problems_and_events_are_listed_as_inert_markdown():
    rec = record(result(), problems=["*.py` [x](y)"], events=["timeout: 10 s", "timeout: 10 s"])
    output = results_json(rec)["output"]
    assert "- \\*.py\\` \\[x\\](y)" in output, output
    assert output.count("timeout: 10 s") == 1, "an event repeated by the grader should be listed once"


# --- visibility and extra_data ----------------------------------------------------------------

def test_each_test_keeps_the_visibility_the_grader_gave_it():
    assert [t["visibility"] for t in results_json(MIXED)["tests"]] == [
        "visible", "visible", "after_due_date", "after_due_date", "visible"]


def test_a_named_bug_is_in_the_tests_extra_data_and_only_there():
    tests = results_json(MIXED)["tests"]
    assert tests[3]["extra_data"] == {"mistake": "heads_not_split"}
    assert all("extra_data" not in t for i, t in enumerate(tests) if i != 3)


def test_extra_data_names_the_sandbox_and_the_submitters():
    who = (Submitter("Ada", "ada@example.edu", "s1"), Submitter("Alan", "alan@example.edu", ""))
    data = results_json(MIXED, who)["extra_data"]
    assert (data["isolation"], data["containment"]) == ("namespaces", ["cgroup-memory"])
    assert data["submitters"] == [{"name": "Ada", "email": "ada@example.edu", "sid": "s1"},
                                  {"name": "Alan", "email": "alan@example.edu", "sid": ""}]
    assert data["grader_error"] is False


def test_a_record_without_sandbox_fields_says_unknown():
    data = results_json({"tests": [result()]})["extra_data"]
    assert (data["isolation"], data["containment"]) == ("unknown", [])
    assert results_json({"tests": [result()]})["execution_time"] == 0.0


@pytest.mark.parametrize("where", ["test", "record"])
def test_a_grader_error_is_flagged_and_told_to_the_student(where):
    failing = result(passed=False, message="grader error: KeyError: 'x'", grader_error=where == "test")
    rec = record(failing, **({"grader_error": "RuntimeError: boom"} if where == "record" else {}))
    results = results_json(rec)
    assert results["extra_data"]["grader_error"] is True
    assert "Not a grade yet: the grader itself failed" in results["output"]
    assert "will re-run the grader before it counts" in results["output"]


# --- what loading the report modules costs ----------------------------------------------------

@pytest.mark.parametrize("module", ["autograder.parts", "autograder.reports.results", "autograder.reports.report"])
def test_report_modules_import_without_torch_pytest_or_matplotlib(module):
    code = f"import sys, {module}; print(sorted(m for m in ('torch', 'pytest', 'matplotlib') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", f"importing {module} loaded {run.stdout.strip()}"


@pytest.mark.parametrize("fields, status", [({"found": {"attention.py": "attention.py"}}, "graded"),
                                            ({"found": {}}, "no files"),
                                            ({"found": {}, "grader_error": "it broke"}, "grader error")],
                         ids=["files", "no-files", "grader-error"])
def test_the_status_follows_what_staging_found(fields, status):
    assert results_json(record(result(passed=False), **fields))["extra_data"]["status"] == status


def test_a_submission_with_no_files_says_so_once_at_the_top():
    output = results_json(record(result(passed=False), found={},
                                 problems=["you uploaded playground.ipynb; upload attention.py and mha.py"]))["output"]
    assert output.startswith("**Not graded: the submission has neither attention.py nor mha.py.**"), "no score, not 0"
    assert output.count("upload attention.py and mha.py") == 1 and "tests passed" not in output


def test_the_cpu_time_the_limits_count_is_in_extra_data_when_measured():
    assert results_json(record(result(), cpu_seconds=3.5))["extra_data"]["cpu_seconds"] == 3.5
    assert "cpu_seconds" not in results_json(record(result()))["extra_data"]
