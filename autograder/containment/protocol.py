"""The child protocol in one place: what the parent asks, what the child answers, and how a
result that is not a plain tensor is tagged on its way back.

Both directions travel as ``wire`` bodies (JSON values and tensors); ``sandbox.Child`` adds the
sequence number. A request is written by the trusted parent (``request_body``) and read in the
child (``read_request``), which refuses any body that ``request_body`` would not write. A reply
is written in the child, so perhaps by student code: the parent takes it only after
``replies.check`` has checked its schema, and reads it with ``Answer.from_body``. Its fields
stay claims.

The four requests::

    {"import": "attention" | "mha", "seq": n, "record": str}
    {"warm_up": [[int]], "seq": n, "record": str}
    {"target": "module.attr", "args": [...], "kwargs": {...}, "init": {"args": [...], "kwargs": {...}},
     "state": {name: tensor}, "method": str, "grad": {"grad_outputs": [tensor | null], "inputs": [int],
     "params": bool}, "attrs": true, "decode": tensor, "measure_memory": true,
     "lend": {"sizes": {name: int}, "layers": {name: [int, int, bool]}, "methods": [str]}, "seq": n, "record": str}

    {"calls": [[...], ...], "target": "module.attr", <the probe's fields but args>, "seq": n, "record": str}

where every field of the third but ``target`` is optional (no ``args``: construct only). The fourth, a
``Calls``, is the third on each of up to ``MAX_CALLS`` argument lists: one request, one reply whose value is
``{"calls": [answer, ...]}``, an answer (the body of an ``Answer``, without ``seq``) per call, in order.
"""
import dataclasses
import math
from dataclasses import dataclass, field

import torch

from autograder.bounds import CHILD_NAME, CHILD_TEXT

STUDENT_MODULES = ("attention", "mha")
LENT_MODULE = "kit_lent"  # the file of the reference's methods in a "below" child's folder (grading/oracle.py)
MAX_LENT = 16             # sizes, layers or methods one request may lend

# The tags of a result that is not a tensor, a number, a string or None (see ``tag``).
SEQUENCE, TENSOR_OF, OBJECT = "__sequence__", "__tensor_of__", "__object__"
MAX_TEXT = CHILD_TEXT     # the child's own cut of a string it sends back (a courtesy: the parent cuts again)
MAX_TAGGED_ITEMS = 16     # items of a returned sequence that are sent back
MAX_TAGGED_DEPTH = 4      # nested sequences below that become an OBJECT tag
MAX_WARM_SHAPES = 4       # tensor arguments a warm-up copies the shapes of
MAX_WARM_ELEMENTS = 1 << 22  # elements of any one of them (16 MiB of float32)
MAX_CALLS = 16            # calls of one ``Calls`` request (a gradient test sends 13)


class ProtocolError(ValueError):
    """A request that ``request_body`` would not have written."""


# --- requests ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Construct:
    """Build the target first: ``target(*args, **kwargs)``."""
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Lend:
    """The lab's own parts put into the constructed object after its ``__init__`` (``probes.construct``), so a
    test of a higher part runs on the reference's lower parts: ``sizes`` set as int attributes, ``layers``
    built as ``nn.Linear(in, out, bias=bias)``, ``methods`` bound from the reference's (``LENT_MODULE``)."""
    sizes: dict = field(default_factory=dict)    # name -> int
    layers: dict = field(default_factory=dict)   # name -> [in_features, out_features, bias]
    methods: list = field(default_factory=list)  # names of LENT_MODULE's functions


@dataclass(frozen=True)
class Gradients:
    """Backpropagate ``sum(output * grad_output)``; report the gradients of the positional inputs
    listed in ``inputs`` and, with ``params``, of the constructed module's parameters."""
    grad_outputs: list                       # one per output; None where an output is not used (0-dim: every element alike)
    inputs: list = field(default_factory=list)
    params: bool = False
    intermediate: bool = False               # the inputs reach the call as an op's result, not as leaves


@dataclass(frozen=True)
class Import:
    """Import one of the student's modules (its failure is reported once, not in every test)."""
    module: str


@dataclass(frozen=True)
class WarmUp:
    """Run the kit's own op mix (``probes.warm_up_ops``) at the shapes of a measured call's float32 tensor
    arguments, in a fresh child before the student's import (see ``children.MemoryMeter``)."""
    shapes: list                             # [[int]]: at most MAX_WARM_SHAPES, each of 1 to 4 dims


