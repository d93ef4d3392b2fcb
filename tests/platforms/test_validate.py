"""`make validate`: one line per problem with the lab, and none on the kit as shipped."""
import os
import shutil
import sys

import pytest

from autograder.platforms import generate, validate
from conftest import ROOT, copy_of_the_generated_files


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
    copy_of_the_generated_files(tmp_path)
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


def test_a_stale_total_in_a_lab_text_is_named_as_out_of_sync(tmp_path, monkeypatch):
    """Other totals than the texts state (whatever this term's suite makes): the lab text's extra-credit line
    and the samples' README are stale."""
    from autograder.grading import suite_points

    monkeypatch.setattr(suite_points, "core_max", lambda *args: 1005)
    monkeypatch.setattr(suite_points, "extra_max", lambda *args: 7)
    stale = {str(path.relative_to(generate.ROOT)) for path in generate.generate(check=True, images=False, nbgrader=False)}
    assert {"assignment/README.md", "examples/submissions/README.md"} <= stale, stale


def test_the_note_when_the_built_gradescope_zip_has_another_total(monkeypatch, capsys):
    from autograder.grading.suite_points import core_max
    from autograder.platforms import gradescope_zip

    monkeypatch.setattr(gradescope_zip, "built_total", lambda: core_max() - 5)
    validate.print_gradescope_total_change()
    out = capsys.readouterr().out
    assert out.startswith("note: the total to enter on Gradescope changed") and f"enter {core_max():g}" in out, out


@pytest.fixture
def kit_copy(tmp_path):
    """The inputs of the generated files' verdict, copied: the lab's folders, the parts table, the manifest, the code."""
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in validate.GENERATED_FOLDERS:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=ignore)
    for name in validate.GENERATED_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(validate.CODE, tmp_path / "code", ignore=ignore)
    return tmp_path


@pytest.mark.parametrize("edited", [
    "solution/attention.py",  # a source of the stubs and the figure
    "solution/playground.ipynb",  # the notebook's source
    "assignment/tests/cases.py",  # the case table of the otter checks
    "assignment/tests/checks.py",  # the case table's neighbour, and the regions' target
    "assignment/README.md",  # the lab text (the rule's tables)
    "assignment/submit.py",  # a target itself: the rule, generated
    "assignment/mha.py",  # a target itself
    "tests_hidden/parts.py",  # the parts table
    "tests_hidden/test_masks.py",  # the suite: its points are the totals the texts state
    "examples/submissions/README.md",  # a target of the totals
    "generated.sha256",  # the manifest
    "code/platforms/generate.py",  # the generator and its templates
    "code/reports/lab_figure.py",  # the figure's drawing
    "code/judging/catalogue.py",  # a region's source
    "code/rule/tables.py",  # the rule's tables: the source of submit.py and of the lab text's tables
])
def test_editing_any_input_of_the_generated_files_changes_their_verdicts_key(kit_copy, edited):
    before = validate.generated_key(kit_copy, kit_copy / "code")
    path = kit_copy / edited
    path.write_bytes(path.read_bytes() + b"\n")
    assert validate.generated_key(kit_copy, kit_copy / "code") != before


def test_a_new_file_among_the_checks_changes_their_verdicts_key(kit_copy):
    """A stray otter check (a part renamed in the table) is a problem the cached verdict must not hide."""
    before = validate.generated_key(kit_copy, kit_copy / "code")
    (kit_copy / "assignment" / "checks" / "renamed_part.py").write_text("")
    assert validate.generated_key(kit_copy, kit_copy / "code") != before


@pytest.mark.parametrize("package", validate.GENERATED_BY)
def test_another_version_of_a_rendering_package_changes_the_verdicts_key(kit_copy, monkeypatch, package):
    from autograder.grading import fingerprint

    before = validate.generated_key(kit_copy, kit_copy / "code")
    real = fingerprint._version
    monkeypatch.setattr(fingerprint, "_version", lambda name: "0.0-other" if name == package else real(name))
    assert validate.generated_key(kit_copy, kit_copy / "code") != before


