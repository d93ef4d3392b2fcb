"""The instructor's settings in grading.yaml: visibility, limits, Gradescope options and late work.

Each setting is declared once, below: its place in grading.yaml, its default, what it means and
which values it takes. ``load_config`` reads the file against these declarations and refuses, in
one line naming the file and the key, anything else: an unknown key (a typo would otherwise keep
the default unnoticed), a value of the wrong type, or one out of range. ``Limits``, what the
sandbox applies to student code, takes its defaults from ``Config``.
"""
import dataclasses
import datetime
import os
import re
from dataclasses import dataclass, field

import yaml

from autograder.paths import KIT_ROOT

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


class ConfigError(ValueError):
    """grading.yaml says something the grader cannot use; the message is one line."""


def setting(key, default, help, choices=None, minimum=None, maximum=None, check=None, grades=True):
    """A ``Config`` field read from grading.yaml's ``key`` ("section.name"); ``check``: a further test of the
    value, returning what is wrong with it or None. ``grades``: whether the value decides a local report (what
    ``make grade`` writes); one that does not (Gradescope's own options, the late policy applied after grading)
    never makes a finished report regrade (``grading.fingerprint``)."""
    return field(default=default, metadata={"key": key, "help": help, "choices": choices, "minimum": minimum,
                                            "maximum": maximum, "check": check, "grades": grades})


