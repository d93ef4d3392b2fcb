"""The student stubs are generated from the reference, stay in sync and leak nothing.

Leak rule: a line of a solution region counts as leaked when, with its comment and
surrounding whitespace removed, it is at least MIN_LEAK_CHARS long and equals a line of a
file under assignment/ (normalised the same way). Whole-line equality finds copied code;
the length floor skips short idioms that the lab text or public tests may state on their own
(``return output, weights``, ``B, T, _ = x.shape``). A separate test makes sure every
region still has a line long enough to be checked, so the rule cannot go blind.
"""
import ast
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder.platforms import generate
from conftest import copy_of_the_generated_files

ROOT = generate.ROOT
ASSIGNMENT = ROOT / "assignment"
SOLUTION = ROOT / "solution"
MODULE_PAIRS = [pair for pair in generate.PAIRS if pair[0].endswith(".py")]

MARKERS = ("BEGIN SOLUTION", "END SOLUTION")
MIN_LEAK_CHARS = 25

# Every function and method students write: each must raise NotImplementedError in the stub.
CONTRACT = [
    "attention.causal_mask",
    "attention.padding_mask",
    "attention.scaled_dot_product_attention",
    "attention.ScaledDotProductAttention.forward",
    "mha.MultiHeadAttention.__init__",
    "mha.MultiHeadAttention.split_heads",
    "mha.MultiHeadAttention.merge_heads",
    "mha.MultiHeadAttention.forward",
]

# Runs in a fresh interpreter with only assignment/ added to sys.path (the tests import the
# reference under the same module names) and reports what each contract call did.
PROBE = r'''
import json
import sys

sys.path.insert(0, sys.argv[1])
import torch
import torch.nn as nn

import attention
import mha


def outcome(call):
    try:
        call()
    except NotImplementedError:
        return "NotImplementedError"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "returned normally"


def bare_mha():
    # __init__ is a stub too: skip it to reach the other methods
    module = mha.MultiHeadAttention.__new__(mha.MultiHeadAttention)
    nn.Module.__init__(module)
    return module


x = torch.randn(2, 4, 8)
calls = {
    "attention.causal_mask": lambda: attention.causal_mask(4),
    "attention.padding_mask": lambda: attention.padding_mask(torch.tensor([[5, 0]]), 0),
    "attention.scaled_dot_product_attention": lambda: attention.scaled_dot_product_attention(x, x, x),
    "attention.ScaledDotProductAttention.forward": lambda: attention.ScaledDotProductAttention()(x, x, x),
    "mha.MultiHeadAttention.__init__": lambda: mha.MultiHeadAttention(8, 2),
    "mha.MultiHeadAttention.split_heads": lambda: bare_mha().split_heads(x),
    "mha.MultiHeadAttention.merge_heads": lambda: bare_mha().merge_heads(x.view(2, 2, 4, 4)),
    "mha.MultiHeadAttention.forward": lambda: bare_mha()(x, x, x),
}
print(json.dumps({
    "outcomes": {name: outcome(call) for name, call in calls.items()},
    "nbgrader_imported": any(name.split(".")[0] == "nbgrader" for name in sys.modules),
    "dimension_mismatch_is_value_error": issubclass(mha.DimensionMismatchError, ValueError),
}))
'''


# ---------------------------------------------------------------- helpers


def text_of(path):
    """The text a reader sees in `path` (cell sources for a notebook), or None if binary."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None
    if path.suffix == ".ipynb":
        return "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    return text


def assignment_files():
    return sorted(p for p in ASSIGNMENT.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def normalise(line):
    return line.split("#", 1)[0].strip()


def solution_regions(text):
    """The lines inside each BEGIN/END SOLUTION region of `text`, one list per region."""
    regions, current = [], None
    for line in text.splitlines():
        if MARKERS[0] in line:
            current = []
        elif MARKERS[1] in line:
            regions.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return regions


def checked_lines(region):
    return {normalise(line) for line in region if len(normalise(line)) >= MIN_LEAK_CHARS}


def reference_regions():
    """(source file name, region lines) for every solution region of the reference."""
    return [
        (path.name, region)
        for path in sorted(SOLUTION.iterdir())
        if path.suffix in (".py", ".ipynb")
        for region in solution_regions(text_of(path))
    ]


def definitions(tree, prefix=""):
    """{qualified name: def/class node} for every function and class in `tree`."""
    found = {}
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            found[name] = node
            found.update(definitions(node, name + "."))
    return found


def parse(relpath):
    return ast.parse((ROOT / relpath).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def probe():
    """What each contract call does when the stubs are imported in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-I", "-B", "-c", PROBE, str(ASSIGNMENT)],
        capture_output=True, text=True, timeout=120, cwd=ASSIGNMENT,
    )
    assert result.returncode == 0, f"the stubs in assignment/ do not import:\n{result.stderr}"
    return json.loads(result.stdout)


