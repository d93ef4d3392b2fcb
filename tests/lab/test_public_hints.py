"""The public tests' hints for the mistakes students really make, one buggy submission each.

Each submission is the reference with one mistake (tests/variants/mutants.yaml, or a
substitution written here), run through the public suite as a student runs it.
"""
import ast
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from autograder.judging.properties import ATTENTION_STOOD_IN, CONSTRUCTION_STOOD_IN, HEADS_STOOD_IN
from autograder.platforms.generate import public_cases
from test_public_suite import FOOTER, PUBLIC, ROOT, Run, run_public
from variant_builder import build_mutant, build_reference, load_mutants

pytestmark = pytest.mark.slow  # runs the public tests once per buggy submission (`make check-fast` skips it)

MUTANTS = {m["name"]: m for m in load_mutants()}
# Not in the grader's table: the hidden suite needs no hint for it, the public one does.
MERGE_VIEW = {"name": "merge_heads_view_without_contiguous", "file": "mha.py",
              "find": "x = x.transpose(1, 2).contiguous()", "replace": "x = x.transpose(1, 2)"}
SPLIT_UNPACKED_T_B = {"name": "split_heads_unpacks_t_b", "file": "mha.py", "find": "B, T, _ = x.shape",
                      "replace": "T, B, _ = x.shape"}
W_O_WITHOUT_BIAS = {"name": "w_o_without_bias", "file": "mha.py",
                    "find": "self.w_o = nn.Linear(d_model, d_model, bias=bias)",
                    "replace": "self.w_o = nn.Linear(d_model, d_model, bias=False)"}
HERE_MUTANTS = {m["name"]: m for m in (MERGE_VIEW, SPLIT_UNPACKED_T_B, W_O_WITHOUT_BIAS)}
FORWARD_CASES = ("mha_self_attention_matches_pytorch", "mha_causal_self_attention_matches_pytorch",
                 "mha_cross_attention_with_padding_matches_pytorch")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Lazily built: runs[name] is the public run on the reference with that one mistake."""
    cache = {}

    class Runs:
        def __getitem__(self, name):
            if name not in cache:
                tmp = tmp_path_factory.mktemp(name)
                mutant = HERE_MUTANTS.get(name) or MUTANTS[name]
                cache[name] = run_public(build_mutant(mutant, tmp / "submission"), tmp)
            return cache[name]
    return Runs()


def words(kind, name):
    """The grade's words for a catalogued mistake (autograder/judging/catalogue.py), as the public hints give them."""
    from autograder.judging.catalogue import CATALOGUE

    return next(entry.explain() for entry, _ in CATALOGUE[kind] if entry.name == name)


def failure(run, case):
    name = next(n for n in run.failures if n.endswith(f"[{case}]"))
    assert run.failures[name] is not None, f"{case} should fail:\n{run.output}"
    return run.failures[name]


@pytest.mark.parametrize("case", FORWARD_CASES)
def test_scaling_by_sqrt_d_model_is_named(runs, case):
    text = failure(runs["scaled_by_sqrt_d_model"], case)
    assert f"hint: {words('mha', 'scale_by_sqrt_d_model')}" in text, text


@pytest.mark.parametrize("case", FORWARD_CASES)
def test_a_forgotten_w_o_is_named(runs, case):
    text = failure(runs["no_output_projection"], case)
    assert f"hint: {words('mha', 'no_output_projection')}" in text, text


def test_view_on_a_transposed_tensor_gets_the_contiguous_hint(runs):
    text = failure(runs[MERGE_VIEW["name"]], "merge_heads_undoes_split_heads")
    assert "view size is not compatible" in text and "merge_heads (mha.py, line" in text, text
    assert "hint: view needs contiguous memory" in text and ".contiguous()" in text and ".reshape" in text, text


def test_nan_is_reported_as_nan_where_a_number_was_expected(runs):
    text = failure(runs["bool_mask_polarity_flipped"], "padding_mask_in_attention_matches_pytorch")
    assert re.search(r"got NaN where -?\d[\d.e-]* was expected", text), text
    assert "max abs error inf" not in text, text
    assert f"hint: {words('sdpa', 'mask_polarity_flipped')}" in text, text


