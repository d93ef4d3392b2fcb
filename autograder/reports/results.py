"""Gradescope's results.json for one graded submission, built from the grader's record of it.

Each failed matrix comparison carries a text heatmap under its message (Gradescope shows no
images). Standard library only: the schema can be built and tested without torch or pytest.
"""
import dataclasses

from autograder.reports import pictures
from autograder.reports.inert_text import fenced, md_text
from autograder.parts import EXTRA_PARTS, part_number


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
            **({"extra_data": _named(result)} if result.get("mistake") else {}),
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
            "status": status(record, grader_errors),
            **({"why_not_graded": _why_not_graded(record, grader_errors)}
               if status(record, grader_errors) != GRADED else {}),
            "submitters": [_submitter(s) for s in submitters],
            **({"fingerprint": record["fingerprint"]} if record.get("fingerprint") else {}),
            **({"cpu_seconds": record["cpu_seconds"]} if "cpu_seconds" in record else {}),  # what the time limits count
            **({"regraded": record["regraded"]} if record.get("regraded") else {}),
        },
    }


# What the class files say a submission is: graded, not graded because it held neither file (not
# the same as scoring 0), or not (fully) graded because the grader failed.
GRADED, NO_FILES, GRADER_ERROR = "graded", "no files", "grader error"


def status(record, grader_errors=()):
    """The submission's status, from what the trusted grader staged (``found``: file name -> path),
    never from anything the child said."""
    if grader_errors or record.get("grader_error"):
        return GRADER_ERROR
    return NO_FILES if "found" in record and not record["found"] else GRADED


def _why_not_graded(record, grader_errors):
    """One line for the console and the class files: the first problem staging met, or the grader's error."""
    if record.get("grader_error"):
        return f"grader error: {record['grader_error']}"[:300]
    if grader_errors:
        return f"grader error in {len(grader_errors)} test(s), first {grader_errors[0]}"[:300]
    return (record.get("problems") or ["neither attention.py nor mha.py"])[0][:300]


def _submitter(who):
    """Name, email and SID, and the LMS identity only when an LMS download gave one."""
    return {key: value for key, value in dataclasses.asdict(who).items() if key in ("name", "email", "sid") or value}


def _named(result):
    """The test's named bug, and the defects it is made of when it is several at once."""
    return {"mistake": result["mistake"], **({"defects": result["defects"]} if result.get("defects") else {})}


def _all_points_visible(tests):
    return all(t["visibility"] == "visible" for t in tests if t["max_score"] > 0)


def _test_output(result):
    text = result["message"]
    if not text or result["passed"]:
        return text
    if result.get("figure"):
        text += "\n\n" + pictures.text_or_note(result["figure"])
    return fenced(text)


# What Gradescope does with a test that is not ``visible`` (its autograder specification): it shows it
# after the due date, or once the instructor publishes the grades, or never. While a test of the first
# two kinds is not shown, the student's total is not shown either; ``hidden`` is meant for tests without points.
SHOWN_TO_STUDENTS = {"after_due_date": "shown after the due date",
                     "after_published": "shown once the grades are published", "hidden": "never shown"}
HIDES_THE_TOTAL = ("after_due_date", "after_published")