def test_an_unchanged_lab_has_the_same_key_and_a_remembered_verdict_is_found(kit_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key = validate.generated_key(kit_copy, kit_copy / "code")
    assert not validate.generated_in_sync_known(key)
    validate.remember_generated_in_sync(key)
    assert validate.generated_in_sync_known(validate.generated_key(kit_copy, kit_copy / "code"))


def test_a_stale_file_is_never_remembered_as_in_sync(monkeypatch, tmp_path):
    """main() caches only the verdict "all in sync": a run that found a stale file checks again next time."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    stale = ["assignment/mha.py: out of sync with its source: run `make stubs`"]
    monkeypatch.setattr(validate, "generated_problems", lambda images=None: stale if images else [])
    monkeypatch.setattr(validate, "grading_problems", lambda *args: [])
    assert validate.main([]) == 1
    assert not validate.generated_in_sync_known(validate.generated_key())


def test_a_remembered_verdict_skips_the_generated_files_check(monkeypatch, tmp_path):
    """With every input as when all was last found in sync, main() does not check the files again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    validate.remember_generated_in_sync(validate.generated_key())
    stale = ["assignment/mha.py: out of sync with its source: run `make stubs`"]
    monkeypatch.setattr(validate, "generated_problems", lambda images=None: stale)  # what a check would say
    monkeypatch.setattr(validate, "grading_problems", lambda *args: [])
    assert validate.main([]) == 0


LIGHT_RENDER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from autograder.platforms import generate
generate.import_clearing_preprocessors_only()
print(json.dumps([generate.render_module(generate.ROOT / "solution" / "mha.py"),
                  generate.render_notebook(generate.ROOT / "solution" / "playground.ipynb"),
                  "nbgrader.apps" in sys.modules]))
"""


def test_nbgrader_preprocessors_imported_alone_render_what_the_whole_of_nbgrader_renders():
    """make validate's text check imports only nbgrader's two preprocessors (in its child process, which ends)."""
    import json
    import subprocess

    run = subprocess.run([sys.executable, "-c", LIGHT_RENDER, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    *rendered, whole_package_imported = json.loads(run.stdout)
    assert not whole_package_imported
    assert rendered == [generate.render_module(ROOT / "solution" / "mha.py"),
                        generate.render_notebook(ROOT / "solution" / "playground.ipynb")]


def test_nbgraders_check_in_its_child_process_names_a_stale_file(tmp_path, monkeypatch):
    copy_of_the_generated_files(tmp_path)
    source = tmp_path / "solution" / "playground.ipynb"
    source.write_text(source.read_text().replace("attention", "attention!", 1))
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    assert validate.in_child(validate.nbgrader_problems)() == [
        "assignment/playground.ipynb: out of sync with its source: run `make stubs`"]


def test_the_restarted_check_forks_its_zygote_in_the_allow_listed_environment_then_reads_the_instructors_back():
    """The zygote is started before the instructor's environment is read back (from an anonymous file)."""
    from autograder.containment.zygote import ENV_PASSED_THROUGH, child_environment
    from autograder.platforms import gradescope

    instructor = {"HOME": "/home/instructor", "AG_SECRET": "a=b", "PATH": "/usr/bin"}
    # What this machine's processor needs (OPENBLAS_*, where set) is the instructor's too, as in a real shell.
    instructor.update({k: os.environ[k] for k in ENV_PASSED_THROUGH if k in os.environ})
    fd = os.memfd_create("test-environment", 0)
    os.write(fd, b"\0".join(f"{k}={v}".encode() for k, v in instructor.items()))
    os.lseek(fd, 0, os.SEEK_SET)

    allow_listed = child_environment()  # read from this process's environment, before run() clears it

    def run():
        seen = {}
        os.environ.clear()
        os.environ.update(allow_listed)  # as the restart exec'd it
        gradescope.start_zygote = lambda settings: seen.setdefault("zygote", dict(os.environ))
        validate.generated_in_sync_known = lambda key: True  # the early check: quick
        validate.main = lambda zygote, early: seen.setdefault("check", dict(os.environ)) and early() and 0
        validate.restarted(fd, "{}")
        return [seen["zygote"], seen["check"]]

    at_fork, checking = validate.in_child(run)()
    os.close(fd)
    assert at_fork == allow_listed
    assert checking == instructor


def test_nbgraders_files_and_all_the_others_are_checked_apart_and_together(tmp_path, monkeypatch):
    """The early check (nbgrader's files, no torch) and the others' child: together they are every stale file."""
    copy_of_the_generated_files(tmp_path)
    source = tmp_path / "solution" / "mha.py"
    source.write_text(source.read_text() + "\n# changed\n")
    (tmp_path / "assignment" / "checks" / "renamed_part.py").write_text("")
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    nbgraders, others = validate.in_child(validate.nbgrader_problems)(), validate.other_problems()
    assert nbgraders == ["assignment/mha.py: out of sync with its source: run `make stubs`"], nbgraders
    assert others == ["assignment/checks/renamed_part.py: out of sync with its source: run `make stubs`"], others
    assert sorted(nbgraders + others) == sorted(validate.generated_problems())


NBGRADER_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from autograder.platforms import validate
print(json.dumps([validate.nbgrader_problems(), "torch" in sys.modules]))
"""


def test_nbgraders_check_needs_no_torch():
    """So it runs beside the torch import of `make validate`, before the zygote is forked."""
    import json
    import subprocess

    run = subprocess.run([sys.executable, "-c", NBGRADER_CHECK, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == [[], False]


@pytest.mark.slow  # grades the reference and the stubs, checks every generated file
def test_the_command_restarted_with_the_allow_listed_environment_validates_the_kit_as_shipped(tmp_path):
    """`python -m autograder.platforms.validate` restarts itself and forks its zygote: the check is the same."""
    import subprocess

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "AG_INSTRUCTOR_ONLY": "kept"}
    run = subprocess.run([sys.executable, "-m", "autograder.platforms.validate"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "could not" not in run.stderr, run.stderr  # neither the restart nor the fork fell back
