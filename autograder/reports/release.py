"""OUT/release/: the feedback each student may see, in the forms an LMS hands back to students.

Built from each report's results.json and the class's gradebook.csv (the final total, the late penalty and
the adjustment), never from feedback.md, which is the instructor's: it shows every test. A test is released
when its visibility (grading.yaml's, as Gradescope reads it) is in ``SHOWN[show]``; of any other test
nothing is written, not its name, its output (a hidden case's expected values) nor its points, and the total
is only stated once every test with points is released (Gradescope's own rule). What the code printed is
left out (it may echo a hidden test's inputs), as is the sandbox's description.

- ``release/<submission>/feedback.md`` and ``feedback.html``: one folder per submission, for any LMS.
- ``release/moodle-feedback.zip``: Moodle's "Upload multiple feedback files in a zip": a folder per student
  named ``<Full Name>_<participant id>_assignfeedback_file`` (mod/assign/feedback/file/importziplib.php
  reads the participant id after the first ``_`` and the plugin from the next two parts).
- ``release/canvas-feedback.zip``: Canvas's "Re-Upload Submissions": each file is named
  ``<lastfirst>_<user id>_<attachment id>_<that file's own name>`` (``anon_<anonymous id>_<attachment id>_...``
  from an anonymous download, which the re-upload reads the same way); Canvas takes the first two numbers of the
  name as the user and one of that user's submitted files, and attaches the file to that submission as a
  comment under the submitted file's display name, whatever the uploaded file is called
  (app/models/assignment.rb, ``infer_comment_context_from_filename``: ``display_name: attachment.display_name``).
  A student would see "attention.py" holding HTML; so the feedback is written in the kind of file the name
  says (``canvas_feedback``): Python comments in a .py, a notebook's markdown cell in an .ipynb, feedback.html
  and feedback.md in a .zip, and the page or its text otherwise.

Every file is written from one submission's own results; nothing of another student is read into it.
"""
import csv
import io
import json
import os
import shutil
import zipfile

from autograder.files import write_atomic
from autograder.parts import PART_TITLES
from autograder.reports.html_pages import _e, _overview_html, _page
from autograder.reports.inert_text import csv_value, md_text
from autograder.reports.report import load_results
from autograder.reports.results import GRADED, part_scores

FOLDER = "release"
SHOWN = {"visible": ("visible",), "after_due_date": ("visible", "after_due_date"),
         "after_published": ("visible", "after_due_date", "after_published")}
TITLE = "Attention from Scratch: feedback"


def released_tests(results, show):
    return [t for t in results["tests"] if t["visibility"] in SHOWN[show]]


def student_markdown(results, book, show):
    """One submission's feedback as its students may see it; ``book``: its gradebook.csv row (or {})."""
    tests = released_tests(results, show)
    lines = [f"# {TITLE}", "", *_overview(results, book, tests)]
    if results["extra_data"].get("status", GRADED) != GRADED:  # no part scored 0: nothing was scored
        return "\n".join(lines) + "\n"
    lines += ["", "| Part | Score |", "|---|---|"]
    for part, (got, total) in part_scores({"tests": tests}).items():
        lines.append(f"| {PART_TITLES.get(part, part)} | {got:g} / {total:g} |")
    failed = [t for t in tests if t["status"] == "failed"] if results["extra_data"].get("status") == GRADED else []
    if failed:
        lines += ["", "## What to fix", ""]
        for test in failed:
            lines += [f"### {test['number']} {test['name']} (0 / {test['max_score']:g})", "", test["output"], ""]
    return "\n".join(lines) + "\n"


