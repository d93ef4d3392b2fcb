"""Every change to the lab that docs/reference/changing-the-lab.md documents leaves the kit green,
and an engine upgrade (docs/reference/upgrading.md) leaves the instructor's lab alone.

Each change is made on a copy of the kit exactly as the guide's steps say, then `make stubs` and `make
validate` run there; no step edits a number: the totals the lab's texts state are generated from the suite.
A change of the totals (the guide's 5-point example test, removing the extra credit) is named by `make
validate` as stale generated text before `make stubs`, and leaves the drift tests green after it. All the
changes together then run `make check-fast` on one copy: the kit's own tests read the totals and the parts
from the suite, so no change can fail them. (One copy, not one per change: a
copy's `make check-fast` takes as long as the kit's, and CI runs `make check` in one go.)

The upgrade test customises a lab copy, replaces the kit's own folders with this engine's, as the
guide's upgrade commands do, and checks that no file of the lab changed and `make validate` passes.
"""
import hashlib
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, copy_of_the_kit

pytestmark = pytest.mark.slow  # make validate per change, and one make check-fast on a copy

# The guide's example of "Add a hidden test", appended to tests_hidden/test_masks.py.
NEW_TEST = '''

@pytest.mark.points(5)
def test_causal_mask_for_a_long_sequence(student):
    """Causal mask: right for T = 64"""
    got = student.call("attention.causal_mask", 64).result
    expect_equal(got, torch.ones(64, 64, dtype=torch.bool).tril(), "causal_mask(64)", "mask", CAUSAL_HINT)
'''
# What an engine upgrade replaces (docs/reference/upgrading.md); everything else is the instructor's lab.
ENGINE = ("autograder", "tests", ".ci", "bench", "docs", "requirements", "Makefile", "README.md")


