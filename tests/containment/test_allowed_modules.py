"""What the from-scratch rule allows is installed, and imports inside the sandbox (issue 31, item 5).

Every module of assignment/submit.py's ``MODULES`` is imported by a submission's own code, in a
sandboxed child, at each isolation level this machine has, with the kit where it is and with the
kit (and its venv) under /tmp, where the child's private /tmp once hid every module the zygote
had not imported already.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from autograder import rules
from autograder.containment import isolation
from autograder.platforms.gradescope_zip import RUNTIME_ROOTS
from conftest import ROOT
from readable_runtime import readable_python

pytestmark = pytest.mark.slow  # a zygote per case imports torch

# Run by the grader's Python inside a kit (argv: level): a zygote at that level, one sandboxed child,
# and a submission whose attention.py imports each allowed module in a function of its own.
SCRIPT = """\
import json, os, sys, tempfile
from autograder import rules
from autograder.config import Limits
from autograder.containment import isolation
from autograder.containment.protocol import Answer, Import, Probe, request_body
from autograder.containment.zygote import Zygote
from autograder.paths import KIT_ROOT

level = sys.argv[1]
names = rules.allowed_modules()
scratch = tempfile.mkdtemp()
os.chmod(scratch, 0o755)
with open(f"{scratch}/attention.py", "w") as f:  # the sandbox's test, not the rule's: importlib is fine here
    f.write("import importlib\\n\\n")
    for i, name in enumerate(names):
        f.write(f"def load_{i}(_):\\n    importlib.import_module({name!r})\\n    return 1\\n\\n")
zygote = Zygote(level, hidden=[KIT_ROOT], layers=isolation.detect_layers(level))
uid = zygote.next_uid()
if os.getuid() == 0:
    for path in (scratch, f"{scratch}/attention.py"):
        os.chown(path, uid, uid)
child = zygote.spawn(scratch, Limits(call_seconds=60), uid)
try:
    outcomes = {}
    assert Answer.from_body(child.call(request_body(Import("attention"), record="r"))).ok
    for i, name in enumerate(names):
        answer = Answer.from_body(child.call(request_body(Probe.build(f"attention.load_{i}", [0]), record="r")))
        outcomes[name] = "imported" if answer.ok else f"{answer.error.type}: {answer.error.message}"
finally:
    child.close()
    zygote.stop()
print(json.dumps(outcomes))
"""


def levels():
    """(level, python that grades at it) for each level this machine has; a missing one is skipped, saying why."""
    found = []
    if isolation._try_level("namespaces"):
        found.append(pytest.param("namespaces", sys.executable, id="namespaces"))
    else:
        found.append(pytest.param("namespaces", None, id="namespaces",
                                  marks=pytest.mark.skip(reason="namespaces are refused on this machine")))
    python, why_not = readable_python() if os.getuid() == 0 else (None, "the uid level needs root")
    found.append(pytest.param("uid", python, id="uid", marks=() if python else pytest.mark.skip(reason=why_not)))
    return found


def kit_under_tmp(python, base):
    """A copy of the kit's engine and scanner under ``base`` (in /tmp), with a venv of its own there whose
    site-packages is ``python``'s (a link: torch is not copied). Returns the copy's python."""
    kit = base / "kit"
    shutil.copytree(ROOT / "autograder", kit / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    (kit / "assignment").mkdir()
    shutil.copy(ROOT / "assignment" / "submit.py", kit / "assignment" / "submit.py")
    info = json.loads(subprocess.run(
        [python, "-c", "import json, sys, sysconfig; print(json.dumps([sys._base_executable, sysconfig.get_paths()['purelib']]))"],
        capture_output=True, text=True, check=True).stdout)
    subprocess.run([info[0], "-m", "venv", "--without-pip", str(kit / ".venv")], check=True, timeout=120)
    site = kit / ".venv" / Path(info[1]).relative_to(Path(info[1]).parents[2])  # lib/python3.x/site-packages
    shutil.rmtree(site)
    site.symlink_to(info[1])
    for folder in (base, *[p for p in kit.rglob("*") if p.is_dir()], kit):  # readable by a sandbox uid, as a kit is
        folder.chmod(0o755)
    return kit, str(kit / ".venv" / "bin" / "python")


def imported_in_the_child(python, kit, level):
    run = subprocess.run([python, "-c", SCRIPT, level], cwd=kit, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(kit)})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_every_allowed_module_that_is_not_the_standard_librarys_is_installed_for_gradescope():
    """requirements/gradescope.lock holds what the rule allows (RUNTIME_ROOTS; the lock test checks the rest)."""
    outside = {name.split(".")[0] for name in rules.allowed_modules()} - set(sys.stdlib_module_names)
    assert outside <= set(RUNTIME_ROOTS), f"allowed but not installed on Gradescope: {sorted(outside - set(RUNTIME_ROOTS))}"


@pytest.mark.parametrize("where", ["in place", "under /tmp"])
@pytest.mark.parametrize("level, python", levels())
def test_every_allowed_module_imports_in_the_sandboxed_child(level, python, where):
    kit = ROOT
    base = Path(tempfile.mkdtemp(prefix="ag-kit-", dir="/tmp"))
    try:
        if where == "under /tmp":
            kit, python = kit_under_tmp(python, base)
        outcomes = imported_in_the_child(python, kit, level)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert set(outcomes) == set(rules.allowed_modules())
    failed = {name: outcome for name, outcome in outcomes.items() if outcome != "imported"}
    assert not failed, f"allowed modules that do not import in the child ({level}, kit {where}): {failed}"
