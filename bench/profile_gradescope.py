"""Where one Gradescope submission's time goes, per phase, at half a CPU and without a limit.

    .venv/bin/python bench/profile_gradescope.py [--runs N] [--submission examples/submissions/reference]

Runs ``python -m autograder.platforms.gradescope run`` on a Gradescope-shaped folder (the kit itself as the source),
profiled with cProfile (wall clock) in one process: the per-submission grader is not forked here, so
its phases are seen too. Beside it, the same interpreter's ``import torch`` under the same limit. The
half-CPU rows need a cgroup CPU controller (``cpu_quota``); without one they are skipped with the reason.
"""
import argparse
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cpu_quota import CpuQuota  # noqa: E402

INNER = r'''
import cProfile, inspect, json, os, sys, time
t_start = time.time()
sys.path.insert(0, sys.argv[1])
from autograder.platforms import gradescope  # no torch yet: the grader imports it when it starts the zygote
from autograder.containment import zygote
started_zygote = zygote.Zygote.__init__
def _imports():  # what grade_submission imports, then grade one submission in this process, where it is profiled
    from autograder.grading import batch, runner
    batch.grade_forked = lambda engine, path, slot=0: runner.grade_one(engine, path, slot)
def start_then_unfork(self, *args, **kwargs):
    started_zygote(self, *args, **kwargs)
    _imports()
zygote.Zygote.__init__ = start_then_unfork
profile = cProfile.Profile()
profile.enable()
if "isolation_settings" in inspect.signature(gradescope.run).parameters:
    settings = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AUTOGRADER_")}
    gradescope.run(sys.argv[2], settings)  # as after main's restart with the allow-listed environment
else:
    gradescope.run(sys.argv[2])
profile.disable()
profile.dump_stats(sys.argv[3])
with open(sys.argv[3] + ".t", "w") as f:
    json.dump({"start": t_start, "end": time.time()}, f)
os._exit(0)
'''
ALLOWED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # zygote.child_environment()
# (row, functions whose cumulative wall time it is)
ROWS = [
    ("isolation level and layers found", ["isolation.py:choose_level", "isolation.py:detect_layers"]),
    ("torch import + warm-up before the fork (one-import design)", ["zygote.py:preload"]),
    ("zygote started (exec, or fork)", ["zygote.py:__init__"]),
    ("metadata, grading.yaml", ["gradescope.py:_read_metadata", "config.py:load_config"]),
    ("grader's imports after the zygote (torch, in the two-import design)", ["<string>:_imports"]),
    ("hidden suite collected (Engine)", ["runner.py:__init__"]),
    ("grading the submission (grade_one), of which:", ["runner.py:grade_one"]),
    ("  child start (spawn, wait for the zygote's warm-up and the child's pid)",
     ["sandbox.py:_wait_for_pid", "zygote.py:spawn"]),
    ("  probes (requests to the child, the student's code)", ["sandbox.py:call"]),
    ("  staging", ["stage.py:stage"]),
    ("  comparison", ["compare.py:*"]),
    ("results.json, feedback.md", ["results.py:results_json", "feedback.py:feedback_markdown"]),
    ("zygote stopped, uid sweep", ["zygote.py:stop", "zygote.py:kill_sandbox_users"]),
]


def gradescope_root(tmp, submission):
    root = tmp / "autograder"
    shutil.rmtree(root, ignore_errors=True)
    (root / "results").mkdir(parents=True)
    shutil.copytree(submission, root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "A", "sid": "1"}]}))
    return root


def timed(argv, quota, **kwargs):
    started = time.time()
    subprocess.run(argv, check=True, preexec_fn=quota.join if quota else None, stdout=subprocess.DEVNULL, **kwargs)
    return started, time.time() - started


def phases(stats_file):
    found = {}
    for (path, _, name), (_, _, _, cumulative, _) in pstats.Stats(str(stats_file)).stats.items():
        key = f"{os.path.basename(path)}:{name}"
        found[key] = max(found.get(key, 0.0), cumulative)  # a recursive entry counts once
    def total(patterns):
        return sum(v for k, v in found.items() for p in patterns
                   if k == p or (p.endswith("*") and k.startswith(p[:-1])))
    return {label: total(patterns) for label, patterns in ROWS}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--submission", type=Path, default=ROOT / "examples" / "submissions" / "reference")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--kit", type=Path, default=ROOT, help="the kit to profile (a checkout of another commit)")
    args = parser.parse_args(argv)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", **{k: v for k, v in os.environ.items()
                                                                      if k == "AUTOGRADER_ISOLATION"}}
    tmp = Path(tempfile.mkdtemp(prefix="profile-gs-"))
    try:
        for label, fraction in (("two cores", None), ("half a CPU", 0.5)):
            quota, why = CpuQuota.create(fraction) if fraction else (None, None)
            if fraction and quota is None:
                print(f"\n## {label}: skipped ({why})")
                continue
            try:
                torch_s, plain_s, rows = [], [], []
                for _ in range(args.runs):
                    torch_s.append(timed([args.python, "-E", "-s", "-c", "import torch"], quota)[1])
                    root = gradescope_root(tmp, args.submission)
                    plain_s.append(timed([args.python, "-E", "-s", "-B", "-m", "autograder.platforms.gradescope", "run",
                                          "--root", str(root)], quota, cwd=args.kit, env=env)[1])
                    stats_file = tmp / "stats"
                    started, wall = timed([args.python, "-E", "-s", "-B", "-c", INNER, str(args.kit), str(root),
                                           str(stats_file)], quota, cwd=args.kit, env=dict(ALLOWED_ENV, **{
                                               k: v for k, v in env.items() if k.startswith("AUTOGRADER_")}))
                    marks = json.loads(Path(str(stats_file) + ".t").read_text())
                    row = phases(stats_file)
                    row = {"interpreter start-up (exec to the first line)": marks["start"] - started, **row}
                    row["the profiled run, wall (cProfile's overhead included)"] = wall
                    rows.append(row)
            finally:
                if quota:
                    quota.remove()
            unit = statistics.median(torch_s)
            print(f"\n## {label}: `import torch` {unit:.2f} s; `run_autograder`'s command {statistics.median(plain_s):.2f} s "
                  f"= {statistics.median(plain_s) / unit:.2f}x (medians of {args.runs})\n")
            print("| phase | seconds (median) | x torch import |\n|---|---|---|")
            for key in rows[0]:
                value = statistics.median(r[key] for r in rows)
                print(f"| {key} | {value:.2f} | {value / unit:.2f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
