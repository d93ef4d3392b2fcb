"""Part 7: the from-scratch rule (no built-in attention), read from the source and watched at run time."""
import ast
import os

import pytest
import torch

from autograder.lab import fail, forbidden_calls, read_source
from cases import AttentionCase, MHACase

pytestmark = pytest.mark.part("rules")
SDPA_RUNS = ("scaled_dot_product_attention",)  # what each rule call runs of its own file
MHA_RUNS = ("MultiHeadAttention.__init__", "MultiHeadAttention.forward", "MultiHeadAttention.split_heads",
            "MultiHeadAttention.merge_heads")


def _require_written(student, staged, name, target, *args, runs, **request):
    """The rule's points are for code the grader can check it on: an empty file and untouched stubs trivially follow
    the rule, and so does a file that does not define the function, a stub that raises another exception, and a
    file that does not import cannot be checked.
    So the call must give a tensor (alone or first of a pair), or, where it fails, none of the functions it
    ``runs`` ("f" or "Class.method" of the file ``name``) may raise whatever it is given: a written function
    that crashes keeps the rule's points (its own tests charge the crash). A call that used or hid a forbidden
    op comes back for the caller to judge."""
    if _holds_no_code(os.path.join(staged.dir, name)):
        fail(name, "not written yet: the file holds no code (it is empty)", "the rule's points are for the code you write")
    outcome = student.try_call(target, *args, **request)
    if getattr(outcome, "rule", False):
        return outcome
    module, attr = target.split(".", 1)
    if hasattr(outcome, "raised") and f"module '{module}' has no attribute '{attr}'" in outcome.message:
        fail(name, f"not written yet: it does not define {attr}", "the rule's points are for the code you write")
    if hasattr(outcome, "raised") and outcome.raised("NotImplementedError"):
        fail(name, f"not written yet: {outcome.message.splitlines()[0]}", "the rule's points are for the code you write")
    if hasattr(outcome, "raised") and "importing" in outcome.message:
        fail(name, f"cannot be checked, the file does not import: {outcome.message.splitlines()[0]}",
             "the rule's points are for code the grader can import; fix that error first")
    if hasattr(outcome, "raised"):
        stub = _always_raises(os.path.join(staged.dir, name), runs)
        if stub:
            fail(name, f"not written yet: {stub} raises whatever it is given (a raise at the top of its body)",
                 "the rule's points are for the code you write")
    elif not isinstance(outcome.result[0] if isinstance(outcome.result, (tuple, list)) and outcome.result
                        else outcome.result, torch.Tensor):
        fail(name, f"not written yet: {target.split('.', 1)[1]} returned no tensor",
             "the rule's points are for the code you write")
    return outcome


def _holds_no_code(path):
    """Whether the file at ``path`` (read here, never run) holds no statement but a docstring: a 0-byte file, or
    comments only. A file that is missing, unreadable or does not parse is the import's and the scanner's to report."""
    try:
        body = ast.parse(read_source(path)).body
    except (OSError, SyntaxError, ValueError):
        return False
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def _always_raises(path, names):
    """The first of ``names`` whose body, in the file at ``path`` (read here, never run), raises at its top
    level, so on every call that reaches it; None if none does."""
    try:
        tree = ast.parse(read_source(path))
    except (OSError, SyntaxError, ValueError):
        return None
    found = {}  # the last definition of a name wins, as when the file runs
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{item.name}": item for item in node.body
                          if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))})
    return next((name for name in names if name in found and any(isinstance(statement, ast.Raise)
                                                                  for statement in found[name].body)), None)


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
        if any(v.kind == "builtin" for v in violations):
            fail(name, f"uses a built-in the lab forbids: {listed}",
                 "build attention from matmul/softmax/masked_fill; the parts that call it lose their points too")
        fail(name, f"is refused by the from-scratch rule, so it is not run: {listed}",
             "write it in the part of Python the grader can check (README.md, section 5); every test that runs "
             "the file loses its points too")


@pytest.mark.points(2)
@pytest.mark.public
def test_attention_py_is_written_from_scratch(student, staged):
    """Rules: attention.py does not use torch's built-in attention"""
    q, k, v, mask = AttentionCase((2,), 4, 4, 8, 8, seed=62).inputs()
    _require_written(student, staged, "attention.py", "attention.scaled_dot_product_attention", q, k, v, mask,
                     runs=SDPA_RUNS)
    _check_source(staged, "attention.py")


@pytest.mark.points(2)
@pytest.mark.public
def test_mha_py_is_written_from_scratch(student, staged):
    """Rules: mha.py does not use torch's built-in attention or nn.MultiheadAttention"""
    query, key, value, mask = MHACase(seed=63).inputs()
    _require_written(student, staged, "mha.py", "mha.MultiHeadAttention", query, key, value, mask,
                     init={"args": [16, 4]}, mode="oracle", runs=MHA_RUNS)
    _check_source(staged, "mha.py")


@pytest.mark.points(1)
@pytest.mark.public
def test_no_builtin_attention_at_run_time(student, staged, reference):
    """Rules: no built-in attention is called while your code runs"""
    q, k, v, mask = AttentionCase((2,), 4, 4, 8, 8, mask="causal", seed=60).inputs()
    case = MHACase(seed=61)
    _, state = case.state(reference[1])
    query, key, value, mha_mask = case.inputs()
    used = set()
    # A call that raises still reports what it called before raising: only that evidence fails the rule,
    # never the crash of written code (the parts that crashed lose their own points).
    for target, args, request in (
            ("attention.scaled_dot_product_attention", (q, k, v, mask), {"runs": SDPA_RUNS}),
            ("mha.MultiHeadAttention", (query, key, value, mha_mask),
             {"init": {"args": [16, 4]}, "state": state, "runs": MHA_RUNS})):
        outcome = _require_written(student, staged, target.split(".")[0] + ".py", target, *args, **request)
        if getattr(outcome, "rule", False) and not outcome.forbidden:  # code that hides what it calls
            fail(f"running {target.split('.', 1)[1]}", outcome.message.splitlines()[0],
                 "the lab asks you to build attention yourself, in code the grader can read")
        used |= set(outcome.forbidden)
    if used:
        fail("running scaled_dot_product_attention and MultiHeadAttention", f"called {', '.join(sorted(used))}",
             "the lab asks you to build attention yourself")
