"""Nothing a student writes reaches a report raw.

Printed output, error messages, zip entry names and Gradescope names are hostile text. Rendered
as CommonMark (markdown-it-py, raw HTML allowed as the spec says) feedback.md must show them as
text only; a spreadsheet must read every gradebook cell as text; the console must show a
submission id as typed; and a submission's name must never take the place of OUT, its parent or
a class file.
"""
import csv
import io
import json
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from autograder.reports import classbook, inert_text, report
from autograder import cli
from autograder.grading.discover import Submitter, discover
from variant_builder import ROOT, build_reference

ESC = "\x1b"
INJECTED = ("```\n</pre><script>alert(1)</script>\n<img src=x onerror=alert(1)>\n[click](javascript:alert(1))\n"
            "~~~\n" + ESC + "]8;;https://example.invalid/\x07link" + ESC + "]8;;\x07" + ESC + "[2J\r\u202eevil\n"
            "``````\n<b>bold</b> &lt;i&gt;")
HOSTILE_NAME = "<img src=x onerror=alert(1)>[x](javascript:alert(1))`code` **bold** " + ESC + "[31m"


def record():
    """A graded record whose every student-controlled field holds INJECTED."""
    failed = {"name": "Causal mask: values", "nodeid": "t::a", "part": "masks", "points": 3.0, "visibility": "visible",
              "passed": False, "message": f"ValueError: {INJECTED} (while calling causal_mask)",
              "grader_error": False, "mistake": None, "figure": None}
    passed = dict(failed, name="Padding mask", nodeid="t::b", passed=True, message="")
    return {"tests": [failed, passed], "problems": [f"{HOSTILE_NAME}/attention.py is a symlink: ignored"],
            "output": INJECTED, "events": [], "isolation": "namespaces", "execution_time": 1.0}


