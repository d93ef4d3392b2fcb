"""The grade's feedback gives one hint per failure, the most specific one, and never contradicts the code
it describes (issue 34, item 4b)."""
import json
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from autograder.judging import catalogue
from autograder.judging.compare import NONFINITE_HINT, diagnosed, expect_close
from autograder.judging.errors import StudentError
from conftest import part_of_module, run_grader
from variant_builder import build_mutant, build_reference, load_mutants

MUTANTS = {m["name"]: m for m in load_mutants()}
GENERIC = "scores = Q K^T / sqrt(d_k)"


def inputs():
    generator = torch.Generator().manual_seed(3)
    return [torch.randn(2, 5, 8, generator=generator) for _ in range(3)]


def test_a_named_mistake_replaces_the_generic_hint():
    q, k, v = inputs()
    expected = catalogue.attention(q, k, v, None)
    got = catalogue.attention(q, k, v, None, scale=1.0)  # the scores never scaled
    with pytest.raises(StudentError) as caught:
        with diagnosed("sdpa", got, q, k, v, None):
            expect_close(got[1], expected[1], "case", "weights", GENERIC)
    text = str(caught.value)
    assert caught.value.mistake.name == "no_scaling" and text.startswith("Likely bug:"), text
    assert "hint:" not in text, f"two hints for one failure:\n{text}"


def test_an_unnamed_failure_keeps_its_hint():
    with pytest.raises(StudentError) as caught:
        expect_close(torch.zeros(3), torch.ones(3), "case", "output", GENERIC)
    assert f"hint: {GENERIC}" in str(caught.value)


def test_inf_or_nan_gets_the_hint_for_inf_or_nan_not_the_cases_hint():
    with pytest.raises(StudentError) as caught:
        expect_close(torch.tensor([float("nan"), 1.0]), torch.ones(2), "case", "weights",
                     "blocked scores must be -inf BEFORE the softmax")
    text = str(caught.value)
    assert NONFINITE_HINT in text and "BEFORE the softmax" not in text, text


# --- graded ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded():
    """Three submissions graded once, in a folder a sandbox uid can enter (as conftest's open_tmp)."""
    root = Path(tempfile.mkdtemp(prefix="kit-test-"))
    root.chmod(0o755)
    batch, out = root / "batch", root / "out"
    build_mutant(MUTANTS["dimension_error_not_a_value_error"], batch / "not_a_value_error")
    build_mutant(MUTANTS["no_scaling"], batch / "no_scaling")
    refused = build_reference(batch / "refused")  # it imports, but hides what it calls: refused by the rule
    with open(refused / "attention.py", "a") as f:
        f.write("\nimport base64  # not on the allow-list\n")
    run = run_grader("grade", batch, "--out", out, "--jobs", 2)
    assert run.returncode == 0, run.stderr[-3000:]
    yield out
    shutil.rmtree(root, ignore_errors=True)


def failed(out, submission, part):
    tests = json.loads((out / submission / "results.json").read_text())["tests"]
    return {t["name"]: t["output"] for t in tests if t["tags"] == [part] and t["score"] < t["max_score"]}


def test_code_that_raises_its_dimension_error_is_not_told_to_raise_it(graded):
    outputs = failed(graded, "not_a_value_error", part_of_module("test_mha_init.py"))
    assert len(outputs) == 2, sorted(outputs)  # the (16, 5) test and the non-positive sizes test
    for name, output in outputs.items():
        assert "is not a ValueError" in output and "raise the DimensionMismatchError" not in output, (name, output)


def test_each_failed_attention_case_gives_one_hint(graded):
    outputs = failed(graded, "no_scaling", part_of_module("test_attention.py"))
    assert outputs
    for name, output in outputs.items():
        hints = output.count("hint:") + output.count("Likely bug:")
        assert hints == 1, f"{name} gives {hints} hints:\n{output}"


def test_a_refused_file_is_not_called_a_file_that_does_not_import(graded):
    outputs = failed(graded, "refused", "rules")
    assert outputs
    for name, output in outputs.items():
        assert "does not import" not in output and "importing base64 is not allowed" in output, (name, output)
