"""The class files in markdown and CSV: gradebook.csv (ready to import into Canvas or Moodle) and
summary.md (the score distribution and the tests the class fails most).
"""
import datetime
import statistics
import urllib.parse
from dataclasses import dataclass

from autograder.parts import LAB_NAME
from autograder.reports import lateness
from autograder.reports.inert_text import csv_text, md_text
from autograder.reports.results import GRADED, GRADER_ERROR, NO_FILES, part_scores, parts_in

# Canvas's gradebook import needs these first, in this order; it finds each student by ID, then SIS
# User ID, then SIS Login ID, then name or sortable name, and offers every later column as an
# assignment. Gradescope's sid and email fill the SIS columns. Moodle maps any column, so the same file
# serves both (docs/reference/lms.md: "Importing the gradebook").
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


BOM = "\ufeff"  # so that Excel reads the file as UTF-8 (names such as Zoë Ångström); Canvas and Moodle skip it
IMPORT_COLUMN = LAB_NAME  # the assignment column of import-canvas.csv (tests_hidden/parts.py)


def gradebook_csv(entries, applied=None, late=None):
    """One row per student (per submission when no names are known), ready for an LMS import.

    ``applied``: {submission id: adjustments.Applied}; ``late``: {submission id: lateness.Late}. ``total`` is
    the final total: raw, less the late penalty, plus the adjustment (or its override); a submission that was
    not graded has empty score cells, never 0. ``late`` says how late it was (or the export's flag alone)."""
    applied = applied or {}
    late = lateness.assess_all(lateness.Policy(), entries, {}) if late is None else late  # the export's flag
    parts = parts_in(r for _, _, r in entries)
    rows = [[*CANVAS_COLUMNS, "total", "raw", "late_penalty", "adjustment", "adjustment_reason", *parts, "max",
             "status", "submission_id", "email", "late"]]
    for submission_id, submitters, results in entries:
        was_late = late.get(submission_id)
        raw, final, reason, per_part = scores_of(results, applied.get(submission_id), parts, was_late)
        penalty = _cell(was_late.penalty(float(raw))) if was_late and raw and was_late.fraction else ""
        # The adjustment as a number: what it added to the total after the late penalty (none without a raw total).
        base = final_total(float(raw), None, was_late) if raw else None
        adjustment = _cell(round(float(final) - base, 4)) if reason and final and base is not None else ""
        max_score = f"{results['extra_data']['max_score']:g}"
        for who in submitters or [None]:
            # ID is Canvas's own user id: known from a Canvas download, never guessed otherwise.
            canvas_id = who.lms_id if who and getattr(who, "lms", "") == "canvas" else ""
            name, sid, email = (who.name or submission_id, who.sid, who.email) if who else (submission_id, "", "")
            rows.append([name, canvas_id, sid, email, "", final, raw, penalty, adjustment, reason, *per_part, max_score,
                         status_of(results), submission_id, email, was_late.text if was_late else ""])
    return BOM + csv_text(rows, ["total", "raw", "late_penalty", "adjustment", *parts, "max"])


def scores_of(results, applied, parts, late=None):
    """(raw, final, adjustment, per part) as gradebook cells: empty where the submission has no score."""
    graded = status_of(results) == GRADED
    raw = results["score"] if graded else None
    final = final_total(raw, applied, late)
    adjustment = applied.describe() if applied else ""
    scores = part_scores(results)
    per_part = [f"{scores.get(p, (0.0, 0.0))[0]:g}" if graded else "" for p in parts]
    return _cell(raw), _cell(final), adjustment, per_part


def final_total(raw, applied=None, late=None):
    """Raw, less the late penalty, plus the adjustment; an override is the final total whatever came before.
    None when not graded (and no override gives it one)."""
    if raw is not None and late is not None:
        raw = round(raw - late.penalty(raw), 4)
    if applied is not None:
        return applied.final(raw)
    return raw


def _cell(number):
    return "" if number is None else f"{number:g}"


