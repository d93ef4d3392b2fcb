"""The class files (autograder/reports/classbook.py, and summary.html's chart): every submission counted once."""
import csv
import io
import re

import pytest

from autograder.reports.classbook import gradebook_csv, named_bugs, score_bands, submission_label, summary_markdown
from autograder.grading.discover import Submitter
from autograder.reports.html_pages import CHART_HEIGHT, summary_html
from test_results import record, result
from autograder.reports.results import results_json

pytestmark = pytest.mark.usefixtures("shipped_parts")  # records written with the shipped parts' names


def entries(*scores):
    """(id, submitters, results) per score, out of 10 points (one test of 10)."""
    made = []
    for i, score in enumerate(scores):
        results = results_json(record(result("masks", 10.0, passed=True)))
        results["score"] = score
        made.append((f"s{i}", (), results))
    return made


def test_each_score_falls_in_its_tenth():
    bands = dict(score_bands([0, 9.9, 10, 55, 89.9], 100))
    assert (bands["0-9%"], bands["10-19%"], bands["50-59%"], bands["80-89%"]) == (2, 1, 1, 1)


def test_full_marks_and_extra_credit_count_in_the_top_band():
    assert dict(score_bands([90, 100, 110], 100))["90%+"] == 3


def test_every_submission_is_counted_once():
    scores = [0, 54, 71, 73, 110]
    assert sum(count for _, count in score_bands(scores, 100)) == len(scores)


def test_summary_md_counts_a_score_above_the_maximum():
    text = summary_markdown(entries(0, 5.4, 11))
    assert "| 90%+ | # 1 |" in text and "| 0-9% | # 1 |" in text, text


def test_the_summary_page_draws_a_column_per_band_scaled_to_the_tallest(tmp_path):
    page = summary_html(entries(0, 5.4, 7.1, 7.3, 11), str(tmp_path))
    heights = [int(h) for h in re.findall(r'class="column" style="height: (\d+)px"', page)]
    assert len(heights) == 10 and max(heights) == CHART_HEIGHT, heights
    assert heights[7] == CHART_HEIGHT and heights[5] == CHART_HEIGHT // 2 and heights[1] == 0, heights
    assert "Scores of 5 submissions" in page


def no_files(submission_id):
    results = results_json(record(result("masks", 10.0, passed=False), found={}))
    return (submission_id, (), results)


def test_a_submission_without_files_has_empty_score_cells_never_0():
    """An LMS imports an empty cell as no grade, and a 0 as a zero."""
    rows = list(csv.DictReader(io.StringIO(gradebook_csv(entries(7) + [no_files("nobody")]))))
    assert [(r["submission_id"], r["total"], r["raw"], r["masks"], r["status"]) for r in rows] == [
        ("s0", "7", "7", "10", "graded"), ("nobody", "", "", "", "no files")]


def test_the_summaries_list_submissions_without_files_first_and_leave_them_out_of_the_figures(tmp_path):
    class_entries = entries(7, 9) + [no_files("nobody")]
    text = summary_markdown(class_entries)
    first = text.splitlines()[2]
    assert first.startswith("**No files") and first.endswith(": [nobody](nobody/feedback.md).**"), text
    assert "2 submissions; mean 8.0" in text, "a submission without files is not a score of 0"
    page = summary_html(class_entries, str(tmp_path))
    assert page.index("No files") < page.index("2 submissions; mean 8.0")


# --- named bugs, counted once per defect, in summary.md and summary.html alike -------------------

SPLIT = "Likely bug: Your split_heads reshapes straight to (B, n_heads, T, d_k)"
MERGE = "Likely bug: Your merge_heads reshapes straight back"
BOTH = "Likely bug: Your split_heads reshapes straight; merge_heads has the same problem"


def head_reshape_results():
    """A submission whose split and merge both lack the transpose: three names match, two defects."""
    return results_json(record(
        result("heads", 3.0, passed=False, message=SPLIT, mistake="split_without_transpose"),
        result("heads", 3.0, passed=False, message=MERGE, mistake="merge_without_transpose"),
        result("mha_forward", 3.0, passed=False, message=BOTH, mistake="split_and_merge_without_transpose",
               defects=["split_without_transpose", "merge_without_transpose"])))


