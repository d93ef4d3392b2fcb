"""`make nbgrader-course`: a course that nbgrader grades with the kit's own sandboxed grader.

One run of nbgrader's documented flow (nbgrader starts slowly): write the course,
`nbgrader generate_assignment`, four students made from the release (a correct one, a buggy one,
an untouched one and one that tampers with the grading from inside the notebook's kernel), one
`nbgrader autograde`, `generate_feedback` and `export`, then `make nbgrader-course` again on the
graded course. The same four pairs of files also go through `python -m autograder grade`, which
is what `make grade` runs. Without nbgrader's processes: regenerating a course, and the graded
cells as a student runs them.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.platforms import nbgrader_course
from autograder.grading.suite_points import core_max, full_marks

pytest.importorskip("nbgrader", reason="nbgrader is not installed (requirements/tools.lock has it; make check installs it)")

pytestmark = pytest.mark.slow  # builds an nbgrader course and autogrades students with nbgrader (`make check-fast` skips it)

from conftest import ROOT, copy_of_the_kit

BIN = Path(sys.executable).parent
LAB = nbgrader_course.ASSIGNMENT
NOTEBOOK = nbgrader_course.NOTEBOOK
STUDENTS = ("correct", "buggy", "untouched", "tamper", "symlink")
# The "symlink" student hands in links to the kit's solution and hidden tests, not files (issue 23, 7):
# nbgrader's copy into autograded/ follows them, `make grade` refuses them.
SYMLINKS = {"attention.py": ROOT / "solution" / "attention.py", "mha.py": ROOT / "solution" / "mha.py",
            "test_extra.py": ROOT / "tests_hidden" / "test_extra.py"}
# Appended to the stub attention.py: a tamper aimed at checks run in the notebook's kernel.
TAMPER_MODULE = '''

import sys

if "cases" in sys.modules:
    sys.modules["cases"].run_case = lambda *a, **k: None
'''
# A cell the tampering student adds to the notebook: every way the kernel could reach a grade.
TAMPER_CELL = '''import os
import subprocess
import sys

sys.path.insert(0, "tests")
import cases

cases.run_case = lambda *a, **k: None  # every public check passes
cases.score = lambda part: 100
os.environ["NBGRADER_EXECUTION"] = "validate"  # the graded cells would think they run for the student
os.environ["LAB03_KIT"] = "/nowhere"
subprocess.run = lambda *a, **k: None
open("attention.py", "w").write({reference!r})  # the reference, written over the graded file
'''


def nbgrader(course, *args):
    """Run an nbgrader command in `course`; nbgrader runs the `alembic` next to it, so PATH has BIN first."""
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def student_files(course):
    """{student: {name: text}}: the two files each student hands in (as the release's stubs, edited)."""
    stub = {name: (course / "release" / LAB / name).read_text(encoding="utf-8") for name in ("attention.py", "mha.py")}
    reference = {name: (ROOT / "solution" / name).read_text(encoding="utf-8") for name in stub}
    buggy = {name: (ROOT / "examples" / "submissions" / "mask_bug" / name).read_text(encoding="utf-8") for name in stub}
    return {"correct": reference, "buggy": buggy, "untouched": stub,
            "tamper": {**stub, "attention.py": stub["attention.py"] + TAMPER_MODULE}, "symlink": SYMLINKS}


def hand_in(folder, files):
    """Write `files` into `folder`: texts as files, paths as symlinks to them."""
    for name, content in files.items():
        (folder / name).unlink(missing_ok=True)
        if isinstance(content, Path):
            (folder / name).symlink_to(content)
        else:
            (folder / name).write_text(content, encoding="utf-8")


def submit(course, student, files):
    """submitted/<student>/lab03: the release, with `files` in place of the stubs."""
    import nbformat

    folder = course / "submitted" / student / LAB
    shutil.copytree(course / "release" / LAB, folder)
    hand_in(folder, files)
    if student == "tamper":
        nb = nbformat.read(folder / NOTEBOOK, as_version=4)
        reference = (ROOT / "solution" / "attention.py").read_text(encoding="utf-8")
        setup = next(i for i, cell in enumerate(nb.cells) if cell.get("id") == "setup")
        nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(TAMPER_CELL.format(reference=reference)))
        nbformat.write(nb, folder / NOTEBOOK)


