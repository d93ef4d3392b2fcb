"""`make gradescope`'s zip, and the grading logic it runs inside Gradescope, on this machine.

The zip is unpacked into ROOT/source with the upload in ROOT/submission and
ROOT/submission_metadata.json beside it, as in Gradescope's layout, and the grader's Python
entry point (what run_autograder execs) runs there with a bare environment. These tests
cover the grading logic fast: schema, upload shapes, visibility, the daily limit, grader
errors. They borrow this machine's interpreter, so they prove nothing about the image:
setup.sh and run_autograder themselves are tested in a clean container by
tests/heavy/test_gradescope_container.py.
"""
import datetime
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from autograder.config import GRADER_MARGIN_MB, Config
from autograder.platforms.gradescope_zip import GRADESCOPE_MEMORY_MB
from autograder.grading.suite_points import core_max, full_marks
from bench.measure import measure
from conftest import ROOT, run_grader

SAMPLES = ROOT / "examples" / "submissions"
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "gradescope_results.schema.json").read_text())
METADATA = {
    "id": 123456789,
    "created_at": "2026-11-29T10:15:00.000000-08:00",
    "assignment": {"title": "LAB-03: Attention from Scratch", "total_points": float(core_max())},
    "users": [{"email": "ada@example.edu", "id": 5551234, "name": "Ada Lovelace", "sid": "A1815"}],
    "previous_submissions": [],
}


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / "autograder.zip"
    run = subprocess.run([sys.executable, "-m", "autograder.platforms.gradescope", "build", "--out", str(out)],
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


def run_autograder(root, pass_fds=(), **env):
    """Run the grader's entry point as run_autograder execs it; returns (results dict, Measurement)."""
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", **env}
    command = [sys.executable, "-E", "-s", "-B", "-m", "autograder.platforms.gradescope", "run", "--root", str(root)]
    run = measure(command, cwd=str(root / "source"), env=environment, timeout=300, pass_fds=pass_fds)
    assert run.returncode == 0, f"the grader failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
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
    assert tops == {"autograder", "tests_hidden", "solution"}  # the rule is the engine's (autograder/rule/)
    assert not [n for n in names if "__pycache__" in n or n.startswith((".venv", ".git", "tests/"))]


def test_zip_carries_every_module_of_the_engine_in_its_group(autograder_zip):
    names = {n for n in zipfile.ZipFile(autograder_zip).namelist() if n.startswith("autograder/")}
    engine = {path.relative_to(ROOT).as_posix() for path in (ROOT / "autograder").rglob("*.py")
              if "__pycache__" not in path.parts}
    assert names == engine and "autograder/containment/probes.py" in names, sorted(names ^ engine)


def test_zip_is_small(autograder_zip):
    """Code and the suite only (no wheels, no data, which weigh megabytes): 205 KB once the term's files (issue 33)
    joined the engine, then the lab's API and the generated totals (issue 49), each LMS's grammar, Moodle's worksheet
    and one CSV writer (issue 48), the rule (autograder/rule/, with its table of library names: issue 45), and the
    measured properties of issue 47 (321 KB). A wheel or a data file would add megabytes: the cap keeps room for
    code, not for those."""
    assert autograder_zip.stat().st_size < 384 * 1024


def test_runtime_requirements_pin_every_package(autograder_zip):
    text = zipfile.ZipFile(autograder_zip).read("requirements-gradescope.txt").decode()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines and all("==" in line for line in lines), text
    assert "torch==2.13.0" in lines, "the lock pins torch exactly (setup.sh's CPU build satisfies it)"


def test_the_build_prints_the_total_to_enter_and_the_settings_to_check(tmp_path, capsys):
    from autograder.platforms import gradescope

    assert gradescope.main(["build", "--out", str(tmp_path / "autograder.zip")]) == 0
    out = capsys.readouterr().out
    assert f"total to enter on Gradescope: {core_max():g} points" in out, out
    assert "Ubuntu 22.04" in out and "memory: at least" in out and "timeout: at least" in out, out


def test_the_total_to_enter_follows_the_suites_points(tmp_path):
    """A 5-point test added to the hidden suite raises the total the build prints by 5."""
    from autograder.config import load_config
    from autograder.platforms.gradescope_zip import upload_notes

    suite = shutil.copytree(ROOT / "tests_hidden", tmp_path / "tests_hidden")
    with open(suite / "test_masks.py", "a") as f:
        f.write("\n\n@pytest.mark.points(5)\ndef test_added_by_the_instructor():\n    pass\n")
    assert upload_notes(load_config(), str(suite))[0].startswith(
        f"total to enter on Gradescope: {core_max() + 5:g} points")


def test_the_zip_records_the_total_it_was_built_for(autograder_zip):
    from autograder.platforms.gradescope_zip import built_total

    assert built_total(str(autograder_zip)) == core_max()


def test_a_rebuild_says_when_the_total_to_enter_changed(autograder_zip):
    """The zip it replaces was built for another total: the build names both and the figure to enter."""
    from autograder.platforms.gradescope_zip import total_change

    line = total_change(core_max() - 5, core_max(), str(autograder_zip))
    assert line and f"built for {core_max() - 5:g} points" in line and f"enter {core_max():g}" in line, line


def test_a_rebuild_for_the_same_total_or_over_no_record_says_nothing(tmp_path):
    from autograder.platforms.gradescope_zip import built_total, total_change

    assert total_change(core_max(), core_max()) is None
    assert built_total(str(tmp_path / "absent.zip")) is None
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:  # built before the zip recorded its total
        archive.writestr("grading.yaml", "")
    assert total_change(built_total(str(tmp_path / "old.zip")), core_max()) is None


def test_the_settings_follow_grading_yaml():
    from autograder.platforms.gradescope_zip import upload_notes

    notes = "\n".join(upload_notes(Config(memory_mb=1000, submission_seconds=600)))
    assert f"memory: at least {1000 + GRADER_MARGIN_MB} MiB" in notes and "timeout: at least 12 minutes" in notes


def test_the_build_names_the_assignment_settings_grading_yaml_assumes():
    """The due date (after_due_date tests wait for it), Gradescope's late policy and the daily limit, from grading.yaml."""
    from autograder.platforms.gradescope_zip import upload_notes

    config = Config(hidden_visibility="after_due_date", late_due="2026-10-01 23:59", late_percent_per_day=10,
                    daily_submission_limit=3)
    notes = "\n".join(upload_notes(config))
    assert "due date: set it" in notes and "the others after the due date" in notes, notes
    assert "late submissions: Gradescope's own policy; set it to match" in notes and "10% a day" in notes, notes
    assert "daily limit: 3 graded submissions per student per 24 h" in notes, notes
    published = "\n".join(upload_notes(Config(public_visibility="after_published", hidden_visibility="after_published")))
    assert "due date: set it" not in published and "once you publish the grades" in published, published


def test_runtime_lock_is_in_sync_with_grade_lock_and_the_installed_packages():
    from autograder.platforms.gradescope_zip import RUNTIME_LOCK, runtime_lock_text

    assert Path(RUNTIME_LOCK).read_text() == runtime_lock_text(), (
        "requirements/gradescope.lock drifted from grade.lock or from what torch, numpy, pytest and PyYAML "
        "require: run `.venv/bin/python -m autograder.platforms.gradescope lock` (make lock does it too)")


def test_setup_script_pins_the_cpu_torch_and_leaves_the_system_python_alone():
    text = (ROOT / "autograder" / "platforms" / "gradescope_files" / "setup.sh").read_text()
    assert '"torch==2.13.0"' in text and "whl/cpu" in text and '"pip==' in text
    assert "/usr/local/bin/python3" not in text and "conda" not in text and "git clone" not in text


def test_run_autograder_execs_the_kits_python_by_absolute_path():
    text = (ROOT / "autograder" / "platforms" / "gradescope_files" / "run_autograder").read_text()
    assert 'exec "$KIT_PYTHON"' in text and "KIT_PYTHON=/opt/attention-kit/bin/python" in text
    assert "python3 -m" not in text, "the first python3 on PATH is Gradescope's, not the kit's"


@pytest.mark.parametrize("script", ["setup.sh", "run_autograder"])
def test_scripts_parse(script):
    run = subprocess.run(["bash", "-n", str(ROOT / "autograder" / "platforms" / "gradescope_files" / script)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("script", ["setup.sh", "run_autograder"])
def test_scripts_pass_shellcheck(script):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck'; .ci/run installs it)")
    run = subprocess.run(["shellcheck", str(ROOT / "autograder" / "platforms" / "gradescope_files" / script)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


# --- grading in the simulated container ---------------------------------------------------

@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, autograder_zip):
    root = gradescope_root(tmp_path_factory.mktemp("gs-reference"), autograder_zip)
    upload(root, sample("reference"))
    return root, *run_autograder(root)


@pytest.mark.slow  # grades in a Gradescope layout
def test_reference_scores_full_marks(reference_run):
    _, results, _ = reference_run
    assert results["score"] == full_marks(), failing(results)  # every core and extra-credit point


@pytest.mark.slow  # grades in a Gradescope layout
def test_results_follow_the_gradescope_schema(reference_run):
    jsonschema.validate(reference_run[1], SCHEMA)


@pytest.mark.slow  # grades in a Gradescope layout
def test_report_names_the_student_from_the_metadata(reference_run):
    assert "Ada Lovelace" in reference_run[1]["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_overview_hides_the_total_while_hidden_tests_carry_points(reference_run):
    """Gradescope hides a student's total while any points-bearing test is not visible; the output,
    which students always see, must not give it away either."""
    results = reference_run[1]
    hidden = [t for t in results["tests"] if t["visibility"] == "after_due_date"]
    assert hidden and all(t["output_format"] == "md" and t["number"] and t["tags"] for t in results["tests"])
    assert "Score:" not in results["output"] and f"{full_marks():g}" not in results["output"], results["output"]
    assert "Visible tests:" in results["output"] and "hidden tests" in results["output"], results["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_instructor_feedback_states_the_total(reference_run):
    feedback = (reference_run[0] / "results" / "feedback.md").read_text()
    assert f"Score: {full_marks():g} / {core_max():g}" in feedback


@pytest.mark.slow  # grades in a Gradescope layout
def test_overview_states_the_total_when_every_test_is_visible(tmp_path, autograder_zip, mask_bug_score):
    root = gradescope_root(tmp_path, autograder_zip)
    config = root / "source" / "grading.yaml"
    config.write_text(config.read_text().replace("hidden: after_due_date", "hidden: visible"))
    upload(root, sample("mask_bug"))
    results, _ = run_autograder(root)
    assert f"Score: {mask_bug_score:g} / {core_max():g}" in results["output"], results["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_peak_memory_is_far_below_gradescopes_limit(reference_run):
    _, _, run = reference_run
    print(f"peak PSS {run.peak_pss_mb:.0f} MB, summed RSS {run.peak_rss_mb:.0f} MB, CPU {run.cpu_seconds:.1f} s")
    assert run.peak_pss_mb < GRADESCOPE_MEMORY_MB * 0.75, f"peak {run.peak_pss_mb:.0f} MB (PSS) leaves too little margin"


@pytest.mark.slow  # grades in a Gradescope layout
def test_source_and_results_are_closed_to_the_sandbox_user(reference_run):
    root = reference_run[0]
    assert (root / "source").stat().st_mode & 0o077 == 0
    assert (root / "results").stat().st_mode & 0o077 == 0


@pytest.mark.slow  # grades in a Gradescope layout
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


@pytest.mark.slow  # grades in a Gradescope layout
@pytest.mark.parametrize("shape", ["two files", "zip of the files", "zip of a folder"])
def test_every_upload_shape_gets_the_same_score(tmp_path, autograder_zip, mask_bug_score, shape):
    root = gradescope_root(tmp_path, autograder_zip)
    files = sample("mask_bug")
    if shape == "two files":
        upload(root, files)
    else:
        folder = "lab03/" if shape == "zip of a folder" else ""
        (root / "submission" / "submission.zip").write_bytes(_zip_bytes(files, folder))
    results, _ = run_autograder(root)
    assert results["score"] == mask_bug_score, f"{shape}: {results['score']}\n{failing(results)}"


@pytest.fixture(scope="module")
def mask_bug_score(tmp_path_factory):
    """What `make grade` gives the mask_bug sample: each Gradescope upload of it must score the same."""
    out = tmp_path_factory.mktemp("mask_bug")
    run = run_grader("grade", SAMPLES / "mask_bug", "--out", out)
    assert run.returncode == 0, run.stderr[-2000:]
    score = json.loads((out / "mask_bug" / "results.json").read_text())["score"]
    assert 0 < score < core_max(), f"the mask_bug sample should lose some points, not all: {score:g}"
    return score


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
    try:
        daemon = os.fork() == 0  # a daemon that comes back after grading
    except OSError as err:  # the kernel filter refuses new processes
        print("fork refused:", err)
        return
    if daemon:
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


# The uid level (Gradescope's) is tested in a clean image by test_gradescope_container.py: this
# machine's interpreter lives in a private home, which the uid level refuses to use.
@pytest.mark.slow  # grades in a Gradescope layout
@pytest.mark.parametrize("isolation", ["namespaces"])
def test_hostile_submission_cannot_touch_results_or_read_the_reference(tmp_path, autograder_zip, isolation):
    root = gradescope_root(tmp_path, autograder_zip)
    files = sample("reference")
    payload = HOSTILE.format(results=str(root / "results" / "results.json"),
                             solution=str(root / "source" / "solution" / "attention.py"))
    upload(root, {"attention.py": files["attention.py"] + payload, "mha.py": files["mha.py"]})
    results, _ = run_autograder(root, AUTOGRADER_ISOLATION=isolation)
    written = (root / "results" / "results.json").read_bytes()
    # os.fork and os._exit can hide what the code runs, so attention.py's tests count nothing (the
    # from-scratch rule); what matters here is that the grader's own report stands.
    assert results["extra_data"]["isolation"] == isolation and "12345" not in written.decode()
    mha = [t for t in results["tests"] if t["tags"][0] in ("mha_init", "heads", "mha_forward")]
    attention = [t for t in results["tests"] if t["tags"][0] in ("masks", "attention", "gradients")]
    assert mha and all(t["status"] == "passed" for t in mha), "mha.py is the reference's: full marks"
    assert all(t["status"] == "failed" and "not graded" in t["output"] for t in attention)
    feedback = (root / "results" / "feedback.md").read_text()
    assert "READ REFERENCE" not in feedback and "reference not readable" in feedback
    time.sleep(5)  # past the daemon's wake-up
    assert (root / "results" / "results.json").read_bytes() == written, "results.json changed after grading"


MEMORY_HUNT = ROOT / "tests" / "heavy" / "hostile" / "grader_memory" / "attention.py.payload"
INHERITED_FDS = ROOT / "tests" / "heavy" / "hostile" / "inherited_fds" / "attention.py.payload"


def plant_secret(root, secret):
    """Put ``secret`` (the pattern the memory hunt looks for) where only the grader reads it, each read
    after the zygote is forked: the metadata (a student's name), a hidden test and the reference."""
    metadata = json.loads((root / "submission_metadata.json").read_text())
    metadata["users"][0]["name"] = secret
    (root / "submission_metadata.json").write_text(json.dumps(metadata))
    for path in (root / "source" / "tests_hidden" / "cases.py", root / "source" / "solution" / "attention.py"):
        path.write_text(path.read_text() + f"\nPLANTED = {secret!r}\n")


def memory_hunt(feedback):
    """(secrets found, bytes scanned) as the grader_memory payload printed them (the instructor's feedback.md)."""
    match = re.search(r"MEMORY-HUNT found=(\[.*?\]) scanned=(\d+)", feedback)
    assert match, f"the memory hunt did not report:\n{feedback[-1500:]}"
    return json.loads(match.group(1).replace("'", '"')), int(match.group(2))


FORKED_ZYGOTE = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from autograder.containment import zygote
inherited = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)  # as whoever started the grader might leave one
zygote.preload()
forked = zygote.Zygote("rlimits", preloaded=True)
seen, since = None, time.monotonic()
def listing_of(pid):
    try:  # a descriptor may close between the listing and its readlink: look again
        return {n: os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
    except FileNotFoundError:
        return None
while time.monotonic() - since < 0.5 and time.monotonic() < since + 30:  # until its descriptors settle
    listing = listing_of(forked.pid)
    if listing is not None and listing != seen:
        seen, since = listing, time.monotonic()
    time.sleep(0.05)
forked.stop()
print(json.dumps({"fds": seen, "inherited": os.readlink(f"/proc/self/fd/{inherited}")}))
"""


def test_a_forked_zygote_keeps_only_its_socket_and_stdio():
    from autograder.containment.zygote import child_environment

    run = subprocess.run([sys.executable, "-E", "-s", "-B", "-c", FORKED_ZYGOTE, str(ROOT)], env=child_environment(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    held = json.loads(run.stdout)
    assert sorted(held["fds"], key=int) == ["0", "1", "2", "3"], held
    assert held["fds"]["0"] == held["fds"]["1"] == "/dev/null" and held["fds"]["3"].startswith("socket:"), held


PRELOAD = """
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from autograder.containment import zygote
zygote.preload()
print(json.dumps({"full": gc.get_stats()[2]["collections"], "frozen": gc.get_freeze_count(), "on": gc.isenabled()}))
"""


def test_the_preload_imports_torch_without_a_full_collection_and_freezes_it():
    """A full collection during torch's import scans torch's growing heap (see bench/RESULTS.md): the grader
    imports it with the collector off, then freezes it, so no later collection (nor the forks') scans it."""
    run = subprocess.run([sys.executable, "-E", "-s", "-B", "-c", PRELOAD, str(ROOT)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    state = json.loads(run.stdout)
    assert state["full"] == 0 and state["frozen"] > 100_000 and state["on"], state


def test_a_zygote_is_forked_only_from_a_process_started_with_the_allow_listed_environment(monkeypatch):
    from autograder.containment import zygote

    for name, value in zygote.child_environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AG_GRADER_SECRET", "from whoever started the grader")
    with pytest.raises(RuntimeError, match="allow-listed environment"):
        zygote.Zygote("rlimits", preloaded=True)


@pytest.fixture(scope="module")
def hunted(tmp_path_factory, autograder_zip):
    """The reference with the memory hunt and the descriptor listing appended, graded by a grader that was
    started with a secret in its environment and an open directory descriptor, the secret planted where
    the grader reads it after forking its zygote (``plant_secret``): (secret, feedback.md, that directory)."""
    secret = "AGSECRET-" + secrets.token_hex(8)
    tmp = tmp_path_factory.mktemp("hunted")
    root = gradescope_root(tmp, autograder_zip)
    plant_secret(root, secret)
    files = sample("reference")
    upload(root, {"attention.py": files["attention.py"] + MEMORY_HUNT.read_text() + INHERITED_FDS.read_text(),
                  "mha.py": files["mha.py"]})
    inherited = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    try:
        run_autograder(root, pass_fds=(inherited,), AG_GRADER_SECRET=secret)
    finally:
        os.close(inherited)
    return secret, (root / "results" / "feedback.md").read_text(), tmp


@pytest.mark.slow  # grades in a Gradescope layout
def test_the_child_finds_nothing_the_grader_read_after_forking_its_zygote(hunted):
    """The zygote is forked from the grader (one torch import): it must be forked before the grader reads
    the metadata, the hidden tests or the reference, and with none of the environment it was started with."""
    secret, feedback, _ = hunted
    found, scanned = memory_hunt(feedback)
    assert scanned > 1 << 20, f"the hunt read only {scanned} bytes of its memory: it proves nothing"
    assert secret not in found, f"the submission found what the grader read or was started with: {found}"
    assert f"Submission of {secret}" in feedback, "the grader did read the planted name"


@pytest.mark.slow  # grades in a Gradescope layout
def test_the_child_holds_no_descriptor_of_the_grader_that_forked_its_zygote(hunted):
    _, feedback, inherited = hunted
    held = dict(re.findall(r"^FD (\d+) -> (.*)$", feedback, re.MULTILINE))
    assert held.get("0") == "/dev/null", f"the descriptor listing did not report, or stdin is not /dev/null: {held}"
    extra = {n: t for n, t in held.items() if int(n) > 4 and t != "? No such file or directory"}
    assert not extra, f"the child holds descriptors beyond stdin/out/err and its two pipes: {extra}"
    assert str(inherited) not in "".join(held.values()), "a descriptor the grader inherited reached the child"


@pytest.mark.slow  # grades in a Gradescope layout
def test_a_grader_failure_is_reported_as_the_graders(tmp_path, autograder_zip):
    root = gradescope_root(tmp_path, autograder_zip)
    upload(root, sample("reference"))
    shutil.rmtree(root / "source" / "tests_hidden")  # the instructor's zip is broken, not the student
    results, run = run_autograder(root)
    assert results["extra_data"]["grader_error"] is True
    assert "not a problem with your code" in results["output"]
    assert "grader error" in run.stdout, "the instructor sees the detail in the autograder output"


def limited_root(tmp_path, autograder_zip, previous, limit=1):
    root = gradescope_root(tmp_path, autograder_zip, dict(METADATA, previous_submissions=previous))
    config = root / "source" / "grading.yaml"
    config.write_text(config.read_text().replace("daily_submission_limit: 0", f"daily_submission_limit: {limit}"))
    upload(root, sample("reference"))
    return root


def earlier(hours_before, score, **extra_data):
    """A previous submission, ``hours_before`` METADATA's created_at, as Gradescope lists it."""
    when = datetime.datetime.fromisoformat(METADATA["created_at"]) - datetime.timedelta(hours=hours_before)
    tests = [{"name": "kept test", "score": score, "max_score": 100.0, "visibility": "visible"}]
    return {"submission_time": when.isoformat(), "score": score,
            "results": {"score": score, "tests": tests, "extra_data": extra_data}}


@pytest.mark.slow  # grades in a Gradescope layout
def test_daily_limit_keeps_the_last_graded_score_and_its_tests(tmp_path, autograder_zip):
    root = limited_root(tmp_path, autograder_zip, [earlier(5, 40.0), earlier(2, 64.0)], limit=2)
    results, _ = run_autograder(root)
    assert results["score"] == 64.0 and "not graded" in results["output"], results["output"]
    assert results["tests"][0]["name"] == "kept test", "the last graded submission's per-test results are kept"
    assert results["extra_data"]["not_graded"] is True


@pytest.mark.slow  # grades in a Gradescope layout
def test_daily_limit_counts_only_graded_submissions(tmp_path, autograder_zip):
    """Refused uploads and grader errors do not use up the limit: trying again never locks a student out."""
    previous = [earlier(3, 64.0), earlier(2, 64.0, not_graded=True), earlier(1, 0.0, grader_error=True)]
    root = limited_root(tmp_path, autograder_zip, previous, limit=2)
    results, _ = run_autograder(root)
    assert results["score"] == full_marks() and not results["extra_data"].get("not_graded"), results["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_daily_limit_never_carries_a_grader_error(tmp_path, autograder_zip):
    previous = [earlier(3, 64.0), earlier(1, 0.0, grader_error=True)]
    root = limited_root(tmp_path, autograder_zip, previous, limit=1)
    results, _ = run_autograder(root)
    assert results["score"] == 64.0 and results["extra_data"]["not_graded"] is True, results["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_daily_limit_ignores_submissions_older_than_a_day(tmp_path, autograder_zip):
    root = limited_root(tmp_path, autograder_zip, [earlier(30, 64.0)], limit=1)
    results, _ = run_autograder(root)
    assert results["score"] == full_marks(), results["output"]


@pytest.mark.slow  # grades in a Gradescope layout
def test_submitters_carry_the_sid_never_a_user_id(tmp_path, autograder_zip):
    metadata = dict(METADATA, users=[{"email": "b@example.edu", "id": 777, "name": "Bo"}])
    root = gradescope_root(tmp_path, autograder_zip, metadata)
    upload(root, sample("stubs"))
    results, _ = run_autograder(root)
    assert results["extra_data"]["submitters"] == [{"name": "Bo", "email": "b@example.edu", "sid": ""}]


def test_make_gradescope_refuses_a_grading_yaml_the_grader_would_refuse(tmp_path, monkeypatch, capsys):
    """Otherwise every student's submission would end in a grader error on Gradescope."""
    from autograder import config
    from autograder.platforms import gradescope

    (tmp_path / "grading.yaml").write_text("limits:\n  memory_mb: 16\n")
    monkeypatch.setattr(config, "KIT_ROOT", str(tmp_path))
    zip_path = tmp_path / "dist" / "autograder.zip"
    assert gradescope.main(["build", "--out", str(zip_path)]) == 2
    err = capsys.readouterr().err
    assert "limits.memory_mb must be at least" in err and "nothing was built" in err, err
    assert not zip_path.exists()


# --- make gradescope: grading.yaml's memory against Gradescope's container -------------------------

def test_a_memory_limit_that_fits_beside_the_graders_margin_builds_without_a_word():
    from autograder.platforms.gradescope_zip import GRADESCOPE_MEMORY_MB, memory_warning
    assert memory_warning(Config(memory_mb=GRADESCOPE_MEMORY_MB - GRADER_MARGIN_MB)) is None
    assert memory_warning(Config()) is None, "the shipped grading.yaml fits"


def test_a_memory_limit_beyond_the_container_is_named_in_one_line_with_the_setting_to_raise():
    from autograder.platforms.gradescope_zip import GRADESCOPE_MEMORY_MB, memory_warning
    warning = memory_warning(Config(memory_mb=GRADESCOPE_MEMORY_MB - GRADER_MARGIN_MB + 1))
    assert warning and "\n" not in warning and "limits.memory_mb" in warning, warning
    assert f"at least {GRADESCOPE_MEMORY_MB + 1} MiB" in warning and "Autograder Settings" in warning, warning


def test_make_gradescope_prints_the_memory_warning_and_still_builds(tmp_path, monkeypatch, capsys):
    import autograder.config
    from autograder.platforms.gradescope import main
    monkeypatch.setattr(autograder.config, "load_config", lambda path=None: Config(memory_mb=2048))
    assert main(["build", "--out", str(tmp_path / "autograder.zip")]) == 0
    assert (tmp_path / "autograder.zip").exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "limits.memory_mb is 2048 MiB" in err, err


def test_gradescope_metadata_is_read_with_a_size_cap_and_bounded_names(tmp_path, monkeypatch, capsys):
    """Issue 23, 6b: submission_metadata.json is read with a bound, and a submitter's fields are cut to
    200 characters before any report or gradebook holds them."""
    from autograder.platforms import gradescope

    metadata = {"users": [{"name": "N" * 100_000, "email": "e@x.edu", "sid": 7}], "previous_submissions": []}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    user = gradescope._read_metadata(str(tmp_path))["users"][0]
    assert len(user["name"]) == 200 and user == {"name": user["name"], "email": "e@x.edu", "sid": "7"}
    monkeypatch.setattr(gradescope, "METADATA_MAX_BYTES", 1000)
    assert gradescope._read_metadata(str(tmp_path)) == {}
    assert "larger than" in capsys.readouterr().out
