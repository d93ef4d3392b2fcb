"""The grader end to end on the bundled samples: scores, report formats, determinism, resuming, CLI errors."""
import csv
import hashlib
import json
import re
import shutil

import jsonschema
import pytest

from autograder.parts import EXTRA_PARTS, PARTS as LAB_PARTS
from autograder.grading.suite_points import core_max, extra_max, full_marks, part_points
from conftest import ROOT, part_of_module, run_grader

SAMPLES = ROOT / "examples" / "submissions"
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "gradescope_results.schema.json").read_text())
PARTS = set(LAB_PARTS) - set(EXTRA_PARTS)  # the core parts, as tests_hidden/parts.py lists them


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The samples graded once with two jobs, as `make grade` does."""
    out = tmp_path_factory.mktemp("reports")
    run = run_grader("grade", SAMPLES, "--out", out, "--jobs", 2)
    assert run.returncode == 0, f"grader failed:\n{run.stderr[-3000:]}"
    return out, run


def results(out, submission):
    return json.loads((out / submission / "results.json").read_text())


def failing(report):
    return "\n".join(f"{t['number']} {t['name']}: {t['output']}" for t in report["tests"] if t["status"] == "failed")


def test_reference_scores_full_marks(graded):
    report = results(graded[0], "reference")
    assert report["score"] == full_marks(), (
        f"the reference lost points ({core_max():g} core + {extra_max():g} extra):\n{failing(report)}")


def test_untouched_stubs_score_zero_without_grader_errors(graded):
    report = results(graded[0], "stubs")
    assert report["score"] == 0
    assert not report["extra_data"]["grader_error"]
    assert all("grader error" not in t["output"] for t in report["tests"])
    assert any("NotImplementedError" in t["output"] for t in report["tests"]), "stub failures should name NotImplementedError"


@pytest.mark.parametrize("submission", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_results_json_follows_the_gradescope_schema(graded, submission):
    jsonschema.validate(results(graded[0], submission), SCHEMA)


def test_report_is_worth_the_suites_points_in_its_parts_plus_extra(graded):
    report = results(graded[0], "reference")
    assert sum(t["max_score"] for t in report["tests"] if t["tags"][0] not in EXTRA_PARTS) == core_max()
    assert sum(t["max_score"] for t in report["tests"] if t["tags"][0] in EXTRA_PARTS) == extra_max()
    assert report["extra_data"]["max_score"] == core_max(), "extra credit goes above the maximum, not into it"
    assert {t["tags"][0] for t in report["tests"]} == PARTS | (set(EXTRA_PARTS) & set(part_points()))
    assert all(len(t["tags"]) == 1 for t in report["tests"])


SAMPLE_BUGS = {"mask_bug": "test_attention.py", "head_reshape_bug": "test_heads.py"}  # examples/submissions/README.md


def test_buggy_samples_lose_points_in_the_part_of_their_bug(graded):
    """Each sample loses points in the part of the module its bug concerns, whatever this term names it."""
    out = graded[0]
    by_part = lambda report, part: sum(t["score"] for t in report["tests"] if t["tags"] == [part])  # noqa: E731
    graded_parts = {sample: part_of_module(module) for sample, module in SAMPLE_BUGS.items()
                    if (ROOT / "tests_hidden" / module).exists()}
    if not graded_parts:
        pytest.skip("this term's suite has none of the modules the samples' bugs concern")
    for sample, part in graded_parts.items():
        assert by_part(results(out, sample), part) < part_points()[part], f"{sample} keeps every point of {part}"


def suite_digest():
    """The digest of tests_hidden/'s Python files that examples/submissions/README.md states its scores for."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "tests_hidden").rglob("*.py")):
        if "__pycache__" not in path.parts:
            relative = path.relative_to(ROOT).as_posix()
            digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def test_the_samples_score_what_their_readme_states_for_the_shipped_suite(graded):
    """examples/submissions/README.md's table is each sample's grade, part by part, while the suite is the
    shipped one; after a change to the lab (another digest) the table describes the kit as shipped."""
    text = (SAMPLES / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- scores: suite (\w+) -->\n(.*?)<!-- scores: end -->", text, re.DOTALL)
    assert block, "examples/submissions/README.md has no scores table between its markers"
    if block[1] != suite_digest():
        pytest.skip(f"tests_hidden/ is not the suite the samples' README states scores for ({block[1]}; now "
                    f"{suite_digest()}): the lab was changed, or the suite and the README must be updated together")
    header, _, *rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in block[2].splitlines()]
    stated = {row[0]: dict(zip(header[1:], map(float, row[1:]))) for row in rows}
    graded_now = {}
    for sample in stated:
        report = results(graded[0], sample)
        scores = {part: sum(t["score"] for t in report["tests"] if t["tags"] == [part]) for part in header[1:-1]}
        graded_now[sample] = {**scores, "total": report["score"]}
    assert graded_now == stated
    assert set(stated) == {p.name for p in SAMPLES.iterdir() if p.is_dir()}