def inert(markdown):
    """Problems found rendering ``markdown`` as CommonMark with raw HTML on: HTML, links, images, control chars."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    found = []
    for token in tokens:
        for t in [token, *(token.children or [])]:
            if t.type in ("html_block", "html_inline", "link_open", "image", "strikethrough_open"):
                found.append(f"{t.type}: {t.content or t.attrs}")
    rendered = MarkdownIt("commonmark").render(markdown)
    for tag in ("<script", "<img", "<b>", "href=", "</pre><"):
        if tag in rendered:
            found.append(f"rendered HTML holds {tag!r}")
    found += [f"control character {c!r}" for c in set(markdown) if c in (ESC, "\r", "\x07", "\u202e")]
    return found


def test_feedback_md_renders_student_text_as_text_only(tmp_path):
    submitters = (Submitter(HOSTILE_NAME, "e@x.org", "=1+1"),)
    report.write_submission(str(tmp_path), "s1", record(), submitters)
    markdown = (tmp_path / "s1" / "feedback.md").read_text()
    assert not inert(markdown), f"feedback.md lets student text through: {inert(markdown)}"
    assert "onerror=alert(1)" in MarkdownIt("commonmark").render(markdown).replace("&quot;", '"'), (
        "the student's text should still be shown, as text")


def test_results_json_outputs_are_inert_markdown(tmp_path):
    results = report.write_submission(str(tmp_path), "s1", record(), (Submitter(HOSTILE_NAME, "", ""),))
    texts = [results["output"], *(t["output"] for t in results["tests"])]
    problems = {text[:60]: inert(text) for text in texts if inert(text)}
    assert not problems, f"results.json output fields render student text as markup: {problems}"


def test_feedback_html_escapes_student_text_under_a_csp(tmp_path):
    report.write_submission(str(tmp_path), "s1", record(), ())
    page = (tmp_path / "s1" / "feedback.html").read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for raw in ("<script>alert", "<img src=x", "<b>bold", ESC):
        assert raw not in page, f"feedback.html holds {raw!r} unescaped"


def test_a_fence_is_longer_than_any_backtick_run_inside():
    text = "a ````` b\n```\n"
    fence = inert_text.fenced(text).split("\n", 1)[0]
    assert set(fence) == {"`"} and len(fence) == 6


def gradebook_rows(submitters, submission_id="s1"):
    results = {"score": 50.0, "tests": [], "extra_data": {"max_score": 100.0}}
    text = classbook.gradebook_csv([(submission_id, submitters, results)])
    return list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_gradebook_cells_that_look_like_formulas_are_neutralised(start):
    formula = f"{start}HYPERLINK(\"https://example.invalid\",\"x\")"
    rows = gradebook_rows((Submitter(formula, f"{start}mail@x.org", f"{start}42"),), submission_id=f"{start}1+1")
    row = rows[0]
    for column in ("Student", "SIS User ID", "SIS Login ID", "submission_id", "email"):
        assert row[column].startswith("'" + start), f"{column} = {row[column]!r} would be read as a formula"
    assert row["total"] == "50", "scores stay numbers"


def test_plain_gradebook_cells_are_unchanged():
    row = gradebook_rows((Submitter("Ada Lovelace", "ada@example.edu", "1815"),))[0]
    assert (row["Student"], row["SIS Login ID"], row["SIS User ID"]) == ("Ada Lovelace", "ada@example.edu", "1815")


class Outcome:
    def __init__(self, ids):
        results = {"score": 1.0, "tests": [], "extra_data": {"max_score": 100.0}}
        self.graded, self.skipped = list(ids), []
        self.entries = [(i, (), results) for i in ids]


def test_console_shows_ids_as_typed_without_markup_or_escape_sequences(monkeypatch):
    hostile = "[link=https://example.invalid]click[/link][bold]x" + ESC + "]8;;https://e.invalid\x07y"
    buffer = io.StringIO()
    monkeypatch.setattr("rich.console.Console", lambda **kw: Console(file=buffer, force_terminal=True, **kw))
    cli.print_table(Outcome([hostile]), "/out", "namespaces", 1.0)
    shown = buffer.getvalue()
    assert "example.invalid" in shown and "[link=" in shown, f"the id was interpreted as markup:\n{shown}"
    assert ESC + "]8;;" not in shown and "\x07" not in shown, "an OSC 8 hyperlink reached the terminal"
    folded = "".join(line.strip() for line in shown.splitlines())  # a long id folds onto further lines
    assert "x]8;;https://e.invalidy" in folded, "the id's text should be shown, its escape character dropped"


def write_submission(folder):
    build_reference(folder)


def test_unsafe_submission_names_are_renamed_once_and_said(tmp_path):
    export = tmp_path / "export"
    (export).mkdir()
    (export / "submission_metadata.yml").write_text("submission_..:\n  :submitters:\n  - :name: Dot Dot\n")
    for name in ("submission_..", "submission_.", "submission_.hidden", "summary.md", "gradebook.csv", "ok"):
        write_submission(export / name)
    sources = discover([str(export)], export="gradescope")
    ids = sorted(s.id for s in sources)
    assert all(i not in (".", "..") and not i.startswith(".") for i in ids), ids
    assert not {"summary.md", "gradebook.csv", "summary.html"} & set(ids), ids
    assert len(set(ids)) == len(ids) == 6
    renamed = {s.renamed_from: s.id for s in sources if s.renamed_from is not None}
    assert set(renamed) == {"..", ".", ".hidden", "summary.md", "gradebook.csv"}, renamed
    line = classbook.summary_markdown([], list(renamed.items()))
    assert "No submissions" in line  # no scores: nothing else to say


@pytest.mark.slow  # grades a batch
@pytest.mark.skipif(not (ROOT / "autograder" / "__main__.py").exists(), reason="no grader CLI")
def test_a_batch_with_unsafe_names_keeps_out_and_class_files_whole(tmp_path):
    """submission_.. once wrote into OUT's parent, and a submission named summary.md crashed the batch."""
    batch, out = tmp_path / "batch", tmp_path / "reports"
    batch.mkdir()
    (batch / "submission_metadata.yml").write_text("submission_..:\n  :submitters:\n  - :name: '=cmd|x'\n")
    stubs = {name: (ROOT / "assignment" / name).read_text() for name in ("attention.py", "mha.py")}
    for name in ("submission_..", "summary.md"):
        (batch / name).mkdir()
        for file_name, text in stubs.items():
            (batch / name / file_name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", "--export", "gradescope", str(batch), "--out",
                          str(out), "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch", "reports"], "a report landed beside OUT"
    assert (out / "summary.md").is_file() and (out / "gradebook.csv").is_file()
    summary = (out / "summary.md").read_text()
    shown = MarkdownIt("commonmark").render(summary)
    assert summary.count("Renamed") == 1 and "'summary.md' -&gt; summary.md-submission" in shown, shown
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8-sig"))))
    assert "'=cmd|x" in [r["Student"] for r in rows], rows
    leftovers = [p.name for p in out.rglob(".tmp-*")]
    assert not leftovers, f"temp files left behind: {leftovers}"
    assert json.loads((out / "submission" / "results.json").read_text())["score"] == 0


