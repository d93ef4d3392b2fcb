"""An instructor's term, played on a copy of the kit with `make`: every change to the lab is followed by
the grades, and a broken hidden test never reaches a student.

After each change (a part's points, a new hidden test, a tolerance, a setting, one student's new
files) `make grade` on the same OUT gives the gradebook a fresh grading gives, regrades exactly the
reports the change decides, and each regraded report says why. A hidden test broken three ways
stops `make grade`, `make gradescope` and `make nbgrader-course` before any student is graded.
The steps are the ones docs/instructor.md gives. Last, the shapes a real export takes (the zip `make submit`
builds, CRLF files folders down, an empty upload, a notebook alone, a Canvas re-upload, Moodle's non-ASCII
folders, a hand-graded override) are graded and released with make, one behaviour per test.
"""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # about twenty gradings of the samples, three of small real-shaped classes

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
    kit.edit("autograder/judging/compare.py", "torch.float64: (1e-10, 1e-8),", "torch.float64: (1e-9, 1e-8),")
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
    assert float(row["total"]) == float(row["raw"]) - 5 and row["adjustment"] == "-5", row
    assert row["adjustment_reason"] == "'-5 points (two days late)", "a text cell starting with - is guarded"
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


# --- a real-shaped class (issue 33): the shapes an LMS hands over, graded with make as docs/instructor.md says

def reference_files():
    from variant_builder import FILES, without_markers
    return {name: without_markers((ROOT / "solution" / name).read_text()) for name in FILES}


