"""What a child's reply may hold: the schema the parent checks before it uses any of it.

A reply is written by the sandboxed child, so student code may have written it instead: every
field is a claim. ``check`` accepts exactly what ``probes.serve`` sends (the body of a
``protocol.Answer``, decoded by ``wire``) and raises ``BadReply`` for anything else: a missing
or unknown field, a wrong type, an int too large for arithmetic, a string where a tensor belongs. The hidden tests and
``student.Reply`` then read fields without guarding against types they cannot have, so no
forged reply can raise inside the parent and become a grader error.

The shapes, as ``probes.run_probe`` builds them::

    {"seq": n, "ok": true, "forbidden": [str], "record": str | null, "value": {
        "result": plain, "inputs_after": [tensor | null],
        "grads": {"inputs": [tensor | null], "params": {name: tensor | null}, "connected": bool},
        "attrs": {"type_mro": [str], "d_model"/"n_heads"/"d_k": int | str,
                  "linears": {name: {"in": int, "out": int, "bias": bool}}, "parameters": {name: tensor}},
        "projected": {"w_k": [[int]], "w_v": [[int]]}, "cache_shapes": [[[int] | str]], "caches": [plain]}}
    {"seq": n, "ok": true, "forbidden": [str], "record": str | null, "value": {"calls": [answer]}}
    {"seq": n, "ok": false, "forbidden": [str], "record": str | null, "error": {"type": str, "mro": [str], "message": str,
        "phase": str, "where": null | {"file": str, "line": int, "function": str, "code": str}}}

where an ``answer`` (one per call of a ``protocol.Calls``, at most ``MAX_CALLS``) is either of the first two
without its ``seq``, and ``plain`` is what ``protocol.tag`` makes: a tensor, null, a bool, an int, a float, a
str, ``{"__sequence__": "tuple" | "list", "items": [plain]}``, ``{"__tensor_of__": str,
"value": tensor}`` or ``{"__object__": str}``.
"""
import torch

from autograder.bounds import CHILD_NAME, CHILD_TEXT, cut
from autograder.containment.protocol import MAX_CALLS, OBJECT, SEQUENCE, TENSOR_OF

MAX_INT = 1 << 62      # ints beyond this would overflow float arithmetic in the tests
MAX_ITEMS = 4096       # entries of any one list or dict (honest replies: at most a few dozen)
MAX_PLAIN_DEPTH = 8    # nested sequences in a result (protocol.tag stops at 5)


class BadReply(ValueError):
    """A reply that is not what ``probes.serve`` sends. Its message is the grader's words alone: it names
    where the fault is by the schema's own field names, never by a name or value the child chose."""


def check(message):
    """``message`` with every string cut to the parent's bounds (``bounded``) if it is a well-formed reply,
    else raise ``BadReply`` naming the first fault."""
    fields(message, "the reply", required={"seq": _int, "ok": _bool, "forbidden": _strings},
           optional={"value": _value, "error": _error, "record": _optional(_str)})
    _one_of_value_and_error(message, "the reply")
    return bounded(message)


def _one_of_value_and_error(message, where):
    if message["ok"] != ("value" in message) or ("value" in message) == ("error" in message):
        raise BadReply(f"{where} must hold either ok and a value, or an error")


# Fields whose strings are names (an exception type, a function, a file, a type's name): cut shorter.
NAME_FIELDS = {"type", "mro", "function", "file", OBJECT, TENSOR_OF}


