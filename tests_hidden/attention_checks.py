"""Shared checks of scaled_dot_product_attention against the reference (used by several parts), and the
retry of MultiHeadAttention on the lab's lower parts (used by the MHA forward and step tests)."""
import ast
import functools
import os

import torch

from autograder.lab import (ATTENTION_STOOD_IN, CONSTRUCTION_STOOD_IN, CONTRACT, HEADS_STOOD_IN, Failure, RuleViolation, StudentError, attention_properties, calls_differ,
                            catalogue, diagnosed, expect_close, expect_pair, read_source, scores_off)
from cases import AttentionCase
from parts import LENT_METHODS

HINTS = {
    "none": "scores = Q K^T / sqrt(d_k) with d_k = query.size(-1); softmax over the keys (dim=-1); output = weights @ V",
    "causal": "blocked scores must be -inf (or very negative) BEFORE the softmax; True in a bool mask means 'may attend'",
    "padding": "the (B, 1, 1, T_k) mask broadcasts over heads and queries; True means 'may attend'",
    "random": "the mask is broadcast to the scores as given; True (or nonzero) means 'may attend'",
}


def sdpa_expected(reference, case):
    q, k, v, mask = case.inputs()
    return (q, k, v, mask), reference[0].scaled_dot_product_attention(q, k, v, mask)


SDPA = "attention.scaled_dot_product_attention"


def other_ranks(case):
    """The ranks to try ``case`` at besides its own: 4-D first (the layout of attention inside an MHA), then 3-D."""
    return [rank for rank in (4, 3) if rank != case.native_rank()]


def check_sdpa(student, reference, case, target=SDPA, float32_ok=False, any_rank=True, **request):
    """Call the student's attention on ``case`` and compare weights and output with the reference; return the
    reply, with the case it answered as ``reply.case``.
    ``float32_ok``: a float64 result that is only float32-accurate passes (the test is about something else).
    ``any_rank``: the test is about something other than leading dims, so it passes when the code is right on
    the same inputs at 3-D or 4-D (the layout test charges a fixed rank, once). Without it (a layout test), a
    failure that another rank would pass is named fixed_leading_dims."""
    try:
        return _check_sdpa_at(student, reference, case, target, float32_ok, request)
    except RuleViolation:
        raise
    except StudentError as error:
        for rank in other_ranks(case):
            try:
                reply = _check_sdpa_at(student, reference, case.at_rank(rank), target, float32_ok, request)
            except StudentError:
                continue
            if any_rank:
                return reply
            raise StudentError(f"{error.unnamed}\n  (the same inputs as {rank}-D tensors, "
                               f"{case.at_rank(rank).describe().split(' with ', 1)[1]}, give the right result)",
                               error.figure).named(catalogue.FIXED_LEADING_DIMS) from None
        raise


def _check_sdpa_at(student, reference, case, target, float32_ok, request):
    (q, k, v, mask), (out, weights) = sdpa_expected(reference, case)
    reply = student.call(target, q, k, v, mask, **request)
    got_out, got_weights = expect_pair(reply.result, case.describe(), inputs={"query": q, "key": k, "value": v})
    hint = HINTS[case.mask if case.mask_dtype == torch.bool else "random"]
    if case.mask != "none" and case.mask_dtype != torch.bool:
        hint = "a numeric mask means nonzero = may attend, 0 = blocked (it is not added to the scores)"
    try:
        with diagnosed("sdpa", (got_out, got_weights), q, k, v, mask):
            expect_close(got_weights, weights, case.describe(), "weights", hint, mask=mask, float32_ok=float32_ok)
            expect_close(got_out, out, case.describe(), "output", hint, float32_ok=float32_ok)
    except StudentError as error:
        if error.mistake is not None and error.mistake.name == "numeric_mask_ignored":
            raise _if_bool_ignored_too(student, target, request, (q, k, v, mask != 0), error) from None
        if error.mistake is None:
            finding = measured(student, target, request, (q, k, v, mask), (got_out, got_weights))
            if finding:
                raise with_hint(error, finding) from None
        raise
    reply.case = case
    return reply


