"""How issue 47's figures read a failure (hint_run.py): the error a failure shows and where in the student's code,
from `make test`'s words and the grade's, so the same crash counts as the same on both sides."""
import hint_run

MAKE_TEST = """MultiHeadAttention(12, 3)(...): ValueError: not enough values to unpack (expected 4, got 3)
    raised in MultiHeadAttention.merge_heads (mha.py, line 74)
    > B, h, T, d_k = x.shape"""
GRADE = """MultiHeadAttention(16, 5): raised TypeError: exceptions must derive from BaseException
  at mha.py line 47, in __init__: raise f'd_model={d_model} is not divisible by n_heads={n_heads}'"""
BACKWARD = """tiled_attention(q (2, 6, 4) float64, causal=True): the backward pass failed: RuntimeError: one of the variables
    in-place edit: attention.py, line 130: rescale = torch.exp(row_max.sub_(safe_max))"""


def test_make_tests_error_is_read_with_its_line():
    assert hint_run.raised(MAKE_TEST) == ["ValueError at mha.py:74"]


def test_the_grades_raised_error_is_read_with_its_line():
    assert hint_run.raised(GRADE) == ["TypeError at mha.py:47"]


def test_a_backward_broken_in_place_is_read_with_the_edits_line():
    assert hint_run.raised(BACKWARD) == ["RuntimeError at attention.py:130"]


def test_an_error_without_a_line_of_the_students_is_not_read():
    assert hint_run.raised("case: RuntimeError: shapes differ\n  hint: check the shapes") == []