def test_a_mistake_made_of_two_defects_counts_each_defect_once_with_its_own_sentence():
    bugs = named_bugs(head_reshape_results())
    assert bugs == {"split_without_transpose": SPLIT.removeprefix("Likely bug: "),
                    "merge_without_transpose": MERGE.removeprefix("Likely bug: ")}, bugs


def test_the_combined_mistake_alone_still_names_both_defects():
    results = results_json(record(result("mha_forward", 3.0, passed=False, message=BOTH,
                                         mistake="split_and_merge_without_transpose",
                                         defects=["split_without_transpose", "merge_without_transpose"])))
    assert set(named_bugs(results)) == {"split_without_transpose", "merge_without_transpose"}


def test_the_catalogue_says_which_defects_the_combined_mha_mistake_is_made_of():
    from autograder.judging.catalogue import CATALOGUE
    names = {entry.name: entry for kind in CATALOGUE.values() for entry, _ in kind}
    assert names["split_and_merge_without_transpose"].defects == ("split_without_transpose", "merge_without_transpose")
    assert all(d in names for entry in names.values() for d in entry.defects), "a defect that is not catalogued"


def class_with_bugs():
    ada = (Submitter("Ada Lovelace", "ada@example.edu", "1815"),)
    return [("submission_1", ada, head_reshape_results()), ("submission_2", (), head_reshape_results()),
            *entries(10)]


def test_summary_md_lists_each_named_bug_once_with_its_count_and_links_to_the_reports():
    text = summary_markdown(class_with_bugs())
    bugs = text.split("## Most common named bugs", 1)[1].split("##", 1)[0]
    assert "split\\_and\\_merge" not in bugs and "split_and_merge" not in bugs, bugs
    assert "| `split_without_transpose` | 2 of 3 |" in bugs and "| `merge_without_transpose` | 2 of 3 |" in bugs, bugs
    assert "[Ada Lovelace (submission\\_1)](submission_1/feedback.md)" in bugs, bugs


def test_summary_md_and_summary_html_list_the_same_bugs_and_counts(tmp_path):
    made = class_with_bugs()
    md = re.findall(r"\| `(\w+)` \| (\d+ of \d+) \|", summary_markdown(made))
    page = summary_html(made, str(tmp_path))
    html = re.findall(r'<tr><td><code>(\w+)</code></td><td class="num">(\d+ of \d+)</td>', page)
    assert md == html and len(md) == 2, (md, html)


def test_summary_md_rows_name_the_students_and_keep_the_report_id():
    text = summary_markdown(class_with_bugs())
    rows = text.split("## Submissions", 1)[1]
    assert "| [Ada Lovelace (submission\\_1)](submission_1/feedback.md) | 0 / 9 |" in rows, rows
    assert "| [submission\\_2](submission_2/feedback.md) |" in rows, "without metadata, the id alone"


def test_a_label_joins_the_names_and_adds_the_id_that_makes_it_unique():
    twins = (Submitter("Alex Kim", "a@x.edu", "1"), Submitter("", "b@x.edu", "2"))
    assert submission_label("submission_7", twins) == "Alex Kim, b@x.edu (submission_7)"
    assert submission_label("folder", ()) == "folder"


def test_the_console_table_shows_the_students_names(capsys):
    from types import SimpleNamespace
    from autograder.cli import print_table
    made = class_with_bugs()
    print_table(SimpleNamespace(graded=made, skipped=[], entries=made), "out", "namespaces", 1.0)
    assert "Ada Lovelace (submission_1)" in capsys.readouterr().out


# --- gradebook.csv as Canvas's gradebook importer reads it ------------------------------------------

def canvas_header_ok(header):
    """Canvas's importer (app/models/gradebook_importer.rb): Student and ID first, then SIS User ID and
    SIS Login ID, and Section as the last student column; every later column is an assignment."""
    return (bool(re.search("Student", header[0])) and bool(re.search("ID", header[1]))
            and bool(re.search(r"SIS\s+User\s+ID", header[2])) and bool(re.search(r"SIS\s+Login\s+ID", header[3]))
            and bool(re.search("Section", header[4])))


