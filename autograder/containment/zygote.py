"""Start the zygote, the process that forks every sandboxed child, and ask it for children.

Two ways to start it, both with nothing of the grader's secrets in it:

* exec'd: a fresh interpreter. This module imports no torch, so a command can start the zygote
  before its own process imports torch: the two imports then run at once on two cores.
* forked (``preloaded=True``): a fork of a grader that has imported torch and the probes but has
  read nothing of the course or the student yet, and was started with the allow-listed
  environment (``child_environment``). One torch import instead of two: on Gradescope's half a
  CPU the two imports of the exec'd way cannot overlap.

The zygote's own side (``zygote_main``, ``serve``) and the child's are in ``sandbox``.
"""
import json
import mmap
import os
import socket
import subprocess
import sys
import tempfile

from autograder.containment import isolation, sweep
from autograder.containment.uids import allocate_uid
from autograder.paths import KIT_ROOT

# What a zygote (and so every child) sees of the environment: nothing of the instructor's or
# Gradescope's, only what the runtime needs. OPENBLAS_* describe this machine's processor, where
# older OpenBLAS builds need them to compute right.
ENV_PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
LEDGER_BYTES = 1 << 20  # room for 262,143 children's uids per run
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from autograder.containment.sandbox import zygote_main; zygote_main()"


def child_environment():
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update({k: os.environ[k] for k in ENV_PASSED_THROUGH if k in os.environ})
    return env


# The isolation settings a command restarted with ``child_environment`` still needs: passed as an argument.
ISOLATION_SETTINGS = ("AUTOGRADER_ISOLATION", "AUTOGRADER_LAYERS")


def isolation_settings():
    """{name: value} of the ISOLATION_SETTINGS this process was started with."""
    return {k: os.environ[k] for k in ISOLATION_SETTINGS if k in os.environ}


def restart_allow_listed(args):
    """Exec this interpreter again (``python -E -s -B *args``) with ``child_environment()`` and nothing else of
    this process's environment, so that a zygote forked from it sees nothing the command was started with.
    Returns only by raising OSError (the exec failed): the caller goes on with an exec'd zygote."""
    sys.stdout.flush(), sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-E", "-s", "-B", *args], child_environment())


