"""Measure a command's cost as Gradescope would see it: wall time, CPU and peak memory of its process tree.

Memory is sampled from /proc every few milliseconds over the command and all its descendants.
Forked grader processes share most of their pages with the parent (torch is loaded once), so
plain RSS summed over the tree counts those pages many times; PSS splits each shared page
between its sharers, so the PSS sum is the tree's real footprint. Both are reported.
Used by ``make bench`` and the kit's tests, never while grading.
"""
import os
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass
class Measurement:
    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    cpu_seconds: float
    peak_pss_mb: float
    peak_rss_mb: float


def measure(cmd, interval=0.01, timeout=600, **popen_kwargs):
    """Run ``cmd`` to completion and return a ``Measurement``. ``interval`` None: time alone, no sampler
    beside the command (its CPU and memory figures are then 0)."""
    started = time.monotonic()
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kwargs)
    monitor = _TreeMonitor(process.pid, interval) if interval is not None else None
    if monitor:
        monitor.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if monitor:
            monitor.stop()
    figures = (sum(monitor.cpu.values()), monitor.peak_pss / 2**20, monitor.peak_rss / 2**20) if monitor else (0.0,) * 3
    return Measurement(process.returncode, stdout, stderr, time.monotonic() - started, *figures)


class _TreeMonitor(threading.Thread):
    def __init__(self, root, interval):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_pss = self.peak_rss = 0
        self.cpu = {}  # pid -> last seen CPU seconds
        self._stop_event = threading.Event()

    def run(self):
        tick = os.sysconf("SC_CLK_TCK")
        while not self._stop_event.is_set():
            pss = rss = 0
            for pid in descendants(self.root):
                memory = _memory(pid)
                if memory:
                    pss, rss = pss + memory[0], rss + memory[1]
                cpu = _cpu_ticks(pid)
                if cpu is not None:
                    self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu / tick)
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            self._stop_event.wait(self.interval)

    def stop(self):
        self._stop_event.set()
        self.join()


def descendants(root):
    """``root`` and every live process below it."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat:
                children.setdefault(int(stat[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _stat(pid):
    """Fields of /proc/PID/stat after the command name: state, ppid, ..."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cpu_ticks(pid):
    stat = _stat(pid)
    return int(stat[11]) + int(stat[12]) if stat else None  # utime + stime


def _memory(pid):
    """(PSS, RSS) in bytes."""
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Pss", "Rss"):
                    fields[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError):
        return None
    return (fields["Pss"], fields["Rss"]) if len(fields) == 2 else None