def measured(student, target, request, inputs, result):
    """The property of the student's own ``result`` on ``inputs`` that failed, in a sentence, or None: the same
    call again gives another result (randomness), else attention_properties (the weights a distribution, no
    weight on a blocked key, output = weights @ value), else how the weights depart from a softmax of
    Q K^T / sqrt(d_k) (scores_off: the scale, or scores made of something else)."""
    again = student.try_call(target, *inputs, **request)
    if not isinstance(again, Failure):
        random = calls_differ(result, again.result)
        if random:
            return random
    output, weights = result
    query, key, value, mask = inputs
    return attention_properties(output, weights, value, mask) or scores_off(weights, query, key, mask)


def with_hint(error, finding):
    """The same failure with its hint replaced by a measured property that failed."""
    return StudentError(f"{error.unnamed}\n  hint: {finding}", error.figure, unnamed=error.unnamed)


def handled_rank(student, case, target=SDPA):
    """``case`` at the first rank (its own, then other_ranks) where the student's code returns a pair of
    tensors shaped (output, weights): the tests of other properties (dtypes, stability, gradients, in place)
    run there, so a fixed rank is charged once, by the layout test."""
    for candidate in [case, *(case.at_rank(rank) for rank in other_ranks(case))]:
        q, k, v, mask = candidate.inputs()
        reply = student.try_call(target, q, k, v, mask)
        result = None if isinstance(reply, Failure) else reply.result
        if (isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)
                and tuple(result[0].shape) == (*q.shape[:-1], v.size(-1))
                and tuple(result[1].shape) == (*q.shape[:-1], k.size(-2))):
            return candidate
    return case


def _if_bool_ignored_too(student, target, request, inputs, error):
    """A numeric mask ignored: ask again with the same mask as bool, and say "every mask" if that is ignored too."""
    again = student.try_call(target, *inputs, **request)
    if not isinstance(again, Failure) and isinstance(again.result, (tuple, list)) and len(again.result) == 2:
        if catalogue.diagnose("sdpa", tuple(again.result), *inputs) is catalogue.MASK_IGNORED:
            return error.named(catalogue.MASK_IGNORED)
    return error


# --- MultiHeadAttention on the lab's lower parts -------------------------------------------------
# The lab's order below MHA's forward and step: attention, construction, head split/merge. A test of those
# runs again on the lab's own lower parts when it fails on the student's, so a bug below is charged once,
# by its own part (one defect, one charge); every rung still runs the student's forward (or step).

HELPER_CASE = AttentionCase((2, 4), 5, 5, 4, 4, mask="causal", seed=95)  # the per-head shapes MHA attends with
MHA_TARGET = "mha.MultiHeadAttention"
LOWER_PARTS = ("attention", "construction", "heads")
STOOD_IN = {"attention": ATTENTION_STOOD_IN, "construction": CONSTRUCTION_STOOD_IN, "heads": HEADS_STOOD_IN}  # notes


def rungs(module, parts=LOWER_PARTS):
    """``[(part, request fields)]``: each rung lends one more of the lab's lower ``parts``, in the lab's order, to a
    student's MultiHeadAttention like ``module`` (the reference's, built for the test's sizes). Every rung runs
    in a child holding the lab's attention; only the heads rung needs a "below" child (the lent methods)."""
    sizes = {name: getattr(module, name) for name in ("d_model", "n_heads", "d_k")}
    layers = {name: [layer.in_features, layer.out_features, layer.bias is not None]
              for name, layer in module.named_children() if isinstance(layer, torch.nn.Linear)}
    where, ladder = {"mode": "oracle"}, []
    for part in parts:
        if part == "construction":
            where = {**where, "lend": {"sizes": sizes, "layers": layers}}
        elif part == "heads":
            where = {"mode": "below", "lend": {**where["lend"], "methods": list(LENT_METHODS[MHA_TARGET])}}
        ladder.append((part, where))
    return ladder