def snapshot(folder):
    """{relative path: bytes} of every file under `folder`."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def gradebook_scores(course):
    """{student: (total, max, {part: score})}, read from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in STUDENTS:
            submission = gradebook.find_submission(LAB, student)
            parts = {grade.name: grade.score for notebook in submission.notebooks for grade in notebook.grades}
            scores[student] = (submission.score, submission.max_score, parts)
    return scores


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course after nbgrader's flow and a regeneration, and `make grade`'s results for the same files."""
    if not (BIN / "nbgrader").is_file():
        pytest.skip(f"the nbgrader command is not installed in {BIN}")
    base = tmp_path_factory.mktemp("nbgrader")
    course, _, _ = nbgrader_course.build(base / "course")
    nbgrader(course, "generate_assignment", LAB)
    files = student_files(course)
    for student in STUDENTS:
        submit(course, student, files[student])
        (base / "make-grade" / student).mkdir(parents=True)
        hand_in(base / "make-grade" / student, files[student])
    autograde = nbgrader(course, "autograde", LAB)
    feedback = nbgrader(course, "generate_feedback", LAB)
    nbgrader(course, "export")
    before = snapshot(course)
    nbgrader_course.build(course)
    after = snapshot(course)
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(base / "make-grade"), "--batch",
                           "--out", str(base / "reports"), "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"python -m autograder grade failed:\n{proc.stdout}\n{proc.stderr}"
    make_grade = {s: json.loads((base / "reports" / s / "results.json").read_text()) for s in STUDENTS}
    return {"course": course, "before": before, "after": after, "make_grade": make_grade,
            "logs": {"autograde": autograde.stdout + autograde.stderr, "feedback": feedback.stdout + feedback.stderr}}


def make_grade_parts(results):
    parts = {}
    for test in results["tests"]:
        parts[test["tags"][0]] = parts.get(test["tags"][0], 0.0) + test["score"]
    return parts


def test_nbgrader_totals_equal_make_grade_for_every_student(graded):
    scores = gradebook_scores(graded["course"])
    for student in STUDENTS:
        total, max_score, parts = scores[student]
        expected = graded["make_grade"][student]
        expected_total = (expected["score"], expected["extra_data"]["max_score"])
        assert (total, max_score) == expected_total, \
            f"{student}: nbgrader {total}/{max_score}, make grade {expected_total[0]}/{expected_total[1]}"
        assert parts == pytest.approx(make_grade_parts(expected)), f"{student}: by part, nbgrader {parts}"
    assert scores["correct"][0] == full_marks() and scores["untouched"][0] == 0, f"totals: {scores}"
    assert 0 < scores["buggy"][0] < core_max(), f"the buggy student should lose some points, not all: {scores['buggy']}"


def test_symlinks_to_the_solution_earn_nothing_and_reach_no_feedback(graded):
    """Issue 23, 7: links in submitted/ are graded as `make grade` grades them (refused), and nothing
    nbgrader copied through them stays in autograded/ or reaches feedback/."""
    course = graded["course"]
    assert gradebook_scores(course)["symlink"][0] == 0 == graded["make_grade"]["symlink"]["score"]
    kit_files = {path.read_bytes() for path in SYMLINKS.values()}
    for step in ("autograded", "feedback"):
        folder = course / step / "symlink" / LAB
        assert folder.is_dir(), f"nbgrader made no {step} folder for the symlink student"
        held = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_symlink() or (p.is_file() and (
            p.read_bytes() in kit_files))]
        assert not held, f"{step}/symlink/{LAB} holds the kit's files: {held}"
    assert "is a symlink: ignored" in graded["make_grade"]["symlink"]["output"]


def test_an_attention_bug_keeps_the_mha_points_as_in_make_grade(graded):
    _, _, parts = gradebook_scores(graded["course"])["buggy"]
    assert parts["masks"] < 12, f"the inverted masks should lose mask points: {parts}"
    assert parts["mha_forward"] == 23 and parts["heads"] == 10, f"the MHA parts should keep their points: {parts}"


def test_exported_grades_equal_make_grade(graded):
    import csv

    with open(graded["course"] / "grades.csv", newline="") as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    for student in STUDENTS:
        assert float(rows[student]["score"]) == graded["make_grade"][student]["score"], \
            f"grades.csv: {student} has {rows[student]['score']}"


def test_tampering_in_the_kernel_changes_nothing(graded):
    course = graded["course"]
    scores = gradebook_scores(course)
    assert scores["tamper"][0] == graded["make_grade"]["tamper"]["score"] == 0, f"tamper: {scores['tamper']}"
    # The tamper did run: the kernel wrote the reference over the student's attention.py, after grading.
    overwritten = (course / "autograded" / "tamper" / LAB / "attention.py").read_text(encoding="utf-8")
    assert overwritten == (ROOT / "solution" / "attention.py").read_text(encoding="utf-8"), \
        "the tampering cell did not run, so this test shows nothing"


def test_graded_cells_hold_the_graders_report_and_no_kernel_output(graded):
    import nbformat

    nb = nbformat.read(graded["course"] / "autograded" / "buggy" / LAB / NOTEBOOK, as_version=4)
    graded_cells = {c.metadata.nbgrader.grade_id: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert sorted(graded_cells) == sorted(nbgrader_course.part_points()), "one graded cell per part of make grade"
    masks = graded_cells["masks"]
    text = "".join(o.get("text", "") for o in masks.outputs)
    assert "Graded by the kit's sandboxed grader" in text and "FAILED" in text, f"masks cell output: {text}"
    assert "Likely bug" in text, "the grader's named-bug diagnosis should reach the feedback"
    assert max(len(line) for line in text.splitlines()) <= 100, "long report lines should be wrapped"


def test_demo_cells_are_not_run_at_autograde(graded):
    import nbformat

    nb = nbformat.read(graded["course"] / "autograded" / "correct" / LAB / NOTEBOOK, as_version=4)
    demos = [c for c in nb.cells if "skip-at-autograde" in c.metadata.get("tags", [])]
    assert demos, "the extra-credit demo cells should be tagged skip-at-autograde in solution/playground.ipynb"
    assert any("tiled_attention" in c.source for c in demos) and any(".step(" in c.source for c in demos)
    for cell in demos:
        assert all("not run at autograde" in o.get("text", "") for o in cell.outputs) and cell.outputs, \
            f"a demo cell ran at autograde: {cell.outputs}"


def code_lines(folder, pattern):
    return {line.strip() for path in folder.rglob(pattern) for line in path.read_text(encoding="utf-8").splitlines()}


def hidden_lines():
    """The distinctive lines of the hidden suite (not in the public files too): none may reach a student."""
    public = code_lines(ROOT / "assignment", "*.py")
    return {line for line in code_lines(ROOT / "tests_hidden", "*.py") if len(line) >= 30 and line not in public}


def test_feedback_shows_no_hidden_test_line_and_no_instructor_path(graded):
    course = graded["course"]
    lines = hidden_lines()
    for student in STUDENTS:
        page = (course / "feedback" / student / LAB / "playground.html").read_text(encoding="utf-8")
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        leaked = [line for line in lines if line in text]
        assert not leaked, f"{student}'s feedback shows hidden test lines: {leaked[:3]}"
        assert "HIDDEN TESTS" not in text, f"{student}'s feedback shows a hidden test cell"
        for path in (str(ROOT), str(course), "tests_hidden"):
            assert path not in text, f"{student}'s feedback shows {path}"


def test_nbgrader_warns_about_no_changed_cell_and_no_unknown_option(graded):
    logs = graded["logs"]
    assert "has changed!" not in logs["autograde"], \
        "nbgrader reports a changed cell (checksum) although no student edited a locked cell:\n" + "\n".join(
            line for line in logs["autograde"].splitlines() if "has changed!" in line)
    for command, log in logs.items():
        assert "not recognized" not in log, f"nbgrader {command} warns about the config:\n{log[-2000:]}"


def test_release_holds_neither_solutions_nor_the_grader(graded):
    course = graded["course"]
    release = snapshot(course / "release" / LAB)
    assert "attention.py" in release and "mha.py" in release
    hidden = hidden_lines()
    for name, data in release.items():
        text = data.decode("utf-8", errors="replace")
        for leak in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "scaled = scores", "GradeWithKit", str(ROOT)):
            assert leak not in text, f"release/{LAB}/{name} contains {leak!r}"
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"release/{LAB}/{name} holds lines of the hidden suite: {leaked[:3]}"
    for name in ("attention.py", "mha.py"):
        assert release[name] == (ROOT / "assignment" / name).read_bytes(), f"release/{LAB}/{name} is not the stub"
    assert not (course / "source" / LAB / nbgrader_course.GRADING_MODULE).exists()


def test_regenerating_a_graded_course_loses_nothing(graded):
    before, after = graded["before"], graded["after"]
    lost = sorted(set(before) - set(after))
    changed = sorted(name for name in before if name in after and before[name] != after[name])
    assert not lost, f"regenerating the course deleted {lost[:5]}"
    assert not changed, f"regenerating an up-to-date course changed {changed[:5]}"
    for kept in ("gradebook.db", "grades.csv", f"release/{LAB}/{NOTEBOOK}", f"feedback/correct/{LAB}/playground.html",
                 f"submitted/tamper/{LAB}/{NOTEBOOK}", f"autograded/buggy/{LAB}/{NOTEBOOK}"):
        assert kept in after, f"{kept} is missing after the regeneration"


# --- regenerating, without nbgrader -------------------------------------------------------------

def course_with_nbgrader_data(tmp_path):
    course, _, _ = nbgrader_course.build(tmp_path / "course")
    for name in ("gradebook.db", "grades.csv", f"submitted/s1/{LAB}/{NOTEBOOK}", f"autograded/s1/{LAB}/mha.py",
                 f"feedback/s1/{LAB}/playground.html", f"release/{LAB}/{NOTEBOOK}", "my_notes.txt",
                 f"source/{LAB}/my_extra_data.csv"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(f"{name}, the instructor's or nbgrader's")
    return course


def kit_changed(monkeypatch, name, text):
    """The kit now writes `text` to `name` (as a newer kit would)."""
    course_files = nbgrader_course.course_files
    monkeypatch.setattr(nbgrader_course, "course_files", lambda out: {**course_files(out), name: text.encode()})


def test_regenerating_rewrites_the_kits_files_and_nothing_else(tmp_path, monkeypatch):
    course = course_with_nbgrader_data(tmp_path)
    ours = snapshot(course)
    notebook = f"source/{LAB}/{NOTEBOOK}"
    kit_changed(monkeypatch, notebook, "a newer notebook")
    _, written, kept = nbgrader_course.build(course)
    assert written == [notebook] and not kept, f"written {written}, kept {kept}"
    after = snapshot(course)
    assert after[notebook] == b"a newer notebook"
    changed = sorted(name for name in ours if after.get(name) != ours[name])
    assert changed == sorted([notebook, nbgrader_course.MANIFEST]) and set(after) == set(ours), \
        f"only the notebook the kit changed (and the kit's record) should change: {changed}"


def test_an_edit_is_kept_when_the_kit_did_not_change_that_file(tmp_path):
    course = course_with_nbgrader_data(tmp_path)
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + 'c.CourseDirectory.course_id = "cs-101"\n')
    edited = config.read_bytes()
    _, written, kept = nbgrader_course.build(course)
    assert kept == ["nbgrader_config.py"] and not written, f"written {written}, kept {kept}"
    assert config.read_bytes() == edited, "the instructor's course_id was lost"


def test_an_edit_the_kit_would_overwrite_is_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    course = course_with_nbgrader_data(tmp_path)
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + 'c.CourseDirectory.course_id = "cs-101"\n')
    kit_changed(monkeypatch, "nbgrader_config.py", "# a newer config\n")
    kit_changed(monkeypatch, f"source/{LAB}/{NOTEBOOK}", "a newer notebook")
    ours = snapshot(course)
    assert nbgrader_course.main([str(course)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nbgrader_config.py" in err and "nothing was written" in err, err
    assert snapshot(course) == ours, "a refused regeneration changed the course"


def test_a_folder_that_is_not_a_course_is_refused(tmp_path, capsys):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("an instructor's own file")
    assert nbgrader_course.main([str(other)]) == 2
    assert "holds no course written by `make nbgrader-course`" in capsys.readouterr().err
    assert snapshot(other) == {"mine.txt": b"an instructor's own file"}


# --- the graded cells, without nbgrader -----------------------------------------------------------

def graded_cells(course):
    import nbformat

    nb = nbformat.read(course / "source" / LAB / NOTEBOOK, as_version=4)
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def test_graded_cells_are_worth_the_points_of_make_grade(tmp_path):
    course, _, _ = nbgrader_course.build(tmp_path / "course")
    points = {c.metadata.nbgrader.grade_id: c.metadata.nbgrader.points for c in graded_cells(course)}
    expected = {**nbgrader_course.part_points(), "extra": 0}
    assert points == expected and sum(points.values()) == core_max(), f"graded cells: {points}"


def test_graded_cells_run_the_public_checks_for_a_student_and_refuse_to_grade_in_the_kernel(tmp_path):
    course, _, _ = nbgrader_course.build(tmp_path / "course")
    lab = course / "source" / LAB
    for name in ("attention.py", "mha.py"):
        shutil.copy(ROOT / "solution" / name, lab / name)
    program = "\n".join(["import json, sys", "outcomes = []",
                         "for source in json.load(sys.stdin):",
                         "    try:", "        exec(source, {})", "    except Exception as exc:",
                         "        outcomes.append(str(exc))", "    else:", "        outcomes.append('ran')",
                         "print('OUTCOMES=' + json.dumps(outcomes))"])
    sources = json.dumps([c.source for c in graded_cells(course)])
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    student = subprocess.run([sys.executable, "-c", program], input=sources, cwd=lab, env=env,
                             capture_output=True, text=True, timeout=300)
    outcomes = json.loads(student.stdout.split("OUTCOMES=")[-1])
    assert outcomes == ["ran"] * len(outcomes), f"a graded cell failed for a student:\n{student.stdout}{student.stderr}"
    assert "passed" in student.stdout and "FAILED" not in student.stdout, student.stdout
    kernel = subprocess.run([sys.executable, "-c", program], input=sources, cwd=lab,
                            env={**env, "NBGRADER_EXECUTION": "autograde"}, capture_output=True, text=True, timeout=300)
    outcomes = json.loads(kernel.stdout.split("OUTCOMES=")[-1])
    assert outcomes == [nbgrader_course.NOT_GRADED] * len(outcomes), \
        f"at autograde without the kit's preprocessor, every graded cell must fail with one line: {outcomes}"


def test_autograde_without_the_kit_stops_with_one_line(tmp_path, monkeypatch):
    import nbformat

    from autograder.platforms import nbgrader_grading

    monkeypatch.delenv("LAB03_KIT", raising=False)
    grader = nbgrader_grading.GradeWithKit(kit=str(tmp_path / "moved-kit"))
    with pytest.raises(nbgrader_grading.KitError) as error:
        grader.preprocess(nbformat.v4.new_notebook(), {"metadata": {"path": str(tmp_path)}})
    message = str(error.value)
    assert "\n" not in message and "LAB03_KIT" in message and "no new grade was recorded" in message, message


def test_the_course_grading_module_is_the_kits(tmp_path):
    course, _, _ = nbgrader_course.build(tmp_path / "course")
    copy = (course / nbgrader_course.GRADING_MODULE).read_bytes()
    assert copy == (ROOT / "autograder" / "platforms" / "nbgrader_grading.py").read_bytes(), "the course's copy is stale"
    config = (course / "nbgrader_config.py").read_text()
    for setting in ("c.CourseDirectory.course_id = ", "c.Exchange.root = ", "c.Autograde.exclude_overwriting = "):
        assert setting in config, f"nbgrader_config.py lacks {setting}"
    assert "ClearHiddenTests" not in config, "there are no hidden tests in the notebook to clear"


def test_a_part_added_to_the_suite_gets_a_graded_cell_worth_its_points(monkeypatch):
    points = {**nbgrader_course.part_points(), "long_inputs": 4.0}
    monkeypatch.setattr(nbgrader_course, "part_points", lambda: points)
    assert "long_inputs" in nbgrader_course.graded_at_end()
    cell = nbgrader_course.graded_cell("long_inputs")
    assert cell.metadata["nbgrader"]["points"] == 4.0 and "no public checks" in cell.source


# --- through the exchange: submit, collect, autograde, generate_feedback (issue 32, 7) -------------

@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """A submission that went through nbgrader's exchange and whose inbound files were then swapped for
    links to the kit's solution and hidden tests (the inbound folder is the student's to write): the
    course's collect, autograde and generate_feedback, each nbgrader's real command."""
    import getpass

    if not (BIN / "nbgrader").is_file():
        pytest.skip(f"the nbgrader command is not installed in {BIN}")
    base = tmp_path_factory.mktemp("exchange")
    course, _, _ = nbgrader_course.build(base / "course")
    exchange = f"--Exchange.root={base / 'exchange'}"
    nbgrader(course, "generate_assignment", LAB)
    nbgrader(course, "release_assignment", LAB, exchange)
    home = base / "student"
    shutil.copytree(course / "release" / LAB, home / LAB)
    nbgrader(home, "submit", LAB, f"--course={nbgrader_course.COURSE_ID}", exchange)
    [inbound] = (base / "exchange" / nbgrader_course.COURSE_ID / "inbound").iterdir()
    hand_in(inbound, SYMLINKS)
    collect = nbgrader(course, "collect", LAB, exchange)
    student = getpass.getuser()
    nbgrader(course, "autograde", LAB)
    nbgrader(course, "generate_feedback", LAB)
    return {"course": course, "student": student, "collect": collect.stdout + collect.stderr}


def test_collect_copies_no_link_and_says_so_once_per_link(collected):
    submitted = collected["course"] / "submitted" / collected["student"] / LAB
    assert submitted.is_dir() and (submitted / NOTEBOOK).is_file(), "the submission's own files were not collected"
    assert not any(p.is_symlink() for p in submitted.rglob("*")), "a link was collected"
    assert not any(os.path.lexists(submitted / name) for name in SYMLINKS), sorted(submitted.iterdir())
    said = [line for line in collected["collect"].splitlines() if "is a symlink: not collected" in line]
    assert sorted(name for name in SYMLINKS if any(name in line for line in said)) == sorted(SYMLINKS), said
    assert len(said) == len(SYMLINKS), said


def test_a_linked_submission_is_graded_as_missing_those_files(collected):
    course, student = collected["course"], collected["student"]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(LAB, student).score == 0
    page = (course / "feedback" / student / LAB / "playground.html").read_text(encoding="utf-8")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())
    assert "upload attention.py and mha.py" in text, text[text.find("Graded by"):][:3000]  # both are missing


def test_no_file_of_the_kits_solution_or_hidden_tests_reaches_the_course(collected):
    course, student = collected["course"], collected["student"]
    kit_files = {path.read_bytes() for path in SYMLINKS.values()}
    lines = hidden_lines() | {line for line in code_lines(ROOT / "solution", "*.py") if len(line) >= 40}
    for step in ("submitted", "autograded", "feedback"):
        folder = course / step / student / LAB
        assert folder.is_dir(), f"nbgrader made no {step} folder"
        held = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.read_bytes() in kit_files]
        assert not held, f"{step}/ holds the kit's files: {held}"
    page = (course / "feedback" / student / LAB / "playground.html").read_text(encoding="utf-8")
    leaked = [line for line in lines if line in html.unescape(re.sub(r"<[^>]+>", "", page))]
    assert not leaked, f"the feedback shows the kit's lines: {leaked[:3]}"


# --- the course follows the lab (issue 35, 5) ------------------------------------------------------

def kit_env(kit):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LAB03_KIT", "NBGRADER_COURSE")}
    return {**env, "PATH": os.pathsep.join([str(BIN), env.get("PATH", "")]), "XDG_CACHE_HOME": str(kit / ".cache")}


def make_course(kit, *variables):
    """`make nbgrader-course` in the kit `kit`, as the instructor runs it."""
    return subprocess.run(["make", "--no-print-directory", "nbgrader-course", *variables], cwd=kit, env=kit_env(kit),
                          capture_output=True, text=True, timeout=900)


def course_command(kit, course):
    """What `make nbgrader-course` runs, without make's own error line: `python -m ...nbgrader_course COURSE`."""
    return subprocess.run([str(kit / ".venv" / "bin" / "python"), "-m", "autograder.platforms.nbgrader_course",
                           str(course)], cwd=kit, env=kit_env(kit), capture_output=True, text=True, timeout=900)


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path} no longer holds {old!r}: update this test and docs/reference/changing-the-lab.md's steps"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def submission_score(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(LAB, student)
        return submission.score, submission.max_score


@pytest.fixture(scope="module")
def points_changed(tmp_path_factory):
    """A kit copy's default course, with a student graded by nbgrader; then docs/reference/changing-the-lab.md's "Change a
    part's points" and `make nbgrader-course` alone, autograde again; then the whole kit folder moved."""
    if not (BIN / "nbgrader").is_file():
        pytest.skip(f"the nbgrader command is not installed in {BIN}")
    base = tmp_path_factory.mktemp("term")
    kit = copy_of_the_kit(base / "kit")
    first = make_course(kit)
    assert first.returncode == 0, f"make nbgrader-course failed:\n{first.stdout}\n{first.stderr}"
    course = kit / "course"
    student = course / "submitted" / "alice" / LAB
    shutil.copytree(course / "release" / LAB, student)
    hand_in(student, {name: (ROOT / "solution" / name).read_text(encoding="utf-8") for name in ("attention.py", "mha.py")})
    nbgrader(course, "autograde", LAB)
    before = submission_score(course, "alice")
    submitted = snapshot(course / "submitted")
    # "Change a part's points", step 1: the first test of tests_hidden/test_attention.py is worth one point more.
    module = kit / "tests_hidden" / "test_attention.py"
    module.write_text(re.sub(r"@pytest\.mark\.points\((\d+)\)", lambda m: f"@pytest.mark.points({int(m[1]) + 1})",
                             module.read_text(encoding="utf-8"), count=1), encoding="utf-8")
    again = make_course(kit)
    assert again.returncode == 0, f"make nbgrader-course after the change failed:\n{again.stdout}\n{again.stderr}"
    kept = submission_score(course, "alice"), snapshot(course / "submitted")
    autograde = subprocess.run([str(BIN / "nbgrader"), "autograde", LAB, "--force"], cwd=course, env=kit_env(kit),
                               capture_output=True, text=True, timeout=900)
    after = submission_score(course, "alice")
    moved = base / "moved" / "kit"
    moved.parent.mkdir()
    kit.rename(moved)
    nbgrader(moved / "course", "autograde", LAB, "--force")
    return {"kit": moved, "old_kit": kit, "before": before, "submitted": submitted, "kept": kept, "after": after,
            "autograde": autograde, "after_move": submission_score(moved / "course", "alice")}


