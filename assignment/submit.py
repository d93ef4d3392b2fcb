"""Check attention.py and mha.py, then pack them into submission.zip for Gradescope.

    python submit.py          # the files next to this script
    python submit.py DIR      # the files in DIR

Both files must exist, parse, import, and stay away from the functions this lab
forbids. The zip is written to the current folder and holds exactly the two files.

The grader reuses :func:`find_forbidden_calls` by importing this file, so it uses
the standard library only and does nothing at import time.
"""
import argparse
import ast
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

FILES = ("attention.py", "mha.py")
ZIP_NAME = "submission.zip"
IMPORT_TIMEOUT = 120  # seconds: a cold `import torch` can be slow on a laptop
UPLOAD = "upload it to the LAB-03 'Attention from Scratch' assignment on Gradescope"

# What each forbidden name really is, for messages.
FORBIDDEN = {
    "scaled_dot_product_attention": "torch.nn.functional.scaled_dot_product_attention",
    "MultiheadAttention": "torch.nn.MultiheadAttention",
    "multi_head_attention_forward": "torch.nn.functional.multi_head_attention_forward",
}
STUDENT_MODULES = {"attention", "mha"}  # your own modules: their names are always fine


class Violation(NamedTuple):
    filename: str
    line: int
    name: str  # the forbidden function, e.g. "torch.nn.MultiheadAttention"
    message: str  # one line, ready to show to the student


class SubmitError(Exception):
    """A problem with the submission, explained in one line."""


# ----------------------------------------------------------------------------- forbidden calls

def _forbidden(path):
    """The forbidden function a dotted path like 'torch.nn.functional.x' names, or None."""
    parts = path.split(".")
    if parts[0] in STUDENT_MODULES:
        return None
    last = parts[-1]
    if last == "MultiheadAttention":
        return FORBIDDEN["MultiheadAttention"]
    if "multi_head_attention_forward" in last:
        return FORBIDDEN["multi_head_attention_forward"]
    # Only torch's: your own scaled_dot_product_attention is the point of the lab.
    # "in" also catches private variants such as torch.ops.aten._scaled_dot_product_flash_attention.
    if parts[0] == "torch" and "scaled_dot_product" in last:
        return FORBIDDEN["scaled_dot_product_attention"]
    return None


def _is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Scanner(ast.NodeVisitor):
    """Finds forbidden functions by resolving names through imports and simple aliases."""

    def __init__(self, filename):
        self.filename = filename
        self.bindings = {}  # local name -> dotted path it stands for
        self.star_modules = set()  # modules imported with `from M import *`
        self.violations = {}  # (line, name) -> Violation

    # -- names

    def path(self, node):
        """Dotted path an expression stands for ('torch.nn.functional'), or None."""
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            func, args = self.path(node.func), node.args
            if func == "getattr" and len(args) >= 2 and _is_str(args[1]):
                base = self.path(args[0])
                return None if base is None else f"{base}.{args[1].value}"
            if func == "importlib.import_module" and args and _is_str(args[0]):
                return args[0].value
            if func == "__import__" and args and _is_str(args[0]):
                return args[0].value.split(".")[0]  # __import__("a.b") returns the package a
        return None

    def bind(self, tree):
        """Record what each imported or simply assigned name stands for."""
        for _ in range(3):  # a few rounds resolve chains like `nn = torch.nn; F = nn.functional`
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            self.bindings[alias.asname] = alias.name
                        else:  # `import torch.nn.functional` binds `torch`
                            root = alias.name.split(".")[0]
                            self.bindings[root] = root
                elif isinstance(node, ast.ImportFrom):
                    module = "." * node.level + (node.module or "")
                    for alias in node.names:
                        if alias.name == "*":
                            self.star_modules.add(module)
                        else:
                            self.bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.bindings[node.name] = f"<local>.{node.name}"
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], self.path(node.value)
                    if isinstance(target, ast.Name) and value is not None and value != target.id:
                        self.bindings[target.id] = value

    # -- reports

    def report(self, node, used):
        name = _forbidden(used)
        if name is None or (node.lineno, name) in self.violations:
            return
        shown = used if isinstance(node, (ast.Import, ast.ImportFrom)) else ast.unparse(node)
        what = f"{shown} is {name}, which" if shown != name else name
        message = (f"{self.filename}, line {node.lineno}: {what} is not allowed in this lab; "
                   "write it yourself with tensor operations")
        self.violations[node.lineno, name] = Violation(self.filename, node.lineno, name, message)

    def visit_ImportFrom(self, node):
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                self.report(node, f"{module}.{alias.name}")

    def visit_Import(self, node):
        for alias in node.names:
            self.report(node, alias.name)

    def visit_Attribute(self, node):
        path = self.path(node)
        if path is not None:
            self.report(node, path)
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            path = self.path(node)
            if path is not None:
                self.report(node, path)
        self.generic_visit(node)

    def visit_Name(self, node):
        # A bare forbidden name that nothing in the file defines came from a star import.
        if node.id in FORBIDDEN and node.id not in self.bindings:
            torch_stars = sorted(m for m in self.star_modules if m.split(".")[0] == "torch")
            if torch_stars:
                self.report(node, f"{torch_stars[0]}.{node.id}")


def find_forbidden_calls(source: str, filename: str) -> "list[Violation]":
    """Every use of a forbidden torch function in ``source``, in line order.

    Flags imports of and attribute access to torch.nn.functional.scaled_dot_product_attention,
    torch.nn.MultiheadAttention and torch.nn.functional.multi_head_attention_forward, through
    any alias (``import torch.nn.functional as F``, ``from torch import nn``, ``x = torch.nn``).
    Your own ``scaled_dot_product_attention``, and names from your own ``attention`` module,
    are fine. Raises SyntaxError if ``source`` does not parse.
    """
    tree = ast.parse(source, filename=filename)
    scanner = _Scanner(filename)
    scanner.bind(tree)
    scanner.visit(tree)
    return sorted(scanner.violations.values(), key=lambda v: (v.line, v.name))


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
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SubmitError(f"{filename} is not UTF-8 text") from None
    try:
        violations = find_forbidden_calls(source, filename)
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
