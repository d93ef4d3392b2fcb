"""Gradescope: grade one submission inside Gradescope's container; and the command line of both sides.

``python -m autograder.platforms.gradescope run --root /autograder`` is what ``run_autograder`` calls: the
same engine, suite and sandbox as ``make grade``, for the one submission in ``ROOT/submission``.
``python -m autograder.platforms.gradescope build`` writes ``dist/autograder.zip`` (``make gradescope``) and
``lock`` rewrites its runtime lock: both on the instructor's machine, in ``gradescope_zip``.

Gradescope's layout: the zip is unpacked into ROOT/source, the student's upload lands in
ROOT/submission, ROOT/submission_metadata.json describes it, and ROOT/results/results.json is
read back. results.json is written exactly once, atomically, after every process of the
submission is gone, whatever the submission did.
"""
import argparse
import datetime
import json
import os
import re
import sys
import time
import traceback

from autograder.files import write_atomic
from autograder.paths import KIT_ROOT


def run(root, isolation_settings=None):
    """Grade ROOT/submission; always leaves ROOT/results/results.json. Returns the results dict.

    ``isolation_settings``: the AUTOGRADER_ISOLATION and AUTOGRADER_LAYERS of the environment this
    command was first started with (``main`` starts it again with the allow-listed one)."""
    results_dir = os.path.join(root, "results")
    started = time.monotonic()
    zygote = None
    try:
        os.makedirs(results_dir, exist_ok=True)
        # First, before this process reads anything of the course or the student: the zygote is forked
        # from it, and holds what it holds.
        zygote = start_zygote(isolation_settings or {})
        if "landlock-fs" in zygote.layers:  # without it, lock_down closes these folders to the sandbox uid
            from autograder.containment import isolation

            isolation.refuse_inside_grants([root])
        metadata = _read_metadata(root)
        lock_down(root)
        from autograder.config import load_config

        config = load_config()  # once; a grading.yaml it refuses becomes a grader error that says why
        results = daily_limit_reached(metadata, config)
        if results is None:
            results, feedback = grade_submission(root, metadata, config, zygote)
            write_atomic(os.path.join(results_dir, "feedback.md"), feedback, mode=0o644, folder_mode=0o755)
    except BaseException as err:  # the grader's own failure: say so plainly, never blame the student
        print(f"grader error: {type(err).__name__}: {err}\n{traceback.format_exc()}", flush=True)
        results = grader_error_results(err)
    finally:
        if zygote is not None:
            stop_zygote(zygote)
    results["execution_time"] = round(time.monotonic() - started, 3)
    write_atomic(os.path.join(results_dir, "results.json"), json.dumps(results, indent=2) + "\n", mode=0o644,
                 folder_mode=0o755)
    return results


def start_zygote(isolation_settings):
    """The sandbox's zygote, forked from this process when it may be (``zygote.Zygote(preloaded=True)``):
    one torch import for both. Else exec'd before this process imports torch, so the imports overlap."""
    from autograder.containment import isolation, zygote

    for name, value in isolation_settings.items():  # read here, then gone before the fork
        os.environ[name] = value
    try:
        level = isolation.choose_level()
        layers = isolation.detect_layers(level)
    finally:
        for name in isolation_settings:
            os.environ.pop(name, None)
    preloaded = zygote.environment_is_allow_listed()
    if preloaded:
        zygote.preload()
    return zygote.Zygote(level, layers=layers, preloaded=preloaded)


def stop_zygote(zygote):
    zygote.stop()
    zygote.kill_sandbox_users()  # a daemon that escaped its process group dies before we write


def restart_with_allow_listed_environment(root):
    """Exec this command again with the zygote's environment and nothing of Gradescope's
    (``zygote.restart_allow_listed``), before any import of torch: the restart costs an interpreter's start.
    The isolation settings go as an argument."""
    from autograder.containment.zygote import isolation_settings, restart_allow_listed

    try:
        restart_allow_listed(["-m", "autograder.platforms.gradescope", "run", "--root", root, "--isolation-settings",
                              json.dumps(isolation_settings())])
    except OSError as err:  # graded all the same, with an exec'd zygote (two torch imports)
        print(f"could not restart with the allow-listed environment ({err}): the zygote is exec'd", flush=True)


