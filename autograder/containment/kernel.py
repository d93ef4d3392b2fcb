"""The Linux calls Python 3.11 has no wrappers for (through libc), and a throwaway child to try a change in.

``libc``, ``check`` and ``syscall`` call the C library and turn a failure into an ``OSError``;
``in_user_namespace`` says whether this process runs in a user namespace of its own;
``in_throwaway_child`` runs a check in a forked child whose changes to itself die with it.

May import: the standard library only.
"""
import ctypes
import ctypes.util
import os
import platform

_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126}, "aarch64": {"pivot_root": 41, "capset": 91}}

libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def check(result, what):
    """Raise the ``OSError`` of a libc call that did not return 0 (``what`` names it)."""
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def syscall(name, *args):
    """A system call by name (``pivot_root``, ``capset``), on the machines whose numbers are known."""
    number = _SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        raise OSError(f"{name}: unsupported machine {platform.machine()}")
    check(libc.syscall(number, *args), name)


def in_user_namespace():
    """True in a user namespace other than the host's (its uid map is not the identity)."""
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def in_throwaway_child(check):
    """Run ``check`` in a forked child that exits afterwards (whatever it changed about itself dies
    with it); True when it returned something true without raising."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ok = bool(check())
        except BaseException:
            ok = False
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    answer = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    return answer == b"1"

