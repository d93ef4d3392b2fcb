"""The trusted parent's handle on one submission (autograder/grading/student.py): the messages a student
reads, the exception ancestry it trusts, what a reply becomes, and how a child that fails, hangs
or crashes costs the submission.

A stand-in child answers in place of the sandbox, as in tests/containment/test_evidence.py (which covers
forged op records and forged exception ancestry; they are not repeated here).
"""
import signal
import textwrap
import time
from types import SimpleNamespace

import pytest
import torch

from autograder.containment import replies
from autograder.config import WALL_BACKSTOP, Limits
from autograder.containment.protocol import OBJECT, SEQUENCE, ErrorInfo, NotATensor, Where
from autograder.containment.sandbox import ChildDied, OutOfTurn
from autograder.grading.student import (MAX_TIMEOUTS, RECORD_MISSING, Failure, Reply, RuleViolation, Student, StudentError,
                                _runs, describe_error, exception_mro, forbidden_message, hidden_message,
                                replied, source_classes)
from variant_builder import SOLUTION, without_markers

SDPA = "torch.nn.functional.scaled_dot_product_attention"


# --- messages for the student ------------------------------------------------------------------

def error(type_name="ValueError", message="bad", phase="calling attention.causal_mask", where=None):
    return ErrorInfo(type_name, [type_name], message, phase, where)


def test_a_missing_implementation_is_called_not_implemented_yet():
    assert describe_error(error("NotImplementedError", "")) == (
        "not implemented yet (NotImplementedError) while calling attention.causal_mask")


def test_an_error_names_its_type_message_phase_and_the_students_line():
    where = Where("mha.py", 12, "__init__", "raise ValueError('bad')")
    assert describe_error(error(phase="calling mha.MultiHeadAttention", where=where)) == (
        "ValueError: bad (while calling mha.MultiHeadAttention)\n"
        "  at mha.py line 12, in __init__: raise ValueError('bad')")


def test_an_error_without_a_message_shows_its_type_alone():
    assert describe_error(error("KeyError", "", phase="importing mha.py")) == "KeyError (while importing mha.py)"


def test_a_message_ending_in_a_colon_is_shown_as_written():
    assert describe_error(error("ValueError", "bad value:", phase="calling x")) == "ValueError: bad value: (while calling x)"


def test_a_forbidden_call_is_named_with_the_function_that_made_it():
    message = forbidden_message([SDPA], "attention.scaled_dot_product_attention")
    assert message.startswith(f"scaled_dot_product_attention called {SDPA}, which the from-scratch rule forbids")
    assert "this test gets no points" in message


def test_a_missing_record_says_the_rule_cannot_be_checked():
    message = forbidden_message([SDPA, RECORD_MISSING], "mha.MultiHeadAttention")
    assert message.startswith(f"MultiHeadAttention left {RECORD_MISSING}, so the from-scratch rule cannot be checked")


def test_hidden_calls_are_named_by_the_first_and_counted():
    found = [SimpleNamespace(message=f"finding {i}") for i in range(3)]
    assert hidden_message(found, "attention.causal_mask").startswith(
        "causal_mask is not graded: finding 0 (and 2 more).")
    assert "more" not in hidden_message(found[:1], "attention.causal_mask")


def test_a_named_mistake_comes_first_in_the_message():
    failure = StudentError("the weights differ", figure="fig")
    named = failure.named(SimpleNamespace(explain=lambda: "the scale uses d_model instead of d_k"))
    assert str(named) == "Likely bug: the scale uses d_model instead of d_k.\nthe weights differ"
    assert named.figure == "fig" and isinstance(named, AssertionError)


# --- exception ancestry, from the source ---------------------------------------------------------

def test_a_submission_class_shadows_the_builtin_of_the_same_name():
    assert "LookupError" not in exception_mro("KeyError", {"KeyError": ["Exception"]})


def test_ancestry_runs_through_the_submissions_classes_into_pythons():
    mro = exception_mro("ShapeError", {"ShapeError": ["DimError"], "DimError": ["IndexError"]})
    assert mro[:4] == ["ShapeError", "DimError", "IndexError", "LookupError"] and "Exception" in mro


def test_a_failure_with_no_error_raised_nothing():
    timed_out = Failure("causal_mask did not finish within 10 s", error=None)
    assert not timed_out.raised("BaseException")