TIME = re.compile(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*(Z|[+-]\d\d(?::?\d\d)?)?$")


def parse_time(value):
    """An aware datetime from grading.yaml, extensions.csv or Gradescope's metadata, or None: the one reader of a
    time, so a due date grading.yaml accepts is one the late policy applies (23:59:60 or +25:00 is neither).

    Accepts a datetime (PyYAML's reading of a timestamp) or text with a date and a time: ISO 8601
    ("2026-10-01 23:59", "2026-10-01T23:59:00-07:00") or Rails' "2025-10-14 22:41:07.334051000 -07:00".
    A time without an offset is the machine's local time; a date alone is refused (which minute?)."""
    if isinstance(value, datetime.datetime):
        when = value
    else:
        match = TIME.match(value.strip()) if isinstance(value, str) else None
        if not match:
            return None
        date, clock, fraction, zone = match.groups()
        text = f"{date}T{clock}" + (f".{fraction[:6].ljust(6, '0')}" if fraction else "")
        text += "+00:00" if zone == "Z" else (zone or "")
        try:
            when = datetime.datetime.fromisoformat(text)
        except ValueError:
            return None
    return when if when.tzinfo else when.astimezone()


def _date_and_time(text):
    """What is wrong with a due date, or None; empty means no due date. Read by ``parse_time``, as the late
    policy reads it (reports.lateness)."""
    if not text.strip() or parse_time(text) is not None:
        return None
    return "a date and a time, such as 2026-10-01 23:59 or 2026-10-01 23:59 -07:00"


@dataclass(frozen=True)
class Config:
    public_visibility: str = setting(
        "visibility.public", "visible", "when Gradescope shows students the tests marked public (whole tests)",
        choices=VISIBILITIES)
    hidden_visibility: str = setting(
        "visibility.hidden", "after_due_date",
        "when Gradescope shows students the other tests (whole tests; the total waits for them)", choices=VISIBILITIES)
    call_seconds: float = setting("limits.call_seconds", 10.0, "seconds of CPU time one call of student code may take",
                                  minimum=0.1)
    submission_seconds: float = setting("limits.submission_seconds", 120.0,
                                        "seconds of CPU time all calls of one submission may take together", minimum=1)
    memory_mb: int = setting("limits.memory_mb", 512, "MiB of memory a submission's processes may use", minimum=64)
    daily_submission_limit: int = setting(
        "gradescope.daily_submission_limit", 0, "graded submissions per student per 24 h (0: no limit)", minimum=0,
        grades=False)  # counted on Gradescope only, from its previous submissions
    stdout_visibility: str = setting("gradescope.stdout_visibility", "hidden",
                                     "when students see the grader's console log", choices=VISIBILITIES,
                                     grades=False)  # Gradescope's results.json only
    late_due: str = setting("late.due", "", "the due date; empty: no late handling", check=_date_and_time,
                            grades=False)  # the late policy is applied after grading (reports.lateness)
    late_percent_per_day: float = setting("late.percent_per_day", 0.0,
                                          "percent of the raw total taken per day late", minimum=0, maximum=100,
                                          grades=False)
    late_cutoff_days: float = setting("late.cutoff_days", 0.0,
                                      "days after the due date past which the total is 0 (0: no cut-off)", minimum=0,
                                      grades=False)
    # Moodle's grading worksheet (reports.classbook.moodle_import_csv): its importer skips a grade above the
    # assignment's maximum, and finds its columns by their names in the site's language.
    moodle_max_grade: float = setting("moodle.max_grade", 0.0,
                                      "the Moodle assignment's Maximum grade (0: the lab's maximum); a total above "
                                      "it is capped in import-moodle.csv, and named", minimum=0, grades=False)
    moodle_identifier: str = setting("moodle.identifier", "Identifier", "Moodle's column for the participant",
                                     grades=False)
    moodle_participant: str = setting("moodle.participant", "Participant ",
                                      "what Moodle writes before a participant id in that column", grades=False)
    moodle_grade: str = setting("moodle.grade", "Grade", "Moodle's grade column", grades=False)
    moodle_last_modified: str = setting("moodle.last_modified", "Last modified (grade)",
                                        "Moodle's column for when the grade last changed", grades=False)


SETTINGS = {f.metadata["key"]: f for f in dataclasses.fields(Config)}


# Inside a memory-limited container (Gradescope's) the grader keeps this much beside a child for itself.
GRADER_MARGIN_MB = 128
# The time limits count the child's CPU time; one that sleeps or blocks is stopped by a wall clock this
# many times the limit (a call's, and the submission's), which a call slowed by a loaded machine stays under.
WALL_BACKSTOP = 5


@dataclass(frozen=True)
class Limits:
    """What student code may take, as the sandbox applies it: grading.yaml's limits (``Limits.of(config)``;
    the defaults are ``Config``'s), and the per-child ones the instructor does not set."""
    call_seconds: float = Config.call_seconds  # one call
    memory_mb: int = Config.memory_mb  # address space one child may add on top of torch
    submission_seconds: float = Config.submission_seconds  # all calls of one submission together
    max_processes: int = 32
    cpu_seconds: int = 120

    @classmethod
    def of(cls, config):
        return cls(call_seconds=config.call_seconds, memory_mb=config.memory_mb,
                   submission_seconds=config.submission_seconds)


def load_config(path=None):
    """Read grading.yaml (missing keys keep their defaults); anything else is a one-line ``ConfigError``."""
    path = path or os.path.join(KIT_ROOT, "grading.yaml")
    if not os.path.exists(path):
        return Config()
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read it: {' '.join(str(err).split())}") from None
    values = {}
    for key, value in _flatten(raw or {}, path).items():
        if key not in SETTINGS:
            raise ConfigError(f"{path}: unknown setting {key!r} (known: {', '.join(SETTINGS)})")
        setting_field = SETTINGS[key]
        values[setting_field.name] = _checked(path, key, value, setting_field)
    return Config(**values)


def _flatten(raw, path):
    """{"section.name": value} from grading.yaml's two levels."""
    if type(raw) is not dict:
        raise ConfigError(f"{path}: expected sections (visibility, limits, gradescope, late, moodle), "
                          f"got a {type(raw).__name__}")
    flat = {}
    for section, entries in raw.items():
        if entries is None:
            continue
        if type(entries) is not dict:
            raise ConfigError(f"{path}: {section} must hold settings (name: value), got {entries!r}")
        flat.update({f"{section}.{name}": value for name, value in entries.items()})
    return flat


def _checked(path, key, value, setting_field):
    """``value`` as the setting's type, within its choices or minimum."""
    meta, kind = setting_field.metadata, type(setting_field.default)
    try:
        if type(value) is bool or value is None:
            raise ValueError
        converted = kind(value) if kind is not int else int(str(value).strip())
    except (TypeError, ValueError):
        raise ConfigError(f"{path}: {key} must be {'an' if kind is int else 'a'} {_TYPE_WORDS[kind]} "
                          f"({meta['help']}), got {value!r}") from None
    if meta["choices"] and converted not in meta["choices"]:
        raise ConfigError(f"{path}: {key} must be one of {', '.join(meta['choices'])}, got {value!r}")
    if meta["minimum"] is not None and converted < meta["minimum"]:
        raise ConfigError(f"{path}: {key} must be at least {meta['minimum']:g} ({meta['help']}), got {value!r}")
    if meta["maximum"] is not None and converted > meta["maximum"]:
        raise ConfigError(f"{path}: {key} must be at most {meta['maximum']:g} ({meta['help']}), got {value!r}")
    wrong = meta["check"] and meta["check"](converted)
    if wrong:
        raise ConfigError(f"{path}: {key} must be {wrong}, got {converted!r}")  # a date as written, not date(...)
    return converted


_TYPE_WORDS = {int: "integer", float: "number", str: "word"}
