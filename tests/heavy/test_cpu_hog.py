"""Grades do not depend on the machine's load (issue 32, item 6): per-call limits are the child's own CPU
time, with a wall-clock backstop several times larger.

The reference, graded under the hostile suite's short limit (its T = 4096 tiled call included, and the
reference check that runs before any submission), earns full marks at both levels while busy loops (two
per core, started and stopped by this test) compete for every core. On an idle machine it earns the same
(tests/heavy/test_hostile.py). Only this test runs beside the hog: no other test needs an idle machine.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.grading.suite_points import full_marks
from readable_runtime import readable_python
from variant_builder import FILES, ROOT, SOLUTION, without_markers

pytestmark = pytest.mark.slow
CALL_TIMEOUT = 2  # seconds of CPU time per call, as in test_hostile


@pytest.fixture
def cpu_hog():
    """Two busy loops per core, killed when the test ends, whatever happens."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        yield len(hogs)
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


@pytest.mark.parametrize("level_run", ["strongest", "uid"])
def test_the_reference_earns_full_marks_beside_a_cpu_hog(cpu_hog, level_run):
    python, environment = sys.executable, dict(os.environ)
    if level_run == "uid":
        python, why_not = readable_python()
        if python is None:
            pytest.skip(f"the uid level: {why_not}")
        environment["AUTOGRADER_ISOLATION"] = "uid"
    with tempfile.TemporaryDirectory(prefix="cpu-hog-") as base:
        batch, out = Path(base) / "batch", Path(base) / "reports"
        (batch / "reference").mkdir(parents=True)
        for name in FILES:
            (batch / "reference" / name).write_text(without_markers((SOLUTION / name).read_text()))
        command = [python, "-m", "autograder", "grade", "--batch", str(batch), "--out", str(out),
                   "--call-timeout", str(CALL_TIMEOUT), "--force"]
        process = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900)
        assert process.returncode == 0, f"beside {cpu_hog} busy loops:\n{process.stderr[-2000:]}"
        results = json.loads((out / "reference" / "results.json").read_text())
    failed = [t["name"] for t in results["tests"] if t.get("status") == "failed"]
    assert results["score"] == full_marks() and not failed, (
        f"beside {cpu_hog} busy loops the reference scored {results['score']}, failing {failed}")
