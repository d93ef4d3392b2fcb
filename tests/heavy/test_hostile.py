"""Hostile submissions are contained.

Every attack (tests/heavy/hostile/, one folder per case) is graded in one batch together
with the reference as a control, by one run of ``python -m autograder grade``. Each attack must
end with a clear message in its own report and a score for everything else, the grader must
exit 0, and nothing may escape: no file outside the sandbox's scratch folder, no connection, no
process left behind, no report changed after the grader is done.

Escapes are observable on purpose. The payloads are templates filled in here with a token
unique to this run: any file they manage to create outside the sandbox has the token in its
name, and every process they start is named ``hx<token>``. Their own findings (what they could
read, what gc held, how many forks they got) go to their printed output, which the grader
captures into feedback.md.
"""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.config import WALL_BACKSTOP
from autograder.grading.suite_points import full_marks
from conftest import copy_of_the_kit
from readable_runtime import readable_python
from variant_builder import FILES, ROOT, SOLUTION, build_mutant, load_mutants, without_markers

pytestmark = pytest.mark.slow  # grades every attack in a batch, at two isolation levels (`make check-fast` skips it)

HOSTILE = Path(__file__).resolve().parent / "hostile"
FULL_MARKS = full_marks()  # every core and extra-credit point of tests_hidden/: the reference earns both
CALL_TIMEOUT = 2  # seconds per call of student code (the grader's default, 10, would make this module slow)
LATE_STRIKE_WAIT = 3  # seconds a daemon gets, after the grader exits, to overwrite a report
MISSING = {"missing_file": "mha.py"}  # case -> the file it does not hand in
PATCH_BLOCK = re.compile(r"^# BEGIN PATCH\n.*?^# END PATCH\n", re.MULTILINE | re.DOTALL)
BALLAST_BLOCK = re.compile(r"^ *# BEGIN BALLAST\n.*?^ *# END BALLAST\n", re.MULTILINE | re.DOTALL)
ISOLATION_LEVELS = ("namespaces", "uid", "rlimits")
GRADER_SECRET = "AGSECRET-" + secrets.token_hex(8)  # the grader_memory payload hunts for this pattern

ATTENTION_PARTS = ("masks", "attention", "gradients")
MHA_PARTS = ("mha_init", "heads", "mha_forward")
# The from-scratch rule is left out of the per-case expectations: a file that cannot be read or
# imported also fails its rule checks, which is right, but not what these cases are about.
GRADED_PARTS = ATTENTION_PARTS + MHA_PARTS
# Code that can hide what it calls (ctypes, gc, os._exit, exec: see assignment/submit.py) fails
# every test that runs its file, after running: containment is still tested, the points are gone.
HIDDEN = "not graded"
# Honest users of a built-in (mutants of tests/variants/mutants.yaml), graded beside the rule
# dodges: a dodge must score no more than the honest use of the same built-in.
RULE_CONTROLS = {"attention.py": "uses_torch_sdpa", "mha.py": "uses_nn_multihead_attention"}
RULE_DODGES = {"rule_aten_ops": "attention.py", "rule_private_getattr": "attention.py",
               "rule_exec_base64": "attention.py", "rule_unwrap_tripwire": "attention.py",
               "rule_silenced_record": "attention.py", "rule_native_mha": "mha.py", "rule_mha_at_import": "mha.py",
               "rule_pydoc_thread": "attention.py", "rule_type_hints": "attention.py",
               "rule_torch_reexports": "attention.py", "rule_dead_branch_alias": "attention.py",
               "rule_module_in_list": "attention.py", "rule_deep_expression": "attention.py",
               "rule_kernel_forged_record": "attention.py", "rule_array_interface": "attention.py"}


@dataclass(frozen=True)
class Expect:
    """What an attack may cost: the tests it breaks (by part, or by name prefix) and what they say."""

    broken: tuple = ()
    says: tuple = ()


