"""Write an nbgrader course folder for the lab, for instructors who grade on JupyterHub.

    python -m autograder.platforms.nbgrader_course OUT      # or: make nbgrader-course [NBGRADER_COURSE=OUT]

OUT gets ``nbgrader_config.py``, ``lab03_grading.py`` (the preprocessors that grade with the kit,
a copy of autograder/platforms/nbgrader_grading.py) and ``source/lab03/``: the playground notebook with
nbgrader cell metadata, the student stubs (never the reference), the public tests and the lab
text. The notebook has one graded cell per part of `make grade`, worth that part's points; at
autograde the kit's sandboxed grader scores them (see nbgrader_grading.py), and when a student runs
the notebook they run the part's public checks. The Colab and otter cells are dropped.

Then it runs ``nbgrader generate_assignment lab03 --force`` in OUT, so that release/lab03 (the
exercise's solution removed) and the gradebook's points follow the lab: after a change to points or
tests, `make nbgrader-course` alone makes autograde grade with the new points. nbgrader keeps
gradebook.db and the submissions; it cannot add or remove a graded cell (a part) once students have
submitted, and the command then refuses in one line, before writing anything.

Regenerating an existing course writes only these files (and nbgrader's release). Everything else in
OUT (gradebook.db, submitted/, autograded/, feedback/, grades.csv, your own files) is never touched.
OUT/.nbgrader-course-kit.json records what the kit wrote: a file changed since then is kept as you
changed it when the kit's version is the same, and otherwise the command refuses (one line, nothing
written) so that an edit is never overwritten. The course names the kit by its path relative to OUT
(the default OUT, course/ in the kit, moves with the kit); LAB03_KIT overrides it. Then, from OUT:

    nbgrader autograde lab03               # grades submitted/<student>/lab03/
"""
import argparse
import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

from autograder.files import write_atomic
from autograder.parts import LAB_NAME
from autograder.platforms.generate import ROOT

ASSIGNMENT = "lab03"
NOTEBOOK = "playground.ipynb"
STUDENT_FILES = ("attention.py", "mha.py")
GRADING_MODULE = "lab03_grading.py"  # next to nbgrader_config.py; never under source/, so never released
MANIFEST = ".nbgrader-course-kit.json"
COURSE_ID = "attention-from-scratch"
# Taken from assignment/ as they are: stubs, public tests, scanner, lab text. Not the otter
# checks: nbgrader grades with its own cells, so the course does not need otter-grader.
SKIP = ("checks", NOTEBOOK, "__pycache__", ".pytest_cache", ".OTTER_LOG", "*.pyc", "submission.zip")
MARKER = f"# nbgrader configuration for {LAB_NAME}, written by `make nbgrader-course`."

# Where each part's graded cell goes: in place of the otter check that runs its public cases (the
# lab's table, PUBLIC_CHECKS in tests_hidden/parts.py), or, for a part without one, at the end, where
# `grader.check_all()` was. An otter check of no graded part (a part removed) is dropped.
def public_checks():
    """{part: its otter check} for the parts of the suite, from the lab's PUBLIC_CHECKS (CourseError if it
    names a part the suite does not grade: one line saying what to edit)."""
    from autograder.parts import PUBLIC_CHECKS

    points = part_points()
    for part in PUBLIC_CHECKS:
        if part not in points:
            raise CourseError(f"tests_hidden/parts.py: PUBLIC_CHECKS names part {part!r}, which no module of "
                              "tests_hidden/ grades: rename or remove it in PUBLIC_CHECKS too (nothing was written)")
    return dict(PUBLIC_CHECKS)


def graded_at_end():
    """The parts whose graded cells come at the end: every part of the suite without a public check."""
    return tuple(part for part in part_points() if part not in public_checks())


def is_extra(part):
    """Extra credit (EXTRA_PARTS of the lab's table): its cell is worth 0, its points go above the maximum."""
    from autograder.parts import EXTRA_PARTS

    return part in EXTRA_PARTS