class Zygote:
    """A fresh interpreter that holds torch and the probes, and forks sandboxed children on request.

    It is exec'd, not forked from the grader: it starts with none of the grader's memory (the class
    roster, submission paths, Gradescope's metadata), no inherited descriptor but its socket, and an
    allow-listed environment. It imports torch while the grader does.
    """

    def __init__(self, level, hidden=(KIT_ROOT,), layers=(), preloaded=False):
        self.level, self.hidden, self.layers = level, list(hidden), list(layers)
        if "landlock-fs" in self.layers:  # the kit, wherever grading starts from (each command adds its own folders)
            isolation.refuse_inside_grants(self.hidden)
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()  # the zygote's own errors, for a grader error message
        if preloaded:
            self.process = _fork_zygote(theirs, self.log, level, self.hidden, self.layers)
        else:
            settings = json.dumps({"fd": theirs.fileno(), "level": level, "hidden": self.hidden, "layers": self.layers})
            self.process = subprocess.Popen(
                [sys.executable, "-E", "-s", "-B", "-c", _BOOT, KIT_ROOT, settings], pass_fds=(theirs.fileno(),),
                env=child_environment(), cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        theirs.close()
        self.pid = self.process.pid
        # The uids this run's children got, for the final sweep: shared memory, so that the
        # per-submission graders (forks of this process) add theirs where this process reads them.
        self.ledger = mmap.mmap(-1, LEDGER_BYTES)

    def failure(self):
        """The zygote's last words, if it died (for a grader error)."""
        if self.process.poll() is None:
            return None
        self.log.seek(0)
        tail = self.log.read()[-1500:].decode("utf-8", "replace").strip()
        return f"the sandbox's zygote exited ({self.process.returncode}): {tail or 'no message'}"

    def next_uid(self, slot=0):
        """A uid no child on this machine had before (``uids.allocate_uid``), when the grader is root;
        ``slot`` is not needed for that. Called before the child's folder is made, which that uid then owns alone.
        Without root no uid is set (a user namespace maps its own)."""
        if os.getuid() != 0:
            return isolation.DEFAULT_SANDBOX_UID
        return allocate_uid(record=self._record)

    def _record(self, uid):
        count = int.from_bytes(self.ledger[:4], "little")
        if 4 * (count + 2) > LEDGER_BYTES:
            raise RuntimeError(f"more than {count} sandboxed children in one run: the uid sweep could not cover them")
        self.ledger[4 * (count + 1):4 * (count + 2)] = uid.to_bytes(4, "little")
        self.ledger[:4] = (count + 1).to_bytes(4, "little")

    def uids(self):
        """Every uid handed to a child of this zygote so far, by this process or its forks."""
        count = int.from_bytes(self.ledger[:4], "little")
        return [int.from_bytes(self.ledger[4 * i:4 * (i + 1)], "little") for i in range(1, count + 1)]

    def spawn(self, submission_dir, limits, uid, cgroup_procs=()):
        """Start a sandboxed child for one submission folder, as ``uid`` (from ``next_uid``), in the
        submission's cgroup when there is one (``cgroups.SubmissionCgroup.procs``); returns a ``sandbox.Child``.
        The folder holds everything the child may import of the course: the grader chose its files."""
        from autograder.containment.sandbox import Child  # imports torch (replies are tensors): not needed to start

        request_r, request_w = os.pipe()
        response_r, response_w = os.pipe()
        output_r, output_w = os.pipe()
        status_r, status_w = os.pipe()
        config = {"dir": submission_dir, "uid": uid,
                  "cgroups": list(cgroup_procs),
                  "memory_mb": limits.memory_mb,
                  "max_processes": limits.max_processes, "cpu_seconds": limits.cpu_seconds}
        fds = [request_r, response_w, output_w, status_w]
        socket.send_fds(self.sock, [json.dumps(config).encode()], fds)
        for fd in fds:
            os.close(fd)
        return Child(request_w, response_r, output_r, status_r, limits, self.level, uid)

    def kill_sandbox_users(self):
        """Final sweep before results are written, at the uid level (root only): no process of any of
        this zygote's sandbox uids survives, nor anything they left (``sweep.remove_leftovers``). Namespaces need no sweep: a PID namespace dies with its init."""
        if self.level != "uid":
            return
        ours = set(self.uids())
        for _ in range(5):  # a process may fork while its uid is being swept; its uid's kill(-1) gets the fork
            uids = ours & set(sweep.process_uids())
            if not uids:
                break
            for uid in uids:
                sweep.kill_all_of_uid(uid)
        sweep.remove_leftovers(ours)  # each waiter did so already, unless it was killed first

    def stop(self):
        try:
            self.sock.close()
            self.process.kill()
            self.process.wait()
        except (OSError, ChildProcessError):
            pass


# --- the forked zygote -----------------------------------------------------------------------

def preload():
    """In a grader that will fork its zygote (``Zygote(preloaded=True)``): import and warm up what the
    zygote holds, before this process reads anything of the course or the student."""
    from autograder.containment.frozen import uncollected

    with uncollected():
        from autograder.containment import confine, probes, sandbox  # noqa: F401  (imports torch)

        sandbox.warm_up()


def environment_is_allow_listed():
    """This process was started with the zygote's environment and nothing else (a fork may then be the zygote)."""
    return dict(os.environ) == child_environment() and os.environ.get("PATH") is not None


SOCKET_FD = 3  # the forked zygote's socket; every other descriptor above stderr is closed


def _fork_zygote(theirs, log, level, hidden, layers):
    """Fork the zygote from this process (see the module doc); returns a handle like ``subprocess.Popen``'s.

    The caller vouches for what this process holds: torch and the probes (``preload``), and nothing
    read from the course or the student. The environment is checked here: it is the allow-list
    (what ``/proc/self/environ`` shows is the environment this process was exec'd with)."""
    if not environment_is_allow_listed():
        raise RuntimeError("a zygote is forked only from a process started with the allow-listed environment")
    pid = os.fork()
    if pid:
        return _Forked(pid)
    try:  # the zygote: never returns into the grader's code
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(log.fileno(), 2)
        os.dup2(theirs.fileno(), SOCKET_FD)
        from autograder.containment import sandbox

        os.closerange(SOCKET_FD + 1, sandbox.max_fd())  # the grader's socket end, its log, whatever it inherited

        sandbox.serve(socket.socket(fileno=SOCKET_FD), level, hidden, layers)
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(70)
    os._exit(0)


class _Forked:
    """What ``Zygote`` needs of ``subprocess.Popen`` for a forked zygote: poll, kill, wait, returncode."""

    def __init__(self, pid):
        self.pid, self.returncode = pid, None

    def poll(self):
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self):
        if self.poll() is None:
            os.kill(self.pid, 9)

    def wait(self):
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode
