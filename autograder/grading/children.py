"""The supervisor of one submission's sandboxed children (trusted side): starting one per mode, each in a
folder of its own holding the files that mode may run; the submission's cgroup and the memory a child may
take beside the grader; retiring a child and keeping what it printed; and the meter of a measured call's
memory, read from the kernel, never from the child.

``student.Student`` (the tests' handle) is one: what it asks of a child goes through ``_child``.
"""
import dataclasses
import os

from autograder import rules
from autograder.bounds import SUBMISSION_OUTPUT
from autograder.config import GRADER_MARGIN_MB
from autograder.grading import oracle

GRADER_MARGIN = GRADER_MARGIN_MB << 20  # what the grader may still need beside a child in a memory-limited container
MIN_CHILD_MB = 96  # below this even honest code cannot run; the container's OOM killer then decides
MAX_REFUSAL = 500  # characters of the scanner's line sent to an oracle child


class ChildSupervisor:
    """One child per mode, started lazily (``_child``), retired when it dies or the submission ends (``close``):

    * ``student``: the student's attention.py and mha.py;
    * ``oracle``: the student's mha.py on top of the reference's attention (``oracle``);
    * ``below``: the same, plus the reference's lent methods (``oracle.below_files``).

    Only an oracle or below child's folder holds a correct attention."""

    def __init__(self, zygote, staged, limits, slot=0):
        self.zygote, self.staged, self.limits, self.slot = zygote, staged, limits, slot
        self.children = {}  # mode -> {"child": sandbox.Child, "imported": {(mode, module)}}
        self.scratch_count = 0
        self.output = []  # what each child printed (the student's text only)
        self.output_dropped = 0  # bytes printed past each child's cap: the grader's count, kept apart from the text
        self.memory_fitted, self.memory_note = False, None  # see _fit_memory_to_container
        self.cgroup = None  # the submission's cgroup, made with its first child where the machine allows
        self.cgroup_tried = False

    def close(self):
        for entry in self.children.values():
            self._retire(entry["child"])
        self.children.clear()
        if self.cgroup is not None:
            self.cgroup.remove()

    def _child(self, mode):
        entry = self.children.get(mode)
        if entry is None or entry["child"].dead:
            if entry is not None:
                self._retire(entry["child"])
            self._fit_memory_to_container()
            uid = self.zygote.next_uid(self.slot)
            scratch = self._fresh_scratch(uid, self._files(mode))
            cgroup = self._submission_cgroup()
            child = self.zygote.spawn(scratch, self.limits, uid, cgroup.procs if cgroup else ())
            if cgroup is not None:  # its CPU time counts every process of the submission's, a forked helper too
                child.cpu_clock = cgroup.cpu_seconds
            entry = self.children[mode] = {"child": child, "imported": set()}
        return entry["child"]

    def _files(self, mode):
        """{file name: bytes} for a child of ``mode``: the staged files, or for "oracle" the student's mha.py
        beside the reference's attention (``oracle.oracle_files``). Only an oracle child holds that attention."""
        if mode == "oracle":
            return oracle.oracle_files(self.staged.dir, self._refused_attention())
        if mode == "below":
            return oracle.below_files(self.staged.dir, self._refused_attention())
        files = {}
        for name in os.listdir(self.staged.dir):
            with open(os.path.join(self.staged.dir, name), "rb") as handle:
                files[name] = handle.read()
        return files

    def _refused_attention(self):
        """The scanner's first line when it refused attention.py, else None. The oracle child would load the
        student's attention.py for a name beyond the contract (a helper): a refused file is not copied into
        that child at all, so it never runs there, and such a name fails with this line."""
        try:
            findings = rules.forbidden_calls(os.path.join(self.staged.dir, "attention.py"))
        except (OSError, SyntaxError, ValueError):  # missing or unreadable: its import fails on its own
            return None
        return findings[0].message[:MAX_REFUSAL] if findings else None

    def _fit_memory_to_container(self):
        """Inside a memory-limited container (Gradescope's 768 MiB) the grader and a child must fit
        together: a child may take what the container has left, less a margin for the grader, if that is
        below grading.yaml's ``memory_mb``. Past it, the child meets its own MemoryError, not the
        container's OOM killer. Measured once, at the first child, when the zygote is warm."""
        if self.memory_fitted:
            return
        from autograder.containment import cgroups

        self.memory_fitted = True
        headroom = cgroups.memory_headroom()
        if headroom is None:
            return
        fitted = max((headroom - GRADER_MARGIN) >> 20, MIN_CHILD_MB)
        if fitted < self.limits.memory_mb:
            self.limits = dataclasses.replace(self.limits, memory_mb=fitted)
            self.memory_note = (f"memory per child {fitted} MiB (grading.yaml allows more, the container's "
                                "limit leaves this much beside the grader)")

    def _submission_cgroup(self):
        """One memory and process limit for all of this submission's children (``cgroups``), or None."""
        if not self.cgroup_tried:
            from autograder.containment import cgroups

            self.cgroup_tried = True
            self.cgroup = cgroups.create(self.limits.memory_mb << 20, self.limits.max_processes)
        return self.cgroup

    def _fresh_scratch(self, uid, files):
        """Each child gets its own copy of its ``files`` ({name: bytes}), so nothing one child writes
        reaches the next.

        The folder is new and filled by the grader before anyone else may enter it (O_EXCL and
        O_NOFOLLOW through the folder's descriptor); only then is it handed to the child's uid, a uid
        no earlier child had. Root never writes into a place a sandbox uid has owned.
        """
        self.scratch_count += 1
        scratch = f"{self.staged.dir}.run{self.scratch_count}"
        os.mkdir(scratch, 0o700)  # fails if it exists: never reuse a folder
        folder = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for name, data in files.items():
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
                with open(fd, "wb") as dst:
                    dst.write(data)
                if os.getuid() == 0:
                    os.chown(name, uid, uid, dir_fd=folder, follow_symlinks=False)
            if os.getuid() == 0:  # the child may run as another uid and must own its folder
                os.fchown(folder, uid, uid)
        finally:
            os.close(folder)
        return scratch

    def _retire(self, child):
        """Close ``child`` and keep what it printed, up to ``bounds.SUBMISSION_OUTPUT`` for all children together."""
        child.close()
        text = child.output_text()
        room = max(SUBMISSION_OUTPUT - sum(len(kept) for kept in self.output), 0)
        if text[:room]:
            self.output.append(text[:room])
        self.output_dropped += child.output_dropped + len(text[room:].encode("utf-8", "replace"))



