"""Linux isolation layers for the sandboxed child, strongest first.

* ``namespaces``: new user (unless root), mount, PID, network and IPC namespaces; the child
  sees a private root holding only the Python runtime (read-only), its own submission
  folder and a small /tmp. It cannot see the kit, the reference, other submissions or the
  network, and killing its PID-namespace init kills everything it started.
* ``uid``: running as root without namespaces (e.g. inside a Docker container): the child
  drops to an unprivileged uid; file permissions keep it out of the kit and the reports.
* ``rlimits``: neither is available: resource limits and a process group only.

Without namespaces (``uid``, ``rlimits``) the child also confines itself with whatever of
Landlock and seccomp the machine allows (``confine``); ``detect_layers`` finds out which.

Every layer also sets resource limits and ``no_new_privs``. Python 3.11 has no wrappers for
unshare/mount/pivot_root, so they are called through libc.
"""
import ctypes
import ctypes.util
import os
import platform
import re
import resource
import shutil
import signal
import sys
import tempfile

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 0x1, 0x2, 0x4, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126}, "aarch64": {"pivot_root": 41, "capset": 91}}

LEVELS = ("namespaces", "uid", "rlimits")
DEFAULT_SANDBOX_UID = 65534  # nobody: only for trying a level out

# Every child gets a uid of its own when the grader is root, one no child on this machine had before:
# what a uid leaves behind (a keyring, System V IPC, a file in /tmp) then reaches nobody, and killing
# "every process of the child's uid" can never touch another child, another grader run, or a person.
# The uids lie far above what useradd gives system users (100-999) and login users (1000-60000) and
# above nobody: no real account can have one. The counter lives in a root-only file, taken under a
# lock by whichever process asks (the per-submission graders are forks: a counter in memory would
# restart in each), so it holds across forks, concurrent runs and runs on other days; it wraps only
# after 2.29 billion children.
FIRST_SANDBOX_UID = 2_000_000_000
LAST_SANDBOX_UID = 2 ** 32 - 2  # (uid_t)-1 means "no uid" to the kernel
UID_STATE = "/var/lib/attention-kit/sandbox-uid"