@dataclass(frozen=True)
class Probe:
    """Call the student's ``target`` ("module.attr") and send back what it returned."""
    target: str
    args: list | None = None                 # None: construct (and report attrs) only
    kwargs: dict = field(default_factory=dict)
    init: Construct | None = None
    state: dict | None = None                # parameter name -> tensor, loaded after construction
    method: str | None = None                # call this method of the constructed object
    grad: Gradients | None = None
    attrs: bool = False                      # report the constructed object's sizes and parameters
    decode: torch.Tensor | None = None       # (B, T, d_model): feed ``step`` one token at a time
    measure_memory: bool = False             # report the peak memory of the call (not op-recorded)
    lend: Lend | None = None                 # the reference's lower parts in the constructed object

    @property
    def module(self):
        return self.target.split(".", 1)[0]

    @property
    def function(self):
        return self.target.split(".", 1)[1]

    @classmethod
    def build(cls, target, args=(), **request):
        """The hidden tests' spelling: ``init`` and ``grad`` may be plain dicts, and a call with
        neither positional arguments nor ``kwargs`` constructs only."""
        if isinstance(request.get("init"), dict):
            request["init"] = Construct(**request["init"])
        if isinstance(request.get("grad"), dict):
            request["grad"] = Gradients(**request["grad"])
        if isinstance(request.get("lend"), dict):
            request["lend"] = Lend(**request["lend"])
        return cls(target, list(args) if args or "kwargs" in request else None, **request)


@dataclass(frozen=True)
class Calls:
    """``probe`` on each of ``args`` (a list of argument lists), sent as one request: the child runs the calls in
    order, each as the probe alone would run (its own op record, its own error), and answers them in one reply.
    A measured call or a decode is a request of its own: it needs a fresh child, or has no arguments to vary."""
    probe: Probe                             # its own args unused (None)
    args: list                               # [[arg]]: 1 to MAX_CALLS argument lists

    def __post_init__(self):
        if not 1 <= len(self.args) <= MAX_CALLS or not all(type(a) is list for a in self.args):
            raise ProtocolError(f"a batch holds 1 to {MAX_CALLS} argument lists")
        if self.probe.args is not None or self.probe.measure_memory or self.probe.decode is not None:
            raise ProtocolError("a batch's probe has no args of its own, measures no memory and decodes nothing")

    measure_memory = False                   # never (not a field): read where a request may be a Probe
    target = property(lambda self: self.probe.target)
    module = property(lambda self: self.probe.module)

    def each(self):
        """The probes the batch stands for, in order."""
        return [dataclasses.replace(self.probe, args=args) for args in self.args]

    @classmethod
    def build(cls, target, arg_lists, **request):
        """``Probe.build``'s spelling, with a sequence of argument tuples for ``args``."""
        probe = Probe.build(target, (), **request)
        return cls(dataclasses.replace(probe, args=None), [list(args) for args in arg_lists])


def request_body(request, record):
    """The wire body of ``request`` (an ``Import``, a ``WarmUp``, a ``Probe`` or ``Calls``); ``record`` is the op
    record's marker."""
    if isinstance(request, Calls):
        return {**request_body(request.probe, record), "calls": request.args}
    if isinstance(request, Import):
        return {"import": request.module, "record": record}
    if isinstance(request, WarmUp):
        return {"warm_up": request.shapes, "record": record}
    body = {"target": request.target, "record": record}
    for name, default in _PROBE_DEFAULTS.items():
        value = getattr(request, name)
        if isinstance(value, torch.Tensor) or value != default:
            body[name] = _shallow_dict(value) if dataclasses.is_dataclass(value) else value
    return body


def _shallow_dict(part):
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}  # asdict would deep-copy tensors


_PROBE_DEFAULTS = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
                   for f in dataclasses.fields(Probe) if f.name != "target"}


