"""What a torch error a student meets usually means: one table for the public checks and the reports.

The grader appends the hint to an error in a student's report (``student.describe_error``), and
``make stubs`` copies this module's code into a marked region of the public checks
(assignment/tests/checks.py), which students run without the grader.
"""
import ast

# torch errors students meet, by a piece of their message, and what usually causes them.
INPLACE_ERROR = "modified by an inplace operation"
ERROR_HINTS = [
    ("view size is not compatible with input tensor's size and stride",
     "view needs contiguous memory, and a transposed tensor is not: call .contiguous() before .view(...), "
     "or use .reshape(...)"),
    (INPLACE_ERROR,
     "an in-place edit broke autograd: a method ending in _ (masked_fill_, add_, ...) or +=, /= changed a "
     "tensor the backward pass still needs (torch names the op that made it); use the out-of-place form: "
     "weights = weights.masked_fill(...), x = x / s"),
]


def error_hint(message):
    """The hint for an exception's message, or None; torch's messages can span lines."""
    text = " ".join(message.split())
    return next((hint for pattern, hint in ERROR_HINTS if pattern in text), None)


def inplace_edits(source, file):
    """'file, line N: code' for each in-place edit in ``source`` (a call of a method ending in one _,
    or an augmented assignment such as x /= s): where a backward error about an in-place edit, which
    names no line of the student's code, comes from (the first three). [] for a source that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    found = sorted({node.lineno for node in ast.walk(tree)
                    if isinstance(node, ast.AugAssign)
                    or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr.endswith("_") and not node.func.attr.endswith("__")
                        and node.func.attr != "requires_grad_")})
    return [f"{file}, line {n}: {lines[n - 1].strip()[:120]}" for n in found[:3]]
