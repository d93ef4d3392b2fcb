"""Confinement without namespaces (autograder/containment/confine.py): each layer, applied in a fresh process,
refuses what it should and leaves what the child needs.

Each test starts a Python process that confines itself and then tries things; a layer this kernel
does not offer is skipped with the reason.
"""
import json
import os
import socket
import subprocess
import sys

import pytest

from autograder.containment import confine, grants, isolation
from autograder.containment.jail import inside
from autograder.containment.zygote import child_environment  # as a child has it: one OpenBLAS thread
from conftest import ROOT

OFFERED = confine.possible_layers()

ATTEMPT = r"""
import ctypes, json, os, socket, sys, threading
from autograder.containment import confine
from autograder.containment import grants
layers, readable, writable, tries, before = json.loads(sys.argv[1])
exec(before)  # what a zygote imports before it forks (torch), so before the filter
readable = grants.confinement_paths() if readable is None else readable  # as a child computes them, for itself
confine.apply(layers, readable=readable, writable=writable)
outcome = {}
for name, code in tries.items():
    try:
        exec(code, {"os": os, "socket": socket, "ctypes": ctypes, "threading": threading})
        outcome[name] = "ok"
    except (OSError, RuntimeError) as err:
        outcome[name] = type(err).__name__
print(json.dumps(outcome))
"""


def confined(layers, tries, writable, readable=None, before=""):
    """Run each snippet of ``tries`` in a process confined to ``layers`` (after running ``before``, unconfined);
    {name: "ok" or the OSError's type}."""
    for layer in layers:
        if layer not in OFFERED:
            pytest.skip(f"this kernel does not offer {layer} (Landlock ABI {confine.landlock_abi()})")
    run = subprocess.run([sys.executable, "-c", ATTEMPT, json.dumps([layers, readable, [str(writable)], tries, before])],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, env=child_environment())
    assert run.returncode == 0, f"the confined process failed:\n{run.stderr[-2000:]}"
    return json.loads(run.stdout)


def test_landlock_fs_hides_files_outside_the_runtime(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("x")
    outcome = confined(["landlock-fs"], {"read outside": f"open({str(secret)!r}).read()",
                                         "read the runtime": f"open({os.__file__!r}).read()"},
                       writable=tmp_path / "scratch")
    assert outcome == {"read outside": "PermissionError", "read the runtime": "ok"}


def test_landlock_fs_lets_the_child_write_only_its_own_folder(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "attention.py").write_text("")
    runtime_file = os.path.join(os.path.dirname(os.__file__), "kit-confine-test")
    outcome = confined(["landlock-fs"], {"write own": f"open({str(scratch / 'attention.py')!r}, 'w').write('x')",
                                         "write runtime": f"open({runtime_file!r}, 'w').write('x')"},
                       writable=scratch)
    assert outcome == {"write own": "ok", "write runtime": "PermissionError"}
    assert not os.path.exists(runtime_file)


def test_landlock_fs_lets_the_child_create_nothing_in_its_own_folder(tmp_path):
    """Its disk is the files it was given, RLIMIT_FSIZE each (issue 32): no new file, folder or link."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "attention.py").write_text("")
    own = str(scratch / "attention.py")
    outcome = confined(["landlock-fs"], {"new file": f"open({str(scratch / 'fill-0.bin')!r}, 'w')",
                                         "new folder": f"os.mkdir({str(scratch / 'more')!r})",
                                         "hard link": f"os.link({own!r}, {str(scratch / 'copy')!r})",
                                         "rename": f"os.rename({own!r}, {str(scratch / 'moved')!r})"},
                       writable=scratch)
    assert outcome == {"new file": "PermissionError", "new folder": "PermissionError", "hard link": "PermissionError",
                       "rename": "PermissionError"}
    assert sorted(os.listdir(scratch)) == ["attention.py"]


def test_landlock_fs_binds_the_processes_the_child_starts(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    code = (f"pid = os.fork()\nif pid == 0:\n    try:\n        open({str(secret)!r}).read()\n        os._exit(0)\n"
            f"    except OSError:\n        os._exit(13)\n_, status = os.waitpid(pid, 0)\n"
            f"assert os.waitstatus_to_exitcode(status) == 13, 'the forked process read the file'")
    assert confined(["landlock-fs"], {"fork and read": code}, writable=tmp_path / "scratch") == {"fork and read": "ok"}


def test_landlock_fs_shows_the_child_of_proc_only_its_own_entries(tmp_path):
    """No list of processes, no other process's command line (another grader's submission paths)."""
    outcome = confined(["landlock-fs"], {"own status": "open('/proc/self/status').read()",
                                         "own maps": "open(f'/proc/{os.getpid()}/maps').read()",
                                         "list processes": "os.listdir('/proc')",
                                         "the test's command line": f"open('/proc/{os.getpid()}/cmdline').read()",
                                         "init's command line": "open('/proc/1/cmdline').read()"},
                       writable=tmp_path / "scratch")
    assert outcome == {"own status": "ok", "own maps": "ok", "list processes": "PermissionError",
                       "the test's command line": "PermissionError", "init's command line": "PermissionError"}


def plant(folder, planted):
    """A secret file in ``folder`` (recorded in ``planted``, for removal), or None where the test may not write."""
    path = os.path.join(folder, f"kit-grant-secret-{os.getpid()}")
    try:
        with open(path, "x") as f:
            f.write("secret")
    except OSError:
        return None
    planted.append(path)
    return path


@pytest.fixture
def planted():
    paths = []
    yield paths
    for path in paths:
        os.remove(path)


def test_landlock_fs_hides_the_trees_around_the_runtime(tmp_path, planted):
    """Where a kit, a batch or reports may lie beside the runtime (issue 32): /usr/local, /usr/src, /opt,
    the venv's own folder. None of them is granted, only the Python folders and single files within."""
    trees = [t for t in ("/usr/local", "/usr/src", "/opt", sys.prefix) if os.path.isdir(t)]
    secrets = [s for s in (plant(t, planted) for t in trees) if s]
    if not secrets:
        pytest.skip("this test may write in none of /usr/local, /usr/src, /opt or the venv")
    outcome = confined(["landlock-fs"], {s: f"open({s!r}).read()" for s in secrets}, writable=tmp_path / "scratch")
    assert outcome == {s: "PermissionError" for s in secrets}