CONFIG = f'''{MARKER}
# Regenerating the course rewrites this file unless you changed it; if the kit's version changed
# too, `make nbgrader-course` stops and says so, and you merge your settings by hand.
import os
import sys

c = get_config()  # noqa: F821 (nbgrader provides get_config when it loads this file)

# The exchange (release_assignment, fetch_assignment, submit, collect, release_feedback and
# fetch_feedback) needs both. course_id: your course's name, the same for you and the students
# (a student's nbgrader finds it in the exchange, or in their own nbgrader_config.py). Exchange.root:
# a folder every user of the hub can read and write; nbgrader's default, created once by root with
#   mkdir -p /srv/nbgrader/exchange && chmod ugo+rw /srv/nbgrader/exchange
c.CourseDirectory.course_id = "{COURSE_ID}"
c.Exchange.root = "/srv/nbgrader/exchange"

# Students edit attention.py and mha.py next to the notebook. By default autograde copies every
# file of source/{ASSIGNMENT}/ over the submission, which would grade the stubs instead.
c.Autograde.exclude_overwriting = {{"{ASSIGNMENT}": {list(STUDENT_FILES)!r}}}

# Seconds per cell: the first cell imports torch, and a busy hub is slow (nbgrader's default is 30).
c.Execute.timeout = 300

# Grading: the graded cells are scored by the kit's sandboxed grader (`python -m autograder grade`,
# as `make grade`), run on the student's attention.py and mha.py before their notebook runs; nbgrader
# then runs the notebook for the feedback, without the graded cells and the timing demos. The two
# preprocessors are in {GRADING_MODULE}, next to this file. The kit is found relative to this
# folder (a course inside the kit moves with it), or in the environment variable LAB03_KIT (which
# wins); autograde stops with one line if it is not there.
here = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, here)
# collect copies each inbound submission without following links (nbgrader's own copy follows them, as
# you: a link to the kit's solution would be collected, graded and shown in the feedback).
c.ExchangeFactory.collect = "lab03_grading.CollectWithoutLinks"
c.GradeWithKit.kit = os.path.normpath(os.path.join(here, @KIT@))  # the kit, from this folder
c.GradeWithKit.python = @PYTHON@  # empty: the kit's .venv/bin/python
c.GradeWithKit.extra_parts = @EXTRA@  # the lab's EXTRA_PARTS: their cells score extra credit
c.Autograde.autograde_preprocessors = [
    "lab03_grading.GradeWithKit",  # nbgrader's Execute, with the kit's grader scoring the graded cells
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "lab03_grading.SaveKitGrades",  # nbgrader's SaveAutoGrades, plus the extra credit
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
'''

# What every graded cell raises when it runs in the kernel at autograde (tests check the two agree).
NOT_GRADED = (f"{LAB_NAME}: the kit's grader did not score this cell; autograde in the course folder written by "
              "`make nbgrader-course`, whose nbgrader_config.py runs it")
# Shown to students: the cell's code is in the release (only its output is replaced at autograde).
GRADED_CELL = '''# Graded: {title} ({points}).
# At autograde the kit's sandboxed grader (the same as `make grade`) runs the hidden tests on
# your attention.py and mha.py, and its report for this part replaces this cell's output.
# {now}
import os

if os.environ.get("NBGRADER_EXECUTION") == "autograde":  # only without the course's nbgrader_config.py
    raise RuntimeError(
        "{lab}: the kit's grader did not score this cell; autograde in the course folder written by "
        "`make nbgrader-course`, whose nbgrader_config.py runs it"
    )
{body}'''
NOW = {
    "public": "Run it now for the public checks of the part (as `python -m pytest tests`).",
    "rule": "Run it now to check your files as `python submit.py` does.",
    "none": "This part has no public checks.",
}
PUBLIC_BODY = '''import sys

sys.path.insert(0, "tests")
from cases import score

score("{public}")'''
RULES_BODY = '''from pathlib import Path

from submit import check_source  # raises SubmitError if a file uses a forbidden torch built-in

for name in ("attention.py", "mha.py"):
    check_source(Path("."), name)
print("attention.py and mha.py use no forbidden built-in (the grader also watches while they run)")'''
NO_PUBLIC_BODY = '''print(
    "{first}"
    "{second}"
)'''
OTHER_PART_TEXT = ("Graded by hidden tests that have no public checks; ", "the grader's report appears here.")
GRADED_INTRO = '''## Graded at autograde: {titles}

The cells below stand for the parts of the grade that no earlier cell checks. Like every graded
cell, nbgrader's autograde scores them with the kit's grader and shows its report in their output.'''


