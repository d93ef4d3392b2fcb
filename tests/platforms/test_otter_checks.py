"""The otter checks in assignment/checks/: in sync with the case table, passing on the reference,
failing readably on the stubs, and never needed by `make test` or `make grade`.

otter loads and runs each check file with its own API (the code behind `grader.check`), in a
fresh interpreter per lab folder, as a student would: from inside a copy of assignment/.
"""
import ast
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.platforms import generate

pytest.importorskip("otter", reason="otter-grader is not installed (requirements/tools.lock has it; make check installs it)")

pytestmark = pytest.mark.slow  # runs otter-grader's checks (`make check-fast` skips it)

from conftest import ROOT

ASSIGNMENT = ROOT / "assignment"
CHECKS = ROOT / generate.CHECKS
NOT_IMPLEMENTED = "is not implemented yet (NotImplementedError in "

# Runs inside a lab folder: every check file through otter, then one JSON line of results.
RUN_CHECKS = r'''
import json
import sys
from pathlib import Path

from otter.nbmeta_config import NBMetadataConfig
from otter.test_files import create_test_file

results = {}
for path in sorted(Path("checks").glob("*.py")):
    check = create_test_file(str(path), NBMetadataConfig())
    check.run({})
    results[check.name] = [
        {"name": r.test_case.name, "points": r.test_case.points, "passed": r.passed, "message": r.message}
        for r in check.test_case_results
    ]
print(json.dumps(results))
'''


def lab_copy(tmp, files_from):
    lab = tmp / "lab"
    shutil.copytree(ASSIGNMENT, lab, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for name in ("attention.py", "mha.py"):
        shutil.copy(files_from / name, lab / name)
    return lab


def run_checks(lab):
    proc = subprocess.run([sys.executable, "-c", RUN_CHECKS], cwd=lab, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"otter could not run the checks in {lab}:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """{"reference": ..., "stubs": ...}: {check name: [case results]}, the two labs run side by side."""
    labs = {
        "reference": lab_copy(tmp_path_factory.mktemp("otter-reference"), ROOT / "solution"),
        "stubs": lab_copy(tmp_path_factory.mktemp("otter-stubs"), ASSIGNMENT),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(labs, pool.map(run_checks, labs.values())))


def test_every_check_file_runs_exactly_the_cases_of_its_part(results):
    cases, parts = generate.public_cases()
    expected = {part: [[name, points] for name, case_part, points in cases if case_part == part] for part in parts}
    got = {check: [[r["name"], r["points"]] for r in found] for check, found in results["reference"].items()}
    assert got == expected, "the otter checks and the case table disagree: run `make stubs`"


def test_every_check_passes_on_the_reference(results):
    failed = [f"{check}/{r['name']}: {r['message']}" for check, found in results["reference"].items()
              for r in found if not r["passed"]]
    assert not failed, "otter checks fail on the reference:\n" + "\n".join(failed)


def test_every_check_fails_on_the_stubs_with_a_readable_message(results):
    unclear = [f"{check}/{r['name']}: {r['message']}" for check, found in results["stubs"].items()
               for r in found if r["passed"] or NOT_IMPLEMENTED not in r["message"] or "Traceback" in r["message"]]
    assert not unclear, "on the stubs every check should fail, naming what is not implemented:\n" + "\n".join(unclear)


@pytest.mark.skipif(shutil.which("otter", path=str(Path(sys.executable).parent)) is None,
                    reason="the otter command is not installed next to this Python")
def test_otter_check_command_runs_a_part_from_a_terminal(tmp_path):
    lab = lab_copy(tmp_path, ASSIGNMENT)
    otter = Path(sys.executable).parent / "otter"
    proc = subprocess.run([str(otter), "check", "playground.ipynb", "-t", "checks", "-q", "part1_masks"],
                          cwd=lab, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "causal_mask is not implemented yet (NotImplementedError in attention.py)" in proc.stdout, proc.stdout


# ----------------------------------------------------------------------------- otter is for the notebook only


def imports_otter(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        if any(name.split(".")[0] == "otter" for name in names):
            return True
    return False


def test_only_the_check_files_import_otter():
    modules = [*ASSIGNMENT.rglob("*.py"), *(ROOT / "autograder").rglob("*.py"), *(ROOT / "tests_hidden").rglob("*.py")]
    offenders = [str(p.relative_to(ROOT)) for p in modules if imports_otter(p) and p.parent != CHECKS]
    assert not offenders, f"otter-grader is a notebook dependency only, but these import it: {offenders}"


def test_public_tests_run_without_otter(tmp_path):
    # sys.modules["otter"] = None makes every `import otter` fail, as on a machine without it.
    run = ("import sys; sys.modules['otter'] = None; import pytest; "
           "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests']))")
    lab = lab_copy(tmp_path, ROOT / "solution")
    proc = subprocess.run([sys.executable, "-c", run], cwd=lab, capture_output=True, text=True, timeout=300)
    total = sum(points for _, _, points in generate.public_cases()[0])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"public tests: {total}/{total} points" in proc.stdout, proc.stdout
