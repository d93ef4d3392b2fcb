"""Run untrusted student code in child processes forked from a warm, secret-free zygote.

Process tree::

    grader (trusted: reference, hidden tests)   -- asks over a socket -->   zygote (torch, probes; no secrets)
        `- per-submission grader (trusted)                                     `- waiter (reports the exit status)
                                                                                   `- child: PID 1 of its own namespace,
                                                                                      private root, dropped privileges,
                                                                                      imports the student's files

The zygote is a fresh interpreter started by ``zygote.Zygote``, or on Gradescope a fork of the grader
taken before the grader reads anything of the course or the student, so a child that walks ``gc``,
stack frames or its own memory finds nothing of the class, the reference or the tests. A child answers probe requests over pipes
(see ``wire``); its stdout and stderr go to a third pipe that the grader drains and caps.
"""
import gc
import json
import os
import select
import signal
import socket
import sys
import time

from autograder.bounds import CHILD_OUTPUT
from autograder.config import WALL_BACKSTOP
from autograder.containment import cgroups, grants, jail, replies, sweep, wire
from autograder.containment.kernel import in_user_namespace

OUTPUT_CAP = CHILD_OUTPUT
CPU_POLL_SECONDS = 0.05  # how often a waiting parent reads the child's CPU time


class ChildDied(Exception):
    """The child exited, crashed, hung past its time limit, or broke the protocol. ``wall``: it timed out
    on the wall-clock backstop, not on its CPU time (it slept or blocked, or the machine was too slow)."""

    def __init__(self, reason, timed_out=False, wall=False):
        super().__init__(reason)
        self.reason, self.timed_out, self.wall = reason, timed_out, wall


class OutOfTurn(ChildDied):
    """The child spoke between requests or answered an earlier one again: the request at hand
    is not to blame, the reply taken for an earlier one did not come from the probe loop."""


# --- the zygote ----------------------------------------------------------------------------

def zygote_main():
    """The zygote's own process (exec'd by ``zygote.Zygote``): warm up, then fork a waiter per request."""
    settings = json.loads(sys.argv[2])
    sock = socket.socket(fileno=settings["fd"])
    from autograder.containment.frozen import uncollected

    with uncollected():
        from autograder.containment import confine, probes  # noqa: F401  (every child needs them; the kit may be hidden from it)

        warm_up()
    serve(sock, settings["level"], settings["hidden"], settings["layers"])


def serve(sock, level, hidden, layers):
    """The zygote's loop, warm (``warm_up``): a waiter per request on ``sock``, until the grader hangs up."""
    from autograder.containment import probes

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    # Once here, not in every child (7 ms and 4 ms of a child's ~50): a fork keeps the dispatcher's table,
    # so every child starts with torch's attention kernels off; and what a child may read, but its /proc entry,
    # is the same for all (a child loads no library after the warm-up).
    probes.block_forbidden_kernels()
    readable = grants.shared_paths()
    gc.freeze()  # torch stays: a child's collections then neither scan nor copy its pages
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        except OSError:
            return
        if not message:
            return
        config = json.loads(message)
        if os.fork() == 0:
            sock.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _waiter(config, *fds, level=level, uid=config["uid"], hidden=hidden, layers=layers, readable=readable)
        for fd in fds:
            os.close(fd)


def _waiter(config, request_r, response_w, output_w, status_w, level, uid, hidden, layers, readable):
    """Forked from the zygote: enter namespaces, fork the child, report its pid and exit status."""
    code = 0
    try:
        jail.set_parent_death_signal(signal.SIGKILL)
        if level == "namespaces":
            jail.enter_namespaces()
        pid = os.fork()
        if pid == 0:
            _child(config, request_r, response_w, output_w, status_w, level, uid, hidden, layers, readable)
        os.close(request_r), os.close(response_w), os.close(output_w)
        os.write(status_w, json.dumps({"pid": pid}).encode() + b"\n")
        status = _wait_or_kill(pid, status_w)
        # At the uid level, what the child started outside its process group dies here, in this
        # process that exists anyway, before the grader hears that the child is gone; and what its
        # uid left (IPC objects, keys, files in /tmp) goes with it.
        swept = sweep.purge_uid(uid, level, layers)
        os.write(status_w, json.dumps({"status": status, "swept": swept}).encode() + b"\n")
    except BaseException as err:  # a failure here is the grader's, not the student's
        try:
            os.write(status_w, json.dumps({"setup_error": f"{type(err).__name__}: {err}"}).encode() + b"\n")
        except OSError:
            pass
        code = 1
    os._exit(code)