def test_hidden_tests_show_details_after_the_due_date_and_the_overview_says_so(graded):
    report = results(graded[0], "reference")
    visibilities = {t["visibility"] for t in report["tests"]}
    assert visibilities == {"visible", "after_due_date"}
    assert "are not shown to the student at once: they are shown after the due date" in report["output"]


def test_a_file_that_does_not_import_loses_its_rule_points_as_not_checkable_not_as_a_violation(graded):
    """crashes/: attention.py keeps its rule points; mha.py's syntax error leaves its rule tests unable to check it."""
    rules = [t for t in results(graded[0], "crashes")["tests"] if t["tags"] == ["rules"]]
    kept = [t for t in rules if t["status"] == "passed"]
    lost = [t for t in rules if t["status"] == "failed"]
    assert [t["name"] for t in kept] == ["Rules: attention.py does not use torch's built-in attention"], rules
    assert lost and all("cannot be checked, the file does not import: SyntaxError" in t["output"]
                        and "uses a built-in" not in t["output"] for t in lost), failing({"tests": lost})


@pytest.mark.slow  # grades one more submission
def test_stubs_that_raise_another_exception_score_zero(open_tmp):
    """One sed over the stubs (NotImplementedError -> ValueError) writes nothing: the rule's points need
    an output of the right shape, and a test that a size is refused needs a valid size to be accepted."""
    submission = open_tmp / "value_error_stubs"
    submission.mkdir()
    for name in ("attention.py", "mha.py"):
        stub = (SAMPLES / "stubs" / name).read_text()
        assert "raise NotImplementedError" in stub
        (submission / name).write_text(stub.replace("NotImplementedError", "ValueError"))
    run = run_grader("grade", submission, "--out", open_tmp / "out")
    assert run.returncode == 0, run.stderr[-2000:]
    report = results(open_tmp / "out", "value_error_stubs")
    assert report["score"] == 0, failing({"tests": [t for t in report["tests"] if t["status"] == "passed"]})


@pytest.mark.slow  # grades one more submission
def test_two_empty_files_score_zero_and_say_why(open_tmp):
    """A 0-byte attention.py and mha.py follow the from-scratch rule trivially: its points need written code."""
    submission = open_tmp / "empty"
    submission.mkdir()
    for name in ("attention.py", "mha.py"):
        (submission / name).write_bytes(b"")
    run = run_grader("grade", submission, "--out", open_tmp / "out")
    assert run.returncode == 0, run.stderr[-2000:]
    report = results(open_tmp / "out", "empty")
    assert report["score"] == 0, failing({"tests": [t for t in report["tests"] if t["status"] == "passed"]})
    rules = [t for t in report["tests"] if t["tags"] == ["rules"]]
    assert rules and all("not written yet: the file holds no code" in t["output"] for t in rules), rules


def test_feedback_names_what_to_fix(graded):
    feedback = (graded[0] / "mask_bug" / "feedback.md").read_text()
    assert "## What to fix" in feedback and ("hint:" in feedback or "Likely bug:" in feedback)


