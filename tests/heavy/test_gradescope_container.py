"""The Gradescope zip grades in a clean container, as Gradescope runs it.

Nothing of this machine's venv, PATH or privileges is in sight: ``make gradescope``'s zip is
unpacked into a minimal Debian image, ``setup.sh`` builds it as root with a bare environment,
and every submission runs ``/autograder/run_autograder`` without CAP_SYS_ADMIN inside a
768 MiB memory cgroup (see ``gradescope_image``). The cases: the reference, the stubs, a buggy
submission, the three upload shapes, the grader's own failure, and the whole hostile suite.

Slow (about five minutes, a minute more the first time the image is built) and root-only;
skipped with the reason where the machine cannot do it.
"""
import json
import secrets
import shutil
import socket
import subprocess
import sys

import jsonschema
import pytest

import gradescope_image
from autograder.grading.suite_points import core_max, full_marks
from conftest import ROOT
from gradescope_image import GRADESCOPE_MEMORY, Image
from test_gradescope import MEMORY_HUNT, METADATA, _zip_bytes, memory_hunt, plant_secret
from test_hostile import (BALLAST_BLOCK, EXPECTED, HOSTILE, MEMORY_TEST, accepted, attack_problems,
                          build_batch)

pytestmark = [pytest.mark.slow,  # builds a clean image and grades in it (`make check-fast` skips it)
              pytest.mark.skipif(bool(gradescope_image.unavailable()),
                                 reason=f"container test: {gradescope_image.unavailable()}")]

SAMPLES = ROOT / "examples" / "submissions"
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "gradescope_results.schema.json").read_text())
FULL = full_marks()  # every core and extra-credit point of tests_hidden/: the reference earns both
# May fill the container to its limit (Docker gives no cgroup per submission), so that its OOM killer ends
# student processes (oom_score_adj 1000): the grader's own report must still be whole.
MEMORY_ATTACKS = {"memory_bomb", "memory_split"}
HOSTILE_CALL_SECONDS = 2  # as in test_hostile; the shipped 10 s would make the hanging cases slow


def sample(name):
    return {f: (SAMPLES / name / f).read_text() for f in ("attention.py", "mha.py")}


