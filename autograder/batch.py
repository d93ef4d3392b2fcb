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

from autograder import report
from autograder.inert_text import clean
from autograder.runner import grade_one


class BatchOutcome:
    def __init__(self):
        self.graded, self.skipped, self.grader_errors = [], [], []
        self.entries = []  # (id, submitters, results) for every submission of the run


def grade_all(engine, sources, out_dir, jobs=1, force=False, progress=None):
    """Grade ``sources`` into ``out_dir``; returns a ``BatchOutcome``."""
    outcome = BatchOutcome()
    finished = {}
    todo = []
    for source in sources:
        done = None if force else report.load_results(out_dir, source.id)
        if done is not None:
            finished[source.id] = done
            outcome.skipped.append(source.id)
        else:
            todo.append(source)
    if progress:
        progress.start(len(todo), len(outcome.skipped))
    running = {}  # read fd -> (pid, source, slot, chunks)
    free_slots = list(range(max(1, jobs)))
    queue = list(todo)
    preloaded = False
    while queue or running:
        while queue and free_slots:
            source = queue.pop(0)
            slot = free_slots.pop(0)
            fd, pid = _fork_grader(engine, source.path, slot, write_to=(out_dir, source))
            running[fd] = (pid, source, slot, [])
        if queue and not preloaded:  # while the first graders run, for the ones forked after them
            _preload_pictures()
            preloaded = True
        ready, _, _ = select.select(list(running), [], [])
        for fd in ready:
            pid, source, slot, chunks = running[fd]
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
                record = _record_from(data, status)
                if record.get("grader_error"):
                    outcome.grader_errors.append(source.id)
                written = report.write_submission(out_dir, source.id, record, source.submitters)
            finished[source.id] = written
            outcome.graded.append(source.id)
            if progress:
                progress.advance(source.id, finished[source.id])
    outcome.entries = [(s.id, s.submitters, finished[s.id]) for s in sources]
    renamed = [(s.renamed_from, s.id) for s in sources if getattr(s, "renamed_from", None) is not None]
    report.write_class_files(out_dir, outcome.entries, renamed)
    return outcome


def grade_forked(engine, source_path, slot=0):
    """Grade one submission in a forked grader and return its record (Gradescope's single-submission path)."""
    fd, pid = _fork_grader(engine, source_path, slot)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return _record_from(b"".join(chunks), status)


def _preload_pictures():
    """Import matplotlib here, once: the graders forked after this draw feedback.html's heatmaps
    without importing it again. A run with no grader left to fork never imports it here."""
    from matplotlib import figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401

    gc.freeze()  # like the engine's own state (runner.Engine)


def _fork_grader(engine, source_path, slot, write_to=None):
    """Fork a grader for one submission; returns (read fd, pid). It sends back its record or,
    given ``write_to`` = (out_dir, source), writes the reports and sends ``{"written": results}``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            record = grade_one(engine, source_path, slot=slot)
        except BaseException as err:  # the grader's own failure: report it as such
            record = {"grader_error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-4000:]}
        if write_to and not record.get("grader_error"):
            out_dir, source = write_to
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
        sys.stderr.write(f"grader error: {record['grader_error']}\n")
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

    def start(self, total, skipped):
        if skipped:
            sys.stderr.write(f"resuming: {skipped} submissions already graded, {total} to go\n")
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
