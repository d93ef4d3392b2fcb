"""nbgrader's autograde, scored by the kit's sandboxed grader (copied into the course as lab03_grading.py).

`make nbgrader-course` copies this file next to the course's ``nbgrader_config.py``, which puts
its two preprocessors in ``Autograde.autograde_preprocessors``:

* ``GradeWithKit`` (in place of nbgrader's ``Execute``) first runs the kit's grader,
  ``python -m autograder grade`` in a subprocess: the same sandbox, limits, hidden suite and
  trusted comparison as ``make grade``, on the student's attention.py and mha.py as submitted
  (``submitted/``, through the same staging, which refuses symlinks: nbgrader's copy in
  ``autograded/`` follows them), before any of the student's code has run. What nbgrader copied
  through a symlink is replaced in ``autograded/`` by a one-line note, so neither the kernel nor
  ``feedback/`` gets a file the link pointed at (the kit's solution, its hidden tests). Then it executes the notebook as nbgrader does, except
  the graded cells (their score is the grader's) and the cells tagged ``skip-at-autograde``
  (timing demos). Last, each graded cell's output becomes the grader's report for its part, with
  the part's points as the cell's partial credit. No tampering with the grading from the notebook's
  kernel (modules, environment, the submitted files) changes a score: the kernel starts after the
  grading, and its outputs in the graded cells are replaced. (It still runs as the user running
  autograde, unsandboxed, as in every nbgrader course: see the kit's docs/platforms.md.)
* ``SaveKitGrades`` is nbgrader's ``SaveAutoGrades``, and records the extra-credit points of the cells of
  the extra-credit parts (``GradeWithKit.extra_parts``, which the course's config takes from the lab's
  EXTRA_PARTS; each cell is worth 0 points) as their extra credit, so the total is ``make grade``'s.

This module runs inside nbgrader's own process, which may be any nbgrader installation: it imports
nothing from the kit, only nbgrader and the standard library, and finds the kit from its config
(``GradeWithKit.kit``) or the environment variable ``LAB03_KIT``.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import textwrap

from nbformat.notebooknode import NotebookNode
from traitlets import List, Unicode

from nbgrader import utils
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.preprocessors import Execute, SaveAutoGrades

SKIP_TAG = "skip-at-autograde"
WIDTH = 100  # feedback pages clip long lines: wrap the report
GRADER_SECONDS = 900  # far above the grader's own limits (grading.yaml): only a stuck grader gets here
RESULTS = "lab03_kit"  # the key of the grader's scores in nbgrader's resources
EXTRA = "lab03_kit_extra"  # the key of the extra-credit parts there (GradeWithKit.extra_parts)


class KitError(Exception):
    """The kit's grader could not score this submission; the message is one line for the instructor."""


