"""The hidden tests' handle on one submission (trusted side).

``student.call("attention.causal_mask", 4)`` sends a probe to a sandboxed child and returns
the decoded result. Anything that goes wrong on the student's side raises ``StudentError``
(an ``AssertionError``, so pytest counts the test as failed, not as a grader error) with a
message written for the student. Children are started lazily, one per mode:

* ``student``: the student's attention.py and mha.py;
* ``oracle``: the student's mha.py on top of the reference's attention (``oracle``), so a bug in
  attention.py does not also cost the MHA points. Only an oracle or below child's folder holds a correct
  attention;
* ``below``: the same, plus the reference's lent methods (``oracle.below_files``), for a test of a higher
  part run on the lab's own lower parts (``protocol.Lend``).

Every field of a child's reply is a claim: the student's code runs in that process and can
rewrite whatever answers. The parent compares results itself, checks that the op record carries
the marker it sent (``record``), and decides the from-scratch rule from the source
(``autograder.rules``): a file that can hide what it calls fails every test that runs it.

A child that crashes or hangs is replaced for the next call. A function that timed out is
not called again, and after a few timeouts the submission's time budget is spent, so a
submission that hangs costs a few call limits, not one per test.
"""
import ast
import builtins
import dataclasses
import math
import os
import secrets
import time

import torch

from autograder import rules
from autograder.bounds import SUBMISSION_OUTPUT
from autograder.config import GRADER_MARGIN_MB, WALL_BACKSTOP
from autograder.grading import oracle
from autograder.grading.error_hints import INPLACE_ERROR, error_hint, inplace_edits, valid_size_refused
from autograder.grading.properties import shapes_in
from autograder.containment.protocol import (MAX_WARM_ELEMENTS, MAX_WARM_SHAPES, Answer, Calls, Import, Probe, WarmUp,
                                 request_body, untag)
from autograder.containment.sandbox import ChildDied, OutOfTurn

MAX_TIMEOUTS = 3
GRADER_MARGIN = GRADER_MARGIN_MB << 20  # what the grader may still need beside a child in a memory-limited container
MIN_CHILD_MB = 96  # below this even honest code cannot run; the container's OOM killer then decides
MAX_REFUSAL = 500  # characters of the scanner's line sent to an oracle child
# What a child's op record may name (autograder/containment/probes.py); anything else means it was forged.
KNOWN_FORBIDDEN = rules.watched_builtins()
RECORD_MISSING = "no trustworthy record of the ops it ran (the grader's profiler was stopped or replaced)"
# What the child raises for a forbidden built-in, whatever route reached it (probes.ForbiddenCall): the
# call is refused at torch's dispatcher, and its error names the built-in even where the record was forged.
FORBIDDEN_ERROR = "ForbiddenCall"


class StudentError(AssertionError):
    """The student's code failed a probe or a comparison; the message is meant for the student.

    ``figure`` (expected and got for one small matrix) and ``mistake`` (a catalogued bug the
    result matches) travel with it into the report.
    """

    def __init__(self, message, figure=None, mistake=None, unnamed=None):
        super().__init__(message)
        self.figure, self.mistake = figure, mistake
        self.unnamed = message if unnamed is None else unnamed  # the message without the mistake's name

    def named(self, mistake):
        """The same failure, with the catalogued mistake named first (in place of one named before)."""
        return StudentError(f"Likely bug: {mistake.explain()}.\n{self.unnamed}", self.figure, mistake, self.unnamed)


class RuleViolation(StudentError):
    """The student's code called a forbidden built-in."""


