"""`make test` predicts the grade: each mistake of issue 24, and every mutant the public tests catch, run
through the public tests (as `make test` runs them) and through the hidden grader (one batch).

For each mistake: the local output and the grade's feedback name the cause in the same words, and the
local points lost predict the grade's: in each public part, local points lost if and only if the grade
loses points in the hidden parts that public part covers. For a mutant of tests/variants/mutants.yaml
the public tests catch (it loses public points), the same prediction holds; the mutants they do not
catch are the hidden suite's to find (the public tests are a subset): they are skipped, saying so.
"""
import json
import subprocess
import sys

import pytest

from autograder.judging.catalogue import FLOAT32_IN_FLOAT64, UNSTABLE_SOFTMAX
from autograder.judging.error_hints import (INPLACE_ERROR, INPUTS_MODIFIED, INPUTS_MODIFIED_HINT, TILED_MEMORY_HINT,
                                          error_hint)
from autograder.platforms.generate import public_cases
from test_public_hints import DEVICE_IGNORED, FLOAT32_SOFTMAX, MASKED_AFTER_SOFTMAX_IN_PLACE, SYNTAX_ERROR, extra_cases
from test_public_suite import ROOT, run_public
from variant_builder import build_mutant, build_reference, load_mutants

pytestmark = pytest.mark.slow  # grades every mistake and mutant, and runs the public tests on each

# The hidden parts each public part checks a subset of (the extra-credit part, by the function it tests).
COVERS = {"part1_masks": ("masks",), "part1_attention": ("attention", "gradients"), "part2_init": ("mha_init",),
          "part2_heads": ("heads",), "part2_forward": ("mha_forward",), "extra_tiled": ("extra: tiled_attention",),
          "extra_step": ("extra: step",)}
PART_OF_CASE = {name: part for name, part, _ in public_cases()[0]} | extra_cases()
MUTANTS = {m["name"]: m for m in load_mutants()}


