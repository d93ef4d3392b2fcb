"""The class files (autograder/classbook.py, and summary.html's chart): every submission counted once."""
import csv
import io
import re

from autograder.classbook import gradebook_csv, score_bands, summary_markdown
from autograder.html_pages import CHART_HEIGHT, summary_html
from test_results import record, result
from autograder.results import results_json


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


def test_the_gradebook_marks_a_submission_without_files_as_such():
    rows = list(csv.DictReader(io.StringIO(gradebook_csv(entries(7) + [no_files("nobody")]))))
    assert [(r["submission_id"], r["total"], r["status"]) for r in rows] == [("s0", "7", "graded"),
                                                                              ("nobody", "0", "no files")]


def test_the_summaries_list_submissions_without_files_first_and_leave_them_out_of_the_figures(tmp_path):
    class_entries = entries(7, 9) + [no_files("nobody")]
    text = summary_markdown(class_entries)
    first = text.splitlines()[2]
    assert first.startswith("**No files") and first.endswith(": nobody.**"), text
    assert "2 submissions; mean 8.0" in text, "a submission without files is not a score of 0"
    page = summary_html(class_entries, str(tmp_path))
    assert page.index("No files") < page.index("2 submissions; mean 8.0")