EXPECTED = {
    "reference": Expect(),
    "syntax_error": Expect(MHA_PARTS, ("SyntaxError", "mha.py, line")),
    "missing_file": Expect(MHA_PARTS, ("mha.py is missing",)),
    "not_implemented": Expect(GRADED_PARTS, ("NotImplementedError",)),
    "exit_at_import": Expect(MHA_PARTS, ("SystemExit", "importing mha.py")),
    # attention.py dies at import, so mha.py cannot load either; MHA forward is still graded on
    # top of a known-good attention (the grader's second way), and passes.
    "os_exit_at_import": Expect(ATTENTION_PARTS, ("exited with status 0", "while importing attention.py")),
    "exit_in_call": Expect(("Causal mask",), ("SystemExit", "causal_mask quits")),
    "os_exit_in_call": Expect(ATTENTION_PARTS, ("exited with status 7", "causal_mask", HIDDEN)),
    "hang_in_call": Expect(ATTENTION_PARTS, (f"did not finish within {CALL_TIMEOUT:g} s", "not run", HIDDEN)),
    "hang_at_import": Expect(MHA_PARTS, (f"did not finish within {CALL_TIMEOUT:g} s",)),
    "memory_bomb": Expect(("Causal mask", "Padding mask"), ("MemoryError", "allocate")),
    "segfault": Expect(ATTENTION_PARTS, ("killed by SIGSEGV", HIDDEN)),
    "print_flood": Expect(),
    # Its exec (the unpickling bait) hides calls: the replies still arrive, and are never unpickled.
    "tensor_subclass": Expect(ATTENTION_PARTS, (HIDDEN, "os.path is not allowed")),
    "gc_walk": Expect(ATTENTION_PARTS, (HIDDEN, "importing gc is not allowed")),
    "fake_results": Expect(ATTENTION_PARTS, (HIDDEN, "importing json is not allowed")),
    "daemon": Expect(ATTENTION_PARTS, (HIDDEN, "importing ctypes is not allowed")),
    "read_secrets": Expect(ATTENTION_PARTS, (HIDDEN, "importing glob is not allowed")),
    "write_outside": Expect(ATTENTION_PARTS, (HIDDEN, "os.path is not allowed")),
    "network": Expect(ATTENTION_PARTS, (HIDDEN, "importing socket is not allowed")),
    "fork_bomb": Expect(ATTENTION_PARTS, (HIDDEN, "importing ctypes is not allowed")),
    # Ways around the from-scratch rule. Each costs every test that ran the file.
    "rule_aten_ops": Expect(ATTENTION_PARTS, (HIDDEN, "torch.ops.aten is not allowed")),
    "rule_private_getattr": Expect(ATTENTION_PARTS, (HIDDEN, "getattr(torch, <computed name>)")),
    "rule_exec_base64": Expect(ATTENTION_PARTS, (HIDDEN, "importing base64 is not allowed")),
    "rule_unwrap_tripwire": Expect(ATTENTION_PARTS, (HIDDEN, "__closure__")),
    "rule_silenced_record": Expect(ATTENTION_PARTS, (HIDDEN, "importing autograder.containment is not allowed")),
    # Its first finding is now the method it reads through its class (issue 45); the private kernel is the second.
    "rule_native_mha": Expect(MHA_PARTS, (HIDDEN, "MultiHeadAttention.forward is not allowed")),
    # Issue 31: the op record forged and SDPA's kernel called by a route the scanner of the time did not
    # follow. The dispatcher refuses the kernel in the child: no points from it, whichever layer says so
    # (a scanner that sees the route says "not graded ... (the from-scratch rule)"). Not in RULE_DODGES
    # until the scanner sees it: the source rule's points are the scanner's to take.
    "rule_kernel_forged_record": Expect(ATTENTION_PARTS, ("from-scratch rule",)),
    "rule_mha_at_import": Expect(MHA_PARTS, ("torch.nn.MultiheadAttention", "from-scratch rule forbids")),
    # Extra credit's memory figure forged (a forked helper, a patched probe); the source rule catches it.
    "memory_forged": Expect(ATTENTION_PARTS, (HIDDEN, "importing autograder.containment is not allowed")),
    # Exception classes whose bases, read from the source, name one another: the parent's ancestry walk ends.
    "exception_class_web": Expect(("Construction: MultiHeadAttention(16, 5)",), ("raised A: d_model=16",)),
    # Printed output and an error message written to break out of the report's code fences.
    "report_injection": Expect(("Causal mask",), ("ValueError",)),
    # What the child must not hold or do, at every level.
    "grader_memory": Expect(ATTENTION_PARTS, (HIDDEN, "importing the module os inside a function")),
    "memory_split": Expect(ATTENTION_PARTS, (HIDDEN, "importing the module os inside a function")),
    "disk_fill": Expect(ATTENTION_PARTS, (HIDDEN, "importing the module os inside a function")),
    "inherited_fds": Expect(ATTENTION_PARTS, (HIDDEN, "importing the module os inside a function")),
    "proc_peek": Expect(ATTENTION_PARTS, (HIDDEN, "importing the module os inside a function")),
    # Issue 45: the child that runs the student's attention holds no correct attention to borrow.
    "oracle_hunt": Expect(ATTENTION_PARTS, (HIDDEN, "importing gc is not allowed")),
    "lent_hunt": Expect(MHA_PARTS, (HIDDEN, "importing json is not allowed")),
    # Issue 45's route: a protocol hook (numpy's __array_interface__) defined by the student's own class.
    "rule_array_interface": Expect(ATTENTION_PARTS, (HIDDEN, "__array_interface__")),
    # Replies forged on the grader's pipe: each is the student's failure in the test that sent it. They find
    # the pipe through stack frames, which the source rule also fails (every test that runs the file).
    "huge_reply": Expect(ATTENTION_PARTS, ("sent a malformed reply", "more than 8 MiB")),
    "deep_reply": Expect(ATTENTION_PARTS, ("sent a malformed reply", "nested deeper than")),
    "non_dict_reply": Expect(ATTENTION_PARTS, ("sent a malformed reply", "not an object")),
    "desync_reply": Expect(ATTENTION_PARTS, ("sent a malformed reply", "numbered")),
    "forged_setup_error": Expect(ATTENTION_PARTS, ("sent a malformed reply",)),
    # A reply forged with the right number is the student's own answer; the real one, found later,
    # costs the next test nothing: it is run again in a fresh process.
    "stale_reply": Expect(ATTENTION_PARTS, ("run again in a fresh process",)),
    # Issue 23: built-ins reached by a string resolver (pydoc.locate), run in a thread the op record does
    # not watch, and the child's record of tripwired calls emptied; and the same by string annotations
    # that typing.get_type_hints evaluates. The allow-list refuses both imports and names.
    "rule_pydoc_thread": Expect(ATTENTION_PARTS + MHA_PARTS, (HIDDEN, "importing pydoc is not allowed")),
    "rule_type_hints": Expect(ATTENTION_PARTS, (HIDDEN, "typing.get_type_hints is not allowed")),
    # Issue 31: torch's re-exported sys and builtins, a module rebound in a dead branch, a module in a
    # list, and a line too deep for a recursive checker (Python itself cannot compile it).
    "rule_torch_reexports": Expect(ATTENTION_PARTS, (HIDDEN, "torch.sys is not allowed")),
    "rule_dead_branch_alias": Expect(ATTENTION_PARTS, (HIDDEN, "may not be bound to anything else")),
    "rule_module_in_list": Expect(ATTENTION_PARTS, (HIDDEN, "used as a value")),
    "rule_deep_expression": Expect(ATTENTION_PARTS, ("attention.py",)),
    # What one submission could leave for the next (a key, System V shared memory, a file in /dev/shm),
    # a named Unix socket on the host, a thread, a user namespace, memfd: the kernel filter refuses each.
    "leftovers": Expect(ATTENTION_PARTS, (HIDDEN, "importing ctypes is not allowed")),
    # Issue 23. A "setup error" written while the grader's next request sits unread: still the student's reply.
    # Its imports (array, fcntl, signal, termios) break the from-scratch rule: every test that runs attention.py is
    # not graded; test_no_submission_can_claim_the_graders_words checks it is never a grader error.
    "forged_grader_error": Expect(ATTENTION_PARTS, (HIDDEN, "importing array is not allowed")),
    # The grader's "more bytes not kept" marker printed, with 4,301 digits and with 123456789: only text.
    "printed_marker": Expect(),
    # The request pipe shrunk to 4 KiB and never read again: the call times out, the grader never blocks.
    # Only extra-credit tests call tiled_attention: test_a_child_that_stops_reading_its_requests_... checks them.
    "pipe_shrink": Expect(ATTENTION_PARTS, (HIDDEN, "importing fcntl is not allowed")),
    # Weights of ±1.7e308 (finite float64) in every float64 call: compared and drawn like any wrong answer. The
    # gradients part's tests run float64 forwards, and such weights are no distribution: that forward is not
    # attention, so those tests earn nothing (issue 46's gate); the in-place test and the other parts keep theirs.
    "extreme_values": Expect(("Dtypes: float64", "Stability", "Gradients"), ("your forward is not attention",)),
    # Extra credit's memory test, not a graded part here: see test_the_memory_points_count_what_the_call_allocated.
    "memory_ballast": Expect(),
    "memory_ballast_control": Expect(),
    "memory_warm_reuse": Expect(),
    "memory_clear_refs": Expect(ATTENTION_PARTS, (HIDDEN, "open is not allowed")),
}


# --- building the batch -------------------------------------------------------------------

def build_batch(batch, values):
    """Write every case (and the controls) as one submission folder of `batch`.

    A case file is appended to the reference's file of the same name, so it only holds the
    hostile part (see tests/heavy/hostile/README.md); `values` fill in its @PLACEHOLDERS@.
    """
    reference = {name: without_markers((SOLUTION / name).read_text()) for name in FILES}
    for folder in sorted(p for p in HOSTILE.iterdir() if p.is_dir()):
        texts = {}
        for name in FILES:
            payload = folder / f"{name}.payload"  # inert on disk: only the sandbox ever runs it as a .py
            if payload.exists():
                texts[name] = reference[name] + fill(payload.read_text(), values)
            elif MISSING.get(folder.name) != name:
                texts[name] = reference[name]
        write_submission(batch / folder.name, texts)
        if folder.name == "monkeypatch":
            write_submission(batch / "monkeypatch_control", {n: PATCH_BLOCK.sub("", t) for n, t in texts.items()})
        if folder.name == "memory_ballast":
            write_submission(batch / "memory_ballast_control", {n: BALLAST_BLOCK.sub("", t) for n, t in texts.items()})
    write_submission(batch / "not_implemented", {name: (ROOT / "assignment" / name).read_text() for name in FILES})
    mutants = {m["name"]: m for m in load_mutants()}
    for name in RULE_CONTROLS.values():
        build_mutant(mutants[name], batch / name)
    write_submission(batch / "reference", reference)


def fill(template, values):
    for key, value in values.items():
        template = template.replace(f"@{key}@", str(value))
    leftover = re.findall(r"@[A-Z]+@", template)
    assert not leftover, f"a hostile template uses unknown placeholders {leftover}"
    return template


def write_submission(folder, texts):
    folder.mkdir(parents=True)
    for name, text in texts.items():
        (folder / name).write_text(text)


# --- what the run left behind ---------------------------------------------------------------

@dataclass
class Run:
    token: str
    base: Path
    batch: Path
    out: Path
    markers: Path
    process: subprocess.CompletedProcess
    reports_at_exit: dict  # report path -> bytes, right after the grader exited
    reports_later: dict  # the same, LATE_STRIKE_WAIT seconds later
    peak_named: int  # most processes named by a payload alive at once during grading
    survivors: list  # processes named by a payload, still alive after the wait
    connections: list  # what reached the test's listener
    unix_connections: list  # what reached the test's named Unix socket, in a folder every user may write

    def results(self, case):
        path = self.out / case / "results.json"
        assert path.is_file(), f"the grader wrote no report for {case}"
        return json.loads(path.read_text())

    def feedback(self, case):
        return (self.out / case / "feedback.md").read_text()

    def printed(self, case):
        """What the case's code printed, as the grader shows it in feedback.md."""
        match = re.search(r"## What your code printed\n\n```\n(.*?)\n```", self.feedback(case), re.DOTALL)
        assert match, f"feedback.md of {case} shows nothing the code printed"
        return match.group(1)