def test_the_gradebook_imports_into_canvas_with_gradescopes_fields_where_canvas_matches_students():
    """name -> Student, sid -> SIS User ID, email -> SIS Login ID; Canvas's own ID and Section left empty."""
    import csv
    import io
    from autograder.reports.classbook import gradebook_csv
    pair = (Submitter("Ada Lovelace", "ada@example.edu", "A1815"),
            Submitter("Alan Turing", "alan@example.edu", "T1912"))
    made = [("submission_1", pair, head_reshape_results()), ("folder_2", (), head_reshape_results())]
    rows = list(csv.reader(io.StringIO(gradebook_csv(made))))
    header, body = rows[0], rows[1:]
    assert canvas_header_ok(header) and header[5] == "total", header
    assert [r[:5] for r in body] == [["Ada Lovelace", "", "A1815", "ada@example.edu", ""],
                                     ["Alan Turing", "", "T1912", "alan@example.edu", ""],
                                     ["folder_2", "", "", "", ""]], body
    assert all(len(r) == len(header) for r in body)


def grader_error(submission_id, score):
    made = results_json(record(result("masks", 10.0, passed=False, message="grader error: KeyError: 'x'",
                                      grader_error=True)))
    made["score"] = score
    return (submission_id, (), made)


def test_a_grader_error_is_no_grade_in_the_gradebook():
    """An empty cell: an LMS import leaves the student's grade as it was instead of taking a partial score."""
    rows = list(csv.DictReader(io.StringIO(gradebook_csv(entries(7) + [grader_error("broken", 3)]))))
    assert [(r["submission_id"], r["total"], r["masks"], r["status"]) for r in rows] == [
        ("s0", "7", "10", "graded"), ("broken", "", "", "grader error")]


def test_a_grader_error_is_listed_first_and_left_out_of_the_figures():
    text = summary_markdown(entries(7, 9) + [grader_error("broken", 0)])
    assert text.splitlines()[2].startswith("**Grader errors (not grades yet"), text
    assert "2 submissions; mean 8.0" in text, "a grader error is not a score"


def test_a_part_the_lab_does_not_list_still_has_its_gradebook_column():
    made = results_json(record(result("masks", 10.0, passed=True), result("long_inputs", 4.0, passed=True)))
    header = gradebook_csv([("s0", (), made)]).splitlines()[0].split(",")
    assert header.index("masks") < header.index("long_inputs") < header.index("max"), header


# --- what an LMS and Excel read -------------------------------------------------------------------

def test_the_gradebook_starts_with_a_utf8_bom_so_excel_reads_non_ascii_names():
    zoe = (Submitter("Zoë Ångström", "zoe@example.edu", "7"),)
    text = gradebook_csv([("s1", zoe, entries(7)[0][2])])
    assert text.startswith("\ufeffStudent,"), text[:20]
    assert "Zoë Ångström" in text.encode("utf-8").decode("utf-8-sig")


CANVAS_ADA = Submitter("lovelaceada", "", "", "canvas", "1815")
MOODLE_ZOE = Submitter("Zoë Ångström", "", "", "moodle", "482913")


def read_csv(text):
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


def test_a_canvas_download_fills_canvas_own_id_column():
    made = [("lovelaceada_1815", (CANVAS_ADA,), entries(7)[0][2])]
    rows = read_csv(gradebook_csv(made))
    assert rows[1][:2] == ["lovelaceada", "1815"], rows


def test_the_canvas_import_has_canvas_student_columns_then_the_lab_and_blank_for_no_files():
    from autograder.reports.classbook import canvas_import_csv
    made = [("lovelaceada_1815", (CANVAS_ADA,), entries(7)[0][2]),
            ("turingalan_1912", (Submitter("turingalan", "", "", "canvas", "1912"),), no_files("x")[2])]
    rows = read_csv(canvas_import_csv(made))
    assert canvas_header_ok(rows[0]) and rows[0][5] == "LAB-03", rows[0]
    assert rows[1:] == [["lovelaceada", "1815", "", "", "", "7"], ["turingalan", "1912", "", "", "", ""]]


CANVAS_ANONYMOUS = Submitter("", "", "", "canvas", "", anonymous_id="x7Kq2")


