"""The hidden tests' handle on one submission (trusted side).

``student.call("attention.causal_mask", 4)`` sends a probe to a sandboxed child and returns
the decoded result. Anything that goes wrong on the student's side raises ``StudentError``
(an ``AssertionError``, so pytest counts the test as failed, not as a grader error) with a
message written for the student. Children are started lazily, one per mode:

* ``student``: the student's attention.py and mha.py;
* ``oracle``: the student's mha.py on top of attention from torch built-ins, so a bug in
  attention.py does not also cost the MHA points.

A child that crashes or hangs is replaced for the next call. A function that timed out is
not called again, and after a few timeouts the submission's time budget is spent, so a
submission that hangs costs a few call limits, not one per test.
"""
import os
import time

import torch

from autograder.sandbox import ChildDied, OutOfTurn

MAX_TIMEOUTS = 3


class StudentError(AssertionError):
    """The student's code failed a probe or a comparison; the message is meant for the student.

    ``figure`` (expected and got for one small matrix) and ``mistake`` (a catalogued bug the
    result matches) travel with it into the report.
    """

    def __init__(self, message, figure=None, mistake=None):
        super().__init__(message)
        self.figure, self.mistake = figure, mistake

    def named(self, mistake):
        """The same failure, with the catalogued mistake named first."""
        return StudentError(f"Likely bug: {mistake.explain()}.\n{self}", self.figure, mistake)


class RuleViolation(StudentError):
    """The student's code called a forbidden built-in."""


class Reply:
    """A successful probe: the result and what came with it.

    Every field is a claim of the child, which runs student code. ``sandbox.Child.call`` has
    checked the reply against ``replies`` (types, tags, sizes), so reading it cannot raise;
    whether a claim is right is for the tests to judge, never for the child.
    """

    def __init__(self, value, forbidden, sent_args=()):
        self.result = unwrap(value.get("result"))
        self.grads = value.get("grads")
        self.attrs = value.get("attrs")
        self.forbidden = forbidden
        self.peak_bytes = value.get("peak_bytes")  # measure_memory: growth of the child's peak RSS
        self.projected = value.get("projected") or {}  # decode: input shapes seen by w_k and w_v, per step
        self.cache_shapes = value.get("cache_shapes") or []  # decode: (k, v) shapes after each step
        after = value.get("inputs_after") or []
        # Compared here, not in the child, where torch.equal may have been monkeypatched.
        self.inputs_modified = [isinstance(sent, torch.Tensor) and not _unchanged(sent, back)
                                for sent, back in zip(sent_args, after)]


