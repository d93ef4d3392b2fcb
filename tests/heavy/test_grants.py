"""The uid level refuses to grade what a sandboxed child could read (issue 32).

Under Landlock a child reads the Python folders (``grants.granted_folders``): the standard library
and the venv's site-packages. A kit, a submission, a batch or an output folder inside one of them
would be read by every child, so ``python -m autograder grade`` stops with one line before any child
starts. Each case moves one of them into the world-readable venv's site-packages (the uid level's
runtime, ``readable_runtime``) and grades there at the uid level.
"""
import os
import shutil
import subprocess
import sysconfig

import pytest

from autograder.containment import confine
from readable_runtime import readable_python
from variant_builder import ROOT

REFERENCE = ROOT / "examples" / "submissions" / "reference"


@pytest.fixture(scope="module")
def python():
    python, why_not = readable_python()
    if python is None:
        pytest.skip(f"the uid level: {why_not}")
    if "landlock-fs" not in confine.possible_layers():
        pytest.skip("this kernel offers no Landlock: the uid level falls back to file permissions")
    return python


@pytest.fixture
def granted(python, tmp_path):
    """A fresh folder inside the uid venv's site-packages, removed afterwards."""
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    folder = os.path.join(site, f"kit-grant-test-{tmp_path.name}")
    os.mkdir(folder)
    yield folder
    shutil.rmtree(folder)


def grade(python, paths, out, cwd=ROOT):
    return subprocess.run([python, "-m", "autograder", "grade", *map(str, paths), "--out", str(out)], cwd=cwd,
                          env=dict(os.environ, AUTOGRADER_ISOLATION="uid"), capture_output=True, text=True, timeout=300)


def assert_refused(run, inside, out):
    assert run.returncode == 2, f"exit {run.returncode}:\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}"
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and inside in lines[0] and "student code may read" in lines[0], run.stderr
    assert not any(os.scandir(out)) if os.path.isdir(out) else True, "a submission was graded although refused"


def test_a_submission_inside_a_granted_folder_is_refused(python, granted, tmp_path):
    submission = shutil.copytree(REFERENCE, os.path.join(granted, "alice"))
    assert_refused(grade(python, [submission], tmp_path / "out"), submission, tmp_path / "out")


def test_a_batch_inside_a_granted_folder_is_refused(python, granted, tmp_path):
    batch = os.path.join(granted, "batch")
    shutil.copytree(REFERENCE, os.path.join(batch, "alice"))
    assert_refused(grade(python, [batch], tmp_path / "out"), batch, tmp_path / "out")


def test_an_output_folder_inside_a_granted_folder_is_refused(python, granted, tmp_path):
    out = os.path.join(granted, "reports")
    assert_refused(grade(python, [REFERENCE], out), out, out)


def test_a_kit_inside_a_granted_folder_is_refused(python, granted, tmp_path):
    kit = os.path.join(granted, "kit")
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", "tests", "bench", "dist")
    shutil.copytree(ROOT, kit, ignore=ignore)
    run = grade(python, [REFERENCE], tmp_path / "out", cwd=kit)
    assert_refused(run, kit, tmp_path / "out")


def test_the_same_batch_outside_every_granted_folder_is_graded(python, tmp_path):
    """The control: the refusal is about where the folders lie, nothing else."""
    tmp_path.chmod(0o755)
    run = grade(python, [REFERENCE], tmp_path / "out")
    assert run.returncode == 0, f"exit {run.returncode}:\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}"
    assert (tmp_path / "out" / "reference" / "results.json").exists()
