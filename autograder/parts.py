"""The lab's parts, in the order the reports number and list them, read from the lab's own table
(tests_hidden/parts.py), so that the engine holds no fact of the lab and an engine upgrade never
touches it.

Standard library only, and the table is parsed, not imported or run (the hidden suite's folder is not
on sys.path here), so the report modules and the notebook builders can use it without loading pytest
or torch.
"""
import ast
import os

from autograder.paths import HIDDEN_TESTS

LAB_PARTS = os.path.join(HIDDEN_TESTS, "parts.py")


def _lab_assignments(path=LAB_PARTS):
    """{name: value} of the lab table's assignments (literals only: it is never run)."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


def _lab_table(path=LAB_PARTS):
    """PARTS, EXTRA_PARTS and PART_TITLES as the lab's table assigns them."""
    table = _lab_assignments(path)
    return tuple(table["PARTS"]), tuple(table.get("EXTRA_PARTS", ())), dict(table.get("PART_TITLES", {}))


PARTS, EXTRA_PARTS, _titles = _lab_table()
_lab = _lab_assignments()
LAB_NAME = _lab.get("LAB_NAME", "the lab")  # the gradebook's assignment column, the grader's messages
# {part: the playground's otter check of its public cases}: an nbgrader course grades the part in that
# check's place (autograder/platforms/nbgrader_course.py); a part without one is graded at the end.
PUBLIC_CHECKS = dict(_lab.get("PUBLIC_CHECKS", {}))
# {part: two lines} the nbgrader cell of a part without public checks shows; the parts graded on the rule.
NOTEBOOK_TEXTS = dict(_lab.get("NOTEBOOK_TEXTS", {}))
RULE_PARTS = tuple(_lab.get("RULE_PARTS", ()))
# Where the catalogue's mistakes may cost points: {kind: parts}, and {mistake's name: parts} for one apart.
MISTAKE_KIND_PARTS = dict(_lab.get("MISTAKE_KIND_PARTS", {}))
MISTAKE_PARTS = dict(_lab.get("MISTAKE_PARTS", {}))
# {"module.Class": (method, ...)}: the reference's methods a "below" child holds (grading/oracle.py).
LENT_METHODS = {target: tuple(names) for target, names in _lab.get("LENT_METHODS", {}).items()}
PART_TITLES = {**{part: part for part in PARTS}, **_titles, "other": _titles.get("other", "Other")}


def part_index(part):
    """The part's place in the lab, from 0; a part not in the table comes after all of them."""
    return PARTS.index(part) if part in PARTS else len(PARTS)


def part_number(part):
    """The part's number in a report, from 1 (test 3.2 is the second test of part 3)."""
    return part_index(part) + 1
