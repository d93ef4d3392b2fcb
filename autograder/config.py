"""The instructor's settings in grading.yaml: visibility, limits and Gradescope options.

The one place their defaults are written: ``sandbox.Limits`` takes its own from ``Config``.
"""
import os
from dataclasses import dataclass

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


def load_config(path=None):
    """Read grading.yaml (missing keys keep their defaults); a bad value is a one-line ValueError."""
    import yaml  # here, not above: the sandbox takes its defaults from Config and never reads the file

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
