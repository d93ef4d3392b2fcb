"""grading.yaml, read by config.load_config: the one source of the grader's settings and their defaults."""
import dataclasses

import pytest

from autograder import by_hand
from autograder.config import Config, Limits, load_config
from conftest import ROOT


def write(tmp_path, text):
    path = tmp_path / "grading.yaml"
    path.write_text(text)
    return str(path)


def test_without_a_file_every_setting_keeps_its_default(tmp_path):
    assert load_config(str(tmp_path / "missing.yaml")) == Config()


def test_an_empty_file_keeps_every_default(tmp_path):
    assert load_config(write(tmp_path, "")) == Config()


def test_keys_given_are_read_and_missing_keys_keep_their_defaults(tmp_path):
    config = load_config(write(tmp_path, "limits:\n  memory_mb: 300\n  call_seconds: 2.5\n"
                                         "visibility:\n  hidden: hidden\n"))
    assert (config.memory_mb, config.call_seconds, config.hidden_visibility) == (300, 2.5, "hidden")
    assert config.submission_seconds == Config.submission_seconds, "a key left out keeps its default"
    assert config.public_visibility == Config.public_visibility


def test_numbers_written_as_text_or_integers_become_the_right_type(tmp_path):
    config = load_config(write(tmp_path, "limits:\n  call_seconds: 3\n  memory_mb: '256'\n"
                                         "gradescope:\n  daily_submission_limit: 4\n"))
    assert type(config.call_seconds) is float and config.call_seconds == 3.0
    assert type(config.memory_mb) is int and config.memory_mb == 256
    assert config.daily_submission_limit == 4


def test_a_visibility_gradescope_does_not_know_is_refused_in_one_line(tmp_path):
    path = write(tmp_path, "gradescope:\n  stdout_visibility: sometimes\n")
    with pytest.raises(ValueError) as raised:
        load_config(path)
    message = str(raised.value)
    assert path in message and "stdout_visibility" in message and "'sometimes'" in message, message
    assert "after_due_date" in message, "the message lists the values allowed"


def test_the_kits_own_grading_yaml_loads():
    assert load_config() == load_config(str(ROOT / "grading.yaml"))


def test_the_sandbox_limits_take_their_defaults_from_config():
    limits, config = Limits(), Config()
    assert (limits.call_seconds, limits.memory_mb, limits.submission_seconds) == (
        config.call_seconds, config.memory_mb, config.submission_seconds)


def test_limits_of_a_config_carry_its_call_memory_and_submission_limits():
    limits = Limits.of(Config(call_seconds=4.0, memory_mb=200, submission_seconds=30.0))
    assert (limits.call_seconds, limits.memory_mb, limits.submission_seconds) == (4.0, 200, 30.0)
    assert (limits.max_processes, limits.cpu_seconds) == (Limits.max_processes, Limits.cpu_seconds)


def test_grading_by_hand_uses_grading_yaml_as_make_grade_does(monkeypatch):
    """``pytest tests_hidden --submission PATH`` gets the limits the batch grader's Engine gets."""
    handed = {}

    class NoZygote:
        def __init__(self, level, layers=()):
            pass

        def stop(self):
            pass

    class Recorder:
        def __init__(self, zygote, staged, limits):
            handed["limits"] = limits

        def close(self):
            pass

    configured = Config(call_seconds=7.0, memory_mb=321, submission_seconds=45.0)
    monkeypatch.setattr(by_hand, "load_config", lambda: configured)
    monkeypatch.setattr(by_hand.isolation, "choose_level", lambda: "rlimits")
    monkeypatch.setattr(by_hand.isolation, "detect_layers", lambda level: [])
    monkeypatch.setattr(by_hand.sandbox, "warm_up", lambda: None)
    monkeypatch.setattr(by_hand, "Zygote", NoZygote)
    monkeypatch.setattr(by_hand, "Student", Recorder)
    with by_hand.standalone_student(str(ROOT / "examples" / "submissions" / "reference")):
        pass
    assert handed["limits"] == Limits.of(configured)


def test_limits_are_immutable_a_change_is_a_new_object():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().memory_mb = 4096