def line_of(mutant, text):
    """The line number, in the mutant's file, of the line that reads ``text``."""
    source = (ROOT / "solution" / mutant["file"]).read_text().replace(mutant["find"], mutant["replace"])
    source = "".join(line for line in source.splitlines(keepends=True)
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


FLOAT32_CONSTANT = {"name": "float32_constant", "file": "attention.py", "find": "/ math.sqrt(d_k)  #",
                    "replace": "/ torch.tensor(math.sqrt(d_k), dtype=torch.float32)  #"}
SWAPPED = ["the pair is swapped", "return (output, weights), in that order"]
# Files the from-scratch rule refuses (issue 31): never run, in `make test` as in the grade.
ATTENTION_REFUSED = {"name": "attention_refused", "file": "attention.py", "find": "import torch.nn as nn",
                     "replace": "import torch.nn as nn\nSOFTMAX = [torch.softmax, nn][0]"}
MHA_REFUSED = {"name": "mha_refused", "file": "mha.py", "find": "import torch.nn as nn",
               "replace": "import torch.nn as nn\nLAYERS = {'linear': nn}"}


def refusal_words(mutant, text, name):
    line = line_of(mutant, text)
    return [f"is not graded: {mutant['file']}, line {line}: the module {name} used as a value hides what is called "
            "from it", "no test that runs it counts (the from-scratch rule)"]
# issue 47: fresh mistakes, each named on both sides by the property of its own results that a probe measured
DROPOUT_LEFT_ON = {"name": "dropout_left_on", "file": "attention.py",
                   "find": "    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)",
                   "replace": "    weights = torch.softmax(scores, dim=-1) * (torch.rand_like(scores) > 0.1) / 0.9"}
PAD_COMPARED_WITH_ZERO = {"name": "pad_compared_with_zero", "file": "attention.py",
                          "find": "    keep = tokens != pad_id  # (B, T)", "replace": "    keep = tokens != 0  # (B, T)"}
FIRST_SENTENCE_PADDING = {"name": "first_sentence_padding", "file": "attention.py",
                          "find": "    keep = tokens != pad_id  # (B, T)",
                          "replace": "    keep = (tokens[:1] != pad_id).expand_as(tokens)  # (B, T)"}
SPLIT_UNPACKS_T_B = {"name": "split_unpacks_t_b", "file": "mha.py", "find": "        B, T, _ = x.shape",
                     "replace": "        T, B, _ = x.shape"}
KEY_RESHAPED_WITH_T_Q = {"name": "key_reshaped_with_t_q", "file": "mha.py",
                         "find": "        k = self.split_heads(self.w_k(key))  # (B, h, T_k, d_k)",
                         "replace": "        k = self.w_k(key).reshape(query.size(0), self.n_heads, query.size(1), -1)"}
MEASURED = {
    "dropout_left_on": (DROPOUT_LEFT_ON, ["two calls on the same inputs returned different results"]),
    "returns_scores_as_weights": (MUTANTS["returns_scores_as_weights"], ["the weights are not a distribution"]),
    "pad_compared_with_zero": (PAD_COMPARED_WITH_ZERO, ["the mask follows pad_id=0, not the pad_id="]),
    "first_sentence_padding": (FIRST_SENTENCE_PADDING, ["every sentence got the first sentence's padding"]),
    "split_unpacks_t_b": (SPLIT_UNPACKS_T_B, ["the sizes are right but in the wrong order"]),
    "causal_mask_leaks_one_step": (MUTANTS["causal_mask_leaks_one_step"], ["only positions above the diagonal differ"]),
    # a torch error in the student's code: which shapes went in, on both sides
    "key_reshaped_with_t_q": (KEY_RESHAPED_WITH_T_Q, ["RuntimeError", "the call got ("]),
}
# Hints a probe did not back, once given to these mistakes (issue 47): neither side may say them.
UNBACKED = {
    "dropout_left_on": ["subtract each row's max", "mask the scores before the softmax", "take the softmax over the keys"],
    "returns_scores_as_weights": ["fill their scores with -inf", "hint: future leak"],
    "split_unpacks_t_b": ["head i must hold features"],
    "padding_mask_polarity_flipped": ["do not squeeze"],
}
# name -> (how to build it, the words both the local output and the grade's feedback must hold)
MISTAKES = {
    "float32_softmax": (FLOAT32_SOFTMAX, [FLOAT32_IN_FLOAT64.sentence]),
    "float32_constant": (FLOAT32_CONSTANT, [FLOAT32_IN_FLOAT64.sentence]),
    "masked_fill_in_place_after_softmax": (MASKED_AFTER_SOFTMAX_IN_PLACE, [
        error_hint(INPLACE_ERROR),
        f"in-place edit: attention.py, line {line_of(MASKED_AFTER_SOFTMAX_IN_PLACE, 'weights.masked_fill_(~allowed, 0.0)')}: "
        "weights.masked_fill_(~allowed, 0.0)"]),
    "causal_mask_ignores_device": (DEVICE_IGNORED, [
        "causal_mask never uses its device argument, so the mask is made on the CPU whatever the caller asks for",
        "pass device=device to the function that creates the tensor (torch.ones(..., device=device))"]),
    "attention_syntax_error": (SYNTAX_ERROR, [
        f"SyntaxError: '(' was never closed (attention.py, line {line_of(SYNTAX_ERROR, 'd_k = query.size(-1')})"]),
    "uses_torch_sdpa": (MUTANTS["uses_torch_sdpa"], ["which the from-scratch rule forbids: this test gets no points"]),
    "extra_credit_not_defined": ("not defined", ["tiled_attention", "step"]),
    "attention_refused": (ATTENTION_REFUSED, refusal_words(ATTENTION_REFUSED, "SOFTMAX = [torch.softmax, nn][0]", "nn")),
    "mha_refused": (MHA_REFUSED, refusal_words(MHA_REFUSED, "LAYERS = {'linear': nn}", "nn")),
    "attention_returns_weights_first": (MUTANTS["attention_returns_weights_first"], SWAPPED),
    "mha_returns_weights_first": (MUTANTS["mha_returns_weights_first"], SWAPPED),
    "dimension_condition_reversed": (MUTANTS["dimension_condition_reversed"], [
        "raised DimensionMismatchError for a valid size", "check your condition (d_model % n_heads != 0)"]),
    "every_mask_ignored": (MUTANTS["every_mask_ignored"], ["ignores the mask (bool masks too): blocked keys get weight"]),
    # issue 34: public cases for what only the grade charged before
    "query_scaled_in_place": (MUTANTS["query_scaled_in_place"], [INPUTS_MODIFIED.format("query"), INPUTS_MODIFIED_HINT]),
    "bool_mask_inverted_in_place": (MUTANTS["bool_mask_inverted_in_place"], [INPUTS_MODIFIED.format("mask")]),
    "unstable_softmax": (MUTANTS["unstable_softmax"], [UNSTABLE_SOFTMAX.explain(), "while it is finite before the shift"]),
    "tiled_builds_full_matrix": (MUTANTS["tiled_builds_full_matrix"], ["so it was (at least partly) built", TILED_MEMORY_HINT]),
    "step_reprojects_the_past": (MUTANTS["step_reprojects_the_past"], [
        "w_k saw inputs of shapes", "at step 2, w_k was given an input of shape",
        "not the new token alone"]),
    **MEASURED,
}


def build_without_extra(dest):
    """The reference without tiled_attention and MultiHeadAttention.step: core files written from scratch."""
    submission = build_reference(dest)
    for file, name in [("attention.py", "tiled_attention"), ("mha.py", "step")]:
        text = (submission / file).read_text()
        start = text.rindex("\n", 0, text.index(f"def {name}(")) + 1
        end = min(i for i in (text.find("\ndef ", start + 1), text.find("\nclass ", start + 1),
                              text.find("\n    def ", start + 1), len(text)) if i != -1)
        (submission / file).write_text(text[:start] + text[end + 1:])
    return submission


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{submission: (public run, grade's results.json, grade's feedback.md)} for every mistake and mutant."""
    root = tmp_path_factory.mktemp("predicts")
    batch, out = root / "batch", root / "reports"
    for name, (mutant, _) in MISTAKES.items():
        if mutant == "not defined":
            build_without_extra(batch / name)
        else:
            build_mutant(mutant, batch / name)
    for name, mutant in MUTANTS.items():
        if name not in MISTAKES:
            build_mutant(mutant, batch / f"mutant-{name}")
    grade = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2"],
                           cwd=ROOT, capture_output=True, text=True, timeout=2400)
    assert grade.returncode == 0, f"the grader exited {grade.returncode}:\n{grade.stderr[-3000:]}"
    found = {}
    for submission in sorted(p for p in batch.iterdir() if p.is_dir()):
        (root / "public" / submission.name).mkdir(parents=True)
        found[submission.name] = (run_public(submission, root / "public" / submission.name),
                                  json.loads((out / submission.name / "results.json").read_text()),
                                  (out / submission.name / "feedback.md").read_text())
    return found


def local_lost(run):
    """The public parts in which the run did not earn every point (extra credit: not passed)."""
    lost = set()
    for name, text in list(run.failures.items()) + [(n, "skipped") for n in run.skipped]:
        if text is not None:
            lost.add(PART_OF_CASE[name.split("[", 1)[1].rstrip("]")])
    return lost


def hidden_part(test):
    """A test's part; an extra-credit test's is named by the function it tests."""
    part = test["tags"][0]
    if part != "extra":
        return part
    return "extra: step" if "step" in test["name"] else "extra: tiled_attention"


def grade_lost(results):
    """The hidden parts in which the grade lost points."""
    return {hidden_part(t) for t in results["tests"] if t["score"] < t["max_score"]}


def disagreements(run, results):
    """'part: local lost / grade kept' lines where the public run does not predict the grade."""
    local, grade = local_lost(run), grade_lost(results)
    found = []
    for part, hidden in COVERS.items():
        if (part in local) != bool(grade & set(hidden)):
            found.append(f"{part}: the public tests {'lost' if part in local else 'kept'} points, the grade "
                         f"{'lost' if grade & set(hidden) else 'kept'} points in {', '.join(hidden)}")
    return found


@pytest.mark.parametrize("name", MISTAKES)
def test_the_local_message_names_the_cause_in_the_grades_words(graded, name):
    run, _, feedback = graded[name]
    local = "\n".join([run.output, *run.skipped.values()])  # a skipped test's reason: -rs, or the JUnit report
    for words in MISTAKES[name][1]:
        assert words in local, f"{name}: `make test` does not say {words!r}:\n{local[-3000:]}"
        assert words in feedback, f"{name}: the grade's feedback does not say {words!r}:\n{feedback[:3000]}"


@pytest.mark.parametrize("name", UNBACKED)
def test_no_side_gives_a_hint_its_probe_did_not_back(graded, name):
    run, _, feedback = graded[name if name in MISTAKES else f"mutant-{name}"]
    for words in UNBACKED[name]:
        assert words not in run.output, f"{name}: `make test` says {words!r}:\n{run.output[-3000:]}"
        assert words not in feedback, f"{name}: the grade's feedback says {words!r}:\n{feedback[:3000]}"


@pytest.mark.parametrize("name", MISTAKES)
def test_the_local_points_lost_predict_the_grades(graded, name):
    run, results, _ = graded[name]
    assert local_lost(run), f"{name}: `make test` loses no points:\n{run.output[-2000:]}"
    wrong = disagreements(run, results)
    assert not wrong, f"{name}: " + "; ".join(wrong)


def test_a_forbidden_call_loses_the_rule_in_the_grade_and_is_flagged_locally(graded):
    run, results, _ = graded["uses_torch_sdpa"]
    assert "rules" in grade_lost(results)
    assert any(line.startswith("RULE BROKEN: ") for line in run.output.splitlines()), run.output[-2000:]


def test_a_correct_core_without_extra_credit_exits_0(graded):
    run, results, _ = graded["extra_credit_not_defined"]
    assert run.returncode == 0, run.output[-2000:]
    assert grade_lost(results) == {"extra: tiled_attention", "extra: step"}


@pytest.mark.parametrize("name", [n for n in MUTANTS if n not in MISTAKES])
def test_a_mutant_the_public_tests_catch_is_predicted_part_by_part(graded, name):
    run, results, _ = graded[f"mutant-{name}"]
    if not local_lost(run):
        assert grade_lost(results), f"mutant {name} loses no points anywhere"
        pytest.skip("the public tests do not catch it (the hidden suite does)")
    wrong = disagreements(run, results)
    assert not wrong, f"mutant {name} ({MUTANTS[name]['why']}): " + "; ".join(wrong)
