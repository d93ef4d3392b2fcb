"""A re-run with nothing to grade costs no torch import: the reports are reused, the class files
written, and neither torch nor the sandbox is started (autograder/grading/resume.py)."""
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

# Runs the command line in this process's interpreter and says afterwards whether torch was imported.
PROBE = ("import sys\nfrom autograder.cli import main\ncode = main(sys.argv[1:])\n"
         "print('torch imported:', 'torch' in sys.modules)\nsys.exit(code)\n")


def grade(*args):
    return subprocess.run([sys.executable, "-c", PROBE, "grade", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture
def graded(open_tmp):
    """One submission, graded once into a fresh OUT."""
    submissions = open_tmp / "submissions"
    shutil.copytree(ROOT / "examples" / "submissions" / "mask_bug", submissions / "mask_bug")
    first = grade(submissions, "--out", open_tmp / "out")
    assert first.returncode == 0 and "Graded 1" in first.stdout, first.stderr[-2000:]
    return submissions, open_tmp / "out"


def test_a_rerun_with_nothing_to_grade_imports_no_torch(graded):
    submissions, out = graded
    (out / "gradebook.csv").unlink()

    again = grade(submissions, "--out", out)

    assert again.returncode == 0, again.stderr[-2000:]
    assert "Graded 0, resumed 1" in again.stdout and "torch imported: False" in again.stdout, again.stdout
    assert "1 submissions already graded" in again.stderr, again.stderr
    assert (out / "gradebook.csv").exists(), "the class files are written from the reused reports"


def test_a_changed_submission_is_still_graded_after_a_rerun(graded):
    submissions, out = graded
    assert "torch imported: False" in grade(submissions, "--out", out).stdout
    shutil.copy(ROOT / "solution" / "attention.py", submissions / "mask_bug" / "attention.py")

    again = grade(submissions, "--out", out)

    assert "Graded 1, resumed 0" in again.stdout, again.stdout
    assert "the submission's files changed" in again.stderr, again.stderr


def test_force_grades_again_even_with_nothing_changed(graded):
    submissions, out = graded
    again = grade(submissions, "--out", out, "--force")
    assert "Graded 1, resumed 0" in again.stdout and "torch imported: True" in again.stdout, again.stdout


def settings_with(folder, section, name, value):
    """A copy of grading.yaml with one setting changed, as an instructor would edit it."""
    import yaml

    settings = yaml.safe_load((ROOT / "grading.yaml").read_text()) or {}
    settings.setdefault(section, {})[name] = value
    path = folder / "grading.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


@pytest.mark.parametrize("name, value", [("daily_submission_limit", 3), ("stdout_visibility", "visible")])
def test_a_setting_only_gradescope_uses_makes_no_report_regrade(graded, open_tmp, name, value):
    submissions, out = graded
    changed = settings_with(open_tmp, "gradescope", name, value)

    again = grade(submissions, "--out", out, "--config", changed)

    assert again.returncode == 0, again.stderr[-2000:]
    assert "Graded 0, resumed 1" in again.stdout and "torch imported: False" in again.stdout, again.stdout


def test_a_setting_that_decides_grades_still_regrades(graded, open_tmp):
    submissions, out = graded
    changed = settings_with(open_tmp, "limits", "call_seconds", 9)

    again = grade(submissions, "--out", out, "--config", changed)

    assert "Graded 1, resumed 0" in again.stdout, again.stdout
    assert "the settings changed" in again.stderr, again.stderr