def test_ancestry_through_classes_that_name_one_another_ends_quickly(tmp_path):
    source = tmp_path / "mha.py"
    source.write_text(textwrap.dedent("""\
        class A(Exception): pass
        class B(Exception): pass
        class C(Exception): pass
        class D(Exception): pass
        class A(B, C, D): pass
        class B(A, C, D): pass
        class C(B, A, D): pass
        class D(C, B, A): pass
        """))
    failure = Failure("A", error("A"), classes=source_classes(str(source)))

    def stop(*_):
        raise TimeoutError("exception_mro is still running")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        assert not failure.raised("ValueError")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_source_classes_reads_top_level_classes_and_the_last_part_of_each_base(tmp_path):
    source = tmp_path / "mha.py"
    source.write_text("import torch\nclass Net(torch.nn.Module, Mixin):\n    class Inner(Exception): pass\n")
    assert source_classes(str(source)) == {"Net": ["Module", "Mixin"]}


def test_source_classes_of_a_file_that_does_not_parse_or_exist_is_empty(tmp_path):
    broken = tmp_path / "attention.py"
    broken.write_text("class Broken(Exception:\n")
    assert source_classes(str(broken)) == {} and source_classes(str(tmp_path / "missing.py")) == {}


# --- a reply in the parent ---------------------------------------------------------------------

def test_a_reply_untags_its_result_and_caches():
    t = torch.ones(2)
    reply = Reply({"result": {SEQUENCE: "tuple", "items": [t, {OBJECT: "dict"}]},
                   "caches": [{SEQUENCE: "list", "items": [t]}]}, forbidden=[])
    assert isinstance(reply.result, tuple) and reply.result[0] is t and isinstance(reply.result[1], NotATensor)
    assert reply.caches == [[t]]


def test_the_parent_decides_which_inputs_were_modified():
    sent = [torch.ones(2), torch.ones(2), 3, torch.ones(2), torch.ones(2)]
    after = [torch.ones(2), torch.full((2,), 2.0), None, torch.ones(2, dtype=torch.float64), None]
    reply = Reply({"result": None, "inputs_after": after}, forbidden=[], sent_args=sent)
    assert reply.inputs_modified == [False, True, False, True, True], (
        "changed values, a changed dtype and a tensor not sent back count; a non-tensor argument does not")


def test_runs_names_the_files_a_call_executes():
    assert _runs("mha", "student") == ("mha", "attention")
    assert _runs("mha", "oracle") == ("mha",), "the oracle replaces attention.py"
    assert _runs("attention", "student") == ("attention",)


# --- a stand-in child ----------------------------------------------------------------------------

def ok(request):
    return {"ok": True, "value": {"result": 1}}


def imported(module):
    return {"ok": True, "value": {}}


class StandInChild:
    """Answers as ``sandbox.Child.call`` returns a reply (numbered, checked by ``replies``):
    ``script(request)`` for a probe, ``imports(module)`` for an import; either may raise ``ChildDied``."""

    def __init__(self, script, imports):
        self.script, self.imports, self.dead = script, imports, None
        self.requests, self.closed = [], False

    def call(self, request, timeout=None, deadline=None, cpu_left=None):
        self.requests.append(request)
        self.timeout = timeout
        if "warm_up" in request:  # the kit's own ops: answered like an import
            reply = {"ok": True, "value": {}}
        else:
            reply = self.imports(request["import"]) if "import" in request else self.script(request)
        reply = {"forbidden": [], "record": request["record"], **reply}
        return replies.check(dict(reply, seq=len(self.requests)))

    def close(self):
        self.closed = True

    def kill(self):
        self.dead = "killed"

    output_dropped = 0
    cpu_used = 0.0  # the CPU time of its last call, as sandbox.Child measures it

    def output_text(self):
        return f"printed by child {id(self)}"


def handle(tmp_path, script=ok, imports=imported):
    """A Student over the reference's files whose children are stand-ins (``student.spawned``, in order)."""
    staged = tmp_path / "staged"
    staged.mkdir()
    for name in ("attention.py", "mha.py"):
        (staged / name).write_text(without_markers((SOLUTION / name).read_text()))
    student = Student(zygote=None, staged=SimpleNamespace(dir=str(staged)), limits=Limits())
    student.spawned = []

    def child(mode):
        if mode not in student.children:
            student.spawned.append(StandInChild(script, imports))
            student.children[mode] = {"child": student.spawned[-1], "imported": set()}
        return student.children[mode]["child"]

    student._child = child
    return student