def grade_submission(root, metadata, config, zygote):
    try:
        from autograder.grading.batch import grade_forked
        from autograder.grading.discover import Submitter
        from autograder.reports.feedback import feedback_markdown
        from autograder.reports.results import results_json
        from autograder.grading.runner import Engine

        engine = Engine(config, level=zygote.level, layers=zygote.layers, zygote=zygote, graders=1)
        record = grade_forked(engine, submission_path(os.path.join(root, "submission")))
    finally:
        stop_zygote(zygote)
    if record.get("grader_error"):
        raise RuntimeError(record["grader_error"])
    # The SID only: a Gradescope user id is not a student ID and must never stand in for one.
    submitters = tuple(Submitter(str(u.get("name") or ""), str(u.get("email") or ""), str(u.get("sid") or ""))
                       for u in metadata.get("users", []) if isinstance(u, dict))
    results = results_json(record, submitters, student_view=True)
    results["stdout_visibility"] = config.stdout_visibility
    print(f"graded: {results['score']:g} / {results['extra_data']['max_score']:g} "
          f"({record['isolation']} isolation)", flush=True)
    # feedback.md stays in the results folder for the instructor: it states the total.
    return results, feedback_markdown(record, results_json(record, submitters), submitters)


def submission_path(folder):
    """What students upload: the two files, a zip of them, or a zip of a folder holding them."""
    from autograder.grading.stage import find_candidates

    if not os.path.isdir(folder):
        return folder
    if find_candidates(folder):
        return folder
    zips = sorted(n for n in os.listdir(folder) if n.lower().endswith(".zip"))
    return os.path.join(folder, zips[0]) if len(zips) == 1 else folder


def lock_down(root):
    """Without namespaces the sandbox is a plain other uid: keep it out of the kit, the metadata and the results."""
    if os.getuid() != 0:
        return
    for name, mode in (("source", 0o700), ("results", 0o700), ("submission_metadata.json", 0o600)):
        path = os.path.join(root, name)
        if os.path.exists(path):
            os.chmod(path, mode)


METADATA_MAX_BYTES = 32 * 2**20  # Gradescope's file holds every earlier results.json of the student: a few MB


def _read_metadata(root):
    """Gradescope's submission_metadata.json, read with a bound: past METADATA_MAX_BYTES it is set aside
    (graded without it: the daily limit is not applied) rather than parsed into the grader's memory.
    The submitters' names, emails and ids are cut to what a report or gradebook shows."""
    from autograder.grading.discover import bounded_text

    try:
        fd = os.open(os.path.join(root, "submission_metadata.json"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            raw = f.read(METADATA_MAX_BYTES + 1)
        if len(raw) > METADATA_MAX_BYTES:
            print(f"submission_metadata.json is larger than {METADATA_MAX_BYTES >> 20} MiB: not read", flush=True)
            return {}
        metadata = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(metadata, dict):
        return {}
    if isinstance(metadata.get("users"), list):
        metadata["users"] = [{key: bounded_text(str(user.get(key) or "")) for key in ("name", "email", "sid")}
                             for user in metadata["users"] if isinstance(user, dict)]
    return metadata


def daily_limit_reached(metadata, config):
    """With a limit set in grading.yaml: when this upload is over it, results that keep the last grade.

    Only graded submissions count toward the limit: uploads refused by the limit and uploads the
    grader failed on do not, so a student who keeps trying is never locked out for good. The grade
    kept is the last graded one, with its per-test results (Gradescope's own advice: merge the
    previous results object).
    """
    limit = config.daily_submission_limit
    if limit <= 0:
        return None
    now = _parse_time(metadata.get("created_at")) or datetime.datetime.now(datetime.timezone.utc)
    graded = [(t, p) for p in metadata.get("previous_submissions") or []
              if isinstance(p, dict) and (t := _parse_time(p.get("submission_time"))) and _was_graded(p)]
    recent = [p for t, p in graded if now - datetime.timedelta(hours=24) < t <= now]
    if len(recent) < limit:
        return None
    earlier = [(t, p) for t, p in graded if t <= now]
    last = max(earlier, key=lambda pair: pair[0])[1] if earlier else {}
    previous = last.get("results") if isinstance(last.get("results"), dict) else {}
    kept = {key: previous[key] for key in ("score", "tests", "output_format", "test_output_format", "visibility")
            if key in previous}
    kept.setdefault("score", float(last.get("score") or 0))
    note = (f"**This upload was not graded:** the limit is {limit} graded submissions per 24 hours and you "
            f"have used them. Your grade stays the one from your last graded submission; the results below are "
            f"that submission's.")
    kept["output"] = note + ("\n\n" + previous["output"] if isinstance(previous.get("output"), str) else "")
    kept["output_format"] = "md"
    extra = previous.get("extra_data") if isinstance(previous.get("extra_data"), dict) else {}
    kept["extra_data"] = dict(extra, daily_limit=limit, not_graded=True)
    return kept


def _was_graded(previous):
    """A previous submission that the grader really graded: not refused by the limit, not a grader error."""
    extra = (previous.get("results") or {}).get("extra_data") if isinstance(previous.get("results"), dict) else None
    if not isinstance(extra, dict):
        return True  # graded by an older kit, or by hand: it counts
    return not extra.get("not_graded") and not extra.get("grader_error")


def _parse_time(text):
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text.replace("Z", "+00:00")))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)