class GradeWithKit(Execute):
    """nbgrader's Execute, with the graded cells scored by the kit's grader instead of the kernel."""

    kit = Unicode("", help="The kit's folder on this machine (the environment variable LAB03_KIT overrides it)."
                  ).tag(config=True)
    python = Unicode("", help="The Python that runs the kit's grader (default: the kit's .venv/bin/python)."
                     ).tag(config=True)
    extra_parts = List(Unicode(), help="The parts whose cells score extra credit (each worth 0 points: extra credit "
                       "goes above the maximum, as in `make grade`); the course's config lists the lab's.").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        # Before the kernel starts: the files graded are the student's, untouched by their notebook.
        try:
            self.kit_and_python()  # first: without the kit, nothing else matters
            submitted = self.submitted_folder(resources)
            replace_copies_of_symlinks(submitted, resources["metadata"]["path"])
            results = self.run_grader(submitted)
        except KitError as error:  # one line above nbgrader's traceback, which says the same at its end
            self.log.error("LAB-03: %s", error)
            raise
        parts, extra = part_scores(results), set(self.extra_parts)
        check_points(nb, parts, extra)
        nb, resources = super().preprocess(nb, resources, km)
        graded = graded_cells(nb)
        for cell in graded:  # the first one also says what the grader noticed about the submission as a whole
            part = cell.metadata["nbgrader"]["grade_id"]
            cell.outputs = report_outputs(part, results, parts, cell is graded[0], extra=part in extra)
        resources[RESULTS] = {part: got for part, (got, _) in parts.items()}
        resources[EXTRA] = sorted(extra)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and (utils.is_grade(cell) or SKIP_TAG in cell.metadata.get("tags", [])):
            cell.outputs = []
            if not utils.is_grade(cell):
                cell.outputs = [stream("(not run at autograde: a timing demo, whose numbers mean nothing on a busy "
                                       "grading machine)\n")]
            return cell, resources
        return super().preprocess_cell(cell, resources, index)

    def submitted_folder(self, resources):
        """submitted/<student>/<assignment>: what the student handed in, before nbgrader's copy followed
        any link in it."""
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(parent=self)
        student, assignment = resources["nbgrader"]["student"], resources["nbgrader"]["assignment"]
        folder = coursedir.format_path(coursedir.submitted_directory, student, assignment)
        if os.path.islink(folder) or not os.path.isdir(folder):
            raise KitError(f"{folder} is a symlink or not a folder: not graded; no new grade was recorded")
        return folder

    def kit_and_python(self):
        kit = os.environ.get("LAB03_KIT") or self.kit
        python = self.python or os.path.join(kit, ".venv", "bin", "python")
        if not kit or not os.path.isfile(os.path.join(kit, "autograder", "__main__.py")):
            raise KitError(f"the kit is not at {kit or '(unset)'}: set LAB03_KIT to the kit's "
                           "folder or GradeWithKit.kit in nbgrader_config.py; no new grade was recorded")
        if not os.access(python, os.X_OK):
            raise KitError(f"no Python at {python} to run the kit's grader: run `make venv` in the kit or set "
                           "GradeWithKit.python in nbgrader_config.py; no new grade was recorded")
        return kit, python

    def run_grader(self, folder):
        """results.json of `python -m autograder grade FOLDER --single`, as `make grade` writes it."""
        kit, python = self.kit_and_python()
        with tempfile.TemporaryDirectory(prefix="lab03-kit-") as out:
            try:
                proc = subprocess.run([python, "-m", "autograder", "grade", os.path.abspath(folder), "--single",
                                       "--out", out, "--jobs", "1"], cwd=kit, capture_output=True, text=True,
                                      timeout=GRADER_SECONDS)
            except subprocess.TimeoutExpired:
                raise KitError(f"the kit's grader took more than {GRADER_SECONDS} s on {folder}; no new grade "
                               "was recorded, autograde again to retry") from None
            reports = [os.path.join(out, name, "results.json") for name in sorted(os.listdir(out))
                       if os.path.isfile(os.path.join(out, name, "results.json"))]
            if proc.returncode != 0 or len(reports) != 1:
                last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
                raise KitError(f"the kit's grader failed on {folder} (exit code {proc.returncode}): {last}; "
                               "no new grade was recorded, autograde again to retry")
            with open(reports[0], encoding="utf-8") as f:
                results = json.load(f)
        if results["extra_data"].get("grader_error"):
            raise KitError(f"the kit's grader failed on part of {folder}; no new grade was recorded, autograde again "
                           "to retry")
        return results


class SaveKitGrades(SaveAutoGrades):
    """nbgrader's SaveAutoGrades; an extra-credit part's points become its cell's extra credit (the cell is worth 0)."""

    def _add_score(self, cell, resources):
        super()._add_score(cell, resources)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if grade_id in resources.get(EXTRA, ()):
            grade = self.gradebook.find_grade(grade_id, self.notebook_id, self.assignment_id, self.student_id)
            grade.extra_credit = resources[RESULTS][grade_id]
            self.gradebook.db.commit()


class CollectWithoutLinks(ExchangeCollect):
    """nbgrader's collect, copying each inbound submission without following a link (``ExchangeFactory.collect``).

    nbgrader's own copy follows links as the instructor: a student who replaced a file of their inbound
    folder by a link to the kit's solution or hidden tests would have them copied into ``submitted/``,
    graded, and shown in ``feedback/``. Here every entry is looked at with lstat and opened with
    O_NOFOLLOW: a link is left out (the submission is graded without that file) with one line in the
    log, and a submission folder that is itself a link is not collected."""

    def do_copy(self, src, dest, log=None):
        if os.path.islink(src) or not os.path.isdir(src):
            self.log.error("LAB-03: %s is a symlink or not a folder: not collected", src)
            return
        ignore = utils.ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                       max_file_size=self.coursedir.max_file_size, log=self.log)
        copy_without_links(src, dest, ignore, self.log)


def copy_without_links(src, dest, ignore, log):
    """Copy the folder ``src`` to ``dest`` (new), leaving out every link, each with one logged line."""
    os.mkdir(dest)
    entries = sorted(os.scandir(src), key=lambda e: e.name)
    ignored = set(ignore(src, [e.name for e in entries]))
    for entry in entries:
        if entry.name in ignored:
            continue
        target = os.path.join(dest, entry.name)
        if entry.is_symlink():
            log.warning("LAB-03: %s is a symlink: not collected, the submission is graded without it", entry.path)
        elif entry.is_dir(follow_symlinks=False):
            copy_without_links(entry.path, target, ignore, log)
        elif entry.is_file(follow_symlinks=False):
            _copy_file_nofollow(entry.path, target)


