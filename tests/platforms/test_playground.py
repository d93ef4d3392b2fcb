"""The playground notebook runs headless, top to bottom.

Against the reference (solution/playground.ipynb with the reference files) it raises nothing,
draws every heatmap and passes every otter check. Against what students get (the generated
notebook with the stubs) it raises nothing either, and each cell says what to implement first.
Each run happens in a copy of assignment/, with the kernel of this Python (ipykernel).
"""
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (requirements/tools.lock has it; make check installs it)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (requirements/tools.lock has it; make check installs it)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed: no kernel to run the notebook")

pytestmark = pytest.mark.slow  # executes the playground notebook (`make check-fast` skips it)

from conftest import ROOT

FIGURES = ("bidirectional_vs_causal", "padding", "heads")  # heatmaps that show(fig, name) saves
LINE_PLOTS = ("memory", "kv_cache")  # extra credit: two curves each, in matplotlib's first two colours
NOT_YET = re.compile(r"^Not yet: implement (.+) first, then run this cell again\.$", re.MULTILINE)


def execute(lab, figures):
    """Run lab/playground.ipynb in a fresh kernel; return the executed notebook."""
    nb = nbformat.read(lab / "playground.ipynb", as_version=4)
    # "python3" is the kernelspec ipykernel installs into this venv; jupyter_client starts its
    # `python` as this interpreter, so a fresh clone needs no kernel registered anywhere.
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(lab)}})
    client.execute(env={**os.environ, "PLAYGROUND_FIGURES": str(figures)})
    return nb


