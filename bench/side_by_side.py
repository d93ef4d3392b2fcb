"""One Gradescope submission, two checkouts of the kit, side by side: is a change faster?

    .venv/bin/python bench/side_by_side.py BEFORE_KIT AFTER_KIT [--runs N] [--cpu 0.5]

Each round runs, in a rotated order, ``import torch`` and each kit's ``python -m autograder.platforms.gradescope run``
on the reference (Gradescope's layout, run_autograder's bare environment), every one in the same CPU
quota (``--cpu``, Gradescope's half a CPU by default; 0 for none). Prints medians and ratios to the torch import:
of wall time, and (where the cgroup counts it) of the CPU time of the whole process tree, which does not depend
on what else the machine runs: on a busy machine a quota of half a CPU is no longer the limit that binds.
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from cpu_quota import CpuQuota  # noqa: E402

BARE = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kits", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", type=float, default=0.5)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    quota, why = CpuQuota.create(args.cpu) if args.cpu else (None, None)
    if args.cpu and quota is None:
        print(f"skipped: {why}")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="side-by-side-"))
    root = tmp / "autograder"
    shutil.copytree(ROOT / "examples" / "submissions" / "reference", root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Bench", "sid": "1"}]}))
    commands = {"import torch": ([args.python, "-c", "import torch"], ROOT)}
    for kit in args.kits:
        commands[str(kit)] = ([args.python, "-E", "-s", "-B", "-m", "autograder.platforms.gradescope", "run", "--root",
                               str(root)], kit)
    seconds = {name: [] for name in commands}
    cpu = {name: [] for name in commands}
    try:
        for r in range(args.runs):
            names = list(commands)[r % len(commands):] + list(commands)[:r % len(commands)]
            for name in names:
                argv, cwd = commands[name]
                started, used = time.monotonic(), quota.cpu_seconds() if quota else None
                subprocess.run(argv, cwd=cwd, env=BARE, check=True, stdout=subprocess.DEVNULL,
                               preexec_fn=quota.join if quota else None)
                seconds[name].append(time.monotonic() - started)
                if used is not None:
                    cpu[name].append(quota.cpu_seconds() - used)
                if name != "import torch":
                    score = json.loads((root / "results" / "results.json").read_text())["score"]
                    assert score > 100, f"{name}: the reference scored {score}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if quota:
            quota.remove()
    unit = statistics.median(seconds["import torch"])
    print(f"CPU quota: {args.cpu or 'none'}; medians of {args.runs}, interleaved")
    cpu_unit = statistics.median(cpu["import torch"]) if cpu["import torch"] else None
    for name, values in seconds.items():
        median = statistics.median(values)
        line = f"  {name}: {median:.2f} s = {median / unit:.2f}x torch import  ({', '.join(f'{v:.2f}' for v in values)})"
        if cpu_unit:
            used = statistics.median(cpu[name])
            line += f"; CPU time of the whole process tree {used:.2f} s = {used / cpu_unit:.2f}x"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