def submitted_zip(kit):
    """`make submit` run in a student's copy of assignment/ holding the reference: the zip students upload."""
    student = kit.root / "student-copy"
    shutil.copytree(kit.root / "assignment", student)
    for name, text in reference_files().items():
        (student / name).write_text(text)
    run = subprocess.run(["make", "--no-print-directory", "submit", f"PYTHON={ROOT / '.venv' / 'bin' / 'python'}"],
                         cwd=student, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return (student / "submission.zip").read_bytes()


@pytest.fixture(scope="module")
def real_shaped(tmp_path_factory):
    """A kit copy with a plain class, a Canvas flat download and Moodle per-student folders, each graded once
    by `make grade` (a hand-graded override typed in first), then `make release`."""
    kit = Kit(tmp_path_factory.mktemp("shapes") / "kit")
    ref, bug = reference_files(), (ROOT / "examples" / "submissions" / "mask_bug" / "attention.py").read_text()
    zipped = submitted_zip(kit)
    plain = kit.root / "class"
    (plain / "zoë_zip").mkdir(parents=True)
    (plain / "zoë_zip" / "submission.zip").write_bytes(zipped)
    nested = plain / "crlf_nested" / "lab 3" / "src"
    nested.mkdir(parents=True)
    for name, text in ref.items():
        (nested / name).write_bytes(text.replace("\n", "\r\n").encode())
    (plain / "empty").mkdir()
    (plain / "notebook_only").mkdir()
    shutil.copy(kit.root / "assignment" / "playground.ipynb", plain / "notebook_only")
    canvas = kit.root / "canvas"
    canvas.mkdir()
    (canvas / "núñezjosé_2002_9009_attention.py").write_text(ref["attention.py"])
    (canvas / "núñezjosé_2002_9009_mha.py").write_text("raise ImportError('the first upload')\n")
    (canvas / "núñezjosé_2002_9010_mha-1.py").write_text(ref["mha.py"])
    (canvas / "lovelaceada_LATE_1815_9001_attention.py").write_text(bug)
    (canvas / "lovelaceada_LATE_1815_9001_mha.py").write_text(ref["mha.py"])
    # issue 48's intake attacks: a tail that spells Moodle's marker, and a file that fits no grammar
    (canvas / "lovelaceada_LATE_1815_9003_notes_7_assignsubmission_file_attention.py").write_text("# notes\n")
    (canvas / "grading notes.txt").write_text("the instructor's")
    moodle = kit.root / "moodle"
    for folder, files in (("Siobhán Ó Ceallaigh_482915_assignsubmission_file_", {"submission.zip": zipped}),
                          ("Siobhán Ó Ceallaigh_482915_assignsubmission_onlinetext_", {"onlinetext.html": b"<p>hi</p>"}),
                          ("Grace Hopper_482916_assignsubmission_file_", {})):
        (moodle / folder).mkdir(parents=True)
        for name, data in files.items():
            (moodle / folder / name).write_bytes(data)
    # Canvas, graded anonymously (lib/content_zipper.rb @05e9653c get_filename): [LATE_]anon_<anonymous id>_...
    anonymous = kit.root / "canvas-anonymous"
    anonymous.mkdir()
    (anonymous / "anon_x7Kq2_9101_attention.py").write_text(ref["attention.py"])
    (anonymous / "anon_x7Kq2_9101_mha.py").write_text(ref["mha.py"])
    (anonymous / "LATE_anon_3mZp8_9102_attention.py").write_text(bug)
    (anonymous / "LATE_anon_3mZp8_9102_mha.py").write_text(ref["mha.py"])
    outs = {}
    for name, source, kind in (("class", plain, None), ("canvas", canvas, "canvas"), ("moodle", moodle, "moodle"),
                               ("canvas-anonymous", anonymous, "canvas")):
        out = outs[name] = kit.root / f"{name}-out"
        out.mkdir()
        (out / "adjustments.csv").write_text("student,points,override,reason\nempty,,80,graded by hand\n")
        run = kit.make("grade", SUBMISSIONS=source, OUT=out, **({"EXPORT": kind} if kind else {}))
        assert run.returncode == 0, run.stderr[-3000:]
        outs[f"{name}-console"] = run.stdout + run.stderr
        assert kit.make("release", OUT=out).returncode == 0
    return outs


def rows_of(out, name="gradebook.csv"):
    import csv
    with open(out / name, encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def test_a_folder_holding_the_zip_make_submit_builds_gets_full_marks(real_shaped):
    from autograder.grading.suite_points import full_marks
    row = next(r for r in rows_of(real_shaped["class"]) if r["submission_id"] == "zoë_zip")
    assert (row["status"], row["raw"]) == ("graded", f"{full_marks():g}"), row


def test_crlf_files_two_folders_down_get_full_marks(real_shaped):
    from autograder.grading.suite_points import full_marks
    row = next(r for r in rows_of(real_shaped["class"]) if r["submission_id"] == "crlf_nested")
    assert (row["status"], row["raw"]) == ("graded", f"{full_marks():g}"), row


def test_an_empty_upload_and_a_notebook_alone_are_not_graded_with_one_line_each_never_0(real_shaped):
    rows = {r["submission_id"]: r for r in rows_of(real_shaped["class"])}
    assert rows["notebook_only"]["status"] == "no files" and rows["notebook_only"]["total"] == ""
    console = real_shaped["class-console"]
    assert "not graded: notebook_only: you uploaded playground.ipynb" in console, console
    assert "not graded: empty: the upload is empty" in console, console


def test_a_hand_graded_override_of_an_empty_upload_is_released_with_the_instructors_total(real_shaped):
    released = (real_shaped["class"] / "release" / "empty" / "feedback.md").read_text(encoding="utf-8")
    assert "graded by hand" in released and "**Your total: 80 / " in released, released


def test_a_canvas_re_upload_is_graded_and_the_import_file_names_each_student_by_canvas_id(real_shaped):
    from autograder.grading.suite_points import full_marks
    rows = {r["ID"]: r for r in rows_of(real_shaped["canvas"], "import-canvas.csv")}
    assert set(rows) == {"2002", "1815"}
    assert rows["2002"]["LAB-03"] == f"{full_marks():g}", "the re-uploaded mha-1.py is the one graded"
    late = next(r for r in rows_of(real_shaped["canvas"]) if r["ID"] == "1815")
    assert late["late"].startswith("late (the export's flag"), late


def test_moodle_folders_with_non_ascii_names_import_by_participant_id(real_shaped):
    """Moodle's worksheet importer (mod/assign/feedback/offline/importgradeslib.php @452e36fc, init) needs
    Identifier, Grade and Last modified (grade); locallib.php @04975560 skips a grade above the maximum."""
    from autograder.grading.suite_points import core_max, full_marks
    rows = rows_of(real_shaped["moodle"], "import-moodle.csv")
    assert [(r["Identifier"], r["Full name"], r["Grade"], r["Maximum Grade"], r["Total before the cap"])
            for r in rows] == [("Participant 482915", "Siobhán Ó Ceallaigh", f"{min(full_marks(), core_max()):g}",
                                f"{core_max():g}", f"{full_marks():g}")], "the empty folder is left out"
    assert rows[0]["Last modified (grade)"], "Moodle reads an empty date as stale"
    if full_marks() > core_max():
        assert "import-moodle.csv: 1 total above the maximum grade, capped" in real_shaped["moodle-console"]


def test_a_students_file_name_never_stops_a_canvas_class_and_a_stray_file_is_named_in_one_line(real_shaped):
    """Canvas's prefix is fixed (lib/content_zipper.rb get_filename; assignment.rb
    infer_comment_context_from_filename reads the first two numbers): the class is read as Canvas's."""
    assert {r["ID"] for r in rows_of(real_shaped["canvas"], "import-canvas.csv")} == {"2002", "1815"}
    lines = [line for line in real_shaped["canvas-console"].splitlines() if "grading notes.txt" in line]
    assert len(lines) == 1 and lines[0].startswith("not graded: grading notes.txt"), lines


def test_a_moodle_online_text_folder_is_no_second_row(real_shaped):
    assert [r["submission_id"] for r in rows_of(real_shaped["moodle"])].count("Siobhán Ó Ceallaigh_482915") == 1


def test_an_anonymous_canvas_class_is_graded_by_anonymous_id_and_its_feedback_goes_back_by_it(real_shaped):
    """Canvas's import cannot match an anonymous id (no import-canvas.csv); its re-upload can
    (app/models/abstract_assignment.rb @028f76bb, infer_comment_context_from_filename: a leading "anon")."""
    import zipfile
    from autograder.grading.suite_points import full_marks
    out = real_shaped["canvas-anonymous"]
    rows = {r["submission_id"]: r for r in rows_of(out)}
    assert set(rows) == {"anon_x7Kq2", "anon_3mZp8"} and {r["ID"] for r in rows.values()} == {""}
    assert rows["anon_x7Kq2"]["total"] == f"{full_marks():g}" and rows["anon_3mZp8"]["late"].startswith("late")
    assert not (out / "import-canvas.csv").exists()
    assert "import-canvas.csv cannot name them" in real_shaped["canvas-anonymous-console"]
    with zipfile.ZipFile(out / "release" / "canvas-feedback.zip") as archive:
        assert sorted(archive.namelist()) == ["anon_3mZp8_9102_attention.py", "anon_x7Kq2_9101_attention.py"]
