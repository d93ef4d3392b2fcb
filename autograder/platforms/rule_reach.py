"""What the from-scratch rule's tables let a submission reach, computed from the tables (issue 45).

The rule (``autograder/rule/``) lets a file name a module's listed names, call them, and read the
listed members of values (``tables.MEMBERS``) or an attribute name its own files define. An own name
is any identifier, so on a library value it reaches that library's attribute of the same name: the
rule refuses reading such a name when it is one of the library's own and anything but plain data
(``tables.LIBRARY_NAMES``, written by ``make stubs`` from ``library_names`` below).

``reach`` is the proof that this is enough. From every allowed module name and a set of
representative values (tensors of each dtype, a layer, a parameter, an own class and instance, numpy
arrays and scalars, Python values, an autograd context, ...), it follows, to a fixed depth:

* every listed member (``MEMBERS``),
* every other attribute the rule lets an own name reach (each library attribute not in
  ``LIBRARY_NAMES``), private names included (the rule cannot prove who ``self`` is),
* calls: each reached callable with no argument, and each allowed module callable with each
  representative value,

and reports every forbidden object met on the way (``forbidden``): a module, the builtins, a frame, a
code object, a traceback or a cell, a module's namespace dict, ctypes (its module, types, instances and
numpy's ``.ctypes`` helper), and a buffer over anything but an array's own bytes. An address is a
number: nothing in reach turns one into memory.

It runs in a process of its own (``python -m autograder.platforms.rule_reach``): the calls change
torch's global state (default dtype, grad mode, seeds).
"""
import collections
import ctypes
import dataclasses
import importlib
import io
import itertools
import json
import math
import signal
import sys
import types
import typing
import warnings

DEPTH = 3  # attribute and call steps from a root; a longer chain repeats types already seen
CALL_SECONDS = 0.5  # a call that takes longer is dropped (none of the tables' functions needs it on tiny values)
# Members whose call changes the process, not a value (the reach runs in a throwaway process anyway;
# these would stop the walk: a stream detached, a process exit, a parameter zeroed under the next step).
SIDE_EFFECTS = frozenset("backward exit write flush detach detach_ close manual_seed fill_ zero_ clear pop popitem "
                         "remove reverse sort popleft appendleft rotate train eval zero_grad reset_parameters "
                         "requires_grad_ retain_grad normal_ uniform_ squeeze_ unsqueeze_ transpose_ t_ "
                         "set_materialize_grads debug info warning".split())


def _ctypes_kinds():
    return (ctypes._SimpleCData, ctypes._Pointer, ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._CFuncPtr)


def forbidden(value):
    """Why ``value`` must be out of a submission's reach, or None."""
    import numpy

    if isinstance(value, types.ModuleType):
        return f"the module {value.__name__}"
    if isinstance(value, (types.FrameType, types.CodeType, types.TracebackType, types.CellType)):
        return f"a {type(value).__name__} (the interpreter's own objects)"
    if isinstance(value, dict) and "__builtins__" in value and "__name__" in value:
        return f"the namespace of the module {value.get('__name__')}"
    if value is __builtins__ or (isinstance(value, dict) and value is vars(sys.modules["builtins"])):
        return "the builtins"
    if isinstance(value, _ctypes_kinds()) or (isinstance(value, type) and issubclass(value, _ctypes_kinds())):
        return "ctypes (raw memory)"
    if type(value).__name__ == "_ctypes" and type(value).__module__.startswith("numpy"):
        return "numpy's .ctypes helper (raw memory)"
    if isinstance(value, memoryview) and not isinstance(value.obj, (numpy.ndarray, numpy.generic, bytes, bytearray)):
        return f"a buffer over a {type(value.obj).__name__} (raw memory)"
    return None


def inert(value):
    """Plain data: what reading an attribute may give without reaching anything new (its members are a
    value's members, proven with the representatives)."""
    import numpy
    import torch

    # A class's data descriptor (a C slot of np.ndarray, say) is inert as a value: it has no member but
    # special ones, and it reads the attribute only when handed an object through __get__.
    plain = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size, torch.layout,
             torch.memory_format, torch.Tensor, numpy.ndarray, numpy.generic, numpy.dtype,
             types.GetSetDescriptorType, types.MemberDescriptorType)
    if isinstance(value, plain):
        return True
    if type(value) in (tuple, frozenset) and len(value) <= 16:  # a list may hold anything later: never inert
        return all(inert(item) for item in value)
    return False


# --- the roots ------------------------------------------------------------------------------------

def module_values(tables):
    """{"torch.softmax": the object}: every name of every allowed module that is not itself a module."""
    values, missing = {}, []
    for path, names in sorted(tables.MODULES.items()):
        module = importlib.import_module(path)
        for name in sorted(names):
            if f"{path}.{name}" in tables.MODULES:  # a module of the tables: a head of names, never a value
                continue
            if not hasattr(module, name):
                missing.append(f"{path}.{name}")
                continue
            value = getattr(module, name)
            if not isinstance(value, types.ModuleType):
                values[f"{path}.{name}"] = value
    return values, missing


