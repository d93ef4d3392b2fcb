"""make bench: what grading costs, against its floor: one `python -c "import torch"`.

    .venv/bin/python bench/run.py [--quick] [--repeats R] [--short-runs N] [--results PATH]
    .venv/bin/python bench/run.py --smoke --results PATH   (a few submissions, one round: proves it runs)
    .venv/bin/python bench/run.py --only torch_uid,jobs2_uid [--before CHECKOUT]   (some rows; prints only)

Every figure is the median of several runs, and the compared commands run side by side: each
round runs every command once, in a rotated order, so machine noise lands on all of them alike
(`--short-runs N` runs the short ones, torch import, one submission, `make test` and `make validate`, N times per
round, interleaved, for steadier ratios).
The first day (rows 8a-8c) is measured once, before the rounds: `make grade` in a fresh clone of
HEAD (its venv included, with the pip cache as this machine has it), the venv's size on disk, then
`make grade` again with nothing to grade. A smoke run skips it (it installs packages).
Peak memory is PSS summed over a command's whole process tree (bench/measure.py), sampled
every 0.1 s under every command alike, in a round of its own before the timed rounds: the sampler reads
every process's page tables (5 s of CPU beside a 25 s batch that keeps both cores busy, against a few
hundredths beside a one-process torch import), so a timed run has no sampler beside it. The table is
printed and written to bench/RESULTS.md between two markers; text outside the markers (the analysis) is kept.
"""
import argparse
import ast
import dataclasses
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))
from cpu_quota import CpuQuota  # noqa: E402
from measure import measure  # noqa: E402

