"""`make nbgrader-course`: a course folder that nbgrader itself releases and grades.

One smoke run (nbgrader starts slowly): write the course, `nbgrader generate_assignment`, then
one `nbgrader autograde` of three submissions made from the release (the reference files, the
untouched stubs, and the reference with torch's built-in attention), then one
`nbgrader generate_feedback`.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import nbgrader_course
from autograder.generate import public_cases

pytest.importorskip("nbgrader", reason="nbgrader is not installed (requirements/kit.lock has it)")

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LAB = nbgrader_course.ASSIGNMENT
TOTAL = sum(points for _, _, points in public_cases()[0])
# The reference's attention with torch's built-in: right values, but against the rules.
BUILTIN = '''

def scaled_dot_product_attention(query, key, value, mask=None):
    import torch.nn.functional as F
    allowed = None if mask is None else mask.bool()
    eye = torch.eye(key.size(-2), dtype=query.dtype).expand(*key.shape[:-2], -1, -1)
    return (F.scaled_dot_product_attention(query, key, value, attn_mask=allowed),
            F.scaled_dot_product_attention(query, key, eye, attn_mask=allowed))
'''


def nbgrader(course, *args):
    """Run an nbgrader command in `course`; nbgrader runs the `alembic` next to it, so PATH has BIN first."""
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def submit(course, student, files):
    """submitted/<student>/lab03: the release, with `files` ({name: text}) in place of the stubs."""
    folder = course / "submitted" / student / LAB
    shutil.copytree(course / "release" / LAB, folder)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    if not (BIN / "nbgrader").is_file():
        pytest.skip(f"the nbgrader command is not installed in {BIN}")
    course = nbgrader_course.build(tmp_path_factory.mktemp("course") / "course")
    nbgrader(course, "generate_assignment", LAB)
    reference = {name: (ROOT / "solution" / name).read_text(encoding="utf-8") for name in ("attention.py", "mha.py")}
    submit(course, "reference", reference)
    submit(course, "stubs", {})
    submit(course, "builtin", {**reference, "attention.py": reference["attention.py"] + BUILTIN})
    nbgrader(course, "autograde", LAB)
    nbgrader(course, "generate_feedback", LAB)
    return course


def scores(course, student):
    """{grade cell: score} and the total of one student's autograded submission."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(LAB, student)
        cells = {grade.name: grade.score for notebook in submission.notebooks for grade in notebook.grades}
        return cells, submission.score, submission.max_score


def test_course_holds_the_stubs_never_the_reference(course):
    source = course / "source" / LAB
    for name in ("attention.py", "mha.py"):
        assert (source / name).read_bytes() == (ROOT / "assignment" / name).read_bytes(), \
            f"source/{LAB}/{name} is not the student stub"
    assert not (source / "checks").exists(), "the course should not need otter-grader's checks"


def test_release_notebook_keeps_neither_solutions_nor_hidden_tests(course):
    text = (course / "release" / LAB / nbgrader_course.NOTEBOOK).read_text(encoding="utf-8")
    for leak in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "check_source", "scaled = scores"):
        assert leak not in text, f"the release notebook contains {leak!r}"


def test_reference_submission_gets_full_marks(course):
    cells, total, max_score = scores(course, "reference")
    assert max_score == TOTAL and total == TOTAL, f"reference: {total}/{max_score}, by cell {cells}"


def test_stub_submission_gets_zero(course):
    cells, total, max_score = scores(course, "stubs")
    assert max_score == TOTAL and total == 0, f"stubs: {total}/{max_score}, by cell {cells}"


def test_autograde_keeps_the_students_files(course):
    graded = course / "autograded" / "reference" / LAB
    for name in ("attention.py", "mha.py"):
        assert (graded / name).read_bytes() == (ROOT / "solution" / name).read_bytes(), \
            f"autograde replaced the student's {name} (exclude_overwriting in nbgrader_config.py)"


def test_hidden_test_takes_the_part_of_a_forbidden_builtin(course):
    cells, total, _ = scores(course, "builtin")
    assert cells["part1_attention"] == 0, f"attention with torch's built-in kept its points: {cells}"
    others = {cell: score for cell, score in cells.items() if cell != "part1_attention"}
    assert all(score > 0 for score in others.values()), f"the other parts should keep their points: {cells}"


def test_feedback_leaves_out_the_hidden_tests(course):
    graded = (course / "autograded" / "reference" / LAB / nbgrader_course.NOTEBOOK).read_text(encoding="utf-8")
    feedback = (course / "feedback" / "reference" / LAB / "playground.html").read_text(encoding="utf-8")
    assert "check_source" in graded, "autograde should have put the hidden tests back (else this test shows nothing)"
    assert "check_source" not in feedback and "HIDDEN TESTS" not in feedback, "the feedback shows the hidden tests"


def test_export_replaces_an_earlier_export_but_no_other_folder(tmp_path):
    out = nbgrader_course.build(tmp_path / "course")
    (out / "leftover.txt").write_text("from the earlier export")
    nbgrader_course.build(out)
    assert not (out / "leftover.txt").exists(), "an earlier export should be replaced, not merged"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("an instructor's own file")
    with pytest.raises(ValueError, match="holds no earlier course export"):
        nbgrader_course.build(other)
    assert (other / "mine.txt").exists()
