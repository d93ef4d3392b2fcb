"""The grader is fair: correct code scores full marks however it is written, and every common
mistake loses points in the part it breaks.

One grader run grades a batch holding the reference, every correct variant
(tests/variants/correct/) and every mutant (tests/variants/mutants.yaml); the tests
below read its reports.
"""
import json
import subprocess
import sys

import pytest

from autograder.grading.suite_points import core_max
from variant_builder import EXTRA_VARIANTS, ROOT, build_correct, build_mutant, build_reference, correct_names, load_mutants

pytestmark = pytest.mark.slow  # grades every correct variant and every mutant (`make check-fast` skips it)

MUTANTS = load_mutants()
CORRECT_NAMES = correct_names()

MUTANT_PARTS = [(m["name"], part) for m in MUTANTS for part in m["parts"]]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The report folder of one `python -m autograder grade` run over every variant."""
    root = tmp_path_factory.mktemp("grading")
    batch, out = root / "batch", root / "reports"
    build_reference(batch / "reference")
    for name in CORRECT_NAMES:
        build_correct(name, batch / f"correct-{name}")
    for mutant in MUTANTS:
        build_mutant(mutant, batch / f"mutant-{mutant['name']}")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"the grader exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    return out


def results(reports, submission):
    path = reports / submission / "results.json"
    assert path.is_file(), f"the grader wrote no {submission}/results.json"
    return json.loads(path.read_text())


def lost(tests):
    """Tests that did not get full points."""
    return [t for t in tests if t["score"] < t["max_score"]]


def explain(tests):
    return "\n".join(f"- {t['name']} ({t['score']}/{t['max_score']}): {t.get('output', '')[:600]}" for t in tests)


def core(tests):
    """The tests of the core points (extra credit is optional: a correct core variant may skip it)."""
    return [t for t in tests if t["tags"] != ["extra"]]


def assert_full_marks(result, submission, with_extra=False):
    failing = lost(result["tests"] if with_extra else core(result["tests"]))
    assert not failing, f"{submission} scored {result['score']}; it lost points in:\n{explain(failing)}"
    assert sum(t["score"] for t in core(result["tests"])) == pytest.approx(core_max())


def test_reference_scores_full_marks(reports):
    assert_full_marks(results(reports, "reference"), "the reference", with_extra=True)


@pytest.mark.parametrize("name", CORRECT_NAMES)
def test_correct_variant_scores_full_marks(reports, name):
    assert_full_marks(results(reports, f"correct-{name}"), f"correct variant {name}", with_extra=name in EXTRA_VARIANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m["name"] for m in MUTANTS])
def test_mutant_loses_points(reports, mutant):
    result = results(reports, f"mutant-{mutant['name']}")
    assert lost(result["tests"]), f"mutant {mutant['name']} ({mutant['why']}) lost no points"


@pytest.mark.parametrize("name, part", MUTANT_PARTS, ids=[f"{n}-{p}" for n, p in MUTANT_PARTS])
def test_mutant_loses_points_in_its_part(reports, name, part):
    mutant = next(m for m in MUTANTS if m["name"] == name)
    tests = [t for t in results(reports, f"mutant-{name}")["tests"] if part in t.get("tags", [])]
    assert tests, f"the report has no test tagged {part!r}"
    score, max_score = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
    assert score < max_score, f"mutant {name} ({mutant['why']}) kept all {max_score} points of part {part!r}"
    silent = [t["name"] for t in lost(tests) if not t.get("output", "").strip()]
    assert not silent, f"mutant {name}: tests of part {part!r} lost points without saying why: {silent}"


EXACT = [m for m in MUTANTS if m.get("only")]


@pytest.mark.parametrize("mutant", EXACT, ids=[m["name"] for m in EXACT])
def test_mutant_loses_points_in_no_other_part(reports, mutant):
    """One defect, one charge: a mutant marked `only` loses points in its listed parts and nowhere else."""
    tests = results(reports, f"mutant-{mutant['name']}")["tests"]
    elsewhere = [t for t in lost(tests) if t["tags"][0] not in mutant["parts"]]
    assert not elsewhere, (f"mutant {mutant['name']} ({mutant['why']}) is charged outside {mutant['parts']}:\n"
                           f"{explain(elsewhere)}")


def test_ignoring_every_mask_is_never_called_ignoring_numeric_masks(reports):
    """A numeric-mask test asks again with the mask as bool, so code that ignores every mask is told so."""
    failed = [t for t in results(reports, "mutant-every_mask_ignored")["tests"] if t["status"] == "failed"]
    named = {t["name"]: t.get("extra_data", {}).get("mistake") for t in failed if t["tags"] == ["attention"]}
    numeric = {name: mistake for name, mistake in named.items() if "integer masks" in name or "float masks" in name}
    assert numeric and set(numeric.values()) == {"mask_ignored"}, f"numeric-mask tests named {numeric}"


CRASH_AND_BUG_ONLY = [m for m in MUTANTS if "rules" not in m["parts"]]


@pytest.mark.parametrize("mutant", CRASH_AND_BUG_ONLY, ids=[m["name"] for m in CRASH_AND_BUG_ONLY])
def test_mutant_keeps_the_rule_points_when_it_calls_no_builtin(reports, mutant):
    """A wrong result or a crash is not a rule violation: only evidence of a forbidden call costs rule points."""
    tests = [t for t in results(reports, f"mutant-{mutant['name']}")["tests"] if "rules" in t.get("tags", [])]
    assert tests and not lost(tests), f"mutant {mutant['name']} ({mutant['why']}) lost rule points:\n{explain(lost(tests))}"


def test_an_attention_py_that_does_not_import_costs_no_mha_points(reports):
    """The stand-in attention of oracle mode falls back cleanly when the student's attention.py cannot be imported."""
    tests = [t for t in results(reports, "mutant-attention_does_not_import")["tests"]
             if t["tags"][0] in ("mha_init", "heads", "mha_forward")]
    assert tests and not lost(tests), f"MHA points lost for a broken attention.py:\n{explain(lost(tests))}"