def test_after_a_points_change_make_nbgrader_course_alone_lets_autograde_grade_the_new_points(points_changed):
    before, after, autograde = points_changed["before"], points_changed["after"], points_changed["autograde"]
    assert before == (full_marks(), core_max()), f"the reference scored {before} before the change"
    assert autograde.returncode == 0 and "LAB-03" not in autograde.stdout + autograde.stderr, \
        f"autograde refused the student after make nbgrader-course:\n{(autograde.stdout + autograde.stderr)[-3000:]}"
    assert after == (before[0] + 1, before[1] + 1), f"after one more point: {after}, before: {before}"


def test_regenerating_after_a_points_change_keeps_the_gradebook_and_the_submissions(points_changed):
    (score, max_score), submitted = points_changed["kept"]
    assert score == points_changed["before"][0], "the gradebook lost the student's grade"
    assert max_score == points_changed["before"][1] + 1, "the gradebook's maximum is not the new one"
    assert submitted == points_changed["submitted"], "make nbgrader-course changed submitted/"


def test_the_default_course_moves_with_the_kit(points_changed):
    assert points_changed["after_move"] == points_changed["after"], "autograde after moving the kit folder"


def test_parts_changed_after_students_submitted_are_refused_in_one_line_before_anything_is_written(points_changed):
    """nbgrader cannot add or remove graded cells once students have submitted: say so, and write nothing."""
    kit = points_changed["kit"]
    course = kit / "course"
    ours = snapshot(course)
    # "Rename a part", steps 1 and 2: gradients (a part graded at the end) becomes numerics.
    edit(kit / "tests_hidden" / "parts.py", '"gradients",', '"numerics",')
    edit(kit / "tests_hidden" / "parts.py", '"gradients":', '"numerics":')
    module = next(p for p in (kit / "tests_hidden").glob("test_*.py") if 'pytest.mark.part("gradients")' in p.read_text())
    edit(module, 'pytest.mark.part("gradients")', 'pytest.mark.part("numerics")')
    run = course_command(kit, course)
    assert run.returncode == 2, f"exit {run.returncode}:\n{run.stdout}\n{run.stderr}"
    assert len(run.stderr.strip().splitlines()) == 1 and "nothing was written" in run.stderr, run.stderr
    assert "numerics" in run.stderr and "gradients" in run.stderr and "submitted" in run.stderr, run.stderr
    assert snapshot(course) == ours, "a refused regeneration changed the course"