def grader_error_results(err):
    return {
        "score": 0.0,
        "output": ("**The autograder itself failed while grading this submission.** This is not a problem with "
                   "your code: your instructor can see the details and will regrade."),
        "output_format": "md",
        "extra_data": {"grader_error": True, "detail": f"{type(err).__name__}: {err}"[:2000]},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.platforms.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    build_cmd = commands.add_parser("build", help="write dist/autograder.zip")
    build_cmd.add_argument("--out", default=os.path.join(KIT_ROOT, "dist", "autograder.zip"))
    commands.add_parser("lock", help="rewrite requirements/gradescope.lock from grade.lock (make lock)")
    run_cmd = commands.add_parser("run", help="grade inside Gradescope (called by run_autograder)")
    run_cmd.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    run_cmd.add_argument("--isolation-settings", type=json.loads, help=argparse.SUPPRESS)  # set by the restart
    args = parser.parse_args(argv)
    if args.command == "build":
        from autograder.grading.batch import verify_suite
        from autograder.config import ConfigError, load_config
        from autograder.platforms.gradescope_zip import build, built_total, suite_total, total_change, upload_notes
        from autograder.grading.reference_check import SuiteBroken

        try:  # a grading.yaml the grader refuses would fail every student's submission on Gradescope
            config = load_config()
        except ConfigError as err:
            print(f"error: {err}; nothing was built", file=sys.stderr)
            return 2
        try:  # a suite the reference fails would charge every student on Gradescope
            verify_suite(config)
        except SuiteBroken as err:
            print(f"error: {err.message('nothing was built')}", file=sys.stderr)
            return 3
        before = built_total(args.out)  # what the zip it replaces was built for
        size = build(args.out)
        print(f"wrote {args.out} ({size / 1024:.0f} KiB): upload it as the autograder (see docs/platforms.md)")
        print("\n".join(upload_notes(config)))
        changed = total_change(before, suite_total(), args.out)
        if changed:
            print(changed)
        return 0
    if args.command == "lock":
        from autograder.platforms.gradescope_zip import RUNTIME_LOCK, runtime_lock_text

        write_atomic(RUNTIME_LOCK, runtime_lock_text(), mode=0o644)  # a kit file, not a report
        print(f"wrote {RUNTIME_LOCK}")
        return 0
    if args.isolation_settings is None:
        restart_with_allow_listed_environment(args.root)  # returns only if it could not
    run(args.root, args.isolation_settings)  # never raises: every failure becomes a results.json that says so
    return 0


if __name__ == "__main__":
    sys.exit(main())
