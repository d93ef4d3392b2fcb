"""`make gradescope` and a faithful local copy of Gradescope's container layout.

The zip is unpacked into ROOT/source, run_autograder is copied to ROOT/run_autograder, the
upload lands in ROOT/submission with ROOT/submission_metadata.json beside it, and the script
runs as root with the kit's .venv first on PATH (setup.sh makes its venv the first python3).
"""
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

import jsonschema
import pytest

from autograder.measure import measure
from conftest import ROOT

SAMPLES = ROOT / "examples" / "submissions"
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "gradescope_results.schema.json").read_text())
GRADESCOPE_MEMORY_MB = 768
METADATA = {
    "id": 123456789,
    "created_at": "2026-11-29T10:15:00.000000-08:00",
    "assignment": {"title": "LAB-03: Attention from Scratch", "total_points": 100.0},
    "users": [{"email": "ada@example.edu", "id": 5551234, "name": "Ada Lovelace", "sid": "A1815"}],
    "previous_submissions": [],
}


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / "autograder.zip"
    run = subprocess.run([sys.executable, "-m", "autograder.gradescope", "build", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "KiB" in run.stdout, "the build prints the zip's size"
    return out


def gradescope_root(tmp_path, autograder_zip, metadata=METADATA):
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission_metadata.json").write_text(json.dumps(metadata))
    return root


def run_autograder(root, **env):
    """Run the copied run_autograder as Gradescope does; returns (results dict, Measurement)."""
    environment = dict(os.environ, AUTOGRADER_ROOT=str(root), PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
                       **env)
    run = measure(["bash", str(root / "run_autograder")], cwd=str(root), env=environment, timeout=300)
    assert run.returncode == 0, f"run_autograder failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    return json.loads((root / "results" / "results.json").read_text()), run


def upload(root, files):
    for name, text in files.items():
        (root / "submission" / name).write_text(text)


def sample(name):
    return {f: (SAMPLES / name / f).read_text() for f in ("attention.py", "mha.py")}


def failing(results):
    return "\n".join(f"{t['number']} {t['name']}: {t['output'][:300]}" for t in results["tests"] if t["status"] == "failed")


# --- the package -----------------------------------------------------------------------------

def test_zip_has_the_entry_points_at_its_root(autograder_zip):
    names = set(zipfile.ZipFile(autograder_zip).namelist())
    assert {"setup.sh", "run_autograder", "requirements-gradescope.txt", "grading.yaml"} <= names


def test_zip_carries_engine_suite_and_reference_and_nothing_else(autograder_zip):
    names = zipfile.ZipFile(autograder_zip).namelist()
    tops = {n.split("/")[0] for n in names if "/" in n}
    assert tops == {"autograder", "tests_hidden", "solution", "assignment"}
    assert not [n for n in names if "__pycache__" in n or n.startswith((".venv", ".git", "tests/"))]
    assert [n for n in names if n.startswith("assignment/")] == ["assignment/submit.py"]


def test_zip_is_small(autograder_zip):
    assert autograder_zip.stat().st_size < 200 * 1024


def test_runtime_requirements_pin_every_package(autograder_zip):
    text = zipfile.ZipFile(autograder_zip).read("requirements-gradescope.txt").decode()
    lines = [line for line in text.splitlines() if line]
    assert lines and all("==" in line for line in lines), text
    assert not any(line.startswith("torch") for line in lines), "setup.sh installs torch from the CPU index"


def test_setup_script_pins_the_cpu_torch_and_creates_the_sandbox_user():
    text = (ROOT / "autograder" / "gradescope_files" / "setup.sh").read_text()
    assert '"torch==2.13.0"' in text and "whl/cpu" in text
    assert "useradd" in text and "conda" not in text and "git clone" not in text


@pytest.mark.parametrize("script", ["setup.sh", "run_autograder"])
def test_scripts_parse(script):
    run = subprocess.run(["bash", "-n", str(ROOT / "autograder" / "gradescope_files" / script)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("script", ["setup.sh", "run_autograder"])
def test_scripts_pass_shellcheck(script):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck'; .ci/run installs it)")
    run = subprocess.run(["shellcheck", str(ROOT / "autograder" / "gradescope_files" / script)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


# --- grading in the simulated container ---------------------------------------------------

@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, autograder_zip):
    root = gradescope_root(tmp_path_factory.mktemp("gs-reference"), autograder_zip)
    upload(root, sample("reference"))
    return root, *run_autograder(root)


def test_reference_scores_full_marks(reference_run):
    _, results, _ = reference_run
    assert results["score"] == 110, failing(results)  # 100 core + 10 extra credit


def test_results_follow_the_gradescope_schema(reference_run):
    jsonschema.validate(reference_run[1], SCHEMA)


def test_report_names_the_student_from_the_metadata(reference_run):
    assert "Ada Lovelace" in reference_run[1]["output"]


def test_overview_says_hidden_tests_are_included(reference_run):
    results = reference_run[1]
    assert "hidden tests" in results["output"] and "Score: 110 / 100" in results["output"]
    hidden = [t for t in results["tests"] if t["visibility"] == "after_due_date"]
    assert hidden and all(t["output_format"] == "md" and t["number"] and t["tags"] for t in results["tests"])


def test_peak_memory_is_far_below_gradescopes_limit(reference_run):
    _, _, run = reference_run
    print(f"peak PSS {run.peak_pss_mb:.0f} MB, summed RSS {run.peak_rss_mb:.0f} MB, CPU {run.cpu_seconds:.1f} s")
    assert run.peak_pss_mb < GRADESCOPE_MEMORY_MB * 0.75, f"peak {run.peak_pss_mb:.0f} MB (PSS) leaves too little margin"


def test_source_and_results_are_closed_to_the_sandbox_user(reference_run):
    root = reference_run[0]
    assert (root / "source").stat().st_mode & 0o077 == 0
    assert (root / "results").stat().st_mode & 0o077 == 0


def test_stubs_score_zero_without_grader_error(tmp_path, autograder_zip):
    root = gradescope_root(tmp_path, autograder_zip)
    upload(root, sample("stubs"))
    results, _ = run_autograder(root)
    assert results["score"] == 0
    assert not results["extra_data"].get("grader_error"), results["output"]


def _zip_bytes(files, folder=""):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(folder + name, text)
    return buffer.getvalue()


@pytest.mark.parametrize("shape", ["two files", "zip of the files", "zip of a folder"])
def test_every_upload_shape_gets_the_same_score(tmp_path, autograder_zip, shape):
    root = gradescope_root(tmp_path, autograder_zip)
    files = sample("mask_bug")
    if shape == "two files":
        upload(root, files)
    else:
        folder = "lab03/" if shape == "zip of a folder" else ""
        (root / "submission" / "submission.zip").write_bytes(_zip_bytes(files, folder))
    results, _ = run_autograder(root)
    assert results["score"] == MASK_BUG_SCORE, f"{shape}: {results['score']}\n{failing(results)}"


MASK_BUG_SCORE = 71.0  # checked against the plain two-file upload above


HOSTILE = '''
import os, sys, time
RESULTS = {results!r}
def _attack():
    for path in (RESULTS, os.path.join(os.getcwd(), "results.json")):
        try:
            with open(path, "w") as f:
                f.write('{{"score": 12345}}')
        except OSError:
            pass
    try:
        with open({solution!r}) as f:
            print("READ REFERENCE:", f.read()[:80])
    except OSError as err:
        print("reference not readable:", err)
    if os.fork() == 0:  # a daemon that comes back after grading
        os.setsid()
        if os.fork() == 0:
            time.sleep(4)
            try:
                with open(RESULTS, "w") as f:
                    f.write('{{"score": 12345}}')
            except OSError:
                pass
        os._exit(0)
_attack()
'''


@pytest.mark.parametrize("isolation", ["namespaces", "uid"])
def test_hostile_submission_cannot_touch_results_or_read_the_reference(tmp_path, autograder_zip, isolation):
    root = gradescope_root(tmp_path, autograder_zip)
    files = sample("reference")
    payload = HOSTILE.format(results=str(root / "results" / "results.json"),
                             solution=str(root / "source" / "solution" / "attention.py"))
    upload(root, {"attention.py": files["attention.py"] + payload, "mha.py": files["mha.py"]})
    results, _ = run_autograder(root, AUTOGRADER_ISOLATION=isolation)
    written = (root / "results" / "results.json").read_bytes()
    # os.fork and os._exit can hide what the code runs, so attention.py's tests count nothing (the
    # from-scratch rule, issue 13); what matters here is that the grader's own report stands.
    assert results["extra_data"]["isolation"] == isolation and "12345" not in written.decode()
    mha = [t for t in results["tests"] if t["tags"][0] in ("mha_init", "heads", "mha_forward")]
    attention = [t for t in results["tests"] if t["tags"][0] in ("masks", "attention", "gradients")]
    assert mha and all(t["status"] == "passed" for t in mha), "mha.py is the reference's: full marks"
    assert all(t["status"] == "failed" and "not graded" in t["output"] for t in attention)
    feedback = (root / "results" / "feedback.md").read_text()
    assert "READ REFERENCE" not in feedback and "reference not readable" in feedback
    time.sleep(5)  # past the daemon's wake-up
    assert (root / "results" / "results.json").read_bytes() == written, "results.json changed after grading"


def test_a_grader_failure_is_reported_as_the_graders(tmp_path, autograder_zip):
    root = gradescope_root(tmp_path, autograder_zip)
    upload(root, sample("reference"))
    shutil.rmtree(root / "source" / "tests_hidden")  # the instructor's zip is broken, not the student
    results, run = run_autograder(root)
    assert results["extra_data"]["grader_error"] is True
    assert "not a problem with your code" in results["output"]
    assert "grader error" in run.stdout, "the instructor sees the detail in the autograder output"


def test_daily_limit_keeps_the_last_score_without_grading(tmp_path, autograder_zip):
    previous = [{"submission_time": "2026-11-29T09:00:00.000000-08:00", "score": 64.0, "results": {}}]
    root = gradescope_root(tmp_path, autograder_zip, dict(METADATA, previous_submissions=previous))
    config = root / "source" / "grading.yaml"
    config.write_text(config.read_text().replace("daily_submission_limit: 0", "daily_submission_limit: 1"))
    upload(root, sample("reference"))
    results, _ = run_autograder(root)
    assert results["score"] == 64.0 and "not graded" in results["output"]
