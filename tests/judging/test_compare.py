"""Feedback from the comparisons: precision loss named as such, and the heatmap of the worst matrix."""
import math

import pytest
import torch

from autograder.reports import pictures
from autograder.judging.catalogue import FLOAT32_IN_FLOAT64
from autograder.judging.compare import TOLERANCES, expect_close, matrix_figure
from autograder.judging.errors import StudentError
from conftest import ROOT, public_checks


def attention(q, k, v, scale):
    weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
    return weights @ v, weights


def inputs(dtype, d_k=8):
    generator = torch.Generator().manual_seed(5)
    return [torch.randn(2, 5, d_k, generator=generator, dtype=torch.float64).to(dtype) for _ in range(3)]


def failure(got, expected, **kwargs):
    with pytest.raises(StudentError) as caught:
        expect_close(got, expected, "case", "weights", hint="fill blocked scores with -inf", **kwargs)
    return caught.value


def test_a_float32_scale_in_a_float64_run_is_named_precision_loss():
    q, k, v = inputs(torch.float64)
    _, expected = attention(q, k, v, math.sqrt(8))
    _, got = attention(q, k, v, torch.sqrt(torch.Tensor([8])))  # a float32 tensor: float32-accurate scale
    assert got.dtype == torch.float64, "the mistake keeps the float64 dtype, only the precision is lost"
    error = failure(got, expected, mask=torch.ones(5, 5, dtype=torch.bool).tril())
    assert error.mistake is FLOAT32_IN_FLOAT64, f"not named as precision loss:\n{error}"
    assert "float32 constant or intermediate in a float64 computation" in str(error)
    assert "-inf" not in str(error) and "allowed positions" not in str(error), (
        f"the feedback still points at masking:\n{error}")


def test_a_real_bug_in_float64_is_not_called_precision_loss():
    q, k, v = inputs(torch.float64)
    _, expected = attention(q, k, v, math.sqrt(8))
    _, got = attention(q, k, v, 8.0)  # scaled by d_k: a real bug
    error = failure(got, expected)
    assert error.mistake is None and "float32 precision" not in str(error), str(error)


def test_float32_runs_are_never_diagnosed_as_precision_loss():
    q, k, v = inputs(torch.float32)
    _, expected = attention(q, k, v, math.sqrt(8))
    error = failure(expected * (1 + 1e-3), expected)
    assert error.mistake is None, str(error)


def test_the_heatmap_shows_the_batch_and_head_with_the_largest_error_and_names_it():
    expected = torch.softmax(torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(1)), dim=-1)
    got = expected.clone()
    got[1, 2, 0, 3] += 0.5  # the worst one
    got[0, 1, 2, 2] += 0.1
    figure = matrix_figure("weights", expected, got)
    assert figure["where"] == "batch 1, head 2"
    assert figure["got"] == got[1, 2].double().tolist() and figure["expected"] == expected[1, 2].double().tolist()
    assert "weights, 4x4 matrix of batch 1, head 2 (the largest error)" in pictures.text_heatmap(figure)


def test_a_nan_counts_as_the_largest_error():
    expected = torch.zeros(3, 2, 2)
    got = expected.clone()
    got[0, 0, 0] = 5.0
    got[2, 1, 1] = float("nan")
    assert matrix_figure("output", expected, got)["where"] == "batch 2"


def test_a_single_matrix_needs_no_name():
    expected = torch.eye(3)
    figure = matrix_figure("weights", expected, expected * 2)
    assert "where" not in figure
    assert pictures.text_heatmap(figure).startswith("weights, 3x3 matrix (rows")


def test_the_worst_matrix_is_found_among_any_number_of_leading_dims():
    expected = torch.zeros(2, 3, 4, 2, 2)
    got = expected.clone()
    got[1, 0, 3, 1, 0] = 1.0
    figure = matrix_figure("output", expected, got)
    assert figure["where"] == "index (1, 0, 3)"
    assert figure["got"] == got[1, 0, 3].double().tolist()


def test_finding_the_worst_matrix_never_imports_sympy():
    """torch.unravel_index imports sympy on first use: 0.45 s in every forked grader that draws a
    failing submission's heatmap, which is most of a batch."""
    import subprocess
    import sys

    probe = ("import sys, torch; from autograder.judging.compare import matrix_figure; "
             "e = torch.zeros(2, 3, 4, 4); g = e.clone(); g[1, 2, 0, 0] = 1.0; "
             "assert matrix_figure('weights', e, g)['where'] == 'batch 1, head 2'; "
             "print('sympy' in sys.modules)")
    printed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout.strip()
    assert printed == "False", "drawing the worst matrix imported sympy into the grader"


def test_the_public_checks_use_the_graders_tolerances():
    """One table: a value the public tests accept is one the grader accepts (assignment/tests/checks.py
    holds a copy generated from compare.TOLERANCES, since students do not have the grader)."""
    public = public_checks()
    graders = {dtype: dict(atol=atol, rtol=rtol) for dtype, (atol, rtol) in TOLERANCES.items()}
    assert public.TOLERANCE == graders, (
        f"the public tolerances {public.TOLERANCE} differ from the grader's {graders}: run `make stubs`")