def test_the_default_course_holds_no_absolute_path_of_the_kit(points_changed):
    course, kit = points_changed["kit"] / "course", points_changed["old_kit"]
    written = json.loads((course / nbgrader_course.MANIFEST).read_text())["files"]
    released = [str(p.relative_to(course)) for p in (course / "release").rglob("*") if p.is_file()]
    assert written and released
    for name in [*written, *released]:
        text = (course / name).read_bytes().decode("utf-8", errors="replace")
        assert str(kit) not in text and str(kit.resolve()) not in text, f"{name} holds the kit's path {kit}"


def test_the_course_config_finds_the_kit_from_its_own_folder(tmp_path):
    from traitlets.config import Config

    course, _, _ = nbgrader_course.build(tmp_path / "somewhere" / "course")
    config = Config()
    path = course / "nbgrader_config.py"
    exec(compile(path.read_text(), str(path), "exec"), {"get_config": lambda: config, "__file__": str(path)})
    assert Path(config.GradeWithKit.kit).resolve() == ROOT.resolve(), config.GradeWithKit.kit


def test_the_default_course_folder_is_not_the_kits_build_output():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    default = re.search(r"^NBGRADER_COURSE\s*\?=\s*(\S+)", makefile, re.M).group(1)
    rebuildable = re.search(r"^REBUILDABLE\s*:=(.*)$", makefile, re.M).group(1).split()
    assert Path(default).parts[0] != "dist", f"the course's default folder {default} is in dist/, the kit's build output"
    assert not any(Path(default) == Path(r) or Path(r) in Path(default).parents for r in rebuildable), rebuildable


