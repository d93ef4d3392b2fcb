"""The public tests in assignment/tests: full marks on the reference, clean failures on the stubs.

They run in a subprocess, exactly as a student runs them, and report through
JUnit XML so each test's outcome and message can be checked one by one.
"""
import re
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT

ASSIGNMENT = ROOT / "assignment"
PUBLIC = ASSIGNMENT / "tests"
SOLUTION = ROOT / "solution"
FOOTER = re.compile(r"public tests: (\d+)/(\d+) points \(your grade also counts the hidden tests\)")
NOT_IMPLEMENTED = re.compile(r"^\S+ is not implemented yet \(NotImplementedError in (attention|mha)\.py\)$")


class Run:
    """One run of the public suite: exit code, terminal output and per-test results."""

    def __init__(self, command, cwd, junit):
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.failures = {}  # test name -> failure text, None when the test passed
        self.skipped = {}  # test name -> the reason it was skipped
        self.test_seconds = 0.0
        for case in ET.parse(junit).getroot().iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if case.find("skipped") is not None:
                self.skipped[case.get("name")] = case.find("skipped").get("message", "")
            else:
                self.failures[case.get("name")] = None if problem is None else (problem.text or "")
            self.test_seconds += float(case.get("time"))

    @property
    def score(self):
        """(earned, total) from the last line of the output."""
        last = self.output.rstrip().splitlines()[-1]
        match = FOOTER.fullmatch(last.strip())
        assert match, f"the run should end with the points line, but ends with: {last!r}"
        return int(match[1]), int(match[2])