def failing(results):
    return "\n".join(f"{t['number']} {t['name']}: {t['output'][:300]}" for t in results["tests"] if t["status"] == "failed")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    work = tmp_path_factory.mktemp("gradescope-image")
    built = subprocess.run([sys.executable, "-m", "autograder.platforms.gradescope", "build", "--out", str(work / "autograder.zip")],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    wheel = gradescope_image.torch_cpu_wheel(work / "wheels")
    image = Image.create(work, work / "autograder.zip", wheel)
    image.setup_outcome = image.setup()
    yield image
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(image):
    """The ordinary cases, graded once each: name -> (results, Outcome)."""
    assert image.setup_outcome.returncode == 0, f"setup.sh failed:\n{image.setup_outcome.output[-4000:]}"
    reference = sample("reference")
    cases = {
        "reference": reference,
        "stubs": sample("stubs"),
        "mask_bug": sample("mask_bug"),
        "zip_of_files": {"submission.zip": _zip_bytes(reference)},
        "zip_of_a_folder": {"lab03.zip": _zip_bytes(reference, folder="lab03/")},
    }
    return {name: image.grade(files, METADATA) for name, files in cases.items()}


# --- building the image ----------------------------------------------------------------------

def test_setup_succeeds_in_a_clean_image(image):
    outcome = image.setup_outcome
    assert outcome.returncode == 0, f"setup.sh failed in a clean image:\n{outcome.output[-4000:]}"
    assert "the reference scored full marks" in outcome.output, "setup.sh did not run its smoke test"


def test_setup_leaves_the_system_python3_alone(image):
    python3 = image.root / "usr" / "local" / "bin" / "python3"
    assert not python3.exists() and not python3.is_symlink(), (
        "setup.sh put a python3 in /usr/local/bin: Gradescope's harness relies on the system python3")


def test_setup_installs_a_cpu_build_of_torch(image):
    installed = list((image.root / "opt/attention-kit/lib/python3.11/site-packages").glob("torch-2.13.0*.dist-info"))
    assert installed, "torch 2.13.0 is not in the kit's venv"
    assert not list((image.root / "opt/attention-kit/lib/python3.11/site-packages").glob("nvidia*")), (
        "CUDA libraries were installed: torch came from the wrong index")


def test_setup_can_run_again(image):
    again = image.setup(timeout=900)
    assert again.returncode == 0, f"a second run of setup.sh failed:\n{again.output[-3000:]}"


def test_setup_fails_the_build_when_the_image_cannot_grade(image):
    """A broken grader must stop the image build, not surprise the first student."""
    broken = image.root / "autograder" / "broken-source"
    shutil.copytree(image.root / "autograder" / "source", broken)
    try:
        imported = broken / "autograder" / "judging" / "compare.py"  # every hidden test's comparisons
        assert imported.is_file(), f"{imported} moved: break a module the grader imports"
        imported.write_text("raise ImportError('deliberately broken for this test')\n")
        outcome = image.run(["bash", "./setup.sh"], cwd="/autograder/broken-source",
                            env={"TORCH_INDEX": f"file://{gradescope_image.TORCH_WHEEL_INDEX}"}, timeout=900)
    finally:
        shutil.rmtree(broken, ignore_errors=True)
    assert outcome.returncode != 0, "setup.sh succeeded although the grader cannot grade the reference"
    assert "smoke test failed" in outcome.output, outcome.output[-2000:]


# --- grading ---------------------------------------------------------------------------------

def test_reference_scores_full_marks(graded):
    results, _ = graded["reference"]
    assert results is not None and results["score"] == FULL, failing(results) if results else "no results.json"


def test_grading_runs_at_the_uid_level_without_cap_sys_admin(graded):
    results, _ = graded["reference"]
    assert results["extra_data"]["isolation"] == "uid", (
        f"expected the uid level (no CAP_SYS_ADMIN, as in Gradescope's Docker container), got "
        f"{results['extra_data']['isolation']}")


def test_stubs_score_zero_without_grader_errors(graded):
    results, _ = graded["stubs"]
    assert results["score"] == 0 and not results["extra_data"]["grader_error"], results["output"]


def test_a_buggy_submission_loses_points(graded):
    results, _ = graded["mask_bug"]
    assert 0 < results["score"] < core_max() and not results["extra_data"]["grader_error"], results["output"]


@pytest.mark.parametrize("shape", ["zip_of_files", "zip_of_a_folder"])
def test_every_upload_shape_gets_the_same_score(graded, shape):
    assert graded[shape][0]["score"] == graded["reference"][0]["score"], failing(graded[shape][0])


@pytest.mark.parametrize("case", ["reference", "stubs", "mask_bug", "zip_of_files", "zip_of_a_folder"])
def test_results_follow_the_schema(graded, case):
    jsonschema.validate(graded[case][0], SCHEMA)


@pytest.mark.parametrize("case", ["reference", "stubs", "mask_bug"])
def test_a_run_stays_under_gradescopes_memory_and_leaves_nothing_running(graded, case):
    _, outcome = graded[case]
    assert outcome.oom_kills == 0 and outcome.peak_bytes < GRADESCOPE_MEMORY, (
        f"{case}: peak {outcome.peak_bytes >> 20} MiB, {outcome.oom_kills} OOM kills (limit {GRADESCOPE_MEMORY >> 20} MiB)")
    assert not outcome.survivors, f"{case}: still running after run_autograder returned: {outcome.survivors}"
    assert not outcome.late_change, f"{case}: results.json changed after run_autograder returned"


def test_the_sid_is_never_a_gradescope_user_id(image):
    metadata = dict(METADATA, users=[{"email": "b@example.edu", "id": 777, "name": "Bo"}])  # no sid
    results, _ = image.grade(sample("stubs"), metadata)
    assert results["extra_data"]["submitters"] == [{"name": "Bo", "email": "b@example.edu", "sid": ""}]


def test_a_grader_that_cannot_start_still_writes_a_valid_results_json(image):
    venv = image.root / "opt" / "attention-kit"
    aside = venv.with_name("attention-kit.aside")
    venv.rename(aside)
    try:
        results, outcome = image.grade(sample("reference"), METADATA)
    finally:
        aside.rename(venv)
    assert outcome.returncode == 0, outcome.output
    assert results is not None, "run_autograder left no results.json when the kit's Python was missing"
    jsonschema.validate(results, SCHEMA)
    assert results["extra_data"]["grader_error"] and "not a problem with your code" in results["output"]


def test_a_two_faced_zip64_upload_is_refused_within_gradescopes_memory(image, tmp_path):
    """Issue 23, 6a, where Gradescope runs it: a zip whose zip64 end records disagree (the locator's
    announces one entry, zipfile's 200,002) is judged by the record zipfile reads and refused before
    anything is extracted, in the 768 MiB container, as the student's upload problem."""
    from test_stage import two_faced_zip64

    entries = {**{f"d/{i}": "" for i in range(200_000)}, **sample("reference")}
    archive = two_faced_zip64(tmp_path / "submission.zip", entries, len(entries))
    results, outcome = image.grade({"submission.zip": archive.read_bytes()}, METADATA)
    assert results is not None, outcome.output[-2000:]
    assert not results["extra_data"]["grader_error"] and results["score"] == 0, results["output"]
    # The image's Python (3.11.2) rejects the two records outright; a newer zipfile reads the count and the
    # cap refuses it: either way nothing is extracted.
    assert (f"holds {len(entries)} entries, more than" in results["output"]
            or "submission.zip is not a valid zip file" in results["output"]), results["output"]
    assert outcome.peak_bytes < GRADESCOPE_MEMORY and not outcome.oom_kills, outcome.peak_bytes >> 20


@pytest.mark.parametrize("case", ["memory_ballast", "memory_ballast_control", "memory_warm_reuse"])
def test_the_memory_points_count_what_the_call_allocated_without_a_cgroup(graded, image, case):
    """Issue 23, finding 5, where Gradescope gives no cgroup: a naive tiled_attention loses the memory points
    with a ballast freed in the call, without it, and in blocks of the warm-up's shape, while the reference
    (graded in this image) keeps them, torch's first use of its kernels in the fresh child notwithstanding."""
    def memory_test(results):
        return next(t for t in results["tests"] if t["name"].startswith(MEMORY_TEST))

    assert memory_test(graded["reference"][0])["status"] == "passed", memory_test(graded["reference"][0])["output"]
    files = sample("reference")
    payload = (HOSTILE / case.removesuffix("_control") / "attention.py.payload").read_text()
    files["attention.py"] += BALLAST_BLOCK.sub("", payload) if case.endswith("_control") else payload
    results, _ = image.grade(files, METADATA)
    test = memory_test(results)
    assert test["status"] == "failed" and "peak memory grew by" in test["output"], test["output"][:500]


# --- the hostile suite at the uid level ------------------------------------------------------

@pytest.fixture(scope="module")
def hostile(image, tmp_path_factory):
    """Every case of tests/heavy/hostile graded in the image: case -> (results, Outcome, escapes, connections)."""
    assert image.setup_outcome.returncode == 0, "setup.sh failed"
    token = secrets.token_hex(4)
    markers = image.root / f"markers-hx-{token}"
    markers.mkdir(mode=0o1777)
    markers.chmod(0o1777)
    batch = tmp_path_factory.mktemp("hostile-batch") / "batch"
    config = image.root / "autograder" / "source" / "grading.yaml"
    shipped = config.read_text()
    config.write_text(shipped.replace("call_seconds: 10", f"call_seconds: {HOSTILE_CALL_SECONDS}"))
    listener = socket.create_server(("127.0.0.1", 0))
    graded = {}
    try:
        build_batch(batch, {"TOKEN": token, "MARKERS": f"/markers-hx-{token}", "KIT": "/autograder/source",
                            "OUT": "/autograder/reports/results", "BATCH": "/autograder/submission",
                            "PORT": listener.getsockname()[1],
                            "SHARED": f"/tmp/hx-{token}.sock"})  # no listener in the image: a connect finds none
        for folder in sorted(batch.iterdir()):
            if folder.name not in EXPECTED:
                continue
            files = {p.name: p.read_bytes() for p in folder.iterdir()}
            before = set(escapes(image, token))
            results, outcome = image.grade(files, METADATA)
            new = sorted(set(escapes(image, token)) - before)
            graded[folder.name] = (results, outcome, new, accepted(listener))
    finally:
        config.write_text(shipped)
        listener.close()
    return graded


def escapes(image, token):
    """Files a payload made outside its sandbox: their names hold the token (tests/heavy/hostile/README.md)."""
    pattern = f"*hx-{token}*"
    places = [image.root, image.root / "tmp", image.root / "root", image.root / "autograder"]
    found = [p for place in places for p in place.glob(pattern) if p.name != f"markers-hx-{token}"]
    found += list((image.root / f"markers-hx-{token}").iterdir())  # a world-writable folder outside the sandbox
    found += list((image.root / "autograder").rglob(pattern))
    return sorted({str(p.relative_to(image.root)) for p in found})


@pytest.mark.parametrize("case", EXPECTED)
def test_hostile_case_is_contained_at_the_uid_level(hostile, case):
    results, outcome, escaped, reached = hostile[case]
    assert results is not None, f"{case}: no results.json\n{outcome.output[-2000:]}"
    jsonschema.validate(results, SCHEMA)
    assert results["extra_data"]["isolation"] == "uid", results["extra_data"]
    problems = attack_problems(results, case)
    if outcome.survivors:
        problems.append(f"{case}: still running after run_autograder returned: {outcome.survivors}")
    if outcome.late_change:
        problems.append(f"{case}: results.json changed after run_autograder returned")
    if outcome.peak_bytes >= GRADESCOPE_MEMORY and case not in MEMORY_ATTACKS:
        problems.append(f"{case}: peak {outcome.peak_bytes >> 20} MiB (limit {GRADESCOPE_MEMORY >> 20} MiB)")
    # Past the container's limit the kernel must kill the student's processes (oom_score_adj 1000), never
    # the grader: a memory attack may cost OOM kills, but the grader's own report must be whole.
    if outcome.oom_kills and case not in MEMORY_ATTACKS:
        problems.append(f"{case}: {outcome.oom_kills} OOM kills in a case that is not a memory attack")
    if results.get("extra_data", {}).get("grader_error"):
        problems.append(f"{case}: the grader failed: {results['output'][:500]}")
    if escaped:
        problems.append(f"{case}: files written outside the sandbox: {escaped}")
    if reached:
        problems.append(f"{case}: reached a listener on 127.0.0.1 ({len(reached)} connections)")
    if "FAKE-REPORT" in json.dumps(results):
        problems.append(f"{case}: the submission's fake results.json was used")
    assert not problems, "\n".join(problems)


def test_the_child_finds_nothing_the_grader_read_after_forking_its_zygote(image):
    """At the uid level: the zygote is forked from the grader before it reads the metadata, the hidden
    tests or the reference (test_gradescope.py has the same at the namespaces level)."""
    assert image.setup_outcome.returncode == 0, "setup.sh failed"
    secret = "AGSECRET-" + secrets.token_hex(8)
    root = image.root / "autograder"
    planted = [root / "source" / "tests_hidden" / "cases.py", root / "source" / "solution" / "attention.py"]
    shipped = [path.read_text() for path in planted]
    (root / "submission_metadata.json").write_text(json.dumps(METADATA))
    try:
        plant_secret(root, secret)
        metadata = json.loads((root / "submission_metadata.json").read_text())
        reference = sample("reference")
        results, outcome = image.grade({"attention.py": reference["attention.py"] + MEMORY_HUNT.read_text(),
                                        "mha.py": reference["mha.py"]}, metadata)
    finally:
        for path, text in zip(planted, shipped):
            path.write_text(text)
    assert results is not None and results["extra_data"]["isolation"] == "uid", outcome.output[-2000:]
    feedback = (root / "results" / "feedback.md").read_text()
    found, scanned = memory_hunt(feedback)
    assert scanned > 1 << 20, f"the hunt read only {scanned} bytes of its memory: it proves nothing"
    assert secret not in found, f"the submission found what the grader read: {found}"
    assert f"Submission of {secret}" in feedback, "the grader did read the planted name"


# --- speed at Gradescope's default half a CPU ----------------------------------------------

GRADESCOPE_CPU = 0.5  # Gradescope gives an autograder run half a CPU by default
KIT_PYTHON = "/opt/attention-kit/bin/python"


def test_one_submission_at_half_a_cpu_is_timed_against_a_torch_import(image, capsys):
    """The figure, not a timed assertion: the reference graded by run_autograder and the kit's Python importing
    torch, each at half a CPU in Gradescope's 768 MiB without CAP_SYS_ADMIN, interleaved, best of three."""
    assert image.setup_outcome.returncode == 0, "setup.sh failed"
    torch_seconds, graded_seconds = [], []
    for _ in range(3):
        imported = image.run([KIT_PYTHON, "-E", "-s", "-c", "import torch"], drop_sys_admin=True,
                             memory=GRADESCOPE_MEMORY, cpu=GRADESCOPE_CPU)
        assert imported.returncode == 0, imported.output[-2000:]
        torch_seconds.append(imported.seconds)
        results, outcome = image.grade(sample("reference"), METADATA, cpu=GRADESCOPE_CPU)
        assert results is not None and results["score"] == FULL, f"{results}\n{outcome.output[-2000:]}"
        assert outcome.peak_bytes < GRADESCOPE_MEMORY and not outcome.oom_kills, outcome.peak_bytes >> 20
        graded_seconds.append(outcome.seconds)
    unit, run = min(torch_seconds), min(graded_seconds)
    with capsys.disabled():
        print(f"\nhalf a CPU, clean image: run_autograder on the reference {run:.2f} s, the kit's Python importing "
              f"torch {unit:.2f} s: {run / unit:.2f}x a torch import (best of 3, interleaved; goal <= 1.3x)")
