"""Generate what students receive from the reference, with nbgrader's own ClearSolutions.

    python -m autograder.platforms.generate           # rewrite the targets that are out of sync
    python -m autograder.platforms.generate --check   # only list them; exit 1 if any
    python -m autograder.platforms.generate --force   # overwrite hand edits too

A generated file is never edited by hand: its source is. MANIFEST keeps the SHA-256 of what each
target last received from generation; a target that is out of sync and whose bytes match neither
that nor the new rendering was edited by hand, and is left alone (with a line naming its source)
unless ``--force`` is given. The same holds for a stray check: only one the kit wrote is deleted.

Every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region of a source becomes
``raise NotImplementedError`` at the region's indentation; everything else (docstrings,
imports, given code) is kept as written. A Python module goes through ClearSolutions as a
one-cell notebook, so modules and notebooks share one preprocessor and one configuration.
A notebook also loses its outputs.

The otter checks in assignment/checks/ are generated too: one file per part of the public
case table (assignment/tests/cases.py), one otter test case per public case; and so is the
lab text's example heatmap, assignment/causal_attention.png (autograder/reports/lab_figure.py), and
six regions of the public checks (assignment/tests/checks.py): the tolerance table, copied from the
grader's (autograder/judging/compare.py) so a value the public tests accept is one the grader accepts,
the seeded ``randn`` (autograder/judging/seeded.py) the hidden cases draw their inputs with, the
table of torch errors' hints (autograder/judging/error_hints.py) the reports use too, and the grader's
test for a float64 result that is only float32-accurate, with the catalogue's words for it, and its
large-scores test (autograder/judging/own_forward.py), with the catalogue's words for an overflowing softmax,
and the catalogue's words for every mistake. Besides: the lab text's rule tables (from assignment/submit.py),
and the totals texts state, from the hidden suite's points (the lab text's extra-credit line, the samples'
maximum), so that no figure of them is typed by hand. Every region is one of ``REGIONS``.

The students' submit.py is generated too, from the engine's rule (autograder/rule/): its modules and
the command students run, joined into one script that imports the standard library only
(``render_submit``). An engine upgrade brings the student's copy of the rule along.

nbgrader is an instructor-only dependency (its import takes seconds): it is imported here
and only when something is generated, never by anything under assignment/.
"""
import argparse
import collections
import difflib
import functools
import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from autograder.paths import KIT_ROOT

ROOT = Path(KIT_ROOT)

# (source, target) pairs relative to ROOT, rendered by RENDERERS after the source's suffix.
PAIRS = [
    ("solution/attention.py", "assignment/attention.py"),
    ("solution/mha.py", "assignment/mha.py"),
    ("solution/playground.ipynb", "assignment/playground.ipynb"),
]

# The lab text's example picture, drawn from the reference (autograder/reports/lab_figure.py).
FIGURE_PAIRS = [("solution/attention.py", "assignment/causal_attention.png")]

# The public case table, and the folder of otter checks generated from it (one file per part).
CASES = "assignment/tests/cases.py"
CHECKS = "assignment/checks"

# Regions of the public checks copied from the grader (``REGIONS``, below): the lines between each
# pair of markers are rendered from their source, so the two cannot disagree. The students' file
# imports nothing from the grader; it holds copies. First, the tolerance table.
REGION_TARGET = "assignment/tests/checks.py"
TOLERANCE_SOURCE = "autograder/judging/compare.py"
TOLERANCE_BEGIN = "# The grader's own tolerances (atol + rtol * |expected|), copied from its table: do not edit."
TOLERANCE_END = "# (end of the grader's tolerances)"

# The public checks' seeded inputs, the same way: the function the hidden cases use, copied.
SEEDED_SOURCE = "autograder/judging/seeded.py"
SEEDED_BEGIN = "# The grader's seeded inputs, copied from autograder/judging/seeded.py: do not edit."
SEEDED_END = "# (end of the grader's seeded inputs)"

# And the hints for torch's errors, which the reports give too: the module's code, copied.
HINTS_SOURCE = "autograder/judging/error_hints.py"
HINTS_BEGIN = "# The grader's hints for torch errors, copied from autograder/judging/error_hints.py: do not edit."
HINTS_END = "# (end of the grader's hints)"

