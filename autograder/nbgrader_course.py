"""Write an nbgrader course folder for LAB-03, for instructors who grade on JupyterHub.

    python -m autograder.nbgrader_course OUT      # or: make nbgrader-course [NBGRADER_COURSE=OUT]

OUT gets an ``nbgrader_config.py`` and ``source/lab03/``: the playground notebook with
nbgrader cell metadata, the student stubs (never the reference), the public tests and the lab
text. In the notebook the otter-grader cells become nbgrader "autograder tests" cells, one
per part, that run the public cases of the part on the student's own attention.py and mha.py
and give their points as partial credit. The two parts that compute attention have a hidden
test too: the from-scratch rule on their file (0 points for the part if it is broken).
The Colab cells are dropped. Then, from OUT:

    nbgrader generate_assignment lab03     # release/lab03: solutions and hidden tests removed
    nbgrader autograde lab03               # grades submitted/<student>/lab03/
"""
import argparse
import re
import shutil
import sys
from pathlib import Path

from autograder.generate import ROOT, public_cases

ASSIGNMENT = "lab03"
NOTEBOOK = "playground.ipynb"
STUDENT_FILES = ("attention.py", "mha.py")
# Taken from assignment/ as they are: stubs, public tests, scanner, lab text. Not the otter
# checks: nbgrader grades with its own cells, so the course does not need otter-grader.
SKIP = shutil.ignore_patterns("checks", NOTEBOOK, "__pycache__", ".pytest_cache", ".OTTER_LOG", "*.pyc")
MARKER = "# nbgrader configuration for LAB-03, written by `make nbgrader-course`."

CONFIG = f'''{MARKER}
c = get_config()  # noqa: F821 (nbgrader provides get_config when it loads this file)

# Students edit attention.py and mha.py next to the notebook. By default autograde copies every
# file of source/{ASSIGNMENT}/ over the submission, which would grade the stubs instead.
c.Autograde.exclude_overwriting = {{"{ASSIGNMENT}": {list(STUDENT_FILES)!r}}}

# Seconds per cell: the first cell imports torch, and a busy hub is slow (nbgrader's default is 30).
c.Execute.timeout = 300

# Feedback is made from the autograded notebook, where autograde put the hidden tests back:
# remove them again. A hidden test that failed still shows its error and traceback.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
'''

TEST_CELL = '''# Autograded by nbgrader: {title}, {points} points.
# It runs the public cases of this part on your files (like `python -m pytest tests`)
# and gives their points. Run it to see how you are doing.
import sys

sys.path.insert(0, "tests")
from cases import score
{hidden}
score("{part}")'''

# The parts that compute attention also get a hidden test: the from-scratch rule on their file.
HIDDEN_RULE = {"part1_attention": "attention.py", "part2_forward": "mha.py"}
RULE_TEST = '''
### BEGIN HIDDEN TESTS
from pathlib import Path

from submit import check_source  # the from-scratch rule, as submit.py and the grader apply it

check_source(Path("."), "{file}")  # raises SubmitError if the file uses a forbidden torch built-in
### END HIDDEN TESTS'''

CHECK_CALL = re.compile(r'^grader\.check\("(\w+)"\)$')


def nbgrader_metadata(grade_id, *, grade, solution, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": grade, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def grade_cell(part, cell_id):
    """The autograded cell of one part, worth the points of its public cases."""
    import nbformat

    cases, titles = public_cases()
    points = sum(p for _, case_part, p in cases if case_part == part)
    hidden = RULE_TEST.format(file=HIDDEN_RULE[part]) if part in HIDDEN_RULE else ""
    source = TEST_CELL.format(title=titles[part], points=points, hidden=hidden, part=part)
    cell = nbformat.v4.new_code_cell(source, id=cell_id)
    cell.metadata["nbgrader"] = nbgrader_metadata(part, grade=True, solution=False, points=points)
    return cell


def course_notebook(nb):
    """The playground for nbgrader: otter check cells become test cells, Colab and otter set-up go."""
    cells = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "colab" in tags:
            continue
        if "otter" in tags:
            check = CHECK_CALL.match(cell.source.strip())
            if check:
                cells.append(grade_cell(check[1], cell.id.replace("check-", "test-")))
            continue
        if "### BEGIN SOLUTION" in cell.source:
            cell.metadata["nbgrader"] = nbgrader_metadata(cell.id, grade=False, solution=True)
        cells.append(cell)
    nb.cells = cells
    return nb


def build(out):
    """Write the course folder to ``out`` (replacing an earlier export there); return its path."""
    import nbformat

    out = Path(out)
    config = out / "nbgrader_config.py"
    if out.exists() and any(out.iterdir()):
        if not (config.is_file() and config.read_text(encoding="utf-8").startswith(MARKER)):
            raise ValueError(f"{out} is not empty and holds no earlier course export: choose another folder")
        shutil.rmtree(out)
    source = out / "source" / ASSIGNMENT
    shutil.copytree(ROOT / "assignment", source, ignore=SKIP)  # the stubs students get, never the reference
    nb = course_notebook(nbformat.read(ROOT / "solution" / NOTEBOOK, as_version=4))
    nbformat.validate(nb)
    nbformat.write(nb, source / NOTEBOOK)
    config.write_text(CONFIG, encoding="utf-8")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.nbgrader_course", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the course folder to write")
    args = parser.parse_args(argv)
    try:
        out = build(args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the nbgrader course to {out}: cd there, then `nbgrader generate_assignment {ASSIGNMENT}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
