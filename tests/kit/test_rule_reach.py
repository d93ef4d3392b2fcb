"""What the rule's tables reach, computed (autograder/platforms/rule_reach.py; issue 45).

Each walk runs in a process of its own (the walk's calls change torch's global state), on the tables
as they are: a name added to a table is walked the day it is added.
"""
import functools
import json
import subprocess
import sys

from autograder.paths import KIT_ROOT
from autograder.rule.library_names import LIBRARY_NAMES


@functools.lru_cache(maxsize=None)
def walk(*flags):
    done = subprocess.run([sys.executable, "-m", "autograder.platforms.rule_reach", *flags], cwd=KIT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_nothing_forbidden_is_within_reach_of_the_tables():
    """No module, builtins, frame, code object, ctypes or foreign buffer from any allowed name or value."""
    reach = walk()
    assert reach["values"] > 5000, f"the walk reached only {reach['values']} values: it proves little"
    assert reach["forbidden"] == [], "the tables reach what no submission may hold:\n" + "\n".join(
        f"{path}: {why}" for path, why in reach["forbidden"])


def test_every_allowed_name_exists_in_the_installed_module():
    assert walk()["missing"] == [], "a table lists names the installed libraries do not have"


def test_without_the_library_names_an_own_name_reaches_raw_memory():
    """The table is needed: an attribute of your own named `ctypes` would read numpy's (issue 45's class)."""
    forbidden = walk("--without-names")["forbidden"]
    assert any("ctypes" in why for _, why in forbidden), forbidden


def test_the_library_names_table_is_what_the_walk_finds():
    assert walk("--names") == LIBRARY_NAMES, "autograder/rule/library_names.py is stale: run `make stubs`"
