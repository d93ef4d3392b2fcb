"""The per-submission grader's pytest run: the suite prepared once in the engine (``runner.PreparedSuite``)
grades exactly as a fresh ``pytest.main`` in each grader does, runs once per forked grader, never in the
engine, and is not used for a suite that does not collect cleanly."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"


def run_python(code, *args):
    """Run ``code`` in a fresh interpreter of this venv (an engine of its own: nothing of this process's
    pytest session, modules or sys.path reaches the suite it prepares); returns its last stdout line as JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_prepared_suite_grades_every_sample_as_pytest_main_does():
    got = run_python("""
        import json, os, sys
        from autograder.grading import batch, runner
        engine = runner.Engine(graders=2)
        prepared = engine.suite
        same, used = {}, []
        original = runner.PreparedSuite.run
        def run(self, *args):  # in the forked grader: say that the prepared suite ran
            used.append(os.getpid())
            return original(self, *args)
        runner.PreparedSuite.run = run
        for kind in sorted(os.listdir(sys.argv[1])):
            engine.suite = prepared
            with_prepared = batch.grade_forked(engine, os.path.join(sys.argv[1], kind))
            engine.suite = None  # pytest.main in the grader, as before the suite was prepared
            with_main = batch.grade_forked(engine, os.path.join(sys.argv[1], kind))
            same[kind] = [with_prepared.get("tests"), with_prepared.get("grader_error")] == [
                with_main.get("tests"), with_main.get("grader_error")] and bool(with_main.get("tests"))
        engine.close()
        print(json.dumps({"clean": prepared.clean, "same": same, "ran_in_engine": bool(used)}))
    """, SAMPLES)
    assert got["clean"], "the shipped suite collects cleanly, so it is prepared"
    assert got["same"] and all(got["same"].values()), got["same"]
    assert not got["ran_in_engine"], "the prepared suite runs in the forked graders only"


@pytest.mark.slow
def test_a_prepared_suite_is_taken_once_in_each_forked_grader_and_never_in_the_engine():
    got = run_python("""
        import json, os
        from autograder.grading import runner
        suite = runner.PreparedSuite(runner.HIDDEN_TESTS)
        in_engine = suite.take() is not None
        read, write = os.pipe()
        if os.fork() == 0:  # as batch._fork_grader does
            first, second = suite.take() is not None, suite.take() is not None
            os.write(write, json.dumps([first, second]).encode())
            os._exit(0)
        os.close(write)
        first, second = json.loads(os.read(read, 100))
        print(json.dumps({"engine": in_engine, "first": first, "second": second,
                          "engine_after": suite.take() is not None}))
    """)
    assert got == {"engine": False, "first": True, "second": False, "engine_after": False}


@pytest.mark.slow
def test_a_suite_that_does_not_collect_is_not_prepared_and_each_grader_says_why(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text((ROOT / "tests_hidden" / "conftest.py").read_text())
    (suite / "test_broken.py").write_text("def test_one(:\n    pass\n")
    got = run_python("""
        import json, sys
        from autograder.grading import batch, runner
        engine = runner.Engine(graders=2, tests_dir=sys.argv[1])
        record = batch.grade_forked(engine, sys.argv[2])
        engine.close()
        print(json.dumps({"clean": engine.suite.clean, "error": record.get("grader_error", "")}))
    """, suite, SAMPLES / "reference")
    assert not got["clean"]
    assert "the hidden suite does not load" in got["error"] and "test_broken.py" in got["error"], got["error"]