def canvas_import_csv(entries, applied=None, late=None):
    """Canvas's gradebook import for the students a Canvas download named: its five student columns (ID is
    Canvas's user id, which it matches first), then the lab's column. An empty cell leaves a grade as it was.
    A submission of an anonymous download has no user id, only Canvas's anonymous id, which the import cannot
    match (it finds a row by ID, SIS ids or name: app/models/gradebook_importer.rb, ``process_student``): it is
    left out, and the file is not written when no row is left."""
    return _lms_rows(entries, applied, late, "canvas", [*CANVAS_COLUMNS, IMPORT_COLUMN],
                     lambda who, final, *_: [who.name, who.lms_id, "", "", "", final])


@dataclass(frozen=True)
class MoodleSheet:
    """Moodle's offline grading worksheet as its importer reads it (mod/assign/feedback/offline/importgradeslib.php,
    ``init`` and ``next``): the Identifier, Grade and Last modified (grade) columns, found by their names in the
    site's language; a participant is the text after ``participant`` ("Participant " in English). Its
    ``process_import_grades`` (locallib.php) skips a grade above the assignment's maximum ("Out of range"), so a
    total above ``max_grade`` (0: the lab's maximum) is capped, and named. Set in grading.yaml's ``moodle``."""
    max_grade: float = 0.0
    identifier: str = "Identifier"
    participant: str = "Participant "
    grade: str = "Grade"
    last_modified: str = "Last modified (grade)"

    @classmethod
    def of(cls, config):
        return cls(config.moodle_max_grade, config.moodle_identifier, config.moodle_participant, config.moodle_grade,
                   config.moodle_last_modified)

    def maximum(self, results):
        return self.max_grade or results["extra_data"]["max_score"]


MOODLE_TOTAL = "Total before the cap"  # no Moodle column has this name: its importer ignores it
NUMBER_COLUMNS = (IMPORT_COLUMN, "Maximum Grade", MOODLE_TOTAL)  # and the Moodle sheet's grade (MoodleSheet.grade)


def moodle_import_csv(entries, applied=None, late=None, sheet=None, modified=None):
    """Moodle's grading worksheet ("Upload grading worksheet") for the participants a Moodle download named: a row
    is matched by its Identifier, "Participant <id>". The grade is the final total, at most the sheet's maximum
    (``moodle_capped`` names who was capped); ``Last modified (grade)`` is when that total last changed
    (``modified``: {submission id: an ISO 8601 time}, from history.csv; now when unknown). Rows with no grade are
    left out (Moodle skips an empty grade)."""
    sheet, modified = sheet or MoodleSheet(), modified or {}
    now = _atom(datetime.datetime.now().astimezone())

    def row(who, final, max_score, submission_id):
        maximum = float(max_score) if not sheet.max_grade else sheet.max_grade
        capped = f"{min(float(final), maximum):g}"
        return [f"{sheet.participant}{who.lms_id}", who.name, capped, f"{maximum:g}",
                modified.get(submission_id, now), final]
    header = [sheet.identifier, "Full name", sheet.grade, "Maximum Grade", sheet.last_modified, MOODLE_TOTAL]
    return _lms_rows(entries, applied, late, "moodle", header, row, skip_empty=True, numbers=[sheet.grade])


def moodle_capped(entries, applied=None, late=None, sheet=None):
    """[(submission id, final total, maximum)] of the Moodle rows whose total is above the worksheet's maximum."""
    sheet, applied, late = sheet or MoodleSheet(), applied or {}, late or {}
    capped = []
    for submission_id, submitters, results in entries:
        _, final, _, _ = scores_of(results, applied.get(submission_id), [], late.get(submission_id))
        if final != "" and any(getattr(w, "lms", "") == "moodle" for w in submitters):
            if float(final) > sheet.maximum(results):
                capped.append((submission_id, final, sheet.maximum(results)))
    return capped


def _atom(when):
    """A time as PHP's DATE_ATOM writes it (2026-10-01T23:59:00-07:00), which Moodle's strtotime reads."""
    return when.isoformat(timespec="seconds")