def read_request(body):
    """``(request, seq, record)`` from a request body, in the child; ``ProtocolError`` if it is not
    one ``request_body`` writes (and ``sandbox.Child`` numbers)."""
    if type(body) is not dict:
        raise ProtocolError("a request is an object")
    seq, record = body.get("seq"), body.get("record")
    if type(seq) is not int or not (record is None or type(record) is str):
        raise ProtocolError("a request carries an int seq and a string record")
    fields = {k: v for k, v in body.items() if k not in ("seq", "record")}
    if "import" in fields:
        if set(fields) != {"import"} or fields["import"] not in STUDENT_MODULES:
            raise ProtocolError(f"an import names one of {', '.join(STUDENT_MODULES)} and nothing else")
        return Import(fields["import"]), seq, record
    if "warm_up" in fields:
        shapes = fields["warm_up"]
        if set(fields) != {"warm_up"} or not _warm_shapes(shapes):
            raise ProtocolError(f"a warm-up lists at most {MAX_WARM_SHAPES} shapes of 1 to 4 positive sizes, "
                                f"{MAX_WARM_ELEMENTS} elements each at most, and nothing else")
        return WarmUp(shapes), seq, record
    if "calls" in fields:
        calls = fields.pop("calls")
        if type(calls) is not list:
            raise ProtocolError(f"a batch holds 1 to {MAX_CALLS} argument lists")
        return Calls(_read_probe(fields), calls), seq, record
    return _read_probe(fields), seq, record


def _warm_shapes(shapes):
    return (type(shapes) is list and len(shapes) <= MAX_WARM_SHAPES
            and all(type(s) is list and 1 <= len(s) <= 4 and all(type(n) is int and n >= 1 for n in s)
                    and math.prod(s) <= MAX_WARM_ELEMENTS for s in shapes))


def _read_probe(fields):
    unknown = sorted(set(fields) - {"target"} - set(_PROBE_DEFAULTS))
    if unknown:
        raise ProtocolError(f"unknown request field {unknown[0][:40]!r}")
    target = fields.get("target")
    if type(target) is not str or target.count(".") != 1 or target.split(".")[0] not in STUDENT_MODULES:
        raise ProtocolError(f"the target is 'module.attr' with a module among {', '.join(STUDENT_MODULES)}")
    _expect(fields, "args", list)
    _expect(fields, "kwargs", dict)
    _expect(fields, "state", dict)
    _expect(fields, "method", str)
    _expect(fields, "attrs", bool)
    _expect(fields, "measure_memory", bool)
    _expect(fields, "decode", torch.Tensor)
    if "init" in fields:
        fields["init"] = _read_part(Construct, fields["init"], {"args": list, "kwargs": dict})
    if "grad" in fields:
        fields["grad"] = _read_part(Gradients, fields["grad"], {"grad_outputs": list, "inputs": list, "params": bool,
                                                               "intermediate": bool})
        if not all(type(i) is int for i in fields["grad"].inputs):
            raise ProtocolError("grad.inputs lists positions")
    if "kwargs" in fields and not all(type(k) is str for k in fields["kwargs"]):
        raise ProtocolError("kwargs are named")
    if "lend" in fields:
        fields["lend"] = _read_lend(fields["lend"])
    return Probe(**fields)


def _read_lend(value):
    lend = _read_part(Lend, value, {"sizes": dict, "layers": dict, "methods": list})
    names = [*lend.sizes, *lend.layers, *lend.methods]
    if (max(len(lend.sizes), len(lend.layers), len(lend.methods)) > MAX_LENT
            or not all(type(n) is str and n.isidentifier() and not n.startswith("_") for n in names)):
        raise ProtocolError(f"a lend names at most {MAX_LENT} public attributes of each kind")
    if not all(type(n) is int and 0 < n <= 1 << 16 for n in lend.sizes.values()):
        raise ProtocolError("a lent size is a positive int")
    if not all(type(v) is list and len(v) == 3 and all(type(n) is int and 0 < n <= 1 << 16 for n in v[:2])
               and type(v[2]) is bool for v in lend.layers.values()):
        raise ProtocolError("a lent layer is [in_features, out_features, bias]")
    return lend


def _expect(fields, name, kind):
    if name in fields and type(fields[name]) is not kind:
        raise ProtocolError(f"the request's {name} is not a {kind.__name__}")


def _read_part(cls, value, kinds):
    if type(value) is not dict or not set(value) <= set(kinds):
        raise ProtocolError(f"malformed {cls.__name__}")
    for name, kind in kinds.items():
        _expect(value, name, kind)
    try:
        return cls(**value)
    except TypeError as err:  # a required field is missing
        raise ProtocolError(f"malformed {cls.__name__}: {err}") from None


