"""Writing the reports, by the trusted grader after the submission's processes are gone.

For each submission ``results.json`` (built by ``results``), ``feedback.md`` (``feedback``) and
``feedback.html`` (``html_pages``); for the batch ``gradebook.csv`` and ``summary.md``
(``classbook``) and ``summary.html`` (``html_pages``). Every file is written atomically (temp
file, then rename): a batch killed halfway leaves whole reports or none, which is what makes
re-running a batch resume it.
"""
import html
import json
import os
import tempfile
import time

from autograder.files import write_atomic
from autograder.reports import adjustments, history, lateness
from autograder.reports.classbook import (canvas_import_csv, final_total, gradebook_csv, moodle_capped,
                                          moodle_import_csv, scores_of, summary_markdown)
from autograder.reports.feedback import feedback_markdown
from autograder.reports.inert_text import clean, md_text, spreadsheet_cell
from autograder.reports.html_pages import feedback_html, summary_anonymous_html, summary_html
from autograder.reports.results import results_json


def write_submission(out_dir, submission_id, record, submitters=(), submitted=None):
    """Write results.json, feedback.md and feedback.html for one submission, and ``submitted``
    ({file name: bytes}, the exact files graded) into its submitted/; returns the results dict."""
    results = results_json(record, submitters)
    folder = os.path.join(out_dir, submission_id)
    if submitted is not None:
        write_snapshot(folder, submitted)
    write_atomic(os.path.join(folder, "feedback.md"), feedback_markdown(record, results, submitters))
    write_atomic(os.path.join(folder, "feedback.html"), feedback_html(record, results))
    write_atomic(os.path.join(folder, "results.json"), json.dumps(results, indent=2) + "\n")  # last: marks done
    return results


SNAPSHOT = "submitted"