def test_gradebook_has_one_row_per_submission_and_a_column_per_part(graded):
    rows = list(csv.DictReader((graded[0] / "gradebook.csv").open()))
    assert sorted(r["submission_id"] for r in rows) == sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
    assert PARTS <= set(rows[0]), f"part columns missing from {list(rows[0])}"
    reference_row = next(r for r in rows if r["submission_id"] == "reference")
    assert float(reference_row["total"]) == full_marks() and float(reference_row["max"]) == core_max()


def test_summary_ranks_tests_by_pass_rate(graded):
    summary = (graded[0] / "summary.md").read_text()
    assert "Pass rate per test" in summary and "Score distribution" in summary
    rates = [line for line in summary.splitlines() if line.startswith("| ") and "%)" in line]
    percents = [int(line.rsplit("(", 1)[1].split("%")[0]) for line in rates]
    assert percents == sorted(percents), "most failed tests come first"


@pytest.mark.slow  # grades the samples a second time
def test_grading_again_with_one_job_gives_identical_reports(graded, tmp_path):
    out, _ = graded
    again = tmp_path / "again"
    run = run_grader("grade", SAMPLES, "--out", again, "--jobs", 1)
    assert run.returncode == 0, run.stderr[-2000:]
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        first, second = results(out, folder.name), results(again, folder.name)
        for report in (first, second):  # the time measurements aside: wall-clock and CPU seconds
            report.pop("execution_time"), report["extra_data"].pop("cpu_seconds")
        assert first == second, f"{folder.name}: reports differ between runs"


@pytest.mark.slow  # grades the samples a second time
def test_a_rerun_keeps_finished_reports_and_grades_the_rest(graded, tmp_path):
    out = tmp_path / "resume"
    shutil.copytree(graded[0], out)
    (out / "stubs" / "results.json").unlink()
    kept = (out / "reference" / "results.json").stat().st_mtime_ns
    run = run_grader("grade", SAMPLES, "--out", out, "--jobs", 1)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "already graded" in run.stderr
    assert (out / "stubs" / "results.json").exists()
    assert (out / "reference" / "results.json").stat().st_mtime_ns == kept, "a finished report was rewritten"


def test_a_missing_path_is_a_one_line_usage_error(tmp_path):
    run = run_grader("grade", tmp_path / "nope", "--out", tmp_path / "out")
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "nope" in run.stderr, run.stderr


def test_an_out_path_that_is_a_file_is_a_one_line_usage_error(tmp_path):
    (tmp_path / "file").write_text("x")
    run = run_grader("grade", SAMPLES / "reference", "--out", tmp_path / "file")
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0, run.stderr


def test_zero_jobs_is_refused(tmp_path):
    run = run_grader("grade", SAMPLES / "reference", "--out", tmp_path, "--jobs", 0)
    assert run.returncode == 2 and "--jobs" in run.stderr


def test_an_upload_posing_as_an_export_is_refused_in_one_line_and_nothing_is_written(tmp_path):
    """Issue 48: a student's zip holding submission_metadata.yml and submission_<id>/ folders names nobody: the
    run stops before grading, says which flag grades a class and which grades one submission, and OUT keeps what it
    had (an earlier gradebook is not replaced)."""
    import zipfile
    forged = tmp_path / "eve.zip"
    with zipfile.ZipFile(forged, "w") as archive:
        archive.writestr("submission_metadata.yml", "submission_1:\n  :submitters:\n  - :name: Someone Else\n")
        for name in ("attention.py", "mha.py"):
            archive.write(SAMPLES / "reference" / name, f"submission_1/{name}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "gradebook.csv").write_text("the instructor's earlier gradebook\n")
    run = run_grader("grade", forged, "--out", out)
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0, run.stderr
    assert "--export gradescope" in run.stderr and "--single" in run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["gradebook.csv"]
    assert (out / "gradebook.csv").read_text() == "the instructor's earlier gradebook\n"