def renamed_course(tmp_path, *, public_checks=True):
    """docs/reference/changing-the-lab.md's "Rename a part" on a kit copy: mha_init (graded in place of an otter check)
    becomes construction; then the course is written. public_checks=False skips PUBLIC_CHECKS (step 1)."""
    kit = copy_of_the_kit(tmp_path / "kit")
    parts = kit / "tests_hidden" / "parts.py"
    edit(parts, '"mha_init",', '"construction",')
    edit(parts, '"mha_init":', '"construction":')
    if public_checks:
        edit(parts, '"mha_init": "part2_init"', '"construction": "part2_init"')
    edit(kit / "tests_hidden" / "test_mha_init.py", 'pytest.mark.part("mha_init")', 'pytest.mark.part("construction")')
    return kit, course_command(kit, tmp_path / "course")


def test_a_renamed_part_is_graded_in_place_of_its_public_check(tmp_path):
    import nbformat

    _, run = renamed_course(tmp_path)
    assert run.returncode == 0, f"make nbgrader-course after renaming a part:\n{run.stdout}\n{run.stderr}"
    nb = nbformat.read(tmp_path / "course" / "source" / LAB / NOTEBOOK, as_version=4)
    graded = [c.metadata.nbgrader.grade_id for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert "construction" in graded and "mha_init" not in graded, graded
    assert graded.index("construction") < graded.index("heads"), f"construction left its place: {graded}"
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "construction")
    assert 'score("part2_init")' in cell.source, cell.source


