"""The class files (autograder/classbook.py, and summary.html's chart): every submission counted once."""
import re

from autograder.classbook import score_bands, summary_markdown
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
