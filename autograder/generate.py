"""Generate what students receive from the reference, with nbgrader's own ClearSolutions.

    python -m autograder.generate           # rewrite the targets that are out of sync
    python -m autograder.generate --check   # only list them; exit 1 if any

Every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region of a source becomes
``raise NotImplementedError`` at the region's indentation; everything else (docstrings,
imports, given code) is kept as written. A Python module goes through ClearSolutions as a
one-cell notebook, so modules and notebooks share one preprocessor and one configuration.

nbgrader is an instructor-only dependency (its import takes seconds): it is imported here
and only when something is generated, never by anything under assignment/.
"""
import argparse
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (source, target) pairs relative to ROOT. A notebook pair such as
# ("solution/playground.ipynb", "assignment/playground.ipynb") only needs a renderer in RENDERERS.
PAIRS = [
    ("solution/attention.py", "assignment/attention.py"),
    ("solution/mha.py", "assignment/mha.py"),
]

CODE_STUB = "raise NotImplementedError"


def clear_solutions_preprocessor():
    """nbgrader's ClearSolutions, set to replace each solution region with CODE_STUB."""
    from nbgrader.preprocessors import ClearSolutions  # slow import: keep it out of module load

    # enforce_metadata=False: regions may sit in plain code cells (our modules are not nbgrader
    # "solution cells", which would be replaced whole if they had no region).
    return ClearSolutions(code_stub={"python": CODE_STUB}, enforce_metadata=False)


def clear_notebook(nb):
    """Run ClearSolutions over a notebook (an nbformat NotebookNode) and return it."""
    nb, _ = clear_solutions_preprocessor().preprocess(nb, {})
    return nb


def clear_solutions(source: str) -> str:
    """Python module source -> its student stub. Raises ValueError if the result is unusable."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    stub = clear_notebook(nb).cells[0].source
    if stub == source:
        raise ValueError("no '### BEGIN SOLUTION' region found: the stub would be the solution")
    compile(stub, "<stub>", "exec")  # a region that leaves invalid Python fails here, not in class
    return stub


def render_module(path: Path) -> str:
    return clear_solutions(path.read_text(encoding="utf-8"))


RENDERERS = {".py": render_module}


def render(source: Path) -> str:
    """The text that the target of `source` must hold."""
    return RENDERERS[source.suffix](source)


def generate(check: bool = False) -> list:
    """Bring every target in sync with its source; return the targets that were out of sync.

    With check=True nothing is written.
    """
    drifted = []
    for source, target in PAIRS:
        expected = render(ROOT / source)
        path = ROOT / target
        if path.exists() and path.read_text(encoding="utf-8") == expected:
            continue
        drifted.append(path)
        if not check:
            path.write_text(expected, encoding="utf-8", newline="\n")
    return drifted


def diff(source: str, target: str) -> str:
    """Unified diff from the committed target to what generation produces from source."""
    expected = render(ROOT / source).splitlines(keepends=True)
    path = ROOT / target
    actual = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []
    return "".join(difflib.unified_diff(actual, expected, f"{target} (committed)", f"{target} (generated)"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list out-of-sync targets; exit 1 if any")
    args = parser.parse_args(argv)

    drifted = generate(check=args.check)
    for path in drifted:
        rel = path.relative_to(ROOT)
        print(f"out of sync: {rel}" if args.check else f"wrote {rel}")
    if args.check and drifted:
        print("run `make stubs` to regenerate them from solution/", file=sys.stderr)
        return 1
    if not drifted:
        print("all generated files are in sync with solution/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