def allocate_uid(record=None):
    """The next sandbox uid, never handed out before on this machine (root only). ``record(uid)`` is
    called while the lock is held (``zygote.Zygote`` keeps its run's uids for the final sweep)."""
    import fcntl
    import stat

    folder = os.path.dirname(UID_STATE)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise CannotIsolate(f"{folder} must be a folder only root can write (it holds the sandbox uid counter)")
    fd = os.open(UID_STATE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the close
        text = os.pread(fd, 64, 0).strip()
        if text and not text.isdigit():
            raise CannotIsolate(f"{UID_STATE} holds no uid counter ({text[:20]!r}): remove it")
        uid = int(text) + 1 if text else FIRST_SANDBOX_UID
        uid = uid if FIRST_SANDBOX_UID <= uid <= LAST_SANDBOX_UID else FIRST_SANDBOX_UID
        if record is not None:
            record(uid)
        # Rewritten in place, never truncated to empty first: ext4 writes a file truncated to zero back to
        # disk when it is closed, which took up to 1.6 s per child while the disk was busy.
        line = b"%d\n" % uid
        os.pwrite(fd, line, 0)
        if os.fstat(fd).st_size > len(line):
            os.ftruncate(fd, len(line))
    finally:
        os.close(fd)
    return uid


_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _syscall(name, *args):
    number = _SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        raise OSError(f"{name}: unsupported machine {platform.machine()}")
    _check(_libc.syscall(number, *args), name)


def unshare(flags):
    _check(_libc.unshare(flags), "unshare")


def mount(source, target, fstype=None, flags=0, data=None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def set_parent_death_signal(sig):
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


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
        if any(_inside(secret, path) for path in paths):
            mount("tmpfs", new_root + secret, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")
            for path in paths:  # the venv may live inside the kit folder: show it again
                if _inside(path, secret) and path != secret:
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
    # the grader measures (student.MemoryMeter).
    mount("proc", new_root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_RDONLY)
    os.makedirs(new_root + "/.old_root", exist_ok=True)
    _syscall("pivot_root", new_root.encode(), (new_root + "/.old_root").encode())
    os.chdir("/")
    _check(_libc.umount2(b"/.old_root", MNT_DETACH), "umount old root")
    os.rmdir("/.old_root")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY)  # the tmpfs skeleton itself


def _inside(path, folder):
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
    if os.getuid() == 0 and not _in_user_namespace():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    else:
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()
        _syscall("capset", header, data)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    # setuid cleared "dumpable", which hands /proc/self to root; the memory probe writes
    # /proc/self/clear_refs. Core dumps stay off (RLIMIT_CORE = 0) and no other process runs as this uid.
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")


def _in_user_namespace():
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


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


# --- choosing the level: no torch here, so the CLI can try it first, while a fork is cheap ---

def choose_level():
    """The level to grade at: the one AUTOGRADER_ISOLATION asks for (checked to work here), else the
    strongest that works. Every command and test picks its level here."""
    return requested_level() or detect_level()


def requested_level():
    """AUTOGRADER_ISOLATION forces a weaker level (to test the fallbacks); unset means the strongest that works."""
    level = os.environ.get("AUTOGRADER_ISOLATION")
    if level and level not in LEVELS:
        raise SystemExit(f"AUTOGRADER_ISOLATION must be one of {', '.join(LEVELS)}, got {level!r}")
    return check_level(level) if level else None


class CannotIsolate(SystemExit):
    """Student code would run unisolated: the grader refuses, with one line saying why and what to do."""


def detect_level():
    """The strongest isolation that works here, found by trying it in a throwaway child.

    As root, student code never runs as root: when neither namespaces nor the uid level work, grading stops.
    """
    for level in ("namespaces", "uid"):
        if level == "uid" and os.getuid() != 0:
            continue
        if _try_level(level):
            return level
    if os.getuid() == 0:
        raise CannotIsolate(f"cannot isolate student code: namespaces are refused here and {uid_level_problem()}")
    return "rlimits"


def check_level(level):
    """A level forced with AUTOGRADER_ISOLATION must work here, or grading stops with one line."""
    if level == "rlimits" and os.getuid() == 0:
        raise CannotIsolate("AUTOGRADER_ISOLATION=rlimits as root would run student code as root: use uid")
    if level == "uid":
        if os.getuid() != 0:
            raise CannotIsolate("AUTOGRADER_ISOLATION=uid needs root (to run each child as a uid of its own)")
        if not _try_level("uid"):
            raise CannotIsolate(f"AUTOGRADER_ISOLATION=uid does not work here: {uid_level_problem()}")
    return level


def runtime_roots():
    """The folders the sandbox uid must be able to read for Python to import anything: stdlib and site-packages."""
    import sysconfig

    return sorted({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def uid_level_problem():
    unreadable = [path for path in runtime_roots() if not _readable_by_others(path)]
    if unreadable:
        return (f"the uid level needs a Python runtime other users can read, and {unreadable[0]} is not "
                f"(a private home?): make the grader's venv from a system Python, e.g. /usr/bin/python3.11")
    return "dropping to an unprivileged uid failed"


def _readable_by_others(path):
    """Can a user who is neither the owner nor in the group read ``path`` (every folder above it included)?"""
    import stat

    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
        if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
            return False
        parent = os.path.dirname(path)
        while parent and parent != path:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            path, parent = parent, os.path.dirname(parent)
    except OSError:
        return False
    return True


def exposed_to_sandbox(paths):
    """Of ``paths`` (the kit, the batch, the output folder), those a sandbox uid could read or list."""
    return [p for p in paths if p and os.path.exists(p) and _readable_by_others(p)]


def _try_level(level):
    scratch = tempfile.mkdtemp(prefix="ag-probe-")
    os.chmod(scratch, 0o755)
    os.makedirs(scratch + "/s.root")

    def works():
        if level == "namespaces":
            enter_namespaces()
            inner = os.fork()
            if inner == 0:
                try:
                    build_private_root(scratch + "/s.root", scratch, [])
                    drop_privileges(DEFAULT_SANDBOX_UID, DEFAULT_SANDBOX_UID)
                    os._exit(0 if not os.path.exists(scratch) else 3)
                except BaseException:
                    os._exit(4)
            return os.waitpid(inner, 0)[1] == 0
        roots = runtime_roots()
        drop_privileges(DEFAULT_SANDBOX_UID, DEFAULT_SANDBOX_UID)
        return os.getuid() != 0 and all(os.access(p, os.R_OK | os.X_OK) for p in roots)

    try:
        return in_throwaway_child(works)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


# --- confinement layers for the levels without namespaces -----------------------------------

# Single files a confined child reads: the dynamic linker's cache (a library loaded by name), the time
# zone, and the devices Python and torch open.
_GRANTED_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


def granted_folders():
    """The folders a confined child may read, each with all it holds: the standard library (with
    lib-dynload) and the packages' folders (the venv's site-packages), nothing else. Whatever lies inside
    one of them a child reads, so the grader refuses to grade when a secret does (``refuse_inside_grants``)."""
    import sysconfig

    paths = {os.path.dirname(os.__file__), *(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))}
    paths.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages", "lib-dynload")))
    return sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})


def confinement_paths():
    """What a confined child may read (Landlock): ``granted_folders``, the interpreter and the shared
    libraries this process has loaded (one file each; measured: a child loads no system library after
    the zygote's warm-up), a few files and devices, and of /proc only its own entries: it cannot list
    other processes or read their command lines. Read only: a write to its own clear_refs would reset the
    peak the grader measures (student.MemoryMeter). Call it in the process being confined."""
    files = {os.path.realpath(sys.executable), *_GRANTED_FILES, *_loaded_libraries()}
    return granted_folders() + sorted(f for f in files if os.path.exists(f)) + [f"/proc/{os.getpid()}"]


def _loaded_libraries():
    """The shared objects mapped into this process (from its own /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {fields[5].strip() for fields in (line.split(None, 5) for line in f) if len(fields) == 6}
    except OSError:
        return set()
    return {p for p in paths if p.startswith("/") and re.search(r"\.so(\.|$)", p)}


def refuse_exposed(level, layers, paths):
    """Before any child starts: grading stops, with one line, when student code could read one of ``paths``
    (the kit, the submissions, the batch, --out). Under Landlock: when one lies inside a granted folder
    (``refuse_inside_grants``); at the uid level without it: when other users may read one."""
    if "landlock-fs" in layers:
        refuse_inside_grants(paths)
    elif level == "uid":
        exposed = exposed_to_sandbox(paths)
        if exposed:
            raise CannotIsolate(
                f"without namespaces or Landlock, file permissions are all that keeps student code out, and "
                f"{exposed[0]} is readable by other users: `chmod o-rwx` it, or grade where namespaces or "
                "Landlock work")


def refuse_inside_grants(paths):
    """Grading stops, with one line, when one of ``paths`` lies inside a folder a confined child may
    read (``granted_folders``): the child would read it."""
    for path in paths:
        if not path:
            continue
        real = os.path.realpath(path)
        for folder in granted_folders():
            if _inside(real, folder):
                raise CannotIsolate(f"{path} lies inside {folder}, which student code may read at this "
                                    "isolation level: move it out of the Python runtime's folders")


def detect_layers(level):
    """The confinement layers (``confine.LAYERS``) that work here at ``level``, each tried in a throwaway child.
    With namespaces, the private root and the empty network namespace do what Landlock would: only the
    seccomp filter is added (the system calls a child may make: no new process or thread, no IPC, no keys)."""
    from autograder.containment import confine

    # AUTOGRADER_LAYERS=none (or a comma list) withholds layers, to test what happens without them.
    allowed = os.environ.get("AUTOGRADER_LAYERS")
    candidates = confine.possible_layers()
    if level == "namespaces":
        candidates = [c for c in candidates if c == "seccomp"]
    if allowed is not None:
        candidates = [c for c in candidates if c in allowed.split(",")]
    return [layer for layer in candidates if _try_layer(level, layer)]


def _try_layer(level, layer):
    from autograder.containment import confine

    scratch = tempfile.mkdtemp(prefix="ag-probe-")
    os.chmod(scratch, 0o777)

    def works():
        if level == "uid":
            drop_privileges(DEFAULT_SANDBOX_UID, DEFAULT_SANDBOX_UID)
        confine.apply([layer], readable=confinement_paths(), writable=[scratch])
        return True

    try:
        return in_throwaway_child(works)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- killing a sandbox uid's processes (uid level, root only) -----------------------------------

def process_uids():
    """The real uid of every live process this one can see."""
    for pid in _pids():
        uid, _ = _uid_and_state(pid)
        if uid is not None:
            yield uid


def kill_all_of_uid(uid, max_rounds=200):
    """Kill every process of ``uid``, as root, by pid: a process of that uid cannot signal root, so
    nothing it runs can kill the sweeper first (as it can kill a sweeper that became ``uid`` to call
    kill(-1)). Without a PID namespace a child can leave its process group and session; not its uid.

    Stop first, round after round, until a scan finds none of them running: a stopped process can
    neither fork nor wake another, so the kill that follows reaches all of them. True when done."""
    if os.getuid() != 0 or uid == 0:
        return False
    for _ in range(max_rounds):
        running = [pid for pid in _pids() if _uid_and_state(pid) == (uid, "running")]
        if not running:
            break
        for pid in running:
            _signal_if_still(pid, uid, signal.SIGSTOP)
    else:
        return False
    for pid in _pids():
        if _uid_and_state(pid)[0] == uid:
            _signal_if_still(pid, uid, signal.SIGKILL)
    return True


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _uid_and_state(pid):
    """(real uid, "running" or "stopped") of a live process; (None, None) once it is gone or a zombie.
    From /proc/<pid>/status: /proc/<pid> itself belongs to root when the process is not dumpable."""
    uid = state = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    code = line.split()[1]
                    if code in ("Z", "X"):
                        return None, None
                    state = "stopped" if code in ("T", "t") else "running"
                elif line.startswith("Uid:"):
                    uid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        return None, None
    return uid, state


def _signal_if_still(pid, uid, sig):
    """Signal ``pid`` only if it still is a process of ``uid``: through a pidfd, opened before the check,
    so a pid reused in between (by the grader, say) is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # gone
    try:
        if _uid_and_state(pid)[0] == uid:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass  # exited after the check: nothing to signal
    finally:
        os.close(fd)


# --- what a sandbox uid leaves behind (root only) ------------------------------------------------

# World-writable places outside every sandbox folder, where a uid without Landlock could leave files.
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")
_IPC_RMID = 0
_KEYCTL_GET_KEYRING_ID, _KEYCTL_CLEAR = 0, 7
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}