def requests(student):
    return [request for child in student.spawned for request in child.requests]


def fails(message, **answer):
    return lambda request: {"ok": False, "error": dict({"type": "ValueError", "mro": [], "message": message,
                                                        "phase": f"calling {request['target']}", "where": None},
                                                       **answer)}


def test_a_module_is_imported_once_per_child_and_each_call_carries_a_fresh_marker(tmp_path):
    student = handle(tmp_path)
    student.call("attention.causal_mask", 4)
    student.call("mha.MultiHeadAttention", init={"args": [8, 2]})
    sent = requests(student)
    assert [r.get("import") or r["target"] for r in sent] == [
        "attention", "attention.causal_mask", "mha", "mha.MultiHeadAttention"]
    assert sent[3]["init"] == {"args": [8, 2], "kwargs": {}} and "args" not in sent[3], "construct only"
    assert len({r["record"] for r in sent}) == 4


def test_a_failing_call_raises_a_student_error_with_the_described_error(tmp_path):
    student = handle(tmp_path, script=fails("d_model=16, n_heads=5"))
    with pytest.raises(StudentError) as failed:
        student.call("mha.MultiHeadAttention", init={"args": [16, 5]})
    assert not isinstance(failed.value, RuleViolation) and isinstance(failed.value, AssertionError)
    assert str(failed.value) == "ValueError: d_model=16, n_heads=5 (while calling mha.MultiHeadAttention)"


def test_a_forbidden_call_is_a_rule_violation_unless_allowed(tmp_path):
    student = handle(tmp_path, script=lambda request: {"ok": True, "value": {"result": 1}, "forbidden": [SDPA]})
    with pytest.raises(RuleViolation, match="from-scratch rule forbids"):
        student.call("attention.scaled_dot_product_attention", 1, 2, 3)
    assert student.call("attention.scaled_dot_product_attention", 1, 2, 3, allow_forbidden=True).forbidden == [SDPA]


def test_an_import_failure_is_reported_then_blocks_that_module_without_asking_the_child(tmp_path):
    def imports(module):
        return fails("broken at import", phase=f"importing {module}.py")({"target": ""}) if module == "attention" \
            else imported(module)

    student = handle(tmp_path, imports=imports)
    first = student.try_call("attention.causal_mask", 4)
    asked = len(requests(student))
    second = student.try_call("attention.padding_mask", 4)
    assert first.message == second.message == "ValueError: broken at import (while importing attention.py)"
    assert len(requests(student)) == asked, "a blocked call sends nothing"
    assert student.call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="oracle").result == 1


def uncompilable(tmp_path, claimed="SyntaxError", source="def merge_heads(self, x)\n    return x\n"):
    """A handle whose mha.py is ``source``; its stand-in child says importing mha raised ``claimed``."""
    def imports(module):
        if module != "mha":
            return imported(module)
        return fails("expected ':' (mha.py, line 1)", type=claimed, phase="importing mha.py")({"target": ""})

    student = handle(tmp_path, imports=imports)
    (tmp_path / "staged" / "mha.py").write_text(source)
    return student


def test_a_file_that_does_not_compile_is_imported_in_the_students_child_alone_and_fails_every_mode_alike(tmp_path):
    student = uncompilable(tmp_path)
    in_oracle = student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="oracle")
    in_below = student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="below")
    assert list(student.children) == ["student"], "no oracle or below child is started for it"
    assert in_oracle.message == in_below.message == "SyntaxError: expected ':' (mha.py, line 1) (while importing mha.py)"
    assert in_oracle.error.type == "SyntaxError"
    own = student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]})
    assert (own.message, own.error) == (in_oracle.message, in_oracle.error), "the student's own calls fail as before"


def test_a_child_that_names_another_error_than_the_compilers_is_not_believed(tmp_path):
    student = uncompilable(tmp_path, claimed="ValueError")
    student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="oracle")
    assert "oracle" in student.children, "the parent found a SyntaxError: the child's ValueError proves nothing"


def test_a_file_that_compiles_but_fails_at_import_gets_a_child_of_each_mode(tmp_path):
    student = uncompilable(tmp_path, source="raise ValueError('at import')\n")
    student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="oracle")
    assert "oracle" in student.children, "what running it does may depend on the files beside it"