def _overview(results, book, tests):
    """The top: who, and the total when every test with points is released, else what the released ones earned."""
    extra = results["extra_data"]
    names = [md_text(s.get("name", "")) for s in extra.get("submitters", []) if s.get("name")]
    lines = [f"Submission of {', '.join(names)}.", ""] if names else []
    if extra.get("status", GRADED) != GRADED:
        why = md_text(extra.get('why_not_graded', extra.get('status', '')))
        if book.get("total"):  # the instructor graded it (an override in adjustments.csv): nothing is withheld
            reason = md_text(csv_value(book.get("adjustment_reason", "")))
            return lines + [f"**Not graded by the autograder: {why}.**", "",
                            f"- Adjusted by your instructor: {reason}.", "",
                            f"**Your total: {book['total']} / {extra['max_score']:g}.**"]
        return lines + [f"**Not graded: {why}.** This is not a score of 0; your instructor will be in touch."]
    withheld = [t for t in results["tests"] if t not in tests and t["max_score"] > 0]
    if withheld:
        got = sum(t["score"] for t in tests)
        return lines + [f"**Released tests: {got:g} / {sum(t['max_score'] for t in tests):g} points, "
                        f"{sum(t['status'] == 'passed' for t in tests)} of {len(tests)} passed.** {len(withheld)} "
                        "more tests count and are not released yet; your total comes with them."]
    raw = f"{results['score']:g}"
    lines.append(f"**Tests: {raw} / {extra['max_score']:g}.** {sum(t['status'] == 'passed' for t in tests)} of "
                 f"{len(tests)} tests passed.")
    lines.append("")
    if book.get("late"):
        lines.append(f"- Submitted {md_text(book['late'])}.")
    if book.get("late_penalty"):
        lines.append(f"- Late penalty: -{book['late_penalty']} points.")
    if book.get("adjustment_reason"):
        lines.append(f"- Adjusted by your instructor: {md_text(csv_value(book['adjustment_reason']))}.")
    total = book.get("total") or raw
    if total != raw or book.get("late_penalty") or book.get("adjustment"):
        lines += ["", f"**Your total: {total} / {extra['max_score']:g}.**"]
    return lines


def student_html(results, book, show):
    """The same page as HTML: released tests only, a failed test's output in a <pre>."""
    tests = released_tests(results, show)
    body = [f"<h1>{_e(TITLE)}</h1>", _overview_html("\n\n".join(p for p in "\n".join(
        _overview(results, book, tests)).split("\n") if p))]
    if results["extra_data"].get("status", GRADED) != GRADED:
        return _page(TITLE, "\n".join(body))
    body.append("<table><tr><th>Part</th><th>Score</th></tr>")
    for part, (got, total) in part_scores({"tests": tests}).items():
        body.append(f'<tr><td>{_e(PART_TITLES.get(part, part))}</td><td class="num">{got:g} / {total:g}</td></tr>')
    body.append("</table>")
    failed = [t for t in tests if t["status"] == "failed"] if results["extra_data"].get("status") == GRADED else []
    if failed:
        body.append("<h2>What to fix</h2>")
        for test in failed:
            body += [f'<h3 class="failed">{_e(test["number"])} {_e(test["name"])} (0 / {test["max_score"]:g})</h3>',
                     f"<pre>{_e(test['output'].strip().strip('`').strip())}</pre>"]
    return _page(TITLE, "\n".join(body))


def gradebook_rows(out_dir):
    """{submission id: its first gradebook.csv row} (the final total, late penalty and adjustment)."""
    try:
        with open(os.path.join(out_dir, "gradebook.csv"), encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    found = {}
    for row in rows:
        found.setdefault(row.get("submission_id", ""), row)
    return found


def reports_in(out_dir):
    """[(submission id, results)] of every finished report folder in OUT, by name."""
    found = []
    for name in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, name)
        if name != FOLDER and os.path.isdir(path) and not os.path.islink(path):
            results = load_results(out_dir, name)
            if results is not None:
                found.append((name, results))
    return found


