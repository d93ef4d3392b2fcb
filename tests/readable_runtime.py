"""A Python runtime that a sandbox uid can read, for grading at the uid level on this machine.

The uid level runs student code as an unprivileged uid, which must be able to read the Python
runtime (``isolation.uid_level_problem``). Where the kit's own interpreter lives in a private
home (pyenv under /root, as on the kit's CI machines), the tests build a venv from the system's
Python in a world-readable cache instead, with the packages the grader needs pinned as in
grade.lock. It is built once per lock (about a minute) and reused.
"""
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT

CACHE = Path("/var/cache/attention-kit")
SYSTEM_PYTHON = "/usr/bin/python3.11"
# What `python -m autograder grade` imports: the Gradescope runtime, the console table and the pictures.
EXTRA = ("rich", "matplotlib")


def readable_python():
    """(path of a python the sandbox uid can read, None) or (None, why not)."""
    if os.getuid() != 0:
        return None, "the uid level needs root"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return None, f"no {SYSTEM_PYTHON} to build a world-readable venv from (Debian: python3.11-venv)"
    locks = [ROOT / "requirements" / "gradescope.lock", ROOT / "requirements" / "grade.lock"]
    key = hashlib.sha256(b"".join(p.read_bytes() for p in locks)).hexdigest()[:12]
    venv = CACHE / f"uid-venv-{key}"
    if not (venv / ".complete").exists():
        _build(venv, locks)
    return str(venv / "bin" / "python"), None


def _build(venv, locks):
    CACHE.mkdir(parents=True, exist_ok=True)
    CACHE.chmod(0o755)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(locks[0]),
                    "-c", str(locks[1]), *EXTRA], check=True, capture_output=True, timeout=1200)
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    (venv / ".complete").touch()
