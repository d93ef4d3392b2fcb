"""Part 7: the from-scratch rule (no built-in attention), read from the source and watched at run time."""
import os

import pytest
import torch

from autograder.grading.compare import fail
from autograder.rules import forbidden_calls
from cases import AttentionCase, MHACase

pytestmark = pytest.mark.part("rules")


def _require_written(student, name, target, *args, shape, **request):
    """The rule's points are for code the grader can check it on: untouched stubs trivially follow the rule,
    and so does a stub that raises any other exception, and a file that does not import cannot be checked.
    So the call must return an output of the contract's ``shape`` (alone or first of a pair); its values are
    other tests' business. A call that used or hid a forbidden op comes back for the caller to judge."""
    outcome = student.try_call(target, *args, **request)
    if getattr(outcome, "rule", False):
        return outcome
    if hasattr(outcome, "raised") and outcome.raised("NotImplementedError"):
        fail(name, f"not written yet: {outcome.message.splitlines()[0]}", "the rule's points are for the code you write")
    if hasattr(outcome, "raised") and "importing" in outcome.message:
        fail(name, f"cannot be checked, the file does not import: {outcome.message.splitlines()[0]}",
             "the rule's points are for code the grader can import; fix that error first")
    function = target.split(".", 1)[1]
    if hasattr(outcome, "raised"):
        fail(name, f"cannot be checked, {function} gave no output on a valid call: {outcome.message.splitlines()[0]}",
             "the rule's points are for code that does the job; make the call return its output first")
    output = outcome.result[0] if isinstance(outcome.result, (tuple, list)) and outcome.result else outcome.result
    if not isinstance(output, torch.Tensor) or tuple(output.shape) != tuple(shape):
        got = f"shape {tuple(output.shape)}" if isinstance(output, torch.Tensor) else "no tensor"
        fail(name, f"cannot be checked, {function} returned {got} where the output has shape {tuple(shape)}",
             "the rule's points are for code that does the job; make the call return its output first")
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
    _require_written(student, "attention.py", "attention.scaled_dot_product_attention", q, k, v, mask,
                     shape=(*q.shape[:-1], v.shape[-1]))
    _check_source(staged, "attention.py")


@pytest.mark.points(2)
@pytest.mark.public
def test_mha_py_is_written_from_scratch(student, staged):
    """Rules: mha.py does not use torch's built-in attention or nn.MultiheadAttention"""
    query, key, value, mask = MHACase(seed=63).inputs()
    _require_written(student, "mha.py", "mha.MultiHeadAttention", query, key, value, mask, init={"args": [16, 4]},
                     mode="oracle", shape=query.shape)
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
    # What a call used fails the rule; a call that gives no output leaves nothing written to check it on.
    for target, args, request in (
            ("attention.scaled_dot_product_attention", (q, k, v, mask), {"shape": (*q.shape[:-1], v.shape[-1])}),
            ("mha.MultiHeadAttention", (query, key, value, mha_mask),
             {"init": {"args": [16, 4]}, "state": state, "shape": query.shape})):
        outcome = _require_written(student, target.split(".")[0] + ".py", target, *args, **request)
        if getattr(outcome, "rule", False) and not outcome.forbidden:  # code that hides what it calls
            fail(f"running {target.split('.', 1)[1]}", outcome.message.splitlines()[0],
                 "the lab asks you to build attention yourself, in code the grader can read")
        used |= set(outcome.forbidden)
    if used:
        fail("running scaled_dot_product_attention and MultiHeadAttention", f"called {', '.join(sorted(used))}",
             "the lab asks you to build attention yourself")