# And the grader's measured properties (autograder/judging/properties.py): each hint states one that failed, in
# the same words on both sides. The module's code, copied.
PROPERTIES_SOURCE = "autograder/judging/properties.py"
PROPERTIES_BEGIN = "# The grader's measured properties, copied from autograder/judging/properties.py: do not edit."
PROPERTIES_END = "# (end of the grader's measured properties)"

# And the grader's diagnosis of a float64 result that is only float32-accurate (autograder/judging/compare.py), with
# the catalogue's sentence for it (autograder/judging/catalogue.py): `make test` names it in the grade's words.
PRECISION_SOURCE = "autograder/judging/catalogue.py"  # with the test and hint from autograder/judging/compare.py
PRECISION_BEGIN = "# The grader's float32-in-float64 diagnosis, copied from autograder/judging/compare.py and catalogue.py: do not edit."
PRECISION_END = "# (end of the grader's float32-in-float64 diagnosis)"

# And the grader's large-scores test (autograder/judging/own_forward.py): the inputs whose scores are all shifted
# by one constant, the hint, and the catalogue's words for an overflowing softmax.
STABILITY_SOURCE = "autograder/judging/own_forward.py"  # with the catalogue's words for the mistake
STABILITY_BEGIN = "# The grader's large-scores test, copied from autograder/judging/own_forward.py and catalogue.py: do not edit."
STABILITY_END = "# (end of the grader's large-scores test)"

# And the grader's gate of its gradients part (autograder/judging/own_forward.py): is the forward attention at all?
# The same file feeds the large-scores region, so the key names which of its parts this region is.
GATE_SOURCE = "autograder/judging/own_forward.py (the gate)"
GATE_BEGIN = "# The grader's gate of its gradients part, copied from autograder/judging/own_forward.py: do not edit."
GATE_END = "# (end of the grader's gate)"

# And the catalogue's words for every mistake it names (autograder/judging/catalogue.py), by kind and name: the
# public hints name a defect in the grade's words. The key names the region (catalogue.py also feeds the precision one).
WORDS_SOURCE = "autograder/judging/catalogue.py (the mistakes' words)"
WORDS_BEGIN = "# The grader's words for the mistakes it names, copied from autograder/judging/catalogue.py: do not edit."
WORDS_END = "# (end of the grader's words for the mistakes)"

# The lab text's tables of what the from-scratch rule allows, from the rule's tables (which submit.py carries).
RULES_SOURCE = "autograder/rule/tables.py"
RULES_TARGET = "assignment/README.md"
RULES_BEGIN = ("<!-- BEGIN the rule's tables: generated from submit.py (ALLOWED, ANNOTATION_ONLY, VALUE_MEMBERS); "
               "do not edit -->")
RULES_END = "<!-- END the rule's tables -->"

# The students' submit.py, from the rule's modules (autograder/rule/), in the order each needs the ones
# before it; the last is the command, whose docstring opens the script.
SUBMIT_SOURCE = "autograder/rule"
SUBMIT_TARGET = "assignment/submit.py"
SUBMIT_MODULES = ("library_names", "tables", "source", "checker", "submit_cli")

# The library attributes an own name may not read (autograder/rule/library_names.py), computed from the rule's
# tables by walking what they reach (autograder/platforms/rule_reach.py; recomputed only when what decides it
# changed: its fingerprint).
NAMES_SOURCE = "autograder/platforms/rule_reach.py"
NAMES_TARGET = "autograder/rule/library_names.py"
SUBMIT_HEADER = ("# Generated from {source}/ ({files}): do not edit.\n"
                 "# This is the rule the grader applies, as one script; a change to it is made there.\n")

# The totals the lab's texts state, from the hidden suite's points (autograder/grading/suite_points.py): no
# figure of them is typed by hand. The extra credit's line of the lab text (it says the section is not graded
# when the suite has no extra credit), and the sentence under the samples' scores.
TOTALS_SOURCE = "tests_hidden/ (the suite's points)"
EXTRA_LINE_BEGIN = "<!-- BEGIN the extra credit's points: generated from the grader's tests; do not edit -->"
EXTRA_LINE_END = "<!-- END the extra credit's points -->"
PUBLIC_POINTS_SOURCE = "assignment/tests/cases.py (the public points)"
PUBLIC_POINTS_BEGIN = "<!-- BEGIN the public tests' points: generated from tests/cases.py; do not edit -->"
PUBLIC_POINTS_END = "<!-- END the public tests' points -->"
SAMPLES_SOURCE = "tests_hidden/ (the suite's maximum)"
SAMPLES_TARGET = "examples/submissions/README.md"
SAMPLES_BEGIN = "<!-- BEGIN the maximum: generated from tests_hidden/; do not edit -->"
SAMPLES_END = "<!-- END the maximum -->"