def part_points():
    """{part: points} of the hidden suite, in the lab's order, read from its markers (nothing runs)."""
    from autograder.grading.suite_points import part_points as suite_part_points

    return suite_part_points()


def nbgrader_metadata(grade_id, *, grade, solution, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": grade, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def graded_cell(part):
    """The graded cell of one part of `make grade`, worth its points (extra credit: 0, see nbgrader_grading)."""
    import nbformat

    from autograder.grading.suite_points import core_max
    from autograder.parts import NOTEBOOK_TEXTS, PART_TITLES, RULE_PARTS

    points = 0 if is_extra(part) else part_points()[part]
    worth = f"up to {part_points()[part]:g} points above the {core_max():g}" if is_extra(part) else f"{points:g} points"
    public = public_checks()
    if part in public:
        now, body = NOW["public"], PUBLIC_BODY.format(public=public[part])
    elif part in RULE_PARTS:
        now, body = NOW["rule"], RULES_BODY
    else:
        first, second = NOTEBOOK_TEXTS.get(part, OTHER_PART_TEXT)
        now, body = NOW["none"], NO_PUBLIC_BODY.format(first=first, second=second)
    source = GRADED_CELL.format(lab=LAB_NAME, title=PART_TITLES.get(part, part), points=worth, now=now, body=body)
    cell = nbformat.v4.new_code_cell(source, id=f"graded-{part.replace('_', '-')}")
    cell.metadata["nbgrader"] = nbgrader_metadata(part, grade=True, solution=False, points=points)
    return cell


def course_notebook(nb):
    """The playground for nbgrader: otter checks become graded cells, Colab and otter set-up go."""
    import nbformat

    from autograder.parts import PART_TITLES

    in_place = {f'grader.check("{check}")': part for part, check in public_checks().items()}  # {cell source: part}
    checks = {cell.source.strip() for cell in nb.cells if "otter" in cell.metadata.get("tags", [])}
    for part, check in public_checks().items():
        if f'grader.check("{check}")' not in checks:
            raise CourseError(f"tests_hidden/parts.py: PUBLIC_CHECKS gives part {part!r} the otter check {check!r}, "
                              "which solution/playground.ipynb does not run: name one it runs, or remove the part "
                              "from PUBLIC_CHECKS (nothing was written)")
    cells = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "colab" in tags:
            continue
        if "otter" in tags:
            source = cell.source.strip()
            if source in in_place:
                cells.append(graded_cell(in_place[source]))
            if source == "grader.check_all()":
                titles = "; ".join(PART_TITLES.get(part, part) for part in graded_at_end())
                cells.append(nbformat.v4.new_markdown_cell(GRADED_INTRO.format(titles=titles), id="graded-intro"))
                cells += [graded_cell(part) for part in graded_at_end()]
            continue
        if "### BEGIN SOLUTION" in cell.source:
            cell.metadata["nbgrader"] = nbgrader_metadata(cell.id, grade=False, solution=True)
        cells.append(cell)
    nb.cells = cells
    graded = [c.metadata["nbgrader"]["grade_id"] for c in cells if c.metadata.get("nbgrader", {}).get("grade")]
    if sorted(graded) != sorted(part_points()):
        raise ValueError(f"the course notebook grades {graded}, the hidden suite {list(part_points())}: "
                         "solution/playground.ipynb lost an otter check cell")
    return nb


def config_text(out):
    """The course's nbgrader_config.py: it names the kit relative to ``out``, never by its absolute path."""
    python = sys.executable
    own_venv = Path(python).parent == ROOT / ".venv" / "bin"
    kit = os.path.relpath(ROOT.resolve(), Path(out).resolve())
    extra = [part for part in part_points() if is_extra(part)]
    return (CONFIG.replace("@KIT@", repr(kit)).replace("@PYTHON@", repr("" if own_venv else python))
            .replace("@EXTRA@", repr(extra)))


def course_files(out):
    """{path in the course: bytes} of everything the kit writes into the course folder ``out``."""
    import nbformat

    files = {"nbgrader_config.py": config_text(out).encode(),
             GRADING_MODULE: (ROOT / "autograder" / "platforms" / "nbgrader_grading.py").read_bytes()}
    assignment = ROOT / "assignment"
    for path in sorted(assignment.rglob("*")):
        relative = path.relative_to(assignment)
        if path.is_file() and not any(part_matches(p) for p in relative.parts):
            files[f"source/{ASSIGNMENT}/{relative.as_posix()}"] = path.read_bytes()  # the stubs, never the reference
    nb = course_notebook(nbformat.read(ROOT / "solution" / NOTEBOOK, as_version=4))
    nbformat.validate(nb)
    files[f"source/{ASSIGNMENT}/{NOTEBOOK}"] = (nbformat.writes(nb) + "\n").encode()
    return files


def part_matches(name):
    import fnmatch

    return any(fnmatch.fnmatch(name, pattern) for pattern in SKIP)


class CourseError(Exception):
    """The course folder cannot be written without losing something; the message is one line."""


def digest(data):
    return hashlib.sha256(data).hexdigest()


def plan(out, files):
    """What regenerating ``out`` does: (paths to write, edited paths kept, stale kit paths to remove).

    A path is written when it is missing, or unchanged since the kit last wrote it; an edited path
    is kept when the kit's version has not changed since; otherwise CourseError, before anything
    is written.
    """
    manifest_path = out / MANIFEST
    written = {}
    if manifest_path.is_file():
        try:
            written = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
        except (ValueError, KeyError, TypeError):
            raise CourseError(f"{manifest_path} is damaged, so the kit cannot tell your edits from its own files: "
                              "restore it, or regenerate into an empty folder") from None
    elif out.exists() and any(out.iterdir()):
        config = out / "nbgrader_config.py"
        if not (config.is_file() and config.read_text(encoding="utf-8").startswith(MARKER)):
            raise CourseError(f"{out} is not empty and holds no course written by `make nbgrader-course`: "
                              "choose another folder")
    to_write, kept, conflicts = [], [], []
    for name, data in files.items():
        path = out / name
        if not path.is_file():
            to_write.append(name)
            continue
        current = digest(path.read_bytes())
        if current == digest(data):
            continue
        if written.get(name) == current:  # the kit's own earlier version
            to_write.append(name)
        elif written.get(name) == digest(data):  # your edit of a file the kit writes as before
            kept.append(name)
        else:
            conflicts.append(name)
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise CourseError(f"{out / conflicts[0]}{more} differs from what `make nbgrader-course` wrote there, and the "
                          "kit now writes it differently: move it away to regenerate it (nothing was written)")
    stale = [name for name, sha in written.items()
             if name not in files and (out / name).is_file() and digest((out / name).read_bytes()) == sha]
    return to_write, kept, stale


def submitted_cells(out):
    """The graded cells' names in ``out``'s gradebook when students have submitted the assignment, else None."""
    import sqlite3

    db = out / "gradebook.db"
    if not db.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as con:
            submissions = con.execute("SELECT count(*) FROM submitted_assignment JOIN assignment ON "
                                      "submitted_assignment.assignment_id = assignment.id WHERE assignment.name = ?",
                                      (ASSIGNMENT,)).fetchone()[0]
            cells = {name for (name,) in con.execute(
                "SELECT base_cell.name FROM grade_cells JOIN base_cell ON grade_cells.id = base_cell.id JOIN notebook "
                "ON base_cell.notebook_id = notebook.id JOIN assignment ON notebook.assignment_id = assignment.id "
                "WHERE assignment.name = ?", (ASSIGNMENT,))}
    except sqlite3.Error:  # not nbgrader's gradebook (yet): nbgrader says what is wrong with it
        return None
    return cells if submissions else None


def check_gradebook(out, files):
    """CourseError if nbgrader could not follow the new notebook: its graded cells (one per part) changed
    after students submitted, which nbgrader's generate_assignment refuses."""
    old = submitted_cells(out)
    if old is None:
        return
    try:
        cells = json.loads(files[f"source/{ASSIGNMENT}/{NOTEBOOK}"])["cells"]
    except (ValueError, KeyError, TypeError):
        return
    new = {c["metadata"]["nbgrader"]["grade_id"] for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")}
    if new != old:
        changed = ", ".join([f"+{part}" for part in sorted(new - old)] + [f"-{part}" for part in sorted(old - new)])
        raise CourseError(f"the parts changed ({changed}) but students have submitted {ASSIGNMENT} in {out}, and nbgrader "
                          "cannot add or remove graded cells then: keep the parts for this course, or write a new "
                          "course with NBGRADER_COURSE=DIR (nothing was written)")


def build(out):
    """Write or update the course in ``out``; return (out, paths written, edited paths kept)."""
    out = Path(out)
    files = course_files(out)
    to_write, kept, stale = plan(out, files)
    check_gradebook(out, files)
    for name in to_write:
        write_atomic(out / name, files[name], mode=0o644, folder_mode=0o777)
    for name in stale:
        (out / name).unlink()
    manifest = {"written_by": f"make nbgrader-course (the {LAB_NAME} kit); do not edit",
                "files": {name: digest(data) for name, data in files.items()}}
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n", mode=0o644, folder_mode=0o777)
    return out, to_write, kept


def release(out):
    """``nbgrader generate_assignment lab03 --force`` in ``out``: release/lab03 and the gradebook's cells
    (their points) follow source/lab03, so that autograde grades with the points the kit grades with.

    nbgrader keeps gradebook.db, submitted/, autograded/ and feedback/. It refuses to add or remove a
    graded cell once students have submitted, which ``build`` refuses first (``check_gradebook``);
    any other failure of nbgrader is a CourseError (one line).
    """
    import subprocess

    bin_dir = Path(sys.executable).parent  # nbgrader runs `alembic` from its own folder
    env = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force"],
                          cwd=out, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        log = proc.stdout + proc.stderr
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        raise CourseError(f"source/{ASSIGNMENT} is written but `nbgrader generate_assignment {ASSIGNMENT} --force` "
                          f"failed in {out} (autograde would refuse every student until it runs): "
                          f"{lines[-1] if lines else 'no output'}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.platforms.nbgrader_course", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the course folder to write or update")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"error: {args.out} is not a folder", file=sys.stderr)
        return 2
    from autograder.grading.batch import verify_suite
    from autograder.config import ConfigError, load_config
    from autograder.grading.reference_check import SuiteBroken

    try:  # a suite the reference fails would charge every student of the course
        verify_suite(load_config())
    except ConfigError as err:
        print(f"error: {err}; nothing was written", file=sys.stderr)
        return 2
    except SuiteBroken as err:
        print(f"error: {err.message('nothing was written')}", file=sys.stderr)
        return 3
    try:
        first = not (Path(args.out) / "release" / ASSIGNMENT).is_dir()
        out, written, kept = build(args.out)
        release(out)  # every time: a release or gradebook left stale by an earlier kit is brought up to date too
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"nbgrader course in {out}: {len(written)} files written, nbgrader's own files untouched")
    for name in kept:
        print(f"  kept your edit of {name} (the kit's version has not changed)")
    if first:
        print(f"release/{ASSIGNMENT} written (`nbgrader generate_assignment {ASSIGNMENT} --force`); "
              f"next: cd {out}, then `nbgrader release_assignment {ASSIGNMENT}` or hand out release/{ASSIGNMENT}")
    else:
        print(f"release/{ASSIGNMENT} and the gradebook's points regenerated (`nbgrader generate_assignment {ASSIGNMENT} "
              "--force`), gradebook.db and submissions kept; from the course folder, `nbgrader autograde "
              f"{ASSIGNMENT} --force` regrades what was graded before, and `nbgrader release_assignment {ASSIGNMENT} "
              "--force` re-releases through the exchange")
    return 0


if __name__ == "__main__":
    sys.exit(main())
