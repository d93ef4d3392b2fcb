"""The lab's parts, in the order the reports number and list them: yours to edit with the suite.

Each module of tests_hidden/ names its part (``pytestmark = pytest.mark.part("masks")``); this table
gives each part its place and its title in every report. A part in EXTRA_PARTS is extra credit: its
points count above the maximum. To rename, add or remove a part, edit this table and the modules'
markers together (docs/instructor.md, "Changing the lab"); `make validate` names a part the two
disagree on. The engine (autograder/parts.py) reads this file; it imports nothing. Every fact of the lab
that the engine uses is here or in the lab's other files (tests/kit/test_import_graph.py checks that the
engine's code names no part and not the lab).
"""
LAB_NAME = "LAB-03"  # the lab's name: the gradebook's assignment column, the grader's messages
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
# The notebook's words for a part graded without public checks (two lines, shown in its nbgrader cell);
# a part not listed gets a general sentence.
NOTEBOOK_TEXTS = {
    "gradients": ("Graded by hidden tests: float64 stays float64, large scores stay finite, ",
                  "gradients reach query, key and value, and the inputs are left as they were."),
    "extra": ("Optional: tiled_attention and MultiHeadAttention.step with a KV cache (section 8); ",
              "their points count above the maximum."),
}
# The parts graded on the from-scratch rule: their nbgrader cell runs submit.py's check.
RULE_PARTS = ("rules",)
# The reference's methods a higher part's test may lend a student's module (``lab.lend``, mode "below"), so a
# bug in them is charged once, by their own part: never forward or step, which are what those tests grade.
LENT_METHODS = {"mha.MultiHeadAttention": ("split_heads", "merge_heads")}

# Where each kind of mistake of the grader's catalogue (autograder/judging/catalogue.py) lives: the only parts
# where it may cost points (one defect, one charge). MISTAKE_PARTS names a single mistake that lives elsewhere.
MISTAKE_KIND_PARTS = {
    "causal_mask": ("masks",), "padding_mask": ("masks",), "sdpa": ("attention",), "layout": ("attention",),
    "fill": ("attention",), "precision": ("gradients",), "split_heads": ("heads",), "merge_heads": ("heads",),
    "mha": ("mha_forward",), "tiled": ("extra",), "decode": ("extra",),
}
# A reshape without transpose in split_heads or merge_heads costs the heads part alone: MHA's forward and step run
# again on the lab's split_heads and merge_heads (tests_hidden/attention_checks.py, with_parts_below).
MISTAKE_PARTS = {"unstable_softmax": ("gradients",), "split_without_transpose": ("heads",),
                 "merge_without_transpose": ("heads",)}
