"""The instructor's files in OUT (issue 33): adjustments.csv is theirs, history.csv only grows, each report keeps
the exact files graded, and nothing the kit writes there is readable by other users."""
import csv
import io
import os
import stat

import pytest

from autograder.grading.discover import Submitter
from autograder.reports import adjustments, history, lateness, report
from autograder.reports.results import results_json
from test_results import record, result

ADA = (Submitter("Ada Lovelace", "ada@example.edu", "1815"),)


def graded(score, submission_id="s0", submitters=()):
    """An entry scoring `score` out of 10."""
    results = results_json(record(result("masks", 10.0, passed=True)))
    results["score"] = score
    return (submission_id, submitters, results)


def not_graded(submission_id):
    return (submission_id, (), results_json(record(result("masks", 10.0, passed=False), found={})))


def write_adjustments(out, text):
    (out / "adjustments.csv").write_text(text, encoding="utf-8")


def gradebook(out):
    return {r["submission_id"]: r for r in csv.DictReader(io.StringIO(
        (out / "gradebook.csv").read_text(encoding="utf-8-sig")))}


def history_rows(out):
    return list(csv.DictReader(io.StringIO((out / "history.csv").read_text(encoding="utf-8"))))


def run(out, entries, because=None):
    """What a batch does once every report is written (each entry's report written first, if it has none)."""
    for submission_id, submitters, _ in entries:
        if not (out / submission_id).exists():
            report.write_submission(str(out), submission_id, record(result("masks", 10.0)), submitters)
    return report.write_term_files(str(out), entries, (), because if because is not None else
                                   {e[0]: history.FIRST for e in entries})


# --- adjustments.csv --------------------------------------------------------------------------------

def test_a_missing_adjustments_file_is_created_with_its_header_alone(tmp_path):
    run(tmp_path, [graded(7)])
    assert (tmp_path / "adjustments.csv").read_bytes() == b"student,points,override,reason\r\n"


def test_an_edited_adjustments_file_is_never_rewritten(tmp_path):
    text = "student,points,override,reason\ns0,-2,,two days late\n"
    write_adjustments(tmp_path, text)
    run(tmp_path, [graded(7)])
    run(tmp_path, [graded(7)], because={})
    assert (tmp_path / "adjustments.csv").read_text(encoding="utf-8") == text


def test_points_and_overrides_are_applied_by_submission_or_by_student(tmp_path):
    write_adjustments(tmp_path, "student,points,override,reason\ns0,-2,,two days late\n"
                                "ada@example.edu,,9.5,graded by hand\n")
    run(tmp_path, [graded(7), graded(6, "s1", ADA)])
    book = gradebook(tmp_path)
    assert (book["s0"]["raw"], book["s0"]["total"]) == ("7", "5")
    assert (book["s1"]["raw"], book["s1"]["adjustment"], book["s1"]["total"]) == ("6", "3.5", "9.5")
    assert book["s1"]["adjustment_reason"] == "set to 9.5 (graded by hand)"


def test_a_malformed_row_is_named_by_its_line_and_the_others_still_apply(tmp_path):
    write_adjustments(tmp_path, "student,points,override,reason\ns0,five,,typo\nnobody,1,,who\ns0,1,,bonus\n")
    messages = run(tmp_path, [graded(7)])
    assert len(messages) == 2, messages
    assert messages[0].endswith("adjustments.csv:2: points 'five' is not a number: row skipped"), messages
    assert messages[1] == "adjustments.csv:3: 'nobody' names no submission of this run: row skipped"
    assert gradebook(tmp_path)["s0"]["total"] == "8"


def test_a_row_with_both_points_and_an_override_is_refused():
    rows, messages = adjustments.load_text("student,points,override,reason\ns0,1,5,both\n")
    assert rows == [] and messages == ["line 2: give either points or an override, not both or neither"]


def test_an_override_below_0_is_refused():
    rows, messages = adjustments.load_text("student,points,override,reason\ns0,,-5,typo for 5\n")
    assert rows == [] and messages == ["line 2: override '-5' is below 0"]


def test_the_feedback_states_the_adjustment_and_is_as_before_once_the_row_is_gone(tmp_path):
    run(tmp_path, [graded(7)])
    before = (tmp_path / "s0" / "feedback.md").read_text()
    write_adjustments(tmp_path, "student,points,override,reason\ns0,-2,,two days late\n")
    run(tmp_path, [graded(7)], because={})
    feedback = (tmp_path / "s0" / "feedback.md").read_text()
    assert "Adjusted by your instructor: -2 points (two days late). Your total is now 5 / 10." in feedback
    page = (tmp_path / "s0" / "feedback.html").read_text()
    assert "<p><strong>Adjusted by your instructor: -2 points (two days late)." in page
    write_adjustments(tmp_path, "student,points,override,reason\n")
    run(tmp_path, [graded(7)], because={})
    assert (tmp_path / "s0" / "feedback.md").read_text() == before


