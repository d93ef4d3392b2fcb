"""Grade many submissions: one forked trusted grader per submission, ``jobs`` at a time.

Each per-submission grader is forked from the warm engine (torch, reference and suite already
loaded), grades, writes its reports, sends the results back as JSON over a pipe and exits: the
reports (and their pictures) are made ``jobs`` at a time. If a grader fails, the parent writes
its report. Each report is written as soon as its submission finishes, so a killed batch keeps
what it finished and a re-run grades only the rest. Results do not depend on ``jobs`` or on the
order: every case is seeded and no state is shared between submissions.
"""
import gc
import json
import os
import select
import signal
import sys
import time
import traceback

from autograder import fingerprint, isolation, reference_check, report
from autograder.inert_text import clean
from autograder.runner import HIDDEN_TESTS, Engine, grade_one
from autograder.zygote import Zygote


class BatchOutcome:
    def __init__(self):
        self.graded, self.skipped, self.grader_errors = [], [], []
        self.regraded = {}  # reason -> ids of finished reports that were stale, in order
        self.entries = []  # (id, submitters, results) for every submission of the run


def grade_all(engine, sources, out_dir, jobs=1, force=False, progress=None):
    """Grade ``sources`` into ``out_dir``; returns a ``BatchOutcome``.

    First the reference, unless its verdict for this grader is known (``reference_check``): a suite
    it does not pass raises ``SuiteBroken`` before any student is graded. Then each submission whose
    finished report was graded from the same files by the same grader (``fingerprint``) is reused;
    every other one is graded, and a stale report says why it was regraded.
    """
    parts = fingerprint.grader_parts(engine.config, engine.level, engine.tests_dir)
    reference_check.verify(parts, lambda: grade_forked(engine, fingerprint.REFERENCE_DIR))
    outcome = BatchOutcome()
    finished = {}
    todo = []  # (source, fingerprint, why it is regraded or None)
    for source in sources:
        done = report.load_results(out_dir, source.id)
        current = fingerprint.of_submission(parts, source.path)
        reason = fingerprint.stale_because(done, current)
        if done is not None and force:
            reason = "regrading was asked for (--force)"
        if reason is None:
            finished[source.id] = done
            outcome.skipped.append(source.id)
            continue
        regraded = reason if done is not None else None
        if regraded:
            outcome.regraded.setdefault(regraded, []).append(source.id)
        todo.append((source, current, regraded))
    if progress:
        progress.start(len(todo), len(outcome.skipped), outcome.regraded)
    running = {}  # read fd -> (pid, source, slot, chunks, stamp)
    free_slots = list(range(max(1, jobs)))
    queue = list(todo)
    preloaded = False
    while queue or running:
        while queue and free_slots:
            source, current, regraded = queue.pop(0)
            slot = free_slots.pop(0)
            stamp = {"fingerprint": current, "regraded": regraded}
            fd, pid = _fork_grader(engine, source.path, slot, write_to=(out_dir, source, stamp))
            running[fd] = (pid, source, slot, [], stamp)
        if queue and not preloaded:  # while the first graders run, for the ones forked after them
            _preload_pictures()
            preloaded = True
        ready, _, _ = select.select(list(running), [], [])
        for fd in ready:
            pid, source, slot, chunks, stamp = running[fd]
            chunk = os.read(fd, 1 << 20)
            if chunk:
                chunks.append(chunk)
                continue
            os.close(fd)
            del running[fd]
            _, status = os.waitpid(pid, 0)
            free_slots.append(slot)
            data = b"".join(chunks)
            written = (_decoded(data) or {}).get("written")
            if written is None:  # the grader failed: its report says so
                record = {**_record_from(data, status), **stamp}
                sys.stderr.write(f"grader error on {clean(source.id)}: {record['grader_error']}\n")
                written = report.write_submission(out_dir, source.id, record, source.submitters)
            if written["extra_data"]["grader_error"]:
                outcome.grader_errors.append(source.id)
            finished[source.id] = written
            outcome.graded.append(source.id)
            if progress:
                progress.advance(source.id, finished[source.id])
    outcome.entries = [(s.id, s.submitters, finished[s.id]) for s in sources]
    _check_one_maximum(outcome.entries)
    renamed = [(s.renamed_from, s.id) for s in sources if getattr(s, "renamed_from", None) is not None]
    report.write_class_files(out_dir, outcome.entries, renamed)
    return outcome