def times_out(target):
    def script(request):
        if request["target"] == target:
            raise ChildDied("timed out", timed_out=True)
        return ok(request)
    return script


def test_a_call_that_times_out_is_reported_and_its_child_retired(tmp_path):
    student = handle(tmp_path, script=times_out("attention.causal_mask"))
    with pytest.raises(StudentError) as failed:
        student.call("attention.causal_mask", 4)
    limit = f"{student.limits.call_seconds:g}"
    assert str(failed.value) == f"causal_mask did not finish within {limit} s of CPU time (an infinite loop?)"
    assert student.events == [str(failed.value)] and student.timeouts == 1
    assert student.spawned[0].closed and student.output == [student.spawned[0].output_text()]


def test_a_target_that_timed_out_is_not_called_again_but_others_are(tmp_path):
    student = handle(tmp_path, script=times_out("attention.causal_mask"))
    student.try_call("attention.causal_mask", 4)
    asked = len(requests(student))
    again = student.try_call("attention.causal_mask", 5)
    assert again.message.startswith("not run: causal_mask timed out") and "not called again" in again.message
    assert len(requests(student)) == asked
    assert student.call("attention.padding_mask", 4).result == 1 and len(student.spawned) == 2, "in a fresh child"


def test_after_max_timeouts_the_time_budget_is_spent_for_every_call(tmp_path):
    student = handle(tmp_path, script=lambda request: times_out(request["target"])(request))
    for i in range(MAX_TIMEOUTS):
        student.try_call(f"attention.f{i}", 1)
    blocked = student.try_call("mha.MultiHeadAttention", init={"args": [8, 2]})
    assert blocked.message.startswith("not run: the submission used up its time budget")
    assert blocked.error is None and not blocked.rule


def test_a_call_stopped_by_the_wall_clock_is_reported_as_waiting_not_as_a_loop(tmp_path):
    def script(request):
        raise ChildDied("gave no answer", timed_out=True, wall=True)

    student = handle(tmp_path, script=script)
    message = student.try_call("attention.causal_mask", 4).message
    backstop = f"{student.limits.call_seconds * WALL_BACKSTOP:g}"
    assert message.startswith(f"causal_mask gave no answer within {backstop} s of wall-clock time") and "loop" not in message
    assert student.timeouts == 1 and student.wall_timeouts == 1


def test_a_call_stopped_at_its_cpu_limit_is_not_counted_as_a_slow_machine(tmp_path):
    student = handle(tmp_path, script=times_out("attention.causal_mask"))
    student.try_call("attention.causal_mask", 4)
    assert student.timeouts == 1 and student.wall_timeouts == 0


def test_the_submissions_budget_is_the_cpu_time_its_calls_used(tmp_path):
    student = handle(tmp_path)
    student.call("attention.causal_mask", 4)
    assert student.cpu_spent == 0.0
    student.spawned[0].cpu_used = student.limits.submission_seconds  # what the parent measured for the next call
    student.call("attention.padding_mask", 4)
    assert student.try_call("attention.causal_mask", 5).message.startswith("not run: the submission used up")


def test_the_submissions_wall_clock_is_only_a_backstop_several_times_its_budget(tmp_path):
    student = handle(tmp_path)
    assert student.deadline - time.monotonic() > student.limits.submission_seconds * (WALL_BACKSTOP - 1)


def test_past_the_submissions_deadline_every_call_is_not_run(tmp_path):
    student = handle(tmp_path)
    student.deadline = time.monotonic() - 1
    assert student.try_call("attention.causal_mask", 4).message.startswith("not run: the submission used up")
    assert requests(student) == []


def test_an_import_that_times_out_counts_as_a_timeout_and_blocks_the_module(tmp_path):
    def imports(module):
        raise ChildDied("timed out", timed_out=True)

    student = handle(tmp_path, imports=imports)
    expected = f"importing attention.py did not finish within {student.limits.call_seconds:g} s of CPU time"
    assert student.try_call("attention.causal_mask", 4).message == expected
    assert student.timeouts == 1 and student.events == [expected]
    assert student.try_call("attention.padding_mask", 4).message == expected and len(student.spawned) == 1


def test_a_crash_is_reported_and_the_same_call_runs_again_in_a_fresh_child(tmp_path):
    crashes = [ChildDied("was killed by signal 9")]

    def script(request):
        if crashes:
            raise crashes.pop()
        return ok(request)

    student = handle(tmp_path, script=script)
    crashed = student.try_call("attention.causal_mask", 4)
    assert crashed.message == "the submission's process was killed by signal 9 while running causal_mask"
    assert student.timeouts == 0
    assert student.call("attention.causal_mask", 4).result == 1 and len(student.spawned) == 2