def write_release(out_dir, reports, show="visible"):
    """Write OUT/release/ afresh from ``reports`` ([(submission id, results)]); returns lines to print."""
    folder = os.path.join(out_dir, FOLDER)
    if os.path.isdir(folder) and not os.path.islink(folder):
        shutil.rmtree(folder)  # a release is rebuilt whole: a test released by mistake must not linger
    os.makedirs(folder, 0o700)
    book = gradebook_rows(out_dir)
    moodle, canvas = {}, {}
    for submission_id, results in reports:
        row = book.get(submission_id, {})
        page = student_html(results, row, show)
        write_atomic(os.path.join(folder, submission_id, "feedback.md"), student_markdown(results, row, show))
        write_atomic(os.path.join(folder, submission_id, "feedback.html"), page)
        for who in results["extra_data"].get("submitters", []):
            name, user = who.get("name", ""), who.get("lms_id", "")
            if who.get("lms") == "moodle" and user.isdigit():
                moodle[f"{name.replace('_', ' ').replace('/', ' ')}_{user}_assignfeedback_file/feedback.html"] = page
            student = _canvas_student(who)
            if student and who.get("lms_file_id", "").isdigit():
                shown = _plain_name(who.get("lms_file_name", "")) or "feedback.html"
                canvas[f"{student}_{who['lms_file_id']}_{shown}"] = canvas_feedback(
                    shown, student_markdown(results, row, show), page)
    lines = [f"release: {len(reports)} submissions in {folder}/<submission>/ (tests shown: "
             f"{', '.join(SHOWN[show])})"]
    for name, files, how in (("moodle-feedback.zip", moodle, "Moodle: Upload multiple feedback files in a zip"),
                             ("canvas-feedback.zip", canvas, "Canvas: Re-Upload Submissions")):
        if files:
            write_atomic(os.path.join(folder, name), _zipped(files))
            lines.append(f"release: {folder}/{name} ({len(files)} students; {how})")
    return lines


def _canvas_student(who):
    """The start of a Canvas re-upload name that finds this submitter's submission: ``<lastfirst>_<user id>``, or
    ``anon_<anonymous id>`` for an anonymous download's (abstract_assignment.rb, ``infer_comment_context_from_
    filename``, reads a leading "anon" as that); None when the download gave neither."""
    if who.get("lms") != "canvas":
        return None
    anonymous, user = who.get("anonymous_id", ""), who.get("lms_id", "")
    if anonymous.isascii() and anonymous.isalnum():
        return f"anon_{anonymous}"
    if user.isdigit():
        return f"{''.join(c for c in who.get('name', '') if c.isalpha()) or 'student'}_{user}"
    return None


CANVAS_NOTE = ("Feedback on your submission. Canvas names this file after the file you handed in; it holds your "
               "feedback, not your code.")


def canvas_feedback(shown, markdown, page):
    """The feedback as the kind of file `shown` (the submitted file's name, which Canvas will show) says it is,
    so that it opens as that kind: str or bytes."""
    kind = os.path.splitext(shown.lower())[1]
    if kind == ".py":
        return "".join(f"# {line}".rstrip() + "\n" for line in [CANVAS_NOTE, "", *markdown.splitlines()])
    if kind == ".ipynb":
        cell = {"cell_type": "markdown", "metadata": {}, "source": f"{CANVAS_NOTE}\n\n{markdown}"}
        return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    if kind == ".zip":
        return _zipped({"feedback.html": page, "feedback.md": markdown})
    if kind in (".html", ".htm"):
        return page
    return f"{CANVAS_NOTE}\n\n{markdown}"


def _plain_name(name):
    """A submitted file's own name as one plain zip entry name (no folder, no control character), or ""."""
    name = os.path.basename(name.replace("\\", "/"))
    return "".join(ch for ch in name if ch.isprintable()).strip().lstrip(".")


def _zipped(files):
    """A zip of {name: text or bytes}; names are flagged UTF-8 (zipfile sets the flag for a non-ASCII name)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(name, data)
    return buffer.getvalue()
