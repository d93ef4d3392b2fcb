"""The from-scratch rule, read from the source text by the trusted parent (the run-time op
record, collected in the child, is only a second opinion: the child can tamper with it).

The rule is the package ``autograder/rule/``: its checker ``find_forbidden_calls`` is the one
students run before they submit too, since their ``assignment/submit.py`` is generated from that
package, so the two can never disagree. Its findings are of
two kinds: "builtin" (one of torch's attention built-ins, named in the code: the rule's points
are lost, and the tests whose run used it fail) and "hidden" (code that can hide what it calls,
such as exec or computed names on torch: every test that runs the file fails too).

Every reading of a submitted file's text goes through the rule's ``read_source`` too (here,
in staging and in ``student.source_classes``), so a byte-order mark, CRLF line endings or a
coding line are read as Python reads them, everywhere, and bytes Python refuses get one message.

The same rule also names the built-ins (``builtin_name``), for the op record of the child
(``autograder/containment/probes.py``) too, so a call reads the same whichever opinion found it.
"""
import functools
import os

from autograder.rule import checker, source, tables

# The attention built-ins the child's op record watches (autograder/containment/probes.py), by dotted path:
# the child records calls of these, and the parent accepts a record naming only these.
WATCHED = ("torch.nn.functional.scaled_dot_product_attention", "torch.nn.functional.multi_head_attention_forward",
           "torch.nn.MultiheadAttention", "torch.nn.TransformerEncoderLayer")


def watched_builtins():
    """The names, as the scanner gives them, under which an op record may report a call."""
    return frozenset(builtin_name(path) for path in WATCHED)


def builtin_name(path):
    """The name the scanner gives the attention built-in at dotted ``path`` (e.g.
    "torch.nn.functional.scaled_dot_product_attention"); ValueError if the scanner allows it."""
    name = checker._builtin(path)
    if name is None:
        raise ValueError(f"{path} is not one of the forbidden built-ins of the rule (autograder/rule/checker.py)")
    return name


def allowed_modules():
    """The modules a submission may import (the scanner's ``MODULES`` and ``ANNOTATION_ONLY``), by dotted name."""
    return tuple(dict.fromkeys([*tables.MODULES, *tables.ANNOTATION_ONLY]))


def read_source(path):
    """The text of the submitted file at ``path``, as Python reads it; raises ``ValueError`` with one
    line for the student (the rule's UnreadableSource) for bytes Python would not import."""
    return source.read_source(path)


def decode_source(data, filename):
    """``read_source`` for bytes already read (staging's copy)."""
    return source.decode_source(data, filename)


def refusal(violations, name):
    """The one text for a test that runs a refused file, shared with `make test` (the rule's ``refusal``)."""
    return checker.refusal(violations, name)


def forbidden_calls(path):
    """Violations of the rule in the file at ``path`` (read as text, never run), with the other file of
    the pair beside it as its sibling; ValueError (one line) if Python would not read its bytes,
    SyntaxError if it does not parse."""
    folder, name = os.path.split(path)
    return _scan(folder, name, _texts(folder))


def _texts(folder):
    """What decides a scan: both files' bytes (a rescan follows any change to either)."""
    texts = []
    for name in tables.FILES:
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                texts.append(handle.read())
        except OSError:
            texts.append(None)
    return tuple(texts)


@functools.lru_cache(maxsize=8)
def _scan(folder, name, texts):
    """Cached on the two files' bytes: a grading asks about each file twice (the rule tests, and which
    tests a "hidden" finding fails), and one scan is enough."""
    return tuple(checker.file_findings(folder, name))


def hidden_calls(path):
    """The "hidden" findings in the file at ``path``; none if it is missing or does not parse
    (those failures are reported on their own)."""
    try:
        return [v for v in forbidden_calls(path) if v.kind == "hidden"]
    except (OSError, SyntaxError, ValueError):
        return []
