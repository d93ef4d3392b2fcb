"""Build Gradescope's autograder zip, and the lock its image installs from: on the instructor's machine.

``python -m autograder.platforms.gradescope build`` and ``lock`` (``make gradescope``, ``make lock``) call
this module; what runs inside Gradescope's container is ``gradescope``.
"""
import io
import json
import os
import re
import sys
import zipfile

from autograder.config import GRADER_MARGIN_MB
from autograder.files import write_atomic
from autograder.paths import HIDDEN_TESTS, KIT_ROOT

FILES_DIR = os.path.join(KIT_ROOT, "autograder", "platforms", "gradescope_files")
# What the grader imports inside Gradescope, and what a student's files may import beside the standard
# library (the rule's MODULES, autograder/rule/tables.py); requirements/gradescope.lock pins them and all they need.
RUNTIME_ROOTS = ("torch", "numpy", "einops", "jaxtyping", "pytest", "PyYAML")
RUNTIME_LOCK = os.path.join(KIT_ROOT, "requirements", "gradescope.lock")
PACKED = {  # folder -> what of it goes into the zip (and every .py of the engine: engine_folders)
    "tests_hidden": "*.py",
    "solution": ("attention.py", "mha.py"),
}


# Gradescope's default memory per autograder container (its autograder troubleshooting page; the
# assignment's Autograder Settings may raise it).
GRADESCOPE_MEMORY_MB = 768


def memory_warning(config, container_mb=GRADESCOPE_MEMORY_MB):
    """One line when grading.yaml's limits.memory_mb cannot fit in Gradescope's default container beside
    the margin the grader keeps for itself, or None. Grading still works there: each child gets what
    the container has left (student.py), and its report says so."""
    needed = config.memory_mb + GRADER_MARGIN_MB
    if needed <= container_mb:
        return None
    return (f"warning: limits.memory_mb is {config.memory_mb} MiB, more than Gradescope's default {container_mb} MiB "
            f"container can give a child beside the grader's {GRADER_MARGIN_MB} MiB margin: raise the assignment's "
            f"memory in Gradescope's Autograder Settings to at least {needed} MiB plus what the grader itself holds "
            "(make bench's memory row), or lower memory_mb")


# Gradescope's default autograder timeout (its autograder settings page; at most 40 minutes there).
GRADESCOPE_TIMEOUT_MINUTES = 10


# The zip's record of the total it was built for, at its root: what `make gradescope` and `make validate`
# compare with the suite's total now, to say when the figure entered on Gradescope must change.
TOTAL_RECORD = "gradescope_total.json"
BUILT_ZIP = os.path.join(KIT_ROOT, "dist", "autograder.zip")


def suite_total(tests_dir=None):
    """The total to enter on Gradescope: the hidden suite's core points (extra credit goes above it)."""
    from autograder.grading.suite_points import core_max

    return core_max(tests_dir or HIDDEN_TESTS)