def test_landlock_fs_grants_no_folder_beside_a_granted_file(tmp_path, planted):
    """The interpreter, the loaded libraries, ld.so.cache and localtime are granted one file each: a
    secret beside any of them stays out of reach."""
    beside = {os.path.dirname(p) for p in grants.confinement_paths() if os.path.isfile(p)}
    beside -= {"/dev", "/proc"}
    secrets = [s for s in (plant(folder, planted) for folder in sorted(beside)
                           if not any(inside(folder, g) for g in grants.granted_folders())) if s]
    if not secrets:
        pytest.skip("this test may write beside none of the granted files")
    outcome = confined(["landlock-fs"], {s: f"open({s!r}).read()" for s in secrets}, writable=tmp_path / "scratch")
    assert outcome == {s: "PermissionError" for s in secrets}


def test_a_secret_in_any_granted_folder_stops_grading_before_a_child_starts(planted):
    """Whatever lies in a granted folder a child reads: a kit, submission, batch or --out there is refused."""
    secrets = [s for s in (plant(folder, planted) for folder in grants.granted_folders()) if s]
    if not secrets:
        pytest.skip("this test may write in none of the granted folders")
    for secret in secrets:
        with pytest.raises(isolation.CannotIsolate) as raised:
            isolation.refuse_inside_grants(["/nonexistent-kit", secret])
        message = str(raised.value.code)
        assert secret in message and "student code may read" in message and "\n" not in message


def test_paths_outside_every_granted_folder_are_not_refused(tmp_path):
    isolation.refuse_inside_grants([str(tmp_path), str(ROOT)])


def test_landlock_tcp_refuses_connecting_to_a_listening_port(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"s = socket.socket(); s.settimeout(5); s.connect(('127.0.0.1', {port}))"
        assert confined(["landlock-tcp"], {"connect": code}, writable=tmp_path, readable=["/"]) == {
            "connect": "PermissionError"}


# A libc call that fails sets errno: raise it as Python would, so the outcome names it.
LIBC = "libc = ctypes.CDLL(None, use_errno=True)\ndef check(r):\n    if r < 0:\n        raise OSError(ctypes.get_errno(), 'refused')\n"


def test_seccomp_refuses_what_grading_does_not_need(tmp_path):
    """Default-deny: sockets of every family (a named Unix socket on the host included), new threads and
    processes, System V IPC, keyrings, ptrace, io_uring and memfd fail with one errno, not a killed process."""
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "host.sock"))
    listening.listen()
    tries = {"udp": "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
             "unix connect": f"socket.socket(socket.AF_UNIX).connect({str(tmp_path / 'host.sock')!r})",
             "socketpair": "socket.socketpair()",
             "thread": "threading.Thread(target=print).start()",
             "fork": "os.fork()",
             "shared memory": LIBC + "check(libc.shmget(0x4147, 4096, 0o1666))",
             "message queue": LIBC + "check(libc.msgget(0x4147, 0o1666))",
             "keyring": LIBC + "check(libc.syscall(248, b'user', b'hx', b'x', 1, -4))",  # add_key (x86_64)
             "ptrace": LIBC + "check(libc.ptrace(16, os.getppid(), None, None))",  # PTRACE_ATTACH
             "io_uring": LIBC + "check(libc.syscall(425, 8, ctypes.create_string_buffer(120)))",
             "memfd": "os.memfd_create('x')"}
    if confine.platform.machine() != "x86_64":
        del tries["keyring"], tries["io_uring"]  # raw numbers of x86_64
    outcome = confined(["seccomp"], tries, writable=tmp_path, readable=["/"])
    listening.close()
    refused = {name: "PermissionError" for name in tries}
    refused["thread"] = "RuntimeError"  # Python's "can't start new thread"
    assert outcome == refused


