"""Set-up for the public tests: which files to test, points, and short failure messages.

Inside assignment/:   python -m pytest tests                 (tests the files next to tests/)
Any other folder:     python -m pytest tests --submission DIR

The tests never import your files directly: they ask for the ``attention`` and
``mha`` fixtures below, so a missing file or a syntax error becomes one clear
message per test instead of a crash of the whole run.

The cases themselves are in cases.py: a test module lists its parts in ``PARTS``,
and its test that takes ``case`` runs once per case of those parts.
"""
import sys
from pathlib import Path

import pytest
import torch

from cases import cases_of
from checks import CheckFailed, explain, import_student

HERE = Path(__file__).resolve().parent
ORDER = ["test_masks.py", "test_attention.py", "test_mha.py"]  # the order of the lab
FOOTER = "public tests: {earned}/{total} points (your grade also counts the hidden tests)"


def pytest_addoption(parser):
    parser.addoption(
        "--submission",
        metavar="DIR",
        default=str(HERE.parent),
        help="folder holding attention.py and mha.py (default: the folder that contains tests/)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): how many points the test is worth")
    folder = Path(config.getoption("submission")).resolve()
    sys.path.insert(0, str(folder))  # first, so `from attention import ...` in mha.py finds yours
    sys.dont_write_bytecode = True  # leave no __pycache__ in the submission folder
    config.pluginmanager.register(Scoreboard(folder), "lab-scoreboard")


def _scoreboard(config):
    return config.pluginmanager.get_plugin("lab-scoreboard")


def _import(name, config):
    try:
        return import_student(name, _scoreboard(config).folder)
    except CheckFailed as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback


def pytest_generate_tests(metafunc):
    """A test that takes ``case`` runs once per case of the parts its module lists in PARTS."""
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", [
            pytest.param(case, id=case.name, marks=pytest.mark.points(case.points))
            for case in cases_of(*metafunc.module.PARTS)
        ])


@pytest.fixture(scope="session")
def attention(request):
    """The student's attention.py, imported from the submission folder."""
    return _import("attention", request.config)


@pytest.fixture(scope="session")
def mha(request):
    """The student's mha.py, imported from the submission folder."""
    return _import("mha", request.config)


@pytest.fixture
def student(request, case):
    """The student's modules the case needs, by name: ``student("mha")`` is the ``mha`` fixture.

    They are imported here, at set-up, so a file that does not import is an error of the set-up.
    """
    return {name: request.getfixturevalue(name) for name in case.needs}.__getitem__


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)  # the same random weights on every run


class Scoreboard:
    """Adds up the points of passing tests and turns student exceptions into one-line failures."""

    def __init__(self, folder):
        self.folder = folder
        self.points = {}  # nodeid -> points
        self.passed = set()
        self.failed = set()

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: ORDER.index(item.path.name) if item.path.name in ORDER else len(ORDER))
        for item in items:
            marker = item.get_closest_marker("points")
            if marker is None:
                raise pytest.UsageError(f"{item.nodeid} has no @pytest.mark.points(n)")
            self.points[item.nodeid] = marker.args[0]

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        try:
            return (yield)
        except CheckFailed as exc:
            message = str(exc)  # a case failed: its message says it all
        except Exception as exc:
            message = explain(exc, self.folder)
            if message is None:
                raise  # not from the student's code: pytest explains it best
        pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session):
        result = yield  # the terminal summary is written in here; the score goes last
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and self.points and not session.config.option.collectonly:
            earned = sum(self.points[n] for n in self.passed - self.failed if n in self.points)
            total = sum(self.points.values())
            reporter.write_line(FOOTER.format(earned=earned, total=total), bold=True)
        return result