def test_an_anonymous_canvas_submission_is_left_out_of_the_canvas_import_which_cannot_match_it():
    """Canvas's importer finds a row's student by ID, SIS User ID, SIS Login ID or name
    (app/models/gradebook_importer.rb, process_student, as indexed); an anonymous download gives none of them,
    only the anonymous id (lib/content_zipper.rb @05e9653c, get_filename), so no row is written that Canvas
    would list as unmatched or, worse, match by an empty name."""
    from autograder.reports.classbook import canvas_import_csv
    made = [("lovelaceada_1815", (CANVAS_ADA,), entries(7)[0][2]),
            ("anon_x7Kq2", (CANVAS_ANONYMOUS,), entries(5)[0][2])]
    assert [row[:2] for row in read_csv(canvas_import_csv(made))[1:]] == [["lovelaceada", "1815"]]
    assert canvas_import_csv(made[1:]) is None, "no row Canvas could match: no file"


def test_an_anonymous_canvas_submission_is_in_the_gradebook_by_its_report_name_with_no_canvas_id():
    rows = read_csv(gradebook_csv([("anon_x7Kq2", (CANVAS_ANONYMOUS,), entries(5)[0][2])]))
    assert rows[1][:2] == ["anon_x7Kq2", ""], rows


# --- Moodle's grading worksheet, from its importer's source (read, not run against a Moodle) -------------------
# moodle/moodle mod/assign/feedback/offline/importgradeslib.php @452e36fc (init, next) and locallib.php @04975560
# (process_import_grades); the English strings from mod/assign/lang/en/assign.php (recordid "Identifier",
# hiddenuser "Participant ", lastmodifiedgrade "Last modified (grade)") and lang/en/moodle.php (grade "Grade").

MOODLE_TURING = Submitter("Alan Turing", "", "", "moodle", "482915")


def moodle_rows(made, **kw):
    from autograder.reports.classbook import moodle_import_csv
    return list(csv.DictReader(io.StringIO(moodle_import_csv(made, **kw).lstrip("\ufeff"))))


def test_the_moodle_worksheet_has_the_three_columns_its_importer_requires():
    """importgradeslib.php init() returns false (and locallib.php stops with invalidgradeimport) unless the
    header holds get_string('recordid', 'assign'), get_string('grade') and get_string('lastmodifiedgrade',
    'assign'): in English, Identifier, Grade and Last modified (grade)."""
    from autograder.reports.classbook import moodle_import_csv
    header = read_csv(moodle_import_csv([("Zoë Ångström_482913", (MOODLE_ZOE,), entries(7)[0][2])]))[0]
    assert {"Identifier", "Grade", "Last modified (grade)"} <= set(header), header


def test_the_identifier_gives_back_the_participant_id_as_moodle_strips_it():
    """importgradeslib.php next(): the id is substr($idstr, strlen(get_string('hiddenuser', 'assign')))."""
    [row] = moodle_rows([("Zoë Ångström_482913", (MOODLE_ZOE,), entries(7)[0][2])])
    assert row["Identifier"][len("Participant "):] == "482913" and row["Full name"] == "Zoë Ångström"


def test_rows_with_no_grade_are_left_out_as_moodle_skips_an_empty_grade():
    """process_import_grades: "Skip - grade has no value" for an empty grade."""
    made = [("Zoë Ångström_482913", (MOODLE_ZOE,), entries(7)[0][2]), ("Alan Turing_482915", (MOODLE_TURING,),
                                                                     no_files("x")[2])]
    assert [r["Identifier"] for r in moodle_rows(made)] == ["Participant 482913"]


def test_no_grade_is_above_the_maximum_the_worksheet_states():
    """process_import_grades skips a grade above the assignment's maximum ("Out of range"): a total with extra
    credit is capped at the worksheet's maximum, and the total before the cap stays in a column Moodle ignores."""
    from autograder.reports.classbook import moodle_capped
    made = [("Zoë Ångström_482913", (MOODLE_ZOE,), entries(11.5)[0][2])]
    [row] = moodle_rows(made)
    assert (row["Grade"], row["Maximum Grade"], row["Total before the cap"]) == ("10", "10", "11.5")
    assert float(row["Grade"]) <= float(row["Maximum Grade"])
    assert moodle_capped(made) == [("Zoë Ångström_482913", "11.5", 10.0)]


