"""Fingerprints of everything that decides a grade, so that a finished report is reused only when all of it is unchanged.

A grade is decided by the submission's files and by the grader: the hidden suite, the reference
(the expected values), the settings (grading.yaml as loaded, the isolation level) and the engine
(the kit's code, tolerances and the from-scratch rule included, the pinned packages, Python's
and torch's versions). Each part has its own digest, so that a stale report can say which part
changed. Standard library only: the batch computes these before it grades anything.
"""
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import stat
import sys

from autograder.paths import KIT_ROOT

REFERENCE_DIR = os.path.join(KIT_ROOT, "solution")
REFERENCE_FILES = ("attention.py", "mha.py")
# The kit's code that runs while grading, as (folder, file endings); the lock pins what it imports.
ENGINE_SOURCES = (("autograder", (".py",)), (os.path.join("autograder", "platforms", "gradescope_files"), ("",)))
ENGINE_FILES = (os.path.join("requirements", "grade.lock"),)  # the rule is in autograder/ (submit.py is made from it)
# A submission larger than this is graded every time rather than read whole to fingerprint it.
MAX_SUBMISSION_BYTES = 512 << 20
MAX_SUBMISSION_FILES = 10_000

# Why a report is regraded, by the part of the fingerprint that changed (in this order of precedence).
CHANGED = {
    "submission": "the submission's files changed",
    "suite": "the hidden suite changed",
    "reference": "the reference solution changed",
    "settings": "the settings changed (grading.yaml or the isolation level)",
    "engine": "the grader changed (the kit's code, its tolerances or its packages)",
}


def grader_parts(config, level, tests_dir):
    """{part: digest} for the grader's side of a grade: suite, reference, settings, engine."""
    # only the settings that decide a local report: not Gradescope's own options, nor the late policy
    # (applied after grading, by reports.lateness); changing those regrades nothing
    graded_by = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                 if f.metadata.get("grades", True)}
    settings = {"config": graded_by, "level": level}
    runtime = {"python": sys.version, "torch": _version("torch")}
    return {
        "suite": _folder_digest(tests_dir, endings=("",)),
        "reference": _files_digest(REFERENCE_DIR, REFERENCE_FILES),
        "settings": _text_digest(json.dumps(settings, sort_keys=True)),
        "engine": _text_digest(json.dumps([*(_folder_digest(os.path.join(KIT_ROOT, folder), endings)
                                             for folder, endings in ENGINE_SOURCES),
                                           _files_digest(KIT_ROOT, ENGINE_FILES), runtime])),
    }


def grader_key(parts):
    """One digest of the grader's parts: the key of the reference's verdict."""
    return _text_digest(json.dumps(parts, sort_keys=True))


def of_submission(parts, path):
    """The whole fingerprint of grading the submission at ``path`` with the grader ``parts``."""
    return {"submission": submission_digest(path), **parts}


def stale_because(results, fingerprint):
    """Why the finished ``results`` (a results dict, or None) cannot stand for ``fingerprint``; None if they can."""
    if results is None:
        return "not graded yet"
    if fingerprint["submission"] is None:
        return "the submission is too large to fingerprint, so it is graded every time"
    if results["extra_data"].get("grader_error"):
        return "the grader failed on it last time"
    old = results["extra_data"].get("fingerprint")
    if not isinstance(old, dict):
        return "graded by an earlier version of the kit, which kept no fingerprint"
    for part, reason in CHANGED.items():
        if old.get(part) != fingerprint[part]:
            return reason
    return None


def submission_digest(path):
    """Digest of every file of a submission (a folder or a file), or None when it is too large to read."""
    if not os.path.isdir(path):
        try:
            if os.path.getsize(path) > MAX_SUBMISSION_BYTES:
                return None
        except OSError:
            return _text_digest("missing")
        return _files_digest(os.path.dirname(path), [os.path.basename(path)])
    return _folder_digest(path, endings=("",), limits=(MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES))


def _folder_digest(folder, endings, recurse=True, limits=None):
    """Digest of the files below ``folder`` whose names end with one of ``endings`` (relative paths and
    bytes; a symlink by its target, never followed). None when ``limits`` = (bytes, files) are passed."""
    names = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__") if recurse else []
        names += [os.path.relpath(os.path.join(here, f), folder) for f in files if f.endswith(endings)]
        if limits and len(names) > limits[1]:
            return None
    return _files_digest(folder, sorted(names), max_bytes=limits[0] if limits else None)


def _files_digest(folder, names, max_bytes=None):
    digest, budget = hashlib.sha256(), [max_bytes]
    try:
        for name in names:
            digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
            _feed(os.path.join(folder, name), digest, budget)
    except _TooLarge:
        return None
    return digest.hexdigest()


class _TooLarge(Exception):
    pass


def _feed(path, digest, budget):
    """Feed a regular file's bytes to ``digest``, spending ``budget[0]`` bytes (None: no bound); anything
    else is fed by its kind: a symlink is never followed, a fifo or device never opened (nothing blocks)."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.readlink(path).encode("utf-8", "surrogateescape") + b"\0")
            return
        if not stat.S_ISREG(info.st_mode):
            digest.update(f"not a file {stat.S_IFMT(info.st_mode)}\0".encode())
            return
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:  # gone or unreadable: that state is part of the digest
        digest.update(f"unreadable {err.errno}\0".encode())
        return
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(1 << 20):
            if budget[0] is not None:
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise _TooLarge
            digest.update(chunk)
    digest.update(b"\0")


def _text_digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
