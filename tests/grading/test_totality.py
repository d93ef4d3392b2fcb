"""Everything that renders or diagnoses a child's values is total: any float64 (±1.7e308, ±inf, NaN, -0.0,
subnormals), any shape the figures admit (empty, 1x1, up to 16x16). A table of extreme values stands in for
property-based testing (hypothesis is not installed): each renderer meets every pair of them."""
import itertools
import math

import pytest
import torch

from autograder.judging import compare
from autograder.reports import html_pages, pictures
from autograder.reports.feedback import feedback_markdown
from autograder.reports.results import results_json
from autograder.judging.errors import StudentError
from test_results import record, result

EXTREMES = [1.7e308, -1.7e308, math.inf, -math.inf, math.nan, -0.0, 0.0, 1e-320, -1e-320, 1.0, 5e-324]
SHAPES = [(0, 0), (1, 1), (1, 0), (3, 3), (16, 16)]


def grid(shape, values):
    """A rows x cols matrix (lists) cycling through ``values``."""
    cycle = itertools.cycle(values)
    return [[next(cycle) for _ in range(shape[1])] for _ in range(shape[0])]


def figures():
    for shape in SHAPES:
        for a, b in itertools.product(EXTREMES, repeat=2):  # every pair, on both sides of the comparison
            yield {"what": "weights", "expected": grid(shape, [a, b]), "got": grid(shape, [b, a])}
        yield {"what": "mask", "expected": grid(shape, EXTREMES), "got": grid(shape, EXTREMES[::-1]),
               "where": "batch 1, head 2"}


FIGURES = list(figures())


def test_text_heatmap_is_total():
    for figure in FIGURES:
        text = pictures.text_heatmap(figure)
        assert isinstance(text, str) and figure["what"] in text


def test_the_issue_23_values_draw_as_text():
    """round(nan) crashed on these: (1.7e308 - -1.7e308) overflows to inf, and inf / inf is NaN."""
    figure = {"what": "weights", "expected": [[1.7e308, -1.7e308], [0.0, 1.0]], "got": [[-1.7e308, 1.7e308], [1.0, 0.0]]}
    text = pictures.text_heatmap(figure)
    assert "@" in text and "|" in text


@pytest.mark.parametrize("figure", FIGURES[::7] + [FIGURES[-1]], ids=lambda f: f"{len(f['expected'])}x")
def test_png_heatmap_is_total(figure):
    png = pictures.png_heatmap(figure) if figure["expected"] and figure["expected"][0] else None
    assert png is None or png.startswith(b"\x89PNG")


def test_a_picture_that_cannot_be_drawn_is_dropped_with_a_note_and_the_test_keeps_its_result():
    broken = {"what": "weights", "expected": [[1.0]], "got": "not a matrix"}
    failed = result("attention", 2.0, passed=False, message="weights differ", figure=broken)
    rec = record(failed, result("masks", 3.0))
    results = results_json(rec)
    assert results["score"] == 3.0 and "could not be drawn" in results["tests"][0]["output"]
    assert "could not be drawn" in html_pages.feedback_html(rec, results)
    assert "weights differ" in feedback_markdown(rec, results)


@pytest.mark.parametrize("a, b", list(itertools.product(EXTREMES, repeat=2)))
def test_comparisons_and_their_diagnoses_fail_only_as_the_students_failure(a, b):
    """expect_close, expect_equal, where_differ, matrix_figure and the catalogue on extreme values: a
    StudentError (the student's failure, with its message) or a pass, never another exception."""
    expected = torch.tensor([[0.25, 0.75], [0.5, 0.5]], dtype=torch.float64).expand(2, 2, 2, 2).contiguous()
    got = torch.tensor([[a, b], [b, a]], dtype=torch.float64).expand(2, 2, 2, 2).contiguous()
    for check in (lambda: compare.expect_close(got, expected, "case", what="weights", mask=expected > 0.3),
                  lambda: compare.expect_equal(got, expected, "case")):
        try:
            with compare.diagnosed("sdpa", (got, got), expected, expected, expected, None):
                check()
        except StudentError as err:
            assert str(err)
            if err.figure:
                assert pictures.text_heatmap(err.figure)
    compare.where_differ(got != expected)


@pytest.mark.parametrize("shape", [(0,), (0, 0), (1, 1), (2, 0, 3), (1, 1, 1, 1), (2, 16, 16), (3, 17, 17)])
def test_figures_of_any_shape(shape):
    expected = torch.zeros(shape, dtype=torch.float64)
    got = torch.full(shape, 1.7e308, dtype=torch.float64)
    figure = compare.matrix_figure("weights", expected, got)
    assert figure is None or pictures.text_heatmap(figure)
    compare.where_differ(got != expected)


def test_reports_render_a_submission_returning_extreme_values():
    figure = {"what": "weights", "expected": [[0.5, 0.5], [1.0, 0.0]], "got": [[1.7e308, -1.7e308], [math.nan, -math.inf]]}
    rec = record(result("attention", 2.0, passed=False, message="weights differ", figure=figure),
                 output="1.7e308\n", output_dropped=0)
    results = results_json(rec)
    assert "weights differ" in results["tests"][0]["output"] and "could not be drawn" not in results["tests"][0]["output"]
    page = html_pages.feedback_html(rec, results)
    assert "data:image/png" in page, "the extreme values' picture was not drawn"
    assert "weights differ" in feedback_markdown(rec, results)