def test_the_instructors_maximum_carries_extra_credit_into_the_worksheet():
    from autograder.reports.classbook import MoodleSheet, moodle_capped
    made = [("Zoë Ångström_482913", (MOODLE_ZOE,), entries(11.5)[0][2])]
    [row] = moodle_rows(made, sheet=MoodleSheet(max_grade=12))
    assert (row["Grade"], row["Maximum Grade"]) == ("11.5", "12")
    assert moodle_capped(made, sheet=MoodleSheet(max_grade=12)) == []


def test_the_headers_follow_the_sites_language():
    """The columns are looked up with get_string: a German Moodle (the de language pack's assign.php) reads
    "ID", "Teilnehmer/in" before the id, "Zuletzt geändert (Bewertung)", and moodle.php's "Bewertung"."""
    from autograder.reports.classbook import MoodleSheet
    sheet = MoodleSheet(identifier="ID", participant="Teilnehmer/in", grade="Bewertung",
                        last_modified="Zuletzt geändert (Bewertung)")
    [row] = moodle_rows([("Zoë Ångström_482913", (MOODLE_ZOE,), entries(7)[0][2])], sheet=sheet)
    assert (row["ID"], row["Bewertung"]) == ("Teilnehmer/in482913", "7") and row["Zuletzt geändert (Bewertung)"]


def test_last_modified_is_a_time_strtotime_reads_and_the_time_the_total_last_changed():
    """next(): $result->modified = strtotime(...); a date older than Moodle's own grade (by over 60 s) is
    stale and skipped unless "Ignore last modified date" is ticked. The worksheet says when the kit's total
    last changed (history.csv), as DATE_ATOM, and the time of writing when history has no row."""
    import datetime
    made = [("Zoë Ångström_482913", (MOODLE_ZOE,), entries(7)[0][2]),
            ("Alan Turing_482915", (MOODLE_TURING,), entries(8)[0][2])]
    rows = moodle_rows(made, modified={"Zoë Ångström_482913": "2026-10-02T09:15:00+02:00"})
    assert rows[0]["Last modified (grade)"] == "2026-10-02T09:15:00+02:00"
    written = datetime.datetime.fromisoformat(rows[1]["Last modified (grade)"])
    assert written.tzinfo and abs(written - datetime.datetime.now().astimezone()) < datetime.timedelta(minutes=1)


def test_no_import_file_without_that_lms_identity():
    from autograder.reports.classbook import canvas_import_csv, moodle_import_csv
    assert canvas_import_csv(entries(7)) is None and moodle_import_csv(entries(7)) is None


def test_the_gradebook_shows_raw_adjustment_and_final_as_numbers_and_the_reason_apart():
    """Every number column holds a number (an LMS imports it as a grade); the adjustment's words have their own
    column: an override's adjustment is what it added to the total."""
    from autograder.reports.adjustments import Applied
    applied = {"s0": Applied(points=-2, reasons=["two days late"]), "s1": Applied(override=9.5, reasons=["by hand"])}
    rows = list(csv.DictReader(io.StringIO(gradebook_csv(entries(7, 6), applied))))
    assert [(r["raw"], r["adjustment"], r["total"], r["adjustment_reason"]) for r in rows] == [
        ("7", "-2", "5", "'-2 points (two days late)"), ("6", "3.5", "9.5", "set to 9.5 (by hand)")]
    for row in rows:
        for column in ("total", "raw", "adjustment", "max"):
            float(row[column])


def test_every_csv_the_kit_writes_guards_a_cell_a_spreadsheet_would_run():
    """One helper for every file: a text cell starting with =, +, -, @, a tab or a CR gets a leading quote (even
    "-2": an SID is text); a number the kit computed, in a number column, stays a number."""
    from autograder.reports.inert_text import csv_text
    from autograder.reports.similarity import similarity_csv
    hostile = ["=2+3_101", "+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1", "-2", "Ada"]
    rows = list(csv.reader(io.StringIO(csv_text([[*map(str, range(8)), "n"], [*hostile, "-2"]], numbers=["n"]))))
    assert rows[1] == ["'=2+3_101", "'+1", "'-1+1", "'@SUM(A1)", "'\t=1", "'=1", "'-2", "Ada", "-2"]
    pairs = list(csv.reader(io.StringIO(similarity_csv([("=2+3_101", "@bob", 0.9, 0.8, 40, None, None)]))))
    assert pairs[1][:2] == ["'=2+3_101", "'@bob"]


