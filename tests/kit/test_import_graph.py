"""The engine's modules import one another one way only: no module of autograder/ depends on itself,
and the groups are layered. At the bottom, the from-scratch rule (autograder/rule/) imports nothing of
the engine (students run it as their submit.py); every layer may import it. The shared facts at the
top import no group but the rule; the sandbox, the hidden-test author's library (judging) and the reports
import only those; grading imports the sandbox, judging and the reports; a platform imports anything, and nothing imports a platform but the command
line and the other platforms.

The lab meets the engine at one module: tests_hidden/ imports ``autograder.lab`` and nothing else of the
engine, and no module of the engine imports it back. The engine's code holds no fact of the lab: no part
key and not the lab's name (both read from tests_hidden/parts.py).

Imports inside functions count: deferred or not, an import that closes a loop ties two modules
together, and neither can then be read, tested or moved without the other.
"""
import ast
import sys

import pytest
from conftest import ROOT

PACKAGE = ROOT / "autograder"
GROUPS = ("rule", "containment", "judging", "grading", "reports", "platforms")
ENTRY = {"cli", "__main__"}
FACTS = {"__init__", "bounds", "config", "files", "paths", "parts", "rules"}
LAB_API = "lab"  # the one module tests_hidden/ imports: it imports the groups, nothing imports it
MAY_IMPORT = {  # layer -> the layers its modules may import
    "rule": {"rule"},
    "lab": {"rule", "facts", "containment", "judging", "reports", "grading"},
    "facts": {"rule", "facts"},
    "containment": {"rule", "facts", "containment"},
    "judging": {"rule", "facts", "judging"},
    "reports": {"rule", "facts", "reports"},
    "grading": {"rule", "facts", "containment", "judging", "reports", "grading"},
    "platforms": {"rule", "facts", "containment", "judging", "reports", "grading", "platforms"},
    "entry": {"rule", "facts", "containment", "judging", "reports", "grading", "platforms", "entry"},
}


