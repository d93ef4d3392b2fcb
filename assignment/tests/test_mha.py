"""MultiHeadAttention: construction, split_heads/merge_heads, and forward against nn.MultiheadAttention.

A forward case that fails with your attention is run again with attention built from torch:
if it passes then, it earns its points and says so, because the bug is in attention.py.
The cases are in cases.py, shared with the playground's otter checks.
"""
PARTS = ("part2_init", "part2_heads", "part2_forward")


def test_mha(case, student, note):
    note(case.run(student))