# --- history.csv ---------------------------------------------------------------------------------------

def test_the_history_records_the_first_grading_a_regrade_and_an_adjustment_with_the_old_total(tmp_path):
    run(tmp_path, [graded(7)])
    run(tmp_path, [graded(9)], because={"s0": "the hidden suite changed"})
    write_adjustments(tmp_path, "student,points,override,reason\ns0,-1,,late\n")
    run(tmp_path, [graded(9)], because={})
    rows = [(r["submission"], r["old_total"], r["new_total"], r["reason"]) for r in history_rows(tmp_path)]
    assert rows == [("s0", "", "7", "first grading"), ("s0", "7", "9", "the hidden suite changed"),
                    ("s0", "9", "8", "adjustment: -1 points (late)")]


def test_nothing_changed_appends_nothing(tmp_path):
    run(tmp_path, [graded(7)])
    before = (tmp_path / "history.csv").read_bytes()
    run(tmp_path, [graded(7)], because={})
    assert (tmp_path / "history.csv").read_bytes() == before


def test_the_history_is_only_appended_to_even_after_a_hand_edit(tmp_path):
    run(tmp_path, [graded(7)])
    with open(tmp_path / "history.csv", "a") as f:
        f.write("a note of my own\n")
    kept = (tmp_path / "history.csv").read_bytes()
    run(tmp_path, [graded(9)], because={"s0": "the submission's files changed"})
    assert (tmp_path / "history.csv").read_bytes().startswith(kept)


def test_a_submission_that_was_not_graded_has_no_total_in_the_history(tmp_path):
    run(tmp_path, [not_graded("empty")])
    assert [(r["new_total"], r["reason"]) for r in history_rows(tmp_path)] == [
        ("", "first grading (no files: no score)")]


# --- submitted/ -----------------------------------------------------------------------------------------

def test_the_report_keeps_the_exact_files_graded_read_only(tmp_path):
    report.write_submission(str(tmp_path), "s0", record(result()), (), submitted={"attention.py": b"x = 1\r\n"})
    kept = tmp_path / "s0" / "submitted" / "attention.py"
    assert kept.read_bytes() == b"x = 1\r\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o400


def test_a_regrade_of_new_files_keeps_the_earlier_snapshot_beside_it(tmp_path):
    report.write_submission(str(tmp_path), "s0", record(result()), (), submitted={"attention.py": b"old"})
    report.write_submission(str(tmp_path), "s0", record(result()), (), submitted={"attention.py": b"new"})
    folders = sorted(p.name for p in (tmp_path / "s0").iterdir() if p.name.startswith("submitted"))
    assert len(folders) == 2 and folders[0] == "submitted", folders
    assert (tmp_path / "s0" / folders[1] / "attention.py").read_bytes() == b"old"


# --- private ----------------------------------------------------------------------------------------------

def test_every_file_the_kit_writes_in_out_is_readable_by_its_owner_alone(tmp_path):
    write_adjustments(tmp_path, "student,points,override,reason\n")
    os.chmod(tmp_path / "adjustments.csv", 0o600)
    run(tmp_path, [graded(7, "s0", (Submitter("lovelaceada", "", "", "canvas", "1815"),))])
    for path in tmp_path.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert not mode & 0o077, f"{path.relative_to(tmp_path)} is {oct(mode)}"


# --- late work (issue 33, item 4) ---------------------------------------------------------------------

from autograder.reports import lateness  # noqa: E402

DUE = "2026-10-01 23:59 +00:00"
TEN_A_DAY = lateness.Policy(lateness.parse_time(DUE), percent_per_day=10)


def handed_in(when, submission_id="s0", score=8.0, name="Ada Lovelace"):
    """A graded entry whose export says it came in at `when` (Gradescope's created_at)."""
    who = (Submitter(name, f"{submission_id}@example.edu", submission_id, submitted_at=when),)
    return graded(score, submission_id, who)


def run_late(out, entries, policy=TEN_A_DAY, because=None):
    for submission_id, submitters, _ in entries:
        if not (out / submission_id).exists():
            report.write_submission(str(out), submission_id, record(result("masks", 10.0)), submitters)
    return report.write_term_files(str(out), entries, (), because if because is not None else
                                   {e[0]: history.FIRST for e in entries}, policy)


def test_gradescopes_rails_time_is_read_with_its_offset():
    when = lateness.parse_time("2025-10-14 22:41:07.334051000 -07:00")
    assert when.isoformat() == "2025-10-14T22:41:07.334051-07:00"


