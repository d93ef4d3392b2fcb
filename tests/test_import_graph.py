"""The engine's modules import one another one way only: no module of autograder/ depends on itself.

Imports inside functions count: deferred or not, an import that closes a loop ties two modules
together, and neither can then be read, tested or moved without the other.
"""
import ast

from conftest import ROOT

PACKAGE = ROOT / "autograder"


def imported_modules(source, known):
    """The modules of ``known`` (names in autograder/) that ``source`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "autograder":
                found |= {alias.name for alias in node.names if alias.name in known}
            elif node.module.startswith("autograder."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("autograder.")}
    return found & known


def import_graph():
    paths = sorted(PACKAGE.glob("*.py"))
    known = {path.stem for path in paths}
    return {path.stem: imported_modules(path.read_text(), known) - {path.stem} for path in paths}


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
    source = "import os\nfrom autograder import wire\n\ndef later():\n    from autograder.sandbox import Child\n"
    assert imported_modules(source, {"wire", "sandbox", "probes"}) == {"wire", "sandbox"}


def test_a_cycle_is_found_and_named():
    cycle = find_cycle({"runner": {"plugin"}, "plugin": {"student", "runner"}, "student": set()})
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"runner", "plugin"}, cycle
    assert find_cycle({"runner": {"plugin"}, "plugin": {"student"}, "student": set()}) is None


def test_the_engine_has_no_import_cycle():
    graph = import_graph()
    assert {"cli", "batch", "runner", "plugin", "student", "sandbox", "isolation"} <= set(graph), (
        "the graph lost the engine's modules: is PACKAGE still autograder/?")
    cycle = find_cycle(graph)
    assert cycle is None, f"autograder/ imports in a loop: {' -> '.join(cycle)} (imports inside functions count)"


def test_the_pipeline_imports_top_down():
    """cli/gradescope -> batch -> runner -> plugin -> student -> sandbox -> isolation: never back up."""
    order = ["batch", "runner", "plugin", "student", "sandbox", "isolation"]
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
