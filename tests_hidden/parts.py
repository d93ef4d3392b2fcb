"""The lab's parts, in the order the reports number and list them: yours to edit with the suite.

Each module of tests_hidden/ names its part (``pytestmark = pytest.mark.part("masks")``); this table
gives each part its place and its title in every report. A part in EXTRA_PARTS is extra credit: its
points count above the maximum. To rename, add or remove a part, edit this table and the modules'
markers together (docs/instructor.md, "Changing the lab"); `make validate` names a part the two
disagree on. The engine (autograder/parts.py) reads this file; it imports nothing.
"""
PARTS = ("masks", "attention", "gradients", "mha_init", "heads", "mha_forward", "rules", "extra")
EXTRA_PARTS = ("extra",)  # extra credit: points above the maximum
PART_TITLES = {
    "masks": "Masks", "attention": "Attention values", "gradients": "Gradients, dtypes, stability",
    "mha_init": "MHA construction", "heads": "Head split/merge", "mha_forward": "MHA forward",
    "rules": "From-scratch rule", "extra": "Extra credit",
}
# The otter check of the playground (a part of assignment/tests/cases.py) that runs each part's public
# cases: in an nbgrader course the part's graded cell takes that check's place. A part not listed is
# graded in a cell at the end of the notebook. Rename or remove a part here too.
PUBLIC_CHECKS = {
    "masks": "part1_masks", "attention": "part1_attention", "mha_init": "part2_init",
    "heads": "part2_heads", "mha_forward": "part2_forward",
}