# ----------------------------------------------------------------------------- no double charge


def test_an_attention_bug_does_not_also_cost_the_mha_points(runs):
    run = runs["no_scaling"]
    passed = {name for name, text in run.failures.items() if text is None}
    for case in FORWARD_CASES:
        assert f"test_mha[{case}]" in passed, f"{case} should pass on attention built from torch:\n{run.output}"
    attention_failed = [name for name, text in run.failures.items() if text and name.startswith("test_attention[")]
    assert attention_failed, "the attention tests themselves must still fail"


def test_an_mha_test_passed_on_torch_attention_says_fix_attention_first(runs):
    notes = [line for line in runs["no_scaling"].output.splitlines() if line.startswith("note: test_mha[")]
    assert len(notes) == len(FORWARD_CASES), runs["no_scaling"].output
    for line in notes:
        assert ATTENTION_STOOD_IN in line, line


@pytest.mark.parametrize("mistake, note", [(SPLIT_UNPACKED_T_B, HEADS_STOOD_IN), (W_O_WITHOUT_BIAS, CONSTRUCTION_STOOD_IN)])
def test_a_bug_below_the_forward_costs_only_its_own_part(runs, mistake, note):
    """As in the grade: the forward cases pass on the lab's lower parts, with the grade's note naming the part."""
    run = runs[mistake["name"]]
    passed = {name for name, text in run.failures.items() if text is None}
    assert all(f"test_mha[{case}]" in passed for case in FORWARD_CASES), run.output
    assert any(text for name, text in run.failures.items() if name.startswith("test_mha[")), "its own part fails"
    notes = [line for line in run.output.splitlines() if line.startswith("note: test_mha[")]
    assert notes and all(note in line for line in notes), run.output


def test_a_real_mha_bug_still_fails_on_torch_attention(runs):
    run = runs["no_output_projection"]
    assert not any(note in run.output for note in (ATTENTION_STOOD_IN, CONSTRUCTION_STOOD_IN, HEADS_STOOD_IN)), run.output


def test_the_known_good_attention_is_built_from_torch_not_the_reference():
    source = (PUBLIC / "cases.py").read_text()
    body = source.split("def known_good_attention(")[1].split("\n\n\n")[0]
    assert "torch_attention(" in body and "solution" not in source, body


# ----------------------------------------------------------------------------- the run's last lines


def load_submit():
    import importlib.util

    spec = importlib.util.spec_from_file_location("student_submit", ROOT / "assignment" / "submit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_forbidden_call_is_flagged_by_the_submit_scanner_and_fails_the_run(runs):
    run = runs["uses_torch_sdpa"]
    flagged = [line for line in run.output.splitlines() if line.startswith("RULE BROKEN: ")]
    assert len(flagged) == 1, run.output
    hint = re.escape(load_submit().BUILTIN_HINT)  # the scanner's own words: one source
    assert re.fullmatch(r"RULE BROKEN: attention\.py, line \d+: torch\.nn\.functional\.scaled_dot_product_attention "
                        rf"is not allowed in this lab; {hint} \(make submit refuses this file\)", flagged[0]), flagged[0]
    assert run.returncode == 1, "a broken rule must fail the run even when every test passes"
    assert FOOTER.fullmatch(run.output.rstrip().splitlines()[-1]), "the score stays the last line"


def test_a_partial_run_says_so_on_the_score_line(tmp_path):
    junit = tmp_path / "partial.xml"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(PUBLIC / "pytest.ini"),
               str(PUBLIC), f"--submission={ROOT / 'solution'}", "-k", "causal", f"--junitxml={junit}"]
    run = Run(command, ROOT, junit)
    ran = len([n for n in run.failures if not n.startswith("test_extra[")])
    total = len(public_cases()[0])
    last = run.output.rstrip().splitlines()[-1]
    assert 0 < ran < total
    points = sum(p for _, _, p in public_cases()[0])
    assert re.fullmatch(rf"public tests: \d+/{points} points \(your grade also counts the hidden tests\) "
                        rf"\(partial run: {ran} of {total} tests\)", last), last


