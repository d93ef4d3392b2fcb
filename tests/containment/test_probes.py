"""What runs inside the sandboxed child (autograder/containment/probes.py): importing the student's files,
running one probe per request, describing what the student's code raised, and the op record.

These tests call the child's functions in this process, on small student files written to a
temporary folder; the sandbox around them is tested elsewhere (tests/containment/test_isolation.py,
tests/heavy/test_hostile.py). ``install_tripwires`` is not called here: it wraps torch's functions
for good, so it runs in a subprocess of its own.
"""
import subprocess
import sys
import textwrap

import pytest
import torch

from autograder.containment import probes, replies, wire
from autograder.containment.probes import (MAX_TEXT, SDPA, ImportFailed, OpRecord, Submission, answer, decode_token_by_token,
                               describe_exception, weighted_sum)
from autograder.containment.protocol import (SEQUENCE, STUDENT_MODULES, Calls, Construct, ErrorInfo, Gradients, Import,
                                 Probe, WarmUp, Where)
from variant_builder import ROOT, SOLUTION, without_markers


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A submission folder first on sys.path, as the child has it; "attention" and "mha" are
    imported afresh here and leave sys.modules as they found it."""
    saved = {name: sys.modules.pop(name) for name in STUDENT_MODULES if name in sys.modules}
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in STUDENT_MODULES:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


def write(folder, attention=None, mha=None):
    """Write the student's files (dedented); a file left None is the reference's."""
    for name, text in (("attention.py", attention), ("mha.py", mha)):
        text = without_markers((SOLUTION / name).read_text()) if text is None else textwrap.dedent(text)
        (folder / name).write_text(text)
    return folder


def reference(folder):
    return Submission(str(write(folder)))


# --- importing the submission --------------------------------------------------------------------

def test_a_module_is_imported_from_the_submission_folder_once(folder):
    write(folder, attention="ANSWER = 42\n")
    submission = Submission(str(folder))
    module = submission.module("attention")
    assert module.ANSWER == 42 and module.__file__ == str(folder / "attention.py")
    assert submission.module("attention") is module


def test_an_import_that_raises_is_described_with_the_students_line(folder):
    write(folder, attention="import torch\nraise ValueError('broken at import')\n")
    with pytest.raises(ImportFailed) as failed:
        Submission(str(folder)).module("attention")
    info = failed.value.info
    assert (info.type, info.message, info.phase) == ("ValueError", "broken at import", "importing attention.py")
    assert info.where == Where("attention.py", 2, "<module>", "raise ValueError('broken at import')")


def test_a_failed_import_runs_once_and_fails_the_same_way_on_every_later_lookup(folder):
    write(folder, attention="""\
        import pathlib
        with open(pathlib.Path(__file__).with_suffix(".runs"), "a") as runs:
            runs.write("x")
        raise ValueError("broken at import")
        """)
    submission = Submission(str(folder))
    infos = []
    for _ in range(3):
        with pytest.raises(ImportFailed) as failed:
            submission.module("attention")
        infos.append(failed.value.info)
    assert infos[0] == infos[1] == infos[2]
    assert (folder / "attention.runs").read_text() == "x", "the file should run once, not at every lookup"


@pytest.mark.parametrize("statement, kind", [("raise SystemExit(3)", "SystemExit"),
                                              ("raise KeyboardInterrupt", "KeyboardInterrupt")])
def test_leaving_the_interpreter_at_import_is_an_import_failure_too(folder, statement, kind):
    write(folder, attention=statement + "\n")
    with pytest.raises(ImportFailed) as failed:
        Submission(str(folder)).module("attention")
    assert failed.value.info.type == kind and failed.value.info.phase == "importing attention.py"


def test_only_the_two_student_modules_can_be_looked_up(folder):
    write(folder)
    with pytest.raises(LookupError, match="unknown module 'os'"):
        Submission(str(folder)).module("os")


def test_in_student_mode_mha_runs_on_the_students_own_attention(folder):
    write(folder, attention="def scaled_dot_product_attention(q, k, v, mask=None):\n    return 'mine', None\n",
          mha="from attention import scaled_dot_product_attention\n")
    mha = Submission(str(folder)).module("mha")
    assert mha.scaled_dot_product_attention(1, 2, 3) == ("mine", None)


# --- one probe -------------------------------------------------------------------------------

def test_a_plain_call_returns_the_tagged_result_and_the_inputs_after_it(folder):
    reply = probes.run_probe(reference(folder), Probe("attention.causal_mask", [3]))
    assert torch.equal(reply["result"], torch.ones(3, 3, dtype=torch.bool).tril())
    assert reply["inputs_after"] == [None], "only tensors are sent back"


def test_a_tuple_result_is_sent_back_as_a_tagged_sequence(folder):
    x = torch.randn(1, 2, 4)
    reply = probes.run_probe(reference(folder), Probe("attention.scaled_dot_product_attention", [x, x, x]))
    assert reply["result"][SEQUENCE] == "tuple" and len(reply["result"]["items"]) == 2


def test_a_probe_can_construct_then_call_a_method(folder):
    x = torch.randn(2, 3, 8)
    reply = probes.run_probe(reference(folder), Probe("mha.MultiHeadAttention", [x], init=Construct([8, 2]),
                                                      method="split_heads"))
    assert reply["result"].shape == (2, 2, 3, 4)


def test_a_construct_only_probe_calls_nothing_after_the_constructor(folder):
    write(folder, mha="""\
        class MultiHeadAttention:
            def __init__(self, d_model, n_heads):
                pass

            def __call__(self, *args):
                raise AssertionError("called")
        """)
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([8, 2]))
    assert probes.run_probe(Submission(str(folder)), probe) == {}


def test_attrs_report_the_sizes_and_the_parameters(folder):
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([8, 2]), attrs=True)
    attrs = probes.run_probe(reference(folder), probe)["attrs"]
    assert attrs["type_mro"][:2] == ["MultiHeadAttention", "Module"]
    assert (attrs["d_model"], attrs["n_heads"], attrs["d_k"]) == (8, 2, 4)
    assert {name: tuple(p.shape) for name, p in attrs["parameters"].items()}["w_o.weight"] == (8, 8)
    assert len(attrs["parameters"]) == 8


def test_a_size_that_is_not_an_int_is_reported_as_its_repr(folder):
    write(folder, mha="""\
        class MultiHeadAttention:
            def __init__(self, d_model, n_heads):
                self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model / n_heads
        """)
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([8, 2]), attrs=True)
    attrs = probes.run_probe(Submission(str(folder)), probe)["attrs"]
    assert (attrs["d_k"], attrs["type_mro"]) == ("4.0", ["MultiHeadAttention", "object"])
    assert "parameters" not in attrs, "not an nn.Module: no parameters to report"


def test_state_is_loaded_by_parameter_name_with_its_dtype(folder):
    weight, bias = torch.randn(4, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    x = torch.randn(2, 4, dtype=torch.float64)
    probe = Probe("mha.MultiHeadAttention", [x], init=Construct([4, 2]),
                  state={"w_q.weight": weight, "w_q.bias": bias}, method="w_q")
    result = probes.run_probe(reference(folder), probe)["result"]
    assert result.dtype == torch.float64 and torch.equal(result, torch.nn.functional.linear(x, weight, bias))


def test_state_naming_a_parameter_the_module_lacks_is_refused(folder):
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([4, 2]), state={"w_z.weight": torch.eye(4)})
    with pytest.raises(LookupError, match="MultiHeadAttention has no parameter named w_z.weight"):
        probes.run_probe(reference(folder), probe)


def test_state_of_the_wrong_shape_is_refused(folder):
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([4, 2]), state={"w_q.weight": torch.eye(3)})
    with pytest.raises(ValueError, match=r"parameter w_q.weight has shape \(4, 4\), expected \(3, 3\)"):
        probes.run_probe(reference(folder), probe)


def test_gradients_of_the_inputs_are_those_autograd_computes(folder):
    submission = reference(folder)
    q, k, v = (torch.randn(2, 3, 4, dtype=torch.float64) for _ in range(3))
    grad_output = torch.randn(2, 3, 4, dtype=torch.float64)
    probe = Probe("attention.scaled_dot_product_attention", [q, k, v],
                  grad=Gradients([grad_output, None], inputs=[0, 1, 2]))
    grads = probes.run_probe(submission, probe)["grads"]

    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    output, _ = submission.module("attention").scaled_dot_product_attention(*leaves)
    expected = torch.autograd.grad(output, leaves, grad_output)
    assert grads["connected"] and len(grads["inputs"]) == 3
    for got, want in zip(grads["inputs"], expected):
        torch.testing.assert_close(got, want)
    assert not q.requires_grad, "the sent tensor stays as it was; a copy is differentiated"


def test_gradients_of_the_parameters_are_those_autograd_computes(folder):
    submission = reference(folder)
    torch.manual_seed(0)
    mine = submission.module("mha").MultiHeadAttention(8, 2).double()
    state = {name: p.detach().clone() for name, p in mine.named_parameters()}
    x, grad_output = torch.randn(1, 3, 8, dtype=torch.float64), torch.randn(1, 3, 8, dtype=torch.float64)
    probe = Probe("mha.MultiHeadAttention", [x, x, x], init=Construct([8, 2]), state=state,
                  grad=Gradients([grad_output, None], params=True))
    grads = probes.run_probe(submission, probe)["grads"]

    expected = torch.autograd.grad(mine(x, x, x)[0], list(mine.parameters()), grad_output)
    assert grads["connected"] and list(grads["params"]) == list(state)
    for (name, got), want in zip(grads["params"].items(), expected):
        torch.testing.assert_close(got, want, msg=name)


@pytest.mark.parametrize("grad_outputs", [[None, None], "detached"])
def test_gradients_are_not_connected_when_no_output_requires_them(folder, grad_outputs):
    write(folder, attention="""\
        def scaled_dot_product_attention(q, k, v, mask=None):
            return (q @ k.transpose(-2, -1) @ v).detach(), None
        """)
    x = torch.randn(1, 2, 4)
    grad_outputs = [torch.ones(1, 2, 4), None] if grad_outputs == "detached" else grad_outputs
    probe = Probe("attention.scaled_dot_product_attention", [x, x, x], grad=Gradients(grad_outputs, inputs=[0, 2]))
    grads = probes.run_probe(Submission(str(folder)), probe)["grads"]
    assert grads == {"inputs": [None, None], "params": {}, "connected": False}


def test_an_input_the_student_modified_in_place_comes_back_modified(folder):
    write(folder, attention="def scale(x, times):\n    x.mul_(times)\n    return x.sum()\n")
    sent = torch.ones(3)
    reply = probes.run_probe(Submission(str(folder)), Probe("attention.scale", [sent.clone(), 2]))
    assert torch.equal(reply["inputs_after"][0], 2 * sent) and reply["inputs_after"][1] is None


# --- decoding token by token -------------------------------------------------------------------

REPROJECTING_MHA = """\
    import torch
    from torch import nn

    STEPS = []

    class MultiHeadAttention(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.w_k, self.w_v = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

        def step(self, x, cache=None):
            STEPS.append(tuple(x.shape))
            if x.size(1) > 1 or len(STEPS) > 9:
                raise ValueError("one token at a time")
            seen = x if cache is None else torch.cat([cache, x], dim=1)  # projects every past token again
            self.w_k(seen)
            return self.w_v(seen)[:, -1:], seen
    """


def test_decoding_feeds_step_one_token_at_a_time_and_records_what_reached_the_projections(folder):
    write(folder, mha=REPROJECTING_MHA)
    probe = Probe("mha.MultiHeadAttention", None, init=Construct([4, 1]), decode=torch.randn(2, 3, 4))
    reply = probes.run_probe(Submission(str(folder)), probe)
    assert sys.modules["mha"].STEPS == [(2, 1, 4)] * 3
    assert reply["projected"] == {"w_k": [[2, 1, 4], [2, 2, 4], [2, 3, 4]], "w_v": [[2, 1, 4], [2, 2, 4], [2, 3, 4]]}
    assert [tuple(c.shape) for c in reply["caches"]] == [(2, 1, 4), (2, 2, 4), (2, 3, 4)]
    assert reply["result"][SEQUENCE] == "list" and len(reply["result"]["items"]) == 3


def test_decoding_removes_its_hooks_even_when_step_raises(folder):
    write(folder, mha=REPROJECTING_MHA)
    module = Submission(str(folder)).module("mha").MultiHeadAttention(4, 1)
    sys.modules["mha"].STEPS.extend([None] * 9)  # the next step raises
    with pytest.raises(ValueError, match="one token"):
        decode_token_by_token(module, torch.randn(1, 2, 4))
    assert not module.w_k._forward_pre_hooks and not module.w_v._forward_pre_hooks


# --- describing what the student's code raised ---------------------------------------------

def test_an_exception_names_the_students_last_line_not_torchs_or_the_graders(folder):
    write(folder, attention="""\
        import torch

        def helper(a, b):
            return torch.einsum("ij,jk->ik", a, b)

        def product(a, b):
            return helper(a, b)
        """)
    error = answer(Submission(str(folder)),
                   Probe("attention.product", [torch.randn(2, 3), torch.randn(2, 3)]), 1, "n").error
    assert error.where == Where("attention.py", 4, "helper", 'return torch.einsum("ij,jk->ik", a, b)')
    assert (error.type, error.phase) == ("RuntimeError", "calling attention.product")
    assert error.mro[:3] == ["RuntimeError", "Exception", "BaseException"]


def test_an_exception_raised_outside_the_students_files_names_no_line(folder):
    error = answer(reference(folder), Probe("attention.no_such_function", []), 1, "n").error
    assert error.type == "AttributeError" and error.where is None


def raised(exception):
    try:
        raise exception
    except BaseException as err:
        return err


def test_a_long_message_is_cut_to_the_size_the_parent_accepts():
    info = describe_exception(raised(ValueError("x" * (3 * MAX_TEXT))), phase="calling attention.f")
    assert info.message == "x" * MAX_TEXT


def test_an_exception_whose_message_cannot_be_printed_is_still_described():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    info = describe_exception(raised(Unprintable()), phase="calling attention.f")
    assert (info.type, info.message) == ("Unprintable", "<unprintable message>")


# --- one request, one answer -------------------------------------------------------------------

def test_an_import_request_answers_ok_with_the_marker(folder):
    assert answer(reference(folder), Import("mha"), 4, "abc") == probes.Answer(4, True, [], "abc", {})


def test_a_warm_up_runs_the_kits_ops_and_no_student_code(folder):
    write(folder, attention="raise ValueError('student code ran')\n")
    reply = answer(Submission(str(folder)), WarmUp([[96, 8], [96, 8], [96, 8]]), 2, None)
    assert (reply.ok, reply.value, reply.forbidden) == (True, {}, []) and "attention" not in sys.modules


def test_a_warm_up_that_fails_answers_with_its_error(folder, monkeypatch):
    monkeypatch.setattr(probes, "warm_up_ops", lambda shapes: 1 / 0)
    reply = answer(reference(folder), WarmUp([[4, 4]]), 3, None)
    assert not reply.ok and (reply.error.type, reply.error.phase) == ("ZeroDivisionError", "the grader's warm-up")


REUSE = """
import sys, torch
from autograder.containment import probes
def rss():
    return next(int(line.split()[1]) << 10 for line in open("/proc/self/status") if line.startswith("VmRSS:"))
probes.warm_up_ops([[4096, 16]] * 3)
probes.release_free_memory()
before = rss()
small = [torch.ones(4096, 4) for _ in range(256)]  # 16 MiB in 64 KiB pieces, below the mmap threshold: the heap
large = [torch.ones(4096, 64) for _ in range(48)]  # 48 MiB in the warm-up's (T_q, 64) blocks
print((rss() - before) >> 20)
"""


def test_what_the_warm_up_freed_is_not_resident_for_the_call_to_reuse():
    """The meter starts after the warm-up: memory it freed but the allocator kept would take a student's
    blocks of the same sizes unseen (tests/heavy/hostile/memory_warm_reuse). Without the release, 64 MiB of such
    blocks grew the RSS by 39 to 54 MiB here."""
    grown = subprocess.run([sys.executable, "-c", REUSE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(grown.stdout) >= 60, f"64 MiB of blocks grew the RSS by {grown.stdout.strip()} MiB"


FREED = """
import torch
from autograder.containment import probes
from solution.attention import tiled_attention
def field(name):
    return next(int(line.split()[1]) << 10 for line in open("/proc/self/status") if line.startswith(name + ":"))
torch.set_num_threads(1)  # as in the child
q, k, v = (torch.randn(4096, 16) for _ in range(3))
probes.warm_up_ops([[4096, 16]] * 3)
probes.release_free_memory()
open("/proc/self/clear_refs", "w").write("5")  # the peak starts here, as the parent's meter does
tiled_attention(q, k, v, causal=True)
print((field("VmHWM") - field("VmRSS")) >> 10)
"""


def test_what_a_measured_call_frees_goes_back_to_the_kernel():
    """After the warm-up glibc's thresholds are fixed. By default each freed large block raises them, a
    tiled loop's freed (T_q, block) temporaries then stay resident, and the peak counts the allocator's
    leftovers as the student's: the reference's 64-key tiling measured 16.2 to 16.8 MiB (its live peak
    is a few MiB) and failed test_hostile's matrix / 4 bound in CI. Here the RSS after the call was its
    peak (9.5 to 14.4 MiB) before the fix; with it the temporaries alive at the peak are gone after it."""
    freed = subprocess.run([sys.executable, "-c", FREED], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(freed.stdout) >= 2048, f"the call's freed temporaries: {freed.stdout.strip()} KiB left the RSS"


def test_a_failed_import_answers_with_the_imports_error_in_every_later_probe(folder):
    write(folder, attention="raise ValueError('broken at import')\n")
    submission = Submission(str(folder))
    first = answer(submission, Import("attention"), 1, "a")
    later = answer(submission, Probe("attention.causal_mask", [3]), 2, "b")
    assert not first.ok and not later.ok
    assert first.error == later.error and later.error.phase == "importing attention.py"


def test_a_probe_that_raises_answers_with_the_error_and_the_calls_phase(folder):
    write(folder, attention="def causal_mask(n):\n    raise NotImplementedError\n")
    reply = answer(Submission(str(folder)), Probe("attention.causal_mask", [3]), 7, "m")
    assert (reply.seq, reply.ok, reply.value, reply.record) == (7, False, None, "m")
    assert isinstance(reply.error, ErrorInfo) and reply.error.phase == "calling attention.causal_mask"


def test_every_answer_is_a_reply_the_parents_schema_accepts(folder):
    submission = reference(folder)
    x = torch.randn(1, 3, 8)
    requests = [Import("mha"),
                Probe("mha.MultiHeadAttention", [x, x, x], init=Construct([8, 2]), attrs=True,
                      grad=Gradients([torch.ones(1, 3, 8), None], inputs=[0], params=True)),
                Probe("mha.MultiHeadAttention", None, init=Construct([8, 2]), decode=x),
                Probe("attention.causal_mask", ["three"])]
    for seq, request in enumerate(requests, 1):
        body = answer(submission, request, seq, "n").body()
        reader = wire.Reader()
        reader.feed(wire.encode(body))
        replies.check(reader.message())


# --- the op record ---------------------------------------------------------------------------

FORBIDDEN_CALLER = """\
    import torch

    def attend(q):
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)

    def attend_by_aten(q):
        return torch.ops.aten.scaled_dot_product_attention(q, q, q)

    def attend_by_hand(q):
        return torch.softmax(q @ q.transpose(-2, -1), dim=-1) @ q
    """


@pytest.mark.parametrize("function, named", [("attend", [SDPA]), ("attend_by_aten", [SDPA]),
                                             ("attend_by_hand", [])])
def test_the_op_record_names_a_forbidden_kernel_however_it_is_reached(folder, function, named):
    write(folder, attention=FORBIDDEN_CALLER)
    reply = answer(Submission(str(folder)), Probe(f"attention.{function}", [torch.randn(1, 2, 4)]),
                   1, "nonce")
    assert reply.ok and reply.forbidden == named and reply.record == "nonce"


def test_a_request_that_measures_memory_is_not_op_recorded(folder):
    write(folder, attention=FORBIDDEN_CALLER)
    reply = answer(Submission(str(folder)),
                   Probe("attention.attend", [torch.randn(1, 2, 4)], measure_memory=True), 1, "nonce")
    assert reply.ok and reply.forbidden == [] and reply.record == "nonce"


COUNTER = """\
    import torch

    calls = []

    def count(x):
        calls.append(x)
        if x == 2:
            raise ValueError(f"call {len(calls)} refused {x}")
        if x == 3:
            return torch.nn.functional.scaled_dot_product_attention(*[torch.ones(1, 2, 4)] * 3)
        return len(calls), x * 10
    """


def batch(folder, *args):
    """The answer to a batch of ``count`` on each of ``args``, and its answers per call, as the parent reads them."""
    write(folder, attention=COUNTER)
    reply = answer(Submission(str(folder)), Calls.build("attention.count", [(a,) for a in args]), 9, "nonce")
    return reply, reply.calls(len(args))


def test_a_batch_runs_its_calls_in_order_and_answers_each_in_one_reply(folder):
    reply, answers = batch(folder, 5, 6, 7)
    assert (reply.seq, reply.ok, reply.record) == (9, True, "nonce")
    assert [a.value["result"][SEQUENCE] for a in answers] == ["tuple"] * 3
    assert [a.value["result"]["items"] for a in answers] == [[1, 50], [2, 60], [3, 70]]
    assert all(a.seq == 9 and a.record == "nonce" for a in answers)


def test_an_error_in_one_call_of_a_batch_is_that_calls_answer_and_the_others_run(folder):
    _, answers = batch(folder, 1, 2, 4)
    assert [a.ok for a in answers] == [True, False, True]
    assert answers[1].error.message == "call 2 refused 2" and answers[1].error.phase == "calling attention.count"
    assert answers[2].value["result"]["items"] == [3, 40]


def test_a_forbidden_op_is_named_in_the_answer_of_the_call_that_ran_it(folder):
    reply, answers = batch(folder, 1, 3, 4)
    assert [a.forbidden for a in answers] == [[], [SDPA], []]
    assert reply.forbidden == [SDPA], "the batch's own field: what any call ran"


def test_a_batchs_reply_is_one_the_parents_schema_accepts(folder):
    reply, _ = batch(folder, 1, 2, 3)
    reader = wire.Reader()
    reader.feed(wire.encode(reply.body()))
    replies.check(reader.message())


def test_a_tripwired_builtin_is_named_in_the_answer(folder, monkeypatch):
    monkeypatch.setattr(torch.nn.MultiheadAttention, "__init__",
                        probes._tripwire(probes.MHA_CLASS, torch.nn.MultiheadAttention.__init__))
    write(folder, mha="import torch\n\ndef build():\n    return torch.nn.MultiheadAttention(8, 2) is not None\n")
    submission = Submission(str(folder))
    assert answer(submission, Probe("mha.build", []), 1, "n").forbidden == [probes.MHA_CLASS]
    assert answer(submission, Import("mha"), 2, "n").forbidden == [], "each request starts a fresh record"


def test_a_profiler_stopped_by_the_students_code_leaves_no_marker():
    with OpRecord("nonce") as record:
        torch.autograd._disable_profiler_legacy()
    assert record.seen is None


def test_a_profiler_already_running_leaves_no_marker():
    torch.autograd._enable_profiler_legacy(probes._PROFILER_CONFIG)
    try:
        with OpRecord("nonce") as record:
            pass
    finally:
        if torch.autograd._profiler_enabled():  # the record stops the profiler it found running
            torch.autograd._disable_profiler_legacy()
    assert record.seen is None


@pytest.mark.slow
def test_tripwires_record_the_forbidden_builtins_and_refuse_them():
    """Under a record, a call is in the profiler's own events at once, then refused; with no record
    running (a request that measures memory) it is refused too. Building an nn.MultiheadAttention is
    only recorded (its forward is what is refused), and the original multi_head_attention_forward,
    reached around the wrapper, refuses as well."""
    script = textwrap.dedent("""\
        import torch
        from autograder.containment import probes
        original = torch.nn.functional.multi_head_attention_forward
        probes.install_tripwires()
        q = torch.randn(1, 2, 4)
        refused = []
        with probes.OpRecord("n") as record:
            try:
                torch.nn.functional.scaled_dot_product_attention(q, q, q)
            except probes.ForbiddenCall as err:
                refused.append(str(err).split(" ")[0])
            torch.nn.MultiheadAttention(4, 2)
        for call in (lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), lambda: original(q)):
            try:
                call()
            except RuntimeError as err:
                refused.append(str(err).split(" ")[0])
        print(sorted(record.forbidden), refused)
        """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"{sorted([SDPA, probes.MHA_CLASS])} {[SDPA, SDPA, probes.MHA_FORWARD]}"


@pytest.mark.slow
def test_the_child_refuses_threads_and_sizes_torchs_pools_to_one():
    """The op record sees one thread only: a thread started by the student's code is refused at once."""
    script = textwrap.dedent("""\
        import threading, torch
        from autograder.containment import probes
        probes.single_threaded()
        try:
            threading.Thread(target=print).start()
            print("started")
        except RuntimeError as err:
            print("refused", torch.get_num_threads(), str(err).split(":")[0])
        """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "refused 1 starting a thread is not allowed"


# --- the gradient's weighted sum ---------------------------------------------------------------

def test_the_weighted_sum_gives_the_vector_jacobian_product_autograd_gives():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    grad_outputs = (torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 3, dtype=torch.float64))
    outputs = (x.exp(), x @ x.T)
    [got] = torch.autograd.grad(weighted_sum(list(zip(outputs, grad_outputs))), [x])
    outputs = (x.exp(), x @ x.T)
    [expected] = torch.autograd.grad(outputs, [x], grad_outputs)
    assert torch.equal(got, expected)


def test_the_weighted_sum_refuses_a_grad_output_of_another_shape_in_torchs_words():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError) as torch_says:
        torch.autograd.grad(x * 2, [x], torch.ones(2))
    with pytest.raises(RuntimeError) as probes_say:
        weighted_sum([(x * 2, torch.ones(2))])
    assert str(torch_says.value).startswith("Mismatch in shape: grad_output[0] has a shape of torch.Size([2])")
    assert str(probes_say.value) == ("Mismatch in shape: grad_output has a shape of torch.Size([2]) "
                                     "and output has a shape of torch.Size([3])")