def test_seccomp_refuses_to_create_a_file_and_allows_writing_a_given_one(tmp_path):
    """A new file (O_CREAT) or an unnamed one (O_TMPFILE) is disk beyond the files a child was given; the
    filter refuses both at every level, so the bound holds where Landlock is absent (issue 32)."""
    given = tmp_path / "given"
    given.write_text("")
    tries = {"unnamed file": f"os.open({str(tmp_path)!r}, os.O_TMPFILE | os.O_WRONLY, 0o600)",
             "new file": f"os.close(os.open({str(tmp_path / 'new')!r}, os.O_CREAT | os.O_WRONLY, 0o600))",
             "new file in /dev/shm": "open('/dev/shm/hx-confine-new', 'w')",
             "given file opened with 'w'": f"open({str(given)!r}, 'w')",
             "given file written": f"f = os.open({str(given)!r}, os.O_WRONLY | os.O_TRUNC); os.write(f, b'x'); os.close(f)",
             "open for reading": f"open({os.__file__!r}).read()"}
    outcome = confined(["seccomp"], tries, writable=tmp_path, readable=["/"])
    assert outcome == {"unnamed file": "PermissionError", "new file": "PermissionError",
                       "new file in /dev/shm": "PermissionError", "given file opened with 'w'": "PermissionError",
                       "given file written": "ok", "open for reading": "ok"}
    assert not (tmp_path / "new").exists() and given.read_text() == "x"


def test_seccomp_refuses_to_create_a_folder(tmp_path):
    """An empty folder takes a disk block and an inode, and a loop of them fills a disk where Landlock is absent
    (the uid level without it, the rlimits level): the filter refuses mkdir as it refuses a new file."""
    tries = {"new folder": f"os.mkdir({str(tmp_path / 'more')!r})",
             "new folder in /tmp": "os.mkdir('/tmp/hx-confine-folder')",
             "new folder, at form": f"os.mkdir('more', dir_fd=os.open({str(tmp_path)!r}, os.O_RDONLY))"}
    outcome = confined(["seccomp"], tries, writable=tmp_path, readable=["/"])
    assert outcome == {name: "PermissionError" for name in tries}
    assert not (tmp_path / "more").exists() and not os.path.exists("/tmp/hx-confine-folder")


def test_seccomp_allows_what_an_honest_child_does(tmp_path):
    """What grading needs after the filter is in place: import a module not loaded yet, compute with torch
    (forward and backward), write and remove the files it was given, read the clock, sleep, raise and print a
    traceback. torch is imported before the filter, as the zygote does: its import opens /dev/null with
    O_CREAT and creates a temporary file, both refused once the filter is in place."""
    (tmp_path / "own").write_text("")
    tries = {"import": "import numpy; numpy.ones(3).sum()",
             "torch": "import torch; torch.set_num_threads(1); x = torch.randn(64, 64, requires_grad=True); "
                      "(x @ x).softmax(-1).sum().backward(); torch.zeros(2048, 2048).sum()",
             "files": f"open({str(tmp_path / 'own')!r}, 'r+').write('x'); os.listdir({str(tmp_path)!r}); "
                      f"os.unlink({str(tmp_path / 'own')!r})",
             "clock and sleep": "import time; time.time(); time.monotonic(); time.sleep(0.01)",
             "traceback": "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.format_exc()",
             "own name": LIBC + "check(libc.prctl(15, b'probe', 0, 0, 0))",
             "urandom": "os.urandom(8)"}
    outcome = confined(["seccomp"], tries, writable=tmp_path, readable=["/"], before="import torch")
    assert outcome == {name: "ok" for name in tries}


def test_landlock_scope_stops_signals_to_processes_outside(tmp_path):
    outcome = confined(["landlock-scope"], {"signal the parent": "os.kill(os.getppid(), 0)",
                                            "signal itself": "os.kill(os.getpid(), 0)"},
                       writable=tmp_path, readable=["/"])
    assert outcome == {"signal the parent": "PermissionError", "signal itself": "ok"}


def test_a_layer_the_kernel_lacks_is_refused_not_skipped():
    # In its own process: were the check missing, Landlock would confine whoever called it.
    code = ("from autograder.containment import confine\n"
            "confine.landlock_abi = lambda: 3  # a kernel with Landlock but without scopes\n"
            "try:\n    confine.apply(['landlock-fs', 'landlock-scope'], readable=[], writable=[])\n"
            "except confine.ConfineError as err:\n    print('refused:', err)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "refused:" in run.stdout and "lacks a layer" in run.stdout, run.stdout + run.stderr
