"""A test of MHA's forward or step that fails on the student's own parts climbs the lab's lower parts
(``with_parts_below``); when the parent proves the method every rung runs can only raise (never written, or the
stub: ``Student.method_only_raises``), no rung is tried. The grade is the one the whole climb gives, with fewer
children: the "below" child is never started for it."""
import pytest

from test_runner import ROOT, SAMPLES, run_python

GRADE_BOTH_WAYS = """
    import json, os, shutil, sys, tempfile
    from autograder.grading import runner, student
    solution, assignment = sys.argv[2], sys.argv[3]
    work = tempfile.mkdtemp(prefix="kit-ladder-")
    os.chmod(work, 0o755)
    folders = {kind: os.path.join(sys.argv[1], kind) for kind in ("stubs", "mask_bug", "head_reshape_bug")}
    no_step = os.path.join(work, "no_step")  # the solution with its extra-credit step cut out
    os.makedirs(no_step)
    shutil.copy(os.path.join(solution, "attention.py"), no_step)
    text = open(os.path.join(solution, "mha.py")).read()
    start = text.index("    def step(")
    end = text.find("\\n    def ", start + 1)
    open(os.path.join(no_step, "mha.py"), "w").write(text[:start] + (text[end + 1:] if end != -1 else ""))
    stub_mha = os.path.join(work, "stub_mha")  # a written attention.py under the untouched mha.py
    os.makedirs(stub_mha)
    shutil.copy(os.path.join(solution, "attention.py"), stub_mha)
    shutil.copy(os.path.join(assignment, "mha.py"), stub_mha)
    folders.update(no_step=no_step, stub_mha=stub_mha)

    started = []
    child = student.Student._child
    def counted(self, mode):
        if self.children.get(mode) is None or self.children[mode]["child"].dead:
            started.append(mode)
        return child(self, mode)
    student.Student._child = counted
    proof = student.Student.method_only_raises
    engine = runner.Engine(graders=1)
    got = {}
    for kind, folder in folders.items():
        runs = {}
        for way, rule in (("proved", proof), ("climbed", lambda self, target, method: None)):
            student.Student.method_only_raises = rule
            started.clear()
            record = runner.grade_one(engine, folder)
            runs[way] = {"tests": record["tests"], "children": list(started)}
        got[kind] = runs
    engine.close()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(got))
"""


@pytest.fixture(scope="module")
def graded():
    return run_python(GRADE_BOTH_WAYS, SAMPLES, ROOT / "solution", ROOT / "assignment")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stubs", "mask_bug", "head_reshape_bug", "no_step", "stub_mha"])
def test_a_proof_gives_the_grade_the_whole_climb_gives(graded, kind):
    assert graded[kind]["proved"]["tests"] == graded[kind]["climbed"]["tests"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stubs", "mask_bug", "no_step", "stub_mha"])
def test_a_method_that_can_only_raise_starts_no_below_child(graded, kind):
    if "below" not in graded[kind]["climbed"]["children"]:
        pytest.skip("the hidden suite climbs to no below child for this submission")
    assert "below" not in graded[kind]["proved"]["children"], graded[kind]


@pytest.mark.slow
def test_a_defect_below_a_written_forward_still_climbs_the_ladder(graded):
    """head_reshape_bug's forward is written: its heads bug is found on the rung that lends the lab's split and merge."""
    if "below" not in graded["head_reshape_bug"]["climbed"]["children"]:
        pytest.skip("the hidden suite lends no heads rung")
    assert "below" in graded["head_reshape_bug"]["proved"]["children"]
