"""Code that runs INSIDE the sandboxed child: import the student's files, run the probes each request asks for.

Nothing here is trusted by the parent: a submission can rewrite any of it at run time. Its
job is only to call the student's code on the inputs the parent sent and to send back plain
tensors and Python scalars. Every comparison happens in the parent, and every field of a reply
(results, attributes, errors, the forbidden ops seen, memory figures) is a claim the parent
recomputes or cross-checks before a score depends on it.

What a request may ask and what a reply holds is defined in ``autograder.containment.protocol``.
"""
import ctypes
import dataclasses
import importlib.util  # binds importlib too
import linecache
import math
import os
import sys
import threading
import traceback
import types
import warnings
import _thread

import torch

from autograder import rules
from autograder.containment import wire
from autograder.containment.protocol import (LENT_MODULE, MAX_TEXT, STUDENT_MODULES, Answer, Calls, ErrorInfo, Import,
                                 Probe, ProtocolError, WarmUp, Where, read_request, tag)

# --- the from-scratch rule, checked while the student's code runs ------------------------

# Named by submit.py's scanner (autograder/rules.py), so the op record and the source rule
# report a call under one name.
SDPA, MHA_FORWARD, MHA_CLASS, ENCODER_LAYER = (rules.builtin_name(path) for path in rules.WATCHED)

FORBIDDEN = {
    SDPA: (torch.nn.functional, "scaled_dot_product_attention"),
    MHA_FORWARD: (torch.nn.functional, "multi_head_attention_forward"),
}


class ForbiddenCall(RuntimeError):
    """A forbidden built-in was called: refused in the child, whatever route reached it."""


def refusal(name):
    """What a refused call says; it starts with the built-in's name (``OpRecord.forbidden_raised`` reads it)."""
    return f"{name} is not allowed in this lab: write attention yourself"


def install_tripwires():
    """Wrap the forbidden Python built-ins: a call is recorded at the moment it happens, then refused.
    The original of a Python function refuses too (its code is swapped), so a reference taken to it
    some other way (a closure, a module dict) is no way around the wrapper."""
    for name, (owner, attr) in FORBIDDEN.items():
        original = getattr(owner, attr)
        setattr(owner, attr, _tripwire(name, original))
        _refuse_original(original, name)
    mha_class = torch.nn.MultiheadAttention
    mha_class.__init__ = _tripwire(MHA_CLASS, mha_class.__init__, refuse=False)  # its forward is what is refused
    try:
        torch._C._nn.scaled_dot_product_attention = _tripwire(SDPA, torch._C._nn.scaled_dot_product_attention)
    except (AttributeError, TypeError):
        pass


def _tripwire(name, original, refuse=True):
    """A call goes into the op record's own (C++) event list at once, as ``forbidden:<name>``: no Python
    list the student's code could clear. Then it fails (``refuse``), so it earns nothing, recorded or not."""
    marker = f"{FORBIDDEN_EVENT}{name}"

    def wrapper(*args, **kwargs):
        if torch.autograd._profiler_enabled():
            with torch.autograd.profiler.record_function(marker):
                pass
        if refuse or not torch.autograd._profiler_enabled():
            raise ForbiddenCall(refusal(name))
        return original(*args, **kwargs)
    return wrapper


def _refuse_original(function, name):
    """Give a Python function without a closure the code of one that raises ``refusal(name)``."""
    if not isinstance(function, types.FunctionType) or function.__closure__:
        return  # a C function (torch's SDPA): the dispatcher refuses it (``block_forbidden_kernels``)
    namespace = {}
    exec(f"def refused(*args, **kwargs):\n    raise RuntimeError({refusal(name)!r})", namespace)
    function.__code__ = namespace["refused"].__code__


# --- the forbidden kernels, switched off at torch's dispatcher --------------------------------

# Every key through which one of these ops can reach a kernel: the backends (CPU, nested tensors), the
# composite kernels (SDPA itself is one), autograd, and vmap's own decompositions.
BLOCKED_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CPU", "Autograd", "NestedTensorCPU",
                "FuncTorchBatchedDecomposition", "FuncTorchVmapMode")


