"""Set-up for the public tests: which files to test, points, and short failure messages.

Inside assignment/:   python -m pytest tests                 (tests the files next to tests/)
Any other folder:     python -m pytest tests --submission DIR

The tests never import your files directly: they ask for the ``attention`` and
``mha`` fixtures below, so a missing file or a syntax error becomes one clear
message per test instead of a crash of the whole run.

The cases themselves are in cases.py: a test module lists its parts in ``PARTS``,
and its test that takes ``case`` runs once per case of those parts.
"""
import ast
import functools
import gc
import importlib.util
import sys
import types
from pathlib import Path

import pytest

try:
    import torch
except ModuleNotFoundError:
    pytest.exit("torch is not installed for this python: activate your venv "
                f"(README.md, 'Set up Python'; this python is {sys.executable})", returncode=4)
# torch's objects live as long as the run: frozen, they are skipped by the full garbage collections
# pytest makes when the run ends, which would otherwise scan all of torch (a fifth of a second).
gc.freeze()

from cases import STAND_IN_NOTE, cases_of, known_good_attention_module
from checks import CheckFailed, ForbiddenCall, NotWritten, explain, import_student, watch_forbidden_calls

HERE = Path(__file__).resolve().parent
ORDER = ["test_masks.py", "test_attention.py", "test_mha.py", "test_extra.py"]  # the order of the lab
FOOTER = "public tests: {earned}/{total} points (your grade also counts the hidden tests)"
PARTIAL = " (partial run: {ran} of {tests} tests)"
# What the grader does with a broken rule: the run counts the tests here, the rule's own points are the grader's.
GRADER_ON_RULE = ("the grade: every test that runs a refused file or calls a forbidden function gets no points ({tests} of the public "
                  "tests here, counted as failed above), and the from-scratch rule's points are lost")


def pytest_addoption(parser):
    parser.addoption(
        "--submission",
        metavar="DIR",
        default=str(HERE.parent),
        help="folder holding attention.py and mha.py (default: the folder that contains tests/)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): how many points the test is worth")
    config.addinivalue_line("markers", "extra_credit: optional, reported on its own line, not in the points")
    folder = Path(config.getoption("submission")).resolve()
    sys.path.insert(0, str(folder))  # first, so `from attention import ...` in mha.py finds yours
    sys.dont_write_bytecode = True  # leave no __pycache__ in the submission folder
    watch_forbidden_calls(folder)  # before your files are imported: a name they import is watched too
    config.pluginmanager.register(Scoreboard(folder), "lab-scoreboard")


def _scoreboard(config):
    return config.pluginmanager.get_plugin("lab-scoreboard")


REFUSED_NOTE = ("the from-scratch rule refuses attention.py, so mha.py was tested on attention built from torch, "
                "as the grader does")


class RefusedModule:
    """A file the from-scratch rule refuses, as the grader treats it: it is never run, and every test that
    uses one of its names fails with the grader's words (submit.py's ``refusal``)."""

    def __init__(self, violations):
        self._violations = violations

    def __getattr__(self, name):
        raise ForbiddenCall(load_submit().refusal(self._violations, name))


def refused(folder, module):
    """The findings that make the grader refuse ``module``.py ("hidden": code it cannot check), or []."""
    try:
        return [v for v in load_submit().file_findings(folder, f"{module}.py") if v.kind == "hidden"]
    except (OSError, SyntaxError, ValueError, AttributeError):
        return []  # missing, unreadable or unparsable: the import says so; no submit.py: make submit checks


def _import(name, config):
    scoreboard = _scoreboard(config)
    folder = scoreboard.folder
    runs = (name, "attention") if name == "mha" else (name,)  # mha.py imports attention.py
    # The same line `make submit` and the grader give for bytes Python would not read:
    message = next(filter(None, (unreadable(folder / f"{module}.py") for module in runs)), None)
    if message is None and refused(folder, name):
        return RefusedModule(refused(folder, name))
    if message is None and name == "mha" and refused(folder, "attention"):
        return _import_on_stand_in(scoreboard, REFUSED_NOTE)  # as the grader does: a refused attention.py never runs
    if message is None:
        try:
            return import_student(name, folder)
        except CheckFailed as exc:
            message = str(exc)
        if name == "mha" and (folder / "mha.py").is_file() and _attention_fails(folder):
            return _import_on_stand_in(scoreboard, STAND_IN_NOTE)
    pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback


def _import_on_stand_in(scoreboard, note):
    """As the grader does: mha.py imported on attention built from torch, so a broken or refused
    attention.py costs the attention points, not the MHA points too."""
    sys.modules["attention"] = known_good_attention_module()
    try:
        module = import_student("mha", scoreboard.folder)
    except CheckFailed as exc:
        message = str(exc)
    else:
        scoreboard.notes.append(note)
        return module
    pytest.fail(message, pytrace=False)


def _attention_fails(folder):
    try:
        import_student("attention", folder)
    except CheckFailed:
        return True
    return False


def pytest_generate_tests(metafunc):
    """A test that takes ``case`` runs once per case of the parts its module lists in PARTS."""
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", [
            pytest.param(case, id=case.name, marks=[pytest.mark.points(case.points)]
                         + ([pytest.mark.extra_credit] if case.extra else []))
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


@pytest.fixture
def note(request):
    """``note(text)`` shows ``text`` under the test's name at the end of the run (None shows nothing)."""
    def add(text):
        if text:
            _scoreboard(request.config).notes.append(f"{request.node.name}: {text}")
    return add


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)  # the same random weights on every run


