"""The hidden suite's pytest plugin (autograder/grading/plugin.py): what one test's result holds.

A small suite written here runs in-process under the plugin, with a ``GradingContext`` collecting
results as the batch grader's does; no sandbox is involved.
"""
import pytest

from autograder.grading import plugin
from autograder.config import Config
from autograder.grading.plugin import GradingContext
from autograder.grading.stage import Staged

pytest_plugins = ["pytester"]

HEADS = '''
import pytest
from autograder.judging.errors import StudentError

pytestmark = pytest.mark.part("heads")


@pytest.mark.points(2)
@pytest.mark.public
def test_public_case():
    """A public case passes."""


@pytest.mark.points(3)
def test_wrong_output():
    """The student's output is wrong."""
    expected_secret = "HIDDEN-EXPECTED-VALUE"
    raise StudentError("merge_heads: wrong values at (0, 1)")


@pytest.mark.points(1)
def test_grader_bug():
    """The grader itself breaks."""
    raise KeyError("no such case")


@pytest.mark.points(1)
def test_skipped():
    """Skipped."""
    pytest.skip("the submission has no step()")


@pytest.mark.points(1)
@pytest.mark.parametrize("size", [1, 2], ids=["one", "two"])
def test_sizes(size):
    """Each size works."""


def test_with_a_note(record_property):
    """Passes with a note."""
    record_property("note", "passed on torch's attention: fix attention.py first")
'''

MASKS = '''
import pytest

pytestmark = pytest.mark.part("masks")


@pytest.mark.points(1)
def test_mask():
    """A mask case."""
'''


@pytest.fixture
def results(pytester):
    """{name: result} for the two modules above, run under the plugin as the batch grader runs them."""
    pytester.makepyfile(test_a_heads=HEADS, test_z_masks=MASKS)
    context = GradingContext(student=None, staged=None, config=Config(hidden_visibility="after_due_date"))
    pytester.runpytest_inprocess("-p", "no:cacheprovider", plugins=[context, plugin])
    return {r["name"]: r for r in context.results}, [r["name"] for r in context.results]


def test_points_part_and_visibility_come_from_the_markers(results):
    by_name, _ = results
    public, hidden = by_name["A public case passes"], by_name["The student's output is wrong"]
    assert (public["points"], public["part"], public["visibility"], public["passed"]) == (2.0, "heads", "visible", True)
    assert (hidden["points"], hidden["visibility"], hidden["passed"]) == (3.0, "after_due_date", False)


def test_a_student_error_reports_its_message_and_nothing_of_the_tests_code(results):
    failed = results[0]["The student's output is wrong"]
    assert failed["message"] == "merge_heads: wrong values at (0, 1)" and not failed["grader_error"]
    assert "HIDDEN-EXPECTED-VALUE" not in str(failed), "the hidden test's code reached the result"


def test_any_other_exception_is_a_grader_error_not_the_students_failure(results):
    broken = results[0]["The grader itself breaks"]
    assert broken["grader_error"] and not broken["passed"]
    assert broken["message"].startswith("grader error: KeyError")


def test_a_skipped_test_says_why_and_is_no_grader_error(results):
    skipped = results[0]["Skipped"]
    assert skipped["message"] == "skipped: the submission has no step()" and not skipped["grader_error"]


def test_a_parametrized_test_is_named_by_its_docstring_and_case(results):
    assert {"Each size works [one]", "Each size works [two]"} <= set(results[0])


def test_a_passed_test_carries_its_notes(results):
    assert results[0]["Passes with a note"]["message"] == "passed on torch's attention: fix attention.py first"


def test_a_test_without_points_is_worth_nothing(results):
    assert results[0]["Passes with a note"]["points"] == 0.0


def test_results_come_in_the_labs_order_of_parts_whatever_the_file_names(results):
    _, order = results
    assert order[0] == "A mask case", f"masks is the lab's first part, but the results start {order[:2]}"



def line_of(source, text):
    """The line of ``text`` in the file pytester.makepyfile writes from ``source`` (it drops leading newlines)."""
    return source.lstrip("\n").splitlines().index(text) + 1


def test_a_grader_error_names_the_suites_file_and_line_where_it_was_raised(results):
    line = line_of(HEADS, '    raise KeyError("no such case")')
    assert results[0]["The grader itself breaks"]["where"].endswith(f"test_a_heads.py:{line}")


def test_a_failed_test_names_the_line_that_failed(results):
    line = line_of(HEADS, '    raise StudentError("merge_heads: wrong values at (0, 1)")')
    assert results[0]["The student's output is wrong"]["where"].endswith(f"test_a_heads.py:{line}")


@pytest.mark.parametrize("source, line, error", [
    ("def test_x(:\n    pass\n", 1, "SyntaxError"),
    ("import pytest\nfrom nowhere_at_all import thing\n", 2, "ModuleNotFoundError: No module named 'nowhere_at_all'"),
    ("import pytest\n\nvalue = undefined_name\n", 3, "NameError: name 'undefined_name' is not defined"),
], ids=["syntax", "import", "name"])
def test_a_module_that_does_not_load_is_named_with_its_line_and_error(pytester, source, line, error):
    pytester.makepyfile(test_broken=source)
    context = GradingContext(student=None, staged=None, config=Config())
    pytester.runpytest_inprocess("-p", "no:cacheprovider", plugins=[context, plugin])
    assert len(context.load_errors) == 1, context.load_errors
    assert f"test_broken.py:{line}: " in context.load_errors[0] and error in context.load_errors[0], context.load_errors


def test_with_neither_file_staged_no_test_runs_and_each_fails_without_a_message_of_its_own(pytester):
    """The overview says once what is wrong; no test body (or fixture) runs to say ModuleNotFoundError."""
    pytester.makepyfile(test_a_heads=HEADS, test_z_masks=MASKS)
    context = GradingContext(student=None, staged=Staged(dir="", found={}), config=Config())
    pytester.runpytest_inprocess("-p", "no:cacheprovider", plugins=[context, plugin])
    assert len(context.results) == 8
    assert all(not r["passed"] and r["message"] == "" and not r["grader_error"] for r in context.results)
    assert sum(r["points"] for r in context.results) == 2 + 3 + 1 + 1 + 1 + 1 + 1, "every test keeps its points"