def purge_uid(uid, level, layers=()):
    """When a child has ended: nothing of its ``uid`` may reach a later child. At the uid level, kill
    every process of the uid (True when done), remove its System V IPC objects, its files at the top
    of the shared folders and its keys; with namespaces (whose IPC, mounts and processes die with
    them) only the keys, which live in the host's user namespace when the grader is root.

    ``layers``: the child's confinement (``confine.LAYERS``). Under the seccomp filter the uid had
    one process, the child, which is reaped by now: the filter refused every way to start another
    (fork, vfork, clone, clone3, execve, io_uring), and no other process ever had this uid (it is
    new, ``allocate_uid``). The scan of every process on the machine, most of the purge's time, is
    then skipped; the run's final sweep (``Zygote.kill_sandbox_users``) still makes it."""
    if os.getuid() != 0 or _in_user_namespace():
        return False
    if level != "uid":
        remove_keys({uid})
        return False
    swept = True if "seccomp" in layers else kill_all_of_uid(uid)
    remove_leftovers({uid})
    return swept


def remove_leftovers(uids):
    """Remove the System V IPC objects, files in ``SHARED_FOLDERS`` and keys of ``uids`` (their
    processes are gone: nothing can make more meanwhile)."""
    uids = {uid for uid in uids if uid >= FIRST_SANDBOX_UID}  # never a real account's
    if uids and os.getuid() == 0:
        remove_ipc(uids)
        remove_files(uids)
        remove_keys(uids)