def test_the_gradebook_says_which_submissions_the_export_marked_late():
    late = (Submitter("turingalan", "", "", "canvas", "1912", True),)
    made = [("lovelaceada_1815", (CANVAS_ADA,), entries(7)[0][2]), ("turingalan_1912", late, entries(6)[0][2])]
    rows = list(csv.DictReader(io.StringIO(gradebook_csv(made).removeprefix("\ufeff"))))
    assert [(r["submission_id"], r["late"]) for r in rows] == [
        ("lovelaceada_1815", ""), ("turingalan_1912", "late (the export's flag; it gives no time, so no penalty)")]


# --- summary-anonymous.html: for a lecture ---------------------------------------------------------

def anonymous_class():
    from autograder.reports.html_pages import summary_anonymous_html
    full = results_json(record(result("masks", 10.0, passed=True), result("extra", 5.0, passed=True)))
    half = results_json(record(result("masks", 10.0, passed=False), result("extra", 5.0, passed=False)))
    made = [("submission_1", (Submitter("Ada Lovelace", "ada@example.edu", "1815"),), full),
            ("zoe_folder", (), half), no_files("carol_empty")]
    return summary_anonymous_html(made + [("submission_2", (), head_reshape_results())])


def test_the_named_summaries_give_the_core_mean_apart_from_extra_credit_as_the_anonymous_one_does(tmp_path):
    full = results_json(record(result("masks", 10.0, passed=True), result("extra", 5.0, passed=True)))
    half = results_json(record(result("masks", 10.0, passed=False), result("extra", 5.0, passed=False)))
    made = [("ada", (), full), ("zoe", (), half), ("alan", (), head_reshape_results())]
    for page in (summary_markdown(made), summary_html(made, str(tmp_path))):
        assert "Core score, extra credit apart: mean 3.3" in page, page  # (10 + 0 + 0) / 3
        assert "Extra credit: 1 of 3 submissions earned some" in page


def test_the_anonymous_summary_names_nobody():
    page = anonymous_class()
    for who in ("Ada", "Lovelace", "ada@example.edu", "1815", "submission_1", "zoe_folder", "carol_empty", "href="):
        assert who not in page, who


def test_the_anonymous_summary_charts_each_parts_scores_over_every_graded_submission():
    """One chart per part, each counting once every graded submission scored in that part (the one with no files
    left out): the two scored in masks, in the masks chart."""
    page = anonymous_class()
    charts = re.findall(r"<figcaption>([^<]*): scores of (\d+) submissions \(% of its ([\d.]+) points\)</figcaption>"
                        r'<div class="bands">(.*?)</div></figure>', page)
    assert len(charts) >= 2 and ("Masks", "2", "10") in [c[:3] for c in charts], charts
    for _, count, _, columns in charts:
        assert sum(int(n) for n in re.findall(r'<div class="band"><span>(\d+)</span>', columns)) == int(count)


def test_the_anonymous_summary_keeps_the_core_mean_apart_from_extra_credit():
    page = anonymous_class()
    assert "Core score, extra credit apart: mean 3.3" in page, page  # (10 + 0 + 0) / 3, the 5 extra points apart
    assert "Extra credit (not in the core figures): 1 of 3 submissions earned some" in page
    assert "(1 not graded, left out)" in page


def test_the_anonymous_summary_draws_the_distribution_each_part_and_the_common_bugs():
    page = anonymous_class()
    assert page.count('<div class="bands">') == 1 + len(re.findall(r"<figcaption>[^<]*: scores of \d+ submissions", page))
    assert "<h2>Each part</h2>" in page
    assert "<code>split_without_transpose</code></td><td class=\"num\">1 of 3" in page, page
