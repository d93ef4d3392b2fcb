"""Grade many submissions: one forked trusted grader per submission, ``jobs`` at a time.

Each per-submission grader is forked from the warm engine (torch, reference and suite already
loaded), grades, writes its reports, sends the results back as JSON over a pipe and exits: the
reports (and their pictures) are made ``jobs`` at a time. If a grader fails, the parent writes
its report. Each report is written as soon as its submission finishes, so a killed batch keeps
what it finished and a re-run grades only the rest. Results do not depend on ``jobs`` or on the
order: every case is seeded and no state is shared between submissions.

The batch never waits on a grader without a deadline: one that has not sent its results within the
submission's time limit plus ``SUPERVISOR_MARGIN`` is stopped from here (SIGTERM, then SIGKILL; its
sandboxed children die with it, see ``sandbox._wait_or_kill``) and its submission is reported as timed
out: a grade of 0 with the reason, not a grader error. Only student code makes a grader that slow (the
grader's own work is bounded), and a grader error would let a student skip the daily limit at will.
"""
import gc
import json
import os
import select
import signal
import sys
import time
import traceback

from autograder.grading import fingerprint, reference_check, resume
from autograder.containment import isolation
from autograder.reports import report
from autograder.reports.inert_text import clean
from autograder.config import WALL_BACKSTOP
from autograder.parts import PART_TITLES
from autograder.paths import HIDDEN_TESTS
from autograder.grading.runner import Engine, grade_one
from autograder.containment.zygote import Zygote

# What a per-submission grader may take beyond the submission's time limit (its calls never run past it):
# starting pytest and the children, closing them, drawing the report's pictures. Measured: the reference,
# pictures included, takes under 15 s on a loaded two-core machine.
SUPERVISOR_MARGIN = 60.0
STOP_GRACE = 5.0  # seconds a grader gets after SIGTERM to kill its children and remove its files


def grade_all(engine, sources, out_dir, jobs=1, force=False, progress=None):
    """Grade ``sources`` into ``out_dir``; returns a ``BatchOutcome``.

    First the reference, unless its verdict for this grader is known (``reference_check``): a suite
    it does not pass raises ``SuiteBroken`` before any student is graded. Then each submission whose
    finished report was graded from the same files by the same grader (``fingerprint``) is reused;
    every other one is graded, and a stale report says why it was regraded.
    """
    parts = fingerprint.grader_parts(engine.config, engine.level, engine.tests_dir)
    reference_check.verify(parts, lambda: grade_forked(engine, fingerprint.REFERENCE_DIR))
    outcome, finished, todo = resume.plan(parts, sources, out_dir, force)
    if progress:
        progress.start(len(todo), len(outcome.skipped), outcome.regraded)
    running = {}  # read fd -> (pid, source, slot, chunks, stamp, deadline)
    free_slots = list(range(max(1, jobs)))
    queue = list(todo)
    preloaded = False
    while queue or running:
        while queue and free_slots:
            source, current, regraded = queue.pop(0)
            slot = free_slots.pop(0)
            stamp = {"fingerprint": current, "regraded": regraded}
            fd, pid = _fork_grader(engine, source.path, slot, write_to=(out_dir, source, stamp))
            running[fd] = (pid, source, slot, [], stamp, time.monotonic() + _grader_seconds(engine))
        if queue and not preloaded:  # while the first graders run, for the ones forked after them
            _preload_pictures()
            preloaded = True
        soonest = min(entry[5] for entry in running.values())
        ready, _, _ = select.select(list(running), [], [], max(0.0, soonest - time.monotonic()))
        overdue = [fd for fd, entry in running.items() if fd not in ready and time.monotonic() > entry[5]]
        for fd in ready + overdue:
            pid, source, slot, chunks, stamp, _ = running[fd]
            if fd in ready:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    chunks.append(chunk)
                    continue
                _, status = os.waitpid(pid, 0)
                data = b"".join(chunks)
                written = (_decoded(data) or {}).get("written")
                if written is None:  # the grader failed: its report says so
                    record = {**_record_from(data, status), **stamp}
                    sys.stderr.write(f"grader error on {clean(source.id)}: {record['grader_error']}\n")
            else:  # past its deadline: stopped from here, whatever it was waiting on
                _stop(pid)
                written, record = None, {**_timed_out_record(engine), **stamp}
                sys.stderr.write(f"timed out: {clean(source.id)} was stopped after {_grader_seconds(engine):g} s\n")
            os.close(fd)
            del running[fd]
            free_slots.append(slot)
            if written is None:
                written = report.write_submission(out_dir, source.id, record, source.submitters)
            if written["extra_data"]["grader_error"]:
                outcome.grader_errors.append(source.id)
            finished[source.id] = written
            outcome.graded.append(source.id)
            if progress:
                progress.advance(source.id, finished[source.id])
    return resume.finish(outcome, sources, finished, out_dir, engine.config)


