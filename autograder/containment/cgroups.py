"""Per-submission cgroups: one memory limit and one process count for all of a submission's processes.

Resource limits (``setrlimit``) bound each process on its own, so three processes of one
submission could hold three times the memory limit. Where the grader may create cgroups (root on
a machine that gives it a writable memory controller: cgroup v1, or v2 with delegation), every
child of a submission joins that submission's cgroup before any student code runs. Elsewhere
(Gradescope's Docker container mounts /sys/fs/cgroup read-only) ``create`` returns None, the
per-process limits stay, and the report says which applied.
"""
import os
import tempfile
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_path(controller):
    """This process's cgroup path for ``controller`` ("" for the v2 unified hierarchy), or None."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                if (controller == "" and names == "") or controller in names.split(","):
                    return path
    except OSError:
        pass
    return None


def parent_folders():
    """{controller: folder} under which this process may create cgroups, and the version; or (None, None)."""
    memory, pids = _own_path("memory"), _own_path("pids")
    if memory is not None and pids is not None:
        folders = {"memory": CGROUP_ROOT / "memory" / memory.lstrip("/"),
                   "pids": CGROUP_ROOT / "pids" / pids.lstrip("/")}
        if all(f.is_dir() and os.access(f, os.W_OK) for f in folders.values()):
            return folders, 1
    unified = _own_path("")
    if unified is not None:
        for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
            folder = mount / unified.lstrip("/")
            controllers = folder / "cgroup.subtree_control"
            if controllers.is_file() and {"memory", "pids"} <= set(controllers.read_text().split()) \
                    and os.access(folder, os.W_OK):
                return {"memory": folder, "pids": folder}, 2
    return None, None


class SubmissionCgroup:
    """The cgroup(s) of one submission: ``procs`` are the files a child writes its pid into."""

    def __init__(self, folders, version):
        self.folders, self.version = folders, version

    @property
    def procs(self):
        return sorted({str(folder / "cgroup.procs") for folder in self.folders.values()})

    def reset_peak(self):
        """Start a new peak from the current usage; returns that usage (bytes), or None where the kernel
        cannot reset a peak (cgroup v2 before per-file resets: the caller then has no measurement).
        A v2 reset holds only for reads through the descriptor it was written to: that one is kept."""
        folder = self.folders["memory"]
        try:
            if self.version == 1:
                (folder / "memory.max_usage_in_bytes").write_text("0")
                return int((folder / "memory.usage_in_bytes").read_text())
            self._close_peak()
            self._peak_fd = os.open(folder / "memory.peak", os.O_RDWR | os.O_CLOEXEC)
            os.write(self._peak_fd, b"reset")  # Linux 6.12+; raises where unsupported
            return int((folder / "memory.current").read_text())
        except (OSError, ValueError):
            self._close_peak()
            return None

    def peak_memory(self):
        folder = self.folders["memory"]
        try:
            if self.version == 1:
                return int((folder / "memory.max_usage_in_bytes").read_text())
            if getattr(self, "_peak_fd", None) is not None:
                return int(os.pread(self._peak_fd, 64, 0))
            return int((folder / "memory.peak").read_text())
        except (OSError, ValueError):
            return None

    def cpu_seconds(self):
        """CPU time every process of the submission has used so far (cgroup v2's cpu.stat, present whether
        or not the cpu controller is enabled), or None where it cannot be read (v1)."""
        if self.version == 1:
            return None
        try:
            for line in (self.folders["memory"] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError, IndexError):
            pass
        return None

    def _close_peak(self):
        if getattr(self, "_peak_fd", None) is not None:
            os.close(self._peak_fd)
        self._peak_fd = None

    def pids(self):
        found = set()
        for procs in self.procs:
            try:
                found.update(int(line) for line in Path(procs).read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def remove(self):
        """Remove the cgroup once its processes are gone (the kernel may still be tearing them down)."""
        self._close_peak()
        for folder in {f for f in self.folders.values()}:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def create(memory_bytes, max_processes, prefix="attention-kit-"):
    """A new cgroup limited to ``memory_bytes`` and ``max_processes``, or None where none can be made."""
    parents, version = parent_folders()
    if parents is None:
        return None
    folders = {}
    try:
        if version == 1:
            folders["memory"] = Path(tempfile.mkdtemp(prefix=prefix, dir=parents["memory"]))
            folders["pids"] = Path(tempfile.mkdtemp(prefix=prefix, dir=parents["pids"]))
            (folders["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            swap = folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(memory_bytes))
        else:
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parents["memory"]))
            folders = {"memory": folder, "pids": folder}
            (folder / "memory.max").write_text(str(memory_bytes))
            (folder / "memory.swap.max").write_text("0")
        (folders["pids"] / "pids.max").write_text(str(max_processes))
    except OSError:
        SubmissionCgroup(folders, version).remove()
        return None
    return SubmissionCgroup(folders, version)


def join(procs_files):
    """In a child, before any student code: move this process into the cgroup(s). Raises if it cannot."""
    for procs in procs_files:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))


# --- headroom under the enclosing limit ----------------------------------------------------------

def memory_headroom():
    """Bytes the grader's memory cgroup can still give (a container's limit, e.g. Gradescope's 768 MiB,
    minus the memory that cannot be reclaimed: anonymous pages); None where no limit is set or visible."""
    found = []
    for folder in _own_memory_folders():
        for limit_file, anon_key in (("memory.limit_in_bytes", "total_rss"), ("memory.max", "anon")):
            try:
                raw = (folder / limit_file).read_text().strip()
                stat = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
                limit, used = int(raw), int(stat[anon_key])
            except (OSError, ValueError, KeyError):
                continue
            if limit < 1 << 50:  # "unlimited" is a huge number (v1) or "max" (v2, not an int)
                found.append(limit - used)
    return min(found) if found else None


def _own_memory_folders():
    """This process's memory cgroup, where the mount shows it, and the mount's root (a container's own cgroup)."""
    roots = [CGROUP_ROOT / "memory", CGROUP_ROOT]
    paths = [p for p in (_own_path("memory"), _own_path("")) if p is not None]
    folders = [root / path.lstrip("/") for root in roots for path in paths] + roots
    return [f for f in dict.fromkeys(folders) if f.is_dir()]
