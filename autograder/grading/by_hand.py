"""Grading by hand: ``pytest tests_hidden --submission PATH`` starts its own sandbox here.

The batch grader (``runner``) hands the hidden suite a ready sandbox; run by hand, the suite's
``student`` fixture (``plugin``) asks this module for one, with the same level choice and the
same limits.
"""
import contextlib
import os
import shutil
import tempfile

from autograder.containment import isolation, sandbox
from autograder.config import Limits, load_config
from autograder.grading.stage import stage
from autograder.grading.student import Student
from autograder.containment.zygote import Zygote


@contextlib.contextmanager
def standalone_student(path):
    """A sandbox for grading by hand with ``pytest tests_hidden --submission PATH``, with grading.yaml's
    limits, as ``make grade`` has."""
    if not os.path.exists(path):
        raise SystemExit(f"--submission: no such file or folder: {path}")
    limits = Limits.of(load_config())
    level = isolation.choose_level()
    layers = isolation.detect_layers(level)
    if "landlock-fs" in layers:  # the kit is checked by the zygote
        isolation.refuse_inside_grants([os.path.abspath(path)])
    zygote = Zygote(level, layers=layers)
    sandbox.warm_up()
    scratch = tempfile.mkdtemp(prefix="ag-sub-")
    os.chmod(scratch, 0o711)
    student = None
    try:
        staged = stage(os.path.abspath(path), os.path.join(scratch, "files"))
        student = Student(zygote, staged, limits)
        yield student, staged
    finally:
        if student is not None:
            student.close()
        zygote.stop()
        shutil.rmtree(scratch, ignore_errors=True)