def test_a_part_of_a_day_late_counts_as_a_day_and_the_penalty_is_a_share_of_the_raw_total(tmp_path):
    run_late(tmp_path, [handed_in("2026-10-03 09:00:00 +00:00")])  # 33 h late: two days
    row = gradebook(tmp_path)["s0"]
    assert (row["raw"], row["late_penalty"], row["total"]) == ("8", "1.6", "6.4")
    assert row["late"].startswith("late by 2 days")


def test_a_submission_on_time_has_no_penalty_and_an_empty_late_cell(tmp_path):
    run_late(tmp_path, [handed_in("2026-10-01 23:58:59 +00:00")])
    row = gradebook(tmp_path)["s0"]
    assert (row["late_penalty"], row["total"], row["late"]) == ("", "8", "")


def test_past_the_cut_off_a_graded_submission_is_0_but_an_ungraded_one_stays_blank(tmp_path):
    policy = lateness.Policy(lateness.parse_time(DUE), percent_per_day=10, cutoff_days=2)
    missing = ("s1", (Submitter("B", "b@x", "b", submitted_at="2026-10-09 10:00:00 +00:00"),),
               not_graded("s1")[2])
    run_late(tmp_path, [handed_in("2026-10-09 10:00:00 +00:00"), missing], policy)
    book = gradebook(tmp_path)
    assert (book["s0"]["total"], book["s1"]["total"], book["s1"]["late_penalty"]) == ("0", "", "")
    assert "cut-off" in book["s0"]["late"]


def test_an_extension_in_extensions_csv_moves_that_students_due_date(tmp_path):
    (tmp_path / "extensions.csv").write_text("student,due,reason\ns0@example.edu,2026-10-05 23:59 +00:00,illness\n")
    run_late(tmp_path, [handed_in("2026-10-03 09:00:00 +00:00"), handed_in("2026-10-03 09:00:00 +00:00", "s1")])
    book = gradebook(tmp_path)
    assert (book["s0"]["total"], book["s1"]["total"]) == ("8", "6.4")


def test_an_extensions_file_is_created_with_its_header_and_a_bad_row_is_named(tmp_path):
    run_late(tmp_path, [handed_in("2026-10-01 10:00 +00:00")])
    assert (tmp_path / "extensions.csv").read_bytes() == b"student,due,reason\r\n"
    (tmp_path / "extensions.csv").write_text("student,due,reason\ns0,friday,flu\n")
    messages = run_late(tmp_path, [handed_in("2026-10-01 10:00 +00:00")], because={})
    assert messages == ["extensions.csv:2: due 'friday' is not a date and a time, such as 2026-10-03 23:59 or "
                        "2026-10-03 23:59 -07:00: row skipped"]


@pytest.mark.parametrize("name, load, row, nothing", [
    ("adjustments.csv", adjustments.load, "s0,-1,,late\n", "no adjustment applied"),
    ("extensions.csv", lateness.load_extensions, "s0,2026-10-03 23:59,flu\n", "no extension applied")])
