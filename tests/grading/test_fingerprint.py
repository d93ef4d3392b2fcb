"""A finished report is reused only when everything that decided it is unchanged (autograder/grading/fingerprint.py)."""
import dataclasses
import os
import shutil

import pytest

from autograder.grading import fingerprint
from autograder.config import Config
from conftest import ROOT

SUITE = ROOT / "tests_hidden"


@pytest.fixture
def submission(tmp_path):
    folder = tmp_path / "alice"
    shutil.copytree(ROOT / "examples" / "submissions" / "reference", folder)
    return folder


def results_for(fingerprint_, **extra):
    return {"extra_data": {"grader_error": False, "fingerprint": fingerprint_, **extra}}


def graded(submission, config=Config(), level="uid", suite=SUITE):
    return fingerprint.of_submission(fingerprint.grader_parts(config, level, str(suite)), str(submission))


def test_the_same_files_and_grader_reuse_the_report(submission):
    assert fingerprint.stale_because(results_for(graded(submission)), graded(submission)) is None


def test_a_changed_submission_file_is_regraded(submission):
    before = graded(submission)
    (submission / "mha.py").write_text((submission / "mha.py").read_text() + "\n# edited\n")
    assert fingerprint.stale_because(results_for(before), graded(submission)) == "the submission's files changed"


def test_a_file_added_to_the_submission_is_regraded(submission):
    before = graded(submission)
    (submission / "notes.txt").write_text("new")
    assert fingerprint.stale_because(results_for(before), graded(submission)) == "the submission's files changed"


def test_a_changed_hidden_test_is_regraded(submission, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("__pycache__"))
    before = graded(submission, suite=suite)
    masks = suite / "test_masks.py"
    masks.write_text(masks.read_text().replace("@pytest.mark.points(3)", "@pytest.mark.points(4)", 1))
    assert fingerprint.stale_because(results_for(before), graded(submission, suite=suite)) == \
        "the hidden suite changed"


def test_a_compiled_cache_in_the_suite_changes_nothing(submission, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("__pycache__"))
    before = graded(submission, suite=suite)
    (suite / "__pycache__").mkdir()
    (suite / "__pycache__" / "test_masks.cpython-311.pyc").write_bytes(b"\0")
    assert fingerprint.stale_because(results_for(before), graded(submission, suite=suite)) is None


def test_a_changed_setting_is_regraded(submission):
    before = graded(submission)
    after = graded(submission, config=dataclasses.replace(Config(), call_seconds=11.0))
    assert fingerprint.stale_because(results_for(before), after).startswith("the settings changed")


def test_another_isolation_level_is_regraded(submission):
    before = graded(submission, level="namespaces")
    assert fingerprint.stale_because(results_for(before), graded(submission)).startswith("the settings changed")


@pytest.mark.parametrize("part, reason", [("reference", "the reference solution changed"),
                                          ("engine", "the grader changed")])
def test_a_changed_reference_or_engine_is_regraded(submission, part, reason):
    before = dict(graded(submission), **{part: "0" * 64})
    assert fingerprint.stale_because(results_for(before), graded(submission)).startswith(reason)


def test_a_report_without_a_fingerprint_is_regraded(submission):
    assert "no fingerprint" in fingerprint.stale_because({"extra_data": {"grader_error": False}}, graded(submission))


def test_a_report_the_grader_failed_on_is_regraded(submission):
    failed = results_for(graded(submission), grader_error=True)
    assert fingerprint.stale_because(failed, graded(submission)) == "the grader failed on it last time"


def test_a_missing_report_is_graded(submission):
    assert fingerprint.stale_because(None, graded(submission)) == "not graded yet"


def test_a_zip_submission_is_fingerprinted_by_its_bytes(tmp_path, submission):
    archive = shutil.make_archive(str(tmp_path / "alice"), "zip", submission)
    before = graded(archive)
    with open(archive, "ab") as f:
        f.write(b"\0")
    assert fingerprint.stale_because(results_for(before), graded(archive)) == "the submission's files changed"


def test_a_submission_over_the_bound_is_graded_every_time(submission, monkeypatch):
    monkeypatch.setattr(fingerprint, "MAX_SUBMISSION_BYTES", 100)
    print_ = graded(submission)
    assert print_["submission"] is None
    assert "too large" in fingerprint.stale_because(results_for(print_), print_)


def test_a_fifo_in_a_submission_is_never_opened(submission):
    os.mkfifo(submission / "pipe")  # opening it to read would block until a writer came
    assert graded(submission)["submission"] is not None


def test_a_symlink_is_fingerprinted_by_its_target_not_followed(submission, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("one")
    (submission / "link").symlink_to(secret)
    before = graded(submission)
    secret.write_text("two")
    assert graded(submission) == before


@pytest.mark.parametrize("key, value", [("gradescope.daily_submission_limit", 3),
                                        ("gradescope.stdout_visibility", "visible")])
def test_a_setting_only_gradescope_uses_is_no_reason_to_regrade(submission, key, value):
    from autograder.config import SETTINGS

    changed = dataclasses.replace(Config(), **{SETTINGS[key].name: value})
    assert fingerprint.stale_because(results_for(graded(submission)), graded(submission, config=changed)) is None
