"""Part 7: the from-scratch rule (no built-in attention), read from the source and watched at run time."""
import os

import pytest

from autograder.grading.compare import fail
from autograder.rules import forbidden_calls
from cases import AttentionCase, MHACase

pytestmark = pytest.mark.part("rules")


def _require_written(student, name, target, *args, **request):
    """The rule's points are for code the grader can check: untouched stubs trivially follow it, and a file
    that does not import cannot be checked, and code that hides what it calls is refused, in the refusal's own
    words (it imports; "does not import" would contradict it). A crash while the code runs is no violation."""
    outcome = student.try_call(target, *args, **request)
    if hasattr(outcome, "raised") and outcome.raised("NotImplementedError"):
        fail(name, f"not written yet: {outcome.message.splitlines()[0]}", "the rule's points are for the code you write")
    if hasattr(outcome, "raised") and outcome.rule and not outcome.forbidden:  # refused: code that hides what it calls
        fail(name, outcome.message.splitlines()[0], "the lab asks you to build attention yourself, in code the grader can read")
    if hasattr(outcome, "raised") and not outcome.rule and "importing" in outcome.message:
        fail(name, f"cannot be checked, the file does not import: {outcome.message.splitlines()[0]}",
             "the rule's points are for code the grader can import; fix that error first")
    return outcome


def _check_source(staged, name):
    path = os.path.join(staged.dir, name)
    if not os.path.exists(path):
        fail(name, "the file is missing, so the rule cannot be checked")
    try:
        violations = forbidden_calls(path)
    except SyntaxError as err:
        fail(name, f"the file does not parse (line {err.lineno}: {err.msg})")
    except ValueError as err:  # bytes Python would not read: the reader's one line says which
        fail(name, str(err))
    if violations:
        # the scanner's message starts with "file, line N: ", and the case already names the file
        listed = "; ".join(f"line {v.line}: {v.message.removeprefix(f'{v.filename}, line {v.line}: ')}"
                           for v in violations)
        fail(name, f"uses a built-in the lab forbids: {listed}",
             "build attention from matmul/softmax/masked_fill; the parts that call it lose their points too")


@pytest.mark.points(2)
@pytest.mark.public
def test_attention_py_is_written_from_scratch(student, staged):
    """Rules: attention.py does not use torch's built-in attention"""
    q, k, v, mask = AttentionCase((2,), 4, 4, 8, 8, seed=62).inputs()
    _require_written(student, "attention.py", "attention.scaled_dot_product_attention", q, k, v, mask)
    _check_source(staged, "attention.py")


@pytest.mark.points(2)
@pytest.mark.public
def test_mha_py_is_written_from_scratch(student, staged):
    """Rules: mha.py does not use torch's built-in attention or nn.MultiheadAttention"""
    query, key, value, mask = MHACase(seed=63).inputs()
    _require_written(student, "mha.py", "mha.MultiHeadAttention", query, key, value, mask, init={"args": [16, 4]},
                     mode="oracle")
    _check_source(staged, "mha.py")


@pytest.mark.points(1)
@pytest.mark.public
def test_no_builtin_attention_at_run_time(student, reference):
    """Rules: no built-in attention is called while your code runs"""
    q, k, v, mask = AttentionCase((2,), 4, 4, 8, 8, mask="causal", seed=60).inputs()
    case = MHACase(seed=61)
    _, state = case.state(reference[1])
    query, key, value, mha_mask = case.inputs()
    used = set()
    # A call that raises still reports what it called before raising: only that evidence fails the rule,
    # never the crash itself (the parts that crashed lose their own points).
    for target, args, request in (
            ("attention.scaled_dot_product_attention", (q, k, v, mask), {}),
            ("mha.MultiHeadAttention", (query, key, value, mha_mask), {"init": {"args": [16, 4]}, "state": state})):
        outcome = _require_written(student, target.split(".")[0] + ".py", target, *args, **request)
        used |= set(outcome.forbidden)
    if used:
        fail("running scaled_dot_product_attention and MultiHeadAttention", f"called {', '.join(sorted(used))}",
             "the lab asks you to build attention yourself")