def test_an_instructors_file_too_large_to_be_one_is_refused_whole_in_one_line(tmp_path, name, load, row, nothing):
    """Not cut at the bound and read in part: the rows past the cut would be lost without a word."""
    header = ",".join(adjustments.COLUMNS if name == "adjustments.csv" else lateness.COLUMNS)
    (tmp_path / name).write_text(header + "\n" + row * (adjustments.MAX_BYTES // len(row) + 1))
    assert load(str(tmp_path)) == ([], [f"{tmp_path / name}: larger than 4 MiB: {nothing}"])


def test_an_extension_naming_two_submissions_names_them_as_an_adjustment_row_would(tmp_path):
    (tmp_path / "extensions.csv").write_text("student,due,reason\nAda Lovelace,2026-10-05 23:59 +00:00,flu\n")
    messages = run_late(tmp_path, [handed_in("2026-10-03 09:00 +00:00"), handed_in("2026-10-03 09:00 +00:00", "s1")])
    assert messages == ["extensions.csv:2: 'Ada Lovelace' names 2 submissions (s0, s1): "
                        "use the submission's folder name: row skipped"]
    assert gradebook(tmp_path)["s0"]["total"] == "6.4"


def test_the_penalty_comes_before_the_adjustment_and_an_override_wins(tmp_path):
    write_adjustments(tmp_path, "student,points,override,reason\ns0,1,,bonus\ns1,,10,accepted late by the dean\n")
    run_late(tmp_path, [handed_in("2026-10-03 09:00:00 +00:00"), handed_in("2026-10-03 09:00:00 +00:00", "s1")])
    book = gradebook(tmp_path)
    assert (book["s0"]["total"], book["s1"]["total"]) == ("7.4", "10")


def test_the_student_is_told_the_penalty_in_feedback(tmp_path):
    run_late(tmp_path, [handed_in("2026-10-03 09:00:00 +00:00")])
    text = (tmp_path / "s0" / "feedback.md").read_text(encoding="utf-8")
    assert "Submitted late by 2 days" in text and "Late penalty: -1.6 points." in text
    assert "Your total is now 6.4 / 10" in text
    assert "-1.6 points" in (tmp_path / "s0" / "feedback.html").read_text(encoding="utf-8")


def test_history_records_the_penalty_as_the_reason_and_a_policy_change_without_regrading(tmp_path):
    entries = [handed_in("2026-10-03 09:00:00 +00:00")]
    run_late(tmp_path, entries, lateness.Policy())
    run_late(tmp_path, entries, TEN_A_DAY, because={})
    rows = history_rows(tmp_path)
    assert [(r["old_total"], r["new_total"]) for r in rows] == [("", "8"), ("8", "6.4")]
    assert rows[1]["reason"].startswith("late penalty: -1.6 points (late by 2 days")


def test_the_export_flag_alone_marks_the_row_late_without_a_penalty(tmp_path):
    flagged = ("s0", (Submitter("turingalan", "", "", "canvas", "1912", True),), graded(8)[2])
    run_late(tmp_path, [flagged])
    row = gradebook(tmp_path)["s0"]
    assert (row["total"], row["late_penalty"]) == ("8", "") and row["late"].startswith("late (the export's flag")


def test_history_names_the_extension_that_changed_a_total(tmp_path):
    entries = [handed_in("2026-10-03 09:00:00 +00:00")]
    run_late(tmp_path, entries)
    (tmp_path / "extensions.csv").write_text("student,due,reason\ns0,2026-10-05 23:59 +00:00,illness\n")
    run_late(tmp_path, entries, because={})
    assert history_rows(tmp_path)[-1]["reason"] == "extension: due 2026-10-05 23:59 +0000"


def test_points_taken_away_never_make_a_total_below_0(tmp_path):
    """Past the cut-off the total is 0; a row taking a point away (written for another reason) leaves it 0."""
    policy = lateness.Policy(lateness.parse_time(DUE), percent_per_day=10, cutoff_days=2)
    write_adjustments(tmp_path, "student,points,override,reason\ns0,-1,,forgot the header comment\n")
    run_late(tmp_path, [handed_in("2026-10-09 10:00:00 +00:00")], policy)
    assert gradebook(tmp_path)["s0"]["total"] == "0"


# --- Moodle's worksheet in OUT (importgradeslib.php @452e36fc, locallib.php @04975560; read, not run) ---------

MOODLE_ADA = (Submitter("Ada Lovelace", "", "", "moodle", "482914"),)


def moodle_sheet(out):
    return list(csv.DictReader(io.StringIO((out / "import-moodle.csv").read_text(encoding="utf-8-sig"))))


def test_a_total_above_moodles_maximum_is_capped_and_named_never_skipped(tmp_path):
    """process_import_grades skips a grade above the assignment's maximum with no message: the kit caps it and
    says so in one line."""
    run(tmp_path, [graded(10, "Ada Lovelace_482914", MOODLE_ADA)])
    write_adjustments(tmp_path, "student,points,override,reason\nAda Lovelace_482914,2,,bonus\n")
    lines = run(tmp_path, [graded(10, "Ada Lovelace_482914", MOODLE_ADA)], because={})
    assert [(r["Grade"], r["Maximum Grade"], r["Total before the cap"]) for r in moodle_sheet(tmp_path)] == [
        ("10", "10", "12")]
    assert any(line.startswith("import-moodle.csv: 1 total above the maximum grade, capped") and
               "Ada Lovelace_482914 (12 capped at 10)" in line for line in lines), lines


def test_the_worksheets_last_modified_is_when_history_last_changed_that_total(tmp_path):
    """A re-import is stale for Moodle when its date is older than Moodle's grade: the date is the kit's last
    change of that total (history.csv), so a total unchanged since the last import keeps its date."""
    run(tmp_path, [graded(7, "Ada Lovelace_482914", MOODLE_ADA)])
    first = moodle_sheet(tmp_path)[0]["Last modified (grade)"]
    stamp = history_rows(tmp_path)[-1]["when"]
    assert first == f"{stamp[:-2]}:{stamp[-2:]}"
    run(tmp_path, [graded(7, "Ada Lovelace_482914", MOODLE_ADA)], because={})
    assert moodle_sheet(tmp_path)[0]["Last modified (grade)"] == first