def built_total(zip_path=BUILT_ZIP):
    """The total the zip at ``zip_path`` was built for, or None (no zip, or one built before the record)."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            return float(json.loads(archive.read(TOTAL_RECORD))["total_points"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def total_change(before, now, zip_path=BUILT_ZIP):
    """One line when the total to enter on Gradescope is not the one ``zip_path`` was built for, else None."""
    if before is None or before == now:
        return None
    where = os.path.relpath(zip_path, KIT_ROOT) if zip_path.startswith(KIT_ROOT) else zip_path
    return (f"the total to enter on Gradescope changed: {where} was built for {before:g} points, the suite now makes "
            f"{now:g}: enter {now:g} as the assignment's total on Gradescope (after uploading a zip of this suite)")


def upload_notes(config, tests_dir=None):
    """What to enter and check on Gradescope for this lab, as lines: the total read from the hidden suite's
    points (never a figure written down, which a points change would make stale) and the settings."""
    import math

    from autograder.grading.batch import SUPERVISOR_MARGIN
    from autograder.grading.suite_points import core_max, extra_max

    tests_dir = tests_dir or HIDDEN_TESTS
    core, extra = core_max(tests_dir), extra_max(tests_dir)
    minutes = math.ceil((config.submission_seconds + SUPERVISOR_MARGIN) / 60) + 1  # + the grader's start
    above = f"; extra credit ({extra:g} points) is scored above it" if extra else ""
    return [
        f"total to enter on Gradescope: {core:g} points (the hidden suite's core points{above})",
        "settings to check under Autograder Settings:",
        "  base image: Ubuntu 22.04",
        f"  memory: at least {config.memory_mb + GRADER_MARGIN_MB} MiB (limits.memory_mb + the grader's "
        f"{GRADER_MARGIN_MB} MiB; the default is {GRADESCOPE_MEMORY_MB} MiB)",
        f"  timeout: at least {minutes} minutes (limits.submission_seconds + {SUPERVISOR_MARGIN:g} s; "
        f"the default is {GRADESCOPE_TIMEOUT_MINUTES})",
        *gradescope_policy_notes(config),
    ]


# When Gradescope shows a test of each visibility (grading.yaml's visibility section), for the notes.
SHOWN_WHEN = {"visible": "at once", "after_due_date": "after the due date", "after_published":
              "once you publish the grades", "hidden": "never"}


def gradescope_policy_notes(config):
    """What grading.yaml assumes of the assignment's own settings on Gradescope: its due date (which
    decides when ``after_due_date`` tests show), its late policy (Gradescope's: grading.yaml's ``late:``
    is ``make grade``'s), and the daily limit (counted by the grader: nothing to set there)."""
    visibilities = (config.public_visibility, config.hidden_visibility)
    lines = ["settings to check on the assignment's own page:",
             f"  due date{': set it; ' if 'after_due_date' in visibilities else ': '}public tests are shown "
             f"{SHOWN_WHEN[config.public_visibility]}, the others {SHOWN_WHEN[config.hidden_visibility]} "
             "(grading.yaml's visibility, sent with each result)"]
    if config.late_due:
        cutoff = f", cut-off after {config.late_cutoff_days:g} days" if config.late_cutoff_days else ""
        lines.append(f"  late submissions: Gradescope's own policy; set it to match grading.yaml's (due "
                     f"{config.late_due}, {config.late_percent_per_day:g}% a day{cutoff}), "
                     "which only `make grade` applies")
    else:
        lines.append("  late submissions: Gradescope's own policy (grading.yaml sets none for `make grade`)")
    limit = config.daily_submission_limit
    lines.append(f"  daily limit: {limit} graded submissions per student per 24 h, counted by the autograder itself "
                 "(gradescope.daily_submission_limit)" if limit else
                 "  daily limit: none (gradescope.daily_submission_limit is 0)")
    return lines


def build(out_path):
    """Write the autograder zip; returns its size in bytes. Says in one line (stderr) when grading.yaml's
    memory does not fit Gradescope's default container."""
    from autograder.config import load_config

    warning = memory_warning(load_config())
    if warning:
        print(warning, file=sys.stderr)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("setup.sh", "run_autograder"):
            _add(archive, os.path.join(FILES_DIR, name), name, executable=True)
        _add(archive, RUNTIME_LOCK, "requirements-gradescope.txt")
        _add(archive, os.path.join(KIT_ROOT, "grading.yaml"), "grading.yaml")
        archive.writestr(_info(TOTAL_RECORD), json.dumps({"total_points": suite_total()}) + "\n")
        for folder, pattern in {**dict.fromkeys(engine_folders(), "*.py"), **PACKED}.items():
            for name in _files(folder, pattern):
                _add(archive, os.path.join(KIT_ROOT, folder, name), f"{folder}/{name}")
    write_atomic(out_path, buffer.getvalue(), mode=0o644, folder_mode=0o755)
    return os.path.getsize(out_path)


def engine_folders():
    """The engine's package and its group packages (each sub-folder with an ``__init__.py``)."""
    root = os.path.join(KIT_ROOT, "autograder")
    return ["autograder"] + sorted(f"autograder/{name}" for name in os.listdir(root)
                                   if os.path.isfile(os.path.join(root, name, "__init__.py")))


def _files(folder, pattern):
    if isinstance(pattern, tuple):
        return pattern
    return sorted(n for n in os.listdir(os.path.join(KIT_ROOT, folder)) if n.endswith(".py"))


def _info(name, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # fixed: the same sources give the same zip
    info.external_attr = (0o755 if executable else 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _add(archive, path, name, executable=False):
    with open(path, "rb") as f:
        archive.writestr(_info(name, executable), f.read())


def runtime_lock_text():
    """requirements/gradescope.lock as ``make lock`` writes it: every package the grader needs at run time
    (``RUNTIME_ROOTS`` and, recursively, what they require on this platform), pinned as in grade.lock."""
    pins = _grade_pins()
    names = sorted(_runtime_closure(RUNTIME_ROOTS), key=str.lower)
    missing = [n for n in names if _canonical(n) not in pins]
    if missing:
        raise SystemExit(f"requirements/grade.lock has no pin for {', '.join(missing)}")
    header = ("# The Gradescope image's runtime packages, pinned as in grade.lock; 'make lock' rewrites this file.\n"
              "# setup.sh installs torch from PyTorch's CPU index first; its 2.13.0+cpu satisfies the torch pin.\n")
    return header + "".join(pins[_canonical(n)] + "\n" for n in names)


def _grade_pins():
    pins = {}
    with open(os.path.join(KIT_ROOT, "requirements", "grade.lock")) as f:
        for line in f:
            name, sep, version = line.strip().partition("==")
            if sep and not name.startswith("#"):
                pins[_canonical(name)] = f"{name}=={version}"
    return pins


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_closure(roots):
    """Names of the installed distributions ``roots`` need, following requirements whose markers hold here."""
    import importlib.metadata

    from packaging.requirements import Requirement

    seen, todo = {}, list(roots)
    while todo:
        name = todo.pop()
        if _canonical(name) in seen:
            continue
        dist = importlib.metadata.distribution(name)
        seen[_canonical(name)] = dist.metadata["Name"]
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(seen.values())
