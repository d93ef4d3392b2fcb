"""feedback.md: one submission's report for a person (parts, failures with their messages, and
what the code printed), and the sentences it shares with feedback.html.
"""
from autograder.reports.inert_text import fenced
from autograder.parts import PART_TITLES
from autograder.reports.results import NO_FILES, part_scores

OUTPUT_SHOWN = 4000


def feedback_markdown(record, results, submitters=()):
    """A person's version of the report: parts, failures with their messages, and what the code printed."""
    lines = ["# Attention from Scratch: feedback", "", results["output"], "", "| Part | Score |", "|---|---|"]
    for part, (got, total) in part_scores(results).items():
        lines.append(f"| {PART_TITLES.get(part, part)} | {got:g} / {total:g} |")
    failures = [] if not_run(results) else [t for t in results["tests"] if t["status"] == "failed"]
    if failures:
        lines += ["", "## What to fix", ""]
        for test in failures:
            lines += [f"### {test['number']} {test['name']} (0 / {test['max_score']:g})", "", test["output"], ""]
    notes = [t for t in results["tests"] if t["status"] == "passed" and t["output"]]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {t['name']}: {t['output']}" for t in notes]
    shown, note = printed_output(record)
    if shown or note:
        lines += ["", "## What your code printed", "", fenced(shown)] + (["", f"_{note}_"] if note else [])
    lines += ["", f"_Sandbox: {sandbox_description(record)}; graded in "
                  f"{record.get('execution_time', 0):.1f} s._", ""]
    return "\n".join(lines)


def not_run(results):
    """True when no test ran (no file to test): the overview says why, once, and no test is listed."""
    return results["extra_data"].get("status") == NO_FILES


def sandbox_description(record):
    """The isolation level and the confinement layers and limits that were in force."""
    text = f"{record.get('isolation', 'unknown')} isolation"
    layers = list(record.get("containment") or [])
    if record.get("isolation") in ("uid", "rlimits") and not any(l.startswith(("landlock", "seccomp")) for l in layers):
        layers.append("no Landlock or seccomp layer available")
    if not any(l.startswith("cgroup") for l in layers):
        layers.append("limits per process, no cgroup")
    return f"{text} ({', '.join(layers)})"


def printed_output(record):
    """(the start of what the submission printed, the grader's note on how much more there was or None).

    The text is the student's alone; the count is the grader's (``output_dropped``: what each child printed
    past the sandbox's 64 KiB, plus what is cut here), kept apart so that no printed line can pass for it."""
    output = record.get("output")
    output = output if isinstance(output, str) else ""
    dropped = record.get("output_dropped")
    dropped = dropped if type(dropped) is int and dropped > 0 else 0
    shown = output[:OUTPUT_SHOWN]
    dropped += len(output[OUTPUT_SHOWN:].encode("utf-8", "replace"))
    note = f"{dropped} more bytes of output not kept; printing does not affect grading." if dropped else None
    return shown, note
