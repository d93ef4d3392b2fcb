"""The child protocol (autograder/containment/protocol.py): what a request may say, what a reply reads as,
and how results that are not plain tensors are tagged."""
import pytest
import torch

from autograder.containment import replies, wire
from autograder.containment.protocol import (MAX_CALLS, MAX_TAGGED_ITEMS, MAX_TEXT, OBJECT, SEQUENCE, TENSOR_OF, Answer,
                                 Calls, Construct, ErrorInfo, Gradients, Import, Lend, NotATensor, Probe, ProtocolError,
                                 WarmUp, Where, read_request, request_body, tag, untag)


def over_the_wire(body, seq=1):
    """A body as the child reads it: numbered by the sandbox, encoded and decoded by wire."""
    data = wire.encode(dict(body, seq=seq))
    reader = wire.Reader()
    reader.feed(data)
    return reader.message()


# --- requests ------------------------------------------------------------------------------------

def test_an_import_request_reads_back_as_an_import_with_its_number_and_marker():
    request, seq, record = read_request(over_the_wire(request_body(Import("mha"), record="abc"), seq=7))
    assert (request, seq, record) == (Import("mha"), 7, "abc")


def test_a_warm_up_request_reads_back_with_its_shapes():
    request, seq, _ = read_request(over_the_wire(request_body(WarmUp([[4096, 16], [2, 8, 4]]), record=None), seq=3))
    assert (request, seq) == (WarmUp([[4096, 16], [2, 8, 4]]), 3)


def test_a_probe_with_every_field_reads_back_equal():
    x = torch.randn(2, 3, 8)
    probe = Probe("mha.MultiHeadAttention", args=[x, None, 3], kwargs={"causal": True},
                  init=Construct([8, 2], {"bias": False}), state={"w_q.weight": torch.eye(8)},
                  method="forward", grad=Gradients([torch.ones(2, 3, 8), None], inputs=[0], params=True),
                  attrs=True, measure_memory=True,
                  lend=Lend({"d_k": 4}, {"w_o": [8, 8, False]}, ["split_heads"]))
    back, _, _ = read_request(over_the_wire(request_body(probe, record="n")))
    assert back.lend == probe.lend
    assert back.target == probe.target and back.kwargs == probe.kwargs and back.init == probe.init
    assert back.method == "forward" and back.attrs and back.measure_memory
    assert torch.equal(back.args[0], x) and back.args[1:] == [None, 3]
    assert torch.equal(back.state["w_q.weight"], torch.eye(8))
    assert back.grad.inputs == [0] and back.grad.params and back.grad.grad_outputs[1] is None


def test_a_probe_body_carries_only_the_fields_that_were_set():
    assert request_body(Probe("attention.causal_mask", args=[4]), record="n") == {
        "target": "attention.causal_mask", "args": [4], "record": "n"}


def test_a_construct_only_probe_has_no_args_and_an_empty_call_has_empty_args():
    assert Probe.build("mha.MultiHeadAttention", (), init={"args": [8, 2]}).args is None
    assert Probe.build("attention.causal_mask", (), kwargs={"seq_len": 3}).args == []


def test_the_hidden_tests_dict_spelling_builds_typed_parts():
    probe = Probe.build("attention.scaled_dot_product_attention", (1, 2),
                        init={"args": [1]}, grad={"inputs": [0], "grad_outputs": [None]})
    assert probe.init == Construct([1], {}) and probe.grad == Gradients([None], [0], False)


def test_a_misspelt_request_field_is_refused_where_it_is_written():
    with pytest.raises(TypeError, match="measure_mem"):
        Probe.build("attention.causal_mask", (4,), measure_mem=True)


def test_a_batch_reads_back_with_its_argument_lists_and_the_probes_fields():
    x = torch.randn(2, 3)
    calls = Calls.build("attention.scaled_dot_product_attention", [(x, x, x, None), (x + 1, x, x, None)],
                        kwargs={"causal": True})
    back, seq, record = read_request(over_the_wire(request_body(calls, record="n"), seq=4))
    assert (seq, record, back.target, back.probe.kwargs, back.probe.args) == (
        4, "n", "attention.scaled_dot_product_attention", {"causal": True}, None)
    assert [len(args) for args in back.args] == [4, 4] and torch.equal(back.args[1][0], x + 1)
    assert [probe.args[0] for probe in back.each()] == [back.args[0][0], back.args[1][0]], "one probe per list, in order"


@pytest.mark.parametrize("arg_lists, fields", [
    ([], {}), ([[1]] * (MAX_CALLS + 1), {}), ([[1]], {"measure_memory": True}), ([[1]], {"decode": torch.ones(1, 2, 4)}),
])
def test_a_batch_is_bounded_and_holds_no_request_that_needs_its_own(arg_lists, fields):
    with pytest.raises(ProtocolError, match="a batch"):
        Calls.build("attention.causal_mask", arg_lists, **fields)


BATCH = {"target": "attention.f", "seq": 1, "record": "n"}


