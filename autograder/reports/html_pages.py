"""feedback.html and summary.html: the reports as pages, self-contained (CSS and PNGs inline) so
they open from disk or as attachments.

feedback.html draws the first few failed matrix comparisons as PNG heatmaps; summary.html adds a
chart of the scores (in HTML: the class page needs no plotting library), the most common named
bugs and links to each submission's page. Everything from
a submission is HTML-escaped, and the pages' CSP allows no script.
"""
import base64
import html
import os
import re
import statistics
import sys
import urllib.parse

from autograder.reports import pictures
from autograder.reports.classbook import (LIKELY_BUG, NOT_GRADED_TEXT, common_bugs, core_and_extra, graded_entries,
                                  named_bugs, not_graded, pass_rates, renamed_line, score_bands, status_of,
                                  submission_label)
from autograder.reports.feedback import not_run, printed_output, sandbox_description
from autograder.reports.inert_text import clean
from autograder.parts import PART_TITLES
from autograder.reports.results import GRADED, part_scores

MAX_PICTURES = 6  # PNG heatmaps per feedback.html: each one is drawn in the submission's grading time
PICTURED = {"mask", "weights"}  # what gets a PNG; other matrices (results, gradients) stay text

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
.bands { display: flex; align-items: flex-end; gap: 6px; height: 180px; margin: 8px 0 4px; }
.band { display: flex; flex-direction: column; align-items: center; justify-content: flex-end; width: 58px;
        height: 100%; font-size: 12px; color: #57606a; }
.band .column { display: block; width: 42px; background: #4c72b0; }
.band .label { border-top: 1px solid #57606a; width: 100%; text-align: center; }
"""
CHART_HEIGHT = 130  # pixels of the tallest column in the score chart


def _e(text):
    """Escape anything that may come from a submission (names, messages, what it printed)."""
    return html.escape(clean(text), quote=True)


def _page(title, body):
    return PAGE.format(title=_e(title), css=CSS, body=body)


def _drawn(draw, *args):
    """draw(*args), or None: a picture that cannot be drawn must not cost the report it is in."""
    try:
        return draw(*args)
    except Exception as err:  # noqa: BLE001 - a drawing library can fail in many ways; the report comes first
        sys.stderr.write(f"warning: {draw.__name__} failed: {type(err).__name__}: {err}\n")
        return None


def _png_img(png, alt):
    return f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="{_e(alt)}">'


def _overview_html(text):
    """The overview's markdown (paragraphs, "- " items, **bold**) as HTML, everything else escaped.

    Written out rather than a markdown library: each forked grader would pay to import one."""
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


def _score_chart(scores, max_score, caption=None):
    """How many submissions scored in each tenth of the maximum, as columns."""
    bands = score_bands(scores, max_score)
    tallest = max(count for _, count in bands) or 1
    columns = "".join(f'<div class="band"><span>{count}</span><span class="column" style="height: '
                      f'{CHART_HEIGHT * count / tallest:.0f}px"></span><span class="label">{label}</span></div>'
                      for label, count in bands)
    caption = caption or f"Scores of {len(scores)} submissions (% of the maximum)"
    return f'<figure><figcaption>{_e(caption)}</figcaption><div class="bands">{columns}</div></figure>'


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
    failures = [] if not_run(results) else [(test, result) for test, result in zip(results["tests"], record["tests"])
                                            if test["status"] == "failed"]
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
    shown, note = printed_output(record)
    if shown or note:
        body += ["<h2>What your code printed</h2>", f"<pre>{_e(shown)}</pre>"]
        body += [f'<p class="note">{_e(note)}</p>'] if note else []
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
    # PNGs only where a picture says most (masks and attention weights), once per named bug (the
    # same mistake in eight tests looks the same eight times) and once per kind of unnamed failure
    # in a part: drawing a PNG is the costliest step of writing a report.
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
    return f'<p class="note">As text{note}:</p><pre>{_e(pictures.text_or_note(figure))}</pre>'


def summary_html(entries, out_dir, renamed=()):
    """The class picture as a page: score histogram, common named bugs, pass rates, links to each report."""
    body = ["<h1>Class summary</h1>"]
    for status, ids in not_graded(entries).items():
        body.append(f'<p class="failed"><strong>{_e(NOT_GRADED_TEXT[status])}:</strong> '
                    f'{", ".join(_report_link(i, out_dir, submission_label(i, who)) for i, who in ids)}.</p>')
    if renamed:
        body.append(f"<p>{renamed_line(renamed, _e)}</p>")
    listed, entries = entries, graded_entries(entries)
    scores = [r["score"] for _, _, r in entries]
    if not scores:
        body.append("<p>No submissions were graded.</p>")
        return _page("Class summary", "\n".join(body))
    max_score = entries[0][2]["extra_data"]["max_score"]
    body.append(f"<p>{len(scores)} submissions; mean {statistics.mean(scores):.1f}, median "
                f"{statistics.median(scores):g}, min {min(scores):g}, max {max(scores):g} (out of {max_score:g}). "
                f"{_e(core_and_extra(entries))}</p>")
    body.append('<p><a href="#bugs">Most common named bugs</a> · <a href="#tests">Pass rate per test</a> · '
                '<a href="#submissions">Submissions, with links to their reports</a></p>')
    body.append(_score_chart(scores, max_score))
    body += _common_bugs_html(entries, out_dir)
    body += ['<h2 id="tests">Pass rate per test (most failed first)</h2>',
             "<table><tr><th>Test</th><th>Part</th><th>Passed</th><th></th></tr>"]
    for (number, name, part), (passed, total) in pass_rates(entries):
        body.append(f'<tr><td>{_e(number)} {_e(name)}</td><td>{_e(part)}</td><td class="num">{passed}/{total} '
                    f"({100 * passed / total:.0f}%)</td><td>{_bar(passed / total)}</td></tr>")
    body += ["</table>", '<h2 id="submissions">Submissions</h2>',
             "<table><tr><th>Submission</th><th>Student</th><th>Score</th><th>Named bugs</th></tr>"]
    for submission_id, submitters, results in listed:
        names = ", ".join(s.name or s.email for s in submitters)
        error = "" if status_of(results) == GRADED else f' <strong class="failed">{_e(status_of(results))}</strong>'
        bugs = ", ".join(f"<code>{_e(m)}</code>" for m in named_bugs(results))
        body.append(f"<tr><td>{_report_link(submission_id, out_dir)}</td><td>{_e(names)}</td>"
                    f'<td class="num">{results["score"]:g} / {results["extra_data"]["max_score"]:g}{error}</td>'
                    f"<td>{bugs}</td></tr>")
    body.append("</table>")
    return _page("Class summary", "\n".join(body))


def summary_anonymous_html(entries):
    """The class picture for a lecture: no name, id or link anywhere. The core score (extra credit apart)
    and its distribution, each part's mean, the extra credit on its own, the common bugs with their counts."""
    body = ["<h1>Class summary</h1>"]
    skipped = len(entries) - len(graded_entries(entries))
    entries = graded_entries(entries)
    if not entries:
        return _page("Class summary", "\n".join(body + ["<p>No submissions were graded.</p>"]))
    max_score = entries[0][2]["extra_data"]["max_score"]
    core = [r["score"] - r["extra_data"].get("extra_credit", 0.0) for _, _, r in entries]
    extra = [r["extra_data"].get("extra_credit", 0.0) for _, _, r in entries]
    body.append(f"<p>{len(core)} submissions graded" + (f" ({skipped} not graded, left out)" if skipped else "") +
                f". Core score, extra credit apart: mean {statistics.mean(core):.1f}, median "
                f"{statistics.median(core):g} (out of {max_score:g}).</p>")
    body.append(_score_chart(core, max_score))
    body += ["<h2>Each part</h2>", "<table><tr><th>Part</th><th>Mean</th><th></th></tr>"]
    for part, (mean, points) in _part_means(entries).items():
        body.append(f'<tr><td>{_e(PART_TITLES.get(part, part))}</td><td class="num">{mean:.1f} / {points:g}</td>'
                    f"<td>{_bar(mean / points if points else 1)}</td></tr>")
    body.append("</table>")
    body.append("<h2>Each part's scores</h2>")
    for part, (scores, points) in _part_scores_of(entries).items():
        body.append(_score_chart(scores, points, f"{PART_TITLES.get(part, part)}: scores of {len(scores)} "
                                                 f"submissions (% of its {points:g} points)"))
    earned = sum(1 for e in extra if e > 0)
    body.append(f"<p>Extra credit (not in the core figures): {earned} of {len(extra)} submissions earned some; "
                f"mean {statistics.mean(extra):.1f} of {entries[0][2]['extra_data'].get('extra_credit_max', 0):g}.</p>")
    body += ["<h2>Most common named bugs</h2>"]
    bugs = common_bugs(entries)
    if not bugs:
        body.append("<p>No failed test matched a catalogued mistake.</p>")
    else:
        body.append("<table><tr><th>Bug</th><th>Submissions</th><th>What it is</th></tr>")
        body += [f'<tr><td><code>{_e(defect)}</code></td><td class="num">{len(ids)} of {len(entries)}</td>'
                 f"<td>{_e(sentence)}</td></tr>" for defect, sentence, ids in bugs]
        body.append("</table>")
    return _page("Class summary", "\n".join(body))


def _part_means(entries):
    """{part: (mean score, its points)} over graded entries, in the lab's order."""
    return {part: (statistics.mean(got), points) for part, (got, points) in _part_scores_of(entries).items()}


def _part_scores_of(entries):
    """{part: ([each graded entry's score in it], its points)}, in the lab's order."""
    totals = {}
    for _, _, results in entries:
        for part, (got, points) in part_scores(results).items():
            totals.setdefault(part, ([], points))[0].append(got)
    return totals


def _common_bugs_html(entries, out_dir):
    parts = ['<h2 id="bugs">Most common named bugs</h2>']
    bugs = common_bugs(entries)
    if not bugs:
        return parts + ["<p>No failed test matched a catalogued mistake.</p>"]
    parts.append("<table><tr><th>Bug</th><th>Submissions</th><th>What it is</th><th>For example</th></tr>")
    for defect, sentence, ids in bugs:
        examples = ", ".join(_report_link(i, out_dir, submission_label(i, who)) for i, who in ids[:5])
        parts.append(f'<tr><td><code>{_e(defect)}</code></td><td class="num">{len(ids)} of {len(entries)}</td>'
                     f"<td>{_e(sentence)}</td><td>{examples}</td></tr>")
    return parts + ["</table>"]


def _report_link(submission_id, out_dir, label=None):
    """A relative link to the submission's feedback.html, or just its name when there is none yet."""
    label = _e(label or submission_id)
    if not os.path.exists(os.path.join(out_dir, submission_id, "feedback.html")):
        return label
    return f'<a href="{_e(urllib.parse.quote(submission_id, safe=""))}/feedback.html">{label}</a>'
