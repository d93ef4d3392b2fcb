"""Optional extra credit: tiled_attention and MultiHeadAttention.step, on a line of their own.

They do not count in the public points; a function you have not written is skipped, not failed.
The cases are in cases.py.
"""
PARTS = ("extra_tiled", "extra_step")


def test_extra(case, student, note):
    note(case.run(student))
