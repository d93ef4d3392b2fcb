"""Set-up for the public tests: which files to test, points, and short failure messages.

Inside assignment/:   python -m pytest tests                 (tests the files next to tests/)
Any other folder:     python -m pytest tests --submission DIR

The tests never import your files directly: they ask for the ``attention`` and
``mha`` fixtures below, so a missing file or a syntax error becomes one clear
message per test instead of a crash of the whole run.
"""
import importlib
import linecache
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
ORDER = ["test_masks.py", "test_attention.py", "test_mha.py"]  # the order of the lab
FOOTER = "public tests: {earned}/{total} points (hidden tests run only on Gradescope)"


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
    folder = _scoreboard(config).folder
    path = folder / f"{name}.py"
    if not path.is_file():
        pytest.fail(f"{name}.py not found in {folder}", pytrace=False)
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # any import-time error is the student's to fix
        message = f"cannot import {name}.py: {type(exc).__name__}: {exc}"
    else:
        if Path(module.__file__).resolve() != path:
            message = f"`import {name}` found {module.__file__}, not {path}"
        else:
            return module
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def attention(request):
    """The student's attention.py, imported from the submission folder."""
    return _import("attention", request.config)


@pytest.fixture(scope="session")
def mha(request):
    """The student's mha.py, imported from the submission folder."""
    return _import("mha", request.config)


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
        except AssertionError:
            raise  # a plain assert in a test: pytest explains it best
        except Exception as exc:
            message = self._explain(exc)
            if message is None:
                raise
        pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback

    def _explain(self, exc):
        """A short account of an exception raised in the student's code, or None if it was not."""
        frames = []  # (function, file, line) of the student's frames, outermost first
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if Path(code.co_filename).resolve().parent == self.folder:
                where = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
                frames.append((where, Path(code.co_filename).name, tb.tb_lineno))
            last = tb
            tb = tb.tb_next
        if not frames:
            return None
        where, file, line = frames[-1]
        raised_here = Path(last.tb_frame.f_code.co_filename).resolve() == self.folder / file
        if isinstance(exc, NotImplementedError) and raised_here and last.tb_lineno == line:
            return f"{where} is not implemented yet (NotImplementedError in {file})"
        chain = " <- ".join(f"{w} ({f}, line {n})" for w, f, n in reversed(frames))
        source = linecache.getline(str(self.folder / file), line).strip()
        return f"{type(exc).__name__}: {exc}\n    raised in {chain}\n    > {source}"

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
