"""Writing the reports, by the trusted grader after the submission's processes are gone.

For each submission ``results.json`` (built by ``results``), ``feedback.md`` (``feedback``) and
``feedback.html`` (``html_pages``); for the batch ``gradebook.csv`` and ``summary.md``
(``classbook``) and ``summary.html`` (``html_pages``). Every file is written atomically (temp
file, then rename): a batch killed halfway leaves whole reports or none, which is what makes
re-running a batch resume it.
"""
import json
import os
import tempfile

from autograder.reports.classbook import gradebook_csv, summary_markdown
from autograder.reports.feedback import feedback_markdown
from autograder.reports.html_pages import feedback_html, summary_html
from autograder.reports.results import results_json


def write_atomic(path, text):
    """Write ``text`` to ``path`` whole or not at all: a temp file beside it, then a rename."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_submission(out_dir, submission_id, record, submitters=()):
    """Write results.json, feedback.md and feedback.html for one submission; returns the results dict."""
    results = results_json(record, submitters)
    folder = os.path.join(out_dir, submission_id)
    write_atomic(os.path.join(folder, "feedback.md"), feedback_markdown(record, results, submitters))
    write_atomic(os.path.join(folder, "feedback.html"), feedback_html(record, results))
    write_atomic(os.path.join(folder, "results.json"), json.dumps(results, indent=2) + "\n")  # last: marks done
    return results


def write_class_files(out_dir, entries, renamed=()):
    """Write gradebook.csv, summary.md and summary.html for a batch's (id, submitters, results) entries."""
    write_atomic(os.path.join(out_dir, "gradebook.csv"), gradebook_csv(entries))
    write_atomic(os.path.join(out_dir, "summary.md"), summary_markdown(entries, renamed))
    write_atomic(os.path.join(out_dir, "summary.html"), summary_html(entries, out_dir, renamed))


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