def _copy_file_nofollow(src, dest):
    """One regular file; a link swapped in since the listing is refused by the kernel (O_NOFOLLOW), not followed."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # gone, or a link by now
    with open(fd, "rb") as source:
        if stat.S_ISREG(os.fstat(source.fileno()).st_mode):  # not a FIFO or a device put there since
            with open(dest, "xb") as copy:
                shutil.copyfileobj(source, copy)


def replace_copies_of_symlinks(submitted, autograded):
    """In nbgrader's copy (``autograded``), replace every file it made by following a symlink in
    ``submitted`` with a one-line note: the kit grades no link, and the kernel and the feedback must not
    see its target (the notebook still finds a file of that name, and says nothing of the course's paths)."""
    for folder, dirs, files in os.walk(submitted):  # never into a linked folder (nbgrader does not either)
        for name in dirs + files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                continue
            copy = os.path.join(autograded, os.path.relpath(path, submitted))
            if os.path.isdir(copy) and not os.path.islink(copy):
                shutil.rmtree(copy)
            elif os.path.lexists(copy):
                os.unlink(copy)
            if name in files:
                with open(copy, "x", encoding="utf-8") as f:
                    f.write(f"# {name} was handed in as a symlink: it is not graded, and its target is not shown\n")


def part_scores(results):
    """{part: (points earned, points possible)} of a results.json, as the kit's reports add them up."""
    parts = {}
    for test in results["tests"]:
        got, total = parts.get(test["tags"][0], (0.0, 0.0))
        parts[test["tags"][0]] = (got + test["score"], total + test["max_score"])
    return parts


def graded_cells(nb):
    """The notebook's graded cells that nbgrader knows (it drops the grade_id of any other)."""
    return [cell for cell in nb.cells if utils.is_grade(cell) and cell.metadata["nbgrader"].get("grade_id")]


def check_points(nb, parts, extra=()):
    """Each graded cell is worth what the grader gives its part (extra credit: 0), or nothing is scored."""
    for cell in graded_cells(nb):
        part = cell.metadata["nbgrader"]["grade_id"]
        if part not in parts:
            raise KitError(f"the kit's grader has no part {part!r}: regenerate the course with "
                           "`make nbgrader-course`; no new grade was recorded")
        expected = 0.0 if part in extra else parts[part][1]
        if float(cell.metadata["nbgrader"]["points"]) != expected:
            raise KitError(f"the kit's grader gives part {part!r} {expected:g} points, its cell "
                           f"{cell.metadata['nbgrader']['points']}: regenerate the course with "
                           "`make nbgrader-course`; no new grade was recorded")


def report_outputs(part, results, parts, overview=False, extra=False):
    """The graded cell's new outputs: the grader's report for the part, then its score (partial credit)."""
    got, total = parts[part]
    tests = [t for t in results["tests"] if t["tags"][0] == part]
    passed = sum(1 for t in tests if t["status"] == "passed")
    if extra:
        head = (f"Extra credit: {got:g} of {total:g} points, counted above the {results['extra_data']['max_score']:g} "
                "(this cell's extra credit).")
        score = 0
    else:
        head = f"{got:g} / {total:g} points."
        score = got
    lines = [f"{head} Graded by the kit's sandboxed grader, as `make grade` grades: {passed} of {len(tests)} "
             "tests passed."]
    for test in tests:
        if test["status"] == "failed":
            lines += ["", f"FAILED {test['name']} (0 / {test['max_score']:g})"]
            lines += ["    " + line for line in unfenced(test["output"]).splitlines()]
        elif test["output"]:
            lines += ["", f"note: {test['name']}: {unfenced(test['output'])}"]
    notices = [line for line in results["output"].splitlines() if line.startswith("- ")]  # problems, events
    if overview and notices:
        lines += ["", "About the submission as a whole:", *notices]
    text = "\n".join(wrapped(line) for line in lines) + "\n"
    return [stream(text), NotebookNode(output_type="execute_result", execution_count=None, metadata={},
                                       data={"text/plain": f"{score:g}"})]


def stream(text):
    return NotebookNode(output_type="stream", name="stdout", text=text)


def unfenced(text):
    return re.sub(r"^```\n?|\n?```$", "", text.strip())


def wrapped(line):
    """A line longer than WIDTH wrapped at spaces, keeping its indent; text heatmaps are narrower and stay."""
    if len(line) <= WIDTH:
        return line
    indent = line[:len(line) - len(line.lstrip())]
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=indent + "  ", break_long_words=False,
                                   break_on_hyphens=False)) or line
