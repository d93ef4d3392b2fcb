"""Command line: ``python -m autograder grade PATH... --out DIR [--jobs N]`` and ``python -m autograder release DIR``."""
import argparse
import os
import sys
import time

TABLE_WIDTH = 100  # the console table fits a terminal of this width, or a log read in one
SUBMISSION_WIDTH = 30  # a longer name folds onto further lines: the score columns keep their width
USAGE_ERROR = 2
SUITE_BROKEN = 3  # the reference does not pass the hidden suite: nobody was graded


def main(argv=None):
    from autograder.grading.discover import EXPORTS
    from autograder.parts import LAB_NAME

    parser = argparse.ArgumentParser(prog="python -m autograder", description=f"Grade {LAB_NAME} submissions.")
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade submissions and write reports")
    grade.add_argument("paths", nargs="+", metavar="PATH",
                       help="a submission folder or zip, or a folder or zip of them; with --export, the first PATH "
                            "is that LMS's download of the class")
    grade.add_argument("--out", default="reports", help="where reports go (default: reports/)")
    grade.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded in parallel")
    layout = grade.add_mutually_exclusive_group()
    layout.add_argument("--single", dest="layout", action="store_const", const="single",
                        help="PATH is one submission, whatever it holds")
    layout.add_argument("--batch", dest="layout", action="store_const", const="batch",
                        help="each sub-folder or zip of PATH is one submission")
    layout.add_argument("--export", choices=EXPORTS, default=None,
                        help="the first PATH is this LMS's download of the class (folder or zip): only its layout "
                             "names the students and their hand-in times; without it, nothing is read as a class")
    grade.add_argument("--force", action="store_true",
                       help="regrade every submission, even one whose report was graded from the same files by the "
                            "same grader (otherwise such a report is reused, and every other one is regraded)")
    grade.add_argument("--call-timeout", type=float, default=None,
                       help="seconds of CPU time one call of student code may take (default: grading.yaml)")
    grade.add_argument("--config", default=None, metavar="YAML",
                       help="the settings to grade with (default: the kit's grading.yaml)")
    release = commands.add_parser("release", help="write OUT/release/: the feedback students may see")
    release.add_argument("out", metavar="OUT", help="the folder make grade wrote (its --out)")
    release.add_argument("--show", default="visible", choices=("visible", "after_due_date", "after_published"),
                         help="release the tests of this visibility and the ones before it (default: visible)")
    args = parser.parse_args(argv)
    if args.command == "release":
        return release_command(args)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return grade_command(args)


def grade_command(args):
    from autograder.grading.discover import UsageError, discovered

    started = time.monotonic()
    out_dir = os.path.abspath(args.out)
    try:
        if args.config is not None and not os.path.isfile(args.config):
            raise UsageError(f"--config {args.config}: no such file")
        _check_out_dir(out_dir)
        with discovered(args.paths, args.layout or "auto", export=args.export) as sources:
            if not sources:
                raise UsageError(f"no submissions found in {' '.join(args.paths)}")
            for note in sources.notes:  # a file of an LMS download that fits no grammar: named, in one line
                print(clean(note))
            return _grade(sources, out_dir, args, started)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except SystemExit as err:  # isolation.CannotIsolate: one line, and nothing was graded
        if not isinstance(err.code, str):
            raise
        print(f"error: {err.code}", file=sys.stderr)
        return USAGE_ERROR
    except Exception as err:
        from autograder.grading.reference_check import SuiteBroken

        if not isinstance(err, SuiteBroken):
            raise
        print(f"error: {err.message()}", file=sys.stderr)
        return SUITE_BROKEN


def release_command(args):
    from autograder.reports.release import reports_in, write_release

    if not os.path.isdir(args.out):
        print(f"error: {args.out} is not a folder of reports (run make grade OUT={args.out} first)", file=sys.stderr)
        return USAGE_ERROR
    reports = reports_in(args.out)
    if not reports:
        print(f"error: no graded reports in {args.out} (run make grade OUT={args.out} first)", file=sys.stderr)
        return USAGE_ERROR
    for line in write_release(os.path.abspath(args.out), reports, args.show):
        print(line)
    return 0


def _check_out_dir(out_dir):
    from autograder.grading.discover import UsageError

    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"--out {out_dir} exists and is not a folder")
    try:
        os.makedirs(out_dir, 0o700, exist_ok=True)  # grades are private
    except OSError as err:
        raise UsageError(f"cannot create --out {out_dir}: {err.strerror}") from None
    if not os.access(out_dir, os.W_OK):
        raise UsageError(f"--out {out_dir} is not writable")


