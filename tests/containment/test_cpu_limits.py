"""A call's limit is the child's own CPU time, read by the parent from the kernel; a wall-clock backstop
several times larger ends a child that sleeps (autograder/containment/sandbox.py, ``Child.call``).

The 'child' is a plain process that burns CPU, sleeps, or burns a little and then answers on the
reply pipe, as a probe loop would; the parent is a real ``sandbox.Child``."""
import json
import os
import subprocess
import sys
import time

import pytest

from autograder.config import WALL_BACKSTOP, Limits
from autograder.containment import sandbox, wire
from autograder.containment.sandbox import Child, ChildDied, process_cpu_seconds

BURN = "import time\nwhile time.process_time() < {seconds}: pass\n"
ANSWER = "import os, sys, time\n{burn}os.write({fd}, bytes.fromhex(sys.argv[1]))\ntime.sleep(60)\n"


class ScriptedChild:
    """A ``Child`` whose process runs ``script`` (it may write to the reply pipe, descriptor ``{fd}``)."""

    def __init__(self, script, limits, cpu=None, reply=None):
        request_r, request_w = os.pipe()
        response_r, response_w = os.pipe()
        output_r, self.output_w = os.pipe()
        status_r, self.status_w = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-c", script.format(fd=response_w), (reply or b"").hex()], pass_fds=[response_w],
            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None)
        os.close(response_w)
        self.request_r = request_r
        os.write(self.status_w, json.dumps({"pid": self.process.pid}).encode() + b"\n")
        self.child = Child(request_w, response_r, output_r, status_r, limits, "rlimits", None)

    def close(self):
        self.process.kill()
        self.process.wait()
        for fd in (self.request_r, self.output_w, self.status_w):
            os.close(fd)
        self.child.close()


@pytest.fixture
def scripted():
    made = []

    def make(script, limits, **kwargs):
        made.append(ScriptedChild(script, limits, **kwargs))
        return made[-1]
    yield make
    for child in made:
        child.close()


def test_the_parent_reads_a_processs_cpu_time_from_the_kernel():
    busy = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=0.3) + "print('done', flush=True)\n"
                             "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline() == "done\n"
        assert 0.25 <= process_cpu_seconds(busy.pid) < 1.0  # the kernel counts in ticks: a little below 0.3 may be
    finally:
        busy.kill()
        busy.wait()
        busy.stdout.close()
    assert process_cpu_seconds(busy.pid) is None, "a process that is gone has no figure"


def test_a_child_that_burns_cpu_is_stopped_at_its_cpu_limit(scripted, monkeypatch):
    monkeypatch.setattr(sandbox, "WALL_BACKSTOP", 200)  # however loaded the machine, the CPU limit comes first
    fake = scripted(BURN.format(seconds=1000), Limits(call_seconds=0.5))
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention"})
    assert died.value.timed_out and not died.value.wall
    assert died.value.reason == "used more than 0.5 s of CPU time"
    assert 0.5 < fake.child.cpu_used < 1.5
    assert fake.process.wait(timeout=5) < 0, "the child was killed"


def test_a_child_that_sleeps_is_stopped_at_the_wall_clock_backstop_and_reported_as_such(scripted):
    fake = scripted("import time\ntime.sleep(60)\n", Limits(call_seconds=0.2))
    started = time.monotonic()
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention"})
    assert died.value.timed_out and died.value.wall
    assert time.monotonic() - started >= 0.2 * WALL_BACKSTOP
    assert died.value.reason.startswith(f"gave no answer within the wall-clock backstop ({0.2 * WALL_BACKSTOP:g} s)")


def test_a_call_is_not_charged_for_a_loaded_machine(scripted):
    """The call needs 0.3 s of CPU and may take 1 s. It shares one core with three busy processes, so it takes
    about 1.2 s of wall-clock time, past the old wall-clock limit of 1 s, and well within the backstop."""
    cpu = min(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", BURN.format(seconds=1000)],
                             preexec_fn=lambda: os.sched_setaffinity(0, {cpu})) for _ in range(3)]
    try:
        reply = wire.encode({"seq": 1, "ok": True, "forbidden": [], "value": {}})
        fake = scripted(ANSWER.format(burn=BURN.format(seconds=0.3), fd="{fd}"), Limits(call_seconds=1.0),
                        cpu=cpu, reply=reply)
        started = time.monotonic()
        assert fake.child.call({"import": "attention"})["ok"]
        took = time.monotonic() - started
        assert fake.child.cpu_used < 1.0, f"{fake.child.cpu_used:.2f} s of CPU in {took:.2f} s"
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