def _wait_or_kill(pid, status_w):
    """The child's exit status. Should the grader that holds this child's pipes die first (the batch
    killed it past its deadline), the child dies now: nobody is left to close its request pipe, and
    a child that swapped that pipe for one of its own would otherwise wait forever."""
    try:
        child = os.pidfd_open(pid)
    except (AttributeError, OSError):
        child = None
    watch = select.poll()
    watch.register(status_w, 0)  # POLLERR: the grader closed (or lost) the status pipe's read end
    if child is not None:
        watch.register(child, select.POLLIN)
    while True:
        events = dict(watch.poll(None if child is not None else 200))
        if events.get(status_w):
            for target in (pid, -pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        done, status = os.waitpid(pid, 0 if events.get(status_w) else os.WNOHANG)
        if done:
            return status


REQUEST_FD, RESPONSE_FD, SETUP_FD = 3, 4, 5  # where the child keeps its pipes; every other descriptor is closed


def _child(config, request_r, response_w, output_w, status_w, level, uid, hidden, layers, readable):
    """The sandboxed child: isolate, limit, then serve probes until the grader hangs up.

    A setup error goes to the waiter's status pipe, which the child closes before any student code
    runs: only that pipe, never the reply pipe that student code can write, can name a grader error."""
    from autograder.containment import confine, probes  # already imported in the zygote: costs nothing

    setup_fd = status_w
    try:
        cgroups.join(config["cgroups"])  # first: everything this process starts is counted with it
        os.setsid()
        _keep_only_protocol_fds(request_r, response_w, output_w, status_w)
        setup_fd = SETUP_FD
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")  # under memory pressure the kernel kills the student's code, never the grader
        submission_dir = config["dir"]
        if level == "namespaces":
            owner = uid if not in_user_namespace() else None  # root drops to uid; a user namespace does not
            jail.build_private_root(submission_dir + ".root", submission_dir, hidden, owner=owner)
            submission_dir = "/submission"
        if level in ("namespaces", "uid"):
            jail.drop_privileges(uid, uid)
        _stdin_from_devnull()  # again, now that /dev/null is the sandbox's own
        jail.apply_limits(config["memory_mb"] << 20, config["cpu_seconds"], config["max_processes"])
        if layers:  # every layer the parent found working, or the child does not run at all
            # The zygote's ``readable`` and the child's own /proc/<pid> (read only).
            confine.apply(layers, readable=grants.confinement_paths(readable), writable=[submission_dir])
            os.environ["TMPDIR"] = submission_dir  # /tmp is out of reach
    except BaseException as err:
        line = json.dumps({"setup_error": f"{type(err).__name__}: {err}"[:2000]}).encode() + b"\n"
        try:
            os.write(setup_fd, line)  # one write under PIPE_BUF: never interleaved with the waiter's lines
        except OSError:
            pass
        os._exit(70)
    os.close(SETUP_FD)  # before student code: from here on the child can reach only its reply pipe
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    try:
        probes.serve(REQUEST_FD, RESPONSE_FD, submission_dir)
    finally:
        os._exit(0)


def _keep_only_protocol_fds(request_r, response_w, output_w, status_w):
    """stdin from /dev/null, stdout and stderr to the output pipe, the protocol pipes at fixed numbers
    (and the status pipe, for a setup error, until setup is done), and nothing else: no descriptor of
    the zygote's, or of whoever started the grader, reaches student code."""
    high = [os.dup(fd) for fd in (request_r, response_w, output_w, status_w)]  # out of the way of 0-5
    _stdin_from_devnull()
    os.dup2(high[2], 1)
    os.dup2(high[2], 2)
    os.dup2(high[0], REQUEST_FD)
    os.dup2(high[1], RESPONSE_FD)
    os.dup2(high[3], SETUP_FD)
    os.closerange(SETUP_FD + 1, max_fd())  # the dups in `high` too


def _stdin_from_devnull():
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def max_fd():
    """One above the highest descriptor this process may hold: where ``os.closerange`` stops."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


# --- the grader's handle on one child ------------------------------------------------------

class Child:
    """One sandboxed child: send a request, wait for the answer within the time limit.

    Replies come from a process that runs student code, so every field of one is a claim:
    ``call`` reads at most ``MAX_REPLY_BYTES``, checks the sequence number and the schema
    (``replies.check``) before returning anything, and kills the child on the first fault.
    """

    # Measured over the hidden suite on the reference: the largest reply is 1.0 MiB (tiled_attention
    # at T = 4096: four (4096, 16) float32 tensors), the largest header 1.4 KiB (texts are cut at 2,000).
    MAX_REPLY_BYTES = 8 << 20
    MAX_REPLY_HEADER_BYTES = 256 << 10

    def __init__(self, request_w, response_r, output_r, status_r, limits, level, uid):
        self.request_w, self.response_r, self.output_r, self.status_r = request_w, response_r, output_r, status_r
        self.limits, self.level, self.uid = limits, level, uid
        self.output = bytearray()
        self.output_dropped = 0
        self.pid = None
        self.status_lines = b""
        self.status_eof = False
        self.exit_status = None
        self.swept = False  # the waiter killed every process of the child's uid (uid level)
        self.setup_error = None  # what the child's setup wrote on the status pipe, before any student code ran
        self.dead = None
        self.seq = 0  # requests sent so far; a reply must carry its request's number
        self.reader = wire.Reader(self.MAX_REPLY_BYTES, self.MAX_REPLY_HEADER_BYTES)
        for fd in (request_w, response_r, output_r, status_r):  # the grader never blocks on a child
            os.set_blocking(fd, False)
        self._wait_for_pid()

    def _wait_for_pid(self):
        deadline = time.monotonic() + 30
        while self.pid is None:
            self._pump([self.status_r], deadline)
            if self.dead:
                raise ChildDied(self.dead)
            if time.monotonic() > deadline:
                raise ChildDied("the sandbox did not start")

    def call(self, request, timeout=None, deadline=None, cpu_left=None):
        """Send one probe request and return the child's decoded reply, checked by ``replies.check``.

        The call's limit is the child's own CPU time (``timeout``, else ``limits.call_seconds``; at most
        ``cpu_left``, what is left of the submission's), read by the parent from the kernel (``cpu_seconds``),
        never from the child: a loaded machine slows a call down without costing it anything. A child that
        sleeps or blocks uses no CPU, so a wall-clock backstop ``WALL_BACKSTOP`` times the limit (never past
        ``deadline``, the submission's) ends it; ``ChildDied.wall`` says which limit it was. Both count from
        before the request is written: the request pipe is non-blocking, and a child that does not read it
        times out like one that does not answer. ``cpu_used`` is then what the call took.
        A reply that is too large, malformed, or numbered for another request is the student's
        failure: the child is killed and ``ChildDied`` says why. ``OutOfTurn`` means the child
        misbehaved after its previous reply; the caller may retry this request on a fresh child.
        """
        if self.dead:
            raise ChildDied(self.dead)
        self._check_silent()
        limit = self.limits.call_seconds if timeout is None else timeout
        cpu_limit = limit if cpu_left is None else max(min(limit, cpu_left), 0.0)
        cpu_start = self.cpu_seconds()
        # Where the kernel gives no CPU figure, the wall clock is all there is: the limit itself.
        wall_limit = limit * WALL_BACKSTOP if cpu_start is not None else cpu_limit
        ends = time.monotonic() + wall_limit
        if deadline is not None and deadline < ends:
            ends = deadline
        self.cpu_used = 0.0
        self.seq += 1
        unsent = memoryview(wire.encode(dict(request, seq=self.seq)))
        while True:
            try:
                if unsent:
                    unsent = unsent[self._write_some(unsent):]
                message = self.reader.message()
                self._count_cpu(cpu_start)
                if message is not None:
                    return self._accept(message)
                if self.dead:
                    raise ChildDied(self.dead)
                if self.cpu_used > cpu_limit:
                    self.kill()
                    self.dead = f"used more than {cpu_limit:g} s of CPU time"
                    raise ChildDied(self.dead, timed_out=True)
                if time.monotonic() > ends:
                    self.kill()
                    self.dead = (f"gave no answer within the wall-clock backstop ({wall_limit:g} s), "
                                 f"having used {self.cpu_used:.1f} s of CPU time")
                    raise ChildDied(self.dead, timed_out=True, wall=cpu_start is not None)
                self._pump([self.response_r, self.output_r, self.status_r],
                           min(ends, time.monotonic() + CPU_POLL_SECONDS), self.reader,
                           write=self.request_w if unsent else None)
            except (wire.WireError, replies.BadReply) as err:
                self.kill()
                self.dead = f"sent a malformed reply ({err})"
                raise ChildDied(self.dead) from None

    cpu_clock = None  # a callable giving the CPU time of every process of the child's (its cgroup's), or None
    cpu_used = 0.0

    def cpu_seconds(self):
        """The CPU time the child has used so far, as the kernel counts it: its cgroup's (``cpu_clock``: every
        process it started too) where there is one, else its own process's (/proc/<pid>/stat), or None."""
        if self.cpu_clock is not None:
            used = self.cpu_clock()
            if used is not None:
                return used
        return process_cpu_seconds(self.pid)

    def _count_cpu(self, start):
        now = self.cpu_seconds()
        if start is not None and now is not None:
            self.cpu_used = max(now - start, self.cpu_used)

    def _write_some(self, data):
        """Write what the request pipe takes now; 0 if it is full. A pipe the child closed means it is gone
        (a setup error it left on the status pipe, read by ``_collect_death``, names the death)."""
        try:
            return os.write(self.request_w, data)
        except BlockingIOError:
            return 0
        except OSError:
            self._collect_death(time.monotonic() + 2)
            self.dead = self.dead or "the submission's process exited"
            raise ChildDied(self.dead) from None

    def _accept(self, message):
        """The reply to request ``self.seq``, or an exception saying why ``message`` is not it.
        Nothing on this pipe is the grader's word: a "setup_error" here is a malformed reply like any other."""
        if type(message) is not dict:
            raise replies.BadReply(f"the reply is a {type(message).__name__}, not an object")
        seq = message.get("seq")
        if type(seq) is int and 0 < seq < self.seq:
            self.kill()
            self.dead = "answered an earlier request a second time (its code wrote to the grader's pipe)"
            raise OutOfTurn(self.dead)
        if seq != self.seq or type(seq) is not int:
            raise replies.BadReply(f"not numbered {self.seq}, the request it answers")  # the child's number is not repeated
        return replies.check(message)

    def _check_silent(self):
        """Between requests the probe loop is silent and alive. Bytes or an exit now come from
        student code that ran on after its reply, so that reply was not the probe loop's. Before
        the first request no student code has run: the sandbox's setup error, if any, is on the status pipe."""
        if self.seq == 0:
            return
        try:
            self._pump([self.response_r, self.status_r], time.monotonic(), self.reader)
        except wire.WireError:
            pass  # too much already: out of turn all the same
        if self.dead or self.reader.pending():
            self.kill()
            self.dead = "wrote to the grader's pipe or exited between two requests"
            raise OutOfTurn(self.dead)

    def _pump(self, fds, deadline, reader=None, write=None):
        """Wait for any of ``fds`` (or for room in ``write``) and move what arrived into its buffer."""
        fds = [fd for fd in fds if fd is not None]
        ready, _, _ = select.select(fds, [write] if write is not None else [], [],
                                    max(0.0, min(deadline - time.monotonic(), 1.0)))
        for fd in ready:
            if fd not in (self.response_r, self.output_r, self.status_r):
                continue  # closed while handling an earlier descriptor
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if fd == self.output_r:
                self._keep_output(chunk)
                if not chunk:
                    os.close(fd)
                    self.output_r = None
            elif fd == self.status_r:
                self._status(chunk)
            elif chunk:
                reader.feed(chunk)
            else:  # the response pipe closed: the child is gone
                self._collect_death(time.monotonic() + 2)
                self.dead = self.dead or "the submission's process exited"

    def _keep_output(self, chunk):
        room = OUTPUT_CAP - len(self.output)
        self.output += chunk[:max(room, 0)]
        self.output_dropped += max(len(chunk) - max(room, 0), 0)

    def _status(self, chunk):
        if not chunk:
            self.status_eof = True
            self.dead = self.dead or "the sandbox exited"
            return
        self.status_lines += chunk
        while b"\n" in self.status_lines:
            line, self.status_lines = self.status_lines.split(b"\n", 1)
            info = json.loads(line)
            if "pid" in info:
                self.pid = info["pid"]
            elif "status" in info:
                self.exit_status = info["status"]
                self.swept = info.get("swept") is True
                self.dead = self.setup_error or describe_status(info["status"])
            elif "setup_error" in info:  # the waiter's, or the child's before any student code ran
                self.setup_error = f"grader error: the sandbox could not start ({str(info['setup_error'])[:500]})"
                self.dead = self.setup_error

    def _collect_death(self, deadline):
        """After EOF, wait briefly for the waiter's exit-status line to name the cause."""
        while not self.status_eof and self.exit_status is None and time.monotonic() < deadline:
            self._pump([self.status_r, self.output_r], deadline)

    def kill(self):
        """Kill the child and its process group (at the namespaces level: everything it started).
        At the uid level, ``close`` then makes sure no process of the child's uid survives."""
        if self.pid:
            for target in (self.pid, -self.pid):  # PID-namespace init, then its process group
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass

    def close(self):
        """End the child (whatever it is doing), and everything it started, and release the pipes."""
        self.kill()
        self._collect_death(time.monotonic() + 5)
        if self.level == "uid" and not self.swept:  # the waiter did not say it purged the uid
            sweep.purge_uid(self.uid, self.level)
        for fd in (self.request_w, self.response_r, self.output_r, self.status_r):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.request_w = self.response_r = self.output_r = self.status_r = None

    def output_text(self):
        """What the child printed and the grader kept (the first ``OUTPUT_CAP`` bytes): the student's text
        only. How much more there was is the grader's count, ``output_dropped``, never part of the text."""
        return self.output.decode("utf-8", "replace")


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid):
    """User and system CPU time of process ``pid`` (all its threads), from /proc/<pid>/stat; None if unreadable."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # the name, in parentheses, may hold spaces
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


def describe_status(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        hint = {"SIGSEGV": " (a segmentation fault)", "SIGKILL": " (a limit was hit or it was stopped)",
                "SIGXCPU": " (CPU time limit)"}.get(name, "")
        return f"killed by {name}{hint}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def warm_up():
    """Do once, before the zygote forks, what torch does lazily on first use of the probes' ops.

    Paid in every child instead, it would add up, and a child whose uid cannot read
    site-packages could not import what is missing. The gradient probe needs no sympy
    (``probes.weighted_sum``), so the zygote does not hold it: a smaller zygote forks faster.
    """
    import torch

    from autograder.containment import probes

    torch.set_num_threads(1)  # grading runs many small ops; threads only add overhead
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    scores = (x @ x.transpose(-2, -1)).masked_fill(~torch.eye(2, dtype=torch.bool), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ x
    pairs = [(out, torch.ones_like(out)), (weights, torch.ones_like(weights))]
    torch.autograd.grad(probes.weighted_sum(pairs), [x], allow_unused=True)
    # The op record's profiler looks for optional modules on its first use (and logs a traceback to
    # stderr when one fails to import): done here once, no child pays for it or prints it.
    with probes.OpRecord("warm-up"):
        torch.softmax(x.detach(), dim=-1)
    preload_allowed_modules()


def preload_allowed_modules():
    """Import every module a submission may import (``rules.allowed_modules``: numpy, einops and its torch
    layers, the standard library's few), so a child's import of one costs nothing and needs no file. Where
    one is not installed the child's import fails as the student's error, and the kit's tests say so
    (tests/containment/test_allowed_modules.py)."""
    import importlib

    from autograder import rules

    for name in rules.allowed_modules():
        try:
            importlib.import_module(name)
        except ImportError:
            pass

