"""Grade one submission: stage it, run the hidden suite against a sandbox, return plain results.

The order of start-up matters for speed. The zygote (``zygote.Zygote``) is started before this
process imports torch, best by the command itself (``Engine(zygote=...)``), so that both import
torch at once; then the engine loads the reference and the hidden tests.
"""
import contextlib
import gc
import io
import os
import shutil
import tempfile
import time

from autograder.bounds import bound_record
from autograder.containment import isolation, sandbox
from autograder.config import Limits
from autograder.paths import HIDDEN_TESTS
from autograder.grading.stage import stage
from autograder.containment.zygote import Zygote

# pytest as the grader runs it: no third-party plugins (an instructor's machine may have any), and
# not the built-in ones that cost time for nothing here: unraisableexception and threadexception
# each run gc.collect() five times when a session ends (costly with torch loaded), logging wraps
# every test in log capture, and faulthandler's tracebacks would go to a console nobody reads.
PYTEST_ARGS = ["-q", "--tb=no", "--disable-plugin-autoload", "-p", "no:cacheprovider", "-p", "no:logging",
               "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:faulthandler"]


class SuiteError(RuntimeError):
    """The hidden suite itself failed to run: the grader's fault, never a student's."""


class Engine:
    """The warm state shared by every submission of a run."""

    def __init__(self, config=None, level=None, tests_dir=HIDDEN_TESTS, layers=None, zygote=None, graders=None):
        """``zygote``: one the caller started early (with the same level and layers), else one is started here.
        ``graders``: how many per-submission graders will be forked, where the caller knows (None: several)."""
        from autograder.config import load_config

        self.config = config or load_config()
        self.limits = Limits.of(self.config)
        self.level = level or isolation.choose_level()
        self.tests_dir = tests_dir
        self.layers = isolation.detect_layers(self.level) if layers is None else list(layers)
        self.zygote = zygote or Zygote(self.level, layers=self.layers)
        sandbox.warm_up()
        # Shared by the graders forked from here: each only runs the tests. One grader would pay for it all the same.
        self.suite = PreparedSuite(tests_dir) if graders is None or graders > 1 else None
        # Everything loaded so far lives for the whole run. Frozen, the garbage collector never
        # scans it again: the forked graders' collections stay cheap, and do not write to (and so
        # copy) the pages they share with this process.
        gc.freeze()

    def close(self):
        self.zygote.stop()


def grade_one(engine, source_path, slot=0, keep=None):
    """Grade the submission at ``source_path`` (folder or zip); returns a JSON-ready record. ``keep``: a dict
    that receives {file name: bytes} of the exact files graded, for the report's ``submitted/``."""
    import pytest

    from autograder.grading.plugin import GradingContext
    from autograder.grading.student import Student

    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="ag-sub-")
    os.chmod(scratch, 0o711)  # a sandbox uid may enter its own folder, never list the others
    try:
        staged = stage(source_path, os.path.join(scratch, "files"))
        os.chmod(staged.dir, 0o700)  # the grader's copy; each child gets its own (Student._fresh_scratch)
        if keep is not None:
            for name in staged.found:
                with open(os.path.join(staged.dir, name), "rb") as f:
                    keep[name] = f.read()
        student = Student(engine.zygote, staged, engine.limits, slot=slot)
        prepared = engine.suite.take() if engine.suite is not None else None
        try:
            if prepared is not None:
                context, code = prepared.run(student, staged, engine.config)
            else:
                context = GradingContext(student, staged, engine.config)
                with _quiet():
                    code = pytest.main([engine.tests_dir, *PYTEST_ARGS], plugins=[context])
        finally:
            student.close()
        if context.load_errors:
            raise SuiteError(f"the hidden suite does not load: {'; '.join(context.load_errors)}")
        if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or not context.results:
            raise SuiteError(f"the hidden suite in {engine.tests_dir} did not run (pytest exit code {int(code)})")
        return bound_record({  # the child's texts, bounded before any report is written
            "tests": context.results,
            "problems": staged.problems,
            "found": staged.found,
            "output": "\n".join(student.output),
            "output_dropped": student.output_dropped,  # the grader's count, apart from the student's text
            "events": student.events,
            "wall_timeouts": student.wall_timeouts,  # the grader's count: calls the wall clock stopped, not their CPU time
            "cpu_seconds": round(student.cpu_spent, 3),  # the CPU time of the submission's calls, as the grader measured it
            "isolation": engine.level,
            "containment": engine.layers + (["cgroup-memory", "cgroup-pids"] if student.cgroup else [])
                           + ([student.memory_note] if student.memory_note else []),
            "execution_time": round(time.monotonic() - started, 3),
        })
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class PreparedSuite:
    """The hidden suite as pytest has it just before its first test: configured, its session started and its
    tests collected, once, in the engine. A grader forked from the engine takes it (``take``) and only runs the
    tests: pytest's start-up, its plugins' fixtures and the collection (about a third of a grader's own CPU
    time) are paid once a run, not once a submission. Each forked grader has its own copy, never run before.

    This drives pytest's session as ``pytest.main`` does (``_pytest.main.wrap_session``), split at the fork;
    ``_prepareconfig`` is pytest's own, private, start-up (pytest is pinned; tests/grading/test_runner.py
    checks that both ways give the same results). A suite that does not collect cleanly is not prepared:
    ``pytest.main`` then runs it in each grader and says what is wrong."""

    def __init__(self, tests_dir):
        import pytest
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        from autograder.grading.plugin import GradingContext

        self.context = GradingContext(None, None, None)  # bound to its submission in the grader (``run``)
        # pytest's reporter keeps the stream it was configured with: one that stays open, with nothing to read
        self.out = open(os.devnull, "w")
        # --capture=no: capturing would take this process's stdout and stderr from here on, not only the tests'
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.out):
            self.config = _prepareconfig([str(tests_dir), *PYTEST_ARGS, "--capture=no"], plugins=[self.context])
            self.session = Session.from_config(self.config)
            self.session.exitstatus = pytest.ExitCode.OK
            self.config._do_configure()
            self.config.hook.pytest_sessionstart(session=self.session)
            self.config.hook.pytest_collection(session=self.session)
        self.clean = bool(self.session.items) and not self.session.testsfailed and not self.context.load_errors
        self.prepared_in = os.getpid()
        self.taken = False

    def take(self):
        """This suite, in a grader forked after it was prepared, once; else None (``pytest.main`` instead)."""
        if not self.clean or self.taken or os.getpid() == self.prepared_in:
            return None
        self.taken = True
        return self

    def run(self, student, staged, config):
        """Run every test on ``student``; returns (the context with its results, pytest's exit code)."""
        import pytest

        context, session = self.context, self.session
        context.bind(student, staged, config)
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.out):
            try:
                self.config.hook.pytest_runtestloop(session=session)
            finally:  # session fixtures' teardown, as after pytest.main's last test
                session.exitstatus = pytest.ExitCode.TESTS_FAILED if session.testsfailed else pytest.ExitCode.OK
                self.config.hook.pytest_sessionfinish(session=session, exitstatus=session.exitstatus)
        return context, session.exitstatus


@contextlib.contextmanager
def _quiet():
    """pytest's own terminal output is not the report; keep it off the grader's console."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), contextlib.redirect_stderr(io.StringIO()):
        yield