def lab_copy(tmp, files_from):
    """assignment/ copied to `tmp`, with the notebook and the two files taken from `files_from`."""
    lab = tmp / "lab"
    shutil.copytree(ROOT / "assignment", lab, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for name in ("attention.py", "mha.py", "playground.ipynb"):
        shutil.copy(files_from / name, lab / name)
    return lab


SYNTAX_ERROR = re.compile(r"^attention\.py has a syntax error at line (\d+); showing nothing until it imports$",
                          re.MULTILINE)


def broken_copy(tmp):
    """The student notebook with the reference files, attention.py broken by a syntax error at its end."""
    lab = lab_copy(tmp, ROOT / "assignment")
    for name in ("attention.py", "mha.py"):
        shutil.copy(ROOT / "solution" / name, lab / name)
    attention = lab / "attention.py"
    attention.write_text(attention.read_text() + "\ndef broken(:\n")
    return lab


def crashing_copy(tmp):
    """The student notebook with the reference files, merge_heads calling .view on a transposed tensor."""
    lab = lab_copy(tmp, ROOT / "assignment")
    shutil.copy(ROOT / "solution" / "attention.py", lab / "attention.py")
    text = (ROOT / "solution" / "mha.py").read_text()
    (lab / "mha.py").write_text(text.replace("x = x.transpose(1, 2).contiguous()", "x = x.transpose(1, 2)"))
    return lab


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{"reference": (notebook, figures folder), "stubs", "syntax_error", "crash"}, run two at a time."""
    folders = {"reference": ROOT / "solution", "stubs": ROOT / "assignment"}
    jobs = {}
    for which, files_from in folders.items():
        tmp = tmp_path_factory.mktemp(f"playground-{which}")
        jobs[which] = (lab_copy(tmp, files_from), tmp / "figures")
    tmp = tmp_path_factory.mktemp("playground-syntax-error")
    jobs["syntax_error"] = (broken_copy(tmp), tmp / "figures")
    tmp = tmp_path_factory.mktemp("playground-crash")
    jobs["crash"] = (crashing_copy(tmp), tmp / "figures")
    with ThreadPoolExecutor(max_workers=2) as pool:
        executed = dict(zip(jobs, pool.map(lambda job: execute(*job), jobs.values())))
    return {which: (executed[which], jobs[which][1]) for which in jobs}


@pytest.fixture(scope="module")
def reference_run(runs):
    return runs["reference"]


@pytest.fixture(scope="module")
def stub_run(runs):
    return runs["stubs"][0]


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def errors(nb):
    """'cell id: ename: evalue' for every error output, and every traceback printed to stderr."""
    found = []
    for cell in code_cells(nb):
        for out in cell.outputs:
            if out.output_type == "error":
                found.append(f"{cell.id}: {out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr" and "Traceback" in out.text:
                found.append(f"{cell.id}: traceback on stderr:\n{out.text}")
    return found


def stdout(cell):
    return "".join(out.text for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")


def text(cell):
    """Everything the cell shows as text: its printed output and the plain text of its results."""
    shown = [stdout(cell)]
    shown += [out.data.get("text/plain", "") for out in cell.outputs if out.output_type == "execute_result"]
    return "\n".join(shown)


def guarded(nb):
    """The cells that run code students write, inside `with needs_your_code():`."""
    return [cell for cell in code_cells(nb) if "with needs_your_code():" in cell.source]


def check_cells(nb):
    return [cell for cell in code_cells(nb) if cell.source.strip().startswith("grader.check(")]


# ----------------------------------------------------------------------------- the reference


def test_reference_run_raises_nothing(reference_run):
    nb, _ = reference_run
    assert not errors(nb), "the playground fails on the reference:\n" + "\n".join(errors(nb))


def test_reference_run_finishes_every_experiment(reference_run):
    nb, _ = reference_run
    unfinished = [cell.id for cell in guarded(nb) if NOT_YET.search(stdout(cell))]
    assert not unfinished, f"with the reference, these cells still ask for code: {unfinished}"


@pytest.mark.parametrize("name", FIGURES)
def test_reference_run_saves_a_heatmap_that_is_not_blank(reference_run, name):
    import matplotlib.image

    _, figures = reference_run
    path = figures / f"{name}.png"
    assert path.is_file(), f"the playground did not save {path.name} into PLAYGROUND_FIGURES"
    pixels = matplotlib.image.imread(path)[..., :3]  # RGB in [0, 1]
    coloured = (pixels.min(axis=-1) < 0.9).mean()  # share of pixels that are not (nearly) white
    assert pixels.std() > 0.2 and coloured > 0.3, (
        f"{path.name} looks blank: pixel std {pixels.std():.3f}, {coloured:.0%} of the pixels coloured")


@pytest.mark.parametrize("name", LINE_PLOTS)
def test_reference_run_saves_a_line_plot_with_both_curves(reference_run, name):
    import matplotlib.image

    _, figures = reference_run
    path = figures / f"{name}.png"
    assert path.is_file(), f"the playground did not save {path.name} into PLAYGROUND_FIGURES"
    pixels = matplotlib.image.imread(path)[..., :3]
    for label, rgb in (("first (blue)", (0.12, 0.47, 0.71)), ("second (orange)", (1.0, 0.50, 0.05))):
        share = (abs(pixels - as_rgb(rgb)).max(axis=-1) < 0.08).mean()
        assert share > 0.001, f"{path.name}: the {label} curve is missing ({share:.2%} of the pixels)"


def as_rgb(rgb):
    import numpy

    return numpy.array(rgb, dtype=numpy.float32)


def test_reference_run_passes_every_otter_check(reference_run):
    from autograder.platforms.generate import public_cases

    nb, _ = reference_run
    results = {cell.id: text(cell).strip() for cell in check_cells(nb)}
    assert results, "the playground has no grader.check cells"
    cases, _ = public_cases()
    for cell_id, shown in results.items():
        part = re.match(r"(\w+): (\d+)/(\d+) points", shown)
        assert part and part[2] == part[3], f"{cell_id}: the check should pass with full points:\n{shown}"
        expected = sum(points for _, case_part, points in cases if case_part == part[1])
        assert int(part[3]) == expected, f"{cell_id}: {part[3]} points, the case table says {expected}"
        assert "FAILED" not in shown, shown
    everything = text(next(cell for cell in code_cells(nb) if cell.source.strip() == "grader.check_all()"))
    total = sum(points for *_, points in cases)
    assert f"public checks: {total}/{total} points" in everything, everything


def test_reference_run_says_the_extra_credit_values_are_right_before_plotting(reference_run):
    nb, _ = reference_run
    shown = "\n".join(stdout(cell) for cell in code_cells(nb))
    assert "tiled_attention gives the right values: True" in shown, shown
    assert "step reproduces the causal forward: True" in shown, shown


def test_untrained_heads_are_sharpened_until_they_visibly_differ(reference):
    # The per-head cell's recipe, on the reference: seeded weights, w_q and w_k scaled by SHARPEN.
    import torch

    nb = nbformat.read(ROOT / "solution" / "playground.ipynb", as_version=4)
    source = next(cell.source for cell in code_cells(nb) if cell.id == "per-head")
    sharpen = float(re.search(r"^SHARPEN = (\d+(?:\.\d+)?)", source, re.MULTILINE)[1])
    torch.manual_seed(0)
    x = torch.randn(6, 8)[None]  # the sentence of section 1: X = torch.randn(T, D_MODEL) after seed 0
    torch.manual_seed(0)
    model = reference.mha.MultiHeadAttention(8, 4)
    with torch.no_grad():
        model.w_q.weight.mul_(sharpen)
        model.w_k.weight.mul_(sharpen)
        _, weights = model(x, x, x, reference.attention.causal_mask(6))
    w = weights[0]
    closest = min(float((w[i] - w[j]).abs().mean()) for i in range(4) for j in range(i + 1, 4))
    assert closest > 0.05, f"two heads differ by only {closest:.3f} on average: the heatmaps look alike"


def test_reference_run_shows_the_shapes_step_by_step(reference_run):
    nb, _ = reference_run
    steps = stdout(next(cell for cell in code_cells(nb) if cell.id == "steps"))
    for step in ("scores", "scaled scores", "weights"):
        assert re.search(rf"{step} \(6, 6\)", steps), f"the steps cell does not print the shape of {step}:\n{steps}"
    assert "gives the same weights: True" in steps, steps


# ----------------------------------------------------------------------------- the stubs


def test_stub_run_raises_nothing(stub_run):
    assert not errors(stub_run), "the playground fails on the stubs:\n" + "\n".join(errors(stub_run))


def test_stub_run_says_what_to_implement_in_every_cell_that_needs_code(stub_run):
    silent = [cell.id for cell in guarded(stub_run) if len(NOT_YET.findall(stdout(cell))) != 1]
    assert not silent, f"with the stubs, these cells do not say (once) what to implement first: {silent}"


def test_stub_run_names_the_functions_to_implement(stub_run):
    named = {match for cell in guarded(stub_run) for match in NOT_YET.findall(stdout(cell))}
    expected = {
        "causal_mask (attention.py)",
        "padding_mask (attention.py)",
        "MultiHeadAttention.__init__ (mha.py)",
        "the lines of this cell that still say `raise NotImplementedError`",
    }
    assert expected <= named, f"missing: {sorted(expected - named)}; the cells said: {sorted(named)}"


def test_stub_run_otter_checks_fail_with_readable_messages(stub_run):
    for cell in check_cells(stub_run):
        shown = text(cell).strip()
        assert re.match(r"\w+: 0/\d+ points\n", shown), f"{cell.id}: the check should fail on the stubs:\n{shown}"
        assert "is not implemented yet (NotImplementedError in" in shown, f"{cell.id}: unclear failure:\n{shown}"
        assert "Traceback" not in shown, f"{cell.id}: a check failure shows a traceback:\n{shown}"


def test_otter_output_shows_points_and_only_the_message(stub_run):
    shown = text(next(cell for cell in check_cells(stub_run) if cell.source.strip() == 'grader.check("part1_masks")')).strip()
    assert shown.splitlines()[:3] == [
        "part1_masks: 0/7 points",
        "  FAILED causal_mask_is_a_square_bool_tensor (0/1)",
        "      causal_mask is not implemented yet (NotImplementedError in attention.py)",
    ], shown
    assert "Error at line" not in shown and "public_case(" not in shown and "CheckFailed" not in shown, shown


# ----------------------------------------------------------------------------- a file with a syntax error


def test_syntax_error_run_raises_nothing(runs):
    nb, _ = runs["syntax_error"]
    assert not errors(nb), "a syntax error in attention.py breaks the playground:\n" + "\n".join(errors(nb))


def test_syntax_error_is_named_once_per_cell_with_its_line(runs):
    nb, _ = runs["syntax_error"]
    line = len((ROOT / "solution" / "attention.py").read_text().splitlines()) + 2  # `def broken(:`
    setup = stdout(next(cell for cell in code_cells(nb) if cell.id == "setup"))
    assert SYNTAX_ERROR.findall(setup) == [str(line)], setup
    for cell in guarded(nb):
        shown = stdout(cell)
        if cell.id == "steps":  # the notebook's own exercise comes first there
            continue
        assert SYNTAX_ERROR.findall(shown) == [str(line)], f"{cell.id} should name the syntax error once:\n{shown}"
        assert "autoreload" not in shown and "NameError" not in shown, shown


def test_a_crash_in_a_student_file_is_one_line_naming_function_file_and_line(runs):
    nb, _ = runs["crash"]
    assert not errors(nb), "a crash in mha.py breaks the playground:\n" + "\n".join(errors(nb))
    shown = stdout(next(cell for cell in code_cells(nb) if cell.id == "per-head"))  # forward -> merge_heads
    crash = re.findall(r"^RuntimeError in MultiHeadAttention\.merge_heads \(mha\.py, line \d+\): view size is not "
                       r"compatible.*$", shown, re.MULTILINE)
    assert len(crash) == 1 and "Traceback" not in shown, shown


def test_syntax_error_run_draws_no_figure_from_old_code(runs):
    _, figures = runs["syntax_error"]
    assert not figures.exists() or not any(figures.iterdir()), "figures were drawn while attention.py is broken"


# ----------------------------------------------------------------------------- its structure


def test_there_is_a_check_cell_for_every_part_in_the_order_of_the_parts():
    from autograder.platforms.generate import public_cases

    nb = nbformat.read(ROOT / "assignment" / "playground.ipynb", as_version=4)
    checked = [re.fullmatch(r'grader\.check\("(\w+)"\)', cell.source.strip())[1] for cell in check_cells(nb)]
    _, parts = public_cases()
    assert checked == list(parts), f"grader.check cells {checked}, parts of the case table {list(parts)}"
    setup = next(cell.source for cell in code_cells(nb) if "otter.Notebook(" in cell.source)
    in_order = re.search(r"^PARTS = (\[.*?\])", setup, re.MULTILINE)
    assert in_order and eval(in_order[1]) == list(parts), "check_all must run the parts in the lab's order"
    assert any("otter.Notebook(tests_dir=\"checks\")" in cell.source for cell in code_cells(nb)), \
        "the playground does not create grader = otter.Notebook(tests_dir=\"checks\")"


def test_colab_cell_installs_only_otter_grader():
    nb = nbformat.read(ROOT / "assignment" / "playground.ipynb", as_version=4)
    colab = [cell for cell in code_cells(nb) if "google.colab" in cell.source]
    assert len(colab) == 1, "there should be one Colab set-up cell"
    installs = re.findall(r'"install", "--quiet", ([^)\]]*)', colab[0].source)
    pin = re.search(r"^otter-grader==\S+", (ROOT / "requirements" / "tools.in").read_text(), re.M)[0]  # what the kit tests
    assert installs == [f'"{pin}"'], f"the Colab cell installs {installs}; Colab has torch and matplotlib, and needs {pin}"


FAKE_COLAB_FILES = '''
import shutil
from pathlib import Path


def upload():
    """Colab's file picker, as if the student picked LAB-03.zip: it lands in the working folder."""
    shutil.copy(Path(__file__).resolve().parents[2] / "LAB-03.zip", "LAB-03.zip")
    return {"LAB-03.zip": b""}
'''

RUN_COLAB_CELL = '''
import json, subprocess, sys
subprocess.run = lambda *args, **kwargs: None  # no pip install in the test
exec(json.loads(sys.argv[1]))
'''


def test_colab_cell_opens_a_lab_folder_uploaded_as_a_zip(tmp_path):
    """The Colab cell with LAB_FOLDER = "upload", with a stand-in for google.colab's file picker."""
    nb = nbformat.read(ROOT / "assignment" / "playground.ipynb", as_version=4)
    cell = next(cell.source for cell in code_cells(nb) if "google.colab" in cell.source)
    cell = re.sub(r'^LAB_FOLDER = ".*?"', 'LAB_FOLDER = "upload"', cell, count=1, flags=re.MULTILINE)
    fake = tmp_path / "fake"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "files.py").write_text(FAKE_COLAB_FILES)
    lab = lab_copy(tmp_path / "zipped", ROOT / "assignment")
    shutil.make_archive(str(fake / "LAB-03"), "zip", root_dir=lab.parent, base_dir=lab.name)
    content = tmp_path / "content"  # Colab's working folder
    content.mkdir()
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", RUN_COLAB_CELL, json.dumps(cell)], cwd=content,
                          env={**os.environ, "PYTHONPATH": str(fake)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"working in {content / 'lab' / 'lab'}" in proc.stdout, proc.stdout
    assert (content / "lab" / "lab" / "attention.py").is_file()