def shared_unix_listener(base):
    """A named Unix socket any user may connect to, in a world-writable folder (as /tmp holds them on a host)."""
    shared = base / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(shared / "host.sock"))
    (shared / "host.sock").chmod(0o777)
    listener.listen()
    return listener, shared


def snapshot(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def processes_named(name):
    """Live (non-zombie) processes whose command name is `name`, as (pid, state)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm == name and state != "Z":
            found.append((int(entry.name), state))
    return found


def accepted(listener):
    """What clients sent to `listener` (connections wait in its backlog even if never accepted)."""
    listener.setblocking(False)
    received = []
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return received
        with conn:
            conn.settimeout(1)
            try:
                received.append(conn.recv(1024))
            except OSError:
                received.append(b"")


def escaped_files(run):
    """Files a payload created outside its sandbox (their names hold the token), or fake reports."""
    pattern = f"*hx-{run.token}*"
    found = [*run.markers.iterdir(), *Path("/tmp").glob(pattern), *ROOT.glob(pattern), *ROOT.glob(f"*/{pattern}"),
             *Path("/dev/shm").glob(pattern), *Path("/var/tmp").glob(pattern),
             *run.out.rglob(pattern), *run.batch.rglob(pattern)]
    fake = f"FAKE-REPORT-{run.token}".encode()
    found += [run.out / name for name, data in run.reports_later.items() if fake in data]
    gradescope = Path("/autograder/reports/results/results.json")
    if gradescope.is_file() and fake in gradescope.read_bytes():
        found.append(gradescope)
    return found


def grade_watching(command, name, timeout=300, env=None, pass_fds=()):
    """Run the grader; meanwhile count the processes called `name` (proof the payloads started some)."""
    peak = 0
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        grader = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=stderr, text=True, env=env,
                                  pass_fds=pass_fds)
        deadline = time.monotonic() + timeout
        while grader.poll() is None:
            if time.monotonic() > deadline:
                grader.kill()
                grader.wait()
                pytest.fail(f"the grader did not finish within {timeout} s on the hostile batch")
            peak = max(peak, len(processes_named(name)))
            time.sleep(0.2)
        stdout.seek(0), stderr.seek(0)
        return subprocess.CompletedProcess(command, grader.returncode, stdout.read(), stderr.read()), peak


LEVEL_RUNS = ("strongest", "uid")  # what the machine gives (namespaces here), and Gradescope's level


def grader_for(level_run):
    """(python, environment) that grade at ``level_run``; skips with the reason when the machine cannot."""
    if level_run == "strongest":
        return sys.executable, dict(os.environ)
    python, why_not = readable_python()
    if python is None:
        pytest.skip(f"the uid level: {why_not}")
    return python, dict(os.environ, AUTOGRADER_ISOLATION="uid")


@pytest.fixture(scope="module", params=LEVEL_RUNS)
def run(request):
    python, environment = grader_for(request.param)
    token = secrets.token_hex(4)
    # Not tmp_path_factory: its folders are private to root, which would hide from a sandbox
    # uid the very paths an escape is tested on. This one is world-readable, markers/ writable.
    base = Path(tempfile.mkdtemp(prefix=f"hostile-{token}-"))
    base.chmod(0o755)
    markers, batch, out = base / "markers", base / "batch", base / "reports"
    markers.mkdir(mode=0o1777)
    markers.chmod(0o1777)
    listener = socket.create_server(("127.0.0.1", 0))
    unix_listener, shared = shared_unix_listener(base)
    # What only the grader holds: a secret in its environment, and a descriptor of a folder that the
    # shell which started it left open (as `exec 7</some/dir; make grade` would).
    environment["AG_GRADER_SECRET"] = GRADER_SECRET
    inherited = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    survivors = []
    try:
        build_batch(batch, {"TOKEN": token, "MARKERS": markers, "KIT": ROOT, "OUT": out, "BATCH": batch,
                            "PORT": listener.getsockname()[1], "SHARED": shared})
        command = [python, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2",
                   "--call-timeout", str(CALL_TIMEOUT)]
        process, peak = grade_watching(command, f"hx{token}", env=environment, pass_fds=(inherited,))
        at_exit = snapshot(out)
        time.sleep(LATE_STRIKE_WAIT)
        survivors = processes_named(f"hx{token}")
        yield Run(token, base, batch, out, markers, process, at_exit, snapshot(out), peak, survivors,
                  accepted(listener), accepted(unix_listener))
    finally:
        os.close(inherited)
        listener.close()
        unix_listener.close()
        for pid, _ in survivors + processes_named(f"hx{token}"):  # only processes this run started
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for path in [*Path("/tmp").glob(f"*hx-{token}*"), *ROOT.glob(f"*hx-{token}*"), *ROOT.glob(f"*/*hx-{token}*")]:
            path.unlink(missing_ok=True)  # what an escaped payload wrote
        gradescope = Path("/autograder/reports/results/results.json")
        if gradescope.is_file() and f"FAKE-REPORT-{token}".encode() in gradescope.read_bytes():
            gradescope.unlink()
        shutil.rmtree(base, ignore_errors=True)


# --- the tests ---------------------------------------------------------------------------------

def selected(tests, selectors):
    """The tests a selector names: a part (its tag) or a test-name prefix."""
    return [t for t in tests if any(s in t["tags"] or t["name"].startswith(s) for s in selectors)]


def explain(tests):
    return "\n".join(f"- {t['name']} ({t['score']:g}/{t['max_score']:g}): {t['output'][:400]}" for t in tests)


def test_every_case_has_expectations():
    folders = {p.name for p in HOSTILE.iterdir() if p.is_dir()}
    unchecked = folders - set(EXPECTED) - {"monkeypatch"}  # monkeypatch has a test of its own
    assert not unchecked, f"tests/heavy/hostile cases without an entry in EXPECTED: {sorted(unchecked)}"


def test_grader_exits_0_with_a_report_for_every_submission(run):
    assert run.process.returncode == 0, (
        f"the grader exited {run.process.returncode} on the hostile batch:\n"
        f"{run.process.stdout[-2000:]}\n{run.process.stderr[-3000:]}")
    missing = [case for case in [*EXPECTED, "monkeypatch_control"] if not (run.out / case / "results.json").is_file()]
    assert not missing, f"no results.json for {missing}"


def test_every_report_names_the_isolation_used(run):
    levels = {case: run.results(case)["extra_data"].get("isolation") for case in EXPECTED}
    assert set(levels.values()) <= set(ISOLATION_LEVELS) and len(set(levels.values())) == 1, (
        f"reports disagree on, or do not name, the isolation level: {levels}")


def attack_problems(results, case):
    """What is wrong with how the grader handled attack ``case`` (its results.json): [] when contained."""
    expect = EXPECTED[case]
    tests = [t for t in results["tests"] if t["tags"][0] in GRADED_PARTS]
    broken = selected(tests, expect.broken)
    if expect.broken and not broken:
        return [f"{case}: no test matches {expect.broken}"]
    problems = []
    kept_points = [t for t in broken if t["status"] == "passed"]
    if kept_points:
        problems.append(f"{case}: these tests should fail but passed:\n{explain(kept_points)}")
    silent = [t for t in broken if not t["output"].strip()]
    if silent:
        problems.append(f"{case}: these tests failed without saying why:\n{explain(silent)}")
    said = results["output"] + "\n".join(t["output"] for t in broken)
    unsaid = [phrase for phrase in expect.says if phrase not in said]
    if unsaid:
        problems.append(f"{case}: the report never says {unsaid}; the broken tests say:\n{explain(broken)}")
    lost = [t for t in tests if t not in broken and t["status"] != "passed"]
    if lost:
        problems.append(f"{case}: the attack also cost tests it does not touch:\n{explain(lost)}")
    return problems


@pytest.mark.parametrize("case", EXPECTED)
def test_attack_costs_only_what_it_breaks_and_says_why(run, case):
    problems = attack_problems(run.results(case), case)
    assert not problems, "\n".join(problems)


def test_reference_control_scores_full_marks(run):
    """The control: the reference, graded beside all the attacks, loses nothing."""
    results = run.results("reference")
    lost = [t for t in results["tests"] if t["status"] != "passed"]
    assert results["score"] == pytest.approx(FULL_MARKS) and not lost, (
        f"the reference, graded in the hostile batch, scored {results['score']}:\n{explain(lost)}")


@pytest.mark.parametrize("case", ["hang_in_call", "hang_at_import"])
def test_a_hanging_submission_costs_a_few_call_limits_not_one_per_test(run, case):
    """Judged on the CPU time its calls used, as the limits are (a loaded machine stretches the wall clock)."""
    results = run.results(case)
    seconds = results["extra_data"]["cpu_seconds"]
    assert seconds < 3 * CALL_TIMEOUT + 10, (
        f"{case} used {seconds:.1f} s of CPU with a {CALL_TIMEOUT} s call limit: it paid the limit again and again")
    assert results["execution_time"] < (3 * CALL_TIMEOUT + 10) * WALL_BACKSTOP, "past the wall-clock backstop"


def test_monkeypatching_torch_comparisons_does_not_raise_the_score(run):
    patched, control = run.results("monkeypatch"), run.results("monkeypatch_control")
    assert control["score"] < FULL_MARKS, "the control (wrong answers, no patching) should lose points"
    # The patch itself is refused by the from-scratch rule (assigning to torch's names), so the patched file
    # may lose more: what must never happen is a test the patch turns from failed to passed.
    flipped = [(p["name"], c["status"], p["status"]) for p, c in zip(patched["tests"], control["tests"])
               if p["status"] == "passed" and c["status"] != "passed"]
    assert not flipped and patched["score"] <= control["score"], (
        f"patching torch.allclose/equal/isclose/testing.assert_close/Tensor.__eq__ changed the score from "
        f"{control['score']} to {patched['score']}; tests (without patch -> with patch): {flipped}. "
        "Whatever the sandboxed process works out about the student's code can be faked by it; "
        "only what the grader compares itself counts")


def test_printing_200_mb_is_captured_and_capped(run):
    shown = run.printed("print_flood")
    assert shown.startswith("FLOOD-START"), f"the printed output is not in feedback.md: {shown[:200]!r}"
    assert "more bytes of output not kept" in run.feedback("print_flood"), "feedback.md does not say the output was cut"
    sizes = {name: len(data) for name, data in run.reports_at_exit.items() if name.startswith("print_flood/")}
    assert all(size < 256 * 1024 for size in sizes.values()), f"the output was not capped: report sizes {sizes}"


def test_no_payload_leaves_a_file_outside_its_sandbox(run):
    escaped = escaped_files(run)
    assert not escaped, f"payloads wrote outside their scratch folder: {[str(p) for p in escaped]}"


def creates_nothing(run, case):
    """Under the seccomp filter (it refuses O_CREAT, at every level) or Landlock without namespaces, a child
    may create no file, in its own folder neither (the disk bound)."""
    containment = run.results(case)["extra_data"]["containment"]
    return "seccomp" in containment or (run.results(case)["extra_data"]["isolation"] != "namespaces"
                                        and "landlock-fs" in containment)


def test_writes_outside_the_scratch_folder_do_not_land(run):
    printed = run.printed("write_outside")
    own = "refused (PermissionError)" if creates_nothing(run, "write_outside") else "ok"
    assert f"WRITE hx-{run.token}-written -> {own}" in printed, f"the payload did not run as planned:\n{printed}"
    targets = re.findall(r"^WRITE (/\S+) ->", printed, re.MULTILINE)
    assert len(targets) >= 7, f"the payload did not try every target:\n{printed}"
    # A write may succeed inside the sandbox's private /tmp; what counts is the host's file system.
    landed = [path for path in targets if Path(path).exists()]
    assert not landed, f"files written by the submission appeared outside its sandbox: {landed}"


def test_fake_results_do_not_replace_the_report(run):
    printed = run.printed("fake_results")
    own = "refused (PermissionError)" if creates_nothing(run, "fake_results") else "written"
    assert f"FAKE results.json -> {own}" in printed, f"the payload did not run as planned:\n{printed}"
    results, reference = run.results("fake_results"), run.results("reference")
    assert "FAKE-REPORT" not in json.dumps(results), "the fake results.json was used"
    # Its json import costs the attention tests (the allow-list); everything else scores as the reference does.
    assert results["score"] <= reference["score"] and len(results["tests"]) == len(reference["tests"]), (
        f"fake_results scored {results['score']} over {len(results['tests'])} tests; the reference "
        f"{reference['score']} over {len(reference['tests'])}")


def test_reports_do_not_change_after_the_grader_exits(run):
    changed = [name for name in run.reports_at_exit if run.reports_later.get(name) != run.reports_at_exit[name]]
    assert not changed, f"reports changed {LATE_STRIKE_WAIT} s after the grader exited: {changed}"
    started = "DAEMON started" in run.printed("daemon")
    refused = "DAEMON refused (PermissionError" in run.printed("daemon")
    assert started or refused, "the daemon payload did not run"
    assert started or "seccomp" in run.results("daemon")["extra_data"]["containment"], (
        "the daemon could not fork, although no kernel filter was in force")


def test_no_process_outlives_the_grader(run):
    assert run.peak_named > 0, "no payload process was ever seen running, so this test proves nothing"
    assert not run.survivors, (
        f"processes started by payloads (hang, daemon, fork bomb) still run after the grader exited: {run.survivors}")


def test_fork_bomb_is_stopped_by_the_process_limit(run):
    match = re.search(r"FORKS started=(\d+) error=(\w+)", run.printed("fork_bomb"))
    assert match, f"the fork bomb did not report: {run.printed('fork_bomb')[:500]}"
    started, error = int(match.group(1)), match.group(2)
    assert started < 200 and error != "None", f"the fork bomb started all {started} processes (error {error})"


def test_network_connections_fail(run):
    printed = run.printed("network")
    assert "CONNECT -> failed" in printed, f"the payload reached the network:\n{printed}"
    assert not run.connections, f"the test's listener on 127.0.0.1 received {run.connections}"


def test_reference_hidden_tests_and_other_submissions_cannot_be_read(run):
    printed = run.printed("read_secrets")
    opened = [line for line in printed.splitlines() if line.startswith("OPEN") and "-> ok" in line]
    assert not opened, "the submission read secret files:\n" + "\n".join(opened)
    listings = {m.group(1): m.group(2) for m in re.finditer(r"^LIST (\S+) -> (.*)$", printed, re.MULTILINE)}
    for folder, listing in listings.items():
        for secret in ("'solution'", "'tests_hidden'", "'ag-sub-", "'reference'"):
            assert secret not in listing, f"listing {folder} shows {secret}: {listing}"
    assert "SEARCH done" in printed, f"the payload did not finish its search:\n{printed[:1000]}"


def test_gc_and_stack_frames_hold_nothing_from_the_reference(run):
    match = re.search(r"^HUNT (\{.*\})$", run.printed("gc_walk"), re.MULTILINE)
    assert match, f"the gc payload did not report: {run.printed('gc_walk')[:500]}"
    found = json.loads(match.group(1))
    assert found["tensors"] > 0, f"the gc walk saw no tensor at all, so it proves nothing: {found}"
    leaks = {key: found[key] for key in ("modules", "functions", "frames", "lookalikes") if found[key]}
    assert not leaks, f"the submission's process holds parts of the reference or the hidden tests: {leaks}"


def test_no_correct_attention_is_within_reach_of_the_students_attention(run):
    """Issue 45: the oracle MHA is graded with lives only in an oracle child's folder (autograder/grading/oracle.py)."""
    match = re.search(r"^ORACLE-HUNT (\{.*\})$", run.printed("oracle_hunt"), re.MULTILINE)
    assert match, f"the oracle hunt did not report: {run.printed('oracle_hunt')[:500]}"
    found = json.loads(match.group(1))
    assert any(name.startswith("scaled_dot_product_attention") for name in found["own"]), (
        f"the hunt did not even find the file's own attention, so it proves nothing: {found}")
    assert not found["found"] and not found["modules"] and not found["readable"], (
        f"the child that runs the student's attention holds an attention it did not write: {found}")


def test_the_labs_lent_split_heads_is_out_of_reach_wherever_the_students_own_runs(run):
    """Issue 46: kit_lent.py (the reference's split_heads and merge_heads) is only in a "below" child, where the lent
    methods stand in for the student's, so the student's own split_heads never runs beside it."""
    lines = re.findall(r"^LENT-HUNT (\{.*\})$", run.printed("lent_hunt"), re.MULTILINE)
    assert lines, f"the lent hunt did not report: {run.printed('lent_hunt')[:500]}"
    found = [json.loads(line) for line in lines]
    assert not any(f["files"] or f["modules"] or f["imported"] for f in found), (
        f"the student's own split_heads ran where the lab's lent code is within reach: {found}")


def memory_hunt(printed):
    """(secrets found, bytes scanned) as the grader_memory payload reports them."""
    match = re.search(r"^MEMORY-HUNT found=(\[.*?\]) scanned=(\d+)$", printed, re.MULTILINE)
    assert match, f"the memory hunt did not report:\n{printed[:1000]}"
    return match.group(1), int(match.group(2))


def test_the_child_holds_nothing_of_the_graders_memory_or_environment(run):
    found, scanned = memory_hunt(run.printed("grader_memory"))
    assert scanned > 1 << 20, f"the hunt read only {scanned} bytes of its memory: it proves nothing"
    assert GRADER_SECRET not in found, (
        f"the submission found the grader's secret ({found}) in its environment or memory: the sandbox "
        "must start from a fresh interpreter with an allow-listed environment")


def descriptors(printed):
    return {int(n): target for n, target in re.findall(r"^FD (\d+) -> (.*)$", printed, re.MULTILINE)}


def test_the_child_holds_only_its_protocol_descriptors(run):
    held = descriptors(run.printed("inherited_fds"))
    assert held, f"the descriptor payload did not report:\n{run.printed('inherited_fds')[:500]}"
    assert held.get(0) == "/dev/null", f"stdin is {held.get(0)}, not /dev/null"
    # A descriptor that no longer exists when read was the listing's own (os.listdir works on a copy).
    extra = {n: t for n, t in held.items() if n > 4 and t != "? No such file or directory"}
    assert not extra, f"the child holds descriptors beyond stdin/out/err and its two pipes: {extra}"
    assert str(run.base) not in "".join(held.values()), "a descriptor the grader inherited reached the child"


def most_held_at_once(printed):
    """Per call, the most MiB the payload's processes held at the same moment. Only a process that
    reported both HELD and KEPT counts: one the OOM killer took after HELD held its memory briefly and
    gave it back, which is the limit working, not failing."""
    since = {pid: (call, int(mib), float(t)) for call, pid, mib, t in
             re.findall(r"^HELD (call\d+) (\d+) (\d+) ([\d.]+)$", printed, re.MULTILINE)}
    until = {pid: float(t) for _, pid, _, t in
             re.findall(r"^KEPT (call\d+) (\d+) (\d+) ([\d.]+)$", printed, re.MULTILINE)}
    intervals = {}  # call -> [(start, end, MiB)]
    for pid, (call, mib, start) in since.items():
        if pid in until:
            intervals.setdefault(call, []).append((start, until[pid], mib))
    most = {}
    for call, spans in intervals.items():
        # The sum at once peaks at some interval's start: check each start against every span.
        most[call] = max(sum(mib for s, e, mib in spans if s <= start <= e) for start, _, _ in spans)
    return since, most


def test_a_submissions_processes_share_one_memory_limit(run):
    """Three processes of one submission, each under the per-process limit, must not together hold more
    than the submission's limit: where the grader can make a cgroup, they share it."""
    containment = run.results("memory_split")["extra_data"]["containment"]
    if "cgroup-memory" not in containment:
        pytest.skip(f"no cgroup here ({containment}): limits are per process, as the report says")
    if "seccomp" in containment and "HELD call" not in run.feedback("memory_split"):
        # The kernel filter refuses the payload's fork (the fork bomb's report shows it): there is no
        # second process to hold memory.
        assert "FORKS started=0 error=PermissionError" in run.printed("fork_bomb"), run.printed("fork_bomb")[:500]
        return
    since, most = most_held_at_once(run.printed("memory_split"))
    assert since, f"no process of the payload held anything:\n{run.printed('memory_split')[:500]}"
    if not most:
        # Every holder died before it could say KEPT. Under the OOM killer one survives; on a machine
        # so loaded that the call's time limit ran out first, there is nothing to measure.
        feedback = run.feedback("memory_split")
        if "did not finish within" in feedback or "timed out" in feedback:
            pytest.skip("the payload's call timed out before any process could report its hold (a loaded machine)")
        pytest.fail(f"no process of the payload kept its memory to the end:\n{run.printed('memory_split')[:500]}")
    limit = 512
    over = {call: mib for call, mib in most.items() if mib >= limit}
    assert not over, f"the submission's processes held more than its {limit} MiB limit at once: {over} MiB"


def test_memory_held_at_once_counts_only_overlapping_survivors():
    """The measure above must be able to fail: two survivors holding 300 MiB over overlapping
    intervals are 600 MiB at once; a process killed after HELD, or one that held later, does not add."""
    printed = "\n".join([
        "HELD call1 10 300 1.000", "KEPT call1 10 300 4.000",
        "HELD call1 11 300 1.200", "KEPT call1 11 300 4.200",
        "HELD call1 12 300 1.400",  # killed: never KEPT
        "HELD call2 20 300 1.000", "KEPT call2 20 300 2.000",
        "HELD call2 21 300 3.000", "KEPT call2 21 300 4.000",
    ])
    _, most = most_held_at_once(printed)
    assert most == {"call1": 600, "call2": 300}


def test_a_submission_cannot_fill_the_disk(run):
    """At the namespaces level a child writes only into a 64 MiB tmpfs of its own. Under Landlock or the seccomp
    filter (the uid and rlimits levels) it may create no file: it writes only the files it was given, 16 MiB
    each (docs/security.md)."""
    extra = run.results("disk_fill")["extra_data"]
    if extra["isolation"] != "namespaces" and not creates_nothing(run, "disk_fill"):
        pytest.skip(f"{extra['isolation']} level without Landlock or seccomp: no total disk bound")
    assert_disk_bounded(run.printed("disk_fill"))


def assert_disk_bounded(printed):
    """The disk_fill payload's lines, four per child that imported it (its own folder, /tmp, /var/tmp,
    /dev/shm): 64 MiB at most in all, each child."""
    written = re.findall(r"^DISK (?:where=(\S+) )?wrote=(\d+) error=(.*)$", printed, re.MULTILINE)
    assert written and len(written) % 4 == 0, f"the disk payload did not report every place:\n{printed[:500]}"
    for child in range(0, len(written), 4):
        total = sum(int(mib) for _, mib, _ in written[child:child + 4])
        assert total <= 64 and written[child][2] != "None", (
            f"the submission wrote {total} MiB in all ({written[child:child + 4]}): the disk is not bounded")


@pytest.mark.skipif(os.getuid() != 0, reason="the uid level needs root")
def closed_copy_of_the_kit(base):
    """The kit's files (its sources, not its venv, caches or reports) copied into ``base``, a folder only
    its owner can enter: what the uid level without Landlock requires (`chmod o-rwx`), whatever the mode of
    this checkout (a fresh clone is readable by others)."""
    assert not os.stat(base).st_mode & 0o077, f"{base} is open to other users"
    return copy_of_the_kit(base / "kit", venv=False)


def grade_closed_at_the_uid_level_without_landlock(base, attention_tail, others=()):
    """Grade, at the uid level with seccomp and no Landlock, from a closed copy of the kit in ``base`` (mode 0700,
    as that level requires): one submission, the reference with ``attention_tail`` appended, named "attack", and
    a reference submission per name in ``others``, two graders side by side. Returns (results, printed) of "attack"."""
    python, environment = grader_for("uid")
    environment["AUTOGRADER_LAYERS"] = "seccomp"
    kit = closed_copy_of_the_kit(base)
    reference = without_markers((SOLUTION / "attention.py").read_text())
    mha = without_markers((SOLUTION / "mha.py").read_text())
    batch, out = base / "batch", base / "reports"
    write_submission(batch / "attack", {"attention.py": reference + attention_tail, "mha.py": mha})
    for name in others:
        write_submission(batch / name, {"attention.py": reference, "mha.py": mha})
    command = [python, "-m", "autograder", "grade", "--batch", str(batch), "--out", str(out), "--jobs", "2",
               "--call-timeout", str(CALL_TIMEOUT)]
    process = subprocess.run(command, cwd=kit, env=environment, capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr[-2000:]
    results = json.loads((out / "attack" / "results.json").read_text())
    assert results["extra_data"]["isolation"] == "uid" and "landlock-fs" not in results["extra_data"]["containment"]
    assert not results["extra_data"]["grader_error"], results["output"][-1000:]
    printed = re.search(r"## What your code printed\n\n```\n(.*?)\n```",
                        (out / "attack" / "feedback.md").read_text(), re.DOTALL).group(1)
    return results, printed


def test_the_filter_alone_bounds_the_disk_at_the_uid_level():
    """Where Landlock is refused (AUTOGRADER_LAYERS=seccomp), the seccomp filter refuses O_CREAT and mkdir:
    the child creates nothing, in its own folder, /tmp, /var/tmp or /dev/shm; the student reads why, the
    grader is unharmed."""
    base = Path(tempfile.mkdtemp(prefix="disk-fill-"))  # mode 0700: the kit, batch and reports inside are closed
    try:
        _, printed = grade_closed_at_the_uid_level_without_landlock(
            base, (HOSTILE / "disk_fill" / "attention.py.payload").read_text())
        assert_disk_bounded(printed)
        assert "DISK wrote=0 error=Operation not permitted" in printed, printed[:500]
    finally:
        shutil.rmtree(base, ignore_errors=True)


# Read every process's command line, name, environment and working folder, and print what names another
# submission of the batch (the marker is in those submissions' folder names only).
PROC_SCAN = """

def _scan_proc(marker):
    import os
    found, scanned = [], 0
    for pid in [name for name in os.listdir("/proc") if name.isdigit()]:
        scanned += 1
        for entry in ("cmdline", "comm", "environ", "cwd", "root", "exe"):
            try:
                path = f"/proc/{pid}/{entry}"
                text = os.readlink(path).encode() if entry in ("cwd", "root", "exe") else open(path, "rb").read()
            except OSError:
                continue
            if marker.encode() in text:
                found.append(f"{pid}/{entry}")
    print(f"PROCSCAN scanned={scanned} found={found}", flush=True)


_scan_proc(%r)
"""


def test_without_landlock_the_processes_a_submission_sees_name_no_other_submission():
    """The uid level without Landlock cannot hide /proc (no mount, no Landlock): the child lists every process
    and reads their command lines. What it reads there names no other submission: the graders are forked, not
    started with a submission's path, and another uid's environment and folders are refused by the kernel."""
    marker = "peer" + secrets.token_hex(4)
    base = Path(tempfile.mkdtemp(prefix="proc-scan-"))
    try:
        _, printed = grade_closed_at_the_uid_level_without_landlock(
            base, PROC_SCAN % marker, others=[f"{marker}_one", f"{marker}_two", f"{marker}_three"])
        scan = re.search(r"^PROCSCAN scanned=(\d+) found=(.*)$", printed, re.MULTILINE)
        assert scan, f"the /proc scan did not finish:\n{printed[:1000]}"
        assert int(scan.group(1)) > 1, "the scan saw no other process: the test proves nothing here"
        assert scan.group(2) == "[]", f"another submission is named in /proc: {scan.group(2)}"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_submission_sees_no_other_process(run):
    """Namespaces: a PID namespace of its own. Under Landlock (the uid level): of /proc only its own entries,
    so neither the list of processes nor another's command line (another grader's submission paths)."""
    extra = run.results("proc_peek")["extra_data"]
    if extra["isolation"] != "namespaces" and "landlock-fs" not in extra["containment"]:
        pytest.skip(f"{extra['isolation']} level without Landlock: every process is in /proc")
    printed = run.printed("proc_peek")
    own = re.search(r"^PROC own (\d+) done$", printed, re.MULTILINE)
    assert own, f"the /proc payload did not finish:\n{printed[:1000]}"
    listed = re.search(r"^PROC list -> \[(.*)\]$", printed, re.MULTILINE)
    others = {int(p) for p in listed.group(1).split(",") if p.strip()} - {int(own.group(1))} if listed else set()
    assert not others, f"the submission listed other processes: {sorted(others)[:20]}"
    read = re.findall(r"^PROC cmdline (\d+) -> ok", printed, re.MULTILINE)
    assert not read, f"the submission read the command line of processes {read}:\n{printed[:1000]}"


def test_returned_objects_are_never_unpickled(run):
    assert not list(run.markers.glob("*unpickled*")), "a returned object's __reduce__ payload ran in the grader"


def real_uid(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise LookupError(f"no Uid line for process {pid}")


@pytest.mark.skipif(os.getuid() != 0, reason="sandbox uids are only used when the grader runs as root")
def test_concurrent_grader_runs_do_not_share_a_sandbox_uid(tmp_path):
    """Two grader runs on one machine (CI, two `make grade`s, `make check` beside a grading run) must
    not run student code as the same uid: killing "every process of the sandbox uid" (the uid
    level's timeout kill, Gradescope's final sweep) would then kill the other run's children in the
    middle of a test, and RLIMIT_NPROC would count both runs' processes together."""
    from autograder import config
    from autograder.containment import isolation
    from autograder.containment.zygote import Zygote

    level = isolation.choose_level()
    zygotes, children = [], []
    try:
        for run_number in range(2):  # two runs, each grading its first submission in slot 0
            zygote = Zygote(level, hidden=[str(ROOT)])
            zygotes.append(zygote)
            scratch = tmp_path / f"run{run_number}"
            scratch.mkdir(mode=0o755)
            uid = zygote.next_uid(slot=0)
            os.chown(scratch, uid, uid)
            child = zygote.spawn(str(scratch), config.Limits(call_seconds=10), uid)
            children.append(child)
            child.call({"import": "attention"})  # answered once the child has dropped its privileges
        uids = [real_uid(child.pid) for child in children]
    finally:
        for child in children:
            child.close()
        for zygote in zygotes:
            zygote.stop()
    assert uids[0] != uids[1], (
        f"both grader runs run student code as uid {uids[0]} ({level} isolation), so either run's "
        f"kill of that uid's processes also kills the other's sandboxes")


DAEMONS = {
    # its own session: neither the child's pid nor its process group reaches it
    "setsid": "time.sleep(120)",
    # kills whatever becomes its uid, so a sweeper that turns into that uid to call kill(-1) dies first
    "sweeper_killer": "while True:\n            try:\n                os.kill(-1, signal.SIGKILL)\n"
                      "            except OSError:\n                pass",
}
DAEMON = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("daemon.pid", "w") as f:  # in its own folder: the test learns whom to look for
            f.write(str(os.getpid()))
        {body}
        os._exit(0)
    os._exit(0)
time.sleep(0.2)             # the daemon is running before the import answers
"""


def processes_of_uid(uid):
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if real_uid(pid) == uid and state != "Z":
                alive.append(int(pid))
        except (OSError, LookupError, IndexError):
            pass
    return alive


@pytest.mark.skipif(os.getuid() != 0, reason="the uid level needs root")
@pytest.mark.parametrize("daemon", sorted(DAEMONS))
@pytest.mark.parametrize("attempt", range(3))  # the sweeper-killer wins a race: one lucky run proves little
def test_closing_a_uid_level_child_kills_the_daemons_it_started(open_tmp, daemon, attempt):
    """At the uid level a daemon escapes the child's process group; closing the child must still leave
    no process of its uid (the waiter sweeps the uid when the child dies; the grader if it could not)."""
    from autograder import config
    from autograder.containment import sandbox
    from autograder.containment.zygote import Zygote

    zygote = Zygote("uid", hidden=[str(ROOT)])
    try:
        scratch = open_tmp / "sub"
        scratch.mkdir(mode=0o755)
        (scratch / "attention.py").write_text(DAEMON.format(body=DAEMONS[daemon]))
        uid = zygote.next_uid(slot=0)
        os.chown(scratch, uid, uid)
        child = zygote.spawn(str(scratch), config.Limits(call_seconds=10), uid)
        try:
            child.call({"import": "attention"})
        except sandbox.ChildDied:
            assert daemon == "sweeper_killer", f"the {daemon} payload's child died on import"  # it kills its own child too
        marker = scratch / "daemon.pid"
        deadline = time.monotonic() + 5
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), "the payload did not start its daemon"
        child.close()
        assert child.swept, "the waiter did not report that it killed the uid's processes"
        deadline = time.monotonic() + 2  # SIGKILL is sent; the kernel may take a moment to reap
        while processes_of_uid(uid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not processes_of_uid(uid), f"processes of uid {uid} outlived their child: {processes_of_uid(uid)}"
    finally:
        zygote.stop()


def test_uid_level_without_landlock_refuses_when_the_kit_is_readable_by_others(tmp_path):
    """Without namespaces or Landlock, only file permissions keep student code out of the kit, the
    other submissions and the reports: where they are open to other users, grading must not start."""
    python, environment = grader_for("uid")
    environment["AUTOGRADER_LAYERS"] = "seccomp"  # withhold Landlock, as a kernel without it would
    assert os.stat(ROOT).st_mode & 0o005, "this test needs a kit folder readable by others, as a checkout usually is"
    run = subprocess.run([python, "-m", "autograder", "grade", str(ROOT / "examples" / "submissions" / "reference"),
                          "--out", str(tmp_path / "out")], cwd=ROOT, env=environment, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2, f"exit {run.returncode}:\n{run.stdout[-1000:]}\n{run.stderr[-1000:]}"
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "readable by other users" in lines[0], run.stderr
    assert not (tmp_path / "out" / "reference").exists(), "a submission was graded although isolation was refused"


def test_uid_level_refuses_a_runtime_the_sandbox_cannot_read(tmp_path):
    if os.getuid() != 0:
        pytest.skip("the uid level needs root")
    from autograder.containment import isolation

    if all(isolation._readable_by_others(p) for p in isolation.runtime_roots()):
        pytest.skip("this machine's kit interpreter is readable by other users; nothing to refuse")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(ROOT / "examples" / "submissions" / "reference"),
                          "--out", str(tmp_path / "out")], cwd=ROOT, env=dict(os.environ, AUTOGRADER_ISOLATION="uid"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "runtime other users can read" in run.stderr, run.stderr


@pytest.mark.parametrize("case", RULE_DODGES)
def test_dodging_the_from_scratch_rule_gains_nothing(run, case):
    """A dodge could otherwise keep every point that honest use of the same built-in loses."""
    results, control = run.results(case), run.results(RULE_CONTROLS[RULE_DODGES[case]])
    rules = [t for t in results["tests"] if t["tags"][0] == "rules" and t["status"] == "passed"
             and RULE_DODGES[case] in t["name"]]
    assert not rules, f"{case} kept the from-scratch rule points of {RULE_DODGES[case]}:\n{explain(rules)}"
    assert results["score"] <= control["score"] < FULL_MARKS, (
        f"{case} scored {results['score']}, honest use of the built-in ({RULE_CONTROLS[RULE_DODGES[case]]}) "
        f"{control['score']}")


def test_student_text_reaches_the_reports_as_text_only(run):
    """feedback.md and results.json rendered as CommonMark (raw HTML on) show the payload's fence
    breakers, HTML, links and escape sequences as text; summary.md and gradebook.csv name it plainly."""
    from test_report_safety import inert

    markdown = run.feedback("report_injection")
    assert f"alert('hx-{run.token}')" in markdown, "the payload's printed text is not in feedback.md"
    assert not inert(markdown), f"feedback.md renders student text as markup: {inert(markdown)}"
    results = run.results("report_injection")
    outputs = [results["output"], *(t["output"] for t in results["tests"])]
    leaks = [inert(text) for text in outputs if inert(text)]
    assert not leaks, f"results.json outputs render student text as markup: {leaks}"
    page = (run.out / "report_injection" / "feedback.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page and "\x1b" not in page


MEMORY_TEST = "Extra: tiled_attention's peak memory"


@pytest.mark.parametrize("case", ["memory_ballast", "memory_ballast_control", "memory_warm_reuse", "memory_clear_refs"])
def test_the_memory_points_count_what_the_call_allocated(run, case):
    """Issue 23, 5: a naive tiled_attention loses the memory points however it hides its (T, T) matrix:
    a ballast taken at import and freed inside the call (the call's net growth stays small), pieces of the
    grader's warm-up shape, or a reset of its own peak-RSS mark; the same code without the ballast (the
    control) loses them too, and the reference, graded beside them, keeps them."""
    def memory_test(results):
        found = [t for t in results["tests"] if t["name"].startswith(MEMORY_TEST)]
        assert len(found) == 1, f"no single memory test in {[t['name'] for t in results['tests']]}"
        return found[0]

    assert memory_test(run.results("reference"))["status"] == "passed", "the reference lost the memory points"
    test = memory_test(run.results(case))
    assert test["status"] == "failed", f"{case} kept the memory points:\n{explain([test])}"
    # memory_clear_refs writes /proc with open(), which the rule refuses: its measurement is tested with the
    # rule off in test_without_a_cgroup_the_grader_reads_the_childs_peak_from_proc.
    expected = ("peak memory grew by", "is not graded") if case == "memory_clear_refs" else ("peak memory grew by",)
    assert any(words in test["output"] for words in expected), f"{case} failed for another reason:\n{explain([test])}"
    if case == "memory_clear_refs":
        assert "CLEAR_REFS ->" in run.printed(case), f"the payload did not run:\n{run.printed(case)[:500]}"


def test_a_forked_helper_and_a_patched_probe_cannot_hide_peak_memory(tmp_path, monkeypatch):
    """The memory_forged payload (tests/heavy/hostile) builds the (T, T) matrix in a forked helper and
    replaces the probe's memory reading. The source rule already fails it; here the measurement
    alone is tested, so the rule is switched off in this (trusted) process."""
    import torch

    from autograder import rules
    from autograder.grading.by_hand import standalone_student

    monkeypatch.setattr(rules, "hidden_calls", lambda path: [])
    # Without the kernel filter (which refuses the helper's fork): what is tested is the measurement.
    monkeypatch.setenv("AUTOGRADER_LAYERS", "landlock-fs,landlock-tcp,landlock-scope")
    reference = {name: without_markers((SOLUTION / name).read_text()) for name in FILES}
    payload = (HOSTILE / "memory_forged" / "attention.py.payload").read_text()
    write_submission(tmp_path / "memory_forged", {**reference, "attention.py": reference["attention.py"] + payload})
    t, d = 4096, 16
    q, k, v = (torch.randn(t, d, generator=torch.Generator().manual_seed(i)) for i in range(3))
    with standalone_student(str(tmp_path / "memory_forged")) as (student, _):
        reply = student.call("attention.tiled_attention", q, k, v, kwargs={"causal": True}, measure_memory=True)
    if reply.memory_measured_by != "cgroup":
        pytest.skip("no cgroup here: the peak is the child's own figure, which this payload forges (docs/security.md)")
    matrix = t * t * 4
    assert isinstance(reply.result, torch.Tensor) and reply.result.shape == (t, d), "the payload did not run as planned"
    assert reply.peak_bytes is not None and reply.peak_bytes > matrix / 2, (
        f"peak memory measured as {reply.peak_bytes} bytes while a forked helper built a {matrix >> 20} MiB matrix")


# --- what one submission leaves for the next (issue 23, finding 4) ---------------------------------

def test_the_kernel_filter_refuses_ipc_keys_sockets_threads_and_namespaces(run):
    printed = run.printed("leftovers")
    for line in ("LEAVE key -> refused", "LEAVE shm -> refused", "UNIX -> failed", "THREAD -> refused",
                 "USERNS -> refused", "MEMFD -> refused"):
        assert line in printed, f"the leftovers payload did not report {line!r}:\n{printed[:1500]}"
    # Refused twice: by the child's run-time check first, and by the kernel (tests/containment/test_confine.py).
    assert "THREAD ran" not in printed and ("can't start new thread" in printed
                                            or "starting a thread is not allowed" in printed), printed[:1500]
    assert not run.unix_connections, f"the test's named Unix socket received {run.unix_connections}"


def leftovers_found(printed):
    found = re.findall(r"^FOUND key=(\w+) shm=(\w+) file=(\w+)$", printed, re.MULTILINE)
    assert found, f"the leftovers payload did not report what it found:\n{printed[:1500]}"
    return found


@pytest.mark.parametrize("level_run", LEVEL_RUNS)
def test_nothing_one_submission_leaves_reaches_the_next(level_run):
    """Two submissions graded one after the other in one batch (so in the same slot): the first leaves a
    world-readable key in its uid's keyring and System V shared memory, the second looks for them. The
    kernel filter is withheld, as where seccomp is refused: what is tested is that the second child
    has another uid (a uid allocated in the forked grader was reused) and that the first's uid was purged."""
    python, environment = grader_for(level_run)
    environment["AUTOGRADER_LAYERS"] = "landlock-fs,landlock-tcp,landlock-scope"  # no seccomp
    token = secrets.token_hex(4)
    base = Path(tempfile.mkdtemp(prefix=f"leftovers-{token}-"))
    base.chmod(0o755)
    try:
        unix_listener, shared = shared_unix_listener(base)
        unix_listener.close()
        reference = without_markers((SOLUTION / "attention.py").read_text())
        payload = fill((HOSTILE / "leftovers" / "attention.py.payload").read_text(), {"TOKEN": token, "SHARED": shared})
        batch, out = base / "batch", base / "reports"
        for name in ("a_first", "b_second"):
            write_submission(batch / name, {"attention.py": reference + payload,
                                            "mha.py": without_markers((SOLUTION / "mha.py").read_text())})
        command = [python, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "1",
                   "--call-timeout", str(CALL_TIMEOUT)]
        process = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)
        assert process.returncode == 0, process.stderr[-2000:]
        printed = {name: re.search(r"## What your code printed\n\n```\n(.*?)\n```",
                                   (out / name / "feedback.md").read_text(), re.DOTALL).group(1)
                   for name in ("a_first", "b_second")}
        if "LEAVE key -> ok" not in printed["a_first"] or "LEAVE shm -> ok" not in printed["a_first"]:
            pytest.skip(f"this machine refuses keys or System V IPC even without the filter:\n{printed['a_first']}")
        first_child = leftovers_found(printed["a_first"])[0]
        assert first_child == ("False", "False", "False"), f"a run before this one left something: {first_child}"
        # The first submission's later children (a fresh one per failure) and the whole second submission
        # must see nothing of the first child's.
        found = leftovers_found(printed["a_first"])[1:] + leftovers_found(printed["b_second"])
        assert found and all(f == ("False", "False", "False") for f in found), (
            f"a later child found what an earlier one left (key, shm, file): {found}")
        shm_key = 0x4147_0000 | int(token[:4], 16)
        with open("/proc/sysvipc/shm") as f:
            keys = [int(line.split()[0]) for line in list(f)[1:]]
        assert shm_key not in keys, "the System V shared memory outlived the batch"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_no_submission_can_claim_the_graders_words(run):
    """Issue 23: a forged setup error is no grader error (which Gradescope's daily limit does not count), and
    a printed copy of the grader's "bytes not kept" marker is shown as printed text, never as the grader's count."""
    for case in ("forged_grader_error", "printed_marker", "pipe_shrink", "extreme_values"):
        results = run.results(case)
        assert not results["extra_data"]["grader_error"], f"{case} became a grader error: {results['output'][-500:]}"
    printed = run.printed("printed_marker")
    assert "[... 123456789 more bytes of output not kept]" in printed and "9" * 3000 in printed, printed[:300]
    outside = run.feedback("printed_marker").split("## What your code printed", 1)[1].replace(printed, "")
    # The report shows the first 4,000 characters and counts the rest itself: far fewer than the claims printed.
    counts = re.findall(r"(\d+) more bytes", outside)
    assert "123456789" not in outside and all(len(c) < 7 for c in counts), outside
    assert run.results("printed_marker")["score"] == run.results("reference")["score"]


def test_a_child_that_stops_reading_its_requests_costs_one_call_limit(run):
    """The pipe-shrink hang: the grader's writes are non-blocking under the call's deadline."""
    results = run.results("pipe_shrink")
    assert results["execution_time"] < 3 * CALL_TIMEOUT + 30, results["execution_time"]
    tiled = [t for t in results["tests"] if "tiled_attention" in t["name"]]
    # The rule's "not graded" (its fcntl import) replaces the timeout's message; the time bound is the proof.
    assert tiled and all(t["status"] == "failed" and any(words in t["output"] for words in (
        "did not finish within", "timed out", "is not graded")) for t in tiled), explain(tiled)


@pytest.mark.parametrize("case", ["reference", "memory_ballast", "memory_ballast_control", "memory_warm_reuse",
                                  "memory_clear_refs"])
def test_without_a_cgroup_the_grader_reads_the_childs_peak_from_proc(tmp_path, monkeypatch, case):
    """Gradescope's container gives no cgroup: the figure is then the child's VmHWM, read by the grader
    from /proc and reset by it in a fresh child after the kit's warm-up, before the student's import. A
    ballast taken at import and freed in the call, blocks of the warm-up's shape (the memory it freed is
    not resident), or a reset of the peak through /proc/self/clear_refs (refused: a read-only /proc at
    the namespaces level, Landlock at the uid level) must not hide the matrix; the reference stays far below."""
    import torch

    from autograder.containment import cgroups, isolation
    from autograder import rules
    from autograder.grading.by_hand import standalone_student

    level = isolation.choose_level()
    if case == "memory_clear_refs" and level != "namespaces" and not any(
            layer.startswith("landlock") for layer in isolation.detect_layers(level)):
        pytest.skip(f"{level} level without Landlock: the child may reset its own peak (docs/security.md)")
    monkeypatch.setattr(cgroups, "create", lambda *args, **kwargs: None)
    monkeypatch.setattr(rules, "hidden_calls", lambda path: [])  # the rule refuses open(): test the measurement
    reference = {name: without_markers((SOLUTION / name).read_text()) for name in FILES}
    payload = (HOSTILE / case.removesuffix("_control") / "attention.py.payload").read_text() if case != "reference" else ""
    payload = BALLAST_BLOCK.sub("", payload) if case.endswith("_control") else payload
    write_submission(tmp_path / case, {**reference, "attention.py": reference["attention.py"] + payload})
    os.chmod(tmp_path, 0o755)
    t, d = 4096, 16
    q, k, v = (torch.randn(t, d, generator=torch.Generator().manual_seed(i)) for i in range(3))
    with standalone_student(str(tmp_path / case)) as (student, _):
        reply = student.call("attention.tiled_attention", q, k, v, kwargs={"causal": True}, measure_memory=True)
    matrix = t * t * 4
    assert reply.memory_measured_by == "process" and reply.peak_bytes is not None, (
        reply.memory_measured_by, reply.peak_bytes)
    if case == "reference":
        assert reply.peak_bytes < matrix / 4, f"the reference's tiling measured {reply.peak_bytes >> 20} MiB"
    else:
        assert reply.peak_bytes > matrix / 2, f"{case} measured {reply.peak_bytes >> 20} MiB: the matrix was hidden"
