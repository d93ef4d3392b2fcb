"""Confinement a child applies to itself where namespaces are refused (the ``uid`` and ``rlimits`` levels).

* Landlock (Linux 5.13+, unprivileged, works inside Docker where its syscalls are allowed): the
  file system shrinks to the Python runtime, read-only, and the child's own scratch folder; from
  ABI 4 TCP bind/connect are refused; from ABI 6 signals and abstract unix sockets cannot reach
  any process outside the child's own domain.
* A seccomp filter (``seccomp``), at every level: an allow-list of the system calls a child
  needs once it serves probes (``ALLOWED``, ``ALLOWED_IF``); every other call fails with EPERM:
  new processes and threads, sockets, System V IPC, keyrings, ptrace, io_uring, and the 32-bit
  syscall ABIs (which would bypass a filter written for the native one).

``available()`` runs in the trusted parent, in a throwaway child, to learn which layers this
machine gives; the children are then required to apply exactly those (``apply`` raises
otherwise, and the child refuses to run). The report names the layers in force.
Python has no bindings for either, so both go through libc.
"""
import ctypes
import os
import platform
import struct

LAYERS = ("landlock-fs", "landlock-tcp", "landlock-scope", "seccomp")

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# Landlock file-system rights by the ABI that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)  # what a rule on a file may grant
# Making anything (a file, folder, link, fifo, socket, device) and moving a file in from elsewhere (REFER):
# never granted, so a child's disk use is bounded by the files it was given, RLIMIT_FSIZE each.
_MAKE = sum(1 << bit for bit in range(6, 14))
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# seccomp: the audit arch of each native ABI the filter is written for.
_NATIVE = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


class ConfineError(OSError):
    """A layer the parent expects could not be applied: the child must not run student code."""


def landlock_abi():
    abi = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return max(abi, 0)


def possible_layers():
    """The layers this kernel and machine offer, from the Landlock ABI and the architecture."""
    abi = landlock_abi()
    layers = []
    if abi >= 1:
        layers.append("landlock-fs")
    if abi >= 4:
        layers.append("landlock-tcp")
    if abi >= 6:
        layers.append("landlock-scope")
    if platform.machine() in _NATIVE:
        layers.append("seccomp")
    return layers


def apply(layers, readable, writable):
    """Confine this process (and everything it starts) to ``layers``; irreversible.

    ``readable``: folders and files it may read and execute; ``writable``: folders whose files it may
    also change or remove, where it may create nothing (Landlock, and the seccomp filter, which refuses
    O_CREAT and O_TMPFILE): the disk it can fill is the files it was given.
    """
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfineError(ctypes.get_errno(), "no_new_privs")
    if any(layer.startswith("landlock") for layer in layers):
        _landlock(layers, readable, writable)
    if "seccomp" in layers:
        _seccomp_allow_list()  # last: the calls above are not on its list


def _landlock(layers, readable, writable):
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError(ctypes.get_errno(), "Landlock is not available")
    fs_rights = _FS_RIGHTS_BY_ABI[max(a for a in _FS_RIGHTS_BY_ABI if a <= abi)]
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if "landlock-tcp" in layers else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if "landlock-scope" in layers else 0
    if (net and abi < 4) or (scoped and abi < 6):
        raise ConfineError(0, f"Landlock ABI {abi} lacks a layer asked for: {layers}")
    attr = struct.pack("=QQQ", fs_rights, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfineError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        read = _EXECUTE | _READ_FILE | _READ_DIR
        for path in readable:
            _allow(ruleset, path, read, fs_rights)
        for path in writable:
            _allow(ruleset, path, fs_rights & ~_MAKE, fs_rights)
        if _libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise ConfineError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset, path, rights, handled):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a runtime path this machine does not have
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights & handled, fd), 12)
        if _libc.syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                         rule, ctypes.c_uint32(0)) != 0:
            raise ConfineError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


# --- seccomp: an allow-list of the system calls a child makes once it serves probes -----------

