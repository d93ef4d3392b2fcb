"""An instructor's term, played on a copy of the kit with `make`: every change to the lab is followed by
the grades, and a broken hidden test never reaches a student.

After each change (a part's points, a new hidden test, a tolerance, a setting, one student's new
files) `make grade` on the same OUT gives the gradebook a fresh grading gives, regrades exactly the
reports the change decides, and each regraded report says why. A hidden test broken three ways
stops `make grade`, `make gradescope` and `make nbgrader-course` before any student is graded.
The steps are the ones docs/instructor.md gives.
"""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # about twenty gradings of the samples

KIT_PARTS = ("Makefile", "autograder", "tests_hidden", "solution", "assignment", "examples", "requirements",
             "grading.yaml")
SAMPLES = ("crashes", "head_reshape_bug", "mask_bug", "reference", "stubs")
NEW_TEST = '''

@pytest.mark.points(1)
def test_causal_mask_of_three_tokens(student):
    """Causal mask: T = 3 (added this term)"""
    got = student.call("attention.causal_mask", 3).result
    expect_equal(got, torch.ones(3, 3, dtype=torch.bool).tril(), "causal_mask(3)", "mask", CAUSAL_HINT)
'''


class Kit:
    """A copy of the kit (sharing the kit's .venv) with its own cache, driven with make as an instructor would."""

    def __init__(self, root):
        self.root = root
        root.mkdir()
        for part in KIT_PARTS:
            source = ROOT / part
            if source.is_dir():
                shutil.copytree(source, root / part, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
            else:
                shutil.copy(source, root / part)
        (root / ".venv").symlink_to(ROOT / ".venv")
        self.env = dict(os.environ, XDG_CACHE_HOME=str(root / ".cache"))

    def make(self, target, **variables):
        return subprocess.run(["make", "--no-print-directory", target, *(f"{k}={v}" for k, v in variables.items())],
                              cwd=self.root, env=self.env, capture_output=True, text=True, timeout=900)

    def edit(self, relative, old, new, count=1):
        path = self.root / relative
        text = path.read_text()
        assert old in text, f"{relative} no longer holds {old!r}: update this test"
        path.write_text(text.replace(old, new, count))

    def grade(self, out):
        return self.make("grade", SUBMISSIONS=self.root / "class", OUT=out)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """The kit copy and its class (the samples), graded once into OUT."""
    kit = Kit(tmp_path_factory.mktemp("term") / "kit")
    shutil.copytree(ROOT / "examples" / "submissions", kit.root / "class")
    out = kit.root / "graded"
    run = kit.grade(out)
    assert run.returncode == 0, run.stderr[-3000:]
    return kit, out


def regrade_and_compare(kit, out, fresh_name):
    """`make grade` on the same OUT, then on a fresh one; returns the first run. Their gradebooks are equal."""
    again = kit.grade(out)
    assert again.returncode == 0, again.stderr[-3000:]
    fresh = kit.grade(kit.root / fresh_name)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert (out / "gradebook.csv").read_text() == (kit.root / fresh_name / "gradebook.csv").read_text(), \
        "the regraded gradebook differs from a fresh grading of the same files"
    return again


def regraded_reason(out, sample):
    return next((line for line in (out / sample / "feedback.md").read_text().splitlines()
                 if line.startswith("Regraded:")), None)


def maxima(out):
    lines = (out / "gradebook.csv").read_text().splitlines()
    column = lines[0].split(",").index("max")
    return {line.split(",")[column] for line in lines[1:]}


# The steps run in this order, on one OUT, as a term's changes do.

def test_changing_a_parts_points_regrades_everyone_out_of_the_new_maximum(term):
    kit, out = term
    [before] = maxima(out)
    kit.edit("tests_hidden/test_heads.py", "@pytest.mark.points(2)", "@pytest.mark.points(4)")
    run = regrade_and_compare(kit, out, "fresh-points")
    assert f"regrading {len(SAMPLES)}: the hidden suite changed" in run.stderr, run.stderr
    assert maxima(out) == {f"{float(before) + 2:g}"}, "every row is out of the new maximum"
    assert all(regraded_reason(out, s) == "Regraded: the hidden suite changed since the last grading."
               for s in SAMPLES)


def test_adding_a_hidden_test_regrades_everyone(term):
    kit, out = term
    [before] = maxima(out)
    path = kit.root / "tests_hidden" / "test_masks.py"
    path.write_text(path.read_text() + NEW_TEST)
    run = regrade_and_compare(kit, out, "fresh-new-test")
    assert f"regrading {len(SAMPLES)}: the hidden suite changed" in run.stderr, run.stderr
    assert maxima(out) == {f"{float(before) + 1:g}"}


def test_changing_a_tolerance_regrades_everyone(term):
    kit, out = term
    kit.edit("autograder/grading/compare.py", "torch.float64: (1e-10, 1e-8),", "torch.float64: (1e-9, 1e-8),")
    run = regrade_and_compare(kit, out, "fresh-tolerance")
    assert f"regrading {len(SAMPLES)}: the grader changed" in run.stderr, run.stderr


def test_changing_a_setting_regrades_everyone(term):
    kit, out = term
    kit.edit("grading.yaml", "call_seconds: 10 ", "call_seconds: 12 ")
    run = regrade_and_compare(kit, out, "fresh-setting")
    assert f"regrading {len(SAMPLES)}: the settings changed" in run.stderr, run.stderr


def test_one_students_new_files_regrade_that_student_only(term):
    kit, out = term
    kept = {s: (out / s / "results.json").stat().st_mtime_ns for s in SAMPLES}
    fixed = (kit.root / "solution" / "mha.py").read_bytes()
    (kit.root / "class" / "mask_bug" / "mha.py").write_bytes(fixed)
    run = regrade_and_compare(kit, out, "fresh-upload")
    assert "regrading 1: the submission's files changed (mask_bug)" in run.stderr, run.stderr
    assert "4 submissions already graded" in run.stderr, run.stderr
    assert [s for s in SAMPLES if (out / s / "results.json").stat().st_mtime_ns != kept[s]] == ["mask_bug"]


def test_grading_again_with_nothing_changed_regrades_nobody(term):
    kit, out = term
    run = kit.grade(out)
    assert run.returncode == 0 and "regrading" not in run.stderr, run.stderr
    assert f"{len(SAMPLES)} submissions already graded" in run.stderr, run.stderr


def gradebook_row(out, submission):
    import csv
    with open(out / "gradebook.csv", encoding="utf-8-sig") as f:
        return next(row for row in csv.DictReader(f) if row["submission_id"] == submission)


def test_an_adjustment_survives_a_forced_regrade_and_make_clean_and_the_history_keeps_every_grade(term):
    kit, out = term
    text = "student,points,override,reason\nmask_bug,-5,,two days late\n"
    (out / "adjustments.csv").write_text(text)
    history_before = (out / "history.csv").read_bytes()
    for folder in ("tests", "bench"):  # make clean sweeps their caches; the copy has neither
        (kit.root / folder).mkdir(exist_ok=True)
    for run in (kit.grade(out), kit.make("grade", SUBMISSIONS=kit.root / "class", OUT=out, FORCE=1),
                kit.make("clean"), kit.grade(out)):
        assert run.returncode == 0, run.stderr[-3000:]
    assert (out / "adjustments.csv").read_text() == text, "the kit rewrote the instructor's adjustments"
    row = gradebook_row(out, "mask_bug")
    assert float(row["total"]) == float(row["raw"]) - 5 and row["adjustment"] == "-5 points (two days late)", row
    history = (out / "history.csv").read_bytes()
    assert history.startswith(history_before), "history.csv was rewritten, not appended to"
    added = history[len(history_before):].decode().splitlines()
    assert len(added) == 1 + len(SAMPLES), added  # the adjustment, then the forced regrade of everyone
    assert added[0].endswith(f"{row['raw']},{row['total']},adjustment: -5 points (two days late)"), added
    # graded first, then regraded by each change above: the points, a new test, a tolerance, a setting, its files
    assert history_before.decode().count(",mask_bug,") == 6, history_before.decode()


BROKEN = {  # how a hidden test is broken -> (old, new) in test_masks.py, and the line the message must name
    "a NameError": ('    got = student.call("attention.causal_mask", 6).result',
                    '    got = studnet.call("attention.causal_mask", 6).result', "studnet.call"),
    "a syntax error": ("def test_causal_mask_is_a_square_bool_tensor(student):",
                       "def test_causal_mask_is_a_square_bool_tensor(student:", "(student:"),
    "a wrong expected value": ("expected = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()",
                               "expected = torch.ones(seq_len, seq_len, dtype=torch.bool).triu()",
                               'expect_equal(got, expected, f"causal_mask({seq_len})"'),  # the check that fails
}


@pytest.fixture(scope="module")
def broken_kits(tmp_path_factory):
    """One fresh kit copy per way of breaking a hidden test, with the line the message must name."""
    kits = {}
    for how, (old, new, named) in BROKEN.items():
        kit = Kit(tmp_path_factory.mktemp("broken") / "kit")
        kit.edit("tests_hidden/test_masks.py", old, new)
        lines = (kit.root / "tests_hidden/test_masks.py").read_text().splitlines()
        kits[how] = kit, next(n for n, text in enumerate(lines, 1) if named in text)
    return kits


@pytest.mark.parametrize("how", BROKEN)
def test_a_broken_hidden_test_stops_make_grade_before_any_student(broken_kits, how):
    kit, line = broken_kits[how]
    out = kit.root / "out"
    run = kit.make("grade", OUT=out)
    assert run.returncode != 0
    assert f"tests_hidden/test_masks.py:{line}" in run.stderr, run.stderr
    assert "nothing was graded" in run.stderr
    assert not any(out.glob("*/results.json")) and not (out / "gradebook.csv").exists()


@pytest.mark.parametrize("how", BROKEN)
def test_a_broken_hidden_test_stops_make_gradescope(broken_kits, how):
    kit, line = broken_kits[how]
    run = kit.make("gradescope")
    assert run.returncode != 0 and f"tests_hidden/test_masks.py:{line}" in run.stderr, run.stderr
    assert not (kit.root / "dist" / "autograder.zip").exists()


@pytest.mark.parametrize("how", BROKEN)
def test_a_broken_hidden_test_stops_make_nbgrader_course(broken_kits, how):
    kit, line = broken_kits[how]
    run = kit.make("nbgrader-course", NBGRADER_COURSE=kit.root / "course")
    assert run.returncode != 0 and f"tests_hidden/test_masks.py:{line}" in run.stderr, run.stderr
    assert not (kit.root / "course").exists()