def blocked_ops():
    """{aten op name: the built-in it is shown as}: every aten op whose name matches ``FORBIDDEN_OPS``."""
    return {op: shown for op in torch._C._dispatch_get_all_op_names() if op.startswith("aten::")
            for pattern, shown in FORBIDDEN_OPS if pattern in op}


_kernels_blocked = False  # in this process, or in the zygote it was forked from (a fork keeps the dispatcher)


def block_forbidden_kernels():
    """Before the student's code loads: every kernel of torch's attention ops (``blocked_ops``) raises
    ``ForbiddenCall``, however it is reached (F.scaled_dot_product_attention, torch.ops.aten, the MHA
    and encoder-layer fast paths, vmap, inference mode), and so do flex attention's operators.

    The registration's handle is leaked on purpose: no Python object refers to it (and it is not one
    the garbage collector tracks), so code in this process cannot find it to take the kernels back;
    it lives as long as the process. The op record still names the op (the profiler sees the call
    before the kernel raises): evidence, no longer the gate. Once a process: the zygote does it before it
    forks, and a child's own call (``serve``) then finds it done."""
    global _kernels_blocked
    if _kernels_blocked:
        return
    handle = torch._C._dispatch_library("IMPL", "aten", "", __file__, 0)
    with warnings.catch_warnings():  # "overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for op, shown in blocked_ops().items():
            for key in BLOCKED_KEYS:
                if torch._C._dispatch_has_kernel_for_dispatch_key(op, key):
                    handle.impl(op.split("::", 1)[1], key, _refusing_kernel(shown, op), False)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(handle))  # never released: see above
    del handle
    for operator in _flex_attention_operators():
        for key in list(operator.py_kernels):
            operator.py_kernels[key] = _refusing_kernel(SDPA, "flex_attention")
        operator._dispatch_cache.clear()
    _kernels_blocked = True


def _refusing_kernel(shown, op):
    def refused(*args, **kwargs):
        raise ForbiddenCall(f"{refusal(shown)} ({op} is switched off in the grader)")
    return refused


def _flex_attention_operators():
    """flex attention's Python-dispatched operators (it runs eagerly on CPU through them), where torch has them."""
    higher_order = torch.ops.higher_order
    return [getattr(higher_order, name) for name in ("flex_attention", "flex_attention_backward")
            if hasattr(higher_order, name)]


FORBIDDEN_EVENT = "forbidden:"


