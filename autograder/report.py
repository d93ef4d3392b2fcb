"""Score reports, written by the trusted grader after the submission's processes are gone.

* ``results.json``: Gradescope's results schema, one per submission;
* ``feedback.md``: the same, for a person;
* ``gradebook.csv`` and ``summary.md``: the class picture.

Every file is written atomically (temp file, then rename): a batch killed halfway leaves
whole reports or none, which is what makes re-running a batch resume it.
"""
import csv
import dataclasses
import io
import json
import os
import re
import statistics
import tempfile

from autograder.plugin import PARTS

PART_TITLES = {
    "masks": "Masks", "attention": "Attention values", "gradients": "Gradients, dtypes, stability",
    "mha_init": "MHA construction", "heads": "Head split/merge", "mha_forward": "MHA forward",
    "rules": "From-scratch rule", "other": "Other",
}
OUTPUT_SHOWN = 4000


def results_json(record, submitters=()):
    """The Gradescope results dict for one graded submission record."""
    tests = []
    counters = {}
    for result in record["tests"]:
        part = result["part"]
        counters[part] = counters.get(part, 0) + 1
        number = f"{_part_number(part)}.{counters[part]}"
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
    max_score = round(sum(t["max_score"] for t in tests), 4)
    grader_errors = [r["name"] for r in record["tests"] if r.get("grader_error")]
    return {
        "score": score,
        "execution_time": record.get("execution_time", 0.0),
        "output": overview(record, score, max_score, grader_errors, submitters),
        "output_format": "md",
        "test_output_format": "md",
        "tests": tests,
        "extra_data": {
            "max_score": max_score,
            "isolation": record.get("isolation", "unknown"),
            "grader_error": bool(grader_errors) or bool(record.get("grader_error")),
            "submitters": [dataclasses.asdict(s) for s in submitters],
        },
    }


def _part_number(part):
    return PARTS.index(part) + 1 if part in PARTS else len(PARTS) + 1


def _test_output(result):
    text = result["message"]
    return f"```\n{text}\n```" if text and not result["passed"] else text


def overview(record, score, max_score, grader_errors, submitters=()):
    """The top of the report: the score so far, stated so that nobody mistakes it for a final grade."""
    lines = []
    if submitters:
        lines.append("Submission of " + ", ".join(s.name for s in submitters if s.name) + ".")
    hidden = [r for r in record["tests"] if r["visibility"] != "visible"]
    lines.append(f"**Score: {score:g} / {max_score:g}.** This includes {len(hidden)} hidden tests whose "
                 "details appear after the due date; a passing public test does not mean a passing hidden test.")
    failed = sum(1 for r in record["tests"] if not r["passed"])
    lines.append(f"{len(record['tests']) - failed} of {len(record['tests'])} tests passed.")
    for problem in record.get("problems", []):
        lines.append(f"- {problem}")
    for event in dict.fromkeys(record.get("events", [])):  # each distinct event once, in order
        lines.append(f"- {event}")
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
        lines += ["", "## What your code printed", "", "```", *printed_output(record["output"]), "```"]
    lines += ["", f"_Sandbox: {record.get('isolation', 'unknown')} isolation; graded in "
                  f"{record.get('execution_time', 0):.1f} s._", ""]
    return "\n".join(lines)


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
    return dict(sorted(scores.items(), key=lambda item: _part_number(item[0])))


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
    """Write results.json and feedback.md for one submission; returns the results dict."""
    results = results_json(record, submitters)
    folder = os.path.join(out_dir, submission_id)
    write_atomic(os.path.join(folder, "feedback.md"), feedback_markdown(record, results, submitters))
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


def gradebook_csv(entries):
    """One row per student (per submission when no names are known), one column per part."""
    parts = [p for p in PARTS if any(p in part_scores(r) for _, _, r in entries)]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["submission_id", "name", "email", "sid", "total", "max"] + [f"{p}" for p in parts])
    for submission_id, submitters, results in entries:
        scores = part_scores(results)
        per_part = [f"{scores.get(p, (0.0, 0.0))[0]:g}" for p in parts]
        totals = [f"{results['score']:g}", f"{results['extra_data']['max_score']:g}"]
        for who in submitters or [None]:
            person = [who.name, who.email, who.sid] if who else ["", "", ""]
            writer.writerow([submission_id, *person, *totals, *per_part])
    return buffer.getvalue()


def summary_markdown(entries):
    """Score distribution and which tests the class fails most."""
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
    rates = {}
    for _, _, results in entries:
        for test in results["tests"]:
            key = (test["number"], test["name"], test["tags"][0] if test["tags"] else "")
            passed, total = rates.get(key, (0, 0))
            rates[key] = (passed + (test["status"] == "passed"), total + 1)
    for (number, name, part), (passed, total) in sorted(rates.items(), key=lambda i: (i[1][0] / i[1][1], i[0])):
        lines.append(f"| {number} {name} | {part} | {passed}/{total} ({100 * passed / total:.0f}%) |")
    errors = [sid for sid, _, r in entries if r["extra_data"].get("grader_error")]
    if errors:
        lines += ["", f"**Grader errors in: {', '.join(errors)}** (re-run to retry them)."]
    return "\n".join(lines) + "\n"