def module_name(path):
    """``containment.sandbox`` for autograder/containment/sandbox.py; ``cli`` for autograder/cli.py."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def imported_modules(source, known):
    """The modules of ``known`` (dotted names below autograder/) that ``source`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "autograder" or node.module.startswith("autograder.")):
            package = node.module.removeprefix("autograder").lstrip(".")
            for alias in node.names:  # a module imported from its package, or a name from a module
                whole = f"{package}.{alias.name}" if package else alias.name
                found.add(whole if whole in known else package)
        elif isinstance(node, ast.Import):
            found |= {alias.name.removeprefix("autograder.") for alias in node.names
                      if alias.name.startswith("autograder.")}
    return found & known


def import_graph():
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path.read_text(), known) - {module_name(path)} for path in paths}


def layer(name):
    group = name.split(".")[0]
    if group in GROUPS:
        return group
    return "entry" if name in ENTRY else "facts" if name in FACTS else "lab" if name == LAB_API else None


def find_cycle(graph):
    """One cycle of ``graph`` as a list of names (first == last), or None."""
    state, stack = {}, []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        state[name] = "done"
        stack.pop()
        return None

    for name in sorted(graph):
        if name not in state:
            cycle = visit(name)
            if cycle:
                return cycle
    return None


def test_imports_inside_functions_are_part_of_the_graph():
    source = ("import os\nfrom autograder.containment import wire\n\n"
              "def later():\n    from autograder.containment.sandbox import Child\n")
    known = {"containment.wire", "containment.sandbox", "containment.probes"}
    assert imported_modules(source, known) == {"containment.wire", "containment.sandbox"}


def test_a_module_and_a_name_from_a_module_are_told_apart():
    source = "from autograder import rules\nfrom autograder.reports.results import GRADED\nimport autograder.config\n"
    assert imported_modules(source, {"rules", "reports.results", "config", "reports"}) == {
        "rules", "reports.results", "config"}


def test_a_cycle_is_found_and_named():
    cycle = find_cycle({"runner": {"plugin"}, "plugin": {"student", "runner"}, "student": set()})
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"runner", "plugin"}, cycle
    assert find_cycle({"runner": {"plugin"}, "plugin": {"student"}, "student": set()}) is None


def test_the_engine_has_no_import_cycle():
    graph = import_graph()
    assert {"cli", "grading.batch", "grading.runner", "grading.plugin", "grading.student", "containment.sandbox",
            "containment.isolation", "containment.jail"} <= set(graph), \
        "the graph lost the engine's modules: is PACKAGE still autograder/?"
    cycle = find_cycle(graph)
    assert cycle is None, f"autograder/ imports in a loop: {' -> '.join(cycle)} (imports inside functions count)"


def test_the_engine_imports_its_modules_by_their_full_names():
    """No relative imports: each module has one name, the one the graph (and a reader's grep) sees."""
    relative = sorted(module_name(path) for path in PACKAGE.rglob("*.py")
                      if any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(ast.parse(path.read_text()))))
    assert not relative, f"relative imports in {relative}: write from autograder.<group>.<module> import ..."


def test_every_module_belongs_to_one_layer():
    """A module at the top is the entry or a shared fact; every other lives in one of the groups."""
    stray = sorted(name for name in import_graph() if layer(name) is None)
    assert not stray, f"{stray}: move each into a group (or list it in ENTRY or FACTS if every group needs it)"


def upward_imports(graph):
    return sorted(f"{name} -> {target}" for name, targets in graph.items() for target in targets
                  if layer(target) not in MAY_IMPORT[layer(name)])


def test_the_groups_import_down_the_layers_only():
    upward = upward_imports(import_graph())
    assert not upward, f"imports across the layers: {upward} (see each group's __init__.py)"


@pytest.mark.parametrize("module, wrong", [
    ("containment.probes", "from autograder.judging.compare import expect_close"),
    ("reports.feedback", "from autograder.containment import wire"),
    ("grading.batch", "from autograder.platforms import gradescope_zip"),
    ("config", "from autograder.reports import results"),
    ("rule.checker", "from autograder.paths import KIT_ROOT"),
    ("rule.tables", "from autograder import rules"),
    ("judging.compare", "from autograder.grading.student import Student"),
    ("judging.properties", "from autograder.containment import sandbox"),
])
def test_a_deliberately_wrong_import_fails_the_layering(module, wrong):
    graph = import_graph()
    graph[module] = graph[module] | imported_modules(wrong, set(graph))
    assert upward_imports(graph), f"{module} importing '{wrong}' went unnoticed"


def test_the_graph_sees_the_rule_where_the_engine_uses_it():
    """The grader reads the rule through rules.py, and the child's op record names the built-ins by it."""
    graph = import_graph()
    assert {"rule.checker", "rule.source", "rule.tables"} <= graph["rules"], graph["rules"]
    assert {"rules", "rule.checker"} <= reachable(graph, "containment.probes")


def test_the_rule_imports_the_standard_library_and_itself_only():
    """Students run the rule as their submit.py, with a bare Python and torch: nothing else is there."""
    foreign = []
    for path in sorted((PACKAGE / "rule").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            foreign += [f"{module_name(path)}: {name}" for name in names
                        if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("autograder.rule.")]
    assert not foreign, f"the rule imports beyond the standard library: {foreign}"


def test_each_group_says_what_it_may_import():
    for group in GROUPS:
        doc = ast.get_docstring(ast.parse((PACKAGE / group / "__init__.py").read_text()))
        assert doc and "May import:" in doc, f"autograder/{group}/__init__.py: say what the group is and may import"


def test_the_pipeline_imports_top_down():
    """cli/gradescope -> batch -> runner -> plugin -> student -> sandbox -> jail: never back up."""
    order = ["grading.batch", "grading.runner", "grading.plugin", "grading.student", "containment.sandbox",
             "containment.jail"]
    graph = import_graph()
    for lower_index, lower in enumerate(order):
        for upper in order[:lower_index]:
            assert upper not in reachable(graph, lower), f"{lower} reaches {upper}: the pipeline imports back up"


def reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


# --- the lab's API: the one door between tests_hidden/ and the engine --------------------------------

HIDDEN = ROOT / "tests_hidden"


def engine_imports(source):
    """The engine modules ``source`` imports (dotted, from ``autograder``), and the plugins it names by string."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "autograder":
            found |= {node.module} if node.module != "autograder" else {f"autograder.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "autograder"}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("autograder."):
            found.add(node.value)  # pytest_plugins = ["autograder...."], importlib.import_module("autograder....")
    return found


def test_the_hidden_suite_imports_only_the_labs_api():
    imports = {path.name: engine_imports(path.read_text(encoding="utf-8")) for path in sorted(HIDDEN.glob("*.py"))}
    assert any(imports.values()), "tests_hidden/ imports nothing of the engine: is HIDDEN still the suite?"
    other = {name: sorted(found - {f"autograder.{LAB_API}"}) for name, found in imports.items() if found - {f"autograder.{LAB_API}"}}
    assert not other, f"tests_hidden/ imports the engine past autograder.lab: {other} (re-export it there)"


def test_a_hidden_test_importing_an_engine_module_is_caught():
    assert engine_imports("from autograder.judging.compare import fail\n") == {"autograder.judging.compare"}
    assert engine_imports('pytest_plugins = ["autograder.grading.plugin"]\n') == {"autograder.grading.plugin"}
    assert engine_imports("from autograder import lab\n") == {"autograder.lab"}


def test_nothing_in_the_engine_imports_the_labs_api():
    importers = sorted(name for name, targets in import_graph().items() if LAB_API in targets)
    assert not importers, f"{importers} import autograder.lab: it is the lab's door, the engine never uses it"


def lab_table():
    """The literal assignments of tests_hidden/parts.py (it is never run)."""
    tree = ast.parse((HIDDEN / "parts.py").read_text(encoding="utf-8"))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)}


def code_strings(source):
    """(line, text) of every string constant of ``source`` that is not a docstring."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings)


# The strings of the engine equal to a part key that are not the part, each with why: the student's module
# attention.py shares the part's name, and ``extra`` is also a requirement marker's variable (PEP 508).
NOT_THE_PART = {
    ("containment/probes.py", "attention"): "the student's module attention.py",
    ("rule/tables.py", "attention"): "the student's module attention.py",
    ("containment/protocol.py", "attention"): "the student's module attention.py",
    ("grading/student.py", "attention"): "the student's module attention.py",
    ("platforms/gradescope_zip.py", "extra"): "a requirement marker's variable (PEP 508)",
}
# The nbgrader course's grading module runs alone on the grading machine, without the kit's facts: its
# messages and names still carry the lab's name (LAB-03: ..., LAB03_KIT), which its copy in a course keeps.
NAMED_FOR_THE_COURSE = "platforms/nbgrader_grading.py"


def lab_facts_in(relative, source, parts, lab_name):
    """The part keys and the lab's name that the engine module ``relative`` (its ``source``) states in its code."""
    found = []
    for line, text in code_strings(source):
        if text in parts and (relative, text) not in NOT_THE_PART:
            found.append(f"{relative}:{line}: part key {text!r}")
        if lab_name in text and relative != NAMED_FOR_THE_COURSE:
            found.append(f"{relative}:{line}: the lab's name in {text[:60]!r}")
    return found


def test_the_engine_states_no_part_key_and_not_the_labs_name():
    table = lab_table()
    parts, lab_name = set(table["PARTS"]), table["LAB_NAME"]
    found = [fact for path in sorted(PACKAGE.rglob("*.py"))
             for fact in lab_facts_in(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"), parts,
                                      lab_name)]
    assert not found, ("the engine holds facts of the lab; read them from tests_hidden/parts.py "
                       f"(autograder/parts.py) instead: {found}")


def test_a_part_key_or_the_labs_name_in_the_engine_is_caught():
    source = '"""Docstrings may say extra and LAB-03."""\nPARTS_OF = {"tiled": ("extra",)}\nTITLE = "the LAB-03 kit"\n'
    assert lab_facts_in("grading/planted.py", source, {"extra"}, "LAB-03") == [
        "grading/planted.py:2: part key 'extra'", "grading/planted.py:3: the lab's name in 'the LAB-03 kit'"]