class MemoryMeter:
    """What a measured call allocates, from before the student's import, read by the parent from the
    kernel's counters, never from the child's reply. The child is fresh and the kit has run its own op
    mix in it at the call's shapes (``student.Student._warm_up``): the meter starts after that and before the
    import, so memory taken at import (a ballast freed inside the call) counts, as the net change of the
    call alone would not, and torch's first use of its kernels does not.

    The figure is the submission's cgroup's peak above its usage at the start (every process it has, a
    forked helper too; ``by`` = "cgroup"), or where no cgroup could be made (Gradescope's container;
    "process") the child's own peak RSS (``VmHWM`` in /proc/<pid>/status), which the parent resets at
    the start through /proc/<pid>/clear_refs, above its RSS then. The child cannot lower it itself
    (Landlock refuses its write to clear_refs). Up to ``CODE_PAGES`` of file-backed growth (pages of
    torch's libraries the call maps that the warm-up did not, none of it the student's memory) is taken
    off the process figure; a file the submission maps as ballast shows as growth before it is unmapped."""

    CODE_PAGES = 24 << 20

    def __init__(self, cgroup, pid):
        self.cgroup, self.pid = cgroup, pid
        self.start = cgroup.reset_peak() if cgroup is not None else None
        self.by = "cgroup" if self.start is not None else "process"
        if self.by == "process":
            self.start = _reset_peak_rss(pid) and _proc_status_bytes(pid, "VmRSS")
            self.file_start = _proc_status_bytes(pid, "RssFile")

    def grown(self):
        """Bytes above the start at the peak, or None where nothing could be read."""
        if self.by == "cgroup":
            peak, code = self.cgroup.peak_memory(), 0
        else:
            peak, file_end = _proc_status_bytes(self.pid, "VmHWM"), _proc_status_bytes(self.pid, "RssFile")
            if None in (peak, file_end, self.file_start):
                return None
            code = min(max(file_end - self.file_start, 0), self.CODE_PAGES)
        return max(peak - self.start - code, 0) if peak is not None and self.start is not None else None


def _reset_peak_rss(pid):
    """Set the child's VmHWM to its current RSS (the parent's write; the child's own is refused)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except (OSError, TypeError):
        return False


def _proc_status_bytes(pid, field):
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
