"""Grade mutants with the real grader and run the public tests on each, then judge every one.

    python tests/mutation/mutation_run.py [--sample N] [--out DIR]    # the figures, the misses and the time

One batch grade (``python -m autograder grade --jobs 2``, as `make grade`) grades every mutant; the public
suite runs on each in two worker processes (public_worker.py: torch imported once per worker). A mutant is
*equivalent* when the grade gives it full marks, else a *defect*. Each defect is checked three ways:

* ``one_part``: the grade charges it in one part only;
* ``agree``: `make test` loses points too (core points, or an extra-credit case failed);
* ``within_10``: the fraction of the points lost locally is within 10 percentage points of the grade's
  (of the core points, or of the extra credit when neither side lost a core point).
"""
import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutation_engine as engine  # noqa: E402

ROOT = engine.ROOT
WORKER = Path(__file__).resolve().parent / "public_worker.py"
JOBS = 2
EXTRA = "extra"
TOLERANCE = 0.10  # of the points: local and grade lose the same share, to 10 percentage points
CHECKS = ("one_part", "agree", "within_10")


@dataclass
class Verdict:
    id: str
    description: str
    equivalent: bool
    local_equivalent: bool
    charged: dict = field(default_factory=dict)  # {part: points lost in the grade}
    grade_fraction: float = 0.0
    local_fraction: float = 0.0
    misses: list = field(default_factory=list)  # the CHECKS it fails (a defect only)


def folder_name(mutant):
    return mutant.id.replace(":", "+")


def evaluate(mutants, root):
    """{id: Verdict} for ``mutants``, graded and publicly tested under ``root``; and the seconds each step took."""
    root = Path(root)
    batch, out = root / "batch", root / "reports"
    folders = {m.id: engine.write_submission(m, batch / folder_name(m)) for m in mutants}
    started = time.monotonic()
    grade = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out),
                            "--jobs", str(JOBS)], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if grade.returncode != 0:
        raise RuntimeError(f"the grader exited {grade.returncode}:\n{grade.stderr[-3000:]}")
    graded = time.monotonic()
    local = public_runs(list(folders.values()), root)
    seconds = {"grade": graded - started, "public": time.monotonic() - graded}
    verdicts = {}
    for mutant in mutants:
        results = json.loads((out / folder_name(mutant) / "results.json").read_text())
        verdicts[mutant.id] = judge(mutant, results, local[str(folders[mutant.id])])
    return verdicts, seconds


def public_runs(folders, root):
    """{folder: {case: outcome}}: the public suite on every folder, in JOBS worker processes."""
    chunks = [folders[i::JOBS] for i in range(JOBS)]
    outs = [Path(root) / f"public-{i}.json" for i in range(JOBS)]
    workers = [subprocess.Popen([sys.executable, str(WORKER), str(o), *map(str, c)], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for o, c in zip(outs, chunks) if c]
    for worker in workers:
        _, err = worker.communicate(timeout=3600)
        if worker.returncode != 0:
            raise RuntimeError(f"a public worker exited {worker.returncode}:\n{err[-3000:]}")
    found = {}
    for o, c in zip(outs, chunks):
        if c:
            found.update(json.loads(o.read_text()))
    return found


def judge(mutant, results, cases):
    """The verdict on one mutant from its grade (results.json) and its public run ({case: outcome})."""
    charged, core_lost, core_max, extra_lost, extra_max = {}, 0.0, 0.0, 0.0, 0.0
    for test in results["tests"]:
        part, lost = test["tags"][0], test["max_score"] - test["score"]
        if part == EXTRA:
            extra_lost, extra_max = extra_lost + lost, extra_max + test["max_score"]
        else:
            core_lost, core_max = core_lost + lost, core_max + test["max_score"]
        if lost > 0:
            charged[part] = charged.get(part, 0) + lost
    local = {kind: [sum(c["points"] for c in cases.values() if c["extra"] == extra and not c["passed"]),
                    sum(c["points"] for c in cases.values() if c["extra"] == extra)] for kind, extra in
             (("core", False), ("extra", True))}
    core_side = core_lost > 0 or local["core"][0] > 0
    grade_fraction = core_lost / core_max if core_side else extra_lost / max(extra_max, 1)
    lost, total = local["core"] if core_side else local["extra"]
    verdict = Verdict(mutant.id, mutant.describe(), equivalent=not charged,
                      local_equivalent=local["core"][0] == 0 and local["extra"][0] == 0, charged=charged,
                      grade_fraction=grade_fraction, local_fraction=lost / max(total, 1))
    if not verdict.equivalent:
        if len(charged) > 1:
            verdict.misses.append("one_part")
        if verdict.local_equivalent:
            verdict.misses.append("agree")
        if abs(verdict.local_fraction - verdict.grade_fraction) > TOLERANCE:
            verdict.misses.append("within_10")
    return verdict


def figures(verdicts):
    """The counts bench/RESULTS.md records."""
    defects = [v for v in verdicts.values() if not v.equivalent]
    return {"generated": len(verdicts), "equivalent": len(verdicts) - len(defects), "defect": len(defects),
            "charged once": sum("one_part" not in v.misses for v in defects),
            "agreeing": sum("agree" not in v.misses for v in defects),
            "within 10 points": sum("within_10" not in v.misses for v in defects),
            "equivalent but make test loses points": sum(v.equivalent and not v.local_equivalent
                                                         for v in verdicts.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="only this many mutants, evenly spread")
    parser.add_argument("--only", default=None, help="only the mutants whose id contains this text")
    parser.add_argument("--out", default="bench/tmp/mutation", help="where the batch, reports and verdicts go")
    args = parser.parse_args()
    mutants = engine.generate()
    mutants = [m for m in mutants if args.only is None or args.only in m.id]
    mutants = engine.sample(mutants, args.sample) if args.sample else mutants
    out = Path(args.out)
    if out.exists():
        import shutil
        shutil.rmtree(out)
    verdicts, seconds = evaluate(mutants, out)
    (out / "verdicts.json").write_text(json.dumps({k: asdict(v) for k, v in verdicts.items()}, indent=1))
    for name, count in figures(verdicts).items():
        print(f"{name:<40} {count}")
    print(f"{'seconds (grade, public)':<40} {seconds['grade']:.0f}, {seconds['public']:.0f}")
    for verdict in verdicts.values():
        if verdict.misses:
            print(f"MISS {','.join(verdict.misses):<26} {verdict.id}  charged {verdict.charged}  local "
                  f"{verdict.local_fraction:.0%} grade {verdict.grade_fraction:.0%}  | {verdict.description}")
        elif verdict.equivalent:
            print(f"EQUIVALENT{' (make test loses points)' if not verdict.local_equivalent else ''} {verdict.id}  "
                  f"| {verdict.description}")


if __name__ == "__main__":
    main()
