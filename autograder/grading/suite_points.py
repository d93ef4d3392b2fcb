"""The hidden suite's points, read from its markers: the one source of every total the kit states.

``pytest --collect-only`` on tests_hidden/ (nothing is graded, no sandbox starts) sums each test's
``@pytest.mark.points(n)`` under its module's ``pytest.mark.part(...)``. The core maximum is the
sum over the parts that are not extra credit (tests_hidden/parts.py), the extra maximum the rest.

Standard library and pytest only. ``python -m autograder.grading.suite_points`` prints the table.
"""
import contextlib
import functools
import io
import os
import sys

from autograder.parts import EXTRA_PARTS, part_index
from autograder.paths import HIDDEN_TESTS

COLLECT_ARGS = ["--collect-only", "-q", "--disable-plugin-autoload", "-p", "no:cacheprovider"]


class _Collector:
    """A pytest plugin that keeps {part: points} and the files that failed to load."""

    def __init__(self):
        self.points, self.broken = {}, []

    def pytest_collectreport(self, report):
        if report.failed:
            self.broken.append(report.nodeid or HIDDEN_TESTS)

    def pytest_collection_finish(self, session):
        for item in session.items:
            part, points = item.get_closest_marker("part"), item.get_closest_marker("points")
            name = part.args[0] if part else "other"
            self.points[name] = self.points.get(name, 0) + (points.args[0] if points else 0)


@functools.lru_cache(maxsize=None)
def part_points(tests_dir=HIDDEN_TESTS):
    """{part: points} of the suite in ``tests_dir``, in the lab's order (extra credit included)."""
    import pytest

    collector, before = _Collector(), dict(sys.modules)
    try:
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
                contextlib.redirect_stderr(io.StringIO()):
            code = pytest.main([tests_dir, *COLLECT_ARGS], plugins=[collector])
    finally:  # the suite's modules (conftest, cases, ...) must not shadow the caller's of that name
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(os.path.join(tests_dir, "")):
                if name in before:
                    sys.modules[name] = before[name]
                else:
                    del sys.modules[name]
    if code != 0 or collector.broken or not collector.points:
        where = ", ".join(collector.broken) or tests_dir
        raise RuntimeError(f"could not collect the hidden suite: {where} (pytest exit code {int(code)})")
    return {part: collector.points[part] for part in sorted(collector.points, key=part_index)}


def core_points(tests_dir=HIDDEN_TESTS):
    """{part: points} of the parts that make up the maximum."""
    return {part: points for part, points in part_points(tests_dir).items() if part not in EXTRA_PARTS}


def core_max(tests_dir=HIDDEN_TESTS):
    """The maximum score: a submission that passes every core test scores core_max / core_max."""
    return sum(core_points(tests_dir).values())


def extra_max(tests_dir=HIDDEN_TESTS):
    """The extra-credit points, counted in the score above the maximum."""
    return sum(points for part, points in part_points(tests_dir).items() if part in EXTRA_PARTS)


def full_marks(tests_dir=HIDDEN_TESTS):
    """What the reference scores: every core and every extra-credit point."""
    return core_max(tests_dir) + extra_max(tests_dir)


def main():
    for part, points in part_points().items():
        print(f"{part:<12} {points:>6g}{'  (extra credit)' if part in EXTRA_PARTS else ''}")
    print(f"{'max':<12} {core_max():>6g}  (+ {extra_max():g} extra credit)")


if __name__ == "__main__":
    main()
