"""What a child does to itself before it runs student code: new namespaces and a private root
(``namespaces``), dropped privileges (``namespaces``, ``uid``), resource limits and ``no_new_privs``.

The levels themselves are described in ``isolation``, which chooses one; ``confine`` adds Landlock
and seccomp. Python 3.11 has no wrappers for unshare/mount/pivot_root, so they go through libc
(``kernel``).

May import: the standard library and ``kernel``.
"""
import ctypes
import os
import resource
import shutil
import sys

from autograder.containment.kernel import check, in_user_namespace, libc, syscall

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 0x1, 0x2, 0x4, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1


def unshare(flags):
    """Move this process into the new namespaces of ``flags`` (``CLONE_*``)."""
    check(libc.unshare(flags), "unshare")


def mount(source, target, fstype=None, flags=0, data=None):
    """mount(2), with Python strings (``None`` for a null pointer)."""
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def set_parent_death_signal(sig):
    """This process gets ``sig`` when its parent dies."""
    libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def enter_namespaces():
    """In the not-yet-forked child: new namespaces. The next fork becomes PID 1 of the new PID namespace."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        unshare(flags | CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    else:
        unshare(flags)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def runtime_paths():
    """Folders the child needs read-only: the system libraries and the Python runtime (never the kit)."""
    paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime",
             sys.base_prefix, sys.prefix, sys.exec_prefix}
    paths.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages", "lib-dynload")))
    paths.update(p for p in sys.path if p.startswith(sys.base_prefix))
    return sorted(p for p in paths if p and os.path.exists(p))


def build_private_root(new_root, submission_dir, hidden, tmp_size="64m", owner=None):
    """Make ``new_root`` the child's whole filesystem, then pivot into it.

    ``hidden`` are folders that must never be visible even though they sit inside a runtime
    path (for example the kit folder, when the venv lives inside it).
    """
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    os.makedirs(new_root, exist_ok=True)
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755")
    # The child's own small /tmp, first: a runtime path under /tmp (a kit and its venv unpacked there) is
    # then bound on top of it, where mounting it last would hide the venv and every module not yet imported.
    os.makedirs(new_root + "/tmp", exist_ok=True)
    mount("tmpfs", new_root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_size},mode=1777")
    paths = runtime_paths()
    for path in paths:
        _bind(path, new_root + path, read_only=True)
    for secret in hidden:  # only matters when a runtime path contains the kit, e.g. a system-wide install
        if any(inside(secret, path) for path in paths):
            mount("tmpfs", new_root + secret, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")
            for path in paths:  # the venv may live inside the kit folder: show it again
                if inside(path, secret) and path != secret:
                    _bind(path, new_root + path, read_only=True)
    # The child's own copy of its files, on a small tmpfs: what it writes never reaches the host's disk.
    os.makedirs(new_root + "/submission", exist_ok=True)
    owned = f",uid={owner},gid={owner}" if owner is not None else ""  # ``owner``: the uid the child drops to
    mount("tmpfs", new_root + "/submission", "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_size},mode=0755{owned}")
    for name in os.listdir(submission_dir):
        source = os.path.join(submission_dir, name)
        if os.path.isfile(source) and not os.path.islink(source):
            target = os.path.join(new_root, "submission", name)
            shutil.copyfile(source, target)
            if owner is not None:
                os.chown(target, owner, owner)
    for dev in ("null", "zero", "random", "urandom"):
        _bind("/dev/" + dev, f"{new_root}/dev/{dev}", read_only=False, is_file=True)
    os.makedirs(new_root + "/proc", exist_ok=True)
    # Read-only: the child reads its own accounting; a write to /proc/self/clear_refs would reset the peak
    # the grader measures (children.MemoryMeter).
    mount("proc", new_root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_RDONLY)
    os.makedirs(new_root + "/.old_root", exist_ok=True)
    syscall("pivot_root", new_root.encode(), (new_root + "/.old_root").encode())
    os.chdir("/")
    check(libc.umount2(b"/.old_root", MNT_DETACH), "umount old root")
    os.rmdir("/.old_root")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY)  # the tmpfs skeleton itself


def inside(path, folder):
    """True when ``path`` is ``folder`` or lies below it (as text: neither is resolved)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _bind(source, target, read_only, is_file=False):
    if is_file or os.path.isfile(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    else:
        os.makedirs(target, exist_ok=True)
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_privileges(uid, gid):
    """Root: become ``uid`` (which drops every capability). Non-root in a user namespace: drop all capabilities."""
    if os.getuid() == 0 and not in_user_namespace():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    else:
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()
        syscall("capset", header, data)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    # setuid cleared "dumpable", which hands /proc/self to root; the memory probe writes
    # /proc/self/clear_refs. Core dumps stay off (RLIMIT_CORE = 0) and no other process runs as this uid.
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")


# The submission's cgroup (where there is one) holds it to ``memory_bytes`` in all, counting kernel
# memory and its tmpfs too. One process's address space stops this much short of that, so that a
# process that asks for too much gets a MemoryError it can report, not the OOM killer's SIGKILL.
ADDRESS_SPACE_MARGIN = 32 << 20


def apply_limits(memory_bytes, cpu_seconds, max_processes, file_bytes=16 << 20, open_files=256):
    """Resource limits for the child. The address-space limit counts on top of what torch already maps."""
    limits = {
        resource.RLIMIT_AS: _address_space() + memory_bytes - ADDRESS_SPACE_MARGIN,
        resource.RLIMIT_CPU: cpu_seconds,
        resource.RLIMIT_FSIZE: file_bytes,
        resource.RLIMIT_NOFILE: open_files,
        resource.RLIMIT_CORE: 0,
    }
    if os.getuid() != 0:  # root ignores RLIMIT_NPROC; a dropped uid or a user namespace honours it
        limits[resource.RLIMIT_NPROC] = _processes_of_this_uid() + max_processes
    for kind, value in limits.items():
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _address_space():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _processes_of_this_uid():
    uid, count = os.getuid(), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += 1
        except OSError:
            pass
    return count