# ---------------------------------------------------------------- the generator


def test_clear_solutions_replaces_a_region_with_an_indented_raise():
    source = 'def f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n'
    stub = generate.clear_solutions(source)
    assert stub == 'def f(x):\n    """Doc."""\n    raise NotImplementedError\n', f"unexpected stub:\n{stub}"


def test_clear_solutions_refuses_a_source_without_regions():
    with pytest.raises(ValueError, match="no '### BEGIN SOLUTION' region"):
        generate.clear_solutions("def f(x):\n    return x\n")


# ---------------------------------------------------------------- sync and leaks


@pytest.mark.parametrize("source, target", generate.all_pairs(), ids=[t for _, t in generate.all_pairs()])
def test_committed_target_matches_generation(source, target):
    assert (ROOT / target).exists(), f"{target} is missing: run `make stubs`"
    drift = generate.diff(source, target)
    if drift:  # pytest.fail keeps the report to the message and the diff
        pytest.fail(f"{target} is out of sync with {source}: run `make stubs`\n{drift[:3000]}", pytrace=False)


def test_checks_folder_holds_only_generated_checks():
    stray = [str(path.relative_to(ROOT)) for path in generate.stray_checks()]
    assert not stray, f"no part of {generate.CASES} generates {stray}: run `make stubs` to remove them"


@pytest.fixture
def lab_copy(tmp_path, monkeypatch):
    """solution/, assignment/ and the manifest in a fresh folder, which generation then works on."""
    copy_of_the_generated_files(tmp_path)
    shutil.copy(ROOT / generate.MANIFEST, tmp_path / generate.MANIFEST)
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    return tmp_path


def test_generation_removes_the_check_of_a_removed_part(lab_copy):
    stray = lab_copy / generate.CHECKS / "part9_gone.py"
    stray.write_text("OK_FORMAT = False\nname = 'part9_gone'\n")
    with open(lab_copy / generate.MANIFEST, "a") as f:  # a check the kit generated, for a part since removed
        f.write(f"{hashlib.sha256(stray.read_bytes()).hexdigest()}  {generate.CHECKS}/part9_gone.py\n")
    assert generate.generate(check=True) == [stray], "--check should report exactly the stray check"
    assert stray.exists(), "--check must not delete anything"
    assert generate.generate() == [stray] and not stray.exists(), "generation should delete the stray check"
    assert f"{generate.CHECKS}/part9_gone.py" not in generate.read_manifest()


def test_a_file_in_the_checks_folder_that_the_kit_never_wrote_is_kept(lab_copy):
    mine = lab_copy / generate.CHECKS / "my_own_check.py"
    mine.write_text("OK_FORMAT = False\nname = 'mine'\n")
    with pytest.raises(generate.HandEdited):
        generate.generate()
    assert mine.exists()


def test_a_hand_edited_stub_is_refused_and_its_source_named(lab_copy):
    stub = lab_copy / "assignment" / "attention.py"
    stub.write_text(stub.read_text() + "# an edit made in the stub\n")
    edited = stub.read_text()
    (lab_copy / "solution" / "mha.py").write_text((lab_copy / "solution" / "mha.py").read_text() + "\n# changed\n")
    with pytest.raises(generate.HandEdited) as refused:
        generate.generate()
    assert refused.value.edits == [("assignment/attention.py", "solution/attention.py")]
    assert stub.read_text() == edited, "the hand edit was overwritten"
    assert not (lab_copy / "assignment" / "mha.py").read_text().endswith("# changed\n"), "nothing is written"


def test_make_stubs_says_which_source_to_edit(lab_copy, capsys):
    stub = lab_copy / "assignment" / "attention.py"
    stub.write_text(stub.read_text() + "# an edit made in the stub\n")
    assert generate.main([]) == 1
    err = capsys.readouterr().err
    assert "assignment/attention.py was edited by hand" in err and "solution/attention.py" in err, err


def test_force_overwrites_a_hand_edit(lab_copy):
    stub = lab_copy / "assignment" / "attention.py"
    stub.write_text(stub.read_text() + "# an edit made in the stub\n")
    assert generate.generate(force=True) == [stub]
    assert generate.generate(check=True) == [] and "an edit made" not in stub.read_text()