# (x86_64, aarch64) numbers, from the kernel's unistd_64.h and asm-generic/unistd.h; None where the
# ABI lacks the call (aarch64 has only the *at forms).
_NUMBERS = {
    "read": (0, 63), "write": (1, 64), "readv": (19, 65), "writev": (20, 66), "pread64": (17, 67),
    "pwrite64": (18, 68), "lseek": (8, 62), "close": (3, 57), "dup": (32, 23), "dup2": (33, None),
    "dup3": (292, 24), "fcntl": (72, 25), "ioctl": (16, 29), "fstat": (5, 80), "newfstatat": (262, 79),
    "statx": (332, 291), "poll": (7, None), "ppoll": (271, 73), "select": (23, None), "pselect6": (270, 72),
    "open": (2, None), "openat": (257, 56), "stat": (4, None), "lstat": (6, None), "access": (21, None),
    "faccessat": (269, 48), "faccessat2": (439, 439), "readlink": (89, None), "readlinkat": (267, 78),
    "getdents64": (217, 61), "getcwd": (79, 17), "chdir": (80, 49), "fchdir": (81, 50), "mkdir": (83, None),
    "mkdirat": (258, 34), "unlink": (87, None), "unlinkat": (263, 35), "rename": (82, None),
    "renameat": (264, 38), "renameat2": (316, 276), "rmdir": (84, None), "ftruncate": (77, 46),
    "fsync": (74, 82), "fdatasync": (75, 83), "umask": (95, 166), "statfs": (137, 43), "fstatfs": (138, 44),
    "brk": (12, 214), "mmap": (9, 222), "munmap": (11, 215), "mremap": (25, 216), "mprotect": (10, 226),
    "madvise": (28, 233), "clock_gettime": (228, 113), "clock_getres": (229, 114),
    "gettimeofday": (96, 169), "time": (201, None), "nanosleep": (35, 101), "clock_nanosleep": (230, 115),
    "getpid": (39, 172), "gettid": (186, 178), "getppid": (110, 173), "getuid": (102, 174),
    "geteuid": (107, 175), "getgid": (104, 176), "getegid": (108, 177), "getgroups": (115, 158),
    "getresuid": (118, 148), "getresgid": (120, 150), "getrusage": (98, 165), "times": (100, 153),
    "sysinfo": (99, 179), "uname": (63, 160), "sched_getaffinity": (204, 123), "sched_yield": (24, 124),
    "getrlimit": (97, 163), "prlimit64": (302, 261), "rt_sigaction": (13, 134), "rt_sigprocmask": (14, 135),
    "rt_sigreturn": (15, 139), "sigaltstack": (131, 132), "restart_syscall": (219, 128),
    "futex": (202, 98), "getrandom": (318, 278), "exit": (60, 93), "exit_group": (231, 94),
    "kill": (62, 129), "tgkill": (234, 131), "tkill": (200, 130), "prctl": (157, 167),
}
# What a child needs once it serves probes (the filter is installed after torch is imported and its
# pools are made single-threaded, before the student's import), found by tracing children with
# `strace -f` over the hidden suite on the samples, the correct variants, the real-code fixtures and
# the hostile suite: its descriptors, files (which ones: Landlock or the private root decide), memory,
# clocks, its own signals and identity, importing a module the zygote did not. Everything else fails
# with EPERM: processes and threads (fork, clone, clone3, vfork, execve), sockets of any family,
# System V IPC, keyrings, ptrace, process_vm_*, io_uring, userfaultfd, perf_event_open, bpf, mount,
# unshare, memfd_create, inotify, personality, mkdir (a folder is disk beyond the given files), ...
ALLOWED = (
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "dup", "dup2", "dup3",
    "fcntl", "fstat", "newfstatat", "statx", "poll", "ppoll", "select", "pselect6",
    "open", "openat", "stat", "lstat", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getdents64", "getcwd", "chdir", "fchdir", "unlink", "unlinkat", "rename",
    "renameat", "renameat2", "rmdir", "ftruncate", "fsync", "fdatasync", "umask", "statfs", "fstatfs",
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
    "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid",
    "getresgid", "getrusage", "times", "sysinfo", "uname", "sched_getaffinity", "sched_yield", "getrlimit",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    "futex", "getrandom", "exit", "exit_group",
)
_TCGETS, _FIONCLEX, _FIOCLEX, _FIONREAD = 0x5401, 0x5450, 0x5451, 0x541B
_PR_SET_NAME, _PR_GET_NAME = 15, 16
_SELF = object()  # stands for the child's own pid, known when the filter is built
# Calls allowed with one argument (its low 32 bits: each is an int to the kernel) among a few values.
ALLOWED_IF = {
    "ioctl": (1, (_TCGETS, _FIOCLEX, _FIONCLEX, _FIONREAD)),  # isatty(), close-on-exec, bytes waiting
    "prctl": (0, (_PR_SET_NAME, _PR_GET_NAME)),  # its own name; no other process setting
    "kill": (0, (_SELF,)), "tgkill": (0, (_SELF,)), "tkill": (0, (_SELF,)),  # abort() and raise()
    "prlimit64": (0, (0, _SELF)),  # its own limits (lowering them; the hard limits stay)
}
# Calls allowed unless one argument has a flag set: a new file (O_CREAT) or an unnamed one (O_TMPFILE)
# would be disk outside the files a child was given. Landlock alone refuses the first, but not the second,
# and is not everywhere; so the filter refuses both, at every level with seccomp: a child creates nothing
# and its disk is bounded by its given files (RLIMIT_FSIZE each). O_CREAT even on an existing file
# (Python's open(path, "w")): traced, an honest child opens none once the filter is in place (the zygote
# has imported torch; python -B writes no bytecode), and the from-scratch rule refuses `open` itself.
_O_CREAT, _O_TMPFILE = 0o100, 0o20000000  # the same on x86_64 and aarch64 (asm-generic/fcntl.h)
ALLOWED_UNLESS = {"open": (1, _O_CREAT | _O_TMPFILE), "openat": (2, _O_CREAT | _O_TMPFILE)}
_EPERM = 1
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_X32_SYSCALL_BIT = 0x40000000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