def _check_one_maximum(entries):
    """Every graded row of a class file is out of the same maximum: the same suite graded them all."""
    maxima = {results["extra_data"]["max_score"] for _, _, results in entries
              if not results["extra_data"]["grader_error"]}
    if len(maxima) > 1:
        raise RuntimeError(f"reports out of different maxima ({', '.join(f'{m:g}' for m in sorted(maxima))}) "
                           "would share one gradebook; nothing was written")


def grade_forked(engine, source_path, slot=0):
    """Grade one submission in a forked grader and return its record (Gradescope's single-submission path)."""
    fd, pid = _fork_grader(engine, source_path, slot)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return _record_from(b"".join(chunks), status)


def verify_suite(config):
    """The reference's verdict (``reference_check.verify``) for commands that ship the suite rather than
    grade (``make gradescope``, ``make nbgrader-course``): graded in a sandbox of its own when not cached."""
    level = isolation.choose_level()
    parts = fingerprint.grader_parts(config, level, HIDDEN_TESTS)
    return reference_check.verify(parts, lambda: _grade_reference_alone(config, level))


def _grade_reference_alone(config, level):
    layers = isolation.detect_layers(level)
    zygote = Zygote(level, layers=layers)
    try:
        engine = Engine(config, level=level, layers=layers, zygote=zygote, graders=1)
        return grade_forked(engine, fingerprint.REFERENCE_DIR)
    finally:
        zygote.stop()
        zygote.kill_sandbox_users()


def _preload_pictures():
    """Import matplotlib here, once: the graders forked after this draw feedback.html's heatmaps
    without importing it again. A run with no grader left to fork never imports it here."""
    from matplotlib import figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401

    gc.freeze()  # like the engine's own state (runner.Engine)


def _fork_grader(engine, source_path, slot, write_to=None):
    """Fork a grader for one submission; returns (read fd, pid). It sends back its record or,
    given ``write_to`` = (out_dir, source, stamp), writes the reports (``stamp``: fingerprint and reason) and sends ``{"written": results}``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            record = grade_one(engine, source_path, slot=slot)
        except BaseException as err:  # the grader's own failure: report it as such
            record = {"grader_error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-4000:]}
        if write_to:
            record.update(write_to[2])  # the fingerprint, and why it is regraded
        if write_to and not record.get("grader_error"):
            out_dir, source, _ = write_to
            try:
                record = {"written": report.write_submission(out_dir, source.id, record, source.submitters)}
            except BaseException as err:
                record = {"grader_error": f"writing the report: {type(err).__name__}: {err}",
                          "trace": traceback.format_exc()[-4000:]}
        data = json.dumps(record).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view):]
        os._exit(0)
    os.close(write_fd)
    return read_fd, pid


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
    """A progress bar on stderr (rich), quiet when stderr is not a terminal."""

    def __init__(self, enabled=None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.bar = None
        self.started = time.monotonic()

    def start(self, total, skipped, regraded=None):
        if skipped:
            sys.stderr.write(f"resuming: {skipped} submissions already graded from the same files by the same "
                             f"grader, {total} to go\n")
        for reason, ids in (regraded or {}).items():
            names = ", ".join(clean(i) for i in ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            sys.stderr.write(f"regrading {len(ids)}: {reason} ({names})\n")
        if self.enabled and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self.bar = Bar(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.description}"), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total)

    def advance(self, submission_id, results):
        if self.bar:
            from rich.markup import escape

            shown = escape(clean(submission_id))  # rich reads markup in a description
            self.bar.update(self.task, advance=1, description=f"{shown}: {results['score']:g}")

    def stop(self):
        if self.bar:
            self.bar.stop()