class Reply:
    """A successful probe: the result and what came with it.

    Every field is a claim of the child, which runs student code. ``sandbox.Child.call`` has
    checked the reply against ``replies`` (types, tags, sizes), so reading it cannot raise;
    whether a claim is right is for the tests to judge, never for the child.
    """

    def __init__(self, value, forbidden, sent_args=()):
        self.result = untag(value.get("result"))
        self.grads = value.get("grads")
        self.attrs = value.get("attrs")
        self.forbidden = forbidden
        self.peak_bytes = None  # measure_memory: what the call allocated, measured by the parent (see MemoryMeter)
        self.memory_measured_by = None  # measure_memory: "cgroup" or "process" (MemoryMeter.by)
        self.projected = value.get("projected") or {}  # decode: input shapes seen by w_k and w_v, per step
        self.caches = [untag(c) for c in value.get("caches") or []]  # decode: the cache returned by each step
        after = value.get("inputs_after") or []
        # Compared here, not in the child, where torch.equal may have been monkeypatched.
        self.inputs_modified = [isinstance(sent, torch.Tensor) and not _unchanged(sent, back)
                                for sent, back in zip(sent_args, after)]


class Student:
    def __init__(self, zygote, staged, limits, slot=0):
        self.zygote, self.staged, self.limits, self.slot = zygote, staged, limits, slot
        # The budget is CPU time (``cpu_spent``, measured by the parent per call); the wall clock only backs it up.
        self.deadline = time.monotonic() + limits.submission_seconds * WALL_BACKSTOP
        self.cpu_spent = 0.0
        self.children = {}
        self.scratch_count = 0
        self.timed_out = {}  # target -> reason
        self.import_failures = {}  # (mode, module) -> message
        self.uncompilable = {}  # module -> the student child's ErrorInfo importing it, where its own file cannot compile
        self._compile_errors = {}  # module -> what compiling its staged file raised (a SyntaxError's name), or None
        self.timeouts = 0
        self.wall_timeouts = 0  # calls stopped by the wall clock before their CPU time ran out (a slow machine, or sleep)
        self.output = []  # what each child printed (the student's text only)
        self.output_dropped = 0  # bytes printed past each child's cap: the grader's count, kept apart from the text
        self.events = []  # crashes and timeouts, for the report
        self.memory_fitted, self.memory_note = False, None  # see _fit_memory_to_container
        self.cgroup = None  # the submission's cgroup, made with its first child where the machine allows
        self.cgroup_tried = False
        self.import_forbidden = {}  # (mode, module) -> forbidden ops recorded while importing it
        self._hidden = None  # file name -> the scanner's "hidden" findings (see rules.py)

    # --- what tests call -----------------------------------------------------------------

    def call(self, target, *args, mode="student", allow_forbidden=False, **request):
        """Run ``target`` (``"module.attr"``) on ``args`` in the sandbox and return a ``Reply``.

        Extra keywords are the fields of a ``protocol.Probe``: ``init``, ``state``, ``method``, ``grad``,
        ``attrs``, ``kwargs``, ``decode``, ``measure_memory``. Raises ``StudentError`` when the
        student's code fails.
        """
        reply = self.try_call(target, *args, mode=mode, allow_forbidden=allow_forbidden, **request)
        if isinstance(reply, Failure):
            raise failed(target, args, request, reply)
        return reply

    def try_call(self, target, *args, mode="student", allow_forbidden=False, **request):
        """Like ``call`` but returns a ``Failure`` instead of raising (to inspect expected errors).
        A call that used a forbidden op (or ran code that hides what it calls) is a ``Failure`` too."""
        probe = Probe.build(target, args, **request)
        blocked = self._blocked(target, mode, probe.module)
        if blocked:
            return Failure(blocked, error=None)
        return self._attempt(mode, probe, allow_forbidden)

    def call_many(self, target, arg_lists, mode="student", allow_forbidden=False, **request):
        """``call`` on each of ``arg_lists`` (tuples of positional arguments; the other fields as ``call`` takes
        them, the same for every call), sent to the child as one request (``protocol.Calls``, at most
        ``protocol.MAX_CALLS`` calls). A list with an item per call, in order: its ``Reply``, or the
        ``StudentError`` that ``call`` would have raised for it, returned, not raised, so that the caller
        charges a failure where its own order of checks reaches that call (``replied(item)``)."""
        replies = self.try_call_many(target, arg_lists, mode=mode, allow_forbidden=allow_forbidden, **request)
        return [failed(target, args, request, reply) if isinstance(reply, Failure) else reply
                for args, reply in zip(arg_lists, replies)]

    def try_call_many(self, target, arg_lists, mode="student", allow_forbidden=False, **request):
        """Like ``call_many`` but a failed call is a ``Failure``, as ``try_call`` returns it.

        Each call is judged as ``try_call`` judges it: its own result or error, its own forbidden ops. The
        batch as a whole has the time of its calls: ``call_seconds`` of CPU time per call (never more than is
        left of the submission's budget), and the wall-clock backstop that many times too, never past the
        submission's deadline; the parent waits on the child as for one call, never blocked. A batch that
        runs out of time, or a child that dies in it, fails every call of the batch with that one reason,
        and the target is not called again, as after one call that timed out."""
        calls = Calls.build(target, arg_lists, **request)
        blocked = self._blocked(target, mode, calls.module)
        if blocked:
            return [Failure(blocked, error=None)] * len(calls.args)
        replies = self._attempt(mode, calls, allow_forbidden)
        return replies if isinstance(replies, list) else [replies] * len(calls.args)

    def _attempt(self, mode, probe, allow_forbidden):
        """``_probe``, run again in a fresh child if the child broke the protocol after an earlier reply."""
        target = probe.target
        try:
            return self._probe(mode, probe, allow_forbidden)
        except OutOfTurn as died:  # the child broke the protocol after an earlier test's reply
            self.events.append(f"the submission's process {died.reason}; {target.split('.', 1)[1]} "
                               "was run again in a fresh process")
            self._retire(self.children.pop(mode)["child"])
        try:
            return self._probe(mode, probe, allow_forbidden)
        except OutOfTurn as died:  # twice in a row: this test's own doing
            return Failure(self._died(mode, target, died), error=None)

    def _probe(self, mode, probe, allow_forbidden=False):
        target, module = probe.target, probe.module
        try:
            meter = None
            if probe.measure_memory:  # a fresh child, warmed up by the kit, measured from before the student's import
                entry = self.children.pop(mode, None)
                if entry is not None:
                    self._retire(entry["child"])
            known = self._uncompilable(mode, module)
            if known is not None:  # a child of this mode would fail its import the same way: none is started
                return known
            child = self._child(mode)
            if probe.measure_memory:
                self._warm_up(child, probe)
                meter = MemoryMeter(self.cgroup, getattr(child, "pid", None))
            if (mode, module) not in self.children[mode]["imported"]:
                failure = self._first_import(child, mode, module)
                if failure is not None:
                    return failure
            answer = self._recorded_call(child, probe, mode)
            grown = meter.grown() if meter else None
        except OutOfTurn:
            raise
        except ChildDied as died:
            return Failure(self._died(mode, target, died), error=None)
        if isinstance(probe, Calls):
            return [self._judged(mode, each, answered, allow_forbidden) for each, answered in zip(probe.each(), answer)]
        return self._judged(mode, probe, answer, allow_forbidden, meter, grown)

    def _judged(self, mode, probe, answer, allow_forbidden, meter=None, grown=None):
        """One call's ``Answer`` as a ``Reply``, or a ``Failure``: the rule first (hidden calls, forbidden ops), then its error."""
        target, module = probe.target, probe.module
        hidden = self._hides(module, mode)
        if hidden:
            return Failure(hidden_message(hidden, target), error=None, rule=True)
        refused = refused_builtins(answer.error)
        if (answer.forbidden or refused) and not allow_forbidden:
            named = sorted(set(answer.forbidden) | refused)
            return Failure(forbidden_message(named, target), None, named, rule=True)
        if not answer.ok:
            return Failure(describe_error(answer.error, self.staged.dir), answer.error, answer.forbidden,
                           self._classes())
        reply = Reply(answer.value, answer.forbidden, probe.args or ())
        if meter:
            reply.peak_bytes, reply.memory_measured_by = grown, meter.by
        return reply

    def _recorded_call(self, child, request, mode):
        """child.call, as an ``Answer`` whose op record the parent checked: it must carry the marker
        sent with the request and name only watched built-ins. Ops recorded while the modules were
        imported count in every call of that child. For ``Calls``, a list: an ``Answer`` per call,
        each checked so; the time limit is one call's times the number of calls."""
        nonce = secrets.token_hex(8)
        calls = len(request.args) if isinstance(request, Calls) else 1
        try:
            body = child.call(request_body(request, record=nonce), timeout=self.limits.call_seconds * calls,
                              deadline=self.deadline,
                              cpu_left=self.limits.submission_seconds - self.cpu_spent)  # checked by replies
        finally:
            self.cpu_spent += getattr(child, "cpu_used", 0.0)
        answer = Answer.from_body(body)
        if isinstance(request, Calls):
            answers = answer.calls(calls)
            if len(answers) != calls:
                child.kill()
                raise ChildDied(f"sent a malformed reply ({len(answers)} answers to {calls} calls)")
            return [self._checked_record(each, nonce, request, mode) for each in answers]
        return self._checked_record(answer, nonce, request, mode)

    def _checked_record(self, answer, nonce, request, mode):
        """``answer`` with the forbidden ops the parent takes from it (see ``_recorded_call``)."""
        claimed = set(answer.forbidden)
        forbidden = claimed & KNOWN_FORBIDDEN
        if answer.record != nonce or not claimed <= KNOWN_FORBIDDEN:
            forbidden.add(RECORD_MISSING)
        if isinstance(request, Import):
            self.import_forbidden.setdefault((mode, request.module), set()).update(forbidden)
        for name in _runs(request.module, mode):
            forbidden |= self.import_forbidden.get((mode, name), set())
        return dataclasses.replace(answer, forbidden=sorted(forbidden))

    def _first_import(self, child, mode, module):
        """Import ``module`` in ``child`` (of ``mode``): None if it imported, else its ``Failure``, which later
        calls of the module get too (``import_failures``)."""
        imported = self._import(child, mode, module)
        if isinstance(imported, Failure):
            return imported
        self.children[mode]["imported"].add((mode, module))
        if imported.ok:
            return None
        if mode == "student" and self._compile_error_of(module) == imported.error.type:
            self.uncompilable[module] = imported.error
        return self._import_failed(mode, module, imported.error)

    def _import_failed(self, mode, module, error):
        self.import_failures[(mode, module)] = self._unreadable(module, mode, error) or describe_error(error)
        return Failure(self.import_failures[(mode, module)], error, classes=self._classes())

    def _uncompilable(self, mode, module):
        """For a child of another ``mode`` that would hold the student's own file of ``module`` byte for byte,
        when that file does not compile: the ``Failure`` its import would give, with no child started for it.
        Python compiles a whole file before it runs any of it, so every child that holds the file fails to
        import it alike. The parent checks that it does not compile by compiling it (``_compile_error``, never
        running it), imports it once in the student's child, where it fails as it would anywhere, and takes the
        error from there when it is the one the parent found; else (None) the child of ``mode`` is started."""
        if mode == "student" or self._compile_error_of(module) is None:
            return None
        if self._files(mode).get(f"{module}.py") != self._staged_bytes(module):
            return None
        if module not in self.uncompilable and ("student", module) not in self._child_imports("student"):
            imported = self._import(self._child("student"), "student", module)  # not recorded: the student's own
            if not isinstance(imported, Failure) and not imported.ok \
                    and imported.error.type == self._compile_errors[module]:  # calls import it again, as always
                self.uncompilable[module] = imported.error
        if module not in self.uncompilable:
            return None
        return self._import_failed(mode, module, self.uncompilable[module])

    def _compile_error_of(self, module):
        if module not in self._compile_errors:  # once a submission: the staged file does not change
            self._compile_errors[module] = _compile_error(self._staged_bytes(module))
        return self._compile_errors[module]

    def _child_imports(self, mode):
        entry = self.children.get(mode)
        return entry["imported"] if entry is not None else set()

    def _staged_bytes(self, module):
        try:
            with open(os.path.join(self.staged.dir, f"{module}.py"), "rb") as handle:
                return handle.read()
        except OSError:
            return None

    def _classes(self):
        """{class name: base names} for the classes the submission's own files define, read by the parent."""
        if getattr(self, "_source_classes", None) is None:
            self._source_classes = {}
            for name in ("attention.py", "mha.py"):
                self._source_classes.update(source_classes(os.path.join(self.staged.dir, name)))
        return self._source_classes

    def _unreadable(self, module, mode, error):
        """For a SyntaxError on import, the reader's one line if a file it runs has bytes Python refuses
        (read by the parent: the same line as the rule check's, staging's and submit.py's), else None."""
        if error.type != "SyntaxError":
            return None
        for name in _runs(module, mode):
            try:
                rules.read_source(os.path.join(self.staged.dir, f"{name}.py"))
            except ValueError as err:
                return f"{err} (while importing {module}.py)"
            except OSError:
                continue
        return None

    def _hides(self, module, mode):
        """The scanner's "hidden" findings in the files a call of ``module`` runs (mha.py runs attention.py too)."""
        if self._hidden is None:
            self._hidden = {name: rules.hidden_calls(os.path.join(self.staged.dir, name))
                            for name in ("attention.py", "mha.py")}
        return [v for name in _runs(module, mode) for v in self._hidden.get(f"{name}.py", [])]

    def _warm_up(self, child, probe):
        """The kit's op mix at the call's shapes, in a fresh child before the student's import
        (``probes.warm_up_ops``): what torch touches the first time is then not counted as the call's."""
        shapes = [list(a.shape) for a in probe.args or () if isinstance(a, torch.Tensor)][:MAX_WARM_SHAPES]
        if shapes and all(math.prod(s) <= MAX_WARM_ELEMENTS for s in shapes):
            child.call(request_body(WarmUp(shapes), record=None), deadline=self.deadline)  # its reply: no evidence

    def _import(self, child, mode, module):
        """Import once per child; a crash or hang while importing counts against the module, not the test."""
        try:
            return self._recorded_call(child, Import(module), mode)
        except OutOfTurn:
            raise
        except ChildDied as died:
            reason = (self._timeout_reason(f"importing {module}.py", died.wall) if died.timed_out
                      else f"the submission's process {died.reason} while importing {module}.py")
            if died.timed_out:
                self._count_timeout(died)
            self.events.append(reason)
            self.import_failures[(mode, module)] = reason
            self._retire(child)
            del self.children[mode]
            return Failure(reason, error=None)

    def close(self):
        for entry in self.children.values():
            self._retire(entry["child"])
        self.children.clear()
        if self.cgroup is not None:
            self.cgroup.remove()

    # --- child lifecycle -----------------------------------------------------------------

    def _blocked(self, target, mode, module):
        if (mode, module) in self.import_failures:
            return self.import_failures[(mode, module)]
        if target in self.timed_out:
            return f"not run: {target.split('.', 1)[1]} {self.timed_out[target]} earlier, so it is not called again"
        if self.timeouts >= MAX_TIMEOUTS or self._budget_spent():
            return "not run: the submission used up its time budget (its code hung or was too slow in earlier tests)"
        return None

    def _budget_spent(self):
        return self.cpu_spent >= self.limits.submission_seconds or time.monotonic() >= self.deadline

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

    def _died(self, mode, target, died):
        entry = self.children.get(mode)
        func = target.split(".", 1)[1]
        if died.timed_out:
            self._count_timeout(died)
            self.timed_out[target] = ("gave no answer" if died.wall
                                      else f"timed out (limit {self.limits.call_seconds:g} s of CPU time)")
            reason = self._timeout_reason(func, died.wall) + ("" if died.wall else " (an infinite loop?)")
        elif died.reason.startswith("grader error"):
            raise RuntimeError(died.reason)  # not the student's fault: the test becomes a grader error
        else:
            reason = f"the submission's process {died.reason} while running {func}"
        self.events.append(reason)
        if entry is not None:
            self._retire(entry["child"])
            del self.children[mode]
        return reason

    def _count_timeout(self, died):
        self.timeouts += 1
        self.wall_timeouts += died.wall

    def _timeout_reason(self, what, wall=False):
        """Why a call timed out: its own CPU limit, the wall-clock backstop (it waited rather than computed),
        or the submission's time budget, which ended it sooner."""
        if self._budget_spent():
            return (f"{what} was stopped: the submission used up its time budget "
                    f"({self.limits.submission_seconds:g} s of CPU time for all calls)")
        if wall:
            return (f"{what} gave no answer within {self.limits.call_seconds * WALL_BACKSTOP:g} s of wall-clock time "
                    f"while using less than its {self.limits.call_seconds:g} s of CPU time (it sleeps or waits?)")
        return f"{what} did not finish within {self.limits.call_seconds:g} s of CPU time"

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
    mix in it at the call's shapes (``Student._warm_up``): the meter starts after that and before the
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