def overview(record, score, max_score, grader_errors, submitters=(), extra=(), reveal_total=True):
    """The top of the report: the score so far, stated so that nobody mistakes it for a final grade.

    Without ``reveal_total`` it states only what the visible tests earned, as Gradescope shows students.
    With it, it is the instructor's full report, and says which of its tests students do not see at once.
    """
    lines = []
    if submitters:
        lines.append("Submission of " + ", ".join(md_text(s.name) for s in submitters if s.name) + ".")
    if status(record, grader_errors) == NO_FILES:  # no test ran: one line says why, not one per test
        lines.append("**Not graded: the submission has neither attention.py nor mha.py.**")  # no score, not 0
        return _overview_tail(lines, record, grader_errors)
    not_shown = _not_shown(record["tests"])
    with_total = _with_total(not_shown)
    if not reveal_total:
        shown = [r for r in record["tests"] if r["visibility"] == "visible"]
        got = sum(r["points"] for r in shown if r["passed"])
        your_total = with_total.replace("the student's", "your")
        lines.append(f"**Visible tests: {got:g} / {sum(r['points'] for r in shown):g} points, "
                     f"{sum(1 for r in shown if r['passed'])} of {len(shown)} passed.** {_counted(not_shown)} "
                     f"{_verb(not_shown, 'also counts', 'also count')}: {_when_shown(not_shown)}{your_total}. "
                     "A passing visible test does not mean a passing hidden test.")
        return _overview_tail(lines, record, grader_errors)
    bonus = ""
    if extra:
        bonus = (f" (including {sum(t['score'] for t in extra):g} of {sum(t['max_score'] for t in extra):g} "
                 "extra-credit points)")
    failed = sum(1 for r in record["tests"] if not r["passed"])
    lines.append(f"**Score: {score:g} / {max_score:g}{bonus}.** "
                 f"{len(record['tests']) - failed} of {len(record['tests'])} tests passed.")
    if not_shown:
        lines.append(f"This report shows every test. On Gradescope, {sum(not_shown.values())} of these tests "
                     f"{_verb(not_shown, 'is', 'are')} not shown to the student at once: {_when_shown(not_shown)}"
                     f"{with_total}. A passing public test does not mean a passing hidden test.")
    return _overview_tail(lines, record, grader_errors)


def _with_total(not_shown):
    """When the student's total is shown too (Gradescope: with the last test that carries points)."""
    later = [v for v in not_shown if v in HIDES_THE_TOTAL]
    if not later:
        return ""
    if len(not_shown) == 1:
        return f", and the student's total with {_verb(not_shown, 'it', 'them')}"
    return f"; the student's total is shown with the tests {SHOWN_TO_STUDENTS[later[-1]]}"


def _not_shown(tests):
    """{visibility: number of tests} of the tests a student does not see at once, in Gradescope's order."""
    counts = {}
    for test in tests:
        if test["visibility"] != "visible":
            counts[test["visibility"]] = counts.get(test["visibility"], 0) + 1
    return {v: counts[v] for v in SHOWN_TO_STUDENTS if v in counts}


def _counted(not_shown):
    return f"{sum(not_shown.values())} hidden {_verb(not_shown, 'test', 'tests')}"


def _verb(not_shown, one, more):
    return one if sum(not_shown.values()) == 1 else more


def _when_shown(not_shown):
    """"they are shown after the due date", or one clause per visibility when they differ."""
    if len(not_shown) == 1:
        (visibility, count), = not_shown.items()
        return f"{'it is' if count == 1 else 'they are'} {SHOWN_TO_STUDENTS[visibility]}"
    return ", ".join(f"{count} {'is' if count == 1 else 'are'} {SHOWN_TO_STUDENTS[v]}" for v, count in not_shown.items())


def _overview_tail(lines, record, grader_errors):
    if record.get("regraded"):
        lines.append(f"Regraded: {md_text(record['regraded'])} since the last grading.")
    for problem in record.get("problems", []):  # may name the submission's files and zip entries
        lines.append(f"- {md_text(problem)}")
    for event in dict.fromkeys(record.get("events", [])):  # each distinct event once, in order
        lines.append(f"- {md_text(event)}")
    if grader_errors or record.get("grader_error"):
        failed = f"{len(grader_errors)} {'test' if len(grader_errors) == 1 else 'tests'}" if grader_errors else "it"
        lines.append(f"**Not a grade yet: the grader itself failed on {failed} of this submission, which is not a "
                     "problem with your code.** The score above is what the other tests earned; your instructor "
                     "will re-run the grader before it counts.")
    return "\n\n".join(lines)


def part_scores(results):
    """{part: (points earned, points possible)} of a results dict, in the lab's order of parts."""
    scores = {}
    for test in results["tests"]:
        part = test["tags"][0] if test["tags"] else "other"
        got, total = scores.get(part, (0.0, 0.0))
        scores[part] = (got + test["score"], total + test["max_score"])
    return dict(sorted(scores.items(), key=lambda item: part_number(item[0])))


def parts_in(all_results):
    """The parts any of ``all_results`` has, in the lab's order; a part missing from parts.PARTS comes last
    rather than vanishing from a class file."""
    return sorted({part for results in all_results for part in part_scores(results)}, key=part_number)
