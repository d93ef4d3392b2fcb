"""What a torch error a student meets usually means: one table for the public checks and the reports.

The grader appends the hint to an error in a student's report (``student.describe_error``), and
``make stubs`` copies this module's code into a marked region of the public checks
(assignment/tests/checks.py), which students run without the grader.
"""
# torch errors students meet, by a piece of their message, and what usually causes them.
ERROR_HINTS = [
    ("view size is not compatible with input tensor's size and stride",
     "view needs contiguous memory, and a transposed tensor is not: call .contiguous() before .view(...), "
     "or use .reshape(...)"),
]


def error_hint(message):
    """The hint for an exception's message, or None; torch's messages can span lines."""
    text = " ".join(message.split())
    return next((hint for pattern, hint in ERROR_HINTS if pattern in text), None)
