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

# When a call changed the caller's query, key, value or mask: what the failure says, and its hint.
INPUTS_MODIFIED = "the call modified its input {} in place"
INPUTS_MODIFIED_HINT = ("use out-of-place ops (masked_fill, not masked_fill_; mask == 0 or ~mask, not mask.eq_(0); "
                        "x / s, not x /= s)")
FORWARD_INPUTS_MODIFIED = "forward modified its input {} in place"
FORWARD_INPUTS_MODIFIED_HINT = ("use out-of-place ops in forward and in the attention it calls (masked_fill, not "
                                "masked_fill_; mask == 0 or ~mask, not mask.eq_(0))")

# When tiled_attention built the whole (T_q, T_k) score matrix after all.
TILED_MEMORY_HINT = ("compute scores one (T_q, block_size) block at a time; calling scaled_dot_product_attention "
                     "builds the whole matrix")
TILED_MATRIX_BUILT = "one (T, T) score matrix is {:.0f} MiB, so it was (at least partly) built"
TILED_SHAPE_HINT = "return acc / l, one row per query and the value's width"
TILED_ROW_0 = ("row 0 of the output is not value[0], though query 0 may attend to key 0 alone (causal): the memory "
               "points need an output computed by attention")
TILED_ROW_0_HINT = "return acc / l, where acc sums the softmax weights times the value rows"

# When MultiHeadAttention.step re-projects the past, or its cache holds something else than the projected past.
STEP_PROJECT_HINT = "project only the new token (B, 1, d_model); the cache already holds the past keys and values"
STEP_CACHE_HINT = "return (k, v) with every past token's projected key and value, (B, n_heads, t, d_k) each"


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
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.splitlines()
    found = sorted({node.lineno for node in ast.walk(tree)
                    if isinstance(node, ast.AugAssign)
                    or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr.endswith("_") and not node.func.attr.endswith("__")
                        and node.func.attr != "requires_grad_")})
    return [f"{file}, line {n}: {lines[n - 1].strip()[:120]}" for n in found[:3]]


def valid_size_refused(d_model, n_heads, error_name):
    """Why ``MultiHeadAttention(d_model, n_heads)`` raising ``error_name`` is the student's condition, in one
    line: when the error is DimensionMismatchError and the sizes divide evenly; else None. Without it
    every test that builds the module repeats the same error, with no hint."""
    if (error_name != "DimensionMismatchError" or not all(type(n) is int and n > 0 for n in (d_model, n_heads))
            or d_model % n_heads):
        return None
    return (f"MultiHeadAttention({d_model}, {n_heads}) raised DimensionMismatchError for a valid size "
            f"({d_model} = {n_heads} heads x {d_model // n_heads}): check your condition (d_model % n_heads != 0)")


# A mask made on the CPU whatever ``device`` says passes every test this machine can run (it has no other
# device, and torch's "meta" device costs seconds of imports on first use), so it is found from the text.
DEVICE_HINT = "pass device=device to the function that creates the tensor (torch.ones(..., device=device))"

# MultiHeadAttention(16, 5): what to raise, when nothing or another exception was raised (the same words on both sides).
MISMATCH_NOT_RAISED_HINT = "check d_model % n_heads != 0 in __init__ and raise DimensionMismatchError"
MISMATCH_HINT = "raise the DimensionMismatchError given in mha.py (a ValueError subclass)"
PLAIN_VALUE_ERROR_HINT = MISMATCH_HINT + ", not a plain ValueError"

# A test that a size is refused earns its points only when a valid size builds; said under the valid size's error.
VALID_SIZE_REFUSED_TOO = ("A valid size is refused too, so refusing this one earns nothing: raise only for sizes that "
                          "are wrong (a constructor that always raises refuses nothing in particular)")


def device_ignored(source, function="causal_mask"):
    """Why ``function`` (defined at the top of ``source``, with a ``device`` parameter) makes its tensor on
    the CPU whatever ``device`` says, in a sentence; None when the text shows nothing of the kind."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            args = node.args
            if "device" not in [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]:
                return None
            if not any(isinstance(n, ast.Name) and n.id == "device" and isinstance(n.ctx, ast.Load)
                       for n in ast.walk(node)):
                return f"{function} never uses its device argument, so the mask is made on the CPU whatever the caller asks for"
            for n in ast.walk(node):  # .cpu(), or .type(torch.BoolTensor): a legacy type names a CPU tensor
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                        n.func.attr == "cpu" or (n.func.attr == "type" and n.args and isinstance(n.args[0], ast.Attribute)
                                                 and n.args[0].attr.endswith("Tensor"))):
                    return (f"{function} moves the mask to the CPU with .{n.func.attr}(...) (line {n.lineno}), "
                            f"whatever device the caller asks for")
    return None