@functools.lru_cache(maxsize=1)
def load_submit():
    """assignment/submit.py, imported by path: its reader and scanner are the ones `make submit` uses."""
    spec = importlib.util.spec_from_file_location("lab_submit", HERE.parent / "submit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule_breaks(folder):
    """One line per use of a forbidden function in the two files, from submit.py's scanner."""
    try:
        scanner = load_submit()
    except (OSError, SyntaxError):
        return []  # no submit.py next to tests/: `make submit` checks the rules anyway
    found = []
    for name in ("attention.py", "mha.py"):
        try:
            found += [v.message for v in scanner.file_findings(folder, name)]
        except (OSError, SyntaxError, ValueError):
            pass  # the tests themselves say that the file is missing, unreadable or does not parse
    return found


def unreadable(path):
    """submit.py's one line for a file whose bytes Python would not read as source, else None (also
    when the file is missing, or there is no submit.py next to tests/: the import then says what is wrong)."""
    try:
        load_submit().read_source(path)
    except (OSError, SyntaxError, AttributeError):
        return None
    except ValueError as exc:
        return str(exc)
    return None


def undefined(exc, folder):
    """For a name the tests look up in your file that it does not define (an empty file, say), the grader's
    words: it is not written yet (the grade gives such a file none of the from-scratch rule's points either).
    None for any other error."""
    module = getattr(exc, "obj", None)
    if not (isinstance(exc, AttributeError) and isinstance(module, types.ModuleType)
            and Path(getattr(module, "__file__", None) or "").resolve().parent == folder):
        return None
    file = Path(module.__file__).name
    empty = " (the file holds no code)" if not holds_code(folder / file) else ""
    return f"{exc.name} is not written yet: {file} does not define it{empty}"


def holds_code(path):
    """Whether the file at ``path`` holds a statement other than a docstring (the grader's "holds no code")."""
    try:
        body = ast.parse(path.read_text(encoding="utf-8-sig")).body
    except (OSError, SyntaxError, ValueError):
        return True
    return not all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


class Scoreboard:
    """Adds up the points of passing tests and turns student exceptions into one-line failures."""

    def __init__(self, folder):
        self.folder = folder
        self.points = {}  # nodeid -> points, of every test (also those a -k run leaves out)
        self.extra = set()  # nodeids of the optional extra-credit tests: not in the points
        self.passed = set()
        self.failed = set()
        self.unwritten = set()  # extra-credit tests skipped because their code is not written
        self.forbidden = set()  # tests failed because the student's code called a forbidden built-in
        self.notes = []

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: ORDER.index(item.path.name) if item.path.name in ORDER else len(ORDER))
        for item in items:
            marker = item.get_closest_marker("points")
            if marker is None:
                raise pytest.UsageError(f"{item.nodeid} has no @pytest.mark.points(n)")
            if item.get_closest_marker("extra_credit"):
                self.extra.add(item.nodeid)
            else:
                self.points[item.nodeid] = marker.args[0]

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        try:
            return (yield)
        except CheckFailed as exc:
            message = str(exc)  # a case failed: its message says it all
            if isinstance(exc, ForbiddenCall):
                self.forbidden.add(pyfuncitem.nodeid)
        except NotWritten as exc:  # an optional function the file does not define: as if not written yet
            self.unwritten.add(pyfuncitem.nodeid)
            pytest.skip(f"optional extra credit, not written yet: {exc}")
        except Exception as exc:
            message = explain(exc, self.folder) or undefined(exc, self.folder)
            if message is None:
                raise  # not from the student's code: pytest explains it best
            if isinstance(exc, NotImplementedError) and pyfuncitem.nodeid in self.extra:
                self.unwritten.add(pyfuncitem.nodeid)
                pytest.skip(f"optional extra credit, not written yet: {message}")
        pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def extra_line(self, selected):
        """'extra credit (optional, not in the points): ...', or None if no extra-credit test ran."""
        ran = self.extra & selected & (self.passed | self.failed | self.unwritten)
        if not ran:
            return None
        counts = [(len(ran & self.passed - self.failed), "passed"), (len(ran & self.failed), "failed"),
                  (len(ran & self.unwritten), "not written yet")]
        return "extra credit (optional, not in the points): " + ", ".join(f"{n} {what}" for n, what in counts if n)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session):
        result = yield  # the terminal summary is written in here; the score goes last
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not self.points or session.config.option.collectonly:
            return result
        selected = {item.nodeid for item in session.items}
        if session.exitstatus == pytest.ExitCode.TESTS_FAILED and self.failed and self.failed <= self.extra:
            session.exitstatus = pytest.ExitCode.OK  # only optional tests failed: the run passes on the core
        breaks = rule_breaks(self.folder)
        for line in breaks:
            reporter.write_line(f"RULE BROKEN: {line} (make submit refuses this file)", red=True, bold=True)
        if breaks or self.forbidden:
            reporter.write_line(GRADER_ON_RULE.format(tests=len(self.forbidden & selected)), red=True, bold=True)
        if (breaks or self.forbidden) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        for line in self.notes:
            reporter.write_line(f"note: {line}")
        extra = self.extra_line(selected)
        if extra:
            reporter.write_line(extra)
        earned = sum(self.points[n] for n in self.passed - self.failed if n in self.points)
        line = FOOTER.format(earned=earned, total=sum(self.points.values()))
        ran = len((self.passed | self.failed) & set(self.points))
        if ran < len(self.points):
            line += PARTIAL.format(ran=ran, tests=len(self.points))
        reporter.write_line(line, bold=True)
        return result
