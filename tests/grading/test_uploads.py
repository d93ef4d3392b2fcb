"""What students really upload is graded as Python reads it, found wherever it sits, or named in one line.

One grader run grades the reference saved with a byte-order mark, with CRLF line endings and with a
latin-1 coding line, the reference three folders deep (as a folder and as a zip), a notebook-only and
an empty upload, an upload with two different attention.py, and a file whose bytes Python refuses.
The byte variants also go through the public tests (`make test`) and `submit.py`, which must agree.
"""
import csv
import json
import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder.grading.suite_points import full_marks
from test_public_suite import run_public
from variant_builder import FILES, ROOT, build_reference

pytestmark = pytest.mark.slow  # a grader run, and a public run and a submit.py run per byte variant

INVALID_LINE = "attention.py is not valid UTF-8 (byte 0xe9 at line {line}): save it as UTF-8"
UPLOAD_HINT = "upload attention.py and mha.py"


def bom(data):
    return b"\xef\xbb\xbf" + data


def crlf(data):
    return data.replace(b"\n", b"\r\n")


def latin1_cookie(data):
    return "# -*- coding: latin-1 -*-\n# caf\xe9, na\xefve\n".encode("latin-1") + data


READ_AS_PYTHON_DOES = {"bom": bom, "crlf": crlf, "latin1": latin1_cookie}


def build_bytes_variant(edit, dest):
    build_reference(dest)
    for name in FILES:
        (dest / name).write_bytes(edit((dest / name).read_bytes()))
    return dest


def build_invalid(dest):
    """The reference with a latin-1 byte in a string and no coding line: Python refuses to import it."""
    build_reference(dest)
    path = dest / "attention.py"
    data = path.read_bytes() + b"GREETING = 'caf\xe9'\n"
    path.write_bytes(data)
    return dest, data.count(b"\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The report folder of one grader run over every upload shape."""
    root = tmp_path_factory.mktemp("uploads")
    batch, out = root / "batch", root / "reports"
    for label, edit in READ_AS_PYTHON_DOES.items():
        build_bytes_variant(edit, batch / label)
    _, line = build_invalid(batch / "invalid")
    build_reference(batch / "deep" / "Downloads" / "lab3" / "src")
    build_reference(root / "zipped" / "Downloads" / "lab3" / "src")
    with zipfile.ZipFile(batch / "deepzip.zip", "w") as archive:
        for name in FILES:
            archive.write(root / "zipped" / "Downloads" / "lab3" / "src" / name, f"Downloads/lab3/src/{name}")
    (batch / "notebook").mkdir()
    shutil.copy(ROOT / "assignment" / "playground.ipynb", batch / "notebook")
    (batch / "empty").mkdir()
    build_reference(batch / "ambiguous" / "final")
    (batch / "ambiguous" / "attention.py").write_text("# my first try\n")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"the grader exited {run.returncode}:\n{run.stderr[-3000:]}"
    return out, line


def results(out, submission):
    return json.loads((out / submission / "results.json").read_text())


def gradebook(out):
    return {row["submission_id"]: row for row in csv.DictReader((out / "gradebook.csv").open())}


@pytest.mark.parametrize("submission", [*READ_AS_PYTHON_DOES, "deep", "deepzip"])
def test_what_python_reads_and_files_three_folders_deep_get_full_marks(graded, submission):
    report = results(graded[0], submission)
    lost = [f"{t['name']}: {t['output'][:300]}" for t in report["tests"] if t["score"] < t["max_score"]]
    assert report["score"] == full_marks() and not lost, "\n".join(lost)
    assert gradebook(graded[0])[submission]["status"] == "graded"


def test_bytes_python_refuses_get_the_readers_one_line_in_the_report_and_the_rule_check(graded):
    out, line = graded
    report = results(out, "invalid")
    expected = INVALID_LINE.format(line=line)
    assert f"- {expected}" in report["output"]
    rule = next(t for t in report["tests"] if t["name"].startswith("Rules: attention.py"))
    assert expected in rule["output"], rule["output"]


@pytest.mark.parametrize("submission, line", [("notebook", f"you uploaded playground.ipynb; {UPLOAD_HINT}"),
                                              ("empty", f"the upload is empty: {UPLOAD_HINT}")])
def test_an_upload_without_the_files_says_what_it_held_once_and_is_marked_no_files(graded, submission, line):
    out, _ = graded
    report = results(out, submission)
    assert report["score"] == 0 and report["extra_data"]["status"] == "no files"
    assert report["output"].count(UPLOAD_HINT) == 1 and f"- {line}" in report["output"], report["output"]
    assert all(not t["output"] for t in report["tests"]), "no test ran, so none has a message of its own"
    assert "ModuleNotFoundError" not in (out / submission / "feedback.md").read_text()
    assert gradebook(out)[submission]["status"] == "no files"
    top = (out / "summary.md").read_text().splitlines()[2]
    assert top.startswith("**No files") and "[empty](empty/feedback.md), [notebook](notebook/feedback.md)" in top


def test_two_different_copies_say_which_one_was_graded(graded):
    report = results(graded[0], "ambiguous")
    assert report["score"] == full_marks()
    assert ("- found 2 different copies of attention.py (attention.py, final/attention.py): graded "
            "final/attention.py (from the folder holding both files)") in report["output"]


@pytest.mark.parametrize("label", READ_AS_PYTHON_DOES)
def test_the_public_tests_and_submit_py_accept_what_python_reads(tmp_path, label):
    folder = build_bytes_variant(READ_AS_PYTHON_DOES[label], tmp_path / label)
    earned, total = run_public(folder, tmp_path).score
    assert earned == total
    run = subprocess.run([sys.executable, str(ROOT / "assignment" / "submit.py"), str(folder)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr


def test_the_public_tests_and_submit_py_give_the_readers_one_line_for_bytes_python_refuses(tmp_path):
    folder, line = build_invalid(tmp_path / "invalid")
    expected = INVALID_LINE.format(line=line)
    public = run_public(folder, tmp_path)
    failed = [text for text in public.failures.values() if text]
    assert failed and all(expected in text for text in failed if "attention.py" in text), failed[:2]
    run = subprocess.run([sys.executable, str(ROOT / "assignment" / "submit.py"), str(folder)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and run.stderr.strip() == f"submit: {expected}", run.stderr
