"""`make validate`: one line per problem with the lab, and none on the kit as shipped."""
import shutil

import pytest

from autograder.platforms import generate, validate
from conftest import ROOT


@pytest.fixture
def suite(tmp_path):
    return shutil.copytree(ROOT / "tests_hidden", tmp_path / "tests_hidden",
                           ignore=shutil.ignore_patterns("__pycache__"))


def test_the_shipped_suite_has_no_part_problem():
    assert validate.part_problems() == []


def test_a_part_the_kit_does_not_know_is_named(suite):
    text = (suite / "test_masks.py").read_text()
    (suite / "test_masks.py").write_text(text.replace('pytest.mark.part("masks")', 'pytest.mark.part("maskz")'))
    problems = validate.part_problems(str(suite))
    assert any("'maskz' is not in tests_hidden/parts.py" in line for line in problems), problems
    assert any("'masks' has no tests" in line for line in problems), problems


def test_a_suite_that_does_not_load_is_one_line(suite):
    (suite / "test_masks.py").write_text("this is not python\n")
    (problem,) = validate.part_problems(str(suite))
    assert "could not collect the hidden suite" in problem


def test_a_test_the_stubs_pass_is_named():
    record = {"tests": [{"name": "1.1 causal mask", "passed": True, "points": 3},
                        {"name": "1.2 padding mask", "passed": False, "points": 2},
                        {"name": "a note", "passed": True, "points": 0}]}
    assert validate.stub_problems(record) == ["assignment/ (the stubs): 1.1 causal mask passes on the stubs (3 points)"]


def test_stubs_the_grader_fails_on_are_named():
    (line,) = validate.stub_problems({"grader_error": "SyntaxError in attention.py", "tests": []})
    assert "the grader failed on them: SyntaxError in attention.py" in line


def lab_with_a_changed_source(tmp_path, monkeypatch, name):
    """solution/ and assignment/ copied to ``tmp_path``, a comment added to solution/``name``, and the
    generator pointed there."""
    for folder in ("solution", "assignment"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "solution" / name
    source.write_text(source.read_text() + "\n# changed\n")
    monkeypatch.setattr(generate, "ROOT", tmp_path)


def test_a_stale_generated_file_is_named(tmp_path, monkeypatch):
    lab_with_a_changed_source(tmp_path, monkeypatch, "mha.py")
    assert validate.generated_problems() == ["assignment/mha.py: out of sync with its source: run `make stubs`"]


def test_the_figure_and_the_text_files_are_checked_apart_and_together(tmp_path, monkeypatch):
    """make validate checks the two halves in two processes: together they are every stale file."""
    lab_with_a_changed_source(tmp_path, monkeypatch, "attention.py")
    texts, figure = validate.generated_problems(images=False), validate.generated_problems(images=True)
    assert texts == ["assignment/attention.py: out of sync with its source: run `make stubs`"], texts
    assert figure == [], "the figure is drawn from what the reference computes, which a comment does not change"
    assert sorted(texts + figure) == sorted(validate.generated_problems())


def test_a_check_run_in_a_child_process_sends_its_lines_back():
    assert validate.in_child(lambda: ["one problem", "another"])() == ["one problem", "another"]


def test_a_check_that_fails_in_its_child_process_is_a_problem_not_a_pass():
    def broken():
        raise OSError("disk gone")

    lines = validate.in_child(broken)()
    assert lines and "failed: OSError: disk gone" in lines[0], lines


@pytest.mark.slow  # grades the stubs (and the reference, unless its verdict is cached)
def test_the_kit_as_shipped_validates(capsys):
    assert validate.main([]) == 0, capsys.readouterr().out
