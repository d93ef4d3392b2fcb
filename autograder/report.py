"""Score reports, written by the trusted grader after the submission's processes are gone.

* ``results.json``: Gradescope's results schema, one per submission, with a text heatmap under
  each failed matrix comparison (Gradescope shows no images);
* ``feedback.md`` and ``feedback.html``: the same, for a person (the HTML with PNG heatmaps inline);
* ``gradebook.csv`` (ready to import into Canvas or Moodle), ``summary.md`` and ``summary.html``:
  the class picture.

Every file is written atomically (temp file, then rename): a batch killed halfway leaves
whole reports or none, which is what makes re-running a batch resume it.

Anything a submission wrote (what it printed, its error messages, file and zip entry names,
names from Gradescope's metadata) reaches a report only as inert text: control characters are
stripped, markdown gets it in a code fence longer than any backtick run inside or with every
punctuation mark escaped, HTML escapes it (and its CSP allows no script), and a gradebook cell
that a spreadsheet would read as a formula starts with a quote.
"""
import base64
import csv
import dataclasses
import html
import io
import json
import os
import re
import statistics
import sys
import tempfile
import urllib.parse
from collections import Counter

from autograder import pictures
from autograder.parts import EXTRA_PARTS, PART_TITLES, PARTS, part_number
OUTPUT_SHOWN = 4000
MAX_PICTURES = 6  # PNG heatmaps per feedback.html: each adds ~40-70 ms of CPU to grading the submission
PICTURED = {"mask", "weights"}  # what gets a PNG; other matrices (results, gradients) stay text
LIKELY_BUG = "Likely bug: "  # how StudentError.named starts a message
# C0 and C1 control characters (except tab and newline), and the bidi overrides that reorder text.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What can start markup inside a line (emphasis, code, links, HTML, entities, tables, strikethrough),
# and what can start a block at its beginning (lists, headings, quotes).
MD_INLINE = re.compile(r"([\\`*_\[\]<>&!|~])")
MD_LINE_START = re.compile(r"^([-+=#>]|\d+[.)])")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes Excel, Sheets or LibreOffice read a formula


def clean(text):
    """``text`` without control characters, except newline and tab."""
    return CONTROL.sub("", str(text))


def md_text(text):
    """Student-controlled text as one line of inert markdown: no markup, link, HTML or entity survives."""
    text = MD_INLINE.sub(r"\\\1", " ".join(clean(text).split()))
    return MD_LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], text)


