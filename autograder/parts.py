"""The lab's parts, in the order the reports number and list them.

Imports nothing, so the report modules and the notebook builders can use the table without
loading pytest or torch.
"""
PARTS = ("masks", "attention", "gradients", "mha_init", "heads", "mha_forward", "rules", "extra")
EXTRA_PARTS = ("extra",)  # extra credit: points above the 100
PART_TITLES = {
    "masks": "Masks", "attention": "Attention values", "gradients": "Gradients, dtypes, stability",
    "mha_init": "MHA construction", "heads": "Head split/merge", "mha_forward": "MHA forward",
    "rules": "From-scratch rule", "extra": "Extra credit", "other": "Other",
}


def part_index(part):
    """The part's place in the lab, from 0; a part not in the table comes after all of them."""
    return PARTS.index(part) if part in PARTS else len(PARTS)


def part_number(part):
    """The part's number in a report, from 1 (test 3.2 is the second test of part 3)."""
    return part_index(part) + 1