NAMED = [m for m in MUTANTS if m.get("mistake")]


@pytest.mark.parametrize("mutant", NAMED, ids=[m["name"] for m in NAMED])
def test_feedback_names_the_catalogued_mistake(reports, mutant):
    """The feedback names the bug: some failed test carries the catalogue entry this mutant was written as."""
    tests = results(reports, f"mutant-{mutant['name']}")["tests"]
    named = {t.get("extra_data", {}).get("mistake") for t in tests if t["status"] == "failed"}
    assert mutant["mistake"] in named, (
        f"{mutant['name']}: expected the feedback to name {mutant['mistake']!r}, it named {sorted(filter(None, named))}")


def test_every_catalogue_entry_is_proved_by_a_mutant():
    from autograder.judging.catalogue import every_mistake

    entries = set(every_mistake())
    proved = {m["mistake"] for m in NAMED}
    assert not entries - proved, (
        f"catalogue entries with no mutant in tests/variants/mutants.yaml: {sorted(entries - proved)}")


# --- issue 24: the retry, extra credit, and messages that point the right way ------------------------

def failed_outputs(reports, mutant, part):
    return {t["name"]: t.get("output", "") for t in lost(results(reports, f"mutant-{mutant}")["tests"])
            if t["tags"] == [part]}


def test_a_buggy_helper_that_mha_imports_is_named_where_mha_fails(reports):
    """The retry on torch's attention keeps attention.py's helpers; when one is wrong on its own, MHA's feedback names it."""
    for part in ("mha_forward", "extra"):
        outputs = failed_outputs(reports, "mha_imports_a_buggy_helper_class", part)
        assert outputs and all("fails because of DotAttention" in o for o in outputs.values()), outputs


def test_tiled_memory_needs_an_output_that_is_attention_at_the_sampled_rows(reports):
    """Issue 46 (points need the work): a tiling that forgets to rescale saves memory, but its output is not
    attention, so it loses the memory points too (all in the extra part: one part, one charge), with the rows
    that differ as the finding."""
    outputs = failed_outputs(reports, "tiled_no_rescale", "extra")
    memory = [o for name, o in outputs.items() if "peak memory" in name]
    assert memory and "rows compared with attention" in memory[0], sorted(outputs)


def test_tiled_memory_needs_an_output_computed_by_attention(reports):
    """An output of the right shape that attention did not compute loses the memory test too."""
    outputs = failed_outputs(reports, "tiled_made_up_output", "extra")
    assert any("peak memory" in name and "row 0" in o for name, o in outputs.items()), sorted(outputs)


def test_the_rule_test_names_the_line_once(reports):
    [output] = [o for name, o in failed_outputs(reports, "uses_torch_sdpa", "rules").items() if "attention.py" in name]
    assert output.count("line ") == 1, output


def test_a_dimension_error_for_a_valid_size_says_so(reports):
    outputs = failed_outputs(reports, "dimension_condition_reversed", "mha_init")
    assert outputs and all("for a valid size" in o and "check your condition" in o for o in outputs.values()), outputs


def test_a_step_test_passes_on_the_labs_split_heads_and_says_so(reports):
    """One defect, one charge: step runs again on the lab's split_heads, which fixes it, and its note names the part."""
    from autograder.judging.properties import HEADS_STOOD_IN

    steps = [t for t in results(reports, "mutant-split_heads_strided_features")["tests"]
             if t["tags"] == ["extra"] and "step" in t["name"]]
    assert steps and all(t["score"] == t["max_score"] for t in steps), steps
    reproduces = next(t for t in steps if "reproduces forward" in t["name"])
    assert HEADS_STOOD_IN in reproduces["output"], reproduces


@pytest.mark.parametrize("name", ["causal_mask_upper_triangle", "causal_mask_hides_diagonal", "causal_mask_leaks_one_step"])
def test_a_wrong_causal_mask_is_charged_by_the_values_test_not_again_by_the_device_test(reports, name):
    tests = results(reports, f"mutant-{name}")["tests"]
    by_name = {t["name"].split(" (", 1)[0]: t for t in tests}
    values, device = by_name["Causal mask: True on and below the diagonal, for T = 7, 4 and 1"], by_name["Causal mask: made on the device asked for"]
    assert values["score"] < values["max_score"], explain([values])
    assert device["score"] == device["max_score"], explain([device])
