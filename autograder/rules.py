"""The from-scratch rule, read from the source text (the run-time check lives in the probes).

The scanner is ``find_forbidden_calls`` in ``assignment/submit.py``, the same code students
run before they submit, loaded here by path so the two can never disagree.
"""
import functools
import importlib.util
import os

SUBMIT_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assignment", "submit.py")


@functools.lru_cache(maxsize=1)
def _scanner():
    spec = importlib.util.spec_from_file_location("_kit_submit", SUBMIT_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.find_forbidden_calls


def forbidden_calls(path):
    """Violations of the rule in the file at ``path`` (read as text, never run)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        source = f.read()
    return _scanner()(source, os.path.basename(path))