def grade_forked(engine, source_path, slot=0):
    """Grade one submission in a forked grader and return its record (Gradescope's single-submission path);
    past the grader's deadline it is stopped and the record says the submission timed out."""
    return start_forked(engine, source_path, slot)()


def start_forked(engine, source_path, slot=0):
    """Fork ``grade_forked``'s grader now; returns a function that waits for its record (``make validate``
    grades the reference and the stubs side by side, in two slots)."""
    fd, pid = _fork_grader(engine, source_path, slot)
    deadline = time.monotonic() + _grader_seconds(engine)
    return lambda: _record_of(engine, fd, pid, deadline)


def _record_of(engine, fd, pid, deadline):
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                _stop(pid)
                return _timed_out_record(engine)
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return _record_from(b"".join(chunks), status)


def _grader_seconds(engine):
    """Wall-clock seconds a per-submission grader may take: the submission's wall-clock backstop (its budget
    counts CPU time, so a loaded machine may stretch it up to ``WALL_BACKSTOP`` times), plus a margin."""
    return engine.limits.submission_seconds * WALL_BACKSTOP + SUPERVISOR_MARGIN


def _stop(pid):
    """End a per-submission grader: SIGTERM lets it close its children and remove its scratch files
    (``_interrupted``); SIGKILL after ``STOP_GRACE`` whatever it does. Its children die with it either way."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
    ends = time.monotonic() + STOP_GRACE
    while time.monotonic() < ends:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)


def _timed_out_record(engine):
    """The record of a submission whose grader was stopped: every part failed, with the reason.

    Its parts and points are the suite's (``suite_points``), so the report is out of the same maximum as
    every other. Visible at once: a student sees why the grade is 0, and it reveals no hidden test."""
    from autograder.grading.suite_points import part_points

    seconds = _grader_seconds(engine)
    reason = (f"timed out: grading this submission took longer than {seconds:g} s, so it was stopped "
              f"(its code kept the grader waiting past the submission's limit)")
    tests = [{"name": f"{PART_TITLES.get(part, part)}: not graded (timed out)", "part": part, "points": points,
              "passed": False, "message": reason, "visibility": "visible", "nodeid": f"{part} (timed out)"}
             for part, points in part_points(engine.tests_dir).items()]
    return {"tests": tests, "problems": [], "output": "", "events": [reason], "timed_out": True,
            "isolation": engine.level, "containment": list(engine.layers), "execution_time": round(seconds, 3)}


def verify_suite(config):
    """The reference's verdict (``reference_check.verify``) for commands that ship the suite rather than
    grade (``make gradescope``, ``make nbgrader-course``): graded in a sandbox of its own when not cached."""
    level = isolation.choose_level()
    parts = fingerprint.grader_parts(config, level, HIDDEN_TESTS)
    return reference_check.verify(parts, lambda: grade_alone(config, level, fingerprint.REFERENCE_DIR))


def grade_alone(config, level, source_path):
    """One submission's record, graded in a sandbox of its own (the reference, or ``make validate``'s stubs)."""
    layers = isolation.detect_layers(level)
    zygote = Zygote(level, layers=layers)
    try:
        engine = Engine(config, level=level, layers=layers, zygote=zygote, graders=1)
        return grade_forked(engine, source_path)
    finally:
        zygote.stop()
        zygote.kill_sandbox_users()


def _preload_pictures():
    """Load what pictures draw with here, once: the graders forked after this draw feedback.html's
    heatmaps without loading it again. A run with no grader left to fork never loads it here."""
    from autograder.reports import pictures

    pictures.preload()
    gc.freeze()  # like the engine's own state (runner.Engine)


def _fork_grader(engine, source_path, slot, write_to=None):
    """Fork a grader for one submission; returns (read fd, pid). It sends back its record or,
    given ``write_to`` = (out_dir, source, stamp), writes the reports (``stamp``: fingerprint and reason) and sends ``{"written": results}``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:  # whatever happens here, this process never returns into the caller's code
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, _interrupted)
            graded_files = {}
            try:
                record = grade_one(engine, source_path, slot=slot, keep=graded_files)
            except BaseException as err:  # the grader's own failure: report it as such
                record = {"grader_error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-4000:]}
            if write_to:
                record.update(write_to[2])  # the fingerprint, and why it is regraded
            if write_to and not record.get("grader_error"):
                out_dir, source, _ = write_to
                try:
                    record = {"written": report.write_submission(out_dir, source.id, record, source.submitters,
                                                                 submitted=graded_files)}
                except BaseException as err:
                    record = {"grader_error": f"writing the report: {type(err).__name__}: {err}",
                              "trace": traceback.format_exc()[-4000:]}
            data = json.dumps(record).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(0)
    os.close(write_fd)
    return read_fd, pid


def _interrupted(signum, frame):
    """SIGTERM from the batch (``_stop``): unwind like Ctrl-C, which pytest does not count as a test's
    failure, so ``grade_one`` closes the submission's children and removes its files on the way out."""
    raise KeyboardInterrupt


def _decoded(data):
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _record_from(data, status):
    record = _decoded(data)
    if record is None:
        reason = f"the per-submission grader died ({_status_text(status)}) before sending results"
        record = {"grader_error": reason}
    if record.get("grader_error"):
        record.setdefault("tests", [])
        record["problems"] = [f"Grader error: {record['grader_error']}. This is not your fault; "
                              "your instructor will re-run the grader."]
    return record


def _status_text(status):
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


class Progress:
    """A progress bar on stderr (rich) on a terminal; elsewhere (a run logged to a file) one line per
    submission graded."""

    def __init__(self, enabled=None, stream=None):
        self.stream = stream or sys.stderr
        # a bar only when both outputs are a terminal: `make grade > log` gets lines it can keep
        self.enabled = self.stream.isatty() and sys.stdout.isatty() if enabled is None else enabled
        self.bar = None
        self.started = time.monotonic()
        self.total = self.done = 0

    def start(self, total, skipped, regraded=None):
        self.total = total
        if skipped:
            self.stream.write(resume.resuming(skipped, total) + "\n")
        for reason, ids in (regraded or {}).items():
            names = ", ".join(clean(i) for i in ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            self.stream.write(f"regrading {len(ids)}: {reason} ({names})\n")
        if self.enabled and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self.bar = Bar(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.description}"), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total)

    def advance(self, submission_id, results):
        self.done += 1
        if not self.enabled:
            status = results["extra_data"].get("status", "graded")
            shown = f"{results['score']:g}/{results['extra_data']['max_score']:g}" if status == "graded" else status
            names = ", ".join(s.get("name") or s.get("email") or "" for s in results["extra_data"].get("submitters", [])
                              if s.get("name") or s.get("email"))
            who = f"{clean(names)} ({clean(submission_id)})" if names else clean(submission_id)  # as the table
            self.stream.write(f"graded {self.done}/{self.total} ({time.monotonic() - self.started:.0f} s): "
                              f"{who}: {shown}\n")
            self.stream.flush()
        if self.bar:
            from rich.markup import escape

            shown = escape(clean(submission_id))  # rich reads markup in a description
            self.bar.update(self.task, advance=1, description=f"{shown}: {results['score']:g}")

    def stop(self):
        if self.bar:
            self.bar.stop()