def test_a_part_renamed_everywhere_but_in_public_checks_is_named_in_one_line(tmp_path):
    _, run = renamed_course(tmp_path, public_checks=False)
    assert run.returncode == 2, f"exit {run.returncode}:\n{run.stdout}\n{run.stderr}"
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "tests_hidden/parts.py" in run.stderr and "PUBLIC_CHECKS" in run.stderr and "'mha_init'" in run.stderr, run.stderr
    assert not (tmp_path / "course").exists(), "a refused course was written"


def test_a_removed_part_as_documented_leaves_a_course_without_its_cell(tmp_path):
    import nbformat

    kit = copy_of_the_kit(tmp_path / "kit")
    parts = kit / "tests_hidden" / "parts.py"
    (kit / "tests_hidden" / "test_heads.py").unlink()  # "Remove a part", steps 1 and 2
    edit(parts, '"heads", ', "")
    edit(parts, '"heads": "Head split/merge", ', "")
    edit(parts, '"heads": "part2_heads",', "")
    run = course_command(kit, tmp_path / "course")
    assert run.returncode == 0, f"make nbgrader-course after removing a part:\n{run.stdout}\n{run.stderr}"
    nb = nbformat.read(tmp_path / "course" / "source" / LAB / NOTEBOOK, as_version=4)
    graded = [c.metadata.nbgrader.grade_id for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert "heads" not in graded and len(graded) == len(set(graded)), graded