def remove_ipc(uids):
    """Every shared memory segment, message queue and semaphore set that a uid of ``uids`` created or owns."""
    for kind, remove in (("shm", lambda i: _libc.shmctl(i, _IPC_RMID, None)),
                         ("msg", lambda i: _libc.msgctl(i, _IPC_RMID, None)),
                         ("sem", lambda i: _libc.semctl(i, 0, _IPC_RMID))):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header, *rows = [line.split() for line in f]
        except (OSError, ValueError):
            continue
        owner, creator = header.index("uid"), header.index("cuid")
        for row in rows:
            if int(row[owner]) in uids or int(row[creator]) in uids:
                remove(int(row[1]))  # its id


def remove_files(uids, folders=SHARED_FOLDERS):
    """Whatever a uid of ``uids`` owns at the top of ``folders`` (a folder with all it holds). Sticky
    folders: no other user can swap such an entry between the check and the removal."""
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid not in uids:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)  # by descriptor: a link inside is removed, never followed
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def remove_keys(uids):
    """Empty the user and user-session keyrings of each uid of ``uids`` that holds keys. Only the uid
    itself may (root cannot clear another user's keyring): a throwaway process becomes it to do so."""
    number = _SYS_KEYCTL.get(platform.machine())
    try:
        with open("/proc/key-users") as f:
            holders = {int(line.split(":")[0]) for line in f if line.strip()}
    except (OSError, ValueError):
        return
    for uid in sorted(set(uids) & holders):
        def clear(uid=uid):
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for spec in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
                keyring = _libc.syscall(number, _KEYCTL_GET_KEYRING_ID, ctypes.c_long(spec), 0)
                if keyring > 0:
                    _libc.syscall(number, _KEYCTL_CLEAR, keyring)
            return True

        if number is not None:
            in_throwaway_child(clear)