class Student:
    def __init__(self, zygote, staged, limits, slot=0, budget_seconds=120.0):
        self.zygote, self.staged, self.limits, self.slot = zygote, staged, limits, slot
        self.deadline = time.monotonic() + budget_seconds
        self.children = {}
        self.scratch_count = 0
        self.timed_out = {}  # target -> reason
        self.import_failures = {}  # (mode, module) -> message
        self.timeouts = 0
        self.output = []
        self.events = []  # crashes and timeouts, for the report

    # --- what tests call -----------------------------------------------------------------

    def call(self, target, *args, mode="student", allow_forbidden=False, **request):
        """Run ``target`` (``"module.attr"``) on ``args`` in the sandbox and return a ``Reply``.

        Extra keywords go into the probe request: ``init``, ``state``, ``method``, ``grad``,
        ``attrs``, ``kwargs``. Raises ``StudentError`` when the student's code fails.
        """
        reply = self.try_call(target, *args, mode=mode, **request)
        if isinstance(reply, Failure):
            raise StudentError(reply.message)
        if reply.forbidden and not allow_forbidden:
            raise RuleViolation(forbidden_message(reply.forbidden, target))
        return reply

    def try_call(self, target, *args, mode="student", **request):
        """Like ``call`` but returns a ``Failure`` instead of raising (to inspect expected errors)."""
        module = target.split(".")[0]
        blocked = self._blocked(target, mode, module)
        if blocked:
            return Failure(blocked, error=None)
        request = dict(request, target=target)
        if args or "kwargs" in request:
            request["args"] = list(args)
        try:
            return self._probe(mode, module, request, args)
        except OutOfTurn as died:  # the child broke the protocol after an earlier test's reply
            self.events.append(f"the submission's process {died.reason}; {target.split('.', 1)[1]} "
                               "was run again in a fresh process")
            self._retire(self.children.pop(mode)["child"])
        try:
            return self._probe(mode, module, request, args)
        except OutOfTurn as died:  # twice in a row: this test's own doing
            return Failure(self._died(mode, target, died), error=None)

    def _probe(self, mode, module, request, args):
        target = request["target"]
        try:
            child = self._child(mode)
            if (mode, module) not in self.children[mode]["imported"]:
                imported = self._import(child, mode, module)
                if isinstance(imported, Failure):
                    return imported
                self.children[mode]["imported"].add((mode, module))
                if not imported["ok"]:
                    self.import_failures[(mode, module)] = describe_error(imported["error"])
                    return Failure(self.import_failures[(mode, module)], imported["error"])
            message = child.call(request)
        except OutOfTurn:
            raise
        except ChildDied as died:
            return Failure(self._died(mode, target, died), error=None)
        if not message.get("ok"):
            return Failure(describe_error(message["error"]), message["error"], message.get("forbidden", []))
        return Reply(message["value"], message.get("forbidden", []), args)

    def _import(self, child, mode, module):
        """Import once per child; a crash or hang while importing counts against the module, not the test."""
        try:
            return child.call({"import": module})
        except OutOfTurn:
            raise
        except ChildDied as died:
            reason = (f"importing {module}.py did not finish within {self.limits.call_seconds:g} s"
                      if died.timed_out else f"the submission's process {died.reason} while importing {module}.py")
            if died.timed_out:
                self.timeouts += 1
            self.events.append(reason)
            self.import_failures[(mode, module)] = reason
            self._retire(child)
            del self.children[mode]
            return Failure(reason, error=None)

    def close(self):
        for entry in self.children.values():
            self._retire(entry["child"])
        self.children.clear()

    # --- child lifecycle -----------------------------------------------------------------

    def _blocked(self, target, mode, module):
        if (mode, module) in self.import_failures:
            return self.import_failures[(mode, module)]
        if target in self.timed_out:
            return f"not run: {target.split('.', 1)[1]} {self.timed_out[target]} earlier, so it is not called again"
        if self.timeouts >= MAX_TIMEOUTS or time.monotonic() > self.deadline:
            return "not run: the submission used up its time budget (its code hung or was too slow in earlier tests)"
        return None

    def _child(self, mode):
        entry = self.children.get(mode)
        if entry is None or entry["child"].dead:
            if entry is not None:
                self._retire(entry["child"])
            uid = self.zygote.next_uid(self.slot)
            scratch = self._fresh_scratch(uid)
            child = self.zygote.spawn(scratch, mode, self.limits, uid)
            entry = self.children[mode] = {"child": child, "imported": set()}
        return entry["child"]

    def _fresh_scratch(self, uid):
        """Each child gets its own copy of the two files, so nothing one child writes reaches the next.

        The folder is new and filled by the grader before anyone else may enter it (O_EXCL and
        O_NOFOLLOW through the folder's descriptor); only then is it handed to the child's uid, a uid
        no earlier child had. Root never writes into a place a sandbox uid has owned.
        """
        self.scratch_count += 1
        scratch = f"{self.staged.dir}.run{self.scratch_count}"
        os.mkdir(scratch, 0o700)  # fails if it exists: never reuse a folder
        folder = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for name in os.listdir(self.staged.dir):
                with open(os.path.join(self.staged.dir, name), "rb") as src:
                    data = src.read()
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
            self.timeouts += 1
            self.timed_out[target] = f"timed out (limit {self.limits.call_seconds:g} s)"
            reason = f"{func} did not finish within {self.limits.call_seconds:g} s (an infinite loop?)"
        elif died.reason.startswith("grader error"):
            raise RuntimeError(died.reason)  # not the student's fault: the test becomes a grader error
        else:
            reason = f"the submission's process {died.reason} while running {func}"
        self.events.append(reason)
        if entry is not None:
            self._retire(entry["child"])
            del self.children[mode]
        return reason

    def _retire(self, child):
        child.close()
        text = child.output_text()
        if text:
            self.output.append(text)


def _unchanged(sent, back):
    return (isinstance(back, torch.Tensor) and back.shape == sent.shape and back.dtype == sent.dtype
            and bool(torch.equal(back, sent)))


class Failure:
    def __init__(self, message, error, forbidden=()):
        self.message, self.error, self.forbidden = message, error, list(forbidden)

    def raised(self, class_name):
        """Did the student's code raise ``class_name`` or a subclass of it?"""
        return bool(self.error) and class_name in self.error.get("mro", [])


def unwrap(value):
    """Undo the probe's tagging of sequences and non-tensor objects."""
    if isinstance(value, dict) and "__sequence__" in value:
        items = [unwrap(v) for v in value["items"]]
        return tuple(items) if value["__sequence__"] == "tuple" else items
    if isinstance(value, dict) and "__tensor_of__" in value:
        return NotATensor(f"a {value['__tensor_of__']} (a Tensor subclass)")
    if isinstance(value, dict) and "__object__" in value:
        return NotATensor(f"an object of type {value['__object__']}")
    return value


class NotATensor:
    """Stands in for a returned value that is not a plain tensor, so comparisons can name it."""

    def __init__(self, description):
        self.description = description

    def __repr__(self):
        return self.description


def describe_error(error):
    """One paragraph: what the student's code raised, and where."""
    kind, message = error.get("type", "Exception"), error.get("message", "")
    phase = error.get("phase", "")
    if kind == "NotImplementedError":
        text = f"not implemented yet (NotImplementedError) while {phase}"
    else:
        text = f"{kind}: {message}".rstrip(": ") + f" (while {phase})"
    where = error.get("where")
    if where:
        text += f"\n  at {where['file']} line {where['line']}, in {where['function']}: {where['code']}"
    return text


def forbidden_message(names, target):
    listed = ", ".join(names)
    return (f"{target.split('.', 1)[1]} called {listed}, which the from-scratch rule forbids: "
            f"this test gets no points. Build it from matmul/softmax/masked_fill instead.")
