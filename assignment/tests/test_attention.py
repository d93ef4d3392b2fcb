"""scaled_dot_product_attention and ScaledDotProductAttention, checked against PyTorch's own.

The cases are in cases.py, shared with the playground's otter checks.
"""
PARTS = ("part1_attention",)


def test_attention(case, student):
    case.run(student)
