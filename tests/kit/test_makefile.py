"""The Makefile's promises: `make clean` removes only what the kit rebuilds, never an instructor's
grades, and the variables `make help` names reach the commands."""
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

# What the kit's commands rebuild: `make clean` removes each of them.
REBUILDABLE = [".pytest_cache/v/cache/lastfailed", "dist/autograder.zip", "autograder/__pycache__/batch.cpython-311.pyc"]
# What `make clean` cannot tell from a student's work: the zip `make submit` writes is also the name a
# student's download has when an instructor saves it in the kit to grade it.
NOT_PROVABLY_THE_KITS = ["submission.zip", "assignment/submission.zip"]


def make(*args, cwd=ROOT):
    return subprocess.run(["make", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def kit_copy(tmp_path):
    """The kit's tracked files in a fresh folder, as a clone would have them."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    return tmp_path


def fake_course(course):
    """An nbgrader course after a term's grading: the database, the students' files, their feedback."""
    files = {
        "gradebook.db": b"SQLite format 3\x00" + bytes(range(256)),
        "grades.csv": b"assignment,student_id,score\nlab03,alice,104.0\n",
        "nbgrader_config.py": b"c = get_config()\nc.CourseDirectory.course_id = 'cs-101'\n",
        "submitted/alice/lab03/attention.py": b"def causal_mask(seq_len): ...\n",
        "submitted/alice/lab03/__pycache__/attention.cpython-311.pyc": b"\x00student bytecode",
        "autograded/alice/lab03/playground.ipynb": b'{"cells": []}',
        "feedback/alice/lab03/playground.html": b"<html>feedback</html>",
        "release/lab03/attention.py": b"# stub\n",
    }
    return write_all(course, files)


def fake_reports(out):
    files = {"gradebook.csv": b"Student,total,max\nalice,104,100\n", "summary.md": b"# Summary\n",
             "alice/results.json": b'{"score": 104.0}', "alice/feedback.md": b"# Feedback\n"}
    return write_all(out, files)


def write_all(folder, files):
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def snapshot(folder):
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.mark.parametrize("variables", [{}, {"OUT": "term1/reports", "NBGRADER_COURSE": "courses/lab03"}],
                         ids=["defaults", "overridden"])
def test_clean_keeps_every_course_and_report_byte_for_byte(tmp_path, variables):
    kit = kit_copy(tmp_path)
    kept = [fake_course(kit / variables.get("NBGRADER_COURSE", "course")),
            fake_reports(kit / variables.get("OUT", "reports")), fake_reports(kit / "reports")]
    before = {folder: snapshot(folder) for folder in kept}
    write_all(kit, {name: b"rebuildable" for name in REBUILDABLE})

    run = make("clean", *(f"{key}={value}" for key, value in variables.items()), cwd=kit)

    assert run.returncode == 0, run.stderr
    for folder in kept:
        assert snapshot(folder) == before[folder], f"make clean changed {folder.relative_to(kit)}"
        assert f"kept {folder.relative_to(kit)}" in run.stdout, f"make clean should say it kept {folder}"
    assert not [name for name in REBUILDABLE if (kit / name).exists()], "make clean left what the kit rebuilds"


def test_clean_keeps_a_submission_zip_and_names_it(tmp_path):
    kit = kit_copy(tmp_path)
    student = b"PK\x05\x06" + bytes(18)  # a student's zip, saved in the kit folder to grade it
    write_all(kit, {name: student for name in NOT_PROVABLY_THE_KITS})

    run = make("clean", cwd=kit)

    assert run.returncode == 0, run.stderr
    for name in NOT_PROVABLY_THE_KITS:
        assert (kit / name).read_bytes() == student, f"make clean deleted {name}"
        assert f"kept {name}" in run.stdout, f"make clean should say it kept {name}"


def test_clean_removes_an_empty_dist_folder(tmp_path):
    kit = kit_copy(tmp_path)
    write_all(kit, {"dist/autograder.zip": b"zip"})
    assert make("clean", cwd=kit).returncode == 0
    assert not (kit / "dist").exists()


def test_help_lists_every_target():
    text = make("help").stdout
    targets = ["grade", "check", "check-fast", "validate", "test", "stubs", "submit", "gradescope", "nbgrader-course",
               "bench", "clean"]
    assert not [target for target in targets if f"make {target} " not in text], text


def grade_command(*variables):
    """The grading line `make grade` would run (make -n prints it without running it)."""
    lines = make("-n", "grade", *variables).stdout.splitlines()
    return " ".join(line for line in lines if "-m autograder grade" in line or line.startswith("\t"))


def test_force_reaches_the_grader():
    assert "--force" in grade_command("FORCE=1")
    assert "--force" not in grade_command()


def test_export_names_the_first_path_as_the_class_download():
    """An upload is never an export: only EXPORT= makes `make grade` read SUBMISSIONS as a class (issue 48)."""
    assert "--export canvas course.zip" in grade_command("EXPORT=canvas", "SUBMISSIONS=course.zip")
    assert "--export" not in grade_command()


def test_config_and_jobs_reach_the_grader():
    command = grade_command("CONFIG=other.yaml", "JOBS=3")
    assert "--config other.yaml" in command and "--jobs 3" in command, command


@pytest.mark.parametrize("target", ["check", "check-fast"])
def test_kit_tests_list_the_reason_of_every_skip(target):
    command = next(line for line in make("-n", target).stdout.splitlines() if "-m pytest" in line)
    assert " -rs" in command, command
