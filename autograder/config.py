"""The instructor's settings in grading.yaml: visibility, limits and Gradescope options.

The one place their defaults are written: ``Limits``, what the sandbox applies to student code,
takes its own from ``Config``.
"""
import os
from dataclasses import dataclass

import yaml

from autograder.paths import KIT_ROOT

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


@dataclass(frozen=True)
class Config:
    public_visibility: str = "visible"
    hidden_visibility: str = "after_due_date"
    call_seconds: float = 10.0
    submission_seconds: float = 120.0
    memory_mb: int = 512
    daily_submission_limit: int = 0
    stdout_visibility: str = "hidden"


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
    """Read grading.yaml (missing keys keep their defaults); a bad value is a one-line ValueError."""
    path = path or os.path.join(KIT_ROOT, "grading.yaml")
    if not os.path.exists(path):
        return Config()
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    visibility, limits, gradescope = (raw.get(k) or {} for k in ("visibility", "limits", "gradescope"))
    config = Config(
        public_visibility=visibility.get("public", Config.public_visibility),
        hidden_visibility=visibility.get("hidden", Config.hidden_visibility),
        call_seconds=float(limits.get("call_seconds", Config.call_seconds)),
        submission_seconds=float(limits.get("submission_seconds", Config.submission_seconds)),
        memory_mb=int(limits.get("memory_mb", Config.memory_mb)),
        daily_submission_limit=int(gradescope.get("daily_submission_limit", Config.daily_submission_limit)),
        stdout_visibility=gradescope.get("stdout_visibility", Config.stdout_visibility),
    )
    for name in ("public_visibility", "hidden_visibility", "stdout_visibility"):
        if getattr(config, name) not in VISIBILITIES:
            raise ValueError(f"{path}: {name} must be one of {', '.join(VISIBILITIES)}, got {getattr(config, name)!r}")
    return config
