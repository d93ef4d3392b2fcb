"""grading.yaml, read by config.load_config: the one source of the grader's settings and their defaults."""
import dataclasses

import pytest

from autograder.grading import by_hand
from autograder.config import SETTINGS, Config, ConfigError, Limits, load_config
from conftest import ROOT, run_grader  # at import: a test that ran tests_hidden/ in-process leaves its conftest as "conftest"


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


# --- what grading.yaml may not say ---------------------------------------------------------------

def refused(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert path in message and "\n" not in message, f"not one line naming the file: {message!r}"
    return message


def test_a_misspelt_key_is_refused_not_left_at_its_default(tmp_path):
    message = refused(tmp_path, "limits:\n  memory_MB: 300\n")
    assert "'limits.memory_MB'" in message and "limits.memory_mb" in message, "names the typo and the known keys"


def test_an_unknown_section_is_refused(tmp_path):
    assert "'limit.call_seconds'" in refused(tmp_path, "limit:\n  call_seconds: 3\n")


def test_a_value_of_the_wrong_type_names_its_key_and_meaning(tmp_path):
    message = refused(tmp_path, "limits:\n  memory_mb: lots\n")
    assert "limits.memory_mb must be an integer" in message and "'lots'" in message and "MiB" in message


@pytest.mark.parametrize("text", ["limits:\n  memory_mb: 2.5\n", "limits:\n  call_seconds: true\n",
                                  "limits:\n  call_seconds:\n    - 1\n"])
def test_a_fraction_a_boolean_or_a_list_is_not_a_number_here(tmp_path, text):
    assert "must be" in refused(tmp_path, text)


@pytest.mark.parametrize("text, key", [("limits:\n  call_seconds: 0\n", "limits.call_seconds"),
                                       ("limits:\n  memory_mb: 16\n", "limits.memory_mb"),
                                       ("gradescope:\n  daily_submission_limit: -1\n", "gradescope.daily_submission_limit")])
def test_a_limit_out_of_range_is_refused(tmp_path, text, key):
    assert f"{key} must be at least" in refused(tmp_path, text)


def test_broken_yaml_is_one_line(tmp_path):
    assert "cannot read it" in refused(tmp_path, "limits: [unclosed\n")


@pytest.mark.parametrize("text", ["- limits\n", "limits: 5\n"])
def test_a_file_not_made_of_sections_is_refused(tmp_path, text):
    refused(tmp_path, text)


def test_every_setting_is_declared_once_with_its_key_and_help():
    assert len(SETTINGS) == len(dataclasses.fields(Config))
    for key, declared in SETTINGS.items():
        assert key.count(".") == 1 and declared.metadata["help"], f"{declared.name} lacks a key or help text"


def test_the_kits_grading_yaml_shows_every_setting():
    """Instructors read grading.yaml, not config.py: every knob is there, with its current value."""
    import yaml

    raw = yaml.safe_load((ROOT / "grading.yaml").read_text())
    written = {f"{section}.{name}" for section, entries in raw.items() for name in entries}
    assert written == set(SETTINGS), f"grading.yaml lacks {sorted(set(SETTINGS) - written)}"


def test_make_grade_with_a_broken_config_stops_in_one_line_before_grading(tmp_path):

    config = write(tmp_path, "limits:\n  memory_mb: lots\n")
    out = tmp_path / "out"
    run = run_grader("grade", ROOT / "examples" / "submissions" / "reference", "--out", out, "--config", config)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: ") and "limits.memory_mb" in run.stderr, run.stderr
    assert not list(out.glob("*/results.json")), "a submission was graded with a config that was refused"


def test_a_config_file_that_does_not_exist_is_named(tmp_path):

    run = run_grader("grade", ROOT / "examples" / "submissions" / "reference", "--out", tmp_path / "out",
                     "--config", tmp_path / "nope.yaml")
    assert run.returncode == 2 and "--config" in run.stderr and "no such file" in run.stderr, run.stderr


def test_grading_with_a_config_file_uses_its_limits(tmp_path):

    config = write(tmp_path, "visibility:\n  hidden: visible\n")
    run = run_grader("grade", ROOT / "examples" / "submissions" / "reference", "--out", tmp_path / "out",
                     "--config", config)
    assert run.returncode == 0, run.stderr[-2000:]
    import json

    report = json.loads((tmp_path / "out" / "reference" / "results.json").read_text())
    assert {t["visibility"] for t in report["tests"]} == {"visible"}, "the hidden tests kept grading.yaml's visibility"


# --- late work (issue 33, item 4) ---------------------------------------------------------------------

def test_the_late_policy_is_read_from_its_section(tmp_path):
    config = load_config(write(tmp_path, "late:\n  due: 2026-10-01 23:59\n  percent_per_day: 10\n  cutoff_days: 3\n"))
    assert (config.late_due, config.late_percent_per_day, config.late_cutoff_days) == ("2026-10-01 23:59", 10.0, 3.0)


def test_a_due_date_yaml_reads_as_a_timestamp_is_kept_with_its_offset(tmp_path):
    config = load_config(write(tmp_path, "late:\n  due: 2026-10-01 23:59:00 -07:00\n"))
    from autograder.reports.lateness import Policy
    assert Policy.of(config).due.isoformat() == "2026-10-01T23:59:00-07:00"


@pytest.mark.parametrize("due", ["2026-10-01", "next friday", "2026-10-01 25:99"])
def test_a_due_date_without_a_time_or_not_a_date_is_refused_in_one_line(tmp_path, due):
    message = refused(tmp_path, f"late:\n  due: {due}\n")
    assert "late.due must be a date and a time" in message and "\n" not in message


@pytest.mark.parametrize("due", ["2026-10-01 23:59:60", "2026-10-01 23:59 +25:00", "2026-02-30 12:00"])
def test_a_due_date_the_late_policy_could_not_apply_is_refused_at_load(tmp_path, due):
    """One reader for grading.yaml and the policy (config.parse_time): a value accepted here is never turned
    into no due date later, which would switch every late penalty off without a word."""
    message = refused(tmp_path, f"late:\n  due: \"{due}\"\n")
    assert "late.due must be a date and a time" in message and "\n" not in message


@pytest.mark.parametrize("due", ["2026-10-01 23:59", "2026-10-01T23:59:30Z", "2026-10-01 23:59 -0700",
                                 "2025-10-14 22:41:07.334051000 -07:00"])
def test_every_due_date_grading_yaml_accepts_is_one_the_late_policy_applies(tmp_path, due):
    from autograder.reports.lateness import Policy
    assert Policy.of(load_config(write(tmp_path, f"late:\n  due: \"{due}\"\n"))).due is not None


def test_a_percentage_past_100_is_refused(tmp_path):
    assert "late.percent_per_day must be at most 100" in refused(tmp_path, "late:\n  percent_per_day: 150\n")


def test_changing_the_late_policy_regrades_nothing():
    from autograder.grading import fingerprint
    tests = str(ROOT / "tests_hidden")
    late = dataclasses.replace(Config(), late_due="2026-10-01 23:59", late_percent_per_day=10)
    assert fingerprint.grader_parts(late, "uid", tests)["settings"] == \
        fingerprint.grader_parts(Config(), "uid", tests)["settings"]
