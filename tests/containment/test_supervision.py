"""The batch never waits on a per-submission grader, nor a grader on its child, past a deadline.

A grader that does not send its results within the submission's time limit plus a margin is stopped
from outside (``batch.grade_all``, ``batch.grade_forked``) and its submission is reported as timed out:
a grade of 0 that says why, not a grader error. The rest of the class is graded as usual. And when a
grader dies, its sandboxed children die with it (``sandbox._wait_or_kill``), even one that swapped its
request pipe for one nobody will close.
"""
import json
import os
import signal
import time
from types import SimpleNamespace

import pytest

from autograder.grading import batch, reference_check
from autograder.config import Limits, load_config
from autograder.paths import KIT_ROOT
from autograder.paths import HIDDEN_TESTS
from autograder.grading.suite_points import part_points
from test_results import record, result

LIMIT = 1.0  # the submission's time limit in these tests; the margin is patched to 1 s too


def honest_record():
    return record(*(result(part, points) for part, points in part_points(HIDDEN_TESTS).items()))


def fake_grade_one(engine, source_path, slot=0, **options):
    """Stands in for runner.grade_one in the forked grader: folders named for a way to hang do so."""
    name = os.path.basename(source_path)
    if name == "sleeps":
        time.sleep(600)
    if name == "ignores_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    if name == "blocked_write":  # the hang of issue 23: a write into a full pipe nobody reads
        _, w = os.pipe()
        os.write(w, b"x" * (1 << 24))
    return honest_record()


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr(batch, "grade_one", fake_grade_one)
    monkeypatch.setattr(batch, "SUPERVISOR_MARGIN", 1.0)
    monkeypatch.setattr(batch, "STOP_GRACE", 1.0)
    monkeypatch.setattr(reference_check, "verify", lambda parts, grade: None)
    return SimpleNamespace(config=load_config(), level="rlimits", layers=[], tests_dir=HIDDEN_TESTS,
                           limits=Limits(submission_seconds=LIMIT))


def sources(tmp_path, *names):
    found = []
    for name in names:
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "attention.py").write_text("# placeholder\n")
        found.append(SimpleNamespace(id=name, path=str(tmp_path / "in" / name), submitters=()))
    return found


@pytest.mark.parametrize("hang", ["sleeps", "ignores_sigterm", "blocked_write"])
def test_a_hanging_grader_is_stopped_and_reported_as_timed_out_while_the_class_is_graded(engine, tmp_path, hang):
    out = tmp_path / "out"
    started = time.monotonic()
    outcome = batch.grade_all(engine, sources(tmp_path, hang, "control"), str(out), jobs=2)
    elapsed = time.monotonic() - started
    assert elapsed < LIMIT + batch.SUPERVISOR_MARGIN + batch.STOP_GRACE + 20, f"the batch took {elapsed:.1f} s"
    hung = json.loads((out / hang / "results.json").read_text())
    control = json.loads((out / "control" / "results.json").read_text())
    assert hung["score"] == 0 and not hung["extra_data"]["grader_error"], hung["extra_data"]
    assert "timed out" in hung["output"] and all("timed out" in t["output"] for t in hung["tests"])
    assert hung["extra_data"]["max_score"] == control["extra_data"]["max_score"] > 0
    assert control["score"] > 0 and not control["extra_data"]["grader_error"]
    assert not outcome.grader_errors and "timed out" in (out / hang / "feedback.md").read_text()


def test_the_single_submission_path_is_stopped_too(engine, tmp_path):
    """Gradescope's path: grade_forked returns a timed-out record, so results.json is written."""
    started = time.monotonic()
    got = batch.grade_forked(engine, sources(tmp_path, "blocked_write")[0].path)
    assert time.monotonic() - started < LIMIT + batch.SUPERVISOR_MARGIN + batch.STOP_GRACE + 20
    assert got["timed_out"] and not got.get("grader_error") and all(not t["passed"] for t in got["tests"])
    assert reference_check.failures_of(got), "a timed-out reference must not pass the reference check"


CHILD_SWAPS_ITS_REQUEST_PIPE = """
import os
r, w = os.pipe()
os.dup2(r, 3)  # the probe loop now waits on a pipe whose writer is this process: forever
"""


@pytest.mark.skipif(os.getuid() != 0, reason="the sandbox levels above rlimits need root")
def test_a_child_dies_with_the_grader_that_holds_its_pipes(tmp_path):
    from autograder import config
    from autograder.containment import isolation
    from autograder.containment.zygote import Zygote

    zygote = Zygote(isolation.choose_level(), hidden=[KIT_ROOT])
    try:
        scratch = tmp_path / "sub"
        scratch.mkdir(mode=0o755)
        tmp_path.chmod(0o755)
        (scratch / "attention.py").write_text(CHILD_SWAPS_ITS_REQUEST_PIPE)
        uid = zygote.next_uid(slot=0)
        os.chown(scratch, uid, uid)
        report_r, report_w = os.pipe()
        grader = os.fork()
        if grader == 0:  # the per-submission grader: spawns the child, then is killed holding its pipes
            try:
                child = zygote.spawn(str(scratch), config.Limits(call_seconds=10), uid)
                child.call({"import": "attention"})
                os.write(report_w, str(child.pid).encode())
                time.sleep(600)
            finally:
                os._exit(1)
        os.close(report_w)
        pid_text = os.read(report_r, 64)
        os.close(report_r)
        assert pid_text, "the grader did not start its child"
        os.kill(grader, signal.SIGKILL)
        os.waitpid(grader, 0)
        child_pid = int(pid_text)
        deadline = time.monotonic() + 5
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child_pid), "the child outlived the grader that held its pipes"
    finally:
        zygote.stop()


def _alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