OWN_VALUES = ("an own module", "an own class", "a dataclass", "a named tuple", "an own Function", "an own layer",
              "an own exception", "an own typed tuple", "an autograd context")


def representatives():
    """The values a submission's code handles: tensors of each dtype, layers, own classes, numpy values,
    Python values, an autograd context, a dataclass and a named tuple of its own."""
    import numpy
    import torch

    class Own(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.proj(x)

    @dataclasses.dataclass
    class Cache:
        keys: torch.Tensor
        size: int = 0

    Pair = collections.namedtuple("Pair", "output weights")
    contexts = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            contexts.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class OwnLinear(torch.nn.Linear):
        pass

    class OwnError(ValueError):
        pass

    class OwnTuple(typing.NamedTuple):
        output: torch.Tensor
        weights: torch.Tensor

    leaf = torch.randn(2, 3, requires_grad=True)
    Scale.apply(leaf).sum().backward()
    values = {f"tensor {dtype}": torch.zeros(2, 2, dtype=dtype) for dtype in (
        torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8,
        torch.uint8, torch.bool, torch.complex64)}
    values.update({
        "a tensor with a graph": (leaf * 2).sum(), "a leaf with its grad": leaf, "a view": torch.zeros(4)[1:],
        "nn.Linear": torch.nn.Linear(2, 2), "nn.Parameter": torch.nn.Parameter(torch.zeros(2)),
        "nn.ModuleList": torch.nn.ModuleList([torch.nn.Linear(1, 1)]), "nn.Dropout": torch.nn.Dropout(0.1),
        "an own module": Own(), "an own class": Own, "a dataclass": Cache(torch.zeros(1)), "a named tuple": Pair(1, 2),
        "an autograd context": contexts[0], "an own Function": Scale, "an own layer": OwnLinear(2, 2),
        "an own exception": OwnError("x"), "an own typed tuple": OwnTuple(torch.zeros(1), torch.ones(1)),
        "numpy array": numpy.zeros((2, 2)), "numpy int array": numpy.arange(3), "numpy bool array": numpy.zeros(2, bool),
        "numpy scalar": numpy.float64(1.5), "numpy dtype": numpy.dtype("float32"),
        "list": [1, 2], "dict": {"a": 1}, "str": "text", "int": 3, "float": 0.5, "tuple": (1, 2), "set": {1},
        "bytes": b"ab", "bytearray": bytearray(b"ab"), "slice": slice(1, 2), "range": range(3),
        "torch.Size": torch.Size([2, 3]), "dtype": torch.float32, "device": torch.device("cpu"),
        "finfo": torch.finfo(torch.float32), "iinfo": torch.iinfo(torch.int32), "Generator": torch.Generator(),
        "an exception": ValueError("x"), "a function of its own": (lambda x: x), "a generator": (i for i in range(2)),
    })
    return values


# --- the walk -------------------------------------------------------------------------------------

class _Slow(Exception):
    pass


def _alarm(*_):
    raise _Slow


def _call(function, *args):
    """``function(*args)`` or None (an error, or longer than CALL_SECONDS)."""
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        return True, function(*args)
    except BaseException:  # SystemExit (sys.exit), KeyboardInterrupt from nowhere: all just "no value"
        return False, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _key(value):
    """One representative per kind of plain data (each tensor op makes a new tensor), else the object."""
    import numpy
    import torch

    if isinstance(value, torch.Tensor):
        try:
            return ("tensor", type(value), value.dtype, value.requires_grad, value.grad_fn is not None, value._is_view())
        except Exception:  # an uninitialised parameter (LazyLinear's) answers nothing
            return ("tensor", type(value))
    if isinstance(value, numpy.ndarray):
        return ("array", value.dtype)
    if type(value) in (bool, int, float, complex, str, bytes) or isinstance(value, numpy.generic):
        return ("scalar", type(value))
    return ("object", id(value))


def _attributes(value):
    try:
        return [name for name in dir(value) if not (name.startswith("__") and name.endswith("__"))]
    except Exception:
        return []


@dataclasses.dataclass
class Reach:
    values: int  # distinct values reached
    forbidden: list  # [(path, why)]
    library_names: dict  # attribute name -> "Type.name" of one value whose attribute by that name is not plain data
    missing: list  # allowed names that the installed modules do not have


def reach(tables, depth=DEPTH):
    """Walk what the tables let a submission reach (module docstring)."""
    import torch

    signal.signal(signal.SIGALRM, _alarm)
    warnings.simplefilter("ignore")
    refused = set(getattr(tables, "LIBRARY_NAMES", ()))
    members = set(tables.MEMBERS)
    roots, missing = module_values(tables)
    representative = representatives()
    callables = [(path, value) for path, value in roots.items() if callable(value)]
    frontier = list(roots.items()) + list(representative.items())
    # self and cls: private names are read only on them (the rule proves self is your own object), so on
    # your own objects and classes every private name is followed, the library's inherited ones included.
    own = {id(value) for label, value in representative.items() if label in OWN_VALUES}
    seen, found, library_names = {}, [], {}
    for step in range(depth):
        following = []
        for path, value in frontier:
            key = _key(value)
            if key in seen:
                continue
            seen[key] = value
            why = forbidden(value)
            if why:
                found.append((path, why))
                continue
            for name in _attributes(value):
                if name in members:
                    pass
                elif name in refused and not (name.startswith("_") and id(value) in own):
                    continue
                ok, attribute = _call(getattr, value, name)
                if not ok:
                    continue
                if name not in members and not inert(attribute):
                    library_names.setdefault(name, f"{type(value).__name__}.{name}")
                following.append((f"{path}.{name}", attribute))
                if (name in members and callable(attribute) and name not in SIDE_EFFECTS
                        and not isinstance(value, (type, io.IOBase))):
                    ok, result = _call(attribute)
                    if ok:
                        following.append((f"{path}.{name}()", result))
                        if isinstance(result, (types.GeneratorType, collections.abc.Iterator)):
                            following += [(f"{path}.{name}()[{i}]", item) for i, item in
                                          enumerate(_call(lambda: list(itertools.islice(result, 3)))[1] or [])]
        if step == 0:  # module callables on each representative value, once
            for (path, function), (label, argument) in itertools.product(callables, representative.items()):
                if path.rsplit(".", 1)[-1] in SIDE_EFFECTS:
                    continue
                ok, result = _call(function, argument)
                if ok:
                    following.append((f"{path}({label})", result))
        frontier = following
    torch.set_default_dtype(torch.float32)
    return Reach(len(seen), sorted(set(found)), dict(sorted(library_names.items())), missing)


def library_names(tables):
    """{name: an example "Type.name"}: the attributes of library values (reached with the rule's own tables,
    without ``LIBRARY_NAMES``) that are not plain data: what an own attribute name may not read."""
    unrefused = types.SimpleNamespace(MODULES=tables.MODULES, MEMBERS=tables.MEMBERS, LIBRARY_NAMES=())
    return reach(unrefused).library_names


# --- the table the rule reads (autograder/rule/library_names.py, written by make stubs) ------------------

NAMES_TARGET = "autograder/rule/library_names.py"
NAMES_HEADER = '''"""The library attributes a name of a submission's own may not read: generated by `make stubs` from
autograder/platforms/rule_reach.py (do not edit).

Each is an attribute of a value the rule's tables reach (a tensor, a numpy array, a layer, a logger...)
that is neither plain data nor a listed member; the example says where. A name of your own that equals
one would read the library's attribute on such a value (numpy's arrays have .ctypes: raw memory), so
the checker refuses reading it. The fingerprint says what decided the table: the rule's tables, the
walk's code and the installed libraries; a change to any of them recomputes it.
"""
'''


def fingerprint(tables):
    """What decides ``library_names``: the tables' modules and members, this module's code, the libraries'
    versions and Python's. Read without importing the libraries."""
    import hashlib
    from importlib import metadata

    versions = [f"{name}=={metadata.version(name)}" for name in ("torch", "numpy", "einops")]
    with open(__file__, "rb") as handle:
        code = hashlib.sha256(handle.read()).hexdigest()
    decided = json.dumps([sorted((m, sorted(n)) for m, n in tables.MODULES.items()), sorted(tables.MEMBERS),
                          versions, list(sys.version_info[:2]), code])
    return hashlib.sha256(decided.encode()).hexdigest()[:16]


def render_names(current_text, kit_root):
    """The text of NAMES_TARGET: ``current_text`` itself when its fingerprint is today's (the walk takes
    about ten seconds), else the table computed anew in a process of its own."""
    import subprocess

    from autograder.rule import tables

    stamp = f"FINGERPRINT = {fingerprint(tables)!r}\n"
    if current_text and stamp in current_text:
        return current_text
    walk = subprocess.run([sys.executable, "-m", "autograder.platforms.rule_reach", "--names"], cwd=kit_root,
                          capture_output=True, text=True, check=True)
    names = json.loads(walk.stdout)
    rows = "".join(f"    {name!r}: {example!r},\n" for name, example in sorted(names.items()))
    return NAMES_HEADER + stamp + "LIBRARY_NAMES = {\n" + rows + "}\n"


def main(argv=None):
    """``python -m autograder.platforms.rule_reach [--names] [--without-names]``: the reach of the rule's tables
    as JSON (with --names, the library names the tables must refuse; with --without-names, the reach when
    an own name may read any library attribute but the interpreter's)."""
    from autograder.rule import tables

    argv = sys.argv[1:] if argv is None else argv
    if "--without-names" in argv:  # the tables as if no library name were refused: what the table is for
        tables = types.SimpleNamespace(MODULES=tables.MODULES, MEMBERS=tables.MEMBERS,
                                       LIBRARY_NAMES=tables.INTERPRETER_MEMBERS)
    else:
        from autograder.rule.library_names import LIBRARY_NAMES

        tables = types.SimpleNamespace(MODULES=tables.MODULES, MEMBERS=tables.MEMBERS, LIBRARY_NAMES=LIBRARY_NAMES)
    if "--names" in argv:
        print(json.dumps(library_names(tables), indent=0, sort_keys=True))
        return 0
    result = reach(tables)
    print(json.dumps(dataclasses.asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
