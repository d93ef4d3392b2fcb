"""Every field of a child's reply is a claim: the trusted side checks them.

A stand-in child answers the way a submission that rewrote the probes could: these tests show
what the grader's handle (autograder/grading/student.py) makes of forged op records, forged exception
ancestry and a file that hides its calls, without starting a sandbox.
"""
from types import SimpleNamespace

import pytest

from autograder.containment import replies
from autograder.config import Limits
from autograder.grading.student import RECORD_MISSING, RuleViolation, Student, exception_mro, source_classes
from variant_builder import SOLUTION, without_markers

SDPA = "torch.nn.functional.scaled_dot_product_attention"
MHA_CLASS = "torch.nn.MultiheadAttention"


class ForgingChild:
    """Answers every request with ``answer(request)``; echoes the marker unless told not to."""

    def __init__(self, answer, echo=True, import_forbidden=()):
        self.answer, self.echo, self.import_forbidden, self.dead = answer, echo, list(import_forbidden), None
        self.requests = []

    def call(self, request, timeout=None, deadline=None, cpu_left=None):
        """As ``sandbox.Child.call`` returns it: numbered, and checked by ``replies``."""
        self.requests.append(request)
        if "import" in request:
            reply = {"ok": True, "value": {}, "forbidden": self.import_forbidden if request["import"] == "mha" else []}
        else:
            reply = self.answer(request)
        if self.echo:
            reply.setdefault("record", request.get("record"))
        return replies.check(dict(reply, seq=len(self.requests)))

    def close(self):
        pass

    output_dropped = 0

    def output_text(self):
        return ""


def handle(tmp_path, child, attention_extra="", mha_extra=""):
    """A Student over the reference's files (plus extras), talking to ``child``."""
    staged = tmp_path / "staged"
    staged.mkdir()
    for name, extra in (("attention.py", attention_extra), ("mha.py", mha_extra)):
        (staged / name).write_text(without_markers((SOLUTION / name).read_text()) + extra)
    student = Student(zygote=None, staged=SimpleNamespace(dir=str(staged)), limits=Limits())

    def fake_child(mode):
        entry = student.children.setdefault(mode, {"child": child, "imported": set()})
        return entry["child"]

    student._child = fake_child
    return student


def ok(request):
    return {"ok": True, "value": {"result": 1}, "forbidden": []}


def test_a_record_without_the_parents_marker_is_a_violation(tmp_path):
    student = handle(tmp_path, ForgingChild(ok, echo=False))
    with pytest.raises(RuleViolation, match="cannot be checked"):
        student.call("attention.causal_mask", 4)


def test_a_record_naming_what_no_probe_records_is_a_violation(tmp_path):
    student = handle(tmp_path, ForgingChild(lambda r: {"ok": True, "value": {}, "forbidden": ["\x1b]8;;x"]}))
    outcome = student.try_call("attention.causal_mask", 4)
    assert outcome.rule and RECORD_MISSING in outcome.forbidden


def test_a_refused_builtin_fails_the_rule_even_under_a_clean_record(tmp_path):
    """The dispatcher refused the kernel (probes.ForbiddenCall) while a forged record claims nothing ran."""
    refused = {"type": "ForbiddenCall", "mro": [], "where": None, "phase": "calling x",
               "message": f"{SDPA} is not allowed in this lab: write attention yourself"}
    student = handle(tmp_path, ForgingChild(lambda r: {"ok": False, "forbidden": [], "error": refused}))
    outcome = student.try_call("attention.scaled_dot_product_attention", 1)
    assert outcome.rule and outcome.forbidden == [SDPA] and "from-scratch rule forbids" in outcome.message


def test_the_parent_reads_the_error_the_child_raises_for_a_forbidden_builtin():
    from autograder.containment import probes
    from autograder.grading.student import FORBIDDEN_ERROR

    assert FORBIDDEN_ERROR == probes.ForbiddenCall.__name__
    assert probes.refusal(SDPA).startswith(f"{SDPA} ")


def test_an_honest_record_passes(tmp_path):
    reply = handle(tmp_path, ForgingChild(ok)).call("attention.causal_mask", 4)
    assert reply.result == 1 and reply.forbidden == []


def test_ops_recorded_while_importing_count_in_every_call_of_that_module_only(tmp_path):
    student = handle(tmp_path, ForgingChild(ok, import_forbidden=[MHA_CLASS]))
    assert student.call("attention.causal_mask", 4).forbidden == []
    with pytest.raises(RuleViolation, match="MultiheadAttention"):
        student.call("mha.MultiHeadAttention", init={"args": [16, 4]})
    with pytest.raises(RuleViolation, match="MultiheadAttention"):
        student.call("mha.MultiHeadAttention", init={"args": [8, 2]})  # not only the first call
    assert student.call("attention.causal_mask", 5).forbidden == [], "attention.py did not build it"


def test_a_file_that_hides_its_calls_fails_every_call_that_runs_it(tmp_path):
    hidden = "\nimport torch as _t\nf = getattr(_t, 'soft' + 'max')\n"
    student = handle(tmp_path, ForgingChild(ok), attention_extra=hidden)
    for target in ("attention.causal_mask", "attention.padding_mask"):
        with pytest.raises(RuleViolation, match="not graded"):
            student.call(target, 4)
    with pytest.raises(RuleViolation, match="not graded"):  # mha.py runs attention.py too
        student.call("mha.MultiHeadAttention", init={"args": [16, 4]})
    assert student.call("mha.MultiHeadAttention", init={"args": [16, 4]}, mode="oracle").result == 1, (
        "on top of the grader's own attention, mha.py is graded as usual")


def raising(type_name, claimed_mro):
    return lambda request: {"ok": False, "forbidden": [], "error": {
        "type": type_name, "mro": claimed_mro, "message": "d_model=16, n_heads=5", "where": None, "phase": "x"}}


def test_exception_ancestry_comes_from_the_source_not_the_child(tmp_path):
    # The file says DimensionMismatchError is an Exception; the child claims it is a ValueError.
    student = handle(tmp_path, ForgingChild(raising("DimensionMismatchError", ["DimensionMismatchError", "ValueError"])),
                     mha_extra="\nclass DimensionMismatchError(Exception):\n    pass\n")
    outcome = student.try_call("mha.MultiHeadAttention", init={"args": [16, 5]}, mode="oracle")
    assert outcome.raised("DimensionMismatchError") and not outcome.raised("ValueError")


def test_the_given_exception_class_is_a_value_error(tmp_path):
    student = handle(tmp_path, ForgingChild(raising("DimensionMismatchError", [])))
    outcome = student.try_call("mha.MultiHeadAttention", init={"args": [16, 5]}, mode="oracle")
    assert outcome.raised("DimensionMismatchError") and outcome.raised("ValueError") and outcome.raised("Exception")


def test_builtin_exceptions_keep_pythons_ancestry():
    assert exception_mro("ZeroDivisionError", {})[:3] == ["ZeroDivisionError", "ArithmeticError", "Exception"]
    assert exception_mro("NoSuchError", {}) == ["NoSuchError"]
    assert exception_mro("A", {"A": ["A"]}) == ["A"], "a cycle in the source must end, each class named once"


def test_source_classes_reads_the_reference():
    assert source_classes(str(SOLUTION / "mha.py"))["DimensionMismatchError"] == ["ValueError"]
