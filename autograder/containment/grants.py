"""What a confined child may read (Landlock, at the levels without namespaces): the Python folders,
the interpreter, the libraries it has loaded, a few files and devices, and its own /proc entries.

``isolation`` refuses to grade when a secret lies inside a granted folder; a child passes
``confinement_paths`` to ``confine.apply``.

May import: the standard library only.
"""
import os
import re
import sys

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


def confinement_paths(shared=None):
    """What a confined child may read (Landlock): ``shared_paths`` (``shared``: as the zygote computed them
    before it forked the child) and of /proc only its own entries: it cannot list other processes or read
    their command lines. Read only: a write to its own clear_refs would reset the peak the grader measures
    (children.MemoryMeter). Call it in the process being confined."""
    return [*(shared_paths() if shared is None else shared), f"/proc/{os.getpid()}"]


def shared_paths():
    """What every confined child may read but its /proc entry: ``granted_folders``, the interpreter and the
    shared libraries this process has loaded (one file each; measured: a child loads no system library after
    the zygote's warm-up), and a few files and devices."""
    files = {os.path.realpath(sys.executable), *_GRANTED_FILES, *_loaded_libraries()}
    return granted_folders() + sorted(f for f in files if os.path.exists(f))


def _loaded_libraries():
    """The shared objects mapped into this process (from its own /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {fields[5].strip() for fields in (line.split(None, 5) for line in f) if len(fields) == 6}
    except OSError:
        return set()
    return {p for p in paths if p.startswith("/") and re.search(r"\.so(\.|$)", p)}

