"""The README's counts are the code's: each number it states about the kit is read back here and
compared with what the kit holds, so adding a mutant or a catalogue entry fails until the README
says so too."""
import re

import pytest

from variant_builder import ROOT, correct_names, load_mutants

README = (ROOT / "README.md").read_text(encoding="utf-8")
REAL_CODE = ROOT / "tests" / "real_code"


def stated(pattern):
    """The integers the README states where ``pattern`` (a regex with groups of digits) matches."""
    match = re.search(pattern, " ".join(README.split()))  # the README wraps its lines anywhere
    assert match, f"README.md no longer says {pattern!r}: update this test with the new wording"
    return [int(group) for group in match.groups()]


def real_code_bugs():
    """{fixture: bug} from the table in tests/real_code/README.md ("none" for a correct source)."""
    rows = {}
    for line in (REAL_CODE / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and (REAL_CODE / cells[0]).is_dir():
            rows[cells[0]] = cells[-1]
    return rows


def test_readme_counts_the_correct_variants_and_the_mutants():
    variants, bugs = stated(r"`tests/variants/` holds (\d+) correct variants that earn full marks and (\d+) common bugs")
    assert (variants, bugs) == (len(correct_names()), len(load_mutants())), (
        f"README.md says {variants} correct variants and {bugs} bugs; tests/variants/ holds "
        f"{len(correct_names())} and tests/variants/mutants.yaml {len(load_mutants())}")


def test_readme_counts_the_catalogue_entries():
    from autograder.catalogue import CATALOGUE

    [entries] = stated(r"\(`autograder/catalogue.py`, (\d+) entries\)")
    actual = sum(len(kind) for kind in CATALOGUE.values())
    assert entries == actual, f"README.md says the catalogue has {entries} entries; it has {actual}"


def test_readme_counts_the_real_code_fixtures():
    bugs = real_code_bugs()
    correct = sum(bug.startswith("none") for bug in bugs.values())
    [held] = stated(r"`tests/real_code/` holds (\d+) submissions")
    [agreed, right, wrong] = stated(r"agrees on all (\d+), part by part: the (\d+) correct ones .* the (\d+) buggy ones")
    folders = sorted(p.name for p in REAL_CODE.iterdir() if p.is_dir())
    assert sorted(bugs) == folders, "every fixture folder should have exactly one row in tests/real_code/README.md"
    assert (held, agreed, right, wrong) == (len(folders), len(folders), correct, len(folders) - correct), (
        f"README.md says {held} fixtures ({right} correct, {wrong} buggy); tests/real_code/ holds "
        f"{len(folders)} ({correct} correct)")


def test_readme_counts_the_public_tests():
    from autograder.generate import public_cases

    cases, _ = public_cases()  # ((name, part, points), ...)
    points = sum(case_points for _, _, case_points in cases)
    [tests] = stated(r"\(partial run: N of (\d+) tests\)")
    [total] = stated(r'"public tests: \d+/(\d+) points"')
    assert (tests, total) == (len(cases), points), (
        f"README.md says {tests} public tests worth {total} points; the table in assignment/tests/cases.py "
        f"has {len(cases)} worth {points}")


@pytest.mark.parametrize("pattern", [r"about \d+(\.\d+)?x faster", r"about \d+ KiB"])
def test_readme_states_no_measured_figure_that_goes_stale(pattern):
    """Speed ratios and zip sizes change with every release: bench/RESULTS.md and `make gradescope` print them."""
    found = re.search(pattern, README)
    assert not found, f"README.md states {found.group(0)!r}; point to where it is measured instead"