CODE_STUB = "raise NotImplementedError"

# "<sha256>  <target>" per line (sha256sum's format): what each whole generated file last received.
MANIFEST = "generated.sha256"


def _skip_iri_grammar():
    """Before nbformat is first imported: keep jsonschema from loading its optional IRI checker.

    nbformat (which nbgrader imports too) imports jsonschema, which imports ``rfc3987_syntax`` when it is
    installed and builds 38 parsers of RFC 3987's grammar at import: a second of the ``make validate``
    this module serves. Neither nbformat's schema nor the kit checks an IRI, and jsonschema imports that
    module only if it can (an ImportError leaves the "iri" formats unchecked), so it is marked absent,
    here only, when nothing has imported it yet."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


def import_clearing_preprocessors_only():
    """In a process that only checks and then ends (``make validate``'s child): import nbgrader's own
    ClearSolutions and ClearOutput without running the ``__init__`` of the package ``nbgrader`` (it loads
    its Jupyter server extensions: about 0.6 s of the check) nor of ``nbgrader.preprocessors`` (every
    preprocessor, the gradebook's database). The classes, and so the rendering, are nbgrader's own; the
    rest of nbgrader is not importable in that process afterwards, so ``make stubs`` and the kit's tests
    import nbgrader whole. Nothing is done when nbgrader is imported already."""
    if "nbgrader" in sys.modules:
        return
    _skip_iri_grammar()
    packages = []
    try:
        for name in ("nbgrader", "nbgrader.preprocessors"):  # the packages, their code not run
            module = importlib.util.module_from_spec(importlib.util.find_spec(name))
            sys.modules[name] = module
            packages.append(module)
        nbgrader, preprocessors = packages
        nbgrader.preprocessors = preprocessors
        preprocessors.NbGraderPreprocessor = importlib.import_module("nbgrader.preprocessors.base").NbGraderPreprocessor
        preprocessors.ClearSolutions = importlib.import_module("nbgrader.preprocessors.clearsolutions").ClearSolutions
        preprocessors.ClearOutput = importlib.import_module("nbgrader.preprocessors.clearoutput").ClearOutput
    except Exception:  # another nbgrader's layout: imported whole by the renderers instead
        for name in [name for name in sys.modules if name == "nbgrader" or name.startswith("nbgrader.")]:
            del sys.modules[name]


def clear_solutions_preprocessor():
    """nbgrader's ClearSolutions, set to replace each solution region with CODE_STUB."""
    _skip_iri_grammar()
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
    _skip_iri_grammar()
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    stub = clear_notebook(nb).cells[0].source
    if stub == source:
        raise ValueError("no '### BEGIN SOLUTION' region found: the stub would be the solution")
    compile(stub, "<stub>", "exec")  # a region that leaves invalid Python fails here, not in class
    return stub


def render_module(path: Path) -> str:
    return clear_solutions(path.read_text(encoding="utf-8"))


def render_notebook(path: Path) -> str:
    """The student notebook: solution regions cleared, outputs and execution counts dropped."""
    _skip_iri_grammar()
    import nbformat
    from nbgrader.preprocessors import ClearOutput

    nb = clear_notebook(nbformat.read(path, as_version=4))
    nb, _ = ClearOutput().preprocess(nb, {})
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


RENDERERS = {".py": render_module, ".ipynb": render_notebook}


# ----------------------------------------------------------------------------- otter checks

CHECK_HEADER = '''"""Otter check "{part}": {title}.

Generated from tests/cases.py; do not edit (change the cases there).
Each test case runs one public case (the same as `python -m pytest tests`) on the
attention.py and mha.py next to checks/.
"""
from otter.test_files import test_case

OK_FORMAT = False

name = "{part}"


def public_case(case):
    import sys
    from pathlib import Path

    # otter runs this file with exec() and no __file__, but the code still knows its path.
    lab = Path(public_case.__code__.co_filename).resolve().parent.parent
    sys.path.insert(0, str(lab / "tests"))
    try:
        from cases import run_case
    finally:
        sys.path.remove(str(lab / "tests"))
    run_case(case, lab)
'''

CHECK_CASE = '''

@test_case(name="{name}", points={points})
def {name}():
    public_case("{name}")
'''


def public_cases():
    """((name, part, points), ...) of the public case table, and its {part: title}."""
    return _case_table(ROOT / CASES)


@functools.lru_cache(maxsize=None)
def _case_table(path: Path):
    """Import the table at `path`. It imports its neighbour ``checks``; both are taken out of
    sys.modules again afterwards, so they cannot shadow other modules of those names."""
    folder = str(path.parent)
    names = (path.stem, "checks")
    saved = {name: sys.modules.pop(name, None) for name in names}
    sys.path.insert(0, folder)
    try:
        table = importlib.import_module(path.stem)
        return tuple((c.name, c.part, c.points) for c in table.CASES), dict(table.PARTS)
    finally:
        sys.path.remove(folder)
        for name, module in saved.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


def check_pairs() -> list:
    """(CASES, check file) for every part of the table."""
    _, parts = public_cases()
    return [(CASES, f"{CHECKS}/{part}.py") for part in parts]


def render_check(part: str) -> str:
    """The otter test file of one part: one test case per public case of that part."""
    cases, parts = public_cases()
    text = CHECK_HEADER.format(part=part, title=parts[part])
    for name, case_part, points in cases:
        if case_part == part:
            text += CHECK_CASE.format(name=name, points=points)
    return text


# ----------------------------------------------------------------------------- tolerances

def tolerance_table() -> str:
    """The public ``TOLERANCE`` dict, as source text, from the grader's ``compare.TOLERANCES``."""
    from autograder.judging.compare import TOLERANCES

    rows = "".join(f"    {dtype}: dict(atol={atol!r}, rtol={rtol!r}),\n" for dtype, (atol, rtol) in TOLERANCES.items())
    return "TOLERANCE = {\n" + rows + "}\n"


def seeded_source() -> str:
    """The source text of ``autograder.judging.seeded.randn``, for the public checks."""
    import inspect

    from autograder.judging import seeded

    return inspect.getsource(seeded.randn)


def hints_source() -> str:
    """The code of ``autograder/judging/error_hints.py`` (its docstring, which speaks of the grader, left out)."""
    from autograder.judging import error_hints

    return _code_of(error_hints)


def properties_source() -> str:
    """The code of ``autograder/judging/properties.py`` (its docstring left out)."""
    from autograder.judging import properties

    return _code_of(properties)


def _code_of(module) -> str:
    """A module's text after its docstring."""
    import ast

    text = Path(module.__file__).read_text(encoding="utf-8")
    docstring = ast.parse(text).body[0]
    return "".join(text.splitlines(keepends=True)[docstring.end_lineno:])


def precision_source() -> str:
    """The grader's float32-precision test, its hint, and the catalogue's words for the mistake."""
    import inspect

    from autograder.judging import catalogue, compare

    return (f"FLOAT32_EPS = torch.finfo(torch.float32).eps\n"
            f"FLOAT32_IN_FLOAT64 = {catalogue.FLOAT32_IN_FLOAT64.explain()!r}\n"
            f"FLOAT32_HINT = {compare.FLOAT32_HINT!r}\n"
            f"FLOAT64_DEPARTS = {compare.FLOAT64_DEPARTS!r}\n\n\n" + inspect.getsource(compare._float32_precision))


def stability_source() -> str:
    """The grader's shift of every score by one constant, its hint, and the catalogue's words for an unstable softmax."""
    import inspect

    from autograder.judging import catalogue, own_forward

    return (f"UNSTABLE_SOFTMAX = {catalogue.UNSTABLE_SOFTMAX.explain()!r}\n"
            f"SHIFT_HINT = {own_forward.SHIFT_HINT!r}\n\n\n" + inspect.getsource(own_forward.shift_all_scores)
            + "\n\n" + inspect.getsource(own_forward._orthogonal_to_rows))


def gate_source() -> str:
    """The grader's gate: its tolerance and ``not_attention`` with the three functions it calls."""
    import inspect

    from autograder.judging import own_forward

    return (f"GATE_ATOL = {own_forward.GATE_ATOL!r}\n\n\n" + inspect.getsource(own_forward.not_attention) + "\n\n"
            + inspect.getsource(own_forward._not_attention) + "\n\n" + inspect.getsource(own_forward._applied)
            + "\n\n" + inspect.getsource(own_forward._spread_evenly))


def words_source() -> str:
    """``MISTAKES``: {kind: {name: the catalogue's sentence, with where the lab covers it}}, for every catalogued
    mistake and every one found from the pattern of a failure (the precision entries have their own region)."""
    from autograder.judging import catalogue

    kinds = {}
    for kind, entries in catalogue.CATALOGUE.items():
        kinds[kind] = {entry.name: entry.explain() for entry, _ in entries}
    for entry in catalogue.FOUND_FROM_PATTERN:
        kinds.setdefault(entry.kind, {})[entry.name] = entry.explain()
    lines = ["MISTAKES = {  # kind -> {name: what the grade says}"]
    for kind, names in kinds.items():
        lines.append(f"    {kind!r}: {{")
        lines += [f"        {name!r}: {words!r}," for name, words in names.items()]
        lines.append("    },")
    return "\n".join(lines) + "\n}\n"


def rules_tables() -> str:
    """Section 5's tables: every module's names by purpose, the annotation-only names, the members of values, the
    special methods a class may define and the bases it may derive from."""
    from autograder.rule import tables as submit  # the names submit.py carries too
    code = lambda names: ", ".join(f"`{n}`" for n in names)  # noqa: E731
    lines = ["**What your files may import, and which names of each** (`submit.py`, `ALLOWED`):", "",
             "| module | for | names |", "|---|---|---|"]
    for module, groups in submit.ALLOWED.items():
        for i, (purpose, names) in enumerate(groups.items()):
            lines.append(f"| {f'`{module}`' if i == 0 else ''} | {purpose} | {code(names)} |")
    lines += ["", "**Only in type annotations** (`ANNOTATION_ONLY`): " + "; ".join(
        f"from `{module}`: {code(names)}" for module, names in submit.ANNOTATION_ONLY.items()) + ".", "",
        "**Members of values** (`VALUE_MEMBERS`), besides the names your own two files define:", "",
        "| of | members |", "|---|---|"]
    lines += [f"| {kind} | {code(names)} |" for kind, names in submit.VALUE_MEMBERS.items()]
    lines += ["", "**Special methods a class of yours may define** (`SPECIAL_METHODS`; no other special name):", "",
              "| method | what it is for |", "|---|---|"]
    lines += [f"| `{name}` | {purpose} |" for name, purpose in submit.SPECIAL_METHODS.items()]
    lines += ["", "**What a class of yours may derive from** (`BASES`), besides your own classes, `object` and "
              "Python's exceptions: " + code(sorted(submit.BASES)) + "."]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- submit.py

@functools.lru_cache(maxsize=1)
def render_library_names() -> str:
    """autograder/rule/library_names.py as the walk makes it (the kit's own file kept when its fingerprint holds)."""
    from autograder.platforms import rule_reach

    path = Path(KIT_ROOT) / NAMES_TARGET
    return rule_reach.render_names(path.read_text(encoding="utf-8") if path.exists() else "", KIT_ROOT)


def render_submit() -> str:
    """The students' submit.py: SUBMIT_MODULES joined into one script. The command's docstring opens it
    (after SUBMIT_HEADER); every module's imports of the standard library are gathered at the top, and its
    imports of the rule's other modules dropped (those names are defined above it by then). A module's own
    docstring, which speaks of the engine, is left out. Read from the rule package that is imported (the
    kit's own), so a copy of the lab (``ROOT`` elsewhere) is rendered with the kit's rule."""
    import ast

    from autograder import rule

    folder, imports, bodies, defined, doc = Path(rule.__file__).parent, [], [], {}, None
    for name in SUBMIT_MODULES:
        where = f"{SUBMIT_SOURCE}/{name}.py"
        text = render_library_names() if name == "library_names" else (folder / f"{name}.py").read_text(encoding="utf-8")
        doc, statements, body, needs = _split_module(text, where)
        for module, names in needs:  # from autograder.rule.<module> import <names>: defined above, by name
            missing = sorted(set(names) - defined.get(module, set()))
            if missing:
                raise ValueError(f"{where} imports {missing} from {module}, which comes later or does not define them")
        tops = _top_names(ast.parse(body))
        clash = sorted(tops & set().union(*defined.values()))
        if clash:
            raise ValueError(f"{where} defines {clash} again: in one script, the later one would win")
        defined[name] = tops
        imports += [line for line in statements if line not in imports]
        bodies.append(f"# {'=' * 77} {where}\n\n{body}")
    imports.sort(key=lambda line: (line.startswith("from "), line))
    text = (SUBMIT_HEADER.format(source=SUBMIT_SOURCE, files=", ".join(f"{n}.py" for n in SUBMIT_MODULES))
            + f'"""{doc}"""\n' + "\n".join(imports) + "\n\n\n" + "\n\n\n".join(bodies))
    compile(text, SUBMIT_TARGET, "exec")
    return text


def _split_module(text: str, where: str):
    """(docstring, its standard-library imports as lines, the code after the imports, [(rule module, names)])
    of one of the rule's modules; ValueError for an import the one script could not hold."""
    import ast

    tree = ast.parse(text)
    doc = ast.get_docstring(tree, clean=False)
    if doc is None or '"""' in doc or "\\" in doc:
        raise ValueError(f"{where} needs a docstring (plain text, no backslash) to open the module")
    statements, needs, end = [], [], tree.body[0].end_lineno
    for node in tree.body[1:]:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
        end = node.end_lineno
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder.rule."):
            if any(alias.asname for alias in node.names):
                raise ValueError(f"{where}, line {node.lineno}: import the rule's names as they are (no 'as')")
            needs.append((node.module.removeprefix("autograder.rule."), [alias.name for alias in node.names]))
            continue
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        if getattr(node, "level", 0) or any(n.split(".")[0] not in sys.stdlib_module_names for n in names):
            raise ValueError(f"{where}, line {node.lineno}: the rule imports the standard library and itself only")
        statements.append(ast.get_source_segment(text, node))
    later = [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
             and node.lineno > end]
    if later:
        raise ValueError(f"{where}, line {later[0]}: the rule imports at the top of a module only")
    return doc, statements, "".join(text.splitlines(keepends=True)[end:]).strip("\n") + "\n", needs


def _top_names(tree) -> set:
    """The names a module's top level binds (its functions, classes and assigned names)."""
    import ast

    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        for target in node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target is not None else set()
    return names


def extra_credit_line() -> str:
    """The lab text's promise of the extra credit's points, or, with none in the suite, that it is not graded."""
    from autograder.grading.suite_points import core_max, extra_max

    if not extra_max():
        return "They are not graded this term: try them if you like.\n"
    return (f"They are worth up to **{extra_max():g} points above the {core_max():g}**, and optional: skip them and "
            "nothing else changes.\n")


def public_score_line() -> str:
    """The lab text's example of `make test`'s last line, all passed: the public case table's points."""
    cases, _ = public_cases()
    points = sum(case_points for _, _, case_points in cases)
    return f"```\npublic tests: {points:g}/{points:g} points (your grade also counts the hidden tests)\n```\n"


def samples_maximum() -> str:
    """The samples' README: what a total is out of, as the suite stands."""
    from autograder.grading.suite_points import core_max, extra_max

    above = f", extra credit (up to {extra_max():g}) above it" if extra_max() else ""
    return f"With the suite as it stands, a total is out of {core_max():g}{above}.\n"


Region = collections.namedtuple("Region", "what begin end body target", defaults=(REGION_TARGET,))
# source -> its region of ``target`` (the public checks unless named); ``body`` makes the region's text.
REGIONS = {
    TOLERANCE_SOURCE: Region("tolerance", TOLERANCE_BEGIN, TOLERANCE_END, tolerance_table),
    SEEDED_SOURCE: Region("seeded-input", SEEDED_BEGIN, SEEDED_END, seeded_source),
    HINTS_SOURCE: Region("hint", HINTS_BEGIN, HINTS_END, hints_source),
    PROPERTIES_SOURCE: Region("measured-property", PROPERTIES_BEGIN, PROPERTIES_END, properties_source),
    PRECISION_SOURCE: Region("precision", PRECISION_BEGIN, PRECISION_END, precision_source),
    STABILITY_SOURCE: Region("large-scores", STABILITY_BEGIN, STABILITY_END, stability_source),
    GATE_SOURCE: Region("gate", GATE_BEGIN, GATE_END, gate_source),
    WORDS_SOURCE: Region("mistakes' words", WORDS_BEGIN, WORDS_END, words_source),
    RULES_SOURCE: Region("rule-table", RULES_BEGIN, RULES_END, rules_tables, RULES_TARGET),
    TOTALS_SOURCE: Region("extra-credit", EXTRA_LINE_BEGIN, EXTRA_LINE_END, extra_credit_line, RULES_TARGET),
    PUBLIC_POINTS_SOURCE: Region("public-points", PUBLIC_POINTS_BEGIN, PUBLIC_POINTS_END, public_score_line,
                                 RULES_TARGET),
    SAMPLES_SOURCE: Region("maximum", SAMPLES_BEGIN, SAMPLES_END, samples_maximum, SAMPLES_TARGET),
}


def render_region_of(source: str, path: Path, text: str = None) -> str:
    """``path``'s text (or ``text``, its text with other regions rendered already) with the region made from
    ``source`` rendered anew."""
    region = REGIONS[source]
    return render_region(path, region.what, region.begin, region.end, region.body(), text)


def render_region(path: Path, what: str, begin_marker: str, end_marker: str, body: str, text: str = None) -> str:
    """``path``'s text (or ``text``) with the lines between two marker lines (each there once) replaced by ``body``."""
    text = path.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines(keepends=True)
    stripped = [line.rstrip("\n") for line in lines]
    if stripped.count(begin_marker) != 1 or stripped.count(end_marker) != 1:
        raise ValueError(f"{path} must hold each {what} marker line exactly once:\n{begin_marker}\n{end_marker}")
    begin, end = stripped.index(begin_marker), stripped.index(end_marker)
    if end < begin:
        raise ValueError(f"{path}: the {what} end marker comes before the begin marker")
    return "".join(lines[:begin + 1]) + body + "".join(lines[end:])


def all_pairs() -> list:
    return (PAIRS + check_pairs() + FIGURE_PAIRS + [(source, region.target) for source, region in REGIONS.items()]
            + engine_pairs() + [(SUBMIT_SOURCE, SUBMIT_TARGET)])


def engine_pairs() -> list:
    """Generated files of the engine itself (the rule's table of library names): the kit's, not a lab's, so
    only when ROOT is the kit (a lab kept elsewhere is rendered with the kit's rule, which holds them)."""
    return [(NAMES_SOURCE, NAMES_TARGET)] if ROOT.resolve() == Path(KIT_ROOT).resolve() else []


def render(source: str, target: str, text: str = None):
    """What `target` must hold, made from `source` (both relative to ROOT): text, or bytes for an image.
    ``text``: for a region, the target's text with its other regions rendered already (one file, several)."""
    if source == CASES:
        return render_check(Path(target).stem)
    if source in REGIONS:
        return render_region_of(source, ROOT / target, text)
    if source == SUBMIT_SOURCE:
        return render_submit()
    if source == NAMES_SOURCE:
        return render_library_names()
    if target.endswith(".png"):
        from autograder.reports import lab_figure

        return lab_figure.render(ROOT / source)
    return RENDERERS[Path(source).suffix](ROOT / source)


def _holds(path: Path, expected) -> bool:
    if not path.exists():
        return False
    if isinstance(expected, bytes):
        return path.read_bytes() == expected
    return path.read_text(encoding="utf-8") == expected


def stray_checks() -> list:
    """Files in CHECKS that no part of the table generates (a part was renamed or removed)."""
    expected = {ROOT / target for _, target in check_pairs()}
    folder = ROOT / CHECKS
    return sorted(p for p in folder.glob("*") if p.is_file() and p not in expected) if folder.is_dir() else []


class HandEdited(Exception):
    """Generated files that were edited by hand: ``edits`` is [(target, its source)]."""

    def __init__(self, edits):
        super().__init__(", ".join(str(target) for target, _ in edits))
        self.edits = edits


def _digest(data) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode("utf-8")).hexdigest()


def read_manifest() -> dict:
    """{target: sha256} of what generation last wrote; empty when there is no manifest yet."""
    path = ROOT / MANIFEST
    if not path.exists():
        return {}
    return {name: digest for digest, _, name in
            (line.partition("  ") for line in path.read_text(encoding="utf-8").splitlines()) if name}


def _write_manifest(manifest: dict) -> None:
    lines = "".join(f"{digest}  {name}\n" for name, digest in sorted(manifest.items()))
    (ROOT / MANIFEST).write_text(lines, encoding="utf-8", newline="\n")


def _edited_by_hand(path: Path, manifest: dict) -> bool:
    """An existing target whose bytes are not what generation last wrote there. A region target is the
    instructor's file around generated regions (its regions carry "do not edit"): not checked whole."""
    return path.exists() and manifest.get(path.relative_to(ROOT).as_posix()) != _digest(path.read_bytes())


def _whole(source: str) -> bool:
    return source not in REGIONS


def generate(check: bool = False, force: bool = False, images=None, nbgrader=None) -> list:
    """Bring every target in sync with its source; return the targets that were out of sync.

    Stray files in CHECKS count as out of sync and are deleted. With check=True nothing is written.
    A whole generated file that was edited by hand raises ``HandEdited`` before anything is written,
    unless ``force``. ``images``: True for the image targets only (the lab text's figure: torch and
    matplotlib), False for all the others (nbgrader's), None for all (``make validate`` checks the two
    halves side by side). ``nbgrader``: True for the PAIRS only (nbgrader's renderings, no torch needed),
    False for all the others, None for all.
    """
    recorded = read_manifest()
    manifest, planned, edits = dict(recorded), {}, []  # planned: {path: what it must hold}, several regions in one
    for source, target in PAIRS if nbgrader else all_pairs():  # (the case table imports torch)
        if images is not None and target.endswith(".png") != images:
            continue
        if nbgrader is not None and ((source, target) in PAIRS) != nbgrader:
            continue
        path = ROOT / target
        expected = render(source, target, planned.get(path))
        if _whole(source):
            manifest[target] = _digest(expected)
        if _holds(path, expected):
            continue
        planned[path] = expected
        if _whole(source) and _edited_by_hand(path, recorded):
            edits.append((target, source))
    for path in stray_checks() if not images and not nbgrader else []:
        planned[path] = None
        if _edited_by_hand(path, recorded):
            edits.append((path.relative_to(ROOT).as_posix(), CASES))
        manifest.pop(path.relative_to(ROOT).as_posix(), None)
    if check:
        return list(planned)
    if edits and not force:
        raise HandEdited(edits)
    for path, expected in planned.items():
        _write(path, expected)
    if manifest != recorded:
        _write_manifest(manifest)
    return list(planned)


def _write(path: Path, expected) -> None:
    if expected is None:
        path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(expected, bytes):
        path.write_bytes(expected)
    else:
        path.write_text(expected, encoding="utf-8", newline="\n")


def diff(source: str, target: str) -> str:
    """Unified diff from the committed target to what generation produces from source."""
    rendered = render(source, target)
    path = ROOT / target
    if isinstance(rendered, bytes):
        return "" if _holds(path, rendered) else f"{target} differs from the image drawn from {source}\n"
    expected = rendered.splitlines(keepends=True)
    actual = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []
    return "".join(difflib.unified_diff(actual, expected, f"{target} (committed)", f"{target} (generated)"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.platforms.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list out-of-sync targets; exit 1 if any")
    parser.add_argument("--force", action="store_true", help="overwrite generated files edited by hand")
    args = parser.parse_args(argv)

    try:
        drifted = generate(check=args.check, force=args.force)
    except HandEdited as err:
        for target, source in err.edits:
            print(f"refused: {target} was edited by hand; it is generated from {source}: make the change there "
                  "and run `make stubs` again", file=sys.stderr)
        print("nothing was written; `make stubs FORCE=1` overwrites the hand edits", file=sys.stderr)
        return 1
    for path in drifted:
        rel = path.relative_to(ROOT)
        print(f"out of sync: {rel}" if args.check else f"{'wrote' if path.exists() else 'removed'} {rel}")
    if args.check and drifted:
        print(f"run `make stubs` to regenerate them from solution/, {CASES} and autograder/ "
              f"({', '.join(REGIONS)})", file=sys.stderr)
        return 1
    if not drifted:
        print(f"all generated files are in sync with solution/, {CASES} and autograder/ "
              f"({', '.join(REGIONS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
