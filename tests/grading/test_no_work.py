"""Points need the work (issue 46): a function whose body does none of its part's work earns none of that part's
points, in the grade and in `make test`. Each case keeps the reference and replaces one function's body with a
trivial one of the right shape and type: a constant mask, weights that ignore the scores, a copy of the value."""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.grading.suite_points import part_points
from conftest import ROOT, run_grader

UNIFORM = "w = torch.softmax(torch.zeros(*query.shape[:-1], key.size(-2), dtype=query.dtype), dim=-1)\n"
# name: (file, function, trivial body, the part it answers to, a word every test of that function's names)
NO_WORK = {
    "causal_all_true": ("attention.py", "causal_mask",
                        "return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)", "masks", "Causal"),
    "causal_all_false": ("attention.py", "causal_mask",
                         "return torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)", "masks", "Causal"),
    "padding_all_true": ("attention.py", "padding_mask",
                         "return torch.ones(tokens.size(0), 1, 1, tokens.size(-1), dtype=torch.bool)", "masks",
                         "Padding"),
    "attention_uniform": ("attention.py", "scaled_dot_product_attention", UNIFORM + "return w @ value, w",
                          "gradients", ""),
    "attention_uniform_masked": ("attention.py", "scaled_dot_product_attention",
                                 "s = torch.zeros(*query.shape[:-1], key.size(-2), dtype=query.dtype)\n"
                                 "if mask is not None:\n    s = s.masked_fill(~mask.bool(), float('-inf'))\n"
                                 "w = torch.softmax(s, dim=-1)\nreturn w @ value, w", "gradients", ""),
    "tiled_value_copy": ("attention.py", "tiled_attention", "return value[..., :query.size(-2), :].clone()", "extra",
                         "tiled"),
    "tiled_running_mean": ("attention.py", "tiled_attention",
                           "n = torch.arange(1, value.size(-2) + 1, dtype=value.dtype)[:, None]\n"
                           "if causal:\n    return value.cumsum(-2)[..., :query.size(-2), :] / n[:query.size(-2)]\n"
                           "return value.mean(-2, keepdim=True).expand(*query.shape[:-1], value.size(-1)).clone()",
                           "extra", "tiled"),
}


def with_trivial_body(text, function, body):
    """``text`` with the solution region of ``function`` replaced by ``body`` (indented as that region)."""
    start = text.index(f"def {function}(")
    begin = text.index("### BEGIN SOLUTION", start)
    end = text.index("### END SOLUTION", begin)
    indent = text[text.rindex("\n", 0, begin) + 1:begin]
    lines = "\n".join(indent + line for line in body.split("\n"))
    return text[:begin] + "### BEGIN SOLUTION\n" + lines + "\n" + indent + text[end:]


def build(name, dest):
    file, function, body, _, _ = NO_WORK[name]
    dest.mkdir(parents=True)
    for each in ("attention.py", "mha.py"):
        text = (ROOT / "solution" / each).read_text()
        (dest / each).write_text(with_trivial_body(text, function, body) if each == file else text)
    return dest


@pytest.fixture(scope="module")
def graded():
    """Every case graded once, in one batch, in a folder a sandbox uid can enter."""
    root = Path(tempfile.mkdtemp(prefix="kit-test-"))
    root.chmod(0o755)
    for name in NO_WORK:
        build(name, root / "batch" / name)
    run = run_grader("grade", root / "batch", "--out", root / "out", "--jobs", 2)
    assert run.returncode == 0, run.stderr[-3000:]
    yield root / "out"
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", NO_WORK)
def test_a_body_that_does_no_work_earns_none_of_its_parts_points(graded, name):
    _, function, _, part, word = NO_WORK[name]
    tests = json.loads((graded / name / "results.json").read_text())["tests"]
    own = [t for t in tests if t["tags"] == [part] and word in t["name"]]
    if not own:  # a documented change (the extra credit removed, say): nothing of the lab to earn here
        pytest.skip(f"the hidden suite has no test of {function} in a part {part!r}")
    kept = [f"{t['name']} (+{t['score']:g})" for t in own if t["score"] > 0]
    assert not kept, f"{function} doing no work ({name}) kept points: {kept}"


@pytest.fixture(scope="module")
def suite_parts():
    return part_points()


@pytest.mark.parametrize("name", NO_WORK)
def test_make_test_gives_it_none_of_those_points_either(tmp_path, suite_parts, name):
    _, function, _, part, _ = NO_WORK[name]
    if part not in suite_parts:  # as in the grade: the lab as changed grades no such part
        pytest.skip(f"the hidden suite has no part {part!r}")
    folder = tmp_path / "assignment"
    shutil.copytree(ROOT / "assignment", folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    build(name, tmp_path / "submission")
    for each in ("attention.py", "mha.py"):
        shutil.copy(tmp_path / "submission" / each, folder / each)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "-rf"],
                         cwd=folder, capture_output=True, text=True, timeout=600)
    failed = run.stdout
    # Each of the function's own public cases that its part's grade twins gate fails, with the gate's words.
    words = {"masks": "it follows nothing", "gradients": "its weights ignore the scores",
             "extra": "the memory points need an output computed by attention"}[part]
    assert words in failed, f"make test did not refuse {name}'s points with the grade's words:\n{failed[-3000:]}"