PY = sys.executable
SAMPLES = ROOT / "examples" / "submissions"
KINDS = ("reference", "mask_bug", "head_reshape_bug", "stubs", "crashes")  # good, buggy, all-fail, crashing
GRADESCOPE_MB = 768
FIRST_DAY_SECONDS, FIRST_DAY_MB = 120, 1000  # issue 35: the first `make grade` and its venv
GRADESCOPE_CPU = 0.5  # Gradescope's default: half a CPU per autograder run
SAMPLE_SECONDS = 0.1  # memory sampling; every 10 ms would cost a third of a core on 2 cores
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def student_constant(name):
    """A constant of autograder/grading/student.py, read without importing it: it imports torch, and this
    process would then share torch's pages with the measured ones and lower their PSS."""
    for node in ast.parse((ROOT / "autograder" / "grading" / "student.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"autograder/grading/student.py has no {name}")


MAX_TIMEOUTS = student_constant("MAX_TIMEOUTS")  # timeouts before a submission's time budget is spent
LOOP_FOREVER = '''

def scaled_dot_product_attention(query, key, value, mask=None):
    while True:  # never returns: the grader must stop it at the call limit
        pass
'''


@dataclass
class Settings:
    repeats: int = 3
    short_runs: int = 1  # runs per round of the short commands, interleaved (--short-runs)
    batch: int = 100  # submissions in the class-sized batch
    naive: int = 5  # submissions the naive baseline runs on (extrapolated to the batch)
    hostile: int = 10  # submissions in the hostile batch, 10% of them loop forever
    call_limit: float = 2.0  # --call-timeout for the hostile batch
    smoke: bool = False
    half_cpu_skipped: str = None  # why there is no half-CPU row


@dataclass
class Item:
    """One measured thing: a command (or a sequence of them) that every round runs."""
    key: str
    commands: callable  # run number -> list of argv lists
    short: bool = False  # a few seconds: run several times per round
    cwd: Path = ROOT
    ok_codes: tuple = (0,)
    env: dict = None  # None: this process's environment
    quota: CpuQuota = None  # run in this CPU quota (Gradescope's half CPU)
    runs: list = field(default_factory=list)

    def wall(self):
        return statistics.median(r["wall"] for r in self._runs(sampled=False))

    def pss(self):
        return statistics.median(r["pss"] for r in self._runs(sampled=True))

    def rss(self):
        return statistics.median(r["rss"] for r in self._runs(sampled=True))

    def _runs(self, sampled):
        """The timed runs (no memory sampler beside them), or the memory round's; all runs if there are none."""
        return [r for r in self.runs if r.get("sampled", False) == sampled] or self.runs

    def cpu(self):
        """CPU seconds of the whole process tree (measured in a CPU quota's cgroup only), or None."""
        used = [r["cpu"] for r in self.runs if r.get("cpu") is not None]
        return statistics.median(used) if used else None


# --- the workspace: copies of the samples ----------------------------------------------------

def build_workspace(tmp, settings):
    """Folders of submissions for the batch, the naive baseline, the hostile batch and `make test`."""
    batch = tmp / "batch"
    for i in range(settings.batch):
        kind = KINDS[i % len(KINDS)]
        shutil.copytree(SAMPLES / kind, batch / f"s{i:03d}_{kind}")
    naive = sorted(batch.iterdir())[:settings.naive]  # one of each kind first
    loopers = set(range(0, settings.hostile, 10))  # 10%, at least one
    for i in range(settings.hostile):
        kind = KINDS[i % len(KINDS)]
        shutil.copytree(SAMPLES / kind, tmp / "control" / f"s{i:03d}")
        shutil.copytree(SAMPLES / kind, tmp / "hostile" / f"s{i:03d}")
        if i in loopers:
            with open(tmp / "hostile" / f"s{i:03d}" / "attention.py", "a") as f:
                f.write(LOOP_FOREVER)
    student = tmp / "student"
    shutil.copytree(ROOT / "assignment", student)
    for name in ("attention.py", "mha.py"):
        shutil.copy(ROOT / "solution" / name, student / name)
    gradescope = tmp / "gradescope"  # Gradescope's layout for `run`, the kit itself as its source
    shutil.copytree(SAMPLES / "reference", gradescope / "submission")
    (gradescope / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Bench", "sid": "1"}]}))
    return {"batch": batch, "naive": naive, "loopers": sorted(f"s{i:03d}" for i in loopers), "student": student,
            "gradescope": gradescope}


def items(tmp, space, settings):
    out = lambda name, n: tmp / "out" / f"{name}-{n}"  # noqa: E731  (a fresh folder per run)
    grade = [PY, "-m", "autograder", "grade"]
    limit = ["--call-timeout", str(settings.call_limit)]
    return [
        Item("torch", lambda n: [[PY, "-c", "import torch"]], short=True),
        Item("one", lambda n: [grade + [SAMPLES / "reference", "--out", out("one", n)]], short=True),
        Item("make_test", lambda n: [["make", "-s", "test", f"PYTHON={PY}"]], short=True, cwd=space["student"]),
        Item("jobs1", lambda n: [grade + [space["batch"], "--out", out("jobs1", n), "--jobs", "1"]]),
        Item("jobs2", lambda n: [grade + [space["batch"], "--out", out("jobs2", n), "--jobs", "2"]]),
        Item("naive", lambda n: [[PY, "-m", "pytest", ROOT / "tests_hidden", "--submission", s, "-q",
                                  "-p", "no:cacheprovider"] for s in space["naive"]], ok_codes=(0, 1)),
        Item("control", lambda n: [grade + [tmp / "control", "--out", out("control", n), "--jobs", "2"] + limit]),
        Item("hostile", lambda n: [grade + [tmp / "hostile", "--out", out("hostile", n), "--jobs", "2"] + limit]),
        # make validate as an instructor runs it again on an unchanged lab (the verdicts on the reference and
        # the generated files cached), and after a change (a fresh, empty cache: everything is checked again)
        Item("validate", lambda n: [[PY, "-m", "autograder.platforms.validate"]], short=True),
        Item("validate_fresh", lambda n: [["env", f"XDG_CACHE_HOME={tempfile.mkdtemp(dir=tmp)}", PY, "-m",
                                           "autograder.platforms.validate"]], short=True),
    ] + uid_items(out, space) + half_cpu_items(space)


def half_cpu_items(space):
    """Gradescope's half a CPU: its command and a torch import, each in a cgroup CPU quota of 0.5."""
    if space["half_cpu"] is None:
        return []
    gradescope = [PY, "-E", "-s", "-B", "-m", "autograder.platforms.gradescope", "run", "--root", space["gradescope"]]
    bare = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root"}  # Gradescope's run_autograder: a bare one
    return [
        Item("torch_half", lambda n: [[PY, "-c", "import torch"]], short=True, quota=space["half_cpu"]),
        Item("gradescope_half", lambda n: [gradescope], short=True, quota=space["half_cpu"], env=bare),
    ]


def uid_level_python():
    """(python the sandbox uid can read, None) or (None, why not): see tests/readable_runtime.py."""
    sys.path.insert(0, str(ROOT / "tests"))
    from readable_runtime import readable_python

    return readable_python()


def uid_items(out, space):
    """Gradescope's level: the same grading at the uid level, with its own interpreter's torch import as the unit."""
    python, _ = uid_level_python()
    if python is None:
        return []
    env = dict(os.environ, AUTOGRADER_ISOLATION="uid")
    grade = [python, "-m", "autograder", "grade"]
    return [
        Item("torch_uid", lambda n: [[python, "-c", "import torch"]], short=True),
        Item("one_uid", lambda n: [grade + [SAMPLES / "reference", "--out", out("one_uid", n)]], short=True, env=env),
        Item("jobs2_uid", lambda n: [grade + [space["batch"], "--out", out("jobs2_uid", n), "--jobs", "2"]], env=env),
    ]


# --- running ---------------------------------------------------------------------------------

def only(all_items, keys, before):
    """The items named in ``keys``; with ``before`` (a checkout of an earlier commit), every grading
    item among them also run from there ("KEY@before"), side by side in the same rounds."""
    known = {item.key: item for item in all_items}
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise SystemExit(f"bench: no item {', '.join(unknown)} (there are {', '.join(known)})")
    chosen = [known[key] for key in keys]
    if before is not None:
        chosen += [dataclasses.replace(item, key=item.key + "@before", cwd=before, runs=[])
                   for item in chosen if item.cwd == ROOT and not item.key.startswith("torch")]
    return chosen


def only_table(chosen, settings):
    """Each item's median, in its own unit (the torch import of the same interpreter), per submission for a batch."""
    by = {item.key: item for item in chosen}
    lines = ["| item | median | in torch imports |", "|---|---|---|"]
    for item in chosen:
        unit = by.get("torch_uid" if "_uid" in item.key else "torch")
        size = settings.batch if item.key.split("@")[0] in ("jobs1", "jobs2", "jobs2_uid") else 1
        ratio = f"{item.wall() / size / unit.wall():.3f}" + (" per submission" if size > 1 else "x") if unit else ""
        lines.append(f"| {item.key} | {item.wall():.2f} s | {ratio if item is not unit else 'the unit'} |")
    return "\n".join(lines)


def run_rounds(all_items, settings):
    short = [item for item in all_items if item.short]
    blocks = [[item] for item in all_items if not item.short] + [short * settings.short_runs]
    for item in all_items:  # the memory round: each command once, with the sampler (its wall time not counted)
        item.runs.append(run_item(item, sample=True))
        print(f"  memory round  {item.key:<9} {item.runs[-1]['pss']:7.0f} MB", file=sys.stderr)
    for r in range(settings.repeats):
        shift = r % len(blocks)
        for block in blocks[shift:] + blocks[:shift]:  # rotated: no command always runs first
            for item in block:
                item.runs.append(run_item(item))
                print(f"  round {r + 1}/{settings.repeats}  {item.key:<9} {item.runs[-1]['wall']:7.2f} s",
                      file=sys.stderr)


def last_out(tmp, item):
    return tmp / "out" / f"{item.key}-{len(item.runs) - 1}"


def run_item(item, sample=False):
    """One run of ``item``'s commands: timed alone, or (``sample``) with the memory sampler beside it."""
    total = {"wall": 0.0, "pss": 0.0, "rss": 0.0, "sampled": sample}
    used = item.quota.cpu_seconds() if item.quota else None
    for argv in item.commands(len(item.runs)):
        m = measure([str(a) for a in argv], interval=SAMPLE_SECONDS if sample else None, cwd=str(item.cwd),
                    env=item.env, preexec_fn=item.quota.join if item.quota else None)
        if m.returncode not in item.ok_codes:
            raise SystemExit(f"bench: {' '.join(map(str, argv))} exited with {m.returncode}:\n{m.stderr[-3000:]}")
        total["wall"] += m.wall_seconds
        total["pss"] = max(total["pss"], m.peak_pss_mb)
        total["rss"] = max(total["rss"], m.peak_rss_mb)
    if used is not None:
        total["cpu"] = item.quota.cpu_seconds() - used
    return total


# --- checking the reports ----------------------------------------------------------------------

def reports(folder):
    """submission id -> results.json without its timings (wall-clock and CPU seconds)."""
    found = {}
    for path in sorted(Path(folder).glob("*/results.json")):
        data = json.loads(path.read_text())
        data.pop("execution_time", None)
        data.get("extra_data", {}).pop("cpu_seconds", None)  # a time measurement too (the CPU-time limits)
        found[path.parent.name] = data
    return found


def hostile_outcome(tmp, space, settings, by):
    hostile_out = last_out(tmp, by["hostile"])
    hostile, control = reports(hostile_out), reports(last_out(tmp, by["control"]))
    loopers = space["loopers"]
    times = [json.loads((hostile_out / s / "results.json").read_text())["execution_time"]
             for s in loopers if s in hostile]
    others_same = all(hostile.get(s) == control[s] for s in control if s not in loopers)
    errors = sum(1 for d in hostile.values() if d.get("extra_data", {}).get("grader_error"))
    return {"written": len(hostile), "total": settings.hostile, "loopers": len(loopers), "errors": errors,
            "others_same": others_same, "looper_seconds": max(times) if times else float("nan")}


# --- the table ---------------------------------------------------------------------------------

def verdict(ok, smoke):
    return "smoke run" if smoke else ("met" if ok else "**missed**")


def table(by, settings, hostile, same_across_jobs, day=None):
    """The Markdown table: one row per figure, with its target and whether it is met."""
    rows = (timing_rows(by, settings) + memory_rows(by, settings)
            + [make_test_row(by, settings), hostile_row(by, settings, hostile)] + uid_rows(by, settings)
            + [half_cpu_row(by, settings)] + first_day_rows(by, day) + validate_rows(by, settings))
    rows.append(("", "reports identical with `--jobs 1` and `--jobs 2`", "yes" if same_across_jobs else "**NO**",
                 "", verdict(same_across_jobs, settings.smoke)))
    lines = ["| # | measure | result | target | |", "|---|---|---|---|---|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def timing_rows(by, settings):
    unit, n, smoke = by["torch"].wall(), settings.batch, settings.smoke
    one = by["one"].wall() / unit
    per = {key: by[key].wall() / n for key in ("jobs1", "jobs2")}
    naive = by["naive"].wall() / settings.naive

    def batch(key, bold=""):
        return (f"{by[key].wall():.1f} s, {per[key]:.3f} s/submission = "
                f"{bold}{per[key] / unit:.3f}{bold} torch imports")

    return [
        ("0", '`python -c "import torch"` (the unit)', f"{unit:.2f} s", "", ""),
        ("1", "one submission: `python -m autograder grade examples/submissions/reference`",
         f"{by['one'].wall():.2f} s = **{one:.2f}x** torch import", "<= 1.5x", verdict(one <= 1.5, smoke)),
        ("2a", f"batch of {n} (mixed good, buggy, crashing), `--jobs 1`", batch("jobs1"), "", ""),
        ("2b", f"batch of {n}, `--jobs 2`", batch("jobs2", "**"), "<= 0.2", verdict(per["jobs2"] / unit <= 0.2, smoke)),
        ("2c", f"naive baseline: a fresh `python -m pytest tests_hidden --submission S` per submission, "
               f"one at a time (measured on {settings.naive}, extrapolated to {n})",
         f"{naive:.2f} s/submission, {naive * n:.0f} s for {n}", "", ""),
        ("2d", "`--jobs 2` against the naive baseline", f"**{naive / per['jobs2']:.1f}x** faster", ">= 10x",
         verdict(naive / per["jobs2"] >= 10, smoke)),
        ("2e", "`--jobs 1` against the naive baseline", f"{naive / per['jobs1']:.1f}x faster", "", ""),
    ]


def make_test_row(by, settings):
    ratio = by["make_test"].wall() / by["torch"].wall()
    return ("4", "a student's `make test` on the reference (copy of assignment/ with the solution)",
            f"{by['make_test'].wall():.2f} s = **{ratio:.2f}x** torch import", "<= 1.5x",
            verdict(ratio <= 1.5, settings.smoke))


def memory_rows(by, settings):
    n, smoke = settings.batch, settings.smoke

    def peak(key, bold=""):
        return f"{bold}{by[key].pss():.0f} MB{bold} (plain RSS sum {by[key].rss():.0f} MB)"

    return [
        ("3a", "peak memory, one submission (PSS summed over the process tree)", peak("one", "**"),
         f"< {GRADESCOPE_MB} MB", verdict(by["one"].pss() < GRADESCOPE_MB, smoke)),
        ("3b", f"peak memory, batch of {n}, `--jobs 1`", peak("jobs1"), "about one submission's",
         verdict(by["jobs1"].pss() <= 1.25 * by["one"].pss(), smoke)),
        ("3c", f"peak memory, batch of {n}, `--jobs 2`", peak("jobs2"), "grows with jobs", ""),
        ("3d", "peak memory, naive baseline (one pytest process)", peak("naive"), "", ""),
    ]


def uid_rows(by, settings):
    if "one_uid" not in by:
        return [("6", "the uid level (Gradescope's)", f"not measured: {uid_level_python()[1]}", "", "")]
    unit, n = by["torch_uid"].wall(), settings.batch
    one, per = by["one_uid"].wall() / unit, by["jobs2_uid"].wall() / n / unit
    return [
        ("6a", "uid level, one submission (a world-readable venv of the system Python; its own torch import "
               f"{unit:.2f} s is the unit)", f"{by['one_uid'].wall():.2f} s = **{one:.2f}x** torch import",
         "<= 1.5x", verdict(one <= 1.5, settings.smoke)),
        ("6b", f"uid level, batch of {n}, `--jobs 2`",
         f"{by['jobs2_uid'].wall():.1f} s = **{per:.3f}** torch imports/submission", "<= 0.2",
         verdict(per <= 0.2, settings.smoke)),
        ("6c", "uid level, peak memory of one submission (PSS)", f"{by['one_uid'].pss():.0f} MB", "< 768 MB",
         verdict(by["one_uid"].pss() < GRADESCOPE_MB, settings.smoke)),
    ]


def half_cpu_row(by, settings):
    measure_text = (f"Gradescope at its default half a CPU (a cgroup CPU quota of {GRADESCOPE_CPU:g}): "
                    "`python -m autograder.platforms.gradescope run` on the reference, against `import torch` in the same quota")
    if "gradescope_half" not in by:
        return ("7", measure_text, f"not measured: {settings.half_cpu_skipped}", "", "")
    unit, run = by["torch_half"].wall(), by["gradescope_half"].wall()
    cpu = ""
    if by["torch_half"].cpu() and by["gradescope_half"].cpu() is not None:
        cpu = (f"; CPU time of the process tree {by['gradescope_half'].cpu():.2f} s = "
               f"{by['gradescope_half'].cpu() / by['torch_half'].cpu():.2f}x a torch import's")
    return ("7", measure_text, f"{run:.2f} s = **{run / unit:.2f}x** torch import ({unit:.2f} s there){cpu}",
            "<= 1.3x", verdict(run / unit <= 1.3, settings.smoke))


def first_day(tmp):
    """`make grade` in a fresh clone of HEAD, environment included: {"first": s, "venv_mb": MB, "again": s}."""
    import subprocess

    clone = tmp / "first-day"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    timed = {}
    for key in ("first", "again"):
        m = measure(["make", "grade"], interval=SAMPLE_SECONDS, timeout=1800, cwd=str(clone))
        if m.returncode != 0:
            raise SystemExit(f"bench: make grade in a fresh clone exited with {m.returncode}:\n{m.stderr[-3000:]}")
        timed[key] = m.wall_seconds
        if key == "first":
            timed["venv_mb"] = disk_mb(clone / ".venv")
    return timed


def disk_mb(folder):
    """What `du` counts: the blocks of every file, each hard link once, in MB (10^6 bytes)."""
    seen, blocks = set(), 0
    for path in folder.rglob("*"):
        st = path.lstat()
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            blocks += st.st_blocks
    return blocks * 512 / 1e6


def first_day_rows(by, day):
    if day is None:
        return [("8", "the first day: `make grade` in a fresh clone, environment included", "not measured in a "
                 "smoke run (it installs packages)", "", "")]
    unit, smoke = by["torch"].wall(), False
    return [
        ("8a", "the first day: `make grade` in a fresh clone of HEAD, grade-only venv included (pip cache warm; "
               "measured once)", f"**{day['first']:.0f} s**", f"<= {FIRST_DAY_SECONDS} s",
         verdict(day["first"] <= FIRST_DAY_SECONDS, smoke)),
        ("8b", "its venv on disk (torch's CPU build, numpy, pytest, matplotlib, rich...; no nbgrader, Jupyter "
               "or otter-grader)", f"**{day['venv_mb']:.0f} MB**", f"< {FIRST_DAY_MB} MB",
         verdict(day["venv_mb"] < FIRST_DAY_MB, smoke)),
        ("8c", "`make grade` again, nothing to grade (every report reused)",
         f"{day['again']:.2f} s = **{day['again'] / unit:.2f}x** torch import", "<= 1x",
         verdict(day["again"] <= unit, smoke)),
    ]


def validate_rows(by, settings):
    """`make validate` against a torch import (issue 35: at most 3x)."""
    unit = by["torch"].wall()
    rows = []
    for number, key, when in (("9a", "validate", "the lab unchanged since the last check (the verdicts "
                                                 "on the reference and the generated files cached)"),
                              ("9b", "validate_fresh", "after a change to the lab (no cached verdict: the reference "
                                                       "is graded and every generated file checked)")):
        ratio = by[key].wall() / unit
        rows.append((number, f"make validate / torch import: `python -m autograder.platforms.validate`, {when}",
                     f"{by[key].wall():.2f} s = **{ratio:.2f}x** torch import", "<= 3x",
                     verdict(ratio <= 3, settings.smoke)))
    return rows


def hostile_row(by, settings, hostile):
    limit, loopers = settings.call_limit, hostile["loopers"]
    extra = by["hostile"].wall() - by["control"].wall()
    contained = (hostile["written"] == hostile["total"] and hostile["errors"] == 0 and hostile["others_same"]
                 and hostile["looper_seconds"] <= MAX_TIMEOUTS * limit + 2)
    result = (f"+{extra:.1f} s over the same batch without loops (expected about {loopers} x {MAX_TIMEOUTS} "
              f"timeouts x {limit:g} s / 2 jobs = {loopers * MAX_TIMEOUTS * limit / 2:g} s); "
              f"a looper took {hostile['looper_seconds']:.1f} s; {hostile['written']}/{hostile['total']} reports, "
              f"{hostile['errors']} grader errors, the others' reports "
              f"{'identical to' if hostile['others_same'] else 'DIFFERENT from'} the clean run")
    return ("5", f"hostile: {settings.hostile} submissions, {loopers} loop forever "
                 f"(`--call-timeout {limit:g}`, `--jobs 2`)",
            result, "timeouts cost only their limit; no worker lost", verdict(contained, settings.smoke))


def machine(tmp, load_at_start):
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor() or "unknown CPU")
    isolation = "?"
    one = next(iter(sorted((tmp / "out").glob("one-*/*/results.json"))), None)
    if one:
        isolation = json.loads(one.read_text())["extra_data"].get("isolation", "?")
    return (f"{os.cpu_count()} cores, {model}; Linux {platform.release()}, Python {platform.python_version()}, "
            f"torch {metadata.version('torch')}; isolation: {isolation}; load average (1 min) "
            f"{load_at_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


def short_runs(n):
    return "" if n == 1 else f" (the short ones {n} times, interleaved)"


def write_results(path, block):
    """Replace the block between the markers; keep whatever else the file says."""
    text = path.read_text() if path.exists() else "# Benchmark results\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip() + "\n\n" + BEGIN + "\n" + END + "\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + "\n" + block + "\n" + END + tail)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round instead of three")
    parser.add_argument("--smoke", action="store_true",
                        help="a few submissions, one round: proves the script works (no verdicts)")
    parser.add_argument("--repeats", type=int, help="rounds (default 3; 1 with --quick or --smoke)")
    parser.add_argument("--short-runs", type=int, default=1,
                        help="runs per round of the short commands (default 1)")
    parser.add_argument("--results", type=Path, help="where the table goes (default bench/RESULTS.md; "
                                                     "with --smoke, nowhere)")
    parser.add_argument("--only", help="comma-separated items to measure alone (e.g. torch_uid,jobs2_uid): "
                                       "prints their medians, writes no table")
    parser.add_argument("--before", type=Path, help="with --only: a checkout of an earlier commit, whose grading "
                                                    "the same rounds run side by side")
    args = parser.parse_args(argv)
    if args.before and not args.only:
        parser.error("--before goes with --only")
    settings = Settings(batch=3, naive=1, hostile=3, call_limit=1.0, smoke=True) if args.smoke else Settings()
    settings.repeats = args.repeats or (1 if args.quick or args.smoke else settings.repeats)
    settings.short_runs = args.short_runs
    results = args.results or (None if args.smoke else ROOT / "bench" / "RESULTS.md")

    started, load_at_start = time.monotonic(), os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    quota, settings.half_cpu_skipped = CpuQuota.create(GRADESCOPE_CPU)
    try:
        space = dict(build_workspace(tmp, settings), half_cpu=quota)
        all_items = items(tmp, space, settings)
        if args.only:
            all_items = only(all_items, args.only.split(","), args.before)
        day = None
        if not (args.only or settings.smoke):
            print("bench: the first day, `make grade` in a fresh clone (once)", file=sys.stderr)
            day = first_day(tmp)
        print(f"bench: {settings.repeats} round(s) of {len(all_items)} commands, batch of {settings.batch}",
              file=sys.stderr)
        run_rounds(all_items, settings)
        if args.only:
            print(f"Load average (1 min) {load_at_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
                  f"medians over {settings.repeats} round(s), {time.monotonic() - started:.0f} s in all.\n")
            print(only_table(all_items, settings))
            return 0
        by = {item.key: item for item in all_items}
        hostile = hostile_outcome(tmp, space, settings, by)
        one_job, two_jobs = reports(last_out(tmp, by["jobs1"])), reports(last_out(tmp, by["jobs2"]))
        same = len(one_job) == settings.batch and one_job == two_jobs
        block = "\n".join([
            f"Machine: {machine(tmp, load_at_start)}.",
            f"`bench/run.py{' --smoke' if settings.smoke else ''}`: medians over {settings.repeats} round(s), "
            f"each running every command once{short_runs(settings.short_runs)}, in a rotated order; "
            f"{time.monotonic() - started:.0f} s in all, {time.strftime('%Y-%m-%d %H:%M')}.",
            "",
            table(by, settings, hostile, same, day),
        ])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if quota:
            quota.remove()
    print(block)
    if results:
        write_results(results, block)
        print(f"\nwritten to {results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
