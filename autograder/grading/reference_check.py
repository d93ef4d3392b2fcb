"""Grade the reference before any student: a hidden suite is trusted only after the reference passes it.

Before a run grades anyone (``make grade``, and so nbgrader's autograde) and before ``make
gradescope`` or ``make nbgrader-course`` ship a suite, the reference solution is graded by the same
engine, in the same sandbox. Every test must pass: a test that fails or errors on the reference
(a typo in a test, a wrong expected value, a module of the suite that does not load) would charge
every student for the grader's mistake, so the run stops and names the file, the line and what
failed. When some of the reference's calls were stopped by the wall-clock backstop rather than by
their CPU time, the line says instead that the machine was too slow: the suite is not to blame. A
passing verdict is kept under the grader's fingerprint (``fingerprint.grader_key``), so the check
costs one grading per change of the suite, the reference, the settings or the kit.
"""
import json
import os

from autograder.files import write_atomic
from autograder.grading.fingerprint import grader_key


class SuiteBroken(Exception):
    """The reference does not get full marks on the suite; ``lines`` say where and why, one per failure.
    ``too_slow``: some of the reference's calls were stopped by the wall-clock backstop before their CPU
    limit, so the machine was too slow (loaded), which says nothing of the suite."""

    def __init__(self, lines, too_slow=False):
        super().__init__("; ".join(lines))
        self.lines, self.too_slow = lines, too_slow

    def message(self, outcome="nothing was graded"):
        if self.too_slow:
            head = ("the reference solution was too slow on this machine: its calls ran out of wall-clock time "
                    "before their CPU time (a loaded machine, not a broken suite); "
                    f"{outcome}. Run again when the machine is less busy")
        else:
            head = ("the hidden suite fails on the reference solution, so it would charge students for the "
                    f"grader's mistake; {outcome}")
        return f"{head}:\n" + "\n".join(f"  {line}" for line in self.lines)


def verify(parts, grade_reference):
    """The reference's verdict for the grader ``parts``: from the cache, or ``grade_reference()`` (a record,
    as ``runner.grade_one`` returns it) checked now. Returns {"max_score", "extra_max", "tests"}; raises
    ``SuiteBroken`` when the reference does not pass every test."""
    key = grader_key(parts)
    cached = _load(key)
    if cached is not None:
        return cached
    record = grade_reference()
    failures = failures_of(record)
    if failures:
        raise SuiteBroken(failures, too_slow=bool(record.get("wall_timeouts")))
    verdict = {"key": key, "tests": len(record["tests"]),
               "points": sum(t["points"] for t in record["tests"])}
    _store(key, verdict)
    return verdict


def known(parts):
    """Whether the reference's passing verdict for the grader ``parts`` is cached (no grading needed)."""
    return _load(grader_key(parts)) is not None


def failures_of(record):
    """One line per way the reference's graded ``record`` falls short of full marks (none: it passes)."""
    if record.get("grader_error"):
        return [f"{' '.join(str(record['grader_error']).split())[:1000]}"]
    if not record.get("tests"):
        return ["the hidden suite has no tests"]
    lines = []
    for test in record["tests"]:
        if test["passed"]:
            continue
        what = "errors" if test.get("grader_error") else "fails"
        message = " ".join(str(test.get("message") or "").split())[:300]
        lines.append(f"{test.get('where') or test['nodeid']}: {test['name']} {what} on the reference: {message}")
    return lines


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "attention-kit", "verified-reference")


def _load(key):
    try:
        with open(os.path.join(cache_dir(), key + ".json"), encoding="utf-8") as f:
            verdict = json.load(f)
    except (OSError, ValueError):
        return None
    return verdict if isinstance(verdict, dict) and verdict.get("key") == key else None


def _store(key, verdict):
    """Keep a passing verdict; a cache that cannot be written only costs the check again next time."""
    try:
        write_atomic(os.path.join(cache_dir(), key + ".json"), json.dumps(verdict))
    except OSError:
        pass