@pytest.mark.parametrize("body, fault", [
    (dict(BATCH, calls=[]), "a batch holds 1 to"),
    (dict(BATCH, calls=[[1]] * (MAX_CALLS + 1)), "a batch holds 1 to"),
    (dict(BATCH, calls=[[1], 2]), "a batch holds 1 to"),
    (dict(BATCH, calls={"0": [1]}), "a batch holds 1 to"),
    (dict(BATCH, calls=[[1]], args=[2]), "a batch's probe has no args"),
    (dict(BATCH, calls=[[1]], measure_memory=True), "measures no memory"),
    (dict(BATCH, calls=[[1]], decode=torch.ones(1)), "decodes nothing"),
    (dict(BATCH, calls=[[1]], target="os.system"), "the target is"),
    (dict(BATCH, calls=[[1]], kwargs=[1]), "kwargs is not a dict"),

    ([1], "an object"),
    ({"import": "attention", "record": "n"}, "int seq"),
    ({"import": "attention", "seq": "1", "record": "n"}, "int seq"),
    ({"import": "attention", "seq": 1, "record": 5}, "string record"),
    ({"import": "os", "seq": 1, "record": "n"}, "an import names one of"),
    ({"import": "mha", "target": "mha.x", "seq": 1, "record": "n"}, "an import names one of"),
    ({"seq": 1, "record": "n"}, "the target is"),
    ({"warm_up": [[4, 4]], "target": "attention.f", "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"warm_up": [[4, 4]] * 5, "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"warm_up": [[1 << 12, 1 << 11]], "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"warm_up": [[4, 0]], "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"warm_up": [[1, 1, 1, 1, 1]], "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"warm_up": [[4.0, 4]], "seq": 1, "record": "n"}, "a warm-up lists"),
    ({"target": "os.system", "seq": 1, "record": "n"}, "the target is"),
    ({"target": "attention", "seq": 1, "record": "n"}, "the target is"),
    ({"target": "attention.a.b", "seq": 1, "record": "n"}, "the target is"),
    ({"target": "attention.f", "eval": "1", "seq": 1, "record": "n"}, "unknown request field 'eval'"),
    ({"target": "attention.f", "args": {"0": 1}, "seq": 1, "record": "n"}, "args is not a list"),
    ({"target": "attention.f", "kwargs": [1], "seq": 1, "record": "n"}, "kwargs is not a dict"),
    ({"target": "attention.f", "attrs": 1, "seq": 1, "record": "n"}, "attrs is not a bool"),
    ({"target": "attention.f", "decode": [1.0], "seq": 1, "record": "n"}, "decode is not a Tensor"),
    ({"target": "attention.f", "init": [1, 2], "seq": 1, "record": "n"}, "malformed Construct"),
    ({"target": "attention.f", "init": {"args": [1], "x": 1}, "seq": 1, "record": "n"}, "malformed Construct"),
    ({"target": "attention.f", "grad": {"inputs": [0]}, "seq": 1, "record": "n"}, "malformed Gradients"),
    ({"target": "attention.f", "grad": {"grad_outputs": [], "inputs": ["0"]}, "seq": 1, "record": "n"},
     "grad.inputs lists positions"),
    ({"target": "mha.M", "lend": {"sizes": {"d_k": 4}, "x": 1}, "seq": 1, "record": "n"}, "malformed Lend"),
    ({"target": "mha.M", "lend": {"sizes": {"d_k": -4}}, "seq": 1, "record": "n"}, "a lent size is a positive int"),
    ({"target": "mha.M", "lend": {"sizes": {"d_k": True}}, "seq": 1, "record": "n"}, "a lent size is a positive int"),
    ({"target": "mha.M", "lend": {"layers": {"w_o": [8, 8]}}, "seq": 1, "record": "n"}, "a lent layer is"),
    ({"target": "mha.M", "lend": {"layers": {"w_o": [8, 1 << 20, True]}}, "seq": 1, "record": "n"}, "a lent layer is"),
    ({"target": "mha.M", "lend": {"methods": ["__init__"]}, "seq": 1, "record": "n"}, "public attributes"),
    ({"target": "mha.M", "lend": {"methods": ["split_heads"] * 17}, "seq": 1, "record": "n"}, "public attributes"),
])
def test_a_malformed_request_is_refused_with_its_fault(body, fault):
    with pytest.raises(ProtocolError, match=fault):
        read_request(body)


# --- replies -------------------------------------------------------------------------------------

def test_an_error_answer_survives_the_schema_and_reads_back_typed():
    error = ErrorInfo("ValueError", ["ValueError", "Exception"], "bad", "calling mha.MultiHeadAttention",
                      Where("mha.py", 12, "__init__", "raise ValueError('bad')"))
    body = over_the_wire(Answer(1, False, [], "n", error=error).body())
    assert Answer.from_body(replies.check(body)) == Answer(1, False, [], "n", error=error)


def test_a_value_answer_reads_back_with_its_value():
    body = over_the_wire(Answer(3, True, ["x"], None, value={"result": 5}).body(), seq=3)
    answer = Answer.from_body(replies.check(body))
    assert answer.ok and answer.value == {"result": 5} and answer.error is None and answer.forbidden == ["x"]


def test_a_batchs_answers_survive_the_schema_and_read_back_one_per_call_with_its_number():
    error = ErrorInfo("ValueError", ["ValueError"], "bad", "calling attention.f")
    answers = [Answer(5, True, [], "n", value={"result": 1}), Answer(5, False, ["x"], "n", error=error)]
    back = Answer.from_body(replies.check(over_the_wire(Answer.of_calls(5, "n", answers).body(), seq=5)))
    assert back.ok and back.forbidden == ["x"] and back.calls(2) == answers


def test_a_reply_to_one_call_holds_no_answer_to_a_batch():
    """The student's code can send a reply of its own, numbered as the batch: it answers none of its calls."""
    assert Answer(2, True, [], "n", value={"result": 1}).calls(3) == []


def test_a_batch_answered_with_one_error_gives_that_error_for_every_call():
    error = ErrorInfo("UnsendableResult", [], "cannot encode", "sending the result")
    assert Answer(2, False, [], "n", error=error).calls(3) == [Answer(2, False, [], "n", error=error)] * 3


@pytest.mark.parametrize("calls", [
    [], [{"ok": True, "forbidden": [], "value": {}}] * (MAX_CALLS + 1),
    [{"ok": True, "forbidden": []}], [{"ok": True, "forbidden": [], "value": {}, "error": {}}],
    [{"ok": True, "forbidden": [], "value": {"calls": [{"ok": True, "forbidden": [], "value": {}}]}}],
    [{"ok": True, "forbidden": [], "value": {}, "seq": 1}],
])
def test_a_batch_reply_outside_its_schema_is_refused(calls):
    with pytest.raises(replies.BadReply):
        replies.check({"seq": 1, "ok": True, "forbidden": [], "record": None, "value": {"calls": calls}})


def test_a_batch_reply_holds_its_answers_and_nothing_else():
    with pytest.raises(replies.BadReply):
        replies.check({"seq": 1, "ok": True, "forbidden": [], "record": None,
                       "value": {"calls": [{"ok": True, "forbidden": [], "value": {}}], "result": 1}})


def test_an_answer_body_holds_a_value_or_an_error_never_both():
    assert "error" not in Answer(1, True, [], None, value={}).body()
    assert "value" not in Answer(1, False, [], None, error=ErrorInfo("E", [], "", "p")).body()


# --- tags ----------------------------------------------------------------------------------------

class Sub(torch.Tensor):
    pass


def test_plain_values_pass_untagged():
    t = torch.ones(2)
    assert tag(t) is not None and torch.equal(tag(t), t)
    assert [tag(v) for v in (None, True, 3, 1.5, "s")] == [None, True, 3, 1.5, "s"]


def test_non_finite_floats_travel_as_their_repr():
    assert [tag(v) for v in (float("nan"), float("inf"))] == ["nan", "inf"]


def test_a_tensor_subclass_is_tagged_and_sent_as_a_plain_tensor():
    tagged = tag(torch.ones(2).as_subclass(Sub))
    assert tagged[TENSOR_OF] == "Sub" and type(tagged["value"]) is torch.Tensor
    assert repr(untag(tagged)) == "a Sub (a Tensor subclass)"


def test_tuples_and_lists_come_back_as_what_they_were():
    a, b = torch.zeros(1), torch.ones(1)
    assert untag(tag((a, [b, 2]))) == (a, [b, 2])
    assert tag((a,))[SEQUENCE] == "tuple" and tag([a])[SEQUENCE] == "list"


def test_any_other_object_is_named_by_its_type():
    back = untag(tag({1: 2}))
    assert isinstance(back, NotATensor) and repr(back) == "an object of type dict"
    assert tag(iter([]))[OBJECT] == "list_iterator"


def test_tagging_is_bounded_in_length_depth_and_text():
    assert len(tag(list(range(100)))["items"]) == MAX_TAGGED_ITEMS
    deep = [[[[[[1]]]]]]
    inner = tag(deep)
    for _ in range(5):
        inner = inner["items"][0]
    assert inner == {OBJECT: "too deeply nested"}
    assert len(tag("x" * 10 * MAX_TEXT)) == MAX_TEXT


def test_every_tag_passes_the_reply_schema():
    result = tag((torch.ones(1), torch.ones(1).as_subclass(Sub), [object(), "s", 1.0, float("nan")]))
    replies.check({"seq": 1, "ok": True, "forbidden": [], "record": None, "value": {"result": result}})



def test_a_memory_figure_from_the_child_is_not_a_field_of_a_reply():
    """The parent measures memory from the kernel's counters (children.MemoryMeter): a child's figure is refused."""
    with pytest.raises(replies.BadReply):
        replies.check({"seq": 1, "ok": True, "forbidden": [], "record": None, "value": {"result": 1, "peak_bytes": 7}})