def test_names_read_plainly_in_html_after_markdown_escaping(tmp_path):
    """md_text escapes a name for markdown; feedback.html shows it as written (escaped for HTML)."""
    rec = dict(record(), problems=["lab_3/attention.py is a symlink: ignored", "found 2 copies of *mha*.py"])
    report.write_submission(str(tmp_path), "s1", rec, ())
    page = (tmp_path / "s1" / "feedback.html").read_text()
    assert "lab_3/attention.py is a symlink" in page and "found 2 copies of *mha*.py" in page
    assert "\\_" not in page and "\\*" not in page


# What a spreadsheet may evaluate after trimming or normalizing the start of a cell (issue 23, 6c).
TRIMMED_FORMULAS = {
    "space then =": " =1+1",
    "tab then =": "\t=1+1",
    "no-break space then =": "\u00a0=1+1",
    "fullwidth =": "\uff1d1+1",
    "small =": "\ufe661+1",
    "fullwidth +": "\uff0b1",
    "fullwidth -": "\uff0d1",
    "fullwidth @": "\uff20SUM(1)",
    "left-to-right mark then =": "\u200e=1+1",
    "right-to-left mark then =": "\u200f=1+1",
    "arabic letter mark then =": "\u061c=1+1",
    "zero-width space then =": "\u200b=1+1",
    "byte-order mark then =": "\ufeff=1+1",
    "zero-width joiner then +": "\u200d+1",
    "bidi override then =": "\u202e=1+1",
    "newline then =": "\n=1+1",
    "quote then =": "'=1+1",
    "double quote": "\"=1\"",
    "open bracket": "(1)",
    "percent": "%1",
}


@pytest.mark.parametrize("attack", TRIMMED_FORMULAS.values(), ids=TRIMMED_FORMULAS.keys())
def test_gradebook_cells_that_start_with_anything_but_a_letter_or_digit_are_quoted(attack):
    row = gradebook_rows((Submitter(attack, attack, attack),), submission_id=attack)[0]
    for column in ("Student", "SIS User ID", "SIS Login ID", "submission_id", "email"):
        assert row[column].startswith("'"), f"{column} = {row[column]!r} is written unquoted"


@pytest.mark.parametrize("plain", ["Ada Lovelace", "Élodie Durand", "李小龍", "Ｋａｔｅ", "0042", "s1", "ada@example.edu",
                                   "Zoë-Anne O'Brien"])
def test_cells_that_start_with_a_letter_or_digit_are_written_as_they_are(plain):
    row = gradebook_rows((Submitter(plain, plain, plain),), submission_id=plain)[0]
    assert (row["Student"], row["SIS User ID"], row["submission_id"]) == (plain, plain, plain)