def test_a_full_run_has_no_partial_note(runs):
    last = runs["no_output_projection"].output.rstrip().splitlines()[-1]
    assert FOOTER.fullmatch(last), last


def test_without_torch_the_run_says_activate_your_venv(tmp_path):
    # sys.modules["torch"] = None makes `import torch` fail, as in a Python without it.
    run = ("import sys; sys.modules['torch'] = None; import pytest; "
           "sys.exit(pytest.main(['-p', 'no:cacheprovider', 'tests']))")
    lab = build_reference(tmp_path / "lab")
    shutil.copytree(PUBLIC, lab / "tests")
    shutil.copy(PUBLIC.parent / "submit.py", lab / "submit.py")
    proc = subprocess.run([sys.executable, "-c", run], cwd=lab, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "torch is not installed for this python: activate your venv" in output, output
    assert "Traceback" not in output and "ModuleNotFoundError" not in output, output


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_without_torch_says_activate_your_venv(tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "VIRTUAL_ENV")}
    proc = subprocess.run(["make", "test", f"PYTHON={venv / 'bin' / 'python'}"], cwd=PUBLIC.parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "torch is not installed for this python: activate your venv" in proc.stdout, proc.stdout + proc.stderr
    assert "ModuleNotFoundError" not in proc.stdout + proc.stderr


def test_wrong_extra_credit_fails_on_its_own_line_and_leaves_the_points(runs):
    run = runs["tiled_no_rescale"]
    lines = run.output.rstrip().splitlines()
    extra = re.fullmatch(r"extra credit \(optional, not in the points\): (\d+) passed, (\d+) failed", lines[-2])
    assert extra and int(extra[1]) and int(extra[2]), lines[-2:]  # the tiled values fail, the decoding steps pass
    points = sum(p for _, _, p in public_cases()[0])
    assert FOOTER.fullmatch(lines[-1]) and FOOTER.fullmatch(lines[-1])[1] == str(points), lines[-1]
    assert run.returncode == 0, "an optional test alone never fails the run (make test would say Error 1)"


def test_a_tiled_attention_that_never_rescales_is_named_in_the_graders_words(runs):
    text = failure(runs["tiled_no_rescale"], "tiled_attention_matches_pytorch")
    assert f"hint: {words('tiled', 'tiled_no_rescale')}" in text, text


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_under_make_a_failing_run_ends_its_output_with_the_score_and_exits_non_zero(tmp_path):
    lab = tmp_path / "lab"
    shutil.copytree(PUBLIC.parent, lab, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    build_mutant(MUTANTS["no_output_projection"], lab)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(["make", "test", f"PYTHON={sys.executable}"], cwd=lab, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert FOOTER.fullmatch(proc.stdout.rstrip().splitlines()[-1]), proc.stdout[-500:]
    # GNU make itself then reports the failed recipe, on stderr: nothing else comes after the score.
    assert [line for line in proc.stderr.splitlines() if line.strip()] == \
        [line for line in proc.stderr.splitlines() if line.startswith("make: ***")], proc.stderr


# ----------------------------------------------------------------------------- issue 24: as the grade does

def substitution(name, find, replace, file="attention.py"):
    return {"name": name, "file": file, "find": find, "replace": replace}


FLOAT32_SOFTMAX = substitution("float32_softmax", "weights = torch.softmax(scores, dim=-1)",
                               "weights = torch.softmax(scores.float(), dim=-1).to(scores.dtype)")
MASKED_AFTER_SOFTMAX_IN_PLACE = substitution(
    "masked_fill_in_place_after_softmax", "    output = weights @ value  #",
    "    if mask is not None:\n        weights.masked_fill_(~allowed, 0.0)\n    output = weights @ value  #")
DEVICE_IGNORED = substitution("causal_mask_ignores_device", "dtype=torch.bool, device=device)", "dtype=torch.bool)")
SYNTAX_ERROR = substitution("attention_syntax_error", "    d_k = query.size(-1)\n", "    d_k = query.size(-1\n")


def run_on(mutant, tmp_path):
    return run_public(build_mutant(mutant, tmp_path / "submission"), tmp_path)


def failed(run):
    return {name: text for name, text in run.failures.items() if text is not None}


def test_float32_in_a_float64_run_is_charged_once_in_the_graders_words(tmp_path):
    from autograder.judging.catalogue import FLOAT32_IN_FLOAT64

    run = run_on(FLOAT32_SOFTMAX, tmp_path)
    assert list(failed(run)) == ["test_attention[attention_is_float64_accurate_in_float64]"], run.output
    text = failed(run)["test_attention[attention_is_float64_accurate_in_float64]"]
    assert FLOAT32_IN_FLOAT64.sentence in text, text
    got, expected = re.search(r"got (\S+), expected (\S+)", text).groups()
    assert got != expected, f"the digits shown must tell got from expected: {text}"


FLOAT32_SCORES = substitution("float32_scores", "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
                              "scores = (query @ key.transpose(-2, -1) / math.sqrt(d_k)).float()")
UNSCALED = substitution("unscaled_scores", "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
                        "scores = query @ key.transpose(-2, -1)")


def test_a_float32_step_that_breaks_float64_costs_only_the_cases_whose_grade_twins_run_float64(tmp_path):
    run = run_on(FLOAT32_SCORES, tmp_path)  # float64 in: float32 weights @ float64 value raises
    assert sorted(failed(run)) == ["test_attention[attention_is_float64_accurate_in_float64]",
                                   "test_attention[attention_stays_finite_on_large_scores]",
                                   "test_attention[gradients_flow_back_to_query_key_and_value]"], run.output


def test_wrong_values_that_float32_gives_too_are_not_charged_by_the_float64_case(tmp_path):
    run = run_on(UNSCALED, tmp_path)
    assert "test_attention[attention_weights_match_pytorch]" in failed(run), run.output
    assert "test_attention[attention_is_float64_accurate_in_float64]" not in failed(run), run.output


EVERY_SIZE_REFUSED = substitution("every_size_refused", "if d_model <= 0", "if d_model >= 0", file="mha.py")


def test_a_constructor_that_refuses_a_valid_size_is_told_so_not_blamed_for_the_wrong_exception(tmp_path):
    from autograder.judging.error_hints import VALID_SIZE_REFUSED_TOO

    text = failed(run_on(EVERY_SIZE_REFUSED, tmp_path))[
        "test_mha[mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model]"]
    assert text.startswith("MultiHeadAttention(16, 4): ValueError") and VALID_SIZE_REFUSED_TOO in text, text
    assert "not a plain ValueError" not in text, text  # its DimensionMismatchError check is right


def test_a_backward_pass_broken_in_place_names_the_line_and_the_hint(tmp_path):
    from autograder.judging.error_hints import INPLACE_ERROR, error_hint

    run = run_on(MASKED_AFTER_SOFTMAX_IN_PLACE, tmp_path)
    assert list(failed(run)) == ["test_attention[gradients_flow_back_to_query_key_and_value]"], run.output
    text = failed(run)["test_attention[gradients_flow_back_to_query_key_and_value]"]
    line = next(n for n, code in enumerate((tmp_path / "submission" / "attention.py").read_text().splitlines(), 1)
                if "masked_fill_(" in code)
    assert f"in-place edit: attention.py, line {line}: weights.masked_fill_(~allowed, 0.0)" in text, text
    assert f"hint: {error_hint(INPLACE_ERROR)}" in text, text


def test_a_causal_mask_that_ignores_its_device_fails_on_the_meta_device(tmp_path):
    run = run_on(DEVICE_IGNORED, tmp_path)
    assert list(failed(run)) == ["test_masks[causal_mask_is_created_on_the_requested_device]"], run.output


def test_an_attention_py_that_does_not_import_costs_the_attention_tests_only(tmp_path):
    run = run_on(SYNTAX_ERROR, tmp_path)
    lost = {name.split("[")[0] for name in failed(run)}
    assert lost == {"test_masks", "test_attention", "test_extra"}, run.output
    assert all(text is None for name, text in run.failures.items() if name.startswith("test_mha[")), run.output
    assert "note: attention.py does not import, so mha.py was tested on attention built from torch" in run.output


def extra_cases():
    """{name: part} of the public extra-credit cases, as cases.py declares them (@case("extra_...", points=...))."""
    found = {}
    for node in ast.walk(ast.parse((PUBLIC / "cases.py").read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "case" and decorator.args:
                part = str(getattr(decorator.args[0], "value", ""))
                if part.startswith("extra_"):
                    found[node.name] = part
    return found


def test_extra_credit_the_files_do_not_define_is_skipped_and_a_correct_core_exits_0(tmp_path):
    submission = build_reference(tmp_path / "submission")
    for file, name in [("attention.py", "tiled_attention"), ("mha.py", "step")]:
        text = (submission / file).read_text()
        start = text.index(f"def {name}(")
        start = text.rindex("\n", 0, start) + 1  # the start of the def's line (a method is indented)
        end = min((i for i in (text.find("\ndef ", start + 1), text.find("\nclass ", start + 1),
                               text.find("\n    def ", start + 1)) if i != -1), default=len(text))
        (submission / file).write_text(text[:start] + text[end + 1:])
    run = run_public(submission, tmp_path)
    assert run.returncode == 0, run.output
    assert sorted(run.skipped) == sorted(f"test_extra[{name}]" for name in extra_cases()), run.output
    assert "attention.py defines no tiled_attention" in run.skipped["test_extra[tiled_attention_matches_pytorch]"]
    assert run.output.rstrip().splitlines()[-2] == (f"extra credit (optional, not in the points): "
                                                    f"{len(extra_cases())} not written yet")


def test_a_forbidden_call_fails_the_tests_that_make_it_and_says_what_the_grade_does(runs):
    run = runs["uses_torch_sdpa"]
    forbidden = {name for name, text in failed(run).items() if "which the from-scratch rule forbids" in text}
    assert forbidden and all(name.startswith("test_attention[") for name in forbidden), run.output
    lines = run.output.rstrip().splitlines()
    earned, total = run.score
    assert earned < total, "after RULE BROKEN the score must not read like full marks"
    grade_line = next(line for line in lines if line.startswith("the grade: "))
    assert f"({len(forbidden)} of the public tests here" in grade_line, grade_line


@pytest.mark.parametrize("name", ["attention_returns_weights_first", "mha_returns_weights_first"])
def test_a_pair_returned_as_weights_then_output_is_called_swapped_wherever_it_fails(runs, name):
    failures = failed(runs[name])
    assert failures, f"{name} fails no public test"
    for test, text in failures.items():
        assert "the pair is swapped" in text and "wrong shape" not in text, f"{test}:\n{text}"


def test_a_dimension_error_for_a_valid_size_says_so_before_the_error(runs):
    failures = failed(runs["dimension_condition_reversed"])
    assert failures, "the reversed condition fails no public test"
    for test, text in failures.items():
        assert text.startswith("MultiHeadAttention(") and "raised DimensionMismatchError for a valid size" in text.splitlines()[0], \
            f"{test}:\n{text}"
        assert "check your condition (d_model % n_heads != 0)" in text, f"{test}:\n{text}"


@pytest.mark.parametrize("name, words", [
    ("every_mask_ignored", "ignores the mask (bool masks too)"), ("numeric_mask_ignored", "ignores a numeric (int or float) mask")])
def test_an_ignored_mask_is_told_bool_or_numeric(runs, name, words):
    texts = failed(runs[name]).values()
    assert any(words in text for text in texts), "\n".join(texts)
    if name == "numeric_mask_ignored":  # bool masks work: nothing may say they are ignored too
        assert not any("bool masks too" in text for text in texts), "\n".join(texts)


@pytest.mark.parametrize("name", ["causal_mask_upper_triangle", "causal_mask_float"])
def test_a_wrong_causal_mask_is_not_charged_again_by_the_device_case(runs, name):
    failures = failed(runs[name])
    assert any(test.endswith("[causal_mask_allows_the_past_and_blocks_the_future]")
               or test.endswith("[causal_mask_is_a_square_bool_tensor]") for test in failures), runs[name].output
    assert not any(test.endswith("[causal_mask_is_created_on_the_requested_device]") for test in failures), runs[name].output


# ----------------------------------------------------------------------------- issue 34: what the grade charges, public too

INPLACE_CASE = "test_attention[attention_leaves_its_inputs_unchanged]"
FORWARD_KEY_EDITED = substitution(
    "forward_scales_its_key_in_place", "        v = self.split_heads(self.w_v(value))",
    "        key.mul_(2.0)  # an edit after use: the values stay right, the caller's key does not\n"
    "        v = self.split_heads(self.w_v(value))", file="mha.py")


@pytest.mark.parametrize("name, changed, also", [
    ("query_scaled_in_place", "query", {"test_attention[gradients_flow_back_to_query_key_and_value]"}),
    ("bool_mask_inverted_in_place", "mask", set())])
def test_an_input_changed_in_place_is_charged_once_in_the_graders_words(runs, name, changed, also):
    # The values are right: the value cases pass (they call your code on copies, as the grader does); the
    # in-place case fails, saying what the grade says (and an in-place edit of a leaf breaks the backward too).
    from autograder.judging.error_hints import INPUTS_MODIFIED, INPUTS_MODIFIED_HINT

    failures = failed(runs[name])
    assert set(failures) == {INPLACE_CASE} | also, runs[name].output
    assert INPUTS_MODIFIED.format(changed) in failures[INPLACE_CASE], failures[INPLACE_CASE]
    assert f"hint: {INPUTS_MODIFIED_HINT}" in failures[INPLACE_CASE], failures[INPLACE_CASE]


def test_an_mha_forward_that_edits_its_key_fails_the_cross_attention_case_in_the_graders_words(tmp_path):
    from autograder.judging.error_hints import FORWARD_INPUTS_MODIFIED, FORWARD_INPUTS_MODIFIED_HINT

    run = run_on(FORWARD_KEY_EDITED, tmp_path)
    case, gradients = ("test_mha[mha_cross_attention_with_padding_matches_pytorch]",
                       "test_mha[mha_gradients_reach_every_input_and_parameter]")
    assert sorted(failed(run)) == [case, gradients], run.output  # as the grade: its gradient test gets leaves too
    assert FORWARD_INPUTS_MODIFIED.format("key") in failed(run)[case], failed(run)[case]
    assert f"hint: {FORWARD_INPUTS_MODIFIED_HINT}" in failed(run)[case], failed(run)[case]
    assert "a leaf Variable that requires grad is being used in an in-place operation" in failed(run)[gradients]


def test_an_attention_that_edits_the_mask_costs_no_mha_points(runs):
    # As the grade's retry on the lab's attention: the MHA case passes with the note, the bug is attention's.
    run = runs["bool_mask_inverted_in_place"]
    assert not any(name.startswith("test_mha[") for name in failed(run)), run.output
    note = f"note: test_mha[mha_cross_attention_with_padding_matches_pytorch]: {ATTENTION_STOOD_IN}"
    assert note in run.output, run.output


def test_an_overflowing_softmax_fails_the_large_scores_case_alone_in_the_graders_words(runs):
    from autograder.judging.catalogue import UNSTABLE_SOFTMAX

    failures = failed(runs["unstable_softmax"])
    assert list(failures) == ["test_attention[attention_stays_finite_on_large_scores]"], runs["unstable_softmax"].output
    text = next(iter(failures.values()))
    assert "has inf/NaN, while it is finite before the shift" in text and UNSTABLE_SOFTMAX.explain() in text, text


def test_a_tiled_attention_that_builds_the_whole_matrix_fails_the_memory_case_alone(runs):
    from autograder.judging.error_hints import TILED_MEMORY_HINT

    run = runs["tiled_builds_full_matrix"]
    assert list(failed(run)) == ["test_extra[tiled_attention_never_builds_the_score_matrix]"], run.output
    text = next(iter(failed(run).values()))
    assert "so it was (at least partly) built" in text and f"hint: {TILED_MEMORY_HINT}" in text, text
    assert run.returncode == 0, "extra credit alone never fails the run"


def test_a_made_up_tiled_output_earns_no_memory_points(runs):
    assert "test_extra[tiled_attention_never_builds_the_score_matrix]" in failed(runs["tiled_made_up_output"])


def test_a_step_that_reprojects_the_past_fails_the_cache_case_alone(runs):
    run = runs["step_reprojects_the_past"]
    assert list(failed(run)) == ["test_extra[step_projects_only_the_new_token_and_grows_the_cache]"], run.output
    text = next(iter(failed(run).values()))
    assert "w_k saw inputs of shapes [[2, 1, 12], [2, 2, 12]" in text, text
    assert ("hint: at step 2, w_k was given an input of shape [2, 2, 12], not the new token alone (B, 1, 12): the "
            "cache already holds the past keys and values") in text, text


def test_a_cache_of_unprojected_tokens_fails_the_cache_case(runs):
    assert "test_extra[step_projects_only_the_new_token_and_grows_the_cache]" in failed(runs["step_caches_unprojected_tokens"])


@pytest.mark.parametrize("name", ["manual_softmax", "prescaled_query", "finfo_min_fill", "large_negative_fill",
                                  "tiled_einsum_reversed", "step_preallocated_cache"])
def test_correct_code_passes_the_new_cases(tmp_path, name):
    from variant_builder import build_correct

    run = run_public(build_correct(name, tmp_path / "submission"), tmp_path)
    new = ("attention_leaves_its_inputs_unchanged", "attention_stays_finite_on_large_scores",
           "tiled_attention_never_builds_the_score_matrix", "step_projects_only_the_new_token_and_grows_the_cache",
           "mha_cross_attention_with_padding_matches_pytorch")
    assert not [test for test in failed(run) if test.split("[", 1)[1].rstrip("]") in new], run.output


@pytest.mark.parametrize("name", ["uses_nn_multihead_attention", "uses_torch_sdpa"])
def test_every_case_whose_run_calls_a_forbidden_built_in_is_marked_forbidden(runs, name):
    # The grade zeroes each test whose run called the built-in, whatever its values: no numeric hint instead.
    failures = failed(runs[name])
    assert failures, runs[name].output
    for test, text in failures.items():
        assert "which the from-scratch rule forbids: this test gets no points" in text, f"{test}:\n{text}"


MHA_REFUSED = substitution("mha_refused", "import torch.nn as nn", "import torch.nn as nn\nLAYERS = {'linear': nn}",
                           file="mha.py")


def test_every_case_that_runs_a_refused_file_is_marked_refused(tmp_path):
    # The grader never runs a refused file: every test that runs mha.py fails, in submit.py's words (conftest's
    # RefusedModule), and the attention cases keep their points.
    run = run_on(MHA_REFUSED, tmp_path)
    runs_mha = [test for test in run.failures if test.startswith("test_mha[") or "step" in test]
    assert runs_mha, run.output
    for test in runs_mha:
        text = failed(run).get(test)
        assert text and "is not graded: mha.py, line" in text and "no test that runs it counts (the from-scratch rule)" in text, \
            f"{test}:\n{text}"
    assert set(failed(run)) == set(runs_mha), run.output


WATCH_TWICE = """
import importlib.util, json, sys
import torch
def load(tag):
    spec = importlib.util.spec_from_file_location(f"checks_{tag}", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
sys.path.insert(0, sys.argv[2])
seen = []
for tag in ("first", "again"):  # the public checks imported twice in one process, as a notebook's reload does
    checks = load(tag)
    checks.watch_forbidden_calls(sys.argv[2])
    sys.modules.pop("student", None)
    import student
    with checks.forbidden_calls() as called:
        student.attend(torch.randn(1, 2, 4))
    seen.append(sorted(called))
print(json.dumps(seen))
"""


def test_a_forbidden_call_is_seen_after_the_checks_are_imported_again(tmp_path):
    (tmp_path / "student.py").write_text("import torch.nn.functional as F\n\n\ndef attend(q):\n"
                                         "    return F.scaled_dot_product_attention(q, q, q)\n")
    done = subprocess.run([sys.executable, "-c", WATCH_TWICE, str(PUBLIC / "checks.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first, again = json.loads(done.stdout.strip().splitlines()[-1])
    assert first == again == ["torch.nn.functional.scaled_dot_product_attention"]