class Kit:
    """A copy of the kit's tracked files (as they are in the working tree), its own git repository,
    sharing the kit's .venv; driven with make as an instructor would."""

    def __init__(self, root):
        self.root = root
        copy_of_the_kit(root)
        self.env = dict(os.environ, XDG_CACHE_HOME=str(root / ".cache"), GIT_AUTHOR_NAME="kit",
                        GIT_AUTHOR_EMAIL="kit@example.org", GIT_COMMITTER_NAME="kit",
                        GIT_COMMITTER_EMAIL="kit@example.org")
        self.commit("the kit as shipped")

    def commit(self, message):
        """The docs' tests list the tracked files (git ls-files): a copy is a repository of its own."""
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", message]):
            subprocess.run(["git", *args], cwd=self.root, env=self.env, check=True, capture_output=True)

    def make(self, target, timeout=900):
        return subprocess.run(["make", "--no-print-directory", target], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def edit(self, relative, old, new):
        path = self.root / relative
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{relative} no longer holds {old!r}: update this test and the guide's steps"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def lab_digest(self):
        """A digest of every file outside the engine's folders: the instructor's lab."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            relative = path.relative_to(self.root)
            if relative.parts[0] not in (*ENGINE, ".git", ".venv", ".cache") and "__pycache__" not in relative.parts:
                digest.update(str(relative).encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


# --- the documented changes, step by step as docs/reference/changing-the-lab.md gives them -------

def add_a_hidden_test(kit):
    """"Add a hidden test": the guide's 5-point example, at the end of tests_hidden/test_masks.py."""
    path = kit.root / "tests_hidden" / "test_masks.py"
    path.write_text(path.read_text(encoding="utf-8") + NEW_TEST, encoding="utf-8")


def change_a_parts_points(kit):
    """"Change a part's points": the first test of tests_hidden/test_attention.py is worth 3 more."""
    path = kit.root / "tests_hidden" / "test_attention.py"
    text = path.read_text(encoding="utf-8")
    match = re.search(r"@pytest\.mark\.points\((\d+)\)", text)
    assert match, "tests_hidden/test_attention.py has no points marker: update this test"
    path.write_text(text[:match.start()] + f"@pytest.mark.points({int(match[1]) + 3})" + text[match.end():],
                    encoding="utf-8")


def rename_a_part(kit):
    """"Rename a part": mha_init becomes construction, in the parts table and in its module's marker."""
    kit.edit("tests_hidden/parts.py", '"mha_init", "heads"', '"construction", "heads"')
    kit.edit("tests_hidden/parts.py", '"mha_init": "MHA construction"', '"construction": "MHA construction"')
    kit.edit("tests_hidden/parts.py", '"mha_init": "part2_init"', '"construction": "part2_init"')
    kit.edit("tests_hidden/test_mha_init.py", 'pytest.mark.part("mha_init")', 'pytest.mark.part("construction")')


def remove_a_part(kit):
    """"Remove a part": heads goes, its module and its row of the parts table."""
    (kit.root / "tests_hidden" / "test_heads.py").unlink()
    kit.edit("tests_hidden/parts.py", ' "heads",', "")
    kit.edit("tests_hidden/parts.py", ' "heads": "Head split/merge",', "")
    kit.edit("tests_hidden/parts.py", '"heads": "part2_heads", ', "")


def remove_the_extra_credit(kit):
    """"Remove the extra credit": its module and its part (`make stubs` rewrites the lab text's promise)."""
    (kit.root / "tests_hidden" / "test_extra.py").unlink()
    kit.edit("tests_hidden/parts.py", ', "extra")', ")")
    kit.edit("tests_hidden/parts.py", 'EXTRA_PARTS = ("extra",)', "EXTRA_PARTS = ()")
    kit.edit("tests_hidden/parts.py", ', "extra": "Extra credit",', ",")


CHANGES = {"add a hidden test": add_a_hidden_test, "change a part's points": change_a_parts_points,
           "rename a part": rename_a_part, "remove a part": remove_a_part,
           "remove the extra credit": remove_the_extra_credit}


def failed(run):
    return f"exit {run.returncode}\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"


def test_the_guide_documents_each_change():
    guide = (ROOT / "docs" / "reference" / "changing-the-lab.md").read_text(encoding="utf-8")
    headings = {line[3:].strip().lower() for line in guide.splitlines() if line.startswith("## ")}
    missing = sorted(set(CHANGES) - headings)
    assert not missing, f"docs/reference/changing-the-lab.md has no section for {missing}"


def regenerate(kit):
    """The guide's step after a change: `make stubs` rewrites the generated text (the totals among it)."""
    run = kit.make("stubs")
    assert run.returncode == 0, f"make stubs: {failed(run)}"


@pytest.mark.parametrize("change", CHANGES)
def test_make_validate_passes_after_each_documented_change(tmp_path, change):
    kit = Kit(tmp_path)
    CHANGES[change](kit)
    regenerate(kit)
    run = kit.make("validate")
    assert run.returncode == 0, f"make validate after {change!r}: {failed(run)}"


# The texts that state a total, and the drift tests that read them against the suite.
TOTAL_TEXTS = ("assignment/README.md", "examples/submissions/README.md")
DRIFT_TESTS = ["tests/kit/test_readme.py", "tests/platforms/test_generation.py", "-k",
               "totals or committed_target or manifest"]


@pytest.mark.parametrize("change", ["add a hidden test", "remove the extra credit"])
def test_a_change_of_the_totals_is_named_by_validate_then_generated_with_no_number_typed(tmp_path, change):
    kit = Kit(tmp_path)
    CHANGES[change](kit)
    run = kit.make("validate")
    assert run.returncode != 0, f"make validate should name the stale totals after {change!r}: {failed(run)}"
    for text in TOTAL_TEXTS:
        assert f"{text}: out of sync with its source: run `make stubs`" in run.stdout, failed(run)
    regenerate(kit)
    run = kit.make("validate")
    assert run.returncode == 0, f"make validate after {change!r} and make stubs: {failed(run)}"
    run = subprocess.run([str(kit.root / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *DRIFT_TESTS], cwd=kit.root, env=kit.env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"the drift tests after {change!r}: {failed(run)}"
    changed = subprocess.run(["git", "diff", "--name-only"], cwd=kit.root, env=kit.env, capture_output=True,
                             text=True, check=True).stdout.split()
    assert set(TOTAL_TEXTS) <= set(changed), f"make stubs did not rewrite the totals: {changed}"


def test_make_check_fast_passes_after_every_documented_change_at_once(tmp_path):
    kit = Kit(tmp_path)
    for change in CHANGES.values():
        change(kit)
    regenerate(kit)
    kit.commit("this term's lab")
    run = kit.make("validate")
    assert run.returncode == 0, f"make validate after every change: {failed(run)}"
    run = kit.make("check-fast", timeout=3600)
    assert run.returncode == 0, f"make check-fast after every change: {failed(run)}"


def test_an_engine_upgrade_leaves_a_customised_lab_alone_and_it_validates(tmp_path):
    kit = Kit(tmp_path)
    for change in (add_a_hidden_test, change_a_parts_points, rename_a_part):
        change(kit)
    regenerate(kit)
    lab = kit.lab_digest()
    for name in ENGINE:  # the guide's upgrade: the new release's engine folders replace the old ones
        target = kit.root / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "tmp"))
        else:
            shutil.copy2(source, target)
    assert kit.lab_digest() == lab, "the upgrade changed a file of the instructor's lab"
    run = kit.make("validate")
    assert run.returncode == 0, f"make validate on the customised lab after the upgrade: {failed(run)}"
