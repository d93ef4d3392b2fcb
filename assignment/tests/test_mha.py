"""MultiHeadAttention: construction, split_heads/merge_heads, and forward against nn.MultiheadAttention.

The cases are in cases.py, shared with the playground's otter checks.
"""
PARTS = ("part2_init", "part2_heads", "part2_forward")


def test_mha(case, student):
    case.run(student)
