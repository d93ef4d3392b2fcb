"""Pictures in the reports: text heatmaps for Gradescope, self-contained HTML pages, the LMS gradebook."""
import base64
import csv
import html
import io
import json
import math
import re
import shutil
import subprocess
import sys
import urllib.parse
from html.parser import HTMLParser

import pytest
from PIL import Image, ImageStat

from autograder.reports import classbook, html_pages, pictures
from autograder import parts
from autograder.grading.suite_points import core_max
from autograder.grading.discover import Submitter
from conftest import ROOT, run_grader

SAMPLES = ROOT / "examples" / "submissions"
HOSTILE = "<script>alert('printed')</script><img src=https://evil.example/x.png>"
HOSTILE_ID = "say_<b>hi&co"  # a submission folder name is student-controlled too


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The samples, plus the reference printing HTML from a folder with HTML in its name, graded once."""
    batch = tmp_path_factory.mktemp("batch")
    shutil.copytree(SAMPLES, batch, dirs_exist_ok=True)
    hostile = batch / HOSTILE_ID
    shutil.copytree(SAMPLES / "reference", hostile)
    attention = hostile / "attention.py"
    attention.write_text(f"print({HOSTILE!r})\n" + attention.read_text())
    out = tmp_path_factory.mktemp("reports")
    run = run_grader("grade", batch, "--out", out, "--jobs", 2)
    assert run.returncode == 0, f"grader failed:\n{run.stderr[-3000:]}"
    return out


def results(out, submission):
    return json.loads((out / submission / "results.json").read_text())


def figure_tests(out, submission):
    """Numbers of the failed tests whose results.json output carries a text heatmap."""
    return [t["number"] for t in results(out, submission)["tests"]
            if t["status"] == "failed" and " matrix" in t["output"] and "shades" in t["output"]]


def looks_drawn(png_bytes):
    """(width, height, grey-level variance) of a PNG; a blank image has variance 0."""
    image = Image.open(io.BytesIO(png_bytes))
    assert image.format == "PNG"
    return image.width, image.height, ImageStat.Stat(image.convert("L")).var[0]


SMALL = {"what": "weights", "expected": [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]],
         "got": [[0.5, 0.5, 0.0], [0.75, 0.25, 0.0]]}


# --- the text heatmap (Gradescope strips images) ------------------------------------------------

def test_text_heatmap_draws_expected_got_and_diff_side_by_side_one_line_per_row():
    lines = pictures.text_heatmap(SMALL).splitlines()
    assert "expected" in lines[1] and "got" in lines[1] and "|diff|" in lines[1]
    rows = [line for line in lines if re.match(r"\s*\d+ \|", line)]
    assert len(rows) == 2, f"one line per matrix row:\n{chr(10).join(lines)}"
    assert all(row.count("|") == 6 for row in rows), "three framed panels per row"


def test_text_heatmap_shades_low_as_blank_high_as_at_sign_and_equal_entries_as_no_diff():
    row0, row1 = [line for line in pictures.text_heatmap(SMALL).splitlines() if re.match(r"\s*\d+ \|", line)]
    expected, got, diff = row1.split("|")[1::2]
    assert expected[-2:] == "  " and got[-2:] == "  ", "the lowest value is blank"
    assert got[:2] == "@@", "the highest value is '@'"
    assert row0.split("|")[5].strip() == "", "entries that agree show no difference"
    assert diff[:2] == "@@", "the largest difference is '@'"


def test_text_heatmap_has_a_legend_with_the_shades_and_the_value_range():
    legend = pictures.text_heatmap(SMALL).splitlines()[-1]
    assert pictures.SHADES in legend and "0.75" in legend and "NaN" in legend


def test_text_heatmap_shows_nan_as_a_question_mark_and_inf_as_a_bang():
    figure = {"what": "weights", "expected": [[0.5, 0.5]], "got": [[math.nan, math.inf]]}
    row = pictures.text_heatmap(figure).splitlines()[3]
    assert row.split("|")[3] == "??!!", row


def test_text_heatmap_of_16_by_16_stays_narrow_enough_to_read_in_gradescope():
    figure = {"what": "result", "expected": [[i * j for j in range(16)] for i in range(16)],
              "got": [[i + j for j in range(16)] for i in range(16)]}
    lines = pictures.text_heatmap(figure).splitlines()
    assert len(lines) == 16 + 4
    assert max(len(line) for line in lines[:-1]) <= 80, "\n".join(lines)


@pytest.mark.slow  # grades a batch and draws its pages
def test_failed_matrix_tests_carry_the_text_heatmap_inside_their_code_block(graded):
    outputs = {t["number"]: t["output"] for t in results(graded, "mask_bug")["tests"]}
    numbers = figure_tests(graded, "mask_bug")
    assert numbers, "mask_bug fails mask and weights comparisons, which should be drawn"
    for number in numbers:
        assert outputs[number].startswith("```\n") and outputs[number].endswith("\n```"), outputs[number]
        assert outputs[number].count("```") == 2, "the heatmap stays inside the one code block"


# --- PNGs ---------------------------------------------------------------------------------------

def test_png_heatmap_is_a_png_that_is_not_blank():
    width, height, variance = looks_drawn(pictures.png_heatmap(SMALL))
    assert width > 2 * height > 200, f"three panels side by side, got {width}x{height}"
    assert variance > 100, "the picture is (nearly) blank"


@pytest.mark.parametrize("shape", [(1, 4), (16, 16), (4, 16)])
def test_png_heatmap_draws_any_shape_up_to_16(shape):
    rows, cols = shape
    figure = {"what": "mask", "expected": [[float(j <= i) for j in range(cols)] for i in range(rows)],
              "got": [[float(j >= i) for j in range(cols)] for i in range(rows)]}
    assert looks_drawn(pictures.png_heatmap(figure))[2] > 100


def test_png_heatmap_draws_nan_and_inf():
    figure = {"what": "weights", "expected": [[0.5, 0.5], [1.0, 0.0]], "got": [[math.nan, 0.5], [math.inf, -math.inf]]}
    assert looks_drawn(pictures.png_heatmap(figure))[2] > 100


def test_grading_does_not_import_matplotlib_until_a_picture_is_drawn():
    code = ("import sys; import autograder.reports.report, autograder.grading.batch; from autograder.reports.pictures import text_heatmap; "
            "text_heatmap({'what': 'm', 'expected': [[1]], 'got': [[0]]}); print('matplotlib' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "False", run.stderr or "matplotlib was imported by the grading modules"


# --- feedback.html ------------------------------------------------------------------------------

def sections(page):
    """{test number: its HTML} for each failed test of a feedback.html."""
    found = re.split(r'<h3 class="failed">', page)[1:]
    return {chunk.split(" ", 1)[0]: chunk for chunk in found}


class Tags(HTMLParser):
    """The start tags of a page, as a browser would parse them (escaped text is not a tag)."""

    def __init__(self, page):
        super().__init__()
        self.found = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def assert_self_contained(page):
    tags = Tags(page).found
    assert not [t for t, _ in tags if t in ("script", "link", "iframe", "object", "embed")], "active or linked content"
    for tag, attrs in tags:
        if "src" in attrs:
            assert attrs["src"].startswith("data:image/png;base64,"), f"<{tag}> loads {attrs['src'][:60]}"
        if "href" in attrs:
            assert not urllib.parse.urlsplit(attrs["href"]).scheme and "//" not in attrs["href"], attrs["href"]
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "url(" not in style and "@import" not in style, "the CSS loads something"


@pytest.mark.slow  # grades a batch and draws its pages
@pytest.mark.parametrize("submission", ["mask_bug", "head_reshape_bug", "reference", "stubs", "crashes"])
def test_feedback_html_is_self_contained(graded, submission):
    assert_self_contained((graded / submission / "feedback.html").read_text())


@pytest.mark.slow  # grades a batch and draws its pages
@pytest.mark.parametrize("submission", ["mask_bug", "head_reshape_bug"])
def test_every_failed_test_with_a_figure_shows_it_as_a_png_or_as_text(graded, submission):
    by_number = sections((graded / submission / "feedback.html").read_text())
    for number in figure_tests(graded, submission):
        assert "<img" in by_number[number] or "As text" in by_number[number], f"test {number} lost its figure"


@pytest.mark.slow  # grades a batch and draws its pages
@pytest.mark.parametrize("submission", ["mask_bug"])  # head_reshape_bug fails no mask or weights test: its MHA
def test_the_first_failed_mask_or_weights_test_is_drawn_as_a_png(graded, submission):  # forward passes on the lab's heads
    page = (graded / submission / "feedback.html").read_text()
    outputs = {t["number"]: t["output"] for t in results(graded, submission)["tests"]}
    first = next(n for n in figure_tests(graded, submission) if re.search(r"^(mask|weights), \d+x\d+ matrix", outputs[n], re.M))
    assert '<img src="data:image/png;base64,' in sections(page)[first]
    assert 1 <= page.count("<img") <= html_pages.MAX_PICTURES


@pytest.mark.slow  # grades a batch and draws its pages
def test_the_pngs_in_feedback_html_are_real_pictures(graded):
    page = (graded / "mask_bug" / "feedback.html").read_text()
    for data in re.findall(r'src="data:image/png;base64,([^"]+)"', page):
        assert looks_drawn(base64.b64decode(data))[2] > 100


@pytest.mark.slow  # grades a batch and draws its pages
def test_feedback_html_names_the_likely_bug(graded):
    page = (graded / "mask_bug" / "feedback.html").read_text()
    assert 'class="bug"' in page and "mask_polarity_flipped" in page


@pytest.mark.slow  # grades a batch and draws its pages
def test_feedback_html_has_the_content_of_feedback_md(graded):
    page = (graded / "mask_bug" / "feedback.html").read_text()
    report_json = results(graded, "mask_bug")
    assert f"Score: {report_json['score']:g} / {core_max():g}" in page
    for title in parts.PART_TITLES.values():
        if title != "Other":
            assert title in page, f"part {title!r} missing from the table"
    for test in report_json["tests"]:
        if test["status"] == "failed":
            assert f'{test["number"]} {test["name"]}' in html.unescape(page)


@pytest.mark.slow  # grades a batch and draws its pages
def test_printed_output_and_submission_names_are_escaped(graded):
    page = (graded / HOSTILE_ID / "feedback.html").read_text()
    assert "What your code printed" in page
    assert "<script>" not in page and "<img src=https" not in page and "<b>hi" not in page
    assert "&lt;script&gt;alert(" in page, "the printed text is shown, escaped"
    assert_self_contained(page)


# --- summary.html -------------------------------------------------------------------------------

def named_bugs(out):
    """{defect: number of submissions} read back from every results.json (a mistake made of several
    defects counts as each of them)."""
    counts = {}
    for folder in (p for p in out.iterdir() if p.is_dir()):
        named = [t.get("extra_data", {}) for t in results(out, folder.name)["tests"]]
        mistakes = {d for n in named if n.get("mistake") for d in n.get("defects") or [n["mistake"]]}
        for mistake in mistakes:
            counts[mistake] = counts.get(mistake, 0) + 1
    return counts


@pytest.mark.slow  # grades a batch and draws its pages
def test_summary_html_lists_the_most_common_named_bugs_with_their_counts(graded):
    page = (graded / "summary.html").read_text()
    bugs = page.split('<h2 id="bugs">', 1)[1].split("<h2", 1)[0]
    counts = named_bugs(graded)
    assert {"mask_polarity_flipped", "split_without_transpose"} <= set(counts)
    submissions = sum(1 for p in graded.iterdir() if p.is_dir())
    for mistake, count in counts.items():
        assert re.search(rf"<code>{mistake}</code></td><td[^>]*>{count} of {submissions}<", bugs), mistake


@pytest.mark.slow  # grades a batch and draws its pages
def test_summary_html_links_to_each_feedback_html_relatively(graded):
    page = (graded / "summary.html").read_text()
    links = {href for href in re.findall(r'href="([^"]+)"', page) if not href.startswith("#")}
    for folder in (p for p in graded.iterdir() if p.is_dir()):
        href = urllib.parse.quote(folder.name, safe="") + "/feedback.html"
        assert href.replace("&", "&amp;") in links, f"no link to {folder.name}"
    for href in links:
        assert (graded / urllib.parse.unquote(html.unescape(href))).is_file(), f"broken link {href}"


@pytest.mark.slow  # grades a batch and draws its pages
def test_summary_html_lists_a_submission_without_feedback_html_without_a_link(graded, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    (out / "stubs" / "feedback.html").unlink()
    entries = [(p.name, (), results(out, p.name)) for p in sorted(out.iterdir()) if p.is_dir()]
    page = html_pages.summary_html(entries, str(out))
    assert "stubs/feedback.html" not in page and "<td>stubs</td>" in page


@pytest.mark.slow  # grades a batch and draws its pages
def test_summary_html_is_self_contained_and_escapes_submission_names(graded):
    page = (graded / "summary.html").read_text()
    assert_self_contained(page)
    assert "<b>hi" not in page and "&lt;b&gt;hi" in page
    assert "Pass rate per test" in page and page.count('class="column"') == 10, "the score chart has ten columns"


# --- the gradebook imports into Canvas and Moodle as written --------------------------------------

@pytest.mark.slow  # grades a batch and draws its pages
def test_gradebook_starts_with_the_columns_canvas_requires_in_its_order(graded):
    header = next(csv.reader((graded / "gradebook.csv").open(encoding="utf-8-sig")))
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert {"total", "max", "submission_id", "email"} <= set(header)


def test_gradebook_has_one_row_per_student_with_email_and_sid_and_no_guessed_canvas_id():
    people = (Submitter("Ada Lovelace", "ada@example.edu", "A1815"),
              Submitter("Alan Turing", "alan@example.edu", "T1912"))
    entries = [("123", people, {"score": 71.0, "extra_data": {"max_score": 100.0},
                                "tests": [{"tags": ["masks"], "score": 4.0, "max_score": 12.0}]})]
    rows = list(csv.DictReader(io.StringIO(classbook.gradebook_csv(entries).removeprefix("\ufeff"))))
    assert [(r["Student"], r["SIS User ID"], r["email"]) for r in rows] == [
        ("Ada Lovelace", "A1815", "ada@example.edu"), ("Alan Turing", "T1912", "alan@example.edu")]
    assert all(r["ID"] == "" and r["submission_id"] == "123" for r in rows), "Canvas's user id is never guessed"
    assert all((r["total"], r["max"], r["masks"]) == ("71", "100", "4") for r in rows)