def test_a_changed_source_regenerates_its_stub_and_the_manifest(lab_copy):
    source = lab_copy / "solution" / "attention.py"
    source.write_text(source.read_text() + "\n# a note for next term\n")
    stub = lab_copy / "assignment" / "attention.py"
    assert generate.generate() == [stub] and stub.read_text().endswith("# a note for next term\n")
    assert generate.read_manifest()["assignment/attention.py"] == hashlib.sha256(stub.read_bytes()).hexdigest()


# ---------------------------------------------------------------- submit.py, from the engine's rule

def load_script(path):
    """A submit.py imported by path, as the public tests import theirs."""
    spec = importlib.util.spec_from_file_location("generated_submit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_submit_py_says_it_is_generated_and_from_which_modules():
    first = (ASSIGNMENT / "submit.py").read_text(encoding="utf-8").splitlines()[0]
    assert "Generated from autograder/rule/" in first and "do not edit" in first, first
    assert all(f"{name}.py" in first for name in generate.SUBMIT_MODULES), first


def test_submit_py_imports_the_standard_library_only():
    """Students run it with a bare Python (and torch): the rule's imports of its own modules are gone."""
    tree = ast.parse((ASSIGNMENT / "submit.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and {name.split(".")[0] for name in imported} <= sys.stdlib_module_names, imported


def test_submit_py_carries_the_engines_tables():
    from autograder.rule import tables

    script = load_script(ASSIGNMENT / "submit.py")
    for name in ("ALLOWED", "ANNOTATION_ONLY", "VALUE_MEMBERS", "ALLOWED_BUILTINS", "REFUSED_NAMES",
                 "INTERPRETER_MEMBERS", "REFUSED_SYNTAX"):
        assert getattr(script, name) == getattr(tables, name), name


@pytest.mark.parametrize("imports", ["import torch", "from autograder.paths import KIT_ROOT",
                                     "from autograder.rule.tables import FILES as PAIR"])
def test_a_rule_module_the_one_script_could_not_hold_is_refused(imports):
    """Beyond the standard library, the engine outside the rule, or a renamed name of the rule: students'
    submit.py would not run, or would run with another meaning."""
    with pytest.raises(ValueError):
        generate._split_module(f'"""A module of the rule."""\n{imports}\n\nX = 1\n', "autograder/rule/x.py")


def test_a_rule_module_keeps_its_docstring_imports_and_code_apart():
    doc, imports, body, needs = generate._split_module(
        '"""Doc."""\nimport ast\nfrom autograder.rule.tables import FILES\n\n# why\nX = FILES\n', "x.py")
    assert (doc, imports, body, needs) == ("Doc.", ["import ast"], "# why\nX = FILES\n", [("tables", ["FILES"])])


def test_a_hand_edited_submit_py_is_refused_and_the_rule_named(lab_copy):
    script = lab_copy / generate.SUBMIT_TARGET
    text = script.read_text()
    assert text.count("\nMAX_DEPTH = 100 ") == 1
    script.write_text(text.replace("\nMAX_DEPTH = 100 ", "\nMAX_DEPTH = 10_000 "))  # a student relaxing the rule
    with pytest.raises(generate.HandEdited) as refused:
        generate.generate()
    assert refused.value.edits == [(generate.SUBMIT_TARGET, generate.SUBMIT_SOURCE)]


def test_a_stale_submit_py_is_named_and_then_regenerated(lab_copy):
    """An older engine's copy (recorded in the manifest as what generation wrote): the check names it,
    `make validate` too, and generation replaces it without calling it a hand edit."""
    from autograder.platforms import validate

    script = lab_copy / generate.SUBMIT_TARGET
    text = script.read_text()
    assert " logsumexp " in text
    script.write_text(text.replace(" logsumexp ", " ", 1))  # a name the older rule did not allow
    with open(lab_copy / generate.MANIFEST, "a") as f:
        f.write(f"{hashlib.sha256(script.read_bytes()).hexdigest()}  {generate.SUBMIT_TARGET}\n")
    assert generate.generate(check=True) == [script]
    assert validate.generated_problems() == [f"{generate.SUBMIT_TARGET}: out of sync with its source: run `make stubs`"]
    assert generate.generate() == [script] and script.read_text() == generate.render_submit()


def kit_copy(tmp_path):
    """The kit as an instructor has it (the engine, the lab, the manifest), in a fresh folder."""
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for folder in ("autograder", "solution", "assignment", "tests_hidden"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=ignore)
    for name in (generate.MANIFEST, "grading.yaml", "examples/submissions/README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def run_generate(kit, *args):
    return subprocess.run([sys.executable, "-m", "autograder.platforms.generate", *args], cwd=kit,
                          env={**os.environ, "PYTHONPATH": str(kit)}, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # the generator in a copy of the kit, twice (nbgrader, torch, the figure)
def test_an_engine_upgrade_brings_the_students_submit_py_along(tmp_path):
    """One name added to an allow-list of the engine's rule: before `make stubs`, the check names the student's
    submit.py as stale; after, the student's script allows that name, as the grader does."""
    kit = kit_copy(tmp_path)
    tables = kit / "autograder" / "rule" / "tables.py"
    text = tables.read_text()
    assert text.count('"reductions": "sum mean ') == 1
    tables.write_text(text.replace('"reductions": "sum mean ', '"reductions": "sum mean logcumsumexp ', 1))
    code = "import torch\n\n\ndef f(x):\n    return torch.logcumsumexp(x, 0)\n"
    assert load_script(kit / "assignment" / "submit.py").find_forbidden_calls(code, "attention.py"), \
        "the name must be refused before the upgrade, or the test proves nothing"

    check = run_generate(kit, "--check")
    assert check.returncode == 1 and f"out of sync: {generate.SUBMIT_TARGET}" in check.stdout.splitlines(), check
    assert run_generate(kit).returncode == 0
    assert load_script(kit / "assignment" / "submit.py").find_forbidden_calls(code, "attention.py") == []
    assert run_generate(kit, "--check").returncode == 0


def test_the_manifest_records_every_committed_generated_file():
    """Without this, the first `make stubs` after a change to a source would take the committed stub
    for a hand edit."""
    recorded = generate.read_manifest()
    whole = [target for source, target in generate.all_pairs() if generate._whole(source)]
    stale = [t for t in whole if recorded.get(t) != hashlib.sha256((ROOT / t).read_bytes()).hexdigest()]
    assert not stale, f"{generate.MANIFEST} does not record {stale}: run `make stubs`"


def test_student_notebook_has_no_outputs():
    notebook = json.loads((ROOT / "assignment/playground.ipynb").read_text(encoding="utf-8"))
    kept = [cell.get("id") for cell in notebook["cells"]
            if cell["cell_type"] == "code" and (cell["outputs"] or cell["execution_count"] is not None)]
    assert not kept, f"cells of assignment/playground.ipynb keep outputs or execution counts: {kept}"


def test_student_notebook_leaves_the_exercise_to_the_student():
    cells = {cell["id"]: "".join(cell["source"])
             for cell in json.loads((ROOT / "assignment/playground.ipynb").read_text(encoding="utf-8"))["cells"]}
    exercises = [cid for cid, source in cells.items() if generate.CODE_STUB in source]
    assert exercises, "no cell of the student notebook asks for code (raise NotImplementedError)"


def test_no_solution_marker_under_assignment():
    found = [
        f"{path.relative_to(ROOT)}: {marker}"
        for path in assignment_files()
        for marker in MARKERS
        if marker.encode() in path.read_bytes()
    ]
    assert not found, "nbgrader solution markers leaked into assignment/:\n" + "\n".join(found)


def test_every_solution_region_is_covered_by_the_leak_check():
    regions = reference_regions()
    assert regions, "no solution regions found in solution/"
    blind = [name for name, region in regions if not checked_lines(region)]
    assert not blind, (
        f"a solution region in {blind} has no line of {MIN_LEAK_CHARS}+ characters, "
        "so the leak check cannot see it; lower MIN_LEAK_CHARS or lengthen the region"
    )


def test_no_solution_line_under_assignment():
    solution_lines = set().union(*(checked_lines(region) for _, region in reference_regions()))
    leaks = []
    for path in assignment_files():
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if normalise(line) in solution_lines:
                leaks.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not leaks, "solution code leaked into assignment/:\n" + "\n".join(leaks)


def importers(package):
    """``file:line`` of every import of ``package`` (or a module in it) by a Python file under assignment/."""
    found = []
    for path in assignment_files():
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(name.split(".")[0] == package for name in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_nothing_under_assignment_imports_nbgrader():
    offenders = importers("nbgrader")
    assert not offenders, "nbgrader is instructor-only, but is imported by:\n" + "\n".join(offenders)


def test_nothing_under_assignment_imports_the_grader():
    """Students have torch and pytest, not the kit: what the public files share with the grader is copied in."""
    offenders = importers("autograder")
    assert not offenders, "the grader is not shipped to students, but is imported by:\n" + "\n".join(offenders)


def test_tolerance_region_needs_both_markers(tmp_path):
    path = tmp_path / "checks.py"
    path.write_text(f"import torch\n{generate.TOLERANCE_BEGIN}\nTOLERANCE = {{}}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="marker"):
        generate.render_region_of(generate.TOLERANCE_SOURCE, path)


def test_tolerance_region_is_rendered_between_the_markers(tmp_path):
    path = tmp_path / "checks.py"
    path.write_text(f"before\n{generate.TOLERANCE_BEGIN}\nstale\n{generate.TOLERANCE_END}\nafter\n", encoding="utf-8")
    rendered = generate.render_region_of(generate.TOLERANCE_SOURCE, path)
    assert rendered == (f"before\n{generate.TOLERANCE_BEGIN}\n{generate.tolerance_table()}{generate.TOLERANCE_END}\nafter\n"), (
        f"only the lines between the markers should change:\n{rendered}")


# ---------------------------------------------------------------- the stubs run


def test_stubs_do_not_load_nbgrader(probe):
    assert not probe["nbgrader_imported"], "importing the stubs loaded nbgrader (students do not have it)"


@pytest.mark.parametrize("name", CONTRACT)
def test_stub_raises_not_implemented(probe, name):
    assert probe["outcomes"][name] == "NotImplementedError", (
        f"{name} in the stub should raise NotImplementedError, got: {probe['outcomes'][name]}"
    )


def test_stub_dimension_mismatch_error_is_a_value_error(probe):
    assert probe["dimension_mismatch_is_value_error"], "DimensionMismatchError in the stub must subclass ValueError"


# ---------------------------------------------------------------- the stubs keep what students need


@pytest.mark.parametrize("source, target", MODULE_PAIRS, ids=[t for _, t in MODULE_PAIRS])
def test_stub_keeps_every_docstring(source, target):
    def docstrings(tree):
        found = {"<module>": ast.get_docstring(tree, clean=False)}
        found.update({name: ast.get_docstring(node, clean=False) for name, node in definitions(tree).items()})
        return found

    expected, got = docstrings(parse(source)), docstrings(parse(target))
    assert got.keys() == expected.keys(), f"{target} defines {sorted(got)}, the reference {sorted(expected)}"
    changed = [name for name in expected if got[name] != expected[name]]
    assert not changed, f"docstrings differ from {source} in {target}: {changed}"


@pytest.mark.parametrize("source, target", MODULE_PAIRS, ids=[t for _, t in MODULE_PAIRS])
def test_stub_keeps_every_signature(source, target):
    expected, got = definitions(parse(source)), definitions(parse(target))
    changed = [
        name for name, node in expected.items()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (name not in got or ast.dump(got[name].args) != ast.dump(node.args))
    ]
    assert not changed, f"signatures differ from {source} in {target}: {changed}"


@pytest.mark.parametrize("source, target", MODULE_PAIRS, ids=[t for _, t in MODULE_PAIRS])
def test_stub_keeps_the_imports(source, target):
    def imports(tree):
        return [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]

    assert imports(parse(target)) == imports(parse(source)), f"{target} lost or changed imports of {source}"


def test_mha_stub_keeps_the_given_code():
    stub = definitions(parse("assignment/mha.py"))
    error = stub.get("DimensionMismatchError")
    assert error is not None and [ast.unparse(b) for b in error.bases] == ["ValueError"], (
        "the stub must give `class DimensionMismatchError(ValueError)`"
    )
    body = stub["MultiHeadAttention.__init__"].body[1:]  # after the docstring
    assert [ast.unparse(statement) for statement in body] == ["super().__init__()", "raise NotImplementedError"], (
        "MultiHeadAttention.__init__ in the stub should call super().__init__() and then raise"
    )


# ---------------------------------------------------------------- what students read


INSTRUCTOR_WORDS = ("make stubs", "the kit", "python -m autograder", "generate.py", "make check")


def test_student_files_mention_no_instructor_command():
    found = []
    for path in assignment_files():
        text = text_of(path)
        for word in INSTRUCTOR_WORDS if text is not None else ():
            if word in text:
                found.append(f"{path.relative_to(ROOT)}: {word!r}")
    assert not found, "students cannot run these (say 'generated; do not edit'):\n" + "\n".join(found)


def test_the_lab_text_shows_the_example_heatmap_drawn_from_the_reference():
    figure = [target for _, target in generate.FIGURE_PAIRS]
    assert figure == ["assignment/causal_attention.png"]
    readme = (ASSIGNMENT / "README.md").read_text(encoding="utf-8")
    assert "](causal_attention.png)" in readme, "the lab text does not show the heatmap"
    assert (ROOT / figure[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_example_heatmap_is_the_same_on_every_render():
    from autograder.reports import lab_figure

    source = ROOT / "solution" / "attention.py"
    assert lab_figure.render(source) == lab_figure.render(source)