def run_public(submission, tmp_path):
    junit = tmp_path / "public.xml"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(PUBLIC / "pytest.ini"),
               str(PUBLIC), f"--submission={submission}", f"--junitxml={junit}"]
    return Run(command, ROOT, junit)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_public(SOLUTION, tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return run_public(ASSIGNMENT, tmp_path_factory.mktemp("stubs"))


def test_reference_passes_every_public_test(reference):
    failed = {name: text for name, text in reference.failures.items() if text is not None}
    assert reference.failures, "no public tests ran"
    assert not failed, f"the reference fails public tests: {failed}"
    assert reference.returncode == 0, reference.output


def test_reference_gets_all_public_points(reference):
    earned, total = reference.score
    assert total > 0
    assert earned == total, reference.output


def test_the_extra_credit_cases_weigh_what_the_grade_gives_the_extra_credit():
    """The share of the extra credit a failed public case stands for is the grade's (issue 46)."""
    import ast

    from autograder.grading.suite_points import extra_max

    if extra_max() == 0:  # a documented change: the public extra cases stay, as ungraded practice
        pytest.skip("the hidden suite grades no extra credit: the public extra cases are ungraded practice")
    decorators = [node for node in ast.walk(ast.parse((PUBLIC / "cases.py").read_text()))
                  if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "case"]
    weights = [next(k.value.value for k in node.keywords if k.arg == "points") for node in decorators
               if node.args[0].value.startswith("extra_")]
    assert weights and sum(weights) == extra_max()


def test_public_suite_is_fast(reference):
    assert reference.test_seconds < 5, f"the public tests took {reference.test_seconds:.1f} s on the reference"


def test_the_public_suite_never_imports_sympy():
    """torch.autograd.grad given grad_outputs imports sympy on first use: 2-3 s, more than every public test
    together takes. The gradient case differentiates one weighted sum instead, as the sandbox does."""
    probe = ("import sys, pytest; code = pytest.main(['-q', '-p', 'no:cacheprovider', '-c', sys.argv[1], sys.argv[2], "
             "'--submission=' + sys.argv[3]]); print('exit', int(code), 'sympy', 'sympy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe, str(PUBLIC / "pytest.ini"), str(PUBLIC), str(SOLUTION)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.stdout.rstrip().splitlines()[-1] == "exit 0 sympy False", proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.slow  # runs the public tests on the stubs
def test_every_public_test_fails_on_the_stubs(stubs, reference):
    assert stubs.returncode == 1, stubs.output
    assert set(stubs.failures) | set(stubs.skipped) == set(reference.failures), \
        "the stubs and the reference ran different tests"
    passed = [name for name, text in stubs.failures.items() if text is None]
    assert not passed, f"these public tests pass on the untouched stubs: {passed}"


@pytest.mark.slow  # runs the public tests on the stubs
def test_unwritten_extra_credit_is_skipped_as_optional_on_its_own_line(stubs, reference):
    extra = sorted(name for name in reference.failures if name.startswith("test_extra["))
    assert extra, "there are no public extra-credit checks"
    assert sorted(stubs.skipped) == extra, f"skipped on the stubs: {stubs.skipped}"
    assert all("optional extra credit, not written yet" in reason for reason in stubs.skipped.values())
    lines = stubs.output.rstrip().splitlines()
    assert lines[-2] == f"extra credit (optional, not in the points): {len(extra)} not written yet", lines[-2:]
    assert reference.output.rstrip().splitlines()[-2] == \
        f"extra credit (optional, not in the points): {len(extra)} passed"


def _mutant_run(name, tmp_path):
    from variant_builder import build_mutant, load_mutants

    mutant = next(m for m in load_mutants() if m["name"] == name)
    return run_public(build_mutant(mutant, tmp_path / name), tmp_path)


def test_a_failing_core_test_fails_the_run(tmp_path):
    """The other side of tests/lab/test_public_hints.py's wrong extra credit, which alone exits 0."""
    run = _mutant_run("no_scaling", tmp_path)
    assert run.returncode == 1, run.output


@pytest.mark.slow  # runs the public tests on the stubs
def test_stub_failures_name_not_implemented_in_one_line(stubs):
    for name, text in stubs.failures.items():
        assert text is not None and NOT_IMPLEMENTED.match(text.strip()), \
            f"{name} should fail with one line naming the NotImplementedError, got: {text!r}"


@pytest.mark.slow  # runs the public tests on the stubs
def test_stub_run_prints_no_traceback(stubs):
    assert "Traceback" not in stubs.output, stubs.output


@pytest.mark.slow  # runs the public tests on the stubs
def test_stub_run_scores_zero_of_the_same_total(stubs, reference):
    earned, total = stubs.score
    assert (earned, total) == (0, reference.score[1])


def solution_lines():
    """Code lines inside the nbgrader solution regions, comments dropped (short ones skipped)."""
    lines = set()
    for path in SOLUTION.glob("*.py"):
        inside = False
        for line in path.read_text().splitlines():
            text = line.strip()
            if text == "### BEGIN SOLUTION":
                inside = True
            elif text == "### END SOLUTION":
                inside = False
            elif inside:
                code = text.split("  #")[0].strip()
                if len(code) >= 12:  # `return mask` and the like say nothing
                    lines.add(code)
    return lines


def test_public_tests_contain_no_solution_code():
    reference = solution_lines()
    assert reference, "found no solution regions in solution/"
    for path in sorted(PUBLIC.rglob("*.py")):
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, f"{path} holds an nbgrader marker"
        for number, line in enumerate(text.splitlines(), 1):
            code = line.strip().split("  #")[0].strip()
            assert code not in reference, f"{path.name}:{number} copies the reference solution: {code!r}"


@pytest.fixture
def student_copy(tmp_path):
    """assignment/ as a student has it after filling in the reference code."""
    folder = tmp_path / "lab"
    shutil.copytree(ASSIGNMENT, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for name in ("attention.py", "mha.py"):
        shutil.copy(SOLUTION / name, folder / name)
    return folder


@pytest.mark.slow  # copies the lab and runs its public tests as a student would
def test_student_loop_tests_the_files_next_to_tests(student_copy, tmp_path):
    junit = tmp_path / "loop.xml"
    run = Run([sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", f"--junitxml={junit}"],
              student_copy, junit)
    assert run.returncode == 0, run.output
    earned, total = run.score
    assert earned == total > 0


@pytest.mark.slow  # copies the lab and runs its public tests as a student would
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_student_make_test_runs_the_public_tests(student_copy):
    # A student's shell, not a nested make: MAKELEVEL/MAKEFLAGS would add "Entering directory" lines.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(["make", "test", f"PYTHON={sys.executable}"], cwd=student_copy, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert FOOTER.fullmatch(proc.stdout.rstrip().splitlines()[-1].strip()), proc.stdout
