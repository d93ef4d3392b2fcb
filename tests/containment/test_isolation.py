"""isolation's pure parts: the choice of level, and what a sandbox uid could read.

The layers themselves (namespaces, dropped privileges, Landlock) are tested against hostile code
in test_hostile.py; these tests need no sandbox. The sandbox uids are tested in test_uids.py, what
one leaves behind in test_sweep.py.
"""
import os

import pytest

from autograder.containment import isolation


# --- choosing the level ------------------------------------------------------------------------

@pytest.fixture
def no_detection(monkeypatch):
    """Detection would try each level in a throwaway child: here it must not be reached."""
    def refuse():
        raise AssertionError("detect_level ran although AUTOGRADER_ISOLATION chose the level")

    monkeypatch.setattr(isolation, "detect_level", refuse)
    return monkeypatch


def test_without_autograder_isolation_the_strongest_level_that_works_is_chosen(monkeypatch):
    monkeypatch.delenv("AUTOGRADER_ISOLATION", raising=False)
    monkeypatch.setattr(isolation, "detect_level", lambda: "uid")
    assert isolation.choose_level() == "uid"


def test_autograder_isolation_chooses_the_level(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "namespaces")
    assert isolation.choose_level() == "namespaces"


def test_an_unknown_level_is_refused_with_the_levels_there_are(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "chroot")
    with pytest.raises(SystemExit) as raised:
        isolation.choose_level()
    assert "chroot" in str(raised.value.code) and "namespaces, uid, rlimits" in str(raised.value.code)


def test_rlimits_is_refused_to_root_who_would_run_student_code_as_root(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "rlimits")
    no_detection.setattr(isolation.os, "getuid", lambda: 0)
    with pytest.raises(isolation.CannotIsolate, match="as root"):
        isolation.choose_level()


def test_rlimits_is_allowed_to_an_unprivileged_grader(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "rlimits")
    no_detection.setattr(isolation.os, "getuid", lambda: 1000)
    assert isolation.choose_level() == "rlimits"


def test_the_uid_level_needs_root(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "uid")
    no_detection.setattr(isolation.os, "getuid", lambda: 1000)
    with pytest.raises(isolation.CannotIsolate, match="needs root"):
        isolation.choose_level()


# --- what a sandbox uid could read -------------------------------------------------------------

def test_a_folder_others_may_read_is_exposed(open_tmp):
    (open_tmp / "kit").mkdir(mode=0o755)
    os.chmod(open_tmp / "kit", 0o755)  # whatever the umask
    assert isolation.exposed_to_sandbox([str(open_tmp / "kit")]) == [str(open_tmp / "kit")]


def test_a_folder_closed_to_others_is_not_exposed(open_tmp):
    (open_tmp / "kit").mkdir()
    os.chmod(open_tmp / "kit", 0o750)
    assert isolation.exposed_to_sandbox([str(open_tmp / "kit")]) == []


def test_a_readable_folder_inside_a_closed_one_is_not_exposed(open_tmp):
    (open_tmp / "closed" / "kit").mkdir(parents=True)
    os.chmod(open_tmp / "closed", 0o700)
    os.chmod(open_tmp / "closed" / "kit", 0o755)
    assert isolation.exposed_to_sandbox([str(open_tmp / "closed" / "kit")]) == []


def test_a_readable_file_is_exposed_and_a_missing_path_is_not(open_tmp):
    (open_tmp / "grades.csv").write_text("id,score\n")
    os.chmod(open_tmp / "grades.csv", 0o644)
    paths = [str(open_tmp / "grades.csv"), str(open_tmp / "missing"), ""]
    assert isolation.exposed_to_sandbox(paths) == [str(open_tmp / "grades.csv")]
