"""Which submissions a run must grade, and the run's end when nothing (or everything) was graded.

A finished report is reused when it was graded from the same files by the same grader
(``fingerprint``). Deciding that needs no torch: a re-run of ``make grade`` with nothing to grade
loads neither torch nor the sandbox (``nothing_to_grade``), and writes the class files from the
reports it has. ``batch.grade_all`` plans and ends every other run with the same two functions.
"""
import os
import sys

from autograder.grading import fingerprint, reference_check
from autograder.paths import KIT_ROOT
from autograder.reports import history, lateness, report, similarity
from autograder.reports.classbook import MoodleSheet, submission_label


class BatchOutcome:
    def __init__(self):
        self.graded, self.skipped, self.grader_errors = [], [], []
        self.regraded = {}  # reason -> ids of finished reports that were stale, in order
        self.entries = []  # (id, submitters, results) for every submission of the run
        self.graded_because = {}  # id -> why it was graded in this run (history.csv's reason)


def plan(parts, sources, out_dir, force=False):
    """(outcome with its skipped ids, {id: reused results}, [(source, fingerprint, why regraded or None)])."""
    outcome, finished, todo = BatchOutcome(), {}, []
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
        outcome.graded_because[source.id] = regraded or history.FIRST
        todo.append((source, current, regraded))
    return outcome, finished, todo


def resuming(skipped, total):
    return f"resuming: {skipped} submissions already graded from the same files by the same grader, {total} to go"


def nothing_to_grade(config, level, tests_dir, sources, out_dir, force=False):
    """The outcome of a run that only reuses reports, or None when something must be graded (a
    submission, or the reference whose verdict this grader has not cached)."""
    parts = fingerprint.grader_parts(config, level, tests_dir)
    if force or not reference_check.known(parts):
        return None
    outcome, finished, todo = plan(parts, sources, out_dir)
    if todo:
        return None
    return finish(outcome, sources, finished, out_dir, config)


def finish(outcome, sources, finished, out_dir, config):
    """Every submission's entry, one maximum for all, and the class files (gradebook with grading.yaml's
    late policy, summaries, history, similarity)."""
    outcome.entries = [(s.id, s.submitters, finished[s.id]) for s in sources]
    _check_one_maximum(outcome.entries)
    renamed = [(s.renamed_from, s.id) for s in sources if getattr(s, "renamed_from", None) is not None]
    policy = lateness.Policy.of(config)
    sheet = MoodleSheet.of(config)
    for line in report.write_term_files(out_dir, outcome.entries, renamed, outcome.graded_because, policy, sheet):
        sys.stderr.write(line + "\n")
    _write_similarity(out_dir, outcome.entries)
    return outcome


def _write_similarity(out_dir, entries):
    """similarity.html and .csv over the class (never a grade); the stubs students start from and the reference
    solution are boilerplate: code every correct solution shares is no evidence."""
    stubs = []
    for folder in ("assignment", "solution"):
        files = {}
        for name in ("attention.py", "mha.py"):
            with open(os.path.join(KIT_ROOT, folder, name), encoding="utf-8") as f:
                files[name] = f.read()
        stubs += [*files.values(), similarity.joined(files)]  # the files apart, and where they meet
    labels = {i: submission_label(i, submitters) for i, submitters, _ in entries}
    line = similarity.write(out_dir, entries, stubs, labels)
    if line:
        sys.stderr.write(line + "\n")


def _check_one_maximum(entries):
    """Every graded row of a class file is out of the same maximum: the same suite graded them all."""
    maxima = {results["extra_data"]["max_score"] for _, _, results in entries
              if not results["extra_data"]["grader_error"]}
    if len(maxima) > 1:
        raise RuntimeError(f"reports out of different maxima ({', '.join(f'{m:g}' for m in sorted(maxima))}) "
                           "would share one gradebook; nothing was written")