def fenced(text):
    """``text`` in a code fence that nothing inside can close: one backtick more than its longest run."""
    text = clean(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def spreadsheet_cell(text):
    """A gradebook cell a spreadsheet shows as text: one that starts like a formula gets a leading quote."""
    text = clean(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def results_json(record, submitters=(), student_view=False):
    """The Gradescope results dict for one graded submission record.

    ``student_view``: the ``output`` is shown to students at once, whatever the tests' visibility
    (Gradescope's spec). While any test that carries points is not ``visible``, Gradescope hides the
    student's total, so the output must not state it either, nor how many hidden tests passed.
    """
    tests = []
    counters = {}
    for result in record["tests"]:
        part = result["part"]
        counters[part] = counters.get(part, 0) + 1
        number = f"{part_number(part)}.{counters[part]}"
        tests.append({
            "name": result["name"],
            "number": number,
            "score": result["points"] if result["passed"] else 0.0,
            "max_score": result["points"],
            "status": "passed" if result["passed"] else "failed",
            "output": _test_output(result),
            "output_format": "md",
            "visibility": result["visibility"],
            "tags": [part],
            **({"extra_data": {"mistake": result["mistake"]}} if result.get("mistake") else {}),
        })
    score = round(sum(t["score"] for t in tests), 4)
    # Extra credit counts in the score but not in the maximum: a full core is 100, extra goes above.
    max_score = round(sum(t["max_score"] for t in tests if t["tags"][0] not in EXTRA_PARTS), 4)
    extra = [t for t in tests if t["tags"][0] in EXTRA_PARTS]
    grader_errors = [r["name"] for r in record["tests"] if r.get("grader_error")]
    return {
        "score": score,
        "execution_time": record.get("execution_time", 0.0),
        "output": overview(record, score, max_score, grader_errors, submitters, extra,
                           reveal_total=not student_view or _all_points_visible(tests)),
        "output_format": "md",
        "test_output_format": "md",
        "tests": tests,
        "extra_data": {
            "max_score": max_score,
            "extra_credit": round(sum(t["score"] for t in extra), 4),
            "extra_credit_max": round(sum(t["max_score"] for t in extra), 4),
            "isolation": record.get("isolation", "unknown"),
            "containment": list(record.get("containment", [])),
            "grader_error": bool(grader_errors) or bool(record.get("grader_error")),
            "submitters": [dataclasses.asdict(s) for s in submitters],
        },
    }


def _all_points_visible(tests):
    return all(t["visibility"] == "visible" for t in tests if t["max_score"] > 0)


def _test_output(result):
    text = result["message"]
    if not text or result["passed"]:
        return text
    if result.get("figure"):
        text += "\n\n" + pictures.text_heatmap(result["figure"])
    return fenced(text)


def overview(record, score, max_score, grader_errors, submitters=(), extra=(), reveal_total=True):
    """The top of the report: the score so far, stated so that nobody mistakes it for a final grade.

    Without ``reveal_total`` it states only what the visible tests earned, as Gradescope shows students.
    """
    lines = []
    if submitters:
        lines.append("Submission of " + ", ".join(md_text(s.name) for s in submitters if s.name) + ".")
    hidden = [r for r in record["tests"] if r["visibility"] != "visible"]
    if not reveal_total:
        shown = [r for r in record["tests"] if r["visibility"] == "visible"]
        got = sum(r["points"] for r in shown if r["passed"])
        lines.append(f"**Visible tests: {got:g} / {sum(r['points'] for r in shown):g} points, "
                     f"{sum(1 for r in shown if r['passed'])} of {len(shown)} passed.** {len(hidden)} hidden tests "
                     "also count; they and your total appear after the due date. A passing visible test does not "
                     "mean a passing hidden test.")
        return _overview_tail(lines, record, grader_errors)
    bonus = ""
    if extra:
        bonus = (f" (including {sum(t['score'] for t in extra):g} of {sum(t['max_score'] for t in extra):g} "
                 "extra-credit points)")
    lines.append(f"**Score: {score:g} / {max_score:g}{bonus}.** This includes {len(hidden)} hidden tests whose "
                 "details appear after the due date; a passing public test does not mean a passing hidden test.")
    failed = sum(1 for r in record["tests"] if not r["passed"])
    lines.append(f"{len(record['tests']) - failed} of {len(record['tests'])} tests passed.")
    return _overview_tail(lines, record, grader_errors)


def _overview_tail(lines, record, grader_errors):
    for problem in record.get("problems", []):  # may name the submission's files and zip entries
        lines.append(f"- {md_text(problem)}")
    for event in dict.fromkeys(record.get("events", [])):  # each distinct event once, in order
        lines.append(f"- {md_text(event)}")
    if grader_errors or record.get("grader_error"):
        lines.append("**The grader itself failed on part of this submission; your instructor has been told. "
                     "Those tests are not counted against you yet.**")
    return "\n\n".join(lines)


def feedback_markdown(record, results, submitters=()):
    """A person's version of the report: parts, failures with their messages, and what the code printed."""
    lines = ["# Attention from Scratch: feedback", "", results["output"], "", "| Part | Score |", "|---|---|"]
    for part, (got, total) in part_scores(results).items():
        lines.append(f"| {PART_TITLES.get(part, part)} | {got:g} / {total:g} |")
    failures = [t for t in results["tests"] if t["status"] == "failed"]
    if failures:
        lines += ["", "## What to fix", ""]
        for test in failures:
            lines += [f"### {test['number']} {test['name']} (0 / {test['max_score']:g})", "", test["output"], ""]
    notes = [t for t in results["tests"] if t["status"] == "passed" and t["output"]]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {t['name']}: {t['output']}" for t in notes]
    if record.get("output"):
        lines += ["", "## What your code printed", "", fenced("\n".join(printed_output(record["output"])))]
    lines += ["", f"_Sandbox: {sandbox_description(record)}; graded in "
                  f"{record.get('execution_time', 0):.1f} s._", ""]
    return "\n".join(lines)


def sandbox_description(record):
    """The isolation level and the confinement layers and limits that were in force."""
    text = f"{record.get('isolation', 'unknown')} isolation"
    layers = list(record.get("containment") or [])
    if record.get("isolation") in ("uid", "rlimits") and not any(l.startswith(("landlock", "seccomp")) for l in layers):
        layers.append("no Landlock or seccomp layer available")
    if not any(l.startswith("cgroup") for l in layers):
        layers.append("limits per process, no cgroup")
    return f"{text} ({', '.join(layers)})"


def printed_output(output):
    """The start of what the submission printed, and how much more there was (the sandbox keeps 64 KiB)."""
    dropped = sum(int(n) for n in re.findall(r"\[\.\.\. (\d+) more bytes of output not kept\]", output))
    kept = re.sub(r"\n?\[\.\.\. \d+ more bytes of output not kept\]", "", output)
    dropped += max(len(kept.encode()) - OUTPUT_SHOWN, 0)
    lines = [kept[:OUTPUT_SHOWN]]
    if dropped:
        lines.append(f"[... {dropped} more bytes of output not kept; printing does not affect grading]")
    return lines


def part_scores(results):
    scores = {}
    for test in results["tests"]:
        part = test["tags"][0] if test["tags"] else "other"
        got, total = scores.get(part, (0.0, 0.0))
        scores[part] = (got + test["score"], total + test["max_score"])
    return dict(sorted(scores.items(), key=lambda item: part_number(item[0])))


# --- writing files ------------------------------------------------------------------------

def write_atomic(path, text):
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_submission(out_dir, submission_id, record, submitters=()):
    """Write results.json, feedback.md and feedback.html for one submission; returns the results dict."""
    results = results_json(record, submitters)
    folder = os.path.join(out_dir, submission_id)
    write_atomic(os.path.join(folder, "feedback.md"), feedback_markdown(record, results, submitters))
    write_atomic(os.path.join(folder, "feedback.html"), feedback_html(record, results))
    write_atomic(os.path.join(folder, "results.json"), json.dumps(results, indent=2) + "\n")  # last: marks done
    return results


def load_results(out_dir, submission_id):
    """The finished results of a submission, or None if it still needs grading."""
    try:
        with open(os.path.join(out_dir, submission_id, "results.json"), encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(results, dict) or results.get("extra_data", {}).get("grader_error"):
        return None
    return results


# Canvas's gradebook import needs these first, in this order; it finds each student by SIS User
# ID, then SIS Login ID, then name, and offers every later column as an assignment. Moodle maps
# any column, so the same file serves both (README: "Importing the gradebook").
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def gradebook_csv(entries):
    """One row per student (per submission when no names are known), ready for an LMS import."""
    parts = [p for p in PARTS if any(p in part_scores(r) for _, _, r in entries)]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([*CANVAS_COLUMNS, "total", *parts, "max", "submission_id", "email"])
    for submission_id, submitters, results in entries:
        scores = part_scores(results)
        per_part = [f"{scores.get(p, (0.0, 0.0))[0]:g}" for p in parts]
        total, max_score = f"{results['score']:g}", f"{results['extra_data']['max_score']:g}"
        for who in submitters or [None]:
            # ID is Canvas's own user id, which the grader never knows: left empty, never guessed.
            name, sid, email = (who.name or submission_id, who.sid, who.email) if who else (submission_id, "", "")
            name, sid, email, shown_id = map(spreadsheet_cell, (name, sid, email, submission_id))
            writer.writerow([name, "", sid, email, "", total, *per_part, max_score, shown_id, email])
    return buffer.getvalue()


def pass_rates(entries):
    """[((number, name, part), (passed, total))] over the class, the most failed test first."""
    rates = {}
    for _, _, results in entries:
        for test in results["tests"]:
            key = (test["number"], test["name"], test["tags"][0] if test["tags"] else "")
            passed, total = rates.get(key, (0, 0))
            rates[key] = (passed + (test["status"] == "passed"), total + 1)
    return sorted(rates.items(), key=lambda item: (item[1][0] / item[1][1], item[0]))


def summary_markdown(entries, renamed=()):
    """Score distribution and which tests the class fails most; ``renamed``: (name, report id) pairs."""
    scores = [r["score"] for _, _, r in entries]
    lines = ["# Class summary", ""]
    if not scores:
        return "\n".join(lines + ["No submissions were graded.", ""])
    max_score = entries[0][2]["extra_data"]["max_score"]
    lines += [f"{len(scores)} submissions; mean {statistics.mean(scores):.1f}, median {statistics.median(scores):g}, "
              f"min {min(scores):g}, max {max(scores):g} (out of {max_score:g}).", "", "## Score distribution", "",
              "| Score | Submissions |", "|---|---|"]
    for low in range(0, 100, 10):
        count = sum(1 for s in scores if low <= s / max_score * 100 < low + 10 or (low == 90 and s == max_score))
        lines.append(f"| {low}-{low + 9 if low < 90 else 100}% | {'#' * count} {count} |")
    lines += ["", "## Pass rate per test (most failed first)", "", "| Test | Part | Passed |", "|---|---|---|"]
    for (number, name, part), (passed, total) in pass_rates(entries):
        lines.append(f"| {number} {name} | {part} | {passed}/{total} ({100 * passed / total:.0f}%) |")
    errors = [sid for sid, _, r in entries if r["extra_data"].get("grader_error")]
    if errors:
        lines += ["", f"**Grader errors in: {', '.join(md_text(e) for e in errors)}** (re-run to retry them)."]
    if renamed:
        lines += ["", renamed_line(renamed, md_text)]
    return "\n".join(lines) + "\n"


def renamed_line(renamed, escape):
    """One sentence: which submissions got another report folder name, and why."""
    pairs = ", ".join(f"{escape(repr(old))} -> {escape(new)}" for old, new in renamed)
    return f"Renamed (the name is not safe as a report folder, or is taken by a class file): {pairs}."


# --- HTML pages: self-contained (CSS and PNGs inline), so they open from disk or as attachments ---

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""
CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
       background: #f6f8fa; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 12px; }
h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 24px 0 6px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px;
      overflow-x: auto; font: 13px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre.message, .pre { white-space: pre-wrap; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.bug { background: #fff8c5; border-left: 4px solid #d4a72c; padding: 6px 12px; margin: 6px 0; }
.note { color: #57606a; font-size: 13px; }
.bar { background: #d0d7de; width: 160px; height: 10px; border-radius: 5px; overflow: hidden; }
.bar span { display: block; height: 100%; background: #2da44e; }
.low .bar span { background: #cf222e; }
.failed { color: #cf222e; }
"""


def _e(text):
    """Escape anything that may come from a submission (names, messages, what it printed)."""
    return html.escape(clean(text), quote=True)


def _page(title, body):
    return PAGE.format(title=_e(title), css=CSS, body=body)


def _drawn(draw, *args):
    """draw(*args), or None: a picture that cannot be drawn must not cost the report it is in."""
    try:
        return draw(*args)
    except Exception as err:  # noqa: BLE001 - matplotlib can fail in many ways; the report comes first
        sys.stderr.write(f"warning: {draw.__name__} failed: {type(err).__name__}: {err}\n")
        return None


def _png_img(png, alt):
    return f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="{_e(alt)}">'


def _overview_html(text):
    """The overview's markdown (paragraphs, "- " items, **bold**) as HTML, everything else escaped.

    Written out rather than a markdown library: each forked grader would pay ~40 ms to import one."""
    blocks, items = [], []
    for block in text.split("\n\n") + [""]:
        # md_text's backslash escapes become the characters again; _e makes them inert here.
        parts = re.split(r"\\(.)", block)  # text, escaped character, text, ...
        inline = "".join(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", _e(part)) if i % 2 == 0 else _e(part)
                         for i, part in enumerate(parts))
        if block.startswith("- "):
            items.append(f"<li>{inline[2:]}</li>")
            continue
        if items:
            blocks.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if block:
            blocks.append(f"<p>{inline}</p>")
    return "\n".join(blocks)


def _bar(fraction):
    css_class = ' class="low"' if fraction < 0.5 else ""
    return f'<div{css_class}><div class="bar"><span style="width: {100 * fraction:.0f}%"></span></div></div>'


def feedback_html(record, results):
    """feedback.md as a page, with the first few failed matrix comparisons drawn as PNG heatmaps."""
    body = ["<h1>Attention from Scratch: feedback</h1>", _overview_html(results["output"]),
            "<table><tr><th>Part</th><th>Score</th><th></th></tr>"]
    for part, (got, total) in part_scores(results).items():
        body.append(f'<tr><td>{_e(PART_TITLES.get(part, part))}</td><td class="num">{got:g} / {total:g}</td>'
                    f"<td>{_bar(got / total if total else 1)}</td></tr>")
    body.append("</table>")
    failures = [(test, result) for test, result in zip(results["tests"], record["tests"]) if test["status"] == "failed"]
    if failures:
        body.append("<h2>What to fix</h2>")
        drawn = {}  # picture key -> number of the test whose picture shows it
        for test, result in failures:
            body += [f'<h3 class="failed">{_e(test["number"])} {_e(test["name"])} (0 / {test["max_score"]:g})</h3>',
                     *_failure_html(test, result, drawn)]
    notes = [t for t in results["tests"] if t["status"] == "passed" and t["output"]]
    if notes:
        body.append("<h2>Notes</h2><ul>")
        body += [f'<li><strong>{_e(t["name"])}</strong>: <span class="pre">{_e(t["output"])}</span></li>'
                 for t in notes]
        body.append("</ul>")
    if record.get("output"):
        body += ["<h2>What your code printed</h2>", f"<pre>{_e(chr(10).join(printed_output(record['output'])))}</pre>"]
    body.append(f'<p class="note">Sandbox: {_e(sandbox_description(record))}; graded in '
                f'{record.get("execution_time", 0):.1f} s.</p>')
    return _page("Attention from Scratch: feedback", "\n".join(body))


def _failure_html(test, result, drawn):
    """One failed test: the named bug (if any), the message, and its heatmap as a PNG or as text."""
    message = result["message"] or ""
    parts = []
    if message.startswith(LIKELY_BUG):
        sentence, _, message = message.partition("\n")
        parts.append(f'<p class="bug"><strong>Likely bug</strong> (<code>{_e(result.get("mistake"))}</code>): '
                     f"{_e(sentence[len(LIKELY_BUG):])}</p>")
    parts.append(f'<pre class="message">{_e(message)}</pre>')
    figure = result.get("figure")
    if figure:
        parts.append(_figure_html(test, result, figure, drawn))
    return parts


def _figure_html(test, result, figure, drawn):
    # PNGs only where a picture says most (masks and attention weights; the issue asks for those),
    # once per named bug (the same mistake in eight tests looks the same eight times) and once per
    # kind of unnamed failure in a part: each PNG costs ~40-70 ms of CPU.
    mistake = result.get("mistake")
    key = (figure["what"], "bug", mistake) if mistake else (figure["what"], "part", result["part"])
    if figure["what"] not in PICTURED:
        why = None
    elif key in drawn:
        why = (f"the same likely bug as {drawn[key]}" if mistake else f"a failure like {drawn[key]}") + ", drawn above"
    elif len(drawn) >= MAX_PICTURES:
        why = f"at most {MAX_PICTURES} pictures are drawn per report"
    else:
        png = _drawn(pictures.png_heatmap, figure)
        if png:
            drawn[key] = test["number"]
            return _png_img(png, f"{figure['what']}: expected, got and their difference")
        why = "the picture could not be drawn"
    note = f" ({_e(why)})" if why else ""
    return f'<p class="note">As text{note}:</p><pre>{_e(pictures.text_heatmap(figure))}</pre>'


def summary_html(entries, out_dir, renamed=()):
    """The class picture as a page: score histogram, common named bugs, pass rates, links to each report."""
    body = ["<h1>Class summary</h1>"]
    if renamed:
        body.append(f"<p>{renamed_line(renamed, _e)}</p>")
    scores = [r["score"] for _, _, r in entries]
    if not scores:
        body.append("<p>No submissions were graded.</p>")
        return _page("Class summary", "\n".join(body))
    max_score = entries[0][2]["extra_data"]["max_score"]
    body.append(f"<p>{len(scores)} submissions; mean {statistics.mean(scores):.1f}, median "
                f"{statistics.median(scores):g}, min {min(scores):g}, max {max(scores):g} (out of {max_score:g}).</p>")
    body.append('<p><a href="#bugs">Most common named bugs</a> · <a href="#tests">Pass rate per test</a> · '
                '<a href="#submissions">Submissions, with links to their reports</a></p>')
    histogram = _drawn(pictures.score_histogram_png, scores, max_score)
    if histogram:
        body.append(_png_img(histogram, "histogram of the scores"))
    body += _common_bugs_html(entries, out_dir)
    body += ['<h2 id="tests">Pass rate per test (most failed first)</h2>',
             "<table><tr><th>Test</th><th>Part</th><th>Passed</th><th></th></tr>"]
    for (number, name, part), (passed, total) in pass_rates(entries):
        body.append(f'<tr><td>{_e(number)} {_e(name)}</td><td>{_e(part)}</td><td class="num">{passed}/{total} '
                    f"({100 * passed / total:.0f}%)</td><td>{_bar(passed / total)}</td></tr>")
    body += ["</table>", '<h2 id="submissions">Submissions</h2>',
             "<table><tr><th>Submission</th><th>Student</th><th>Score</th><th>Named bugs</th></tr>"]
    for submission_id, submitters, results in entries:
        names = ", ".join(s.name or s.email for s in submitters)
        error = ' <strong class="failed">grader error</strong>' if results["extra_data"].get("grader_error") else ""
        bugs = ", ".join(f"<code>{_e(m)}</code>" for m in _mistakes(results))
        body.append(f"<tr><td>{_report_link(submission_id, out_dir)}</td><td>{_e(names)}</td>"
                    f'<td class="num">{results["score"]:g} / {results["extra_data"]["max_score"]:g}{error}</td>'
                    f"<td>{bugs}</td></tr>")
    body.append("</table>")
    return _page("Class summary", "\n".join(body))


def _common_bugs_html(entries, out_dir):
    counts, sentences, who = Counter(), {}, {}
    for submission_id, _, results in entries:
        for mistake, sentence in _mistakes(results).items():
            counts[mistake] += 1
            sentences.setdefault(mistake, sentence)
            who.setdefault(mistake, []).append(submission_id)
    parts = ['<h2 id="bugs">Most common named bugs</h2>']
    if not counts:
        return parts + ["<p>No failed test matched a catalogued mistake.</p>"]
    parts.append("<table><tr><th>Bug</th><th>Submissions</th><th>What it is</th><th>For example</th></tr>")
    for mistake, count in counts.most_common():
        examples = ", ".join(_report_link(s, out_dir) for s in who[mistake][:5])
        parts.append(f'<tr><td><code>{_e(mistake)}</code></td><td class="num">{count} of {len(entries)}</td>'
                     f"<td>{_e(sentences[mistake])}</td><td>{examples}</td></tr>")
    return parts + ["</table>"]


def _mistakes(results):
    """{mistake name: its sentence} for the named bugs in one submission's results.json."""
    found = {}
    for test in results["tests"]:
        mistake = test.get("extra_data", {}).get("mistake")
        if mistake and mistake not in found:
            first_line = test["output"].strip("`\n").split("\n", 1)[0]
            found[mistake] = first_line.removeprefix(LIKELY_BUG)
    return found


def _report_link(submission_id, out_dir):
    """A relative link to the submission's feedback.html, or just its name when there is none yet."""
    if not os.path.exists(os.path.join(out_dir, submission_id, "feedback.html")):
        return _e(submission_id)
    return f'<a href="{_e(urllib.parse.quote(submission_id, safe=""))}/feedback.html">{_e(submission_id)}</a>'
