"""Fair on real code: submissions in the style of published implementations, judged twice.

tests/heavy/real_code/ holds one submission per published source (its table, README.md, says which and
what its bug is). An independent oracle built from torch's own attention (tests/heavy/real_code_oracle.py)
says which parts of each are wrong; one grader run grades them all. The grader must agree with the
oracle part by part: the correct ones score every core point, and a buggy one loses points in
exactly the parts the oracle finds wrong, never in a part where its bug does not live.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading.suite_points import core_max
from variant_builder import FILES, ROOT, _write

pytestmark = pytest.mark.slow  # grades the real-code fixtures and runs their oracle (`make check-fast` skips it)

FIXTURES = Path(__file__).resolve().parent / "real_code"
ORACLE = Path(__file__).resolve().parent / "real_code_oracle.py"
CORE_PARTS = ("masks", "attention", "gradients", "mha_init", "heads", "mha_forward", "rules")


def fixture_names():
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def table():
    """{fixture: {"source": ..., "bug": ...}} from the table in tests/heavy/real_code/README.md."""
    rows = {}
    for line in (FIXTURES / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[a-z0-9_]+", cells[0]) and cells[0] != "fixture":
            rows[cells[0]] = {"source": cells[1], "style": cells[2], "bug": cells[3]}
    return rows


NAMES = fixture_names()
TABLE = table()
CORRECT = [name for name in NAMES if TABLE.get(name, {}).get("bug", "").startswith("none")]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Every fixture built as a submission (a missing file comes from solution/)."""
    root = tmp_path_factory.mktemp("real_code") / "batch"
    for name in NAMES:
        _write(root / name, {f: (FIXTURES / name / f).read_text() for f in FILES if (FIXTURES / name / f).exists()})
    return root


@pytest.fixture(scope="module")
def verdicts(batch, tmp_path_factory):
    """The oracle's wrong parts: {fixture: {part: [reasons]}}, from one subprocess."""
    out = tmp_path_factory.mktemp("oracle") / "verdicts.json"
    run = subprocess.run([sys.executable, "-I", str(ORACLE), str(out), *(str(batch / n) for n in NAMES)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"the oracle failed:\n{run.stderr[-3000:]}"
    return {Path(folder).name: parts for folder, parts in json.loads(out.read_text()).items()}


@pytest.fixture(scope="module")
def reports(batch, tmp_path_factory):
    out = tmp_path_factory.mktemp("real_code_reports")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out), "--jobs", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"the grader exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    return out


def part_scores(reports, name):
    """{part: (score, max_score, [output of each test that lost points])} for the core parts."""
    tests = json.loads((reports / name / "results.json").read_text())["tests"]
    scores = {}
    for part in CORE_PARTS:
        mine = [t for t in tests if t["tags"] == [part]]
        scores[part] = (sum(t["score"] for t in mine), sum(t["max_score"] for t in mine),
                        [f"{t['name']}: {t.get('output', '')[:300]}" for t in mine if t["score"] < t["max_score"]])
    return scores


# --- the table --------------------------------------------------------------------------------------

def test_at_least_15_fixtures_from_as_many_sources():
    sources = {row["source"].split(":")[0] for row in TABLE.values()}
    assert len(NAMES) >= 15 and len(sources) >= 15, f"{len(NAMES)} fixtures from {len(sources)} repositories"


def test_the_table_lists_every_fixture_once():
    assert sorted(TABLE) == NAMES, (f"folders without a row: {sorted(set(NAMES) - set(TABLE))}; "
                                    f"rows without a folder: {sorted(set(TABLE) - set(NAMES))}")


@pytest.mark.parametrize("name", NAMES)
def test_a_fixture_holds_only_contract_files(name):
    files = sorted(p.name for p in (FIXTURES / name).iterdir() if p.name != "__pycache__")
    assert files and set(files) <= set(FILES), f"{name} holds {files}"


def test_the_table_has_correct_and_buggy_sources():
    assert 4 <= len(CORRECT) <= len(NAMES) - 8, f"correct: {CORRECT}"


# --- the oracle and the grader ----------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_the_oracle_agrees_with_the_table(verdicts, name):
    wrong = {part: reasons for part, reasons in verdicts[name].items() if reasons}
    if name in CORRECT:
        assert not wrong, f"{name} is recorded as correct, but the oracle finds: {wrong}"
    else:
        assert wrong, f"{name} is recorded with a bug ({TABLE[name]['bug']}), but the oracle finds every part right"


@pytest.mark.parametrize("name", NAMES)
def test_the_grader_agrees_with_the_oracle_part_by_part(verdicts, reports, name):
    scores = part_scores(reports, name)
    disagree = []
    for part in CORE_PARTS:
        score, max_score, lost = scores[part]
        wrong = verdicts[name][part]
        if wrong and score == max_score:
            disagree.append(f"{part}: the oracle finds it wrong ({wrong[0]}) but the grader gave {score:g}/{max_score:g}")
        if not wrong and score < max_score:
            disagree.append(f"{part}: the oracle finds it right but the grader gave {score:g}/{max_score:g}:\n    "
                            + "\n    ".join(lost))
    assert not disagree, f"{name} ({TABLE[name]['bug']}):\n" + "\n".join(disagree)


@pytest.mark.parametrize("name", CORRECT)
def test_a_correct_fixture_scores_every_core_point(reports, name):
    total = sum(score for score, _, _ in part_scores(reports, name).values())
    assert total == pytest.approx(core_max()), f"{name} scored {total:g} / {core_max():g} core points"