def _grade(sources, out_dir, args, started):
    from autograder.containment import isolation
    from autograder.paths import KIT_ROOT

    # Tried in a throwaway fork, which is cheaper before this process holds torch.
    level = isolation.choose_level()
    layers = isolation.detect_layers(level)
    if level != "namespaces":  # a private root shows the child none of them
        isolation.refuse_exposed(level, layers, [KIT_ROOT, *map(os.path.abspath, args.paths), out_dir])

    config = _config(args)  # before any submission is graded: a setting refused is one line, nothing lost
    outcome = _only_reused(sources, out_dir, config, level, args.force)
    if outcome is not None:  # nothing to grade: no torch, no sandbox
        from autograder.grading.resume import resuming

        print(resuming(len(outcome.skipped), 0), file=sys.stderr)
        print_table(outcome, out_dir, level, time.monotonic() - started)
        return 0

    from autograder.containment.frozen import uncollected
    from autograder.containment.zygote import Zygote

    # Before this process imports torch: the zygote's torch import then runs beside ours, on the other core.
    zygote = Zygote(level, layers=layers)
    try:
        with uncollected():
            from autograder.grading.batch import Progress, grade_all
            from autograder.grading.runner import Engine

        engine = Engine(config, level=level, layers=layers, zygote=zygote, graders=len(sources))
        progress = Progress()
        try:
            outcome = grade_all(engine, sources, out_dir, jobs=args.jobs, force=args.force, progress=progress)
        finally:
            progress.stop()
    finally:
        zygote.stop()
    print_table(outcome, out_dir, engine.level, time.monotonic() - started)
    if outcome.grader_errors:
        failed = ", ".join(clean(e) for e in outcome.grader_errors)
        print(f"error: the grader failed on {failed}; re-run to retry", file=sys.stderr)
        return 1
    return 0


def _config(args):
    """grading.yaml (or ``--config``), with ``--call-timeout`` applied; a file the grader refuses is a UsageError."""
    import dataclasses

    from autograder.config import ConfigError, load_config
    from autograder.grading.discover import UsageError

    try:
        config = load_config(args.config)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    return dataclasses.replace(config, call_seconds=args.call_timeout) if args.call_timeout else config


def _only_reused(sources, out_dir, config, level, force):
    """The outcome of a re-run in which every report is reused (see ``resume``), or None."""
    from autograder.grading.resume import nothing_to_grade
    from autograder.paths import HIDDEN_TESTS

    return nothing_to_grade(config, level, HIDDEN_TESTS, sources, out_dir, force=force)


def shown(submission_id):
    """A submission id as rich shows it: its markup escaped, control characters (ESC) gone."""
    from rich.markup import escape

    return escape(clean(submission_id))


def clean(text):
    from autograder.reports.inert_text import clean

    return clean(text)


def print_table(outcome, out_dir, level, seconds):
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from autograder.reports.classbook import status_of, submission_label
    from autograder.reports.results import GRADED, part_scores, parts_in

    # Narrow on purpose (TABLE_WIDTH): a part is headed by its gradebook name over its points, a cell holds
    # the score alone, and a long name folds onto a second line rather than being cut.
    table = Table(title=f"Graded {len(outcome.graded)}, resumed {len(outcome.skipped)} "
                        f"({level} isolation, {seconds:.1f} s)",
                  box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, show_edge=False)
    table.add_column("submission", overflow="fold", max_width=SUBMISSION_WIDTH)
    parts = parts_in(r for _, _, r in outcome.entries)
    maxima = {}
    for _, _, results in outcome.entries:
        for part, (_, points) in part_scores(results).items():
            maxima.setdefault(part, points)
    for part in parts:
        table.add_column(f"{part.replace('_', chr(10))}\n/{maxima.get(part, 0):g}", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for submission_id, submitters, results in outcome.entries:
        scores = part_scores(results)
        cells = [f"{scores.get(p, (0, 0))[0]:g}" for p in parts]
        total = f"{results['score']:g}/{results['extra_data']['max_score']:g}"
        if status_of(results) != GRADED:  # no files, or a grader error: not a score of 0
            cells, total = ["" for _ in parts], status_of(results)
        table.add_row(shown(submission_label(submission_id, submitters)), *cells, total)
    Console(width=TABLE_WIDTH).print(table)
    for submission_id, submitters, results in outcome.entries:
        if status_of(results) != GRADED:  # one line each: why it has no score
            why = results["extra_data"].get("why_not_graded", status_of(results))
            print(f"not graded: {clean(submission_label(submission_id, submitters))}: {clean(why)}")
    print(f"reports: {out_dir}/<submission>/: results.json, feedback.md, feedback.html, submitted/")
    print(f"class:   {out_dir}/: gradebook.csv, summary.md, summary.html, history.csv, similarity.html")
    print(f"lecture: {out_dir}/summary-anonymous.html (no names)")
    from autograder.reports.classbook import imports_into

    imports = [f"import-{name}.csv" for name in ("canvas", "moodle")  # as report.py writes them
               if any(imports_into(who, name) for _, submitters, _ in outcome.entries for who in submitters)]
    if imports:
        print(f"import:  {out_dir}/: {', '.join(imports)} (docs/reference/lms.md, 'Importing the gradebook')")
    print(f"yours:   {out_dir}/adjustments.csv, extensions.csv (read on every run, never rewritten)")
