"""docs/contributing.md's layout map names every module of autograder/ in its group, and no module that is not
there: a module added, moved or removed fails here until the map says so.

The map's line for a group (``autograder/`` for the top, ``  containment/`` ... for the groups, and the lines
indented under it) names its modules as a list: with every parenthesised note taken out, each item of the
lists (after its first colon, if it has one) that is one identifier is a module (``stage, discover, lms, runner``); items of
several words are prose."""
import re

from conftest import ROOT

PACKAGE = ROOT / "autograder"
GUIDE = ROOT / "docs" / "contributing.md"


def layout_block():
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## Layout"):]
    return re.search(r"^```\n(.*?)^```", section, re.S | re.M)[1]


def group_texts(block):
    """{group: its text} for the top ("") and each group of autograder/, continuation lines joined."""
    texts, current = {}, None
    for line in block.splitlines():
        top = re.match(r"autograder/\s+(.*)", line)
        group = re.match(r"  (\w+)/\s+(.*)", line)
        if top or group:
            current = "" if top else group[1]
            texts[current] = (top or group)[top and 1 or 2]
        elif current is not None and line.startswith(" " * 16):
            texts[current] += " " + line.strip()
        else:
            current = None
    return texts


def without_notes(text):
    """``text`` with every parenthesised note (nested too) taken out."""
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def named_modules(text):
    """The single identifiers of the lists in ``text`` after its first colon, notes left out."""
    plain = without_notes(text)
    lists = plain.partition(":")[2] if ":" in plain else plain
    items = (item.strip() for item in re.split(r",|;|:|\band\b", lists))
    return {item for item in items if re.fullmatch(r"[a-z_][a-z0-9_]*", item)}


def modules():
    """{group: its modules} of autograder/ ("" for the top), without the packages' __init__."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if "__pycache__" in relative.parts or path.stem == "__init__":
            continue
        found.setdefault(relative.parts[0] if len(relative.parts) > 1 else "", set()).add(path.stem)
    return found


def test_the_layout_map_names_every_module_in_its_group_and_no_other():
    named = {group: named_modules(text) for group, text in group_texts(layout_block()).items()}
    actual = modules()
    assert set(named) == set(actual), f"groups in the map {sorted(named)}, in autograder/ {sorted(actual)}"
    missing = {group: sorted(actual[group] - named[group]) for group in actual if actual[group] - named[group]}
    stray = {group: sorted(named[group] - actual[group]) for group in actual if named[group] - actual[group]}
    assert not missing, f"docs/contributing.md's layout map does not name {missing}: add each to its group's line"
    assert not stray, f"docs/contributing.md's layout map names {stray}, which autograder/ does not hold"


def test_a_module_missing_from_the_map_is_found():
    text = "a submission to a record: stage (copies it), runner and batch, plugin (points (markers))"
    assert named_modules(text) == {"stage", "runner", "batch", "plugin"}
