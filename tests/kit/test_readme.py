"""The docs' counts are the code's: each number the README or a docs/ page states about the kit is
read back here, from the page that states it, and compared with what the kit holds, so adding a
mutant, a catalogue entry or a hidden test's points fails until the prose says so too. The README
and docs/*.md name only `make` targets and repository paths that exist, link only files that
exist, and the README links every docs/ page."""
import re
import subprocess

import pytest

from variant_builder import ROOT, correct_names, load_mutants

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTRUCTOR = "docs/internals.md"  # how the grader decides, and how fairly: the counts below live there
REAL_CODE = ROOT / "tests" / "heavy" / "real_code"
PAGES = sorted((ROOT / "docs").rglob("*.md"))  # the guides and their reference pages
DOCS = [ROOT / "README.md", *PAGES]


def stated(pattern, path):
    """The integers ``path`` states where ``pattern`` (a regex with groups of digits) matches."""
    text = (ROOT / path).read_text(encoding="utf-8")
    match = re.search(pattern, " ".join(text.split()))  # the docs wrap their lines anywhere
    assert match, f"{path} no longer says {pattern!r}: update this test with the new wording"
    return [int(group) for group in match.groups()]


def real_code_bugs():
    """{fixture: bug} from the table in tests/heavy/real_code/README.md ("none" for a correct source)."""
    rows = {}
    for line in (REAL_CODE / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and (REAL_CODE / cells[0]).is_dir():
            rows[cells[0]] = cells[-1]
    return rows


def test_readme_counts_the_correct_variants_and_the_mutants():
    variants, bugs = stated(r"`tests/variants/` holds (\d+) correct variants that earn full marks and (\d+) common bugs", INSTRUCTOR)
    assert (variants, bugs) == (len(correct_names()), len(load_mutants())), (
        f"{INSTRUCTOR} says {variants} correct variants and {bugs} bugs; tests/variants/ holds "
        f"{len(correct_names())} and tests/variants/mutants.yaml {len(load_mutants())}")


def test_readme_counts_the_catalogue_entries():
    from autograder.judging.catalogue import CATALOGUE

    [entries] = stated(r"\(`autograder/judging/catalogue.py`, (\d+) entries\)", INSTRUCTOR)
    actual = sum(len(kind) for kind in CATALOGUE.values())
    assert entries == actual, f"{INSTRUCTOR} says the catalogue has {entries} entries; it has {actual}"


def test_readme_counts_the_real_code_fixtures():
    bugs = real_code_bugs()
    correct = sum(bug.startswith("none") for bug in bugs.values())
    [held] = stated(r"`tests/heavy/real_code/` holds (\d+) submissions", INSTRUCTOR)
    [agreed, right, wrong] = stated(r"agrees on all (\d+), part by part: the (\d+) correct ones .* the (\d+) buggy ones", INSTRUCTOR)
    folders = sorted(p.name for p in REAL_CODE.iterdir() if p.is_dir())
    assert sorted(bugs) == folders, "every fixture folder should have exactly one row in tests/heavy/real_code/README.md"
    assert (held, agreed, right, wrong) == (len(folders), len(folders), correct, len(folders) - correct), (
        f"{INSTRUCTOR} says {held} fixtures ({right} correct, {wrong} buggy); tests/heavy/real_code/ holds "
        f"{len(folders)} ({correct} correct)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
@pytest.mark.parametrize("pattern", [r"about \d+(\.\d+)?x faster", r"about \d+ KiB"])
def test_readme_states_no_measured_figure_that_goes_stale(pattern, doc):
    """Speed ratios and zip sizes change with every release: bench/RESULTS.md and `make gradescope` print them."""
    found = re.search(pattern, doc.read_text(encoding="utf-8"))
    assert not found, f"{doc.name} states {found.group(0)!r}; point to where it is measured instead"


# --- totals: the lab's files that state the suite's totals, checked against tests_hidden/ ---------

# (file, pattern): each named group is one total, by its name (a suffix _2 marks a second mention). Only
# the lab's own text states totals (students read them there); the kit's docs state none (below).
TOTALS_STATED = [
    ("assignment/README.md", r"up to \*\*(?P<extra>\d+) points above the (?P<core>\d+)\*\*"),
    ("assignment/README.md", r"public tests: \d+/(?P<public>\d+) points"),
]


def suite_totals():
    """What the suites hold: the hidden suite's maximum, extra credit and parts; the public table's points."""
    from autograder.platforms.generate import public_cases
    from autograder.grading.suite_points import core_max, core_points, extra_max, full_marks

    public = sum(points for _, _, points in public_cases()[0])
    return {"core": core_max(), "extra": extra_max(), "full": full_marks(), "parts": len(core_points()),
            "public": public}


@pytest.mark.parametrize("path, pattern", TOTALS_STATED, ids=[f"{path}:{pattern[:30]}" for path, pattern in TOTALS_STATED])
def test_stated_totals_are_the_suites(path, pattern):
    text = " ".join((ROOT / path).read_text(encoding="utf-8").split())
    match = re.search(pattern, text)
    totals = suite_totals()
    if not match and "extra" in re.compile(pattern).groupindex and not totals["extra"]:
        return  # a lab without extra credit need not promise any
    assert match, f"{path} no longer says {pattern!r}: update TOTALS_STATED in tests/kit/test_readme.py"
    stale = {f"{name.split('_')[0]} {totals[name.split('_')[0]]:g} (not {value})"
             for name, value in match.groupdict().items() if float(value) != totals[name.split("_")[0]]}
    assert not stale, f"update {path}: it says {match.group(0)!r}, but the suite makes {', '.join(sorted(stale))}"


def score_rows(text, pattern):
    """{submission: [numbers]} of the rows of ``text`` that ``pattern`` (submission, then its cells) matches."""
    return {match[1]: [float(n) for n in re.findall(r"\d+(?:\.\d+)?", match[2])] for match in re.finditer(pattern, text, re.M)}


def test_the_quick_starts_grade_output_is_the_samples_scores_as_shipped():
    """docs/quickstart.md shows `make grade`'s real table on the samples; it must be the table that
    examples/submissions/README.md states (and tests/grading/test_grader.py checks) for the shipped suite."""
    quick = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    table = quick[quick.index("\nsubmission "):]
    shown = score_rows(table[:table.index("reports:")], r"^(\w+)\s+((?:\d+\s+)+\d+)/\d+$")
    samples = (ROOT / "examples" / "submissions" / "README.md").read_text(encoding="utf-8")
    stated = score_rows(samples, r"^\| (\w+) \| ((?:\d+ \| )+\d+) \|$")
    assert shown and shown == stated, f"docs/quickstart.md's make grade table {shown} is not the samples' {stated}"


# What a change to the lab would make stale in the kit's own pages: the suite's totals, part counts
# and points. `python -m autograder.grading.suite_points` prints them; the pages point to it.
STALE_AFTER_A_LAB_CHANGE = [
    r"What is graded \(\d+", r"\d+ points in \d+ parts", r"full core scores \d+", r"correct ones score \d+ / \d+",
    r"up to \d+ points above", r"\| (masks|attention|heads|rules|extra) \| \+?\d+ \|",
    r"public tests: \d+/\d+", r"partial run: N of \d+", r"outside the \d+ points",
]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_the_kit_pages_state_no_total_a_lab_change_can_make_stale(doc):
    text = " ".join(doc.read_text(encoding="utf-8").split())
    found = [match.group(0) for pattern in STALE_AFTER_A_LAB_CHANGE for match in re.finditer(pattern, text)]
    assert not found, (f"{doc.name} states {found}: a documented change to the lab makes it stale; "
                       "point to `python -m autograder.grading.suite_points` instead")


# --- names: the make targets and repository paths the README and docs/*.md mention exist ---------

TRACKED = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
TOP_LEVEL = {name.split("/")[0] for name in TRACKED}


def code_of(text):
    """The text of every code span and fenced block: where commands and paths are written."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return fenced + spans


def make_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


def named_paths(code):
    """Tokens of ``code`` that name a path of the repository (their first part is a top-level entry)."""
    for token in re.split(r"[\s=(),;\"']+", code):
        token = re.sub(r":\d+$", "", token.split("::")[0].rstrip(".:")).rstrip("/")  # file:line names the file
        if token.split("/")[0] in TOP_LEVEL and not re.search(r"[<>*{}$]|\.\.\.", token):
            yield token


def ignored(path):
    """A path the kit writes (reports/, dist/, submission.zip, ...): .gitignore lists them."""
    return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0


LAB = ("tests_hidden", "solution", "assignment", "examples")  # the instructor's: a term may remove a file


def once_in_the_lab(path):
    """A file of the lab the guide names as shipped (tests_hidden/test_heads.py), which this term removed:
    git's history holds it."""
    return path.split("/")[0] in LAB and bool(subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", path], cwd=ROOT, capture_output=True, text=True).stdout.strip())


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_docs_name_only_make_targets_that_exist(doc):
    code = "\n".join(code_of(doc.read_text(encoding="utf-8")))
    named = set(re.findall(r"(?<![\w./-])make ([a-z][\w-]*)", code))
    assert named, f"{doc.name} names no make target: is code_of still finding its commands?"
    assert not named - make_targets(), f"{doc.name} names make targets the Makefile lacks: {named - make_targets()}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_docs_name_only_paths_that_exist(doc):
    text = doc.read_text(encoding="utf-8")
    named = {path for code in code_of(text) for path in named_paths(code)}
    assert named, f"{doc.name} names no repository path: is named_paths still finding them?"
    missing = sorted(path for path in named if not (ROOT / path).exists() and not ignored(path)
                     and not once_in_the_lab(path))
    assert not missing, f"{doc.name} names paths that are not in the kit: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_docs_links_lead_to_files_of_the_kit(doc):
    links = re.findall(r"\]\(([^)#\s]+)", doc.read_text(encoding="utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    missing = [link for link in local if not (doc.parent / link).exists()]
    assert not missing, f"{doc.name} links to files that are not there: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_readme_links_every_docs_page(page):
    """A newcomer starts at the README: every page of docs/ is one link away (the instructor's guide too)."""
    name = page.relative_to(ROOT).as_posix()
    assert f"({name})" in README, f"README.md should link {name}"
