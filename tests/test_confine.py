"""Confinement without namespaces (autograder/confine.py): each layer, applied in a fresh process,
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

from autograder import confine, isolation
from conftest import ROOT

OFFERED = confine.possible_layers()

ATTEMPT = r"""
import json, os, socket, sys
from autograder import confine
layers, readable, writable, tries = json.loads(sys.argv[1])
confine.apply(layers, readable=readable, writable=writable)
outcome = {}
for name, code in tries.items():
    try:
        exec(code, {"os": os, "socket": socket})
        outcome[name] = "ok"
    except OSError as err:
        outcome[name] = type(err).__name__
print(json.dumps(outcome))
"""


def confined(layers, tries, writable, readable=None):
    """Run each snippet of ``tries`` in a process confined to ``layers``; {name: "ok" or the OSError's type}."""
    for layer in layers:
        if layer not in OFFERED:
            pytest.skip(f"this kernel does not offer {layer} (Landlock ABI {confine.landlock_abi()})")
    readable = isolation.confinement_paths() if readable is None else readable
    run = subprocess.run([sys.executable, "-c", ATTEMPT, json.dumps([layers, readable, [str(writable)], tries])],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
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
    runtime_file = os.path.join(os.path.dirname(os.__file__), "kit-confine-test")
    outcome = confined(["landlock-fs"], {"write own": f"open({str(scratch / 'f')!r}, 'w').write('x')",
                                         "write runtime": f"open({runtime_file!r}, 'w').write('x')"},
                       writable=scratch)
    assert outcome == {"write own": "ok", "write runtime": "PermissionError"}
    assert not os.path.exists(runtime_file)


def test_landlock_fs_binds_the_processes_the_child_starts(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    code = (f"pid = os.fork()\nif pid == 0:\n    try:\n        open({str(secret)!r}).read()\n        os._exit(0)\n"
            f"    except OSError:\n        os._exit(13)\n_, status = os.waitpid(pid, 0)\n"
            f"assert os.waitstatus_to_exitcode(status) == 13, 'the forked process read the file'")
    assert confined(["landlock-fs"], {"fork and read": code}, writable=tmp_path / "scratch") == {"fork and read": "ok"}


def test_landlock_tcp_refuses_connecting_to_a_listening_port(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"s = socket.socket(); s.settimeout(5); s.connect(('127.0.0.1', {port}))"
        assert confined(["landlock-tcp"], {"connect": code}, writable=tmp_path, readable=["/"]) == {
            "connect": "PermissionError"}


def test_seccomp_refuses_every_socket_family_but_unix(tmp_path):
    tries = {"udp": "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
             "tcp6": "socket.socket(socket.AF_INET6, socket.SOCK_STREAM)",
             "netlink": "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)",
             "unix": "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()"}
    assert confined(["seccomp-net"], tries, writable=tmp_path, readable=["/"]) == {
        "udp": "PermissionError", "tcp6": "PermissionError", "netlink": "PermissionError", "unix": "ok"}


def test_landlock_scope_stops_signals_to_processes_outside(tmp_path):
    outcome = confined(["landlock-scope"], {"signal the parent": "os.kill(os.getppid(), 0)",
                                            "signal itself": "os.kill(os.getpid(), 0)"},
                       writable=tmp_path, readable=["/"])
    assert outcome == {"signal the parent": "PermissionError", "signal itself": "ok"}


def test_a_layer_the_kernel_lacks_is_refused_not_skipped():
    # In its own process: were the check missing, Landlock would confine whoever called it.
    code = ("from autograder import confine\n"
            "confine.landlock_abi = lambda: 3  # a kernel with Landlock but without scopes\n"
            "try:\n    confine.apply(['landlock-fs', 'landlock-scope'], readable=[], writable=[])\n"
            "except confine.ConfineError as err:\n    print('refused:', err)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "refused:" in run.stdout and "lacks a layer" in run.stdout, run.stdout + run.stderr