def with_parts_below(compare, request, student, reference, module, parts=LOWER_PARTS, own=None, runs=None):
    """Run ``compare(where)`` (``where``: request fields for ``student.call``) on the student's own parts
    (``own``, default mode "student"); if it fails, on all of the lab's lower ``parts`` (``rungs``): when that
    passes, pass with a note naming the lowest rung that passes, whose part charges the bug. The first rung,
    the common case (attention's bug), is tried first. When the top rung fails too and mha.py imports a helper
    of attention.py that is wrong on its own, the failure says so, naming it.

    ``runs``: the student's MultiHeadAttention method every rung's ``compare`` needs a return from (no rung
    lends it). When the parent proves from the source that it can only raise (never written, or the stub:
    ``Student.method_only_raises``), no rung can pass, and none is tried: the failure is the one above."""
    try:
        return compare(own or {"mode": "student"})
    except StudentError as own_failure:
        failure = own_failure
    if runs is not None and runs not in LENT_METHODS[MHA_TARGET] and student.method_only_raises(MHA_TARGET, runs):
        raise (_helper_at_fault(student, reference) if "attention" in parts else None) or failure from None
    ladder = rungs(module, parts)
    if _passes(compare, ladder[0][1]):
        return _noted(request, ladder[0][0])
    if len(ladder) == 1 or not _passes(compare, ladder[-1][1]):
        raise (_helper_at_fault(student, reference) if "attention" in parts else None) or failure from None
    for part, where in ladder[1:-1]:
        if _passes(compare, where):
            return _noted(request, part)
    _noted(request, ladder[-1][0])


def _passes(compare, where):
    try:
        compare(where)
    except StudentError:
        return False
    return True


def _noted(request, part):
    request.node.user_properties.append(("note", STOOD_IN[part]))


def attention_helpers(folder):
    """``((name, "class" | "function"), ...)``: what mha.py takes from its own attention.py beyond the contract's
    names, read here from both files' text (never run). Unreadable files: none."""
    try:
        return _helpers_in(read_source(os.path.join(folder, "mha.py")), read_source(os.path.join(folder, "attention.py")))
    except (OSError, ValueError):
        return ()


@functools.lru_cache(maxsize=8)  # by the files' text: every failed MHA test of a submission asks again
def _helpers_in(mha_text, attention_text):
    try:
        mha, attention = ast.parse(mha_text), ast.parse(attention_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    kinds = {node.name: "class" if isinstance(node, ast.ClassDef) else "function" for node in attention.body
             if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    aliases = {a.asname or a.name for node in ast.walk(mha) if isinstance(node, ast.Import)
               for a in node.names if a.name == "attention"}
    names = []
    for node in ast.walk(mha):
        if isinstance(node, ast.ImportFrom) and node.module == "attention" and not node.level:
            for alias in node.names:
                names += [n for n in kinds if not n.startswith("_")] if alias.name == "*" else [alias.name]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            names.append(node.attr)
    return tuple((name, kinds[name]) for name in dict.fromkeys(names) if name in kinds and name not in CONTRACT)


def _helper_at_fault(student, reference):
    """The failure to report when a helper mha.py imports from attention.py gives wrong attention on its own
    (built without arguments if a class, called on per-head inputs), or None. A helper that does not take
    (query, key, value, mask) or does not return a pair is something else: it is not judged."""
    helpers = attention_helpers(student.staged.dir)
    if not helpers:
        return None
    (q, k, v, mask), (out, weights) = sdpa_expected(reference, HELPER_CASE)
    for name, kind in helpers:
        reply = student.try_call(f"attention.{name}", q, k, v, mask, **({"init": {"args": []}} if kind == "class" else {}))
        got = None if isinstance(reply, Failure) else reply.result
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
            continue
        label = f"{name}{'()' if kind == 'class' else ''}(query, key, value, mask) on {HELPER_CASE.describe().split(' with ', 1)[1]}"
        try:
            with diagnosed("sdpa", tuple(got), q, k, v, mask):
                expect_close(got[1], weights, label, "weights", HINTS["causal"], mask=mask)
                expect_close(got[0], out, label, "output", HINTS["causal"])
        except StudentError as error:
            return StudentError(
                f"MultiHeadAttention fails because of {name}, which your mha.py imports from your attention.py: it "
                f"computes attention wrongly on its own (below). The retry of MultiHeadAttention on an attention built "
                f"from torch replaces only {', '.join(CONTRACT)}, so {name}'s bug costs MHA points too: fix {name}.\n"
                f"{error}", error.figure, error.mistake)
    return None