def _compile_error(source):
    """The name of the SyntaxError (or subclass) that compiling ``source`` (bytes, never run) raises, or None: it
    compiles, it is missing, or compiling it failed otherwise (too deep, too large), which proves nothing."""
    if source is None:
        return None
    try:
        compile(source, "<submission>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return type(error).__name__
    except Exception:  # RecursionError, MemoryError, ValueError (null bytes): leave it to the child
        return None
    return None


def _runs(module, mode):
    """The student modules a call of ``module`` runs: mha.py runs attention.py too, except in oracle mode."""
    return ("mha", "attention") if module == "mha" and mode == "student" else (module,)  # oracle, below


def replied(item):
    """An item of ``Student.call_many``: its ``Reply``, or the call's ``StudentError`` raised here, where the
    test's own order of checks reaches that call."""
    if isinstance(item, StudentError):
        raise item
    return item


def failed(target, args, request, failure):
    """The ``StudentError`` (a ``RuleViolation`` for the rule) that ``call`` raises for ``failure``."""
    message = _refused_valid_size(target, request, failure)
    error = failure.error
    went_in = shapes_in(args) if error is not None and error.where and error.type != "NotImplementedError" else None
    return (RuleViolation if failure.rule else StudentError)(message + (f"\n  {went_in}" if went_in else ""))


def _refused_valid_size(target, request, failure):
    """The failure's message; first, when MultiHeadAttention raised DimensionMismatchError for sizes that
    divide evenly, the cause in one line (``error_hints.valid_size_refused``, which make test shares)."""
    init = request.get("init")
    args = init.get("args", []) if isinstance(init, dict) else getattr(init, "args", [])
    if target != "mha.MultiHeadAttention" or len(args) < 2 or not failure.raised("DimensionMismatchError"):
        return failure.message
    why = valid_size_refused(args[0], args[1], "DimensionMismatchError")
    return f"{why}\n{failure.message}" if why else failure.message


def _unchanged(sent, back):
    return (isinstance(back, torch.Tensor) and back.shape == sent.shape and back.dtype == sent.dtype
            and bool(torch.equal(back, sent)))


class Failure:
    def __init__(self, message, error, forbidden=(), classes=None, rule=False):
        self.message, self.error, self.forbidden = message, error, list(forbidden)  # error: protocol.ErrorInfo
        self.classes = classes or {}  # the submission's own classes: {name: base names}, from its source
        self.rule = rule  # the from-scratch rule, not the code's result, is why it failed

    def raised(self, class_name):
        """Did the student's code raise ``class_name`` or a subclass of it? The child only names the
        exception's type; its ancestry comes from Python's own classes or the submission's source,
        never from the child's word."""
        if self.error is None:
            return False
        return class_name in exception_mro(self.error.type, self.classes)


def source_classes(path):
    """{class name: [base names]} for the top-level classes of the file at ``path`` (never run)."""
    try:
        tree = ast.parse(rules.read_source(path))  # as Python reads it: a byte-order mark is no syntax error
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {node.name: [ast.unparse(base).split(".")[-1] for base in node.bases]
            for node in tree.body if isinstance(node, ast.ClassDef)}


def exception_mro(name, classes):
    """The class names ``name`` descends from, each once: through the submission's own classes first
    (they shadow Python's), then Python's built-in exceptions. Unknown names stand alone.

    Each class is visited once, so classes that name one another (the source is the student's) cost
    one step per class, not one per path through them."""
    found, stack = {}, [name]  # found: an ordered set
    while stack:
        current = stack.pop()
        if current in found:
            continue
        builtin = getattr(builtins, current, None)
        if current in classes:
            found[current] = None
            stack.extend(reversed(classes[current]))
        elif isinstance(builtin, type) and issubclass(builtin, BaseException):
            found.update(dict.fromkeys(c.__name__ for c in builtin.__mro__))
        else:
            found[current] = None
    return list(found)


def describe_error(error, folder=None):
    """One paragraph: what the student's code raised (a ``protocol.ErrorInfo``), where, and the hint
    for it if the error is a known one. An error about an in-place edit, raised in torch's backward pass
    where no line of the student's is on the stack, names the in-place edits of the files in ``folder``
    (the staged copy, read here in the trusted parent), as the public checks do."""
    if error.type == "NotImplementedError":
        text = f"not implemented yet (NotImplementedError) while {error.phase}"
    else:
        text = (f"{error.type}: {error.message}" if error.message else error.type) + f" (while {error.phase})"
    where = error.where
    if where:
        text += f"\n  at {where.file} line {where.line}, in {where.function}: {where.code}"
    elif folder and INPLACE_ERROR in " ".join(error.message.split()):
        for name in ("attention.py", "mha.py"):
            try:
                source = rules.read_source(os.path.join(folder, name))
            except (OSError, ValueError):
                continue
            text += "".join(f"\n  in-place edit: {line}" for line in inplace_edits(source, name))
    hint = error_hint(error.message) if error.type != "NotImplementedError" else None
    if hint:  # the public checks give the same hint for the same error (one table)
        text += f"\n  hint: {hint}"
    return text


def refused_builtins(error):
    """The built-ins a child's ``ForbiddenCall`` names (its message starts with one): the student's own
    failure either way, so a forged one costs only the student."""
    if error is None or error.type != FORBIDDEN_ERROR:
        return set()
    return {name for name in KNOWN_FORBIDDEN if error.message.startswith(f"{name} ")}


def forbidden_message(names, target):
    function = target.split(".", 1)[1]
    if RECORD_MISSING in names:
        return (f"{function} left {RECORD_MISSING}, so the from-scratch rule cannot be checked: "
                "this test gets no points.")
    return (f"{function} called {', '.join(names)}, which the from-scratch rule forbids: "
            f"this test gets no points. Build it from matmul/softmax/masked_fill instead.")


def hidden_message(violations, target):
    """The refusal in submit.py's words, which `make test` gives too (``rules.refusal``)."""
    return rules.refusal(violations, target.split('.', 1)[1])