def write_snapshot(folder, files):
    """Put ``files`` in ``folder``/submitted/, read-only. An earlier snapshot with other files is kept beside
    it as submitted-<when it was taken>/: a regrade never loses the code an earlier grade was given for."""
    os.makedirs(folder, 0o700, exist_ok=True)
    current = os.path.join(folder, SNAPSHOT)
    if _snapshot_files(current) == files:
        return
    fresh = tempfile.mkdtemp(dir=folder, prefix=".tmp-submitted-")
    for name, data in files.items():
        fd = os.open(os.path.join(fresh, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    if os.path.isdir(current) and not os.path.islink(current):
        taken = time.strftime("%Y%m%dT%H%M%S", time.localtime(os.stat(current).st_mtime))
        kept, n = os.path.join(folder, f"{SNAPSHOT}-{taken}"), 1
        while os.path.exists(kept):
            n += 1
            kept = os.path.join(folder, f"{SNAPSHOT}-{taken}-{n}")
        os.rename(current, kept)
    os.rename(fresh, current)


def _snapshot_files(folder):
    """{name: bytes} of a snapshot folder, or None when there is none."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    files = {}
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


def write_class_files(out_dir, entries, renamed=(), applied=None, late=None, moodle=None, modified=None):
    """Write gradebook.csv, summary.md and summary.html for a batch's (id, submitters, results) entries, and
    the Canvas and Moodle import files when the download named the students; ``applied``: the adjustments,
    ``late``: {id: lateness.Late}; ``moodle``: classbook.MoodleSheet (grading.yaml's), ``modified``: {id: when
    its total last changed} for Moodle's worksheet."""
    write_atomic(os.path.join(out_dir, "gradebook.csv"), gradebook_csv(entries, applied, late))
    for name, text in (("import-canvas.csv", canvas_import_csv(entries, applied, late)),
                       ("import-moodle.csv", moodle_import_csv(entries, applied, late, moodle, modified))):
        if text is not None:
            write_atomic(os.path.join(out_dir, name), text)
    write_atomic(os.path.join(out_dir, "summary.md"), summary_markdown(entries, renamed))
    write_atomic(os.path.join(out_dir, "summary.html"), summary_html(entries, out_dir, renamed))
    write_atomic(os.path.join(out_dir, "summary-anonymous.html"), summary_anonymous_html(entries))


def write_term_files(out_dir, entries, renamed=(), graded_because=None, policy=None, moodle=None):
    """The class files with the late policy (``policy``: lateness.Policy, grading.yaml's) and the instructor's
    extensions and adjustments applied, each feedback.md saying its penalty and adjustment, and history.csv's
    new rows; ``graded_because``: {id: why it was graded in this run}. Returns the lines to show about
    adjustments.csv and extensions.csv (a row skipped, and why)."""
    adjustments.ensure_template(out_dir)
    lateness.ensure_template(out_dir)
    rows, messages = adjustments.load(out_dir)
    applied, unmatched = adjustments.resolve(rows, entries)
    extension_rows, extension_messages = lateness.load_extensions(out_dir)
    extended, extension_unmatched = lateness.resolve_extensions(extension_rows, entries)
    late = lateness.assess_all(policy or lateness.Policy(), entries, extended)
    finals = {i: scores_of(r, applied.get(i), [], late.get(i))[1] for i, _, r in entries}
    described = {i: _changes_described(r, applied.get(i), late.get(i), extended.get(i)) for i, _, r in entries}
    history.append(out_dir, history.changes(entries, finals, graded_because or {},
                                            {i: d for i, d in described.items() if d}, history.last_totals(out_dir)))
    changed = history.last_changed(out_dir)  # keyed as history.csv writes a submission's cell
    modified = {i: changed[spreadsheet_cell(i)] for i, _, _ in entries if spreadsheet_cell(i) in changed}
    write_class_files(out_dir, entries, renamed, applied, late, moodle, modified)
    for submission_id, _, results in entries:
        state_adjustment(out_dir, submission_id, results, applied.get(submission_id), late.get(submission_id))
    capped = moodle_capped(entries, applied, late, moodle)
    return messages + unmatched + extension_messages + extension_unmatched + _capped_lines(capped)


def _capped_lines(capped):
    """The line that names the totals import-moodle.csv caps at the worksheet's maximum (Moodle would skip them)."""
    if not capped:
        return []
    named = ", ".join(f"{clean(i)} ({final} capped at {maximum:g})" for i, final, maximum in capped[:5])
    more = f" and {len(capped) - 5} more" if len(capped) > 5 else ""
    return [f"import-moodle.csv: {len(capped)} total{'s' if len(capped) > 1 else ''} above the maximum grade, "
            f"capped (Moodle skips a grade above it): {named}{more}; set moodle.max_grade in grading.yaml to the "
            "assignment's Maximum grade to carry the extra credit (docs/reference/lms.md)"]


def _changes_described(results, applied, late, extended_to=None):
    """"extension: due ...; late penalty: -11 points (late by 2 days ...); adjustment: +5 points (...)", or ""."""
    raw = _raw(results)
    said = [f"extension: due {extended_to.strftime('%Y-%m-%d %H:%M %z')}"] if extended_to else []
    said += [f"late penalty: {late.describe(raw)}"] if late and late.fraction and raw is not None else []
    return "; ".join(said + ([f"adjustment: {applied.describe()}"] if applied else []))


def _raw(results):
    return results["score"] if results["extra_data"].get("status", "graded") == "graded" else None


ADJUSTED_START, ADJUSTED_END = "<!-- adjustment -->", "<!-- /adjustment -->"


def state_adjustment(out_dir, submission_id, results, applied, late=None):
    """Say the late penalty and the instructor's adjustment under the title of feedback.md and feedback.html
    (or remove what an earlier run said, once neither applies); a file is rewritten only when that changes."""
    said, raw = [], _raw(results)
    if late is not None:
        said.append(f"Submitted {late.text}.")
        if late.fraction and raw is not None:
            said.append(f"Late penalty: -{late.penalty(raw):g} points.")
    if applied is not None:
        said.append(f"Adjusted by your instructor: {applied.describe()}.")
    if applied is not None or (late is not None and late.fraction and raw is not None):
        final = final_total(raw, applied, late)
        said.append(f"Your total is now {final:g} / {results['extra_data']['max_score']:g}." if final is not None
                    else "Your total is now: not graded.")
    sentence = " ".join(said) or None
    folder = os.path.join(out_dir, submission_id)
    _restate(os.path.join(folder, "feedback.md"), "\n", sentence and f"**{md_text(sentence)}**")
    _restate(os.path.join(folder, "feedback.html"), "</h1>\n", sentence and f"<p><strong>{html.escape(sentence)}</strong></p>")


def _restate(path, anchor, block):
    """Put ``block`` (None: nothing) between the adjustment markers right after the first ``anchor``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return
    head, found, body = text.partition(anchor)
    if not found:
        return
    gap = body[:len(body) - len(body.lstrip("\n"))]
    body = body[len(gap):]
    if body.startswith(ADJUSTED_START):
        body = body.partition(ADJUSTED_END)[2].lstrip("\n")
    if block is not None:
        body = f"{ADJUSTED_START}\n{block}\n{ADJUSTED_END}\n{gap}{body}"
    new = f"{head}{anchor}{gap}{body}"
    if new != text:
        write_atomic(path, new)


def load_results(out_dir, submission_id):
    """The finished results of a submission, or None if there are none (``fingerprint.stale_because``
    decides whether they still stand)."""
    try:
        with open(os.path.join(out_dir, submission_id, "results.json"), encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(results, dict) or not isinstance(results.get("extra_data"), dict):
        return None
    return results