def test_a_grader_error_in_the_sandbox_is_not_blamed_on_the_student(tmp_path):
    def script(request):
        raise ChildDied("grader error: the zygote is gone")

    with pytest.raises(RuntimeError, match="grader error"):
        handle(tmp_path, script=script).try_call("attention.causal_mask", 4)


def test_a_child_out_of_turn_is_replaced_and_the_call_run_again(tmp_path):
    def out_of_turn(request):
        raise OutOfTurn("answered an earlier request again")

    student = handle(tmp_path)
    student.call("attention.causal_mask", 3)  # spawns the first child
    first = student.spawned[0]
    first.script = out_of_turn
    assert student.call("attention.causal_mask", 4).result == 1
    assert first.closed and len(student.spawned) == 2
    assert student.events == ["the submission's process answered an earlier request again; causal_mask "
                              "was run again in a fresh process"]


def test_a_child_out_of_turn_twice_in_a_row_fails_the_call(tmp_path):
    def script(request):
        raise OutOfTurn("spoke between requests")

    failure = handle(tmp_path, script=script).try_call("attention.causal_mask", 4)
    assert failure.message == "the submission's process spoke between requests while running causal_mask"


def test_memory_is_measured_by_the_parent_in_a_fresh_warmed_up_child_never_taken_from_the_reply(tmp_path):
    student = handle(tmp_path)
    student.call("attention.causal_mask", 4)
    args = (torch.ones(8, 2), torch.ones(6, 2), 3)
    claimed = student.call("attention.tiled_attention", *args, measure_memory=True)
    assert (claimed.peak_bytes, claimed.memory_measured_by) == (None, "process")  # a stand-in has no /proc
    started = []
    student.cgroup = SimpleNamespace(reset_peak=lambda: started.append(len(requests(student))) or 100,
                                     peak_memory=lambda: 600)
    measured = student.call("attention.tiled_attention", *args, measure_memory=True)
    assert (measured.peak_bytes, measured.memory_measured_by) == (500, "cgroup")
    assert len(student.spawned) == 3 and student.spawned[0].closed and student.spawned[1].closed, (
        "each measured call gets a child of its own, cgroup or not")
    fresh = student.spawned[2].requests
    assert [[k for k in ("warm_up", "import", "target") if k in r] for r in fresh] == [["warm_up"], ["import"], ["target"]]
    assert fresh[0]["warm_up"] == [[8, 2], [6, 2]], "the kit's warm-up runs at the call's tensor shapes"
    assert started == [len(requests(student)) - 2], "the meter starts after the warm-up and before the import"


PHASES_CHILD = """
import sys, torch
warm_up = torch.ones(80 << 20, dtype=torch.uint8)    # taken and freed by the kit's warm-up, before the meter
del warm_up
print("warm", flush=True); sys.stdin.readline()      # the meter starts here, before the student's import
ballast = torch.ones(@BALLAST@ << 20, dtype=torch.uint8)  # taken 'at import'
print("imported", flush=True); sys.stdin.readline()
del ballast                                          # freed 'inside the call', to make room
matrix = torch.ones(@CALL@ << 20, dtype=torch.uint8) # what 'the call' builds
print("done", flush=True); sys.stdin.readline()
"""


