"""causal_mask and padding_mask: shape, dtype and which positions are allowed.

The cases are in cases.py, shared with the playground's otter checks.
"""
PARTS = ("part1_masks",)


def test_masks(case, student):
    case.run(student)
