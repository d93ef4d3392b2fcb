"""Shared fixtures of the kit's own tests."""
import importlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections import namedtuple
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The tests mirror the engine's groups, one folder each; a few test modules share helpers with tests in
# another folder (records written by hand, the public run, the hostile cases), by module name.
sys.path[1:1] = [str(folder) for folder in sorted(Path(__file__).parent.iterdir())
                 if folder.is_dir() and any(folder.glob("test_*.py")) and str(folder) not in sys.path]

Lab = namedtuple("Lab", ["attention", "mha"])


def import_lab(folder):
    """Import attention.py and mha.py from `folder` as a fresh pair.

    mha.py does ``from attention import ...``, so `folder` goes first on sys.path while
    importing. Afterwards sys.path and sys.modules are restored, so a second folder (the
    stubs, a submission) can be imported under the same names without a clash.
    """
    names = ("attention", "mha")
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.pop(name, None) for name in names}
    sys.path.insert(0, str(folder))
    try:
        return Lab(*(importlib.import_module(name) for name in names))
    finally:
        sys.path[:] = saved_path
        for name, module in saved_modules.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: a heavy test (third-party tools, whole batches, notebooks, containers); "
        "`make check` runs every test, `make check-fast` (-m 'not slow') skips these")


@pytest.fixture(scope="session")
def reference():
    """The reference solution: ``reference.attention`` and ``reference.mha`` from solution/."""
    return import_lab(ROOT / "solution")


def public_checks():
    """assignment/tests/checks.py, loaded on its own: the students' copy of what the grader shares."""
    spec = importlib.util.spec_from_file_location("_public_checks", ROOT / "assignment" / "tests" / "checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gradescope_metadata(*students):
    """A Gradescope export's submission_metadata.yml: ``students`` are (name, sid, email, created_at), one
    submission_N each, in the export's own shape (Ruby symbols as keys, a Rails timestamp)."""
    return "".join(f"submission_{n}:\n  :submitters:\n  - :name: {name}\n    :sid: '{sid}'\n    :email: {email}\n"
                   f"  :created_at: {created_at}\n" for n, (name, sid, email, created_at) in enumerate(students, 1))


def run_grader(*args, timeout=600):
    """Run ``python -m autograder`` from the kit root, as an instructor would; returns the CompletedProcess."""
    import subprocess

    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def open_tmp():
    """A temporary folder a sandbox uid can enter (pytest's tmp_path sits in a root-only folder)."""
    path = Path(tempfile.mkdtemp(prefix="kit-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# The parts of the lab as shipped: the reports' tests build records by hand with these names, so they
# describe the engine under a fixed table whatever this term's tests_hidden/parts.py holds.
SHIPPED_PARTS = {
    "PARTS": ("masks", "attention", "gradients", "mha_init", "heads", "mha_forward", "rules", "extra"),
    "EXTRA_PARTS": ("extra",),
    "PART_TITLES": {"masks": "Masks", "attention": "Attention values", "gradients": "Gradients, dtypes, stability",
                    "mha_init": "MHA construction", "heads": "Head split/merge", "mha_forward": "MHA forward",
                    "rules": "From-scratch rule", "extra": "Extra credit", "other": "Other"},
}


@pytest.fixture
def shipped_parts(monkeypatch):
    """The engine reads the lab's table of parts (tests_hidden/parts.py, through autograder/parts.py):
    here it reads SHIPPED_PARTS instead, in every engine module that holds the table's names."""
    from autograder import parts

    lab = {name: getattr(parts, name) for name in SHIPPED_PARTS}
    for module in [m for name, m in sys.modules.items() if name == "autograder" or name.startswith("autograder.")]:
        for name, value in SHIPPED_PARTS.items():
            if getattr(module, name, None) is lab[name]:
                monkeypatch.setattr(module, name, value)
    return SHIPPED_PARTS


def part_of_module(module):
    """The part a module of tests_hidden/ grades (its ``pytest.mark.part``), as this term's lab names it;
    skips the test when the lab no longer has the module (a part removed)."""
    import re

    path = ROOT / "tests_hidden" / module
    if not path.exists():
        pytest.skip(f"this term's lab has no tests_hidden/{module}")
    return re.search(r"pytest\.mark\.part\(\s*[\"'](\w+)[\"']\s*\)", path.read_text(encoding="utf-8"))[1]


def copy_of_the_kit(root, venv=True):
    """A copy of the kit's tracked files, as they are in the working tree, at ``root``; with ``venv``, it
    shares the kit's .venv (a link)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    if venv:
        (root / ".venv").symlink_to(ROOT / ".venv")
    return root


def copy_of_the_generated_files(root):
    """What generation reads and writes besides the kit's code, copied to ``root``: solution/, assignment/ and
    the samples' README (a target of the suite's totals). The suite's points are still read from tests_hidden/."""
    for folder in ("solution", "assignment"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    samples = root / "examples" / "submissions"
    samples.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "submissions" / "README.md", samples / "README.md")
    return root