def process_figure(call_mib, ballast_mib=0):
    """The meter without a cgroup, as on Gradescope, over a child that frees 80 MiB before the meter
    starts, takes ``ballast_mib`` MiB 'at import' and frees it in 'the call', which allocates ``call_mib``."""
    import subprocess
    import sys

    from autograder.grading.children import MemoryMeter

    child = subprocess.Popen([sys.executable, "-c", PHASES_CHILD.replace("@CALL@", str(call_mib)).replace(
        "@BALLAST@", str(ballast_mib))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        meter = None
        for phase in ("warm", "imported", "done"):
            assert child.stdout.readline().strip() == phase
            meter = meter or MemoryMeter(None, child.pid)
            child.stdin.write("next\n")
            child.stdin.flush()
        grown = meter.grown()  # the child waits on stdin: alive
    finally:
        child.kill()
        child.wait()
    assert meter.by == "process" and grown is not None, grown
    return grown


def test_without_a_cgroup_what_the_call_allocates_counts():
    assert process_figure(64) > 50 << 20


def test_without_a_cgroup_a_ballast_taken_at_import_and_freed_in_the_call_counts():
    """Issue 23, finding 5: the call's net growth is small (64 MiB built where 128 MiB were freed); what was
    allocated from the meter's start is not."""
    assert process_figure(64, ballast_mib=128) > 110 << 20


def test_without_a_cgroup_what_the_warm_up_freed_does_not_count():
    """The parent resets the child's peak when the meter starts: the warm-up's transient memory is not the call's."""
    assert process_figure(0) < 16 << 20


def test_closing_retires_every_child_and_keeps_what_they_printed(tmp_path):
    student = handle(tmp_path)
    student.call("attention.causal_mask", 4)
    student.call("mha.MultiHeadAttention", init={"args": [8, 2]}, mode="oracle")
    student.close()
    assert all(child.closed for child in student.spawned) and len(student.output) == 2 and not student.children


# --- several calls in one request (student.call_many) --------------------------------------------

def each_call(script):
    """A stand-in's script for a batch: ``script`` answers each call (a request with that call's ``args``), and a
    request of one call alone."""
    def batch(request):
        if "calls" not in request:
            return script(request)
        answers = [dict({"forbidden": [], "record": request["record"]}, **script(dict(request, args=args)))
                   for args in request["calls"]]
        return {"ok": True, "value": {"calls": answers}}
    return batch


def echo(request):
    return {"ok": True, "value": {"result": request["args"][0] * 10}}


def test_a_batch_goes_to_the_child_as_one_request_and_comes_back_in_order(tmp_path):
    student = handle(tmp_path, script=each_call(echo))
    got = student.call_many("attention.count", [(1,), (2,), (3,)], kwargs={"k": 1})
    sent = [r for r in requests(student) if "import" not in r]
    assert len(sent) == 1 and sent[0]["calls"] == [[1], [2], [3]] and sent[0]["kwargs"] == {"k": 1}
    assert [reply.result for reply in got] == [10, 20, 30]


def test_an_error_in_call_2_of_3_is_that_calls_student_error_returned_not_raised(tmp_path):
    def script(request):
        return fails("refused 2")(request) if request["args"] == [2] else echo(request)

    student = handle(tmp_path, script=each_call(script))
    got = student.call_many("attention.count", [(1,), (2,), (3,)])
    assert [type(item) for item in got] == [Reply, StudentError, Reply] and got[2].result == 30
    assert replied(got[0]) is got[0]
    with pytest.raises(StudentError) as raised:
        replied(got[1])
    assert raised.value is got[1]
    with pytest.raises(StudentError) as alone:
        student.call("attention.count", 2)
    assert str(got[1]) == str(alone.value), "what call would raise"
    assert isinstance(student.try_call_many("attention.count", [(1,), (2,)])[1], Failure)


def test_a_forbidden_op_in_one_call_is_a_rule_violation_for_that_call_alone(tmp_path):
    def script(request):
        return dict(echo(request), forbidden=[SDPA] if request["args"] == [2] else [])

    got = handle(tmp_path, script=each_call(script)).call_many("attention.count", [(1,), (2,), (3,)])
    assert [type(item) for item in got] == [Reply, RuleViolation, Reply]
    assert "from-scratch rule forbids" in str(got[1])


def test_a_call_without_the_requests_marker_is_a_rule_violation_for_that_call_alone(tmp_path):
    def script(request):
        return dict(echo(request), record=None) if request["args"] == [1] else echo(request)

    got = handle(tmp_path, script=each_call(script)).call_many("attention.count", [(1,), (2,)])
    assert isinstance(got[0], RuleViolation) and RECORD_MISSING in str(got[0]) and isinstance(got[1], Reply)


def test_a_batch_has_the_cpu_time_of_its_calls(tmp_path):
    student = handle(tmp_path, script=each_call(echo))
    student.call_many("attention.count", [(1,)] * 5)
    assert student.spawned[0].timeout == 5 * student.limits.call_seconds


def test_a_batch_that_times_out_fails_every_call_and_its_target_is_not_called_again(tmp_path):
    student = handle(tmp_path, script=times_out("attention.count"))
    got = student.try_call_many("attention.count", [(1,), (2,)])
    limit = f"{student.limits.call_seconds:g}"
    assert [f.message for f in got] == [f"count did not finish within {limit} s of CPU time (an infinite loop?)"] * 2
    assert student.timeouts == 1 and student.spawned[0].closed
    asked = len(requests(student))
    assert student.try_call("attention.count", 1).message.startswith("not run: count timed out")
    assert len(requests(student)) == asked


def test_a_child_that_dies_mid_batch_fails_every_call_and_the_next_runs_in_a_fresh_child(tmp_path):
    def script(request):
        if "calls" in request:
            raise ChildDied("was killed by signal 9")
        return ok(request)

    student = handle(tmp_path, script=script)
    got = student.try_call_many("attention.count", [(1,), (2,), (3,)])
    assert {f.message for f in got} == {"the submission's process was killed by signal 9 while running count"}
    assert student.call("attention.count", 1).result == 1 and len(student.spawned) == 2


def test_a_child_that_answers_another_number_of_calls_sent_a_malformed_reply(tmp_path):
    def script(request):
        return {"ok": True, "value": {"calls": each_call(echo)(request)["value"]["calls"][:2]}}

    student = handle(tmp_path, script=script)
    got = student.try_call_many("attention.count", [(1,), (2,), (3,)])
    assert [f.message for f in got] == [
        "the submission's process sent a malformed reply (2 answers to 3 calls) while running count"] * 3
    assert student.spawned[0].closed


def test_a_batch_answered_as_one_call_is_a_malformed_reply_not_a_grader_error(tmp_path):
    """tests/heavy/hostile/stale_reply: the student's code sends a reply of its own, numbered as the request."""
    student = handle(tmp_path, script=ok)
    got = student.try_call_many("attention.count", [(1,), (2,)])
    assert [f.message for f in got] == [
        "the submission's process sent a malformed reply (0 answers to 2 calls) while running count"] * 2


def test_a_blocked_target_fails_every_call_of_a_batch_without_asking_the_child(tmp_path):
    student = handle(tmp_path, script=times_out("attention.count"))
    student.try_call("attention.count", 1)
    asked = len(requests(student))
    got = student.try_call_many("attention.count", [(1,), (2,)])
    assert all(f.message.startswith("not run: count timed out") for f in got) and len(requests(student)) == asked


# --- a measured call that can only fail as it did (autograder/grading/raises.py) --------------------

NOT_WRITTEN = '"""attention.py without the extra credit."""\nimport torch\n\n\ndef causal_mask(seq_len, device=None):\n    return torch.ones(seq_len, seq_len, dtype=torch.bool).tril()\n'
MISSING = "module 'attention' has no attribute 'tiled_attention'"


def never_written(tmp_path, source=NOT_WRITTEN):
    """A handle whose attention.py is ``source``; its stand-in child says tiled_attention is missing."""
    def script(request):
        if request["target"] == "attention.tiled_attention":
            return fails(MISSING, type="AttributeError")(request)
        return ok(request)

    student = handle(tmp_path, script=script)
    (tmp_path / "staged" / "attention.py").write_text(source)
    return student


def test_a_measured_call_of_a_function_never_written_fails_as_before_with_no_fresh_child(tmp_path):
    student = never_written(tmp_path)
    first = student.try_call("attention.tiled_attention", 1, 2, 3)
    measured = student.try_call("attention.tiled_attention", 1, 2, 3, measure_memory=True)
    assert measured.message == first.message == f"AttributeError: {MISSING} (while calling attention.tiled_attention)"
    assert len(student.spawned) == 1, "the call could only fail so: no child was started for it"


def test_a_measured_call_gets_a_fresh_child_when_the_source_may_define_the_function(tmp_path):
    student = never_written(tmp_path, NOT_WRITTEN + "\ntiled_attention = causal_mask\n")
    student.try_call("attention.tiled_attention", 1, 2, 3)
    student.try_call("attention.tiled_attention", 1, 2, 3, measure_memory=True)
    assert len(student.spawned) == 2, "the child's word alone proves nothing: the measured call ran in a fresh child"


def test_a_measured_call_never_tried_before_gets_a_fresh_child(tmp_path):
    student = never_written(tmp_path)
    student.try_call("attention.causal_mask", 4)
    student.try_call("attention.tiled_attention", 1, 2, 3, measure_memory=True)
    assert len(student.spawned) == 2, "the source's proof alone is not evidence of what the call raises"
