"""history.csv: every change of a grade, appended, never rewritten.

One row each time a submission is graded (the first time, or again: the suite, the settings, the grader or
the student's files changed) and each time its final total changes without a regrade (an adjustment
or a late penalty added, edited or removed): when, which submission, the old and the new total, and why. The old total is
the last one this file recorded, so a report folder deleted by hand, or an OUT cleaned and graded again,
still shows where a grade came from. The file is only ever opened for appending.
"""
import csv
import os
import time

from autograder.reports.inert_text import csv_text, spreadsheet_cell

FILE_NAME = "history.csv"
COLUMNS = ("when", "submission", "student", "old_total", "new_total", "reason")
FIRST = "first grading"


def last_totals(out_dir):
    """{submission id: the last new_total recorded} from OUT's history.csv."""
    try:
        with open(os.path.join(out_dir, FILE_NAME), encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return {row["submission"]: row.get("new_total") or "" for row in rows if row.get("submission")}


def last_changed(out_dir):
    """{submission id: when its total last changed, as an ISO 8601 time with a colon in the offset} from OUT's
    history.csv (Moodle's worksheet says it in Last modified (grade))."""
    try:
        with open(os.path.join(out_dir, FILE_NAME), encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    when = {}
    for row in rows:
        stamp = row.get("when") or ""
        if row.get("submission") and len(stamp) == 24 and stamp[-5] in "+-":  # as ``append`` writes it
            when[row["submission"]] = f"{stamp[:-2]}:{stamp[-2:]}"
    return when


def changes(entries, finals, graded_because, adjusted, last):
    """The rows to append: (submission, student, old, new, reason).

    ``finals``: {id: final total cell}; ``graded_because``: {id: why it was graded in this run};
    ``adjusted``: {id: what the late penalty and adjustment do, "late penalty: ...; adjustment: ..."};
    ``last``: ``last_totals``."""
    rows = []
    for submission_id, submitters, results in entries:
        new, old = finals[submission_id], last.get(spreadsheet_cell(submission_id))  # keyed as written
        adjustment = adjusted.get(submission_id)
        if submission_id in graded_because:
            reason = graded_because[submission_id] + (f"; {adjustment}" if adjustment else "")
            status = results["extra_data"].get("status", "graded")
            reason += "" if status == "graded" or new else f" ({status}: no score)"
        elif old is None:
            reason = "first recorded (graded before history.csv existed)"
        elif old != new:
            reason = adjustment or "adjustment or late penalty removed"
        else:
            continue
        student = "; ".join(s.name or s.email for s in submitters if s.name or s.email)
        rows.append((submission_id, student, old or "", new, reason))
    return rows


def append(out_dir, rows, now=None):
    """Append ``rows`` to history.csv (its header first when the file is new); owner-only, never truncated."""
    if not rows:
        return
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now))
    path = os.path.join(out_dir, FILE_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", newline="") as f:
        text = csv_text([COLUMNS, *((when, *row) for row in rows)], ("old_total", "new_total"))
        f.write(text if os.fstat(f.fileno()).st_size == 0 else text.split("\r\n", 1)[1])  # the header once
