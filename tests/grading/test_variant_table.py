"""The variant table itself, checked without the grader.

Every mutant in tests/variants/mutants.yaml must apply cleanly to the reference and change
its behaviour in each part it claims to break; every correct variant in
tests/variants/correct/ must agree with the reference. The probes run in one subprocess
(tests/variant_checker.py), so a mutant never runs inside the test process.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import SHIPPED_PARTS
from variant_builder import (CORRECT, EXTRA_VARIANTS, FILES, SOLUTION, build_correct, build_mutant, build_reference,
                             correct_names, edits, load_mutants)

CHECKER = Path(__file__).resolve().parents[1] / "variant_checker.py"
MUTANTS = load_mutants()
CORRECT_NAMES = correct_names()
FIELDS = {"name", "file", "find", "replace", "parts", "why"}
OPTIONAL_FIELDS = {"mistake", "only", "also"}


def by_name(items):
    return pytest.mark.parametrize("mutant", items, ids=[m["name"] for m in items])


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Probe records of the reference and of every variant: ``{folder name: {probe: record}}``."""
    root = tmp_path_factory.mktemp("variants")
    folders = [build_reference(root / "reference")]
    folders += [build_correct(name, root / f"correct-{name}") for name in CORRECT_NAMES]
    for mutant in MUTANTS:
        if all((SOLUTION / e["file"]).read_text().count(e["find"]) == 1 for e in edits(mutant)):
            folders.append(build_mutant(mutant, root / f"mutant-{mutant['name']}"))
    out = root / "records.pt"
    run = subprocess.run([sys.executable, "-I", str(CHECKER), str(out), *map(str, folders)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"variant_checker.py failed:\n{run.stderr[-3000:]}"
    return {Path(folder).name: recs for folder, recs in torch.load(out, weights_only=True).items()}


def same(expected, got):
    """Equal values: tensors of the same shape and dtype, close at the dtype's default tolerance."""
    if isinstance(expected, torch.Tensor) or isinstance(got, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)):
            return False
        try:
            torch.testing.assert_close(got, expected)
        except AssertionError:
            return False
        return True
    if isinstance(expected, tuple) and isinstance(got, tuple):
        return len(expected) == len(got) and all(map(same, expected, got))
    return expected == got


def failing_probes(reference, variant):
    """``{part: [probe, ...]}`` of the probes where `variant` differs or calls a forbidden built-in."""
    failing = {}
    for probe, record in variant.items():
        if record["forbidden"] or not same(reference[probe]["value"], record["value"]):
            failing.setdefault(record["part"], []).append(probe)
    return failing


def describe(reference, variant, probes):
    """One line per probe: what the reference gave and how the variant differs."""
    lines = []
    for probe in probes:
        want, got = reference[probe], variant[probe]
        line = f"  {probe}: {difference(want['value'], got['value'])}"
        if got["forbidden"]:
            line += f"; called forbidden {got['forbidden']}"
        lines.append(line)
    return "\n".join(lines)


def difference(want, got):
    if isinstance(want, tuple) and isinstance(got, tuple) and len(want) == len(got):
        return "; ".join(f"[{i}] {difference(w, g)}" for i, (w, g) in enumerate(zip(want, got)) if not same(w, g))
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        if want.shape != got.shape or want.dtype != got.dtype:
            return f"expected {tuple(want.shape)} {want.dtype}, got {tuple(got.shape)} {got.dtype}"
        error = (want.double() - got.double()).abs().nan_to_num(nan=float("inf"))
        where = tuple(int(i) for i in torch.unravel_index(error.argmax(), error.shape))
        return f"max abs error {error.max().item():.3g} at index {where}"
    return f"expected {want!r}, got {got!r}"


# --- the table -----------------------------------------------------------------------------

def test_table_has_at_least_24_mutants():
    assert len(MUTANTS) >= 24, f"only {len(MUTANTS)} mutants in the table"


def test_mutant_names_are_unique():
    names = [m["name"] for m in MUTANTS]
    assert len(names) == len(set(names)), f"duplicate names: {sorted(n for n in names if names.count(n) > 1)}"


@by_name(MUTANTS)
def test_mutant_is_well_formed(mutant):
    assert FIELDS <= set(mutant) <= FIELDS | OPTIONAL_FIELDS, (
        f"fields {sorted(mutant)}, expected {sorted(FIELDS)} and optionally {sorted(OPTIONAL_FIELDS)}")
    assert re.fullmatch(r"[a-z][a-z0-9_]*", mutant["name"]), "name must be a lower-case slug"
    assert mutant["file"] in FILES, f"file {mutant['file']!r} is not one of {FILES}"
    assert mutant["find"] != mutant["replace"], "replace is the same text as find"
    assert mutant["why"].strip(), "why is empty"
    assert mutant.get("only", True) is True, "only is true or absent (absent: other parts may lose points too)"
    for edit in mutant.get("also", []):
        assert set(edit) == {"file", "find", "replace"} and edit["file"] in FILES, f"also holds {sorted(edit)}"


@by_name([m for m in MUTANTS if "mistake" in m])
def test_mutant_names_a_catalogue_entry(mutant):
    from autograder.judging.catalogue import every_mistake

    assert mutant["mistake"] in every_mistake(), f"{mutant['mistake']!r} is not in autograder/judging/catalogue.py"


@by_name(MUTANTS)
def test_mutant_parts_are_known(mutant):
    assert mutant["parts"], "a mutant must name at least one part that loses points"
    shipped = SHIPPED_PARTS["PARTS"]  # the mutants are written for the lab as shipped, whatever this term's is
    unknown = set(mutant["parts"]) - set(shipped)
    assert not unknown, f"unknown parts {sorted(unknown)}; allowed: {shipped}"


@by_name(MUTANTS)
def test_mutant_find_occurs_once_in_reference(mutant):
    for edit in edits(mutant):
        count = (SOLUTION / edit["file"]).read_text().count(edit["find"])
        assert count == 1, (f"`find` occurs {count} times in solution/{edit['file']}; pick a snippet "
                            f"that occurs exactly once:\n{edit['find']}")


# --- behaviour -----------------------------------------------------------------------------

@pytest.mark.slow  # runs the contract probes on every variant
def test_reference_passes_its_own_probes(records):
    reference = records["reference"]
    raised = {p: r["value"] for p, r in reference.items() if isinstance(r["value"], str) and "raised" in r["value"]}
    forbidden = {p: r["forbidden"] for p, r in reference.items() if r["forbidden"]}
    assert not raised and not forbidden and reference["forbidden_in_source"]["value"] == (), (
        f"the reference itself fails probes: raised {raised}, forbidden calls {forbidden}, "
        f"forbidden names in source {reference['forbidden_in_source']['value']}")


@pytest.mark.slow  # runs the contract probes on every variant
@by_name(MUTANTS)
def test_mutant_changes_behaviour(records, mutant):
    variant = records.get(f"mutant-{mutant['name']}")
    assert variant is not None, "mutant was not built (its `find` does not occur exactly once)"
    failing = failing_probes(records["reference"], variant)
    assert failing, f"mutant {mutant['name']} behaves exactly like the reference on every probe"


@pytest.mark.slow  # runs the contract probes on every variant
@by_name(MUTANTS)
def test_mutant_fails_in_every_listed_part(records, mutant):
    variant = records.get(f"mutant-{mutant['name']}")
    assert variant is not None, "mutant was not built (its `find` does not occur exactly once)"
    failing = failing_probes(records["reference"], variant)
    unbroken = [part for part in mutant["parts"] if part not in failing]
    assert not unbroken, (f"mutant {mutant['name']} lists parts {unbroken} but no probe of those parts "
                          f"fails; failing probes by part: {failing}")


def test_at_least_6_correct_variants():
    assert len(CORRECT_NAMES) >= 6, f"only {len(CORRECT_NAMES)} correct variants: {CORRECT_NAMES}"


@pytest.mark.parametrize("name", CORRECT_NAMES)
def test_correct_variant_holds_only_contract_files(name):
    files = sorted(p.name for p in (CORRECT / name).iterdir() if p.name != "__pycache__")
    allowed = set(FILES) | {f"{f}.append" for f in FILES}
    assert files and set(files) <= allowed, f"{name} holds {files}; only {sorted(allowed)} may be there"


@pytest.mark.slow  # runs the contract probes on every variant
@pytest.mark.parametrize("name", CORRECT_NAMES)
def test_correct_variant_agrees_with_reference(records, name):
    reference, variant = records["reference"], records[f"correct-{name}"]
    failing = [probe for part, probes in failing_probes(reference, variant).items() for probe in probes
               if part != "extra" or name in EXTRA_VARIANTS]
    assert not failing, f"correct variant {name} differs from the reference:\n" + describe(reference, variant, failing)
