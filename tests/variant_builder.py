"""Build variant submissions from the reference: buggy mutants and correct rewrites.

A mutant is one text substitution on a file of solution/ (tests/variants/mutants.yaml), plus
those of its ``also`` list when one mistake needs both files (a helper in attention.py that mha.py imports).
A correct variant is a folder of tests/variants/correct/ holding only the file(s) it
rewrites; the other file comes from solution/. Every built folder holds exactly
attention.py and mha.py, with the nbgrader marker lines removed, as a student's would.
"""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solution"
VARIANTS = Path(__file__).resolve().parent / "variants"
MUTANTS_FILE = VARIANTS / "mutants.yaml"
CORRECT = VARIANTS / "correct"

FILES = ("attention.py", "mha.py")
# Correct variants that also write the extra credit (the others are correct core code that skips it).
EXTRA_VARIANTS = ("tiled_einsum_reversed", "step_preallocated_cache")
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def load_mutants():
    """The mutant table: a list of dicts with name, file, find, replace, parts, why."""
    return yaml.safe_load(MUTANTS_FILE.read_text())


def correct_names():
    """Names of the correct variants, one folder each."""
    return sorted(p.name for p in CORRECT.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def without_markers(text):
    """Drop the nbgrader marker lines so a file reads like a student's."""
    return "".join(line for line in text.splitlines(keepends=True) if line.strip() not in MARKERS)


def edits(mutant):
    """The mutant's substitutions: its own, then those of ``also`` (each a dict with file, find, replace)."""
    return [mutant, *mutant.get("also", [])]


def mutate(mutant):
    """The mutant's file texts, ``{file: text}``: the reference with each `find` replaced once (it must occur once)."""
    texts = {}
    for edit in edits(mutant):
        text = texts.get(edit["file"]) or (SOLUTION / edit["file"]).read_text()
        count = text.count(edit["find"])
        if count != 1:
            raise ValueError(f"mutant {mutant['name']}: `find` occurs {count} times in solution/{edit['file']}")
        texts[edit["file"]] = text.replace(edit["find"], edit["replace"])
    return texts


def build_reference(dest):
    """Write the reference as a student submission into `dest`; return `dest`."""
    return _write(dest, {})


def build_mutant(mutant, dest):
    """Write the reference with one mutant applied into `dest`; return `dest`."""
    return _write(dest, mutate(mutant))


def build_correct(name, dest):
    """Write correct variant `name` into `dest`; return `dest`.

    A variant holds whole files (``attention.py``: it replaces the reference's) or additions
    (``attention.py.append``: code appended to the reference's file, whose later ``def`` wins).
    """
    folder = CORRECT / name
    own = {f: (folder / f).read_text() for f in FILES if (folder / f).exists()}
    own.update({f: (SOLUTION / f).read_text() + (folder / f"{f}.append").read_text()
                for f in FILES if (folder / f"{f}.append").exists()})
    if not own:
        raise ValueError(f"correct variant {name} holds neither attention.py nor mha.py")
    return _write(dest, own)


def _write(dest, texts):
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        text = texts.get(name) or (SOLUTION / name).read_text()
        (dest / name).write_text(without_markers(text))
    return dest