# --- replies -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Where:
    """The student's line an exception came from."""
    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class ErrorInfo:
    """What the student's code raised: a claim of the child's (the parent derives the ancestry
    it trusts from ``type`` itself, see ``student.exception_mro``)."""
    type: str
    mro: list = field()  # field(): a bare annotation would take type.mro, the metaclass's method, as its default
    message: str
    phase: str                               # "importing attention.py", "calling mha.MultiHeadAttention", ...
    where: Where | None = None

    def body(self):
        return dataclasses.asdict(self)  # strings and ints only

    @classmethod
    def from_body(cls, body):
        where = body["where"]
        return cls(body["type"], body["mro"], body["message"], body["phase"], where and Where(**where))


@dataclass(frozen=True)
class Answer:
    """A reply: ``value`` (its schema is in ``replies``) when ``ok``, else ``error``. ``forbidden``
    names the watched built-ins the op record saw; ``record`` echoes the request's marker."""
    seq: int
    ok: bool
    forbidden: list
    record: str | None
    value: dict | None = None
    error: ErrorInfo | None = None

    def body(self):
        body = {"seq": self.seq, "ok": self.ok, "forbidden": self.forbidden, "record": self.record}
        if self.ok:
            body["value"] = self.value
        else:
            body["error"] = self.error.body()
        return body

    @classmethod
    def from_body(cls, body):
        """Only for a body ``replies.check`` accepted: then nothing here can raise."""
        error = body.get("error")
        return cls(body["seq"], body["ok"], body["forbidden"], body.get("record"), body.get("value"),
                   error and ErrorInfo.from_body(error))

    @classmethod
    def of_calls(cls, seq, record, answers):
        """The reply to a ``Calls`` (in the child): its ``answers``, one per call, each without the ``seq`` they share."""
        bodies = [{name: part for name, part in answer.body().items() if name != "seq"} for answer in answers]
        return cls(seq, True, sorted({name for answer in answers for name in answer.forbidden}), record,
                   {"calls": bodies})

    def calls(self, count):
        """A ``Calls`` reply's answers, in order (for a checked body; whether there are ``count`` is the caller's to
        check): none where the value is not a batch's (a reply to one call, which the student's code may have sent
        itself), or, where the child answered the whole batch with one error (a result it could not send), that
        answer for each of the ``count`` calls."""
        if not self.ok:
            return [self] * count
        return [Answer.from_body(dict(body, seq=self.seq)) for body in self.value.get("calls", [])]


# --- tagging results -----------------------------------------------------------------------

def tag(value, depth=0):
    """A returned value as the wire can carry it (in the child): plain tensors, numbers, strings and
    None stay; a sequence, a tensor subclass and any other object get a tag ``untag`` reads."""
    if depth > MAX_TAGGED_DEPTH:
        return {OBJECT: "too deeply nested"}
    if isinstance(value, torch.Tensor):
        tensor = torch.Tensor.as_subclass(value.detach(), torch.Tensor)
        return tensor if type(value) is torch.Tensor else {TENSOR_OF: type(value).__name__, "value": tensor}
    if isinstance(value, (tuple, list)):
        return {SEQUENCE: type(value).__name__, "items": [tag(v, depth + 1) for v in value[:MAX_TAGGED_ITEMS]]}
    if value is None or type(value) in (bool, int):
        return value
    if type(value) is str:
        return value[:MAX_TEXT]
    if type(value) is float:
        return value if math.isfinite(value) else repr(value)
    return {OBJECT: type(value).__name__[:CHILD_NAME]}


def untag(value):
    """Undo ``tag`` (in the parent, on a checked reply): tuples and lists come back, and what was
    not a plain tensor becomes a ``NotATensor`` that comparisons can name."""
    if isinstance(value, dict) and SEQUENCE in value:
        items = [untag(v) for v in value["items"]]
        return tuple(items) if value[SEQUENCE] == "tuple" else items
    if isinstance(value, dict) and TENSOR_OF in value:
        return NotATensor(f"a {value[TENSOR_OF]} (a Tensor subclass)")
    if isinstance(value, dict) and OBJECT in value:
        return NotATensor(f"an object of type {value[OBJECT]}")
    return value


class NotATensor:
    """Stands in for a returned value that is not a plain tensor, so comparisons can name it."""

    def __init__(self, description):
        self.description = description

    def __repr__(self):
        return self.description