def _lms_rows(entries, applied, late, lms, header, row, skip_empty=False, numbers=()):
    """The import file's text, or None when no submission carries an id that LMS's import matches (``lms_id``:
    Canvas's user id, Moodle's participant id)."""
    applied, late = applied or {}, late or {}
    rows = []
    for submission_id, submitters, results in entries:
        _, final, _, _ = scores_of(results, applied.get(submission_id), [], late.get(submission_id))
        for who in submitters:
            if imports_into(who, lms) and not (skip_empty and final == ""):
                rows.append(row(who, final, f"{results['extra_data']['max_score']:g}", submission_id))
    if not any(imports_into(w, lms) for _, submitters, _ in entries for w in submitters):
        return None
    return BOM + csv_text([header, *rows], [*NUMBER_COLUMNS, *numbers])


def imports_into(who, lms):
    """Whether a submitter's row can go into `lms`'s import file: the download named them with that LMS's id."""
    return getattr(who, "lms", "") == lms and bool(getattr(who, "lms_id", ""))


def pass_rates(entries):
    """[((number, name, part), (passed, total))] over the class, the most failed test first."""
    rates = {}
    for _, _, results in entries:
        for test in results["tests"]:
            key = (test["number"], test["name"], test["tags"][0] if test["tags"] else "")
            passed, total = rates.get(key, (0, 0))
            rates[key] = (passed + (test["status"] == "passed"), total + 1)
    return sorted(rates.items(), key=lambda item: (item[1][0] / item[1][1], item[0]))


def status_of(results):
    """A results.json's status (results.status); reports written before there was one were graded."""
    return results["extra_data"].get("status", GRADED)


def not_graded(entries):
    """{status: [(submission id, submitters)]} of the submissions that were not (fully) graded, for the top of the
    summaries: a submission without files did not score 0, it has nothing to score."""
    listed = {NO_FILES: [], GRADER_ERROR: []}
    for submission_id, submitters, results in entries:
        if status_of(results) in listed:
            listed[status_of(results)].append((submission_id, submitters))
    return {status: ids for status, ids in listed.items() if ids}


NOT_GRADED_TEXT = {NO_FILES: "No files (neither attention.py nor mha.py; not graded, so not in the figures below)",
                   GRADER_ERROR: "Grader errors (not grades yet, so not in the figures below: run make grade "
                                 "again to retry them)"}

LIKELY_BUG = "Likely bug: "  # how StudentError.named starts a message


def submission_label(submission_id, submitters):
    """Who handed a submission in: the students' names with its report folder, or the folder alone."""
    names = ", ".join(s.name or s.email for s in submitters if s.name or s.email)
    return f"{names} ({submission_id})" if names else submission_id


def named_bugs(results):
    """{defect: its sentence} for one submission's results.json: each catalogued defect once, however many
    tests named it and whether a mistake named it alone or with another (catalogue.Mistake.defects)."""
    found = {}
    for test in results["tests"]:
        named = test.get("extra_data", {})
        if not named.get("mistake"):
            continue
        sentence = test["output"].strip("`\n").split("\n", 1)[0].removeprefix(LIKELY_BUG)
        for defect in named.get("defects") or [named["mistake"]]:
            alone = defect == named["mistake"]
            if defect not in found or (alone and not found[defect][1]):  # its own sentence beats a combined one
                found[defect] = (sentence, alone)
    return {defect: sentence for defect, (sentence, _) in found.items()}


def common_bugs(entries):
    """[(defect, sentence, [(submission id, submitters)])] over the class, the most common first."""
    sentences, who = {}, {}
    for submission_id, submitters, results in entries:
        for defect, sentence in named_bugs(results).items():
            sentences.setdefault(defect, sentence)
            who.setdefault(defect, []).append((submission_id, submitters))
    return sorted(((d, sentences[d], ids) for d, ids in who.items()), key=lambda bug: -len(bug[2]))


def core_and_extra(entries):
    """The core figures with the extra credit apart, in one sentence, for graded ``entries``; "" when the suite
    has no extra credit."""
    extra_max = entries[0][2]["extra_data"].get("extra_credit_max", 0)
    if not extra_max:
        return ""
    extra = [r["extra_data"].get("extra_credit", 0.0) for _, _, r in entries]
    core = [r["score"] - e for (_, _, r), e in zip(entries, extra)]
    return (f"Core score, extra credit apart: mean {statistics.mean(core):.1f}, median {statistics.median(core):g}. "
            f"Extra credit: {sum(1 for e in extra if e > 0)} of {len(extra)} submissions earned some; "
            f"mean {statistics.mean(extra):.1f} of {extra_max:g}.")