def seccomp_program(machine=None, pid=None):
    """The filter as a list of classic BPF instructions (code, jt, jf, k): the native ABI only, and of
    it only ``ALLOWED``, ``ALLOWED_IF`` and ``ALLOWED_UNLESS``; every other call returns EPERM."""
    machine = machine or platform.machine()
    column = ("x86_64", "aarch64").index(machine)
    arch = _NATIVE[machine]
    pid = os.getpid() if pid is None else pid
    numbers = lambda names: [_NUMBERS[n][column] for n in names if _NUMBERS[n][column] is not None]  # noqa: E731
    plain = numbers(n for n in ALLOWED if n not in ALLOWED_UNLESS)
    unless = [(_NUMBERS[n][column], arg, flag) for n, (arg, flag) in ALLOWED_UNLESS.items()
              if _NUMBERS[n][column] is not None]
    guarded = [(_NUMBERS[n][column], arg, [pid if v is _SELF else v for v in values])
               for n, (arg, values) in ALLOWED_IF.items() if _NUMBERS[n][column] is not None]
    # Layout: checks, then one block per guarded call, then ALLOW and DENY; jumps are resolved at the end.
    program = [(_LD_W_ABS, 0, 0, 4), (_JEQ_K, 0, "deny", arch),  # seccomp_data.arch: a 32-bit ABI bypasses
               (_LD_W_ABS, 0, 0, 0), (_JGE_K, "deny", 0, _X32_SYSCALL_BIT)]  # seccomp_data.nr; x32 too
    program += [(_JEQ_K, "allow", 0, nr) for nr in plain]
    program += [(_JEQ_K, f"block{i}", 0, nr) for i, (nr, _, _) in enumerate(guarded)]
    program += [(_JEQ_K, f"unless{i}", 0, nr) for i, (nr, _, _) in enumerate(unless)]
    program.append((_JEQ_K, "deny", "deny", 0))  # none of them: deny
    labels = {}
    for i, (_, arg, values) in enumerate(guarded):
        labels[f"block{i}"] = len(program)
        program.append((_LD_W_ABS, 0, 0, 16 + 8 * arg))  # seccomp_data.args[arg], low 32 bits
        program += [(_JEQ_K, "allow", 0, value & 0xFFFFFFFF) for value in values]
        program.append((_JEQ_K, "deny", "deny", 0))
    for i, (_, arg, flag) in enumerate(unless):
        labels[f"unless{i}"] = len(program)
        program.append((_LD_W_ABS, 0, 0, 16 + 8 * arg))
        program.append((_JSET_K, "deny", "allow", flag))
    labels["allow"], labels["deny"] = len(program), len(program) + 1
    program += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO | _EPERM)]

    def offset(at, target):
        if not isinstance(target, str):
            return target
        distance = labels[target] - at - 1
        assert 0 <= distance < 256, "a seccomp jump out of reach"
        return distance

    return [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(program)]


def _seccomp_allow_list():
    program = seccomp_program()
    filters = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *insn) for insn in program))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    prog = ctypes.create_string_buffer(fprog, len(fprog))
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, prog, 0, 0) != 0:
        raise ConfineError(ctypes.get_errno(), "seccomp filter")
