# The command students run, as `python submit.py`: assignment/submit.py is generated from the rule's
# modules (tables, source, checker) and this one, whose docstring is the script's.
"""Check attention.py and mha.py, then pack them into submission.zip for Gradescope.

    python submit.py          # the files next to this script
    python submit.py DIR      # the files in DIR

Both files must exist, parse, import, stay away from the functions this lab forbids, and
use only what the lab allows (README.md, section 5): the modules and names in MODULES, torch's
public API, the built-ins that compute, getattr with a written name only. The zip is written to the current folder and
holds exactly the two files.

The public tests reuse :func:`file_findings` by importing this file, so it uses the standard
library only and does nothing at import time. The grader applies the same rule: this file is
generated from it.
"""
import argparse
import ast
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from autograder.rule.checker import file_findings
from autograder.rule.source import UnreadableSource, read_source
from autograder.rule.tables import FILES

ZIP_NAME = "submission.zip"
IMPORT_TIMEOUT = 120  # seconds: a cold `import torch` can be slow on a laptop
UPLOAD = "upload it to this lab's assignment on Gradescope"


class SubmitError(Exception):
    """A problem with the submission, explained in one line."""


# ----------------------------------------------------------------------------- checks

# Runs in a child process, so a crash or a hang at import time cannot take submit.py down.
_IMPORT_CHECK = r"""
import os, sys, traceback
folder = os.path.abspath(sys.argv[1])
sys.path.insert(0, folder)
sys.dont_write_bytecode = True
for name in ("attention", "mha"):
    try:
        __import__(name)
    except BaseException as exc:
        where = [f for f in traceback.extract_tb(exc.__traceback__)
                 if os.path.dirname(os.path.abspath(f.filename)) == folder]
        at = f" ({os.path.basename(where[-1].filename)}, line {where[-1].lineno})" if where else ""
        extra = " (is torch installed for this python?)" if getattr(exc, "name", "") == "torch" else ""
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        print(f"\nIMPORT-FAILED cannot import {name}.py: {text}{at}{extra}")
        sys.exit(3)
"""


def check_source(folder, filename):
    """Fail unless the file exists, parses and uses no forbidden function."""
    path = folder / filename
    if not path.is_file():
        raise SubmitError(f"{filename} not found in {folder}")
    try:
        source = read_source(path)
    except UnreadableSource as exc:
        raise SubmitError(str(exc)) from None
    try:
        violations = file_findings(folder, filename)
    except SyntaxError as exc:
        raise SubmitError(f"{filename} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise SubmitError(violations[0].message + more)
    return source


def check_imports(folder):
    """Fail unless both files import, in a fresh Python with the folder first on sys.path."""
    try:
        child = subprocess.run([sys.executable, "-c", _IMPORT_CHECK, str(folder)], cwd=folder,
                               capture_output=True, text=True, timeout=IMPORT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"importing your files took over {IMPORT_TIMEOUT} s: "
                          "does code outside the functions run at import time?") from None
    if child.returncode == 0:
        return
    failed = [line for line in child.stdout.splitlines() if line.startswith("IMPORT-FAILED ")]
    if failed:
        raise SubmitError(failed[-1].removeprefix("IMPORT-FAILED "))
    raise SubmitError(f"importing your files stopped Python (exit code {child.returncode})")


EXTRA_CREDIT = {"tiled_attention", "MultiHeadAttention.step"}  # optional: skipping them costs nothing else


def unfinished(source, filename):
    """'causal_mask (attention.py)' for every function that still raises NotImplementedError."""
    def names_it(node):
        node = node.func if isinstance(node, ast.Call) else node
        return isinstance(node, ast.Name) and node.id == "NotImplementedError"

    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and any(
                        isinstance(n, ast.Raise) and n.exc is not None and names_it(n.exc) for n in ast.walk(child)):
                    found.append(name)
                walk(child, f"{name}.")
    walk(ast.parse(source), "")
    return [f"{name} ({filename})" for name in found if not any(name.startswith(f"{f}.") for f in found)]


def remove_stale_zip(target):
    """Delete an earlier zip so it cannot be uploaded by mistake; return a note for the message."""
    try:
        target.unlink()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f" (and the old {target.name} could not be removed: {exc.strerror}; do not upload it)"
    return f" (removed the old {target.name}: it held an earlier version of your files)"


def write_zip(folder, target):
    """Write the two files to ``target`` atomically: no half-written zip on failure."""
    handle, temporary = tempfile.mkstemp(suffix=".zip", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for filename in FILES:
                archive.write(folder / filename, arcname=filename)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check attention.py and mha.py and build submission.zip.")
    parser.add_argument("folder", nargs="?", default=Path(__file__).resolve().parent, type=Path,
                        help="folder holding attention.py and mha.py (default: the folder of submit.py)")
    folder = parser.parse_args(argv).folder.resolve()
    target = Path.cwd() / ZIP_NAME
    try:
        if not folder.is_dir():
            raise SubmitError(f"{folder} is not a folder")
        sources = [check_source(folder, filename) for filename in FILES]
        check_imports(folder)
        write_zip(folder, target)
    except SubmitError as exc:
        print(f"submit: {exc}{remove_stale_zip(target)}", file=sys.stderr)
        return 1
    print(f"Wrote {target} with {' and '.join(FILES)}: {UPLOAD}.")
    todo = [name for source, filename in zip(sources, FILES) for name in unfinished(source, filename)]
    core = [name for name in todo if name.split(" ")[0] not in EXTRA_CREDIT]
    extra = [name for name in todo if name.split(" ")[0] in EXTRA_CREDIT]
    if core:
        print(f"Note: still raise NotImplementedError: {', '.join(core)}; run the tests before you upload.")
    if extra:
        print(f"Optional extra credit not written (this costs nothing else): {', '.join(extra)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