def summary_markdown(entries, renamed=()):
    """Score distribution and which tests the class fails most; ``renamed``: (name, report id) pairs.

    Submissions with no files are listed first and left out of the figures."""
    lines = ["# Class summary", ""]
    for status, ids in not_graded(entries).items():
        lines += [f"**{NOT_GRADED_TEXT[status]}: {', '.join(_report_link(*submission) for submission in ids)}.**", ""]
    entries = graded_entries(entries)
    scores = [r["score"] for _, _, r in entries]
    if not scores:
        return "\n".join(lines + ["No submissions were graded.", ""])
    max_score = entries[0][2]["extra_data"]["max_score"]
    lines += [f"{len(scores)} submissions; mean {statistics.mean(scores):.1f}, median {statistics.median(scores):g}, "
              f"min {min(scores):g}, max {max(scores):g} (out of {max_score:g}). {core_and_extra(entries)}".rstrip(),
              "", "## Score distribution", "",
              "| Score | Submissions |", "|---|---|"]
    for label, count in score_bands(scores, max_score):
        lines.append(f"| {label} | {'#' * count} {count} |")
    lines += ["", "## Most common named bugs", ""]
    bugs = common_bugs(entries)
    if bugs:
        lines += ["| Bug | Submissions | What it is | For example |", "|---|---|---|---|"]
    else:
        lines.append("No failed test matched a catalogued mistake.")
    for defect, sentence, ids in bugs:
        examples = ", ".join(_report_link(*submission) for submission in ids[:5])
        lines.append(f"| `{defect}` | {len(ids)} of {len(entries)} | {md_text(sentence)} | {examples} |")
    lines += ["", "## Pass rate per test (most failed first)", "", "| Test | Part | Passed |", "|---|---|---|"]
    for (number, name, part), (passed, total) in pass_rates(entries):
        lines.append(f"| {number} {name} | {part} | {passed}/{total} ({100 * passed / total:.0f}%) |")
    lines += ["", "## Submissions", "", "| Submission | Score | Named bugs |", "|---|---|---|"]
    for submission_id, submitters, results in entries:
        score = f"{results['score']:g} / {results['extra_data']['max_score']:g}"
        error = " **grader error**" if status_of(results) == GRADER_ERROR else ""
        bugs_here = ", ".join(f"`{d}`" for d in named_bugs(results))
        lines.append(f"| {_report_link(submission_id, submitters)} | {score}{error} | {bugs_here} |")
    if renamed:
        lines += ["", renamed_line(renamed, md_text)]
    return "\n".join(lines) + "\n"


def graded_entries(entries):
    """The entries that have a score to count: all but those with no files or a grader error."""
    return [entry for entry in entries if status_of(entry[2]) == GRADED]


def _report_link(submission_id, submitters=()):
    """A markdown link to the submission's feedback.md, labelled with who handed it in."""
    target = urllib.parse.quote(submission_id, safe="") + "/feedback.md"
    return f"[{md_text(submission_label(submission_id, submitters))}]({target})"


def score_bands(scores, max_score):
    """(label, count) for each tenth of ``max_score``, in order; the top band also holds full marks
    and scores above them (extra credit), so every submission is counted once."""
    counts = [0] * 10
    for score in scores:
        counts[min(max(int(score / max_score * 10), 0), 9) if max_score else 0] += 1
    labels = [f"{10 * band}-{10 * band + 9}%" for band in range(9)] + ["90%+"]
    return list(zip(labels, counts))


def renamed_line(renamed, escape):
    """One sentence: which submissions got another report folder name, and why."""
    pairs = ", ".join(f"{escape(repr(old))} -> {escape(new)}" for old, new in renamed)
    return f"Renamed (the name is not safe as a report folder, or is taken by a class file): {pairs}."
