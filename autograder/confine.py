"""Confinement a child applies to itself where namespaces are refused (the ``uid`` and ``rlimits`` levels).

* Landlock (Linux 5.13+, unprivileged, works inside Docker where its syscalls are allowed): the
  file system shrinks to the Python runtime, read-only, and the child's own scratch folder; from
  ABI 4 TCP bind/connect are refused; from ABI 6 signals and abstract unix sockets cannot reach
  any process outside the child's own domain.
* A seccomp filter: ``socket()`` for any family but AF_UNIX fails with EPERM (UDP, raw, netlink,
  ...), and so do io_uring (which can open sockets) and the 32-bit syscall ABIs (which would
  bypass a filter written for the native one).

``available()`` runs in the trusted parent, in a throwaway child, to learn which layers this
machine gives; the children are then required to apply exactly those (``apply`` raises
otherwise, and the child refuses to run). The report names the layers in force.
Python has no bindings for either, so both go through libc.
"""
import ctypes
import os
import platform
import struct

LAYERS = ("landlock-fs", "landlock-tcp", "landlock-scope", "seccomp-net")

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# Landlock file-system rights by the ABI that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)  # what a rule on a file may grant
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# seccomp: (audit arch, socket, io_uring_setup) of the native ABI.
_NATIVE = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
_AF_UNIX, _EPERM = 1, 1
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_X32_SYSCALL_BIT = 0x40000000


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
        layers.append("seccomp-net")
    return layers


def apply(layers, readable, writable):
    """Confine this process (and everything it starts) to ``layers``; irreversible.

    ``readable``: folders and files it may read and execute; ``writable``: folders it may also change.
    """
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfineError(ctypes.get_errno(), "no_new_privs")
    if any(layer.startswith("landlock") for layer in layers):
        _landlock(layers, readable, writable)
    if "seccomp-net" in layers:
        _seccomp_no_network()


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
            _allow(ruleset, path, fs_rights, fs_rights)
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


def _seccomp_no_network():
    arch, socket_nr, io_uring_nr = _NATIVE[platform.machine()]
    deny = _RET_ERRNO | _EPERM

    def stmt(code, k):
        return struct.pack("=HBBI", code, 0, 0, k)

    def jump(k, true, false):  # BPF_JMP | BPF_JEQ | BPF_K
        return struct.pack("=HBBI", 0x15, true, false, k)

    load, ret = 0x20, 0x06  # BPF_LD | BPF_W | BPF_ABS; BPF_RET | BPF_K
    program = [
        stmt(load, 4),                           # 0: seccomp_data.arch
        jump(arch, 1, 0),                        # 1: native ABI? else deny
        stmt(ret, deny),                         # 2
        stmt(load, 0),                           # 3: seccomp_data.nr
        struct.pack("=HBBI", 0x35, 0, 1, _X32_SYSCALL_BIT),  # 4: BPF_JGE: x32 syscalls are denied
        stmt(ret, deny),                         # 5
        jump(io_uring_nr, 0, 1),                 # 6
        stmt(ret, deny),                         # 7
        jump(socket_nr, 0, 3),                   # 8: socket()? else allow
        stmt(load, 16),                          # 9: args[0], the address family (low 32 bits)
        jump(_AF_UNIX, 1, 0),                    # 10
        stmt(ret, deny),                         # 11
        stmt(ret, _RET_ALLOW),                   # 12
    ]
    filters = ctypes.create_string_buffer(b"".join(program))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    prog = ctypes.create_string_buffer(fprog, len(fprog))
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, prog, 0, 0) != 0:
        raise ConfineError(ctypes.get_errno(), "seccomp filter")
