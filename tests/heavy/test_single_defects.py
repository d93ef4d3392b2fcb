"""One defect, one charge (issue 34): each catalogued defect, planted alone in the reference, loses points in
exactly the parts the catalogue names (autograder/judging/catalogue.py, every_mistake), and `make test` names it.

The defect is planted by the first mutant of tests/variants/mutants.yaml that names it (its ``mistake``). One
grader run grades them all; the public suite runs on each as `make test` does.
"""
import json
import subprocess
import sys

import pytest

from autograder.judging.catalogue import CATALOGUE, FOUND_FROM_PATTERN, PRECISION, every_mistake
from test_public_suite import ROOT, run_public
from variant_builder import build_mutant, load_mutants

pytestmark = pytest.mark.slow  # grades one mutant per catalogued defect, and runs the public tests on each

PARTS = every_mistake()
PLANTED = {}  # defect name -> the first mutant that plants it alone
for _mutant in load_mutants():
    if _mutant.get("mistake") in PARTS:
        PLANTED.setdefault(_mutant["mistake"], _mutant)
SENTENCES = {}  # name -> its sentences: a name found under two kinds has one for each test that names it
for _entry in [*(e for kind in CATALOGUE.values() for e, _ in kind), *(e for _, steps in PRECISION.values() for e, _ in steps),
               *FOUND_FROM_PATTERN]:
    SENTENCES.setdefault(_entry.name, []).append(_entry.sentence)


def test_every_catalogued_defect_is_planted_by_a_mutant():
    assert not set(PARTS) - set(PLANTED), f"defects no mutant plants: {sorted(set(PARTS) - set(PLANTED))}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{defect: (public run, grade's results.json)} for the mutant that plants each defect."""
    root = tmp_path_factory.mktemp("single_defects")
    batch, out = root / "batch", root / "reports"
    for name, mutant in PLANTED.items():
        build_mutant(mutant, batch / name)
    grade = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2"],
                           cwd=ROOT, capture_output=True, text=True, timeout=2400)
    assert grade.returncode == 0, f"the grader exited {grade.returncode}:\n{grade.stderr[-3000:]}"
    found = {}
    for name in PLANTED:
        (root / "public" / name).mkdir(parents=True)
        found[name] = (run_public(batch / name, root / "public" / name),
                       json.loads((out / name / "results.json").read_text()))
    return found


def charged_parts(results):
    """{part: [names of the tests that lost points]} of a grade."""
    charged = {}
    for test in results["tests"]:
        if test["score"] < test["max_score"]:
            charged.setdefault(test["tags"][0], []).append(test["name"])
    return charged


@pytest.mark.parametrize("defect", sorted(PLANTED))
def test_the_defect_loses_points_in_exactly_its_parts(graded, defect):
    _, results = graded[defect]
    charged = charged_parts(results)
    assert set(charged) == set(PARTS[defect]), (
        f"{defect} (mutant {PLANTED[defect]['name']}) lives in {PARTS[defect]}; the grade charged "
        + "; ".join(f"{part}: {tests}" for part, tests in charged.items()))


@pytest.mark.parametrize("defect", sorted(PLANTED))
def test_make_test_names_the_defect(graded, defect):
    run, _ = graded[defect]
    local = "\n".join([run.output, *run.skipped.values()])
    words = [sentence.split(":")[0] for sentence in SENTENCES[defect]]  # the diagnosis, before its fix
    assert any(w in local for w in words), f"{defect}: `make test` says none of {words!r}:\n{local[-3000:]}"
