"""adjustments.csv: the instructor's own changes to the grades (a late penalty, a regrade by hand), in OUT.

The kit reads it on every run and never writes it, except to create it with its header alone when it is
missing. Each row names a submission (its report folder) or a student (name, email, SID, or the Canvas /
Moodle id), and gives points to add (negative to take away) or an override (the final total), and a
reason, which the student's feedback states. A row the kit cannot use gets one line naming its line
number and is skipped; the other rows still apply.
"""
import csv
import io
import math
import os
from dataclasses import dataclass, field

from autograder.reports.inert_text import csv_text

FILE_NAME = "adjustments.csv"
COLUMNS = ("student", "points", "override", "reason")
MAX_BYTES = 4 * 2**20  # an instructor's file of a term is a few KB; past this, it is not one


@dataclass(frozen=True)
class Adjustment:
    line: int
    who: str
    points: float = 0.0
    override: float = None
    reason: str = ""


@dataclass
class Applied:
    """What the rows naming one submission add up to."""
    points: float = 0.0
    override: float = None
    reasons: list = field(default_factory=list)

    def final(self, raw):
        """The final total from the raw one (None: not graded, and no override gives it one); points taken away
        stop at 0."""
        if self.override is not None:
            return self.override
        return None if raw is None else max(0.0, round(raw + self.points, 4))

    def describe(self):
        """'+5 points (late penalty waived)', 'set to 80 (graded by hand)'."""
        what = f"set to {self.override:g}" if self.override is not None else f"{self.points:+g} points"
        return f"{what} ({'; '.join(self.reasons)})" if self.reasons else what


def ensure_template(out_dir):
    """Create adjustments.csv with its header alone if it does not exist; never touch one that does."""
    ensure_header(out_dir, FILE_NAME, COLUMNS)


def ensure_header(out_dir, name, columns):
    """Create OUT/``name`` (an instructor's file) with its header alone if it does not exist; never touch one
    that does."""
    try:
        fd = os.open(os.path.join(out_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(csv_text([columns]))


def read_instructors_file(out_dir, name, nothing):
    """(its text, []) of OUT/``name``, an instructor's CSV ("" when it is missing), or (None, [one line ending
    with ``nothing``, what then happens]) when it cannot be used: unreadable, too large, not UTF-8."""
    path = os.path.join(out_dir, name)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return "", []
    except OSError as err:
        return None, [f"{path}: cannot be read ({err.strerror}): {nothing}"]
    if len(raw) > MAX_BYTES:
        return None, [f"{path}: larger than {MAX_BYTES >> 20} MiB: {nothing}"]
    try:
        return raw.decode("utf-8-sig"), []  # Excel saves UTF-8 with a byte-order mark
    except UnicodeDecodeError:
        return None, [f"{path}: not UTF-8 text (save it as CSV UTF-8): {nothing}"]


def table(text, columns):
    """[(line number, cells)] of the rows with something in them of an instructor's CSV (adjustments.csv,
    extensions.csv) whose line 1 is the header `columns`; a one-line ValueError when it is not CSV, or its
    header is another. The one reader of both files."""
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as err:
        raise ValueError(f"not CSV ({err})") from None
    if not rows or [c.strip().lower() for c in rows[0][:len(columns)]] != list(columns):
        raise ValueError(f"line 1 must be the header {','.join(columns)}")
    return [(number, row) for number, row in enumerate(rows[1:], start=2) if any(cell.strip() for cell in row)]


def read_table(out_dir, name, columns, nothing):
    """(``table`` of OUT/``name``, []) or ([], [one line ending with ``nothing``]) when the file cannot be used;
    ([], []) when it is missing."""
    text, problems = read_instructors_file(out_dir, name, nothing)
    if not text:
        return [], problems
    try:
        return table(text, columns), []
    except ValueError as err:
        return [], [f"{os.path.join(out_dir, name)}: {err}: {nothing}"]


def load(out_dir):
    """(the usable rows, one message per row skipped) of OUT's adjustments.csv; none when it is missing."""
    rows, problems = read_table(out_dir, FILE_NAME, COLUMNS, "no adjustment applied")
    adjustments, skipped = _parsed(rows)
    return adjustments, problems + [f"{FILE_NAME}:{number}: {problem}: row skipped" for number, problem in skipped]


def load_text(text):
    """(the usable rows, "line N: what is wrong" per row skipped) of an adjustments.csv's text."""
    adjustments, skipped = _parsed(table(text, COLUMNS))
    return adjustments, [f"line {number}: {problem}" for number, problem in skipped]


def _parsed(rows):
    adjustments, skipped = [], []
    for number, row in rows:
        try:
            adjustments.append(_parse(number, row))
        except ValueError as err:
            skipped.append((number, str(err)))
    return adjustments, skipped


def _parse(number, row):
    cells = [c.strip() for c in row] + [""] * (len(COLUMNS) - len(row))
    if len(row) > len(COLUMNS) and any(c.strip() for c in row[len(COLUMNS):]):
        raise ValueError(f"more than {len(COLUMNS)} cells (a comma in a reason needs quotes)")
    who, points, override, reason = cells[:len(COLUMNS)]
    if not who:
        raise ValueError("no student or submission named")
    if bool(points) == bool(override):
        raise ValueError("give either points or an override, not both or neither")
    if override and _number(override, "override") < 0:
        raise ValueError(f"override {override!r} is below 0")
    return Adjustment(number, who, _number(points, "points") if points else 0.0,
                      _number(override, "override") if override else None, reason)


def _number(text, column):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{column} {text!r} is not a finite number")
    return value


def keys_of(entries):
    """{a name a row may give, casefolded: the submission ids it names}: the folder, a name, email, SID or LMS id."""
    keys = {}
    for submission_id, submitters, _ in entries:
        names = {submission_id}
        for s in submitters:
            names |= {s.name, s.email, s.sid, getattr(s, "lms_id", "")}
        for name in names - {""}:
            keys.setdefault(name.casefold(), set()).add(submission_id)
    return keys


def match(keys, file_name, line, who):
    """(the one submission id WHO names, None), or (None, why the row at LINE of FILE_NAME is skipped);
    ``keys``: ``keys_of``'s answer. adjustments.csv and extensions.csv match their rows with it."""
    found = keys.get(who.casefold(), set())
    if len(found) == 1:
        return next(iter(found)), None
    why = "names no submission of this run" if not found else \
          f"names {len(found)} submissions ({', '.join(sorted(found))}): use the submission's folder name"
    return None, f"{file_name}:{line}: {who!r} {why}: row skipped"


def resolve(adjustments, entries):
    """({submission id: Applied}, messages): each row matched to the submission it names."""
    keys = keys_of(entries)
    applied, messages = {}, []
    for row in adjustments:
        submission_id, skipped = match(keys, FILE_NAME, row.line, row.who)
        if skipped:
            messages.append(skipped)
            continue
        one = applied.setdefault(submission_id, Applied())
        one.points += row.points
        if row.override is not None:
            one.override = row.override  # the last override of a submission wins
        if row.reason:
            one.reasons.append(row.reason)
    return applied, messages
