"""The isolation grading gets on this machine: the level, the confinement layers, and the refusals.

The levels, strongest first:

* ``namespaces``: new user (unless root), mount, PID, network and IPC namespaces; the child
  sees a private root holding only the Python runtime (read-only), its own submission
  folder and a small /tmp. It cannot see the kit, the reference, other submissions or the
  network, and killing its PID-namespace init kills everything it started.
* ``uid``: running as root without namespaces (e.g. inside a Docker container): the child
  drops to an unprivileged uid; file permissions keep it out of the kit and the reports.
* ``rlimits``: neither is available: resource limits and a process group only.

Without namespaces (``uid``, ``rlimits``) the child also confines itself with whatever of
Landlock and seccomp the machine allows (``confine``); ``detect_layers`` finds out which.
Every level also sets resource limits and ``no_new_privs``: what the child does to itself is
in ``jail``; what a confined child may read in ``grants``. Each level and layer is tried in a
throwaway child (no torch here, so the CLI can try them first, while a fork is cheap).

May import: the standard library, ``kernel``, ``jail``, ``grants`` and ``confine``.
"""
import os
import shutil
import tempfile

from autograder.containment import grants
from autograder.containment.jail import build_private_root, drop_privileges, enter_namespaces, inside
from autograder.containment.kernel import in_throwaway_child

LEVELS = ("namespaces", "uid", "rlimits")
DEFAULT_SANDBOX_UID = 65534  # nobody: only for trying a level out


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


# --- confinement layers for the levels without namespaces, and what they must keep out ----------

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
    read (``grants.granted_folders``): the child would read it."""
    for path in paths:
        if not path:
            continue
        real = os.path.realpath(path)
        for folder in grants.granted_folders():
            if inside(real, folder):
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
        confine.apply([layer], readable=grants.confinement_paths(), writable=[scratch])
        return True

    try:
        return in_throwaway_child(works)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
