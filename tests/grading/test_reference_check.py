"""A hidden suite is trusted only after the reference passes it (autograder/grading/reference_check.py)."""
import pytest

from autograder.grading import reference_check
from autograder.grading.reference_check import SuiteBroken, failures_of, verify

PARTS = {"suite": "s", "reference": "r", "settings": "c", "engine": "e"}


def result(name, passed=True, grader_error=False, message="", where="tests_hidden/test_masks.py:12", points=2.0):
    return {"name": name, "nodeid": f"tests_hidden/test_masks.py::{name}", "passed": passed, "points": points,
            "grader_error": grader_error, "message": message, "where": where}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_a_reference_that_passes_every_test_passes():
    assert failures_of({"tests": [result("a"), result("b")]}) == []


def test_a_test_that_errors_on_the_reference_is_named_with_file_line_and_error():
    record = {"tests": [result("a"), result("Causal mask", passed=False, grader_error=True,
                                       message="grader error: NameError: name 'studnet' is not defined")]}
    assert failures_of(record) == ["tests_hidden/test_masks.py:12: Causal mask errors on the reference: "
                                   "grader error: NameError: name 'studnet' is not defined"]


def test_a_test_the_reference_fails_is_named_as_failing():
    [line] = failures_of({"tests": [result("Padding", passed=False, message="mask differs at (0, 1)")]})
    assert "Padding fails on the reference: mask differs at (0, 1)" in line


def test_a_suite_that_did_not_run_is_a_failure():
    assert failures_of({"grader_error": "SuiteError: the hidden suite does not load: x.py:3: SyntaxError"}) == \
        ["SuiteError: the hidden suite does not load: x.py:3: SyntaxError"]


def test_an_empty_suite_is_a_failure():
    assert failures_of({"tests": []}) == ["the hidden suite has no tests"]


def test_a_passing_verdict_is_kept_and_not_graded_again():
    calls = []

    def grade():
        calls.append(1)
        return {"tests": [result("a"), result("b", points=3.0)]}

    first, second = verify(PARTS, grade), verify(PARTS, grade)
    assert calls == [1] and first == second and first["points"] == 5.0


def test_another_grader_is_verified_again():
    calls = []

    def grade():
        calls.append(1)
        return {"tests": [result("a")]}

    verify(PARTS, grade)
    verify(dict(PARTS, suite="changed"), grade)
    assert calls == [1, 1]


def test_a_failing_verdict_raises_and_is_never_kept():
    calls = []

    def grade():
        calls.append(1)
        return {"tests": [result("a", passed=False, message="wrong")]}

    for _ in range(2):
        with pytest.raises(SuiteBroken) as raised:
            verify(PARTS, grade)
        assert "a fails on the reference: wrong" in raised.value.message()
    assert calls == [1, 1]


def test_a_forged_cache_entry_for_another_key_is_not_taken(tmp_path):
    verify(PARTS, lambda: {"tests": [result("a")]})
    other = reference_check.grader_key(dict(PARTS, suite="changed"))
    (tmp_path / "cache" / "attention-kit" / "verified-reference" / f"{other}.json").write_text(
        (tmp_path / "cache" / "attention-kit" / "verified-reference" /
         f"{reference_check.grader_key(PARTS)}.json").read_text())
    with pytest.raises(SuiteBroken):
        verify(dict(PARTS, suite="changed"), lambda: {"tests": [result("a", passed=False)]})


def test_a_reference_stopped_by_the_wall_clock_is_reported_as_too_slow_not_as_failing():
    record = {"tests": [result("Tiled", passed=False, message="tiled_attention gave no answer within 50 s of "
                                                               "wall-clock time")], "wall_timeouts": 1}
    with pytest.raises(SuiteBroken) as raised:
        verify(PARTS, lambda: record)
    first_line = raised.value.message().splitlines()[0]
    assert first_line.startswith("the reference solution was too slow on this machine") and "fails" not in first_line


def test_a_reference_that_fails_within_its_cpu_limits_is_reported_as_failing():
    with pytest.raises(SuiteBroken) as raised:
        verify(PARTS, lambda: {"tests": [result("a", passed=False, message="wrong")], "wall_timeouts": 0})
    assert raised.value.message().startswith("the hidden suite fails on the reference solution")
