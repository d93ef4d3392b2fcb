"""Late work, release and similarity on a real-shaped Gradescope export, graded by the kit's own command:
the export's created_at reaches the gradebook's penalty, release/ holds no hidden test's output, and
similarity leaves the reference out (issue 33, items 4, 7 and 8; issue 48, item 4)."""
import csv
import io
import shutil

import pytest

from autograder.grading.suite_points import core_max, full_marks
from conftest import ROOT, gradescope_metadata, run_grader

pytestmark = pytest.mark.slow  # one grading of three samples

METADATA = gradescope_metadata(
    ("Ada Lovelace", "1815", "ada@example.edu", "2026-10-01 21:14:03.120377000 -07:00"),
    ("Alan Turing", "1912", "alan@example.edu", "2026-10-03 09:40:12.334051000 -07:00"),
    ("Grace Hopper", "1906", "grace@example.edu", "2026-10-02 08:05:55.001200000 -07:00"))
LATE = "late:\n  due: 2026-10-01 23:59 -07:00\n  percent_per_day: 10\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("late")
    export = root / "export"
    for n, sample in enumerate(("reference", "mask_bug", "reference"), start=1):
        shutil.copytree(ROOT / "examples" / "submissions" / sample, export / f"submission_{n}")
    (export / "submission_metadata.yml").write_text(METADATA)
    config = root / "grading.yaml"
    config.write_text((ROOT / "grading.yaml").read_text().split("\nlate:")[0] + "\n" + LATE)
    run = run_grader("grade", "--export", "gradescope", export, "--out", root / "out", "--config", config, "--jobs", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    return root / "out"


def book(out):
    return {r["submission_id"]: r for r in csv.DictReader(io.StringIO(
        (out / "gradebook.csv").read_text(encoding="utf-8-sig")))}


def points(value):
    return f"{value:g}"


def test_the_exports_time_sets_each_penalty(graded):
    """On time: no penalty; two days late: 20% of the raw total; one day late: 10% (full marks: the suite's)."""
    rows, full = book(graded), full_marks()
    assert (rows["1"]["late_penalty"], rows["1"]["total"]) == ("", points(full))
    raw = float(rows["2"]["raw"])
    assert 0 < raw < full, "mask_bug scores some points, not all"
    assert (rows["2"]["late_penalty"], rows["2"]["total"]) == (points(round(raw * 0.2, 4)), points(round(raw * 0.8, 4)))
    assert (rows["3"]["late_penalty"], rows["3"]["total"]) == (points(round(full * 0.1, 4)), points(round(full * 0.9, 4)))


def test_release_holds_no_hidden_tests_output_until_published(graded):
    hidden = next(t for t in __import__("json").loads((graded / "2" / "results.json").read_text())["tests"]
                  if t["visibility"] != "visible" and t["status"] == "failed")
    run = run_grader("release", graded)
    assert run.returncode == 0, run.stderr
    released = (graded / "release" / "2" / "feedback.md").read_text(encoding="utf-8")
    total = f"{book(graded)['2']['total']} / {core_max():g}"
    assert hidden["name"] not in released and total not in released
    run_grader("release", graded, "--show", "after_published")
    released = (graded / "release" / "2" / "feedback.md").read_text(encoding="utf-8")
    assert hidden["name"] in released and f"**Your total: {total}.**" in released


def test_similarity_leaves_out_the_reference_and_leaves_the_grades_alone(graded):
    """Code every correct solution must share is no evidence (issue 48): two copies of the reference itself share
    nothing once the reference's fingerprints are left out, as the stubs' are."""
    rows = {(r["submission_a"], r["submission_b"]): r for r in csv.DictReader(io.StringIO(
        (graded / "similarity.csv").read_text(encoding="utf-8")))}
    assert (rows[("1", "3")]["shared_tokens"], rows[("1", "3")]["listed"]) == ("0", "")
    assert book(graded)["3"]["raw"] == points(full_marks())