def single_threaded():
    """The op record sees only the thread that runs the request, so the child runs one thread: torch's
    pools sized to one, and a Python thread refused when it is started (the kernel filter refuses the
    clone too, where there is one: autograder/containment/confine.py; this holds without it)."""
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or its pool already started (the zygote's warm-up): nothing to do
        pass

    def refused(*args, **kwargs):
        raise RuntimeError("starting a thread is not allowed: the grader runs your code in one thread")
    for owner, name in ((_thread, "start_new_thread"), (_thread, "start_joinable_thread"),
                        (threading, "_start_new_thread"), (threading, "_start_joinable_thread")):
        if hasattr(owner, name):
            setattr(owner, name, refused)


# The kernels behind torch's attention built-ins, however they are reached (torch.ops.aten,
# private torch functions, exec'd strings): the profiler records every op the dispatcher runs.
FORBIDDEN_OPS = (("scaled_dot", SDPA),
                 ("multi_head_attention", MHA_FORWARD),
                 ("transformer_encoder_layer", ENCODER_LAYER),
                 ("flash_attention", SDPA),
                 ("efficient_attention", SDPA),
                 ("cudnn_attention", SDPA),
                 ("fused_sdp", SDPA))
_PROFILER_CONFIG = torch.autograd.ProfilerConfig(torch.autograd.ProfilerState.CPU, False, False, False, False, False,
                                                 torch._C._profiler._ExperimentalConfig())


class OpRecord:
    """The ops one request ran, from torch's (C++) profiler, so that wrapping or unwrapping Python
    functions does not hide them. The parent's ``nonce`` is recorded first as a marker: a record
    without it (the profiler was stopped or replaced) is reported as missing, and the parent
    counts that as a violation.

    A request that measures memory is not watched (``watch=False``): the profiler keeps a few KB
    per op, which would count as the student's memory. The same functions are watched in the
    other requests, and the rule itself is decided from the source."""

    def __init__(self, nonce, watch=True):
        self.nonce, self.watch, self.seen, self.forbidden = nonce, watch, None, set()

    def __enter__(self):
        if not self.watch:
            self.seen = self.nonce
            return self
        try:
            torch.autograd._enable_profiler_legacy(_PROFILER_CONFIG)
            with torch.autograd.profiler.record_function(f"record:{self.nonce}"):
                pass
        except RuntimeError:  # already enabled: the record cannot be trusted
            self.nonce = None
        return self

    def __exit__(self, *exc):
        if not self.watch:
            return False
        try:
            records = torch.autograd._disable_profiler_legacy()
        except RuntimeError:  # the profiler was stopped while the student's code ran
            return False
        names = {event.name() for thread in records for event in thread if event.kind() == "push"}
        self.forbidden = {shown for name in names for pattern, shown in FORBIDDEN_OPS if pattern in name}
        self.forbidden |= {name[len(FORBIDDEN_EVENT):] for name in names if name.startswith(FORBIDDEN_EVENT)}
        if self.nonce is not None and f"record:{self.nonce}" in names:
            self.seen = self.nonce
        return False

    def forbidden_raised(self, error):
        """A tripwire that refused the call (no record running) is named in the answer too."""
        if error is not None and error.type == ForbiddenCall.__name__:
            self.forbidden |= {name for name in rules.watched_builtins() if error.message.startswith(f"{name} ")}


# --- importing the submission --------------------------------------------------------------

class Submission:
    """The student's modules, imported lazily from the child's folder; an import failure is remembered
    and reported. The folder is whatever the grader wrote: the student's two files, or (oracle mode,
    ``autograder/grading/oracle.py``) mha.py beside the reference's attention. This process holds no
    attention of its own."""

    def __init__(self, folder):
        self.folder = folder
        self.modules, self.failures = {}, {}

    def module(self, name):
        if name not in STUDENT_MODULES:
            raise LookupError(f"unknown module {name!r}")
        if name in self.failures:
            raise ImportFailed(self.failures[name])
        if name not in self.modules:
            try:
                self.modules[name] = sys.modules.get(name) or importlib.import_module(name)
            except BaseException as err:  # SystemExit and KeyboardInterrupt at import count too
                self.failures[name] = describe_exception(err, phase=f"importing {name}.py")
                raise ImportFailed(self.failures[name]) from None
        return self.modules[name]


class ImportFailed(Exception):
    def __init__(self, info):
        super().__init__(info.message)
        self.info = info


# --- one probe ------------------------------------------------------------------------------

def run_probe(submission, probe):
    """Run one ``protocol.Probe`` on the student's code; the reply's value (see ``replies``)."""
    target = getattr(submission.module(probe.module), probe.function)
    owner = None
    if probe.init is not None:
        target = owner = construct(target, probe.init, probe.lend, submission.folder)
    reply = {}
    if probe.attrs:
        reply["attrs"] = object_attrs(target)
    if probe.state is not None:
        load_state(target, probe.state)
    if probe.method:
        target = getattr(target, probe.method)
    if probe.decode is not None:
        reply.update(decode_token_by_token(owner, probe.decode))
        return reply
    if probe.args is None:  # construct only
        return reply
    wanted = probe.grad.inputs if probe.grad is not None else ()
    args = [_grad_leaf(a, i in wanted) for i, a in enumerate(probe.args)]
    given = args
    if probe.grad is not None and probe.grad.intermediate:  # as a layer's output reaches it: in place may follow
        given = [a.clone() if i in wanted and isinstance(a, torch.Tensor) and a.requires_grad else a
                 for i, a in enumerate(args)]
    result = target(*given, **probe.kwargs)  # a measured call's memory is read by the parent (children.MemoryMeter)
    reply["result"] = tag(result)
    # The inputs as they are after the call: the parent compares them with what it sent.
    reply["inputs_after"] = [a.detach() if isinstance(a, torch.Tensor) else None for a in given]
    if probe.grad is not None:
        reply["grads"] = gradients(result, args, probe.grad, owner)
    return reply


def construct(cls, init, lend, folder):
    """``cls(*init.args, **init.kwargs)``; with ``lend`` (a "below" child, ``protocol.Lend``), the lab's own lower
    parts then replace the student's: the sizes, fresh layers, and the reference's methods bound to the object.
    An ``__init__`` that raises leaves a bare module for them, since its bug is the construction part's alone."""
    if lend is None:
        return cls(*init.args, **init.kwargs)
    try:
        obj = cls(*init.args, **init.kwargs)
    except Exception:
        obj = cls.__new__(cls)
        torch.nn.Module.__init__(obj)
    for name, value in lend.sizes.items():
        setattr(obj, name, value)
    for name, (fan_in, fan_out, bias) in lend.layers.items():
        setattr(obj, name, torch.nn.Linear(fan_in, fan_out, bias=bias))
    if lend.methods:
        lent = _lent_module(folder)
        for name in lend.methods:
            setattr(obj, name, types.MethodType(getattr(lent, name), obj))
    return obj


def _lent_module(folder):
    """The reference's methods the grader wrote into this child's folder (``protocol.LENT_MODULE``)."""
    spec = importlib.util.spec_from_file_location(LENT_MODULE, os.path.join(folder, f"{LENT_MODULE}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WARM_BLOCKS = (64,)  # keys per block: the lab's default block_size (a larger one cost 0.04 s and raised the figure)


def warm_up_ops(shapes):
    """Run the ops a tiled attention is made of, each on its own, at the shapes of a measured call's
    tensor arguments (float32; the first is the queries'), so that the pages of torch's libraries and
    allocator they touch the first time are in place before the parent's memory baseline
    (``children.MemoryMeter``). Not attention: every result is dropped, nothing is kept."""
    shapes = [shape for shape in shapes if len(shape) >= 2]
    rows = torch.rand(shapes[0]) if shapes else None
    for other in [torch.rand(shape) for shape in dict.fromkeys(map(tuple, shapes[1:] or shapes[:1]))]:  # each shape once
        if other.shape[:-2] != rows.shape[:-2] or other.size(-1) != rows.size(-1):
            continue
        for size in WARM_BLOCKS:
            block = other[..., :size, :]
            b = block.size(-2)
            scores = rows @ block.transpose(-2, -1) / math.sqrt(rows.size(-1))  # (..., T_q, b)
            torch.einsum("...qd,...kd->...qk", rows, block)
            torch.matmul(rows[..., :b, :], block.transpose(-2, -1).contiguous())
            later = torch.arange(b)[None, :] > torch.arange(rows.size(-2))[:, None]
            torch.ones(rows.size(-2), b, dtype=torch.bool).tril(), torch.ones_like(later).triu(1)
            scores = scores.masked_fill(later, float("-inf"))
            torch.where(~later, scores, torch.full_like(scores, float("-inf")))
            top = torch.maximum(scores.amax(dim=-1, keepdim=True), scores.max(dim=-1, keepdim=True).values)
            top = top.masked_fill(torch.isinf(top), 0.0)
            p = torch.exp(scores - top)
            total = p.sum(dim=-1, keepdim=True) * torch.exp(top - top) + torch.zeros_like(top)
            torch.softmax(scores, dim=-1), torch.log_softmax(scores, dim=-1), torch.logsumexp(scores, dim=-1)
            out = (p @ block + torch.einsum("...qk,...kd->...qd", p, block)) / total
            torch.cat([scores, scores], dim=-1), torch.stack([out, out]), out.new_zeros(out.shape)
            out.new_full(top.shape, float("-inf")), out.clone().mul_(2.0).add_(out).sub_(1.0).div_(2.0)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MEASURED_MMAP_FROM = 128 << 10  # glibc's own starting threshold


def release_free_memory():
    """Hand the allocator's free pages back to the kernel (glibc's ``malloc_trim``): after the warm-up, so
    that what it freed is not resident at the baseline, where a student's call could reuse it unseen.
    Then fix glibc's thresholds: by default each freed large block raises them (up to 32 MiB), so a
    tiled loop's freed temporaries stay resident in the heap and the peak counts the allocator's
    leftovers as the student's. With them fixed, a block of 128 KiB or more is mapped on its own and
    unmapped when freed: the peak follows what the call holds at once."""
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim(0)
        libc.mallopt(M_MMAP_THRESHOLD, MEASURED_MMAP_FROM)
        libc.mallopt(M_TRIM_THRESHOLD, MEASURED_MMAP_FROM)
    except (OSError, AttributeError):  # not glibc: what the warm-up freed may stay resident and hide a reuse
        pass


def decode_token_by_token(module, x):
    """Feed ``x`` (B, T, d_model) to ``module.step`` one token at a time, watching what reaches w_k and w_v."""
    projected = {"w_k": [], "w_v": []}
    hooks = [getattr(module, name).register_forward_pre_hook(
        lambda _, inputs, name=name: projected[name].append(list(inputs[0].shape))) for name in projected]
    outputs, caches, cache = [], [], None
    try:
        for t in range(x.size(1)):
            y, cache = module.step(x[:, t:t + 1], cache)
            outputs.append(y)
            caches.append(tag(cache))  # the parent compares them with its own projections
    finally:
        for hook in hooks:
            hook.remove()
    return {"result": tag(outputs), "projected": projected, "caches": caches}


def _grad_leaf(value, wanted):
    if wanted and isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.clone().requires_grad_(True)
    return value


def gradients(result, args, spec, owner):
    """The gradients a ``protocol.Gradients`` asks for."""
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    pairs = [(o, g) for o, g in zip(outputs, spec.grad_outputs)
             if g is not None and isinstance(o, torch.Tensor) and o.requires_grad]
    inputs = [args[i] for i in spec.inputs]
    params = dict(owner.named_parameters()) if spec.params and isinstance(owner, torch.nn.Module) else {}
    leaves = list(inputs) + list(params.values())
    if not pairs or not leaves:
        return {"inputs": [None] * len(inputs), "params": {name: None for name in params}, "connected": False}
    grads = torch.autograd.grad(weighted_sum(pairs), leaves, allow_unused=True)
    return {
        "inputs": list(grads[:len(inputs)]),
        "params": dict(zip(params, grads[len(inputs):])),
        "connected": True,
    }


def weighted_sum(pairs):
    """sum((output * grad_output).sum()): its gradient is the vector-Jacobian product that
    ``torch.autograd.grad(outputs, leaves, grad_outputs)`` computes, exactly (every grad_output is
    multiplied by 1.0), but without that call's first-use import of sympy, which every child would pay.
    A 0-dim grad_output weighs every element of its output alike, whatever its shape (the parent judges it)."""
    total = 0
    for output, grad_output in pairs:
        if grad_output.dim() and output.shape != grad_output.shape:  # what torch.autograd.grad would say
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {grad_output.shape} "
                               f"and output has a shape of {output.shape}")
        total = total + (output * grad_output).sum()
    return total


def load_state(obj, state):
    """Copy the parent's parameter values into the student's module, by parameter name."""
    params = dict(obj.named_parameters())
    missing = sorted(set(state) - set(params))
    if missing:
        raise LookupError(f"MultiHeadAttention has no parameter named {', '.join(missing)}")
    with torch.no_grad():
        for name, value in state.items():
            if params[name].shape != value.shape:
                raise ValueError(f"parameter {name} has shape {tuple(params[name].shape)}, "
                                 f"expected {tuple(value.shape)}")
            params[name].data = value.clone()  # takes the dtype too: float64 cases stay float64


def object_attrs(obj):
    """What the parent needs to grade a constructed object: sizes, layers and parameters."""
    attrs = {"type_mro": [c.__name__ for c in type(obj).__mro__]}
    for name in ("d_model", "n_heads", "d_k"):
        value = getattr(obj, name, None)
        attrs[name] = value if type(value) is int else repr(value)[:80]
    if isinstance(obj, torch.nn.Module):  # the tensors themselves: the parent reads names and shapes
        attrs["parameters"] = {name: p.detach() for name, p in obj.named_parameters()}
    return attrs


# --- errors as the parent reads them ------------------------------------------------------

# The files whose lines an error may point at: the student's, and their attention.py as an oracle child
# keeps it (autograder/grading/oracle.py); the oracle's own attention.py is marked, and never pointed at.
SHOWN_AS = {"attention.py": "attention.py", "mha.py": "mha.py", "student_attention.py": "attention.py"}
ORACLE_MARKER = "__kit_oracle__"


def describe_exception(err, phase):
    """Exception type, message and the student's line it came from (never the full traceback)."""
    frames = [(frame, lineno) for frame, lineno in traceback.walk_tb(err.__traceback__)
              if os.path.basename(frame.f_code.co_filename) in SHOWN_AS and ORACLE_MARKER not in frame.f_globals]
    where = None
    if frames:
        frame, lineno = frames[-1]
        filename = SHOWN_AS[os.path.basename(frame.f_code.co_filename)]
        line = linecache.getline(frame.f_code.co_filename, lineno).strip()
        where = Where(filename, lineno, frame.f_code.co_name, line[:200])
    return ErrorInfo(type=type(err).__name__[:80], mro=[c.__name__ for c in type(err).__mro__][:12],
                     message=_safe_str(err)[:MAX_TEXT], phase=phase, where=where)


def _safe_str(err):
    try:
        return str(err)
    except Exception:
        return "<unprintable message>"


# --- the serve loop ---------------------------------------------------------------------------

def serve(request_fd, response_fd, submission_dir):
    """Answer requests until the parent closes the pipe; each reply echoes its request's ``seq``."""
    sys.path.insert(0, submission_dir)
    os.chdir(submission_dir)
    single_threaded()
    install_tripwires()
    block_forbidden_kernels()
    submission = Submission(submission_dir)
    while True:
        try:
            body = wire.recv_blocking(request_fd)
        except EOFError:
            return
        try:
            request, seq, nonce = read_request(body)
        except ProtocolError as err:  # only a grader bug sends one; the test fails with this message
            seq = body.get("seq") if type(body) is dict else None
            wire.send(response_fd, Answer(seq, False, [], None, error=ErrorInfo(
                "ProtocolError", [], str(err)[:MAX_TEXT], "reading the grader's request")).body())
            continue
        reply = answer(submission, request, seq, nonce)
        try:
            wire.send(response_fd, reply.body())
        except (ValueError, TypeError, OverflowError) as err:  # unencodable result (raised before any write)
            wire.send(response_fd, dataclasses.replace(reply, ok=False, value=None, error=ErrorInfo(
                "UnsendableResult", [], str(err)[:MAX_TEXT], "sending the result")).body())


def answer(submission, request, seq, nonce):
    """Run one request under the op record and say what happened, as an ``Answer``. A ``Calls`` runs each of
    its calls as a request of its own: under an op record of its own, so a forbidden op is named in the
    answer of the call that ran it, and an error ends that call alone."""
    if isinstance(request, Calls):
        return Answer.of_calls(seq, nonce, [answer(submission, probe, seq, nonce) for probe in request.each()])
    measuring = isinstance(request, Probe) and request.measure_memory
    with OpRecord(nonce, watch=not measuring) as record:
        try:
            if isinstance(request, Import):
                submission.module(request.module)
                ok, value, error = True, {}, None
            elif isinstance(request, WarmUp):  # the kit's own ops, before any student code
                warm_up_ops(request.shapes)
                ok, value, error = True, {}, None
            else:
                ok, value, error = True, run_probe(submission, request), None
        except ImportFailed as failed:
            ok, value, error = False, None, failed.info
            record.forbidden_raised(failed.info)
        except BaseException as err:
            phase = "the grader's warm-up" if isinstance(request, WarmUp) else f"calling {request.target}"
            ok, value, error = False, None, describe_exception(err, phase=phase)
            record.forbidden_raised(error)
    if isinstance(request, WarmUp):
        release_free_memory()
    return Answer(seq, ok, sorted(record.forbidden), record.seen, value, error)
