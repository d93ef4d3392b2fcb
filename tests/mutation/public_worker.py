"""Run the public tests, as `make test` does, on many submission folders in one process (torch imported once).

    python tests/mutation/public_worker.py OUT.json FOLDER [FOLDER...]

Writes ``{folder: {case: {"points", "extra", "passed"[, "message"]}}}``: each public test's points, whether it is
extra credit, whether it passed (a failure, an error or a skip is not a pass, as the footer counts it) and, when it
failed, what it said. Each folder gets a fresh pytest session and fresh imports of the student's files and the suite's modules.
"""
import json
import signal
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "assignment" / "tests"
SECONDS = 120  # a mutant that loops: its remaining tests fail, the run goes on


class Outcomes:
    def __init__(self):
        self.tests = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            name = item.nodeid.split("[", 1)[1].rstrip("]") if "[" in item.nodeid else item.name
            self.tests[item.nodeid] = {"case": name, "points": item.get_closest_marker("points").args[0],
                                       "extra": item.get_closest_marker("extra_credit") is not None, "passed": False}

    def pytest_runtest_logreport(self, report):
        test = self.tests.get(report.nodeid)
        if test is None:
            return
        if report.when == "call":
            test["passed"] = report.passed
        elif report.failed or report.skipped:
            test["passed"] = False
        if report.failed:  # what `make test` says: hint_run.py reads the hints in it
            test["message"] = report.longreprtext


def _timeout(*_):
    raise TimeoutError(f"the public tests took more than {SECONDS} s")


def run(folder):
    """{case: outcome} of the public suite on ``folder``."""
    for name, module in list(sys.modules.items()):  # the student's files and the suite's own modules, fresh
        file = getattr(module, "__file__", None) or ""
        if name in ("attention", "mha") or file.startswith(str(PUBLIC)):
            del sys.modules[name]
    saved_path = list(sys.path)
    outcomes = Outcomes()
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(SECONDS)
    try:
        pytest.main(["-q", "-p", "no:cacheprovider", "-c", str(PUBLIC / "pytest.ini"), str(PUBLIC),
                     f"--submission={folder}"], plugins=[outcomes])
    finally:
        signal.alarm(0)
        sys.path[:] = saved_path
    return {t["case"]: {k: t[k] for k in ("points", "extra", "passed", "message") if k in t}
            for t in outcomes.tests.values()}


def main(out, *folders):
    torch.set_num_threads(1)
    found = {folder: run(folder) for folder in folders}
    Path(out).write_text(json.dumps(found))


if __name__ == "__main__":
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):  # pytest's terminal output: the JSON says it all
        main(*sys.argv[1:])
