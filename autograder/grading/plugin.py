"""pytest plugin for the hidden suite: points, parts and visibility, and one result per test.

Tests declare ``@pytest.mark.points(n)`` and, for the public-style cases, ``@pytest.mark.public``;
each module declares its part with ``pytestmark = pytest.mark.part("masks")``. A failed test's
student-facing text is its ``StudentError`` message only: never a traceback, which would show
the hidden test's code and expected values. Any other exception is a grader error.

The suite also runs by hand, outside the batch grader: ``pytest tests_hidden --submission DIR``.
"""
import os
import re
import sys

import pytest

from autograder.parts import part_index
from autograder.paths import KIT_ROOT
from autograder.judging.errors import StudentError


class GradingContext:
    """What the batch grader hands to pytest for one submission, and the results it gets back."""

    def __init__(self, student, staged, config):
        self.load_errors = []  # "file:line: error" of each module of the suite that did not load
        self.bind(student, staged, config)

    def bind(self, student, staged, config):
        """Grade this submission (``runner.PreparedSuite``: a context registered before its submission was known)."""
        self.student, self.staged, self.config = student, staged, config
        self.results = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """With neither file staged no test is run (each would only fail to import): each is recorded
        as failed with no message of its own, and the report's overview says once what is wrong."""
        if self.staged is None or self.staged.found:  # None: no staging (the plugin's own tests)
            return None
        self.results.append(not_run(item, self.config))
        return True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.results.append(result_of(item, report, call, self.config))

    def pytest_configure(self, config):
        self.rootpath = config.rootpath  # what relative paths in pytest's texts are relative to

    def pytest_collection_modifyitems(self, items):
        """A failed test's result is read from its exception (``result_of``), never from pytest's text of it; yet
        pytest formats every failure's long traceback, --tb=no or not (a fifth of a stub's grader CPU), and drops
        it. Here a failure's text is its last line only."""
        for item in items:
            item.repr_failure = _last_line

    def pytest_collectreport(self, report):
        if report.failed:
            self.load_errors.append(load_error(report.longreprtext, report.nodeid, self.rootpath))


def _last_line(excinfo, style=None):
    """pytest's ``repr_failure`` reduced to the exception's own line(s) (``ExceptionInfo.exconly``)."""
    return excinfo.exconly()


def result_of(item, report, call, config):
    error = call.excinfo.value if call.excinfo else None
    grader_error = error is not None and not isinstance(error, StudentError)
    if report.skipped:
        message, grader_error = f"skipped: {_skip_reason(report)}", False
    elif grader_error:
        message = f"grader error: {type(error).__name__}: {error}"
    else:
        notes = [text for key, text in item.user_properties if key == "note"]
        message = str(error) if error is not None else "\n".join(notes)
    return {**_described(item, config), "where": where(item, error), "passed": report.passed, "message": message,
            "grader_error": grader_error,
            "mistake": getattr(getattr(error, "mistake", None), "name", None),
            "defects": list(getattr(getattr(error, "mistake", None), "defects", ())), "figure": getattr(error, "figure", None)}


def not_run(item, config):
    """The result of a test not run because the submission has no file to test."""
    return {**_described(item, config), "where": where(item), "passed": False, "message": "", "grader_error": False,
            "mistake": None, "figure": None}


def _described(item, config):
    points = item.get_closest_marker("points")
    part = item.get_closest_marker("part")
    public = item.get_closest_marker("public") is not None
    doc = (item.function.__doc__ or item.name).strip().splitlines()[0].rstrip(".")
    param = f" [{item.callspec.id}]" if hasattr(item, "callspec") else ""
    return {
        "name": doc + param,
        "nodeid": item.nodeid,
        "part": part.args[0] if part else "other",
        "points": float(points.args[0]) if points else 0.0,
        "visibility": config.public_visibility if public else config.hidden_visibility,
    }


def where(item, error=None):
    """"file:line" for the instructor: of the deepest frame in the suite's own files that ``error`` passed
    through, else of the test function. Kit-relative; never shown to students."""
    path, line = str(item.path), item.location[1] + 1
    suite = str(item.path.parent) + os.sep
    tb = error.__traceback__ if error is not None else None
    while tb is not None:  # the frames themselves: pytest's traceback entries build paths (ms per failed test)
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(suite):
            path, line = filename, tb.tb_lineno
        tb = tb.tb_next
    return f"{_kit_relative(path)}:{line}"


def load_error(text, nodeid, rootpath):
    """"file:line: error" from the text pytest gives for a module of the suite that does not load."""
    located = re.findall(r'File "([^"]+)", line (\d+)', text) or re.findall(r"^(\S[^\n:]*):(\d+): in ", text, re.M)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    place = f"{_kit_relative(os.path.join(rootpath, located[-1][0]))}:{located[-1][1]}" if located else nodeid
    return f"{place}: {errors[-1] if errors else 'does not load'}"


def _kit_relative(path):
    path = os.path.abspath(str(path))
    return os.path.relpath(path, KIT_ROOT) if path.startswith(KIT_ROOT + os.sep) else path


def _skip_reason(report):
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")  # pytest's own prefix: the message says "skipped:" already


# --- hooks and fixtures for every run (conftest.py of tests_hidden loads this module) -----------

def pytest_addoption(parser):
    parser.addoption("--submission", default=None,
                     help="grade this folder or zip by hand (the batch grader passes it itself)")


def pytest_configure(config):
    for line in ("points(n): points the test is worth", "part(name): the part of the lab it grades",
                 "public: a public-style case, its output shown at once (grading.yaml: visibility.public)"):
        config.addinivalue_line("markers", line)


def pytest_collection_modifyitems(items):
    """Report the parts in the lab's order, whatever the file names (the sort is stable)."""
    def item_part_index(item):
        marker = item.get_closest_marker("part")
        return part_index(marker.args[0] if marker else None)

    items.sort(key=item_part_index)


@pytest.fixture(scope="session")
def reference():
    """The reference solution, imported in the trusted grader (never in a child)."""
    solution = os.path.join(KIT_ROOT, "solution")
    if solution not in sys.path:
        sys.path.insert(0, solution)
    import attention
    import mha

    return attention, mha


def grading_context(config):
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, GradingContext):
            return plugin
    return None


@pytest.fixture(scope="session")
def student(request):
    """The batch grader's handle or, grading by hand (``--submission DIR``), a sandbox started here."""
    context = grading_context(request.config)
    if context is not None:
        yield context.student
        return
    from autograder.grading.by_hand import standalone_student

    path = request.config.getoption("--submission")
    if not path:
        pytest.exit("pass --submission DIR (a folder or zip holding attention.py and mha.py)", returncode=4)
    with standalone_student(path) as (handle, _):
        yield handle


@pytest.fixture(scope="session")
def staged(student):
    return student.staged
