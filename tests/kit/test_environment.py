"""The first day is lean: `make grade` installs only what grading needs (requirements/grade.lock), with
torch's CPU build on Linux x86_64; the instructor's tools (requirements/tools.lock: nbgrader, Jupyter,
otter-grader) come only with the targets that use them."""
import os
import platform
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from test_makefile import kit_copy

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

REQUIREMENTS = ROOT / "requirements"
# What only the instructor's tools (and the kit's own tests) use: never installed by `make grade`.
TOOLS_ONLY = ("nbgrader", "otter-grader", "jupyterlab", "notebook", "jupyter-server", "nbformat", "nbclient",
              "nbconvert", "ipykernel", "ipython", "jsonschema")
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"
# A stand-in for the venv's python: it logs each call and, for the CPU index, exits with $CPU_INDEX_EXIT.
FAKE_PYTHON = """#!/bin/sh
echo "${PYTHONDONTWRITEBYTECODE:+no-bytecode }$*" >> "$(dirname "$0")/../calls.log"
case "$*" in *download.pytorch.org*) exit "${CPU_INDEX_EXIT:-0}";; esac
exit 0
"""


def pins(name):
    """{canonical package name: the lock's line} of requirements/<name>."""
    found = {}
    for line in (REQUIREMENTS / name).read_text().splitlines():
        package, sep, _ = line.partition("==")
        if sep and not line.startswith("#"):
            found[re.sub(r"[-_.]+", "-", package).lower()] = line
    return found


def install_lines(target, kit):
    """The pip commands `make -n target` would run in a fresh clone (no .venv yet)."""
    run = subprocess.run(["make", "-n", target], cwd=kit, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return [line for line in run.stdout.splitlines() if "pip" in line and "install" in line]


@pytest.fixture(scope="module")
def fresh_kit(tmp_path_factory):
    return kit_copy(tmp_path_factory.mktemp("clone"))


@pytest.mark.parametrize("target", ["grade", "test", "submit", "gradescope"])
def test_the_grading_targets_install_only_the_grade_lock(fresh_kit, target):
    lines = install_lines(target, fresh_kit)
    assert any("-r requirements/grade.lock" in line for line in lines), lines
    assert not any("tools" in line for line in lines), f"make {target} installs the instructor's tools: {lines}"


@pytest.mark.parametrize("target", ["check", "check-fast", "validate", "stubs", "nbgrader-course", "venv"])
def test_the_tool_targets_install_the_tools_on_top_of_the_grade_lock(fresh_kit, target):
    lines = install_lines(target, fresh_kit)
    grade = next(i for i, line in enumerate(lines) if "-r requirements/grade.lock" in line)
    tools = next(i for i, line in enumerate(lines) if "-r requirements/tools.lock" in line)
    assert grade < tools and "-c requirements/grade.lock" in lines[tools], lines


def test_the_grade_lock_holds_nothing_only_the_tools_need():
    assert not [name for name in TOOLS_ONLY if name in pins("grade.lock")]


def test_the_tools_lock_never_pins_what_the_grade_lock_pins():
    """One pin per package, so the two locks cannot disagree on a version."""
    assert not set(pins("tools.lock")) & set(pins("grade.lock"))


@pytest.mark.parametrize("source, locks", [("grade.in", ["grade.lock"]), ("tools.in", ["grade.lock", "tools.lock"])])
def test_every_pin_of_a_source_is_in_its_lock(source, locks):
    locked = {}
    for lock in locks:
        locked.update(pins(lock))
    assert not [line for name, line in pins(source).items() if locked.get(name) != line], (
        f"requirements/{source} and its lock disagree: run `make lock`")


OLDEST_PYTHON = "3.11.0"  # the oldest the kit runs on: Ubuntu 22.04's python3.11 (Gradescope's image)


@pytest.mark.parametrize("lock", ["grade.lock", "tools.lock", "gradescope.lock"])
def test_every_pin_runs_on_the_oldest_python(lock):
    """A pin whose release needs a newer Python than the machine's cannot be installed there: pip finds no
    version. Read from the installed packages' own metadata (Requires-Python), so no registry is needed."""
    from importlib import metadata
    from packaging.specifiers import SpecifierSet

    refused, unread = [], []
    for name, line in pins(lock).items():
        try:
            installed = metadata.metadata(name)
        except metadata.PackageNotFoundError:
            unread.append(name)
            continue
        if installed["Version"] != line.partition("==")[2].split(";")[0].strip():
            unread.append(name)
            continue
        needs = installed.get("Requires-Python")
        if needs and not SpecifierSet(needs).contains(OLDEST_PYTHON, prereleases=True):
            refused.append(f"{line} (Requires-Python {needs})")
    assert not refused, f"requirements/{lock} pins releases Python {OLDEST_PYTHON} cannot install: {refused}"
    if len(unread) == len(pins(lock)):
        pytest.skip(f"none of requirements/{lock}'s pins is installed here at its version: nothing to read")


needs_linux_x86 = pytest.mark.skipif(f"{platform.system()} {platform.machine()}" != "Linux x86_64",
                                     reason="the CPU index is asked for on Linux x86_64 only")


def fake_venv(kit):
    python = kit / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return kit / ".venv" / "calls.log"


def first_day(kit, cpu_index_exit):
    shutil.rmtree(kit / ".venv", ignore_errors=True)
    log = fake_venv(kit)
    env = dict(os.environ, CPU_INDEX_EXIT=str(cpu_index_exit), PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run(["make", "grade"], cwd=kit, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    return run, log.read_text().splitlines()


@needs_linux_x86
def test_torch_comes_first_from_the_cpu_index_with_a_short_timeout(fresh_kit):
    run, calls = first_day(fresh_kit, cpu_index_exit=0)
    torch, lock = calls[0], calls[1]
    assert CPU_INDEX in torch and "torch==2.13.0" in torch and "--no-deps" in torch, calls
    assert "--timeout 10" in torch and "--retries 0" in torch, "an index that does not answer must cost seconds"
    assert "-r requirements/grade.lock" in lock, calls
    assert "did not answer" not in run.stdout


@needs_linux_x86
def test_an_unreachable_cpu_index_falls_back_to_the_lock_and_says_so(fresh_kit):
    run, calls = first_day(fresh_kit, cpu_index_exit=1)
    assert "-r requirements/grade.lock" in calls[1], calls
    assert "did not answer" in run.stdout and "CUDA" in run.stdout, run.stdout



def test_bytecode_is_written_for_what_grading_imports_even_where_the_shell_forbids_it(fresh_kit):
    """The venv holds no bytecode of what grading never imports (its size), but all of what it does: the
    zygote runs `python -B` and never writes any, so a module without it is compiled on every run."""
    _, calls = first_day(fresh_kit, cpu_index_exit=0)
    installs = [call for call in calls if " pip install" in call]
    assert installs and all("--no-compile" in call for call in installs), installs
    warm_up = next(call for call in calls if "zygote.preload()" in call)
    assert not warm_up.startswith("no-bytecode"), "the warm-up ran with PYTHONDONTWRITEBYTECODE set"
    assert calls.index(warm_up) > calls.index(installs[-1]) and "pictures.preload()" in warm_up