def bounded(value, limit=CHILD_TEXT):
    """A checked reply with every string cut in the parent (``autograder.bounds``), whatever the child's
    own cut did: a text to ``CHILD_TEXT``, a name and every key to ``CHILD_NAME``. Tensors stay."""
    if type(value) is str:
        return cut(value, limit)
    if type(value) is list:
        items = [bounded(item, limit) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if type(value) is dict:
        items = {cut(key, CHILD_NAME): bounded(item, CHILD_NAME if key in NAME_FIELDS else CHILD_TEXT)
                 for key, item in value.items()}
        same = list(items) == list(value) and all(items[k] is value[k] for k in value)
        return value if same else items  # an honest reply comes back as it is, not copied
    return value


# --- the pieces --------------------------------------------------------------------------------

def fields(value, where, required=None, optional=None):
    """``value`` is a dict with all of ``required``, some of ``optional`` and nothing else;
    each field passes its checker."""
    required, optional = required or {}, optional or {}
    if type(value) is not dict:
        raise BadReply(f"{where} is a {type(value).__name__}, not an object")
    if set(value) - set(required) - set(optional):  # named by the child: not repeated in the grader's words
        raise BadReply(f"{where} has a field the schema does not know")
    missing = sorted(set(required) - set(value))
    if missing:
        raise BadReply(f"{where} lacks the field {missing[0]!r}")
    for name, checker in {**optional, **required}.items():
        if name in value:
            checker(value[name], f"{where}'s {name}")


def _fail(where, expected):
    raise BadReply(f"{where} is not {expected}")


def _int(value, where):
    if type(value) is not int or not -MAX_INT <= value <= MAX_INT:
        _fail(where, "an int")


def _bool(value, where):
    if type(value) is not bool:
        _fail(where, "a bool")


def _str(value, where):
    if type(value) is not str:
        _fail(where, "a string")


def _tensor(value, where):
    if type(value) is not torch.Tensor:
        _fail(where, "a tensor")


def _optional(checker):
    def check_optional(value, where):
        if value is not None:
            checker(value, where)
    return check_optional


def _list_of(checker):
    def check_list(value, where):
        if type(value) is not list or len(value) > MAX_ITEMS:
            _fail(where, "a list")
        for i, item in enumerate(value):
            checker(item, f"{where}[{i}]")
    return check_list


def _dict_of(checker):
    def check_dict(value, where):
        if type(value) is not dict or len(value) > MAX_ITEMS:
            _fail(where, "an object")
        for i, item in enumerate(value.values()):  # the keys are the child's: entries are named by position
            checker(item, f"{where}'s entry {i + 1}")
    return check_dict


def _either(*checkers, expected):
    def check_either(value, where):
        for checker in checkers:
            try:
                checker(value, where)
                return
            except BadReply:
                pass
        _fail(where, expected)
    return check_either


_strings = _list_of(_str)
_ints = _list_of(_int)
_maybe_tensors = _list_of(_optional(_tensor))


def _plain(value, where, depth=0):
    """A result as ``protocol.tag`` tags it."""
    if value is None or type(value) in (bool, int, float, str, torch.Tensor):
        if type(value) is int:
            _int(value, where)
        return
    if depth >= MAX_PLAIN_DEPTH:
        raise BadReply(f"{where} is nested too deeply")
    if type(value) is dict and SEQUENCE in value:
        fields(value, where, required={SEQUENCE: _str, "items": _list_of(
            lambda item, at: _plain(item, at, depth + 1))})
        if value[SEQUENCE] not in ("tuple", "list"):
            _fail(where, "a tuple or a list")
    elif type(value) is dict and TENSOR_OF in value:
        fields(value, where, required={TENSOR_OF: _str, "value": _tensor})
    elif type(value) is dict and OBJECT in value:
        fields(value, where, required={OBJECT: _str})
    else:
        _fail(where, "a tensor, a number, a string, a sequence or a tagged object")


def _grads(value, where):
    fields(value, where, required={"inputs": _maybe_tensors, "params": _dict_of(_optional(_tensor)),
                                   "connected": _bool})


def _linear(value, where):
    fields(value, where, required={"in": _int, "out": _int, "bias": _bool})


def _attrs(value, where):
    size = _either(_int, _str, expected="an int or a string")
    fields(value, where, required={"type_mro": _strings, "d_model": size, "n_heads": size, "d_k": size},
           optional={"linears": _dict_of(_linear), "parameters": _dict_of(_tensor)})


def _projected(value, where):
    fields(value, where, required={"w_k": _list_of(_ints), "w_v": _list_of(_ints)})


def _value(value, where):
    if type(value) is dict and "calls" in value:
        fields(value, where, required={"calls": _calls})
        return
    _one_value(value, where)


def _calls(value, where):
    """A batch's answers (``protocol.Answer.of_calls``): each a reply without its ``seq``, and no batch in it."""
    if type(value) is not list or not 1 <= len(value) <= MAX_CALLS:
        _fail(where, f"a list of 1 to {MAX_CALLS} answers")
    for i, answer in enumerate(value):
        at = f"{where}[{i}]"
        fields(answer, at, required={"ok": _bool, "forbidden": _strings},
               optional={"value": _one_value, "error": _error, "record": _optional(_str)})
        _one_of_value_and_error(answer, at)


def _one_value(value, where):
    fields(value, where, optional={
        "result": _plain, "inputs_after": _maybe_tensors, "grads": _grads,
        "attrs": _attrs, "projected": _projected, "caches": _list_of(_plain),
        "cache_shapes": _list_of(_list_of(_either(_ints, _str, expected="a shape or a string")))})


def _where(value, where):
    fields(value, where, required={"file": _str, "line": _int, "function": _str, "code": _str})


def _error(value, where):
    fields(value, where, required={"type": _str, "mro": _strings, "message": _str, "phase": _str,
                                   "where": _optional(_where)})
