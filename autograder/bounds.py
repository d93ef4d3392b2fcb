"""How much of a child's text the trusted parent keeps: every bound in one table.

A child runs student code, so whatever it sends (an error message, a traceback line, a printed
value, a type or attribute name, what it printed) may be as long as the student likes. The child's
own cuts (``protocol.tag``, ``probes``) are courtesy only: student code can undo them. The parent
cuts every string of a reply when it checks it (``replies.check``), caps what each child and each
submission printed (``sandbox.Child``, ``student.Student``), and bounds each test's message, the
events and the sum of all messages of one submission before any report is written
(``bound_record``). So no report grows past a fixed size whatever the child sends.
"""

CHILD_TEXT = 2000          # characters of any one string in a reply (an error message, a line of code, a value)
CHILD_NAME = 120           # characters of a name in a reply (an exception type, a function, a file, a dict key)
CHILD_OUTPUT = 64 << 10    # bytes of printed output the parent keeps from one child
SUBMISSION_OUTPUT = 256 << 10  # characters of printed output kept for one submission, all its children together
EVENTS = 20                # distinct events (crashes, timeouts) kept for one submission
EVENT_TEXT = 400           # characters of one event (the grader's own sentence)
TEST_MESSAGE = 6000        # characters of one test's message
MESSAGES_TOTAL = 120_000   # characters of all test messages of one submission together
CUT_MARK = " [...]"        # ends a text the parent cut


def cut(text, limit):
    """``text`` (a str) at most ``limit`` characters long, marked when it was cut."""
    return text if len(text) <= limit else text[:max(limit - len(CUT_MARK), 0)] + CUT_MARK


def bound_record(record):
    """A graded record whose texts are within the bounds above: each test's message, the sum of them
    (a message past ``MESSAGES_TOTAL`` keeps its first line only, cut to ``EVENT_TEXT``), the events and
    the printed output. Changes ``record`` in place and returns it."""
    spent = 0
    for test in record.get("tests", []):
        message = test.get("message")
        if not isinstance(message, str):
            continue
        message = cut(message, TEST_MESSAGE)
        if spent + len(message) > MESSAGES_TOTAL:
            message = cut(message.split("\n", 1)[0], EVENT_TEXT)
        spent += len(message)
        test["message"] = message
    events = [cut(str(event), EVENT_TEXT) for event in dict.fromkeys(record.get("events") or [])]
    if len(events) > EVENTS:
        events = events[:EVENTS - 1] + [f"{len(events) - EVENTS + 1} more events of this kind not listed"]
    record["events"] = events
    output = record.get("output")
    if isinstance(output, str) and len(output) > SUBMISSION_OUTPUT:
        record["output_dropped"] = (record.get("output_dropped") or 0) + len(output[SUBMISSION_OUTPUT:].encode())
        record["output"] = output[:SUBMISSION_OUTPUT]
    return record
