"""Gradescope: build the autograder zip, and grade one submission inside Gradescope's container.

``python -m autograder.gradescope build`` writes ``dist/autograder.zip`` (``make gradescope``).
``python -m autograder.gradescope run --root /autograder`` is what ``run_autograder`` calls: the
same engine, suite and sandbox as ``make grade``, for the one submission in ``ROOT/submission``.

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
import zipfile

KIT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES_DIR = os.path.join(KIT_ROOT, "autograder", "gradescope_files")
RUNTIME_PACKAGES = ("pytest", "iniconfig", "packaging", "pluggy", "pygments", "numpy", "PyYAML")
PACKED = {  # folder -> what of it goes into the zip
    "autograder": "*.py",
    "tests_hidden": "*.py",
    "solution": ("attention.py", "mha.py"),
    "assignment": ("submit.py",),  # the from-scratch scanner that students run too
}


# --- building the zip ---------------------------------------------------------------------

def build(out_path):
    """Write the autograder zip; returns its size in bytes."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = out_path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("setup.sh", "run_autograder"):
            _add(archive, os.path.join(FILES_DIR, name), name, executable=True)
        archive.writestr(_info("requirements-gradescope.txt"), runtime_requirements())
        _add(archive, os.path.join(KIT_ROOT, "grading.yaml"), "grading.yaml")
        for folder, pattern in PACKED.items():
            for name in _files(folder, pattern):
                _add(archive, os.path.join(KIT_ROOT, folder, name), f"{folder}/{name}")
    os.replace(tmp, out_path)
    return os.path.getsize(out_path)


def _files(folder, pattern):
    if isinstance(pattern, tuple):
        return pattern
    return sorted(n for n in os.listdir(os.path.join(KIT_ROOT, folder)) if n.endswith(".py"))


def _info(name, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # fixed: the same sources give the same zip
    info.external_attr = (0o755 if executable else 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _add(archive, path, name, executable=False):
    with open(path, "rb") as f:
        archive.writestr(_info(name, executable), f.read())


def runtime_requirements():
    """The grader's few runtime packages, pinned as in the kit's lock (torch is installed by setup.sh)."""
    pins = {}
    with open(os.path.join(KIT_ROOT, "requirements", "kit.lock")) as f:
        for line in f:
            name, sep, version = line.strip().partition("==")
            if sep:
                pins[name.lower()] = f"{name}=={version}"
    missing = [p for p in RUNTIME_PACKAGES if p.lower() not in pins]
    if missing:
        raise SystemExit(f"requirements/kit.lock has no pin for {', '.join(missing)}")
    return "".join(pins[p.lower()] + "\n" for p in RUNTIME_PACKAGES)


# --- grading inside Gradescope --------------------------------------------------------------

def run(root):
    """Grade ROOT/submission; always leaves ROOT/results/results.json. Returns the results dict."""
    from autograder import report

    results_dir = os.path.join(root, "results")
    os.makedirs(results_dir, exist_ok=True)
    started = time.monotonic()
    metadata = _read_metadata(root)
    try:
        lock_down(root)
        limited = daily_limit_reached(metadata)
        if limited:
            results = limited
        else:
            results, feedback = grade_submission(root, metadata)
            report.write_atomic(os.path.join(results_dir, "feedback.md"), feedback)
    except Exception as err:  # the grader's own failure: say so plainly, never blame the student
        print(f"grader error: {type(err).__name__}: {err}\n{traceback.format_exc()}", flush=True)
        results = grader_error_results(err)
    results["execution_time"] = round(time.monotonic() - started, 3)
    report.write_atomic(os.path.join(results_dir, "results.json"), json.dumps(results, indent=2) + "\n")
    return results


def grade_submission(root, metadata):
    from autograder import report
    from autograder.batch import grade_forked
    from autograder.config import load_config
    from autograder.discover import Submitter
    from autograder.runner import Engine
    from autograder.sandbox import kill_sandbox_users

    config = load_config()
    engine = Engine(config)
    try:
        record = grade_forked(engine, submission_path(os.path.join(root, "submission")))
    finally:
        engine.close()
        kill_sandbox_users(engine.zygote)  # a daemon that escaped its process group dies before we write
    if record.get("grader_error"):
        raise RuntimeError(record["grader_error"])
    submitters = tuple(Submitter(u.get("name", ""), u.get("email", ""), str(u.get("sid") or u.get("id") or ""))
                       for u in metadata.get("users", []))
    results = report.results_json(record, submitters)
    results["stdout_visibility"] = config.stdout_visibility
    print(f"graded: {results['score']:g} / {results['extra_data']['max_score']:g} "
          f"({record['isolation']} isolation)", flush=True)
    return results, report.feedback_markdown(record, results, submitters)


def submission_path(folder):
    """What students upload: the two files, a zip of them, or a zip of a folder holding them."""
    from autograder.stage import find_candidates

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


def _read_metadata(root):
    try:
        with open(os.path.join(root, "submission_metadata.json"), encoding="utf-8") as f:
            metadata = json.load(f)
        return metadata if isinstance(metadata, dict) else {}
    except (OSError, ValueError):
        return {}


def daily_limit_reached(metadata):
    """With a limit set in grading.yaml: results that keep the last score, when this upload is over it."""
    from autograder.config import load_config

    limit = load_config().daily_submission_limit
    if limit <= 0:
        return None
    now = _parse_time(metadata.get("created_at")) or datetime.datetime.now(datetime.timezone.utc)
    previous = metadata.get("previous_submissions") or []
    recent = [p for p in previous
              if (t := _parse_time(p.get("submission_time"))) and now - t < datetime.timedelta(hours=24)]
    if len(recent) < limit:
        return None
    last = max(previous, key=lambda p: _parse_time(p.get("submission_time")) or now)
    score = float(last.get("score") or 0)
    return {
        "score": score,
        "output": (f"This upload was not graded: the limit is {limit} graded submissions per 24 hours and you "
                   f"have used them. Your score stays {score:g} from your last graded submission."),
        "output_format": "md",
        "extra_data": {"daily_limit": limit, "not_graded": True},
    }


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
    parser = argparse.ArgumentParser(prog="python -m autograder.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    build_cmd = commands.add_parser("build", help="write dist/autograder.zip")
    build_cmd.add_argument("--out", default=os.path.join(KIT_ROOT, "dist", "autograder.zip"))
    run_cmd = commands.add_parser("run", help="grade inside Gradescope (called by run_autograder)")
    run_cmd.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    args = parser.parse_args(argv)
    if args.command == "build":
        size = build(args.out)
        print(f"wrote {args.out} ({size / 1024:.0f} KiB): upload it as the autograder, "
              "Ubuntu 22.04 base image (see README, 'Grading on Gradescope')")
        return 0
    run(args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
