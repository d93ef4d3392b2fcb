"""A CPU quota for measuring: Gradescope gives an autograder half a CPU by default.

``CpuQuota.create(0.5)`` makes a cgroup limited to half a CPU (cgroup v1's cpu.cfs_quota_us 50000 of
100000, or v2's cpu.max "50000 100000"); a command joins it with ``preexec_fn=quota.join``. Where this
process may not make one, ``create`` returns (None, the reason), and the caller skips with it.
"""
import os
import tempfile
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


def _own_path(controller):
    """This process's cgroup path for ``controller`` ("" for the v2 unified hierarchy), or None."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if (controller == "" and names == "") or (controller and controller in names.split(",")):
                return path
    return None


class CpuQuota:
    def __init__(self, folder, accounting=None):
        self.folder = folder
        self.accounting = accounting  # cgroup v1: a cpuacct group beside it, for ``cpu_seconds``

    @classmethod
    def create(cls, fraction):
        """(CpuQuota, None) limited to ``fraction`` of one CPU, or (None, why not)."""
        quota = str(int(PERIOD_US * fraction))
        v1 = _own_path("cpu")
        if v1 is not None:
            parent = CGROUP_ROOT / "cpu" / v1.lstrip("/")
            if not parent.is_dir():  # "cpu,cpuacct" mounted under a joint name
                parent = next((p / v1.lstrip("/") for p in CGROUP_ROOT.glob("cpu,*")), parent)
            if not os.access(parent, os.W_OK):
                return None, f"the cgroup v1 cpu controller at {parent} is not writable"
            try:
                folder = Path(tempfile.mkdtemp(prefix="attention-kit-cpu-", dir=parent))
                (folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (folder / "cpu.cfs_quota_us").write_text(quota)
            except OSError as err:
                return None, f"cannot make a cgroup v1 cpu quota: {err}"
            accounting = None
            acct = _own_path("cpuacct")
            if acct is not None and (CGROUP_ROOT / "cpuacct").is_dir():
                try:
                    accounting = Path(tempfile.mkdtemp(prefix="attention-kit-cpu-",
                                                       dir=CGROUP_ROOT / "cpuacct" / acct.lstrip("/")))
                except OSError:
                    pass
            return cls(folder, accounting), None
        unified = _own_path("")
        if unified is None:
            return None, "no cgroup cpu controller in /proc/self/cgroup"
        for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
            parent = mount / unified.lstrip("/")
            controllers = parent / "cgroup.subtree_control"
            if controllers.is_file() and "cpu" in controllers.read_text().split() and os.access(parent, os.W_OK):
                try:
                    folder = Path(tempfile.mkdtemp(prefix="attention-kit-cpu-", dir=parent))
                    (folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")
                except OSError as err:
                    return None, f"cannot make a cgroup v2 cpu quota: {err}"
                return cls(folder), None
        return None, "no writable cgroup with the cpu controller enabled (v2: not in cgroup.subtree_control)"

    def join(self):
        """In a child before exec (``preexec_fn``): this process and what it starts share the quota."""
        for folder in self.folders():
            with open(folder / "cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    def folders(self):
        return [self.folder] + ([self.accounting] if self.accounting else [])

    def cpu_seconds(self):
        """CPU time used in the quota so far, by every process that ran in it (None where not counted).
        Unlike wall time, it does not depend on what else the machine runs."""
        try:
            if self.accounting:
                return int((self.accounting / "cpuacct.usage").read_text()) / 1e9
            stat = dict(line.split() for line in (self.folder / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        except (OSError, KeyError, ValueError):
            return None

    def remove(self):
        for folder in self.folders():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # its last processes are still being torn down
                    time.sleep(0.02)
