"""Every single defect the engine generates, graded by the real grader and run through `make test`
(mutation_run.py): a defect is charged in one part only, `make test` loses points too, and loses the same
share of the points to 10 percentage points; a mutant that scores full marks is one a person reviewed
(equivalent.txt, which flags as HOLE the ones that are not truly equivalent). A deterministic sample of SAMPLE mutants runs in `make check-fast`, all of them in `make check`.

The defects that miss a check today are listed with their cause in misses.txt, reviewed like the equivalents:
a miss not listed there fails, so a new grader hole or a new double charge cannot pass unseen.
"""
import json
from pathlib import Path

import pytest

import mutation_engine as engine
import mutation_run

HERE = Path(__file__).resolve().parent
SAMPLE = 12
BUDGET = 8 * 60  # seconds for the whole run on 2 cores (grade and public tests)


def reviewed(name):
    """{id: comment} of a reviewed list: one mutant per line, ``id  # why``."""
    entries = {}
    for line in (HERE / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            mutant, _, comment = line.partition("#")
            entries[mutant.strip()] = comment.strip()
    return entries


REVIEWED_FOR = "# reviewed for the suite's points: "  # the lab the lists were reviewed on (a line of misses.txt)


@pytest.fixture(autouse=True, scope="module")
def lab_as_reviewed():
    """The lists are the review of one lab's suite: after a documented change to the lab (a part added, moved or
    removed) they no longer apply, and the module is skipped with what to do, never failed."""
    from autograder.grading.suite_points import part_points

    line = next(line for line in (HERE / "misses.txt").read_text().splitlines() if line.startswith(REVIEWED_FOR))
    if part_points() != json.loads(line[len(REVIEWED_FOR):]):
        pytest.skip("the hidden suite's parts or points differ from the ones misses.txt was reviewed on: run "
                    "python tests/mutation/mutation_run.py and review equivalent.txt and misses.txt again")


EQUIVALENT = reviewed("equivalent.txt")
MISSES = {mutant: set(comment.split(":", 1)[0].split(",")) for mutant, comment in reviewed("misses.txt").items()}


def evaluated(tmp_path_factory, mutants):
    root = tmp_path_factory.mktemp("mutation")
    root.chmod(0o755)  # a sandbox uid enters the batch
    return mutation_run.evaluate(mutants, root)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return evaluated(tmp_path_factory, engine.sample(engine.generate(), SAMPLE))


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    return evaluated(tmp_path_factory, engine.generate())


def test_the_reviewed_lists_name_generated_mutants():
    ids = {m.id for m in engine.generate()}
    stale = sorted((set(EQUIVALENT) | set(MISSES)) - ids)
    assert not stale, f"reviewed entries no mutant has (review the lists again): {stale}"
    assert all(EQUIVALENT.values()) and all(set(checks) <= set(mutation_run.CHECKS) for checks in MISSES.values())


def unreviewed_equivalents(verdicts):
    """Mutants the grade gives full marks that no one reviewed, reviewed ones that now lose points, and truly
    equivalent ones (not a HOLE) on which `make test` loses points."""
    found = {i for i, v in verdicts.items() if v.equivalent}
    local = [i for i in found & set(EQUIVALENT) if not EQUIVALENT[i].startswith("HOLE") and not verdicts[i].local_equivalent]
    return sorted(found - set(EQUIVALENT)), sorted((set(EQUIVALENT) & set(verdicts)) - found), sorted(local)


def unlisted_misses(verdicts, check):
    return [f"{v.description}: charged {v.charged}, local {v.local_fraction:.0%}, grade {v.grade_fraction:.0%}"
            for i, v in verdicts.items() if check in v.misses and check not in MISSES.get(i, ())]


def test_sample_mutants_with_full_marks_are_the_reviewed_equivalents(sample):
    new, lost, local = unreviewed_equivalents(sample[0])
    assert not new and not lost and not local, (f"full marks, not reviewed: {new}; reviewed as equivalent, now losing "
                                                f"points: {lost}; equivalent, but make test loses points: {local}")


@pytest.mark.parametrize("check", mutation_run.CHECKS)
def test_sample_defects_pass_each_check(sample, check):
    missed = unlisted_misses(sample[0], check)
    assert not missed, f"{check}: " + "\n".join(missed)


@pytest.mark.slow  # grades every mutant and runs the public tests on each (minutes)
def test_all_mutants_with_full_marks_are_the_reviewed_equivalents(everything):
    new, lost, local = unreviewed_equivalents(everything[0])
    assert not new and not lost and not local, (f"full marks, not reviewed: {new}; reviewed as equivalent, now losing "
                                                f"points: {lost}; equivalent, but make test loses points: {local}")


@pytest.mark.slow
@pytest.mark.parametrize("check", mutation_run.CHECKS)
def test_all_defects_pass_each_check(everything, check):
    missed = unlisted_misses(everything[0], check)
    assert not missed, f"{check}: " + "\n".join(missed)


@pytest.mark.slow
def test_the_full_run_fits_its_budget(everything):
    seconds = everything[1]
    assert seconds["grade"] + seconds["public"] < BUDGET, seconds
