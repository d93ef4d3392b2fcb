"""The hidden tests' handle on one submission (trusted side).

``student.call("attention.causal_mask", 4)`` sends a probe to a sandboxed child and returns
the decoded result. Anything that goes wrong on the student's side raises ``StudentError``
(an ``AssertionError``, so pytest counts the test as failed, not as a grader error) with a
message written for the student. A call names its child's mode: ``student`` (the student's files),
``oracle`` (the student's mha.py on the reference's attention, so a bug in attention.py does not also
cost the MHA points) or ``below`` (the same, plus the reference's lent methods, for a test of a higher
part run on the lab's own lower parts, ``protocol.Lend``). Starting and retiring them is
``children.ChildSupervisor``'s, which ``Student`` is.

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
from autograder.config import WALL_BACKSTOP
from autograder.grading import raises
from autograder.grading.children import ChildSupervisor, MemoryMeter
from autograder.judging.errors import RuleViolation, StudentError
from autograder.judging.error_hints import INPLACE_ERROR, error_hint, inplace_edits, valid_size_refused
from autograder.judging.properties import shapes_in
from autograder.containment.protocol import (MAX_WARM_ELEMENTS, MAX_WARM_SHAPES, Answer, Calls, Import, Probe, WarmUp,
                                 request_body, untag)
from autograder.containment.sandbox import ChildDied, OutOfTurn

MAX_TIMEOUTS = 3
# What a child's op record may name (autograder/containment/probes.py); anything else means it was forged.
KNOWN_FORBIDDEN = rules.watched_builtins()
RECORD_MISSING = "no trustworthy record of the ops it ran (the grader's profiler was stopped or replaced)"
# What the child raises for a forbidden built-in, whatever route reached it (probes.ForbiddenCall): the
# call is refused at torch's dispatcher, and its error names the built-in even where the record was forged.
FORBIDDEN_ERROR = "ForbiddenCall"


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


class Student(ChildSupervisor):
    """The tests' handle: calls, their judging and their messages. Starting, fitting and retiring the children
    is the supervisor's (``children.ChildSupervisor``)."""

    def __init__(self, zygote, staged, limits, slot=0):
        ChildSupervisor.__init__(self, zygote, staged, limits, slot)
        # The budget is CPU time (``cpu_spent``, measured by the parent per call); the wall clock only backs it up.
        self.deadline = time.monotonic() + limits.submission_seconds * WALL_BACKSTOP
        self.cpu_spent = 0.0
        self.timed_out = {}  # target -> reason
        self.import_failures = {}  # (mode, module) -> message
        self.uncompilable = {}  # module -> the student child's ErrorInfo importing it, where its own file cannot compile
        self._compile_errors = {}  # module -> what compiling its staged file raised (a SyntaxError's name), or None
        self.timeouts = 0
        self.wall_timeouts = 0  # calls stopped by the wall clock before their CPU time ran out (a slow machine, or sleep)
        self.events = []  # crashes and timeouts, for the report
        self.import_forbidden = {}  # (mode, module) -> forbidden ops recorded while importing it
        self._hidden = None  # file name -> the scanner's "hidden" findings (see rules.py)
        self._raised = {}  # target -> the first Failure a plain call of it raised in the student's child

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
            known = self._fails_as_before(mode, probe) if probe.measure_memory else None
            if known is not None:  # no child to start: the call can only fail as it did
                return known
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
            failure = Failure(describe_error(answer.error, self.staged.dir), answer.error, answer.forbidden,
                              self._classes())
            if mode == "student" and probe.init is None and probe.method is None:
                self._raised.setdefault(target, failure)
            return failure
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

    def _fails_as_before(self, mode, probe):
        """For a measured call of a function that can only raise, proved from the source (``raises.only_raises``:
        never written, or the stub) and seen to raise that very exception in the student's child already: that
        ``Failure`` again, with no fresh child started for it (its start, warm-up and import are about a third
        of such a submission's children). Else None, and the call runs as always."""
        earlier = self._raised.get(probe.target)
        if mode != "student" or earlier is None or earlier.error is None or probe.init is not None or probe.method:
            return None
        staged = {f"{name}.py": self._staged_bytes(name) for name in ("attention", "mha")}
        sources = {name: text for name, text in staged.items() if text is not None}
        if raises.only_raises(sources, probe.module, probe.function) != earlier.error.type:
            return None
        return earlier

    def method_only_raises(self, target, method):
        """The exception every call of the student's ``target`` (``"module.Class"``) that reaches ``method`` ends in,
        proved from the staged files (``raises.method_only_raises``), or None. Files the scanner finds code in that
        hides what it calls (``rules.hidden_calls``: a computed attribute name, ``exec``...) get no proof."""
        module, _, cls = target.partition(".")
        if self._hides(module, "student"):
            return None
        staged = {f"{name}.py": self._staged_bytes(name) for name in ("attention", "mha")}
        return raises.method_only_raises({name: text for name, text in staged.items() if text is not None},
                                         module, cls, method)

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
