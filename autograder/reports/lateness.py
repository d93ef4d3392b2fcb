"""Late work: when a submission came in, against the due date (or the student's extension), and its penalty.

The time is the export's own: Gradescope's submission_metadata.yml gives each submission's ``created_at``.
Canvas's download carries only its ``LATE_`` flag (no time), Moodle's names carry neither: such a
submission is marked late (or not) but no penalty is computed for it; adjustments.csv is for that.

grading.yaml's ``late`` section sets the policy (``Policy``): a due date, a percentage of the raw total
taken per day late (a part of a day counts as a day), and a cut-off in days after which the final total is
0 (the work was graded, so it is a 0 and not a blank; a submission that could not be graded stays blank).
``extensions.csv`` in OUT, the instructor's own file like adjustments.csv, gives a student a later due date.
Standard library only, and the kit's config (whose ``parse_time`` reads every time here).
"""
import datetime
import math
from dataclasses import dataclass

from autograder.config import parse_time  # the one reader of a time: grading.yaml's, extensions.csv's, an export's
from autograder.reports import adjustments

FILE_NAME = "extensions.csv"
COLUMNS = ("student", "due", "reason")
DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Policy:
    due: datetime.datetime = None  # None: no late handling
    percent_per_day: float = 0.0
    cutoff_days: float = 0.0  # 0: no cut-off

    @classmethod
    def of(cls, config):
        """The policy of a Config (grading.yaml's ``late`` section)."""
        return cls(parse_time(config.late_due), config.late_percent_per_day, config.late_cutoff_days)


@dataclass(frozen=True)
class Late:
    """How late one submission was, and the share of its raw total that lateness takes."""
    text: str            # the gradebook's ``late`` cell: "late by 2 days (26 h)", "late (export's flag)"
    fraction: float = 0.0

    def penalty(self, raw):
        return round(raw * self.fraction, 4)

    def describe(self, raw):
        """"-11 points (late by 2 days; 10% a day)" for feedback and history."""
        return f"-{self.penalty(raw):g} points ({self.text})"


def assess(policy, submitted_at, flagged, extended_to=None):
    """The Late of one submission, or None when it was on time (or nothing says when it came in)."""
    due = extended_to or policy.due
    when = parse_time(submitted_at)
    if due is None or when is None:
        return Late("late (the export's flag; it gives no time, so no penalty)") if flagged else None
    if when <= due:
        return None
    hours = (when - due) / datetime.timedelta(hours=1)
    days = math.ceil((when - due) / DAY)
    text = f"late by {days} day{'s' if days != 1 else ''} ({hours:.1f} h after {_shown(due)})"
    if policy.cutoff_days and when - due > policy.cutoff_days * DAY:
        return Late(f"{text}; past the {policy.cutoff_days:g}-day cut-off", 1.0)
    if policy.percent_per_day:
        return Late(f"{text}; {policy.percent_per_day:g}% a day", min(1.0, days * policy.percent_per_day / 100))
    return Late(text)


def _shown(due):
    return due.strftime("%Y-%m-%d %H:%M %z")


def assess_all(policy, entries, extensions):
    """{submission id: Late} of a batch's entries; ``extensions``: {submission id: its later due date}."""
    found = {}
    for submission_id, submitters, _ in entries:
        submitted_at = next((s.submitted_at for s in submitters if getattr(s, "submitted_at", "")), "")
        flagged = any(getattr(s, "late", False) for s in submitters)
        late = assess(policy, submitted_at, flagged, extensions.get(submission_id))
        if late is not None:
            found[submission_id] = late
    return found


# --- extensions.csv -----------------------------------------------------------------------------------

def ensure_template(out_dir):
    """Create extensions.csv with its header alone if it does not exist; never touch one that does."""
    adjustments.ensure_header(out_dir, FILE_NAME, COLUMNS)


def load_extensions(out_dir):
    """([(line, who, due datetime, reason)], one message per row skipped) of OUT's extensions.csv."""
    rows, messages = adjustments.read_table(out_dir, FILE_NAME, COLUMNS, "no extension applied")
    found = []
    for number, row in rows:
        cells = [c.strip() for c in row] + ["", "", ""]
        due = parse_time(cells[1])
        if not cells[0] or due is None:
            why = "no student or submission named" if not cells[0] else \
                  f"due {cells[1]!r} is not a date and a time, such as 2026-10-03 23:59 or 2026-10-03 23:59 -07:00"
            messages.append(f"{FILE_NAME}:{number}: {why}: row skipped")
            continue
        found.append((number, cells[0], due, cells[2]))
    return found, messages


def resolve_extensions(rows, entries):
    """({submission id: due}, messages): each row matched as adjustments.csv's are (``adjustments.match``);
    the latest due date wins when several rows name one submission."""
    keys = adjustments.keys_of(entries)
    due, messages = {}, []
    for number, who, when, _ in rows:
        submission_id, skipped = adjustments.match(keys, FILE_NAME, number, who)
        if skipped:
            messages.append(skipped)
            continue
        due[submission_id] = max(when, due.get(submission_id, when))
    return due, messages
