"""The reply protocol: whatever a child writes on the grader's pipe, the grader stays in charge.

A reply is written by a process that runs student code, so it may be anything. The grader must
refuse every malformed one as the student's failure (``ChildDied`` from ``Child.call``, which
the hidden tests turn into a failed test with a plain message), never raise anything else, and
never hold more than the reply cap in memory.
"""
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest
import torch

from autograder import bounds
from autograder.containment import replies, wire
from autograder.config import WALL_BACKSTOP, Limits
from autograder.containment.sandbox import Child, ChildDied, OutOfTurn
from autograder.containment.zygote import Zygote

CAP = Child.MAX_REPLY_BYTES


def frame(header, payload=b""):
    """Message bytes from a header given as text or JSON-able value."""
    data = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<I", len(data)) + data + payload


def read_one(data, max_bytes=CAP, max_header_bytes=Child.MAX_REPLY_HEADER_BYTES):
    reader = wire.Reader(max_bytes, max_header_bytes)
    reader.feed(data)
    return reader.message()


def good_reply(seq=1, **value):
    return {"seq": seq, "ok": True, "forbidden": [], "value": value}


# --- framing and decoding (wire) ----------------------------------------------------------------

def test_an_honest_message_round_trips():
    body = good_reply(result=torch.arange(6.0).reshape(2, 3))
    decoded = read_one(wire.encode(body))
    assert torch.equal(decoded["value"]["result"], torch.arange(6.0).reshape(2, 3))
    assert replies.check(decoded) is decoded


def test_an_oversized_message_is_refused_from_its_header_before_its_bytes_arrive():
    size = 250 << 20
    header = {"body": good_reply(result={"__tensor__": 0, "dtype": "uint8", "shape": [size]}), "sizes": [size]}
    reader = wire.Reader(CAP)
    reader.feed(frame(header))  # the header alone: no byte of the 250 MiB has been read
    with pytest.raises(wire.WireError, match="more than 8 MiB"):
        reader.message()


def test_the_reader_never_holds_more_than_its_cap():
    reader = wire.Reader(1 << 20)
    reader.feed(b"\0" * (1 << 19))  # an incomplete message: the header length is 0 ... then junk
    with pytest.raises(wire.WireError, match="larger than 1 MiB"):
        reader.feed(b"\0" * (1 << 20))
    assert reader.pending() <= 1 << 20, "the refused chunk was kept"


def test_a_header_over_the_header_cap_is_refused_before_it_is_read():
    reader = wire.Reader(CAP, 1024)
    reader.feed(struct.pack("<I", 1 << 30))
    with pytest.raises(wire.WireError, match="header larger than 1024 bytes"):
        reader.message()


@pytest.mark.parametrize("depth", [200_000, 1_000, wire.MAX_DEPTH + 1])
def test_deeply_nested_json_is_refused(depth):
    header = ('{"body": %s%s, "sizes": []}' % ("[" * depth, "]" * depth)).encode()
    with pytest.raises(wire.WireError, match="nested deeper"):
        read_one(frame(header), max_bytes=1 << 20, max_header_bytes=1 << 20)  # past the header cap: depth is what counts


def test_nesting_up_to_the_limit_is_accepted():
    depth = wire.MAX_DEPTH - 1  # the header object itself is one level
    header = ('{"body": %s%s, "sizes": []}' % ("[" * depth, "]" * depth)).encode()
    assert read_one(frame(header)) is not None


@pytest.mark.parametrize("header, says", [
    (b"not json", "malformed message header"),
    (b"\xff\xfe", "malformed message header"),
    (b"[1, 2]", "not {body, sizes}"),
    (b'{"body": 1}', "not {body, sizes}"),
    (b'{"body": 1, "sizes": 3}', "malformed buffer sizes"),
    (b'{"body": 1, "sizes": [-1]}', "malformed buffer sizes"),
    (b'{"body": 1, "sizes": [true]}', "malformed buffer sizes"),
    (b'{"body": 1, "sizes": [], "more": 0}', "not {body, sizes}"),
    (b'{"body": 1, "sizes": [1' + b"0" * 5000 + b"]}", "malformed message header"),  # an int too long to convert
])
def test_malformed_headers_are_refused(header, says):
    with pytest.raises(wire.WireError, match=says):
        read_one(frame(header))


def tensor_ref(index=0, dtype="float32", shape=(2,), **extra):
    return {"__tensor__": index, "dtype": dtype, "shape": list(shape), **extra}


@pytest.mark.parametrize("ref, sizes, says", [
    (tensor_ref(dtype="complex128"), [8], "unknown tensor dtype"),
    (tensor_ref(dtype=["float32"]), [8], "unknown tensor dtype"),
    (tensor_ref(index=1), [8], "missing or already used buffer"),
    (tensor_ref(index=-1), [8], "missing or already used buffer"),
    (tensor_ref(index=True), [8], "missing or already used buffer"),
    (tensor_ref(index="0"), [8], "missing or already used buffer"),
    (tensor_ref(shape=(3,)), [8], "do not match its shape"),
    (tensor_ref(shape=(-2,)), [8], "malformed tensor shape"),
    (tensor_ref(shape=(1,) * 17), [4], "malformed tensor shape"),
    (tensor_ref(shape=(0, 1 << 70)), [0], "malformed tensor shape"),
    (tensor_ref(extra="x"), [8], "malformed tensor reference"),
    ({"__tensor__": 0}, [8], "malformed tensor reference"),
    (tensor_ref(), [8, 8], "a buffer no tensor points at"),
    (tensor_ref(), [4], "do not match its shape"),
])
def test_bad_tensor_tags_are_refused(ref, sizes, says):
    header = {"body": good_reply(result=ref), "sizes": sizes}
    with pytest.raises(wire.WireError, match=says):
        read_one(frame(header, b"\0" * sum(sizes)))


def test_an_unknown_dtype_is_refused_without_repeating_its_name():
    header = {"body": good_reply(result=tensor_ref(dtype="https://evil.example")), "sizes": [8]}
    with pytest.raises(wire.WireError) as refused:
        read_one(frame(header, b"\0" * 8))
    assert "evil" not in str(refused.value)


def test_one_buffer_cannot_back_many_tensors():
    """Otherwise 1,000 references to one 1 MiB buffer would cost the grader 1 GiB."""
    header = {"body": good_reply(result=[tensor_ref()] * 1000), "sizes": [8]}
    with pytest.raises(wire.WireError, match="already used buffer"):
        read_one(frame(header, b"\0" * 8))


# --- the reply schema (replies) -----------------------------------------------------------------

ERROR = {"type": "ValueError", "mro": ["ValueError"], "message": "m", "phase": "p", "where": None}


@pytest.mark.parametrize("reply, says", [
    ([1, 2], "is a list, not an object"),
    ("ok", "is a str, not an object"),
    ({"ok": True, "value": {}, "forbidden": []}, "lacks the field 'seq'"),
    (dict(good_reply(), extra=1), "has a field the schema does not know"),
    (dict(good_reply(), ok=1), "ok is not a bool"),
    (dict(good_reply(), seq=1.0), "seq is not an int"),
    (dict(good_reply(), forbidden="none"), "forbidden is not a list"),
    (dict(good_reply(), forbidden=[1]), r"forbidden\[0\] is not a string"),
    ({"seq": 1, "ok": True, "forbidden": [], "value": {}, "error": ERROR}, "either ok and a value, or an error"),
    ({"seq": 1, "ok": False, "forbidden": [], "value": {}}, "either ok and a value, or an error"),
    ({"seq": 1, "ok": True, "forbidden": [], "value": []}, "value is a list, not an object"),
    (good_reply(result={"__sequence__": "set", "items": []}), "not a tuple or a list"),
    (good_reply(result={"__sequence__": "list", "items": "ab"}), "items is not a list"),
    (good_reply(result={"__tensor_of__": "Sub", "value": [1]}), "value is not a tensor"),
    (good_reply(result={"__object__": 3}), "__object__ is not a string"),
    (good_reply(result={"anything": 1}), "not a tensor, a number"),
    (good_reply(result=[1, 2]), "not a tensor, a number"),
    (good_reply(result=10 ** 30), "result is not an int"),
    (good_reply(peak_bytes=123), "a field the schema does not know"),
    (good_reply(inputs_after=[1]), r"inputs_after\[0\] is not a tensor"),
    (good_reply(grads={"inputs": [], "params": {}}), "lacks the field 'connected'"),
    (good_reply(grads={"inputs": [], "params": [], "connected": True}), "params is not an object"),
    (good_reply(attrs={"type_mro": [], "d_model": 1.5, "n_heads": 1, "d_k": 1}), "d_model is not an int or a string"),
    (good_reply(attrs={"type_mro": [], "d_model": 1, "n_heads": 1, "d_k": 1,
                       "linears": {"w_q": {"in": 1, "out": 1, "bias": "yes"}}}), "bias is not a bool"),
    (good_reply(projected={"w_k": [["1"]], "w_v": []}), r"w_k\[0\]\[0\] is not an int"),
    (good_reply(cache_shapes=[[1]]), "not a shape or a string"),
    ({"seq": 1, "ok": False, "forbidden": [], "error": dict(ERROR, mro="ValueError")}, "mro is not a list"),
    ({"seq": 1, "ok": False, "forbidden": [], "error": dict(ERROR, where={"file": "a.py"})}, "lacks the field"),
])
def test_replies_that_break_the_schema_are_refused(reply, says):
    with pytest.raises(replies.BadReply, match=says):
        replies.check(reply)


def test_every_reply_the_probe_loop_sends_passes_the_schema():
    tensor = torch.zeros(2)
    honest = [
        {"seq": 1, "ok": True, "forbidden": [], "value": {}},  # an import
        good_reply(result={"__sequence__": "tuple", "items": [tensor, {"__tensor_of__": "Sub", "value": tensor}]},
                   inputs_after=[tensor, None], grads={"inputs": [tensor, None], "params": {"w_q.weight": None},
                                                        "connected": True}),
        good_reply(result={"__object__": "generator"}),
        good_reply(attrs={"type_mro": ["MultiHeadAttention", "Module", "object"], "d_model": 16, "n_heads": "None",
                          "d_k": 4, "linears": {"w_q": {"in": 16, "out": 16, "bias": True}},
                          "parameters": {"w_q.weight": torch.zeros(16, 16)}}),
        good_reply(result={"__sequence__": "list", "items": [tensor]}, projected={"w_k": [[2, 1, 8]], "w_v": [[2, 1, 8]]},
                   cache_shapes=[[[2, 2, 1, 4], "None"]],
                   caches=[{"__sequence__": "tuple", "items": [torch.zeros(2, 2, 1, 4), torch.zeros(2, 2, 1, 4)]}]),
        dict(good_reply(result=tensor), record="5f2c0e9a1b3d4c6e"),  # the op record's marker (probes.OpRecord)
        {"seq": 1, "ok": False, "forbidden": ["torch.nn.MultiheadAttention"],
         "error": dict(ERROR, where={"file": "mha.py", "line": 3, "function": "f", "code": "x"})},
    ]
    for reply in honest:
        assert replies.check(reply) is reply


URL = "https://evil.example/claim-your-points"


@pytest.mark.parametrize("reply", [
    dict(good_reply(), **{URL: 1}),
    good_reply(attrs={"type_mro": [], "d_model": 1, "n_heads": 1, "d_k": 1, "parameters": {URL: "not a tensor"}}),
    good_reply(grads={"inputs": [], "params": {URL: 1}, "connected": True}),
])
def test_the_reply_checker_names_a_fault_in_its_own_words_never_by_the_childs_names(reply):
    with pytest.raises(replies.BadReply) as refused:
        replies.check(reply)
    assert "evil" not in str(refused.value) and "http" not in str(refused.value)


def test_every_string_of_a_reply_is_cut_in_the_parent_whatever_the_child_cut():
    long = "x" * 240_000
    checked = replies.check({"seq": 1, "ok": False, "forbidden": [], "error": {
        "type": long, "mro": [long], "message": long, "phase": long,
        "where": {"file": long, "line": 1, "function": long, "code": long}}})
    error = checked["error"]
    assert len(error["message"]) == len(error["phase"]) == len(error["where"]["code"]) == bounds.CHILD_TEXT
    assert len(error["type"]) == len(error["mro"][0]) == len(error["where"]["function"]) == bounds.CHILD_NAME
    assert error["message"].endswith(bounds.CUT_MARK)


def test_the_names_in_a_result_and_its_keys_are_cut_in_the_parent():
    long = "n" * 10_000
    checked = replies.check(good_reply(result={"__object__": long}, grads={"inputs": [], "params": {long: None},
                                                                           "connected": True}))
    assert len(checked["value"]["result"]["__object__"]) == bounds.CHILD_NAME
    assert [len(name) for name in checked["value"]["grads"]["params"]] == [bounds.CHILD_NAME]


# --- the grader's handle: Child.call on a child that writes what it likes ------------------------

class FakeChild:
    """A Child whose 'child' is a sleeping process; the test writes its replies on the pipe."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        request_r, request_w = os.pipe()
        response_r, self.response_w = os.pipe()
        output_r, self.output_w = os.pipe()
        status_r, self.status_w = os.pipe()
        self.request_r = request_r
        os.write(self.status_w, json.dumps({"pid": self.process.pid}).encode() + b"\n")
        self.child = Child(request_w, response_r, output_r, status_r, Limits(call_seconds=5), "rlimits", None)

    def reply(self, body):
        wire.send(self.response_w, body)

    def answer(self, *bodies, raw=None):
        """Like the child: read the next request, then write ``bodies`` (or ``raw`` bytes) as replies."""
        def run():
            self.read_request()
            for body in bodies:
                self.reply(body)
            if raw is not None:
                os.write(self.response_w, raw)
        threading.Thread(target=run, daemon=True).start()

    def read_request(self):
        return wire.recv_blocking(self.request_r)

    def killed(self):
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return False
        return self.process.returncode == -signal.SIGKILL

    def close(self):
        self.process.kill()
        self.process.wait()
        for fd in (self.request_r, self.response_w, self.output_w, self.status_w):
            os.close(fd)
        self.child.close()


@pytest.fixture
def fake():
    child = FakeChild()
    yield child
    child.close()


def test_requests_carry_sequence_numbers_and_matching_replies_are_taken(fake):
    seen = []
    fake.read_request = lambda: seen.append(wire.recv_blocking(fake.request_r))
    fake.answer(good_reply(seq=1, result=1))
    assert fake.child.call({"import": "attention"})["value"] == {"result": 1}
    fake.answer(good_reply(seq=2, result=2))
    assert fake.child.call({"target": "attention.f"})["value"]["result"] == 2
    assert seen == [{"import": "attention", "seq": 1}, {"target": "attention.f", "seq": 2}]


@pytest.mark.parametrize("seq", [2, 7, None, "1"])
def test_a_reply_numbered_for_another_request_kills_the_child(fake, seq):
    fake.answer(good_reply(seq=seq, result=1))
    with pytest.raises(ChildDied, match="malformed reply .*numbered") as died:
        fake.child.call({"import": "attention"})
    assert not isinstance(died.value, OutOfTurn) and not died.value.reason.startswith("grader error")
    assert fake.killed(), "the child that sent it still runs"


def test_a_reply_with_a_field_of_the_childs_choosing_is_named_in_the_graders_words(fake):
    fake.answer(dict(good_reply(seq=1, result=1), **{URL: 1}))
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention"})
    assert died.value.reason == "sent a malformed reply (the reply has a field the schema does not know)"


def test_a_misnumbered_reply_is_named_without_repeating_the_childs_number(fake):
    fake.answer(good_reply(seq=URL, result=1))
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention"})
    assert "numbered" in died.value.reason and "evil" not in died.value.reason


@pytest.mark.parametrize("header", [b'{"body": {"' + URL.encode() + b'": 1', b"\xff" + URL.encode()])
def test_a_malformed_header_is_named_without_quoting_it(header):
    with pytest.raises(wire.WireError) as refused:
        wire.parse_header(header)
    assert "evil" not in str(refused.value)


def test_a_second_reply_to_an_earlier_request_is_out_of_turn(fake):
    fake.answer(good_reply(seq=1, result=1))
    fake.child.call({"import": "attention"})
    fake.answer(good_reply(seq=1, result=1))  # sent after request 2 was read: the check before it cannot see it
    with pytest.raises(OutOfTurn, match="answered an earlier request"):
        fake.child.call({"target": "attention.f"})
    assert fake.killed()


def test_bytes_between_requests_are_out_of_turn_not_the_next_requests_fault(fake):
    fake.answer(good_reply(seq=1, result=1), raw=b"junk")
    fake.child.call({"import": "attention"})
    time.sleep(0.2)
    with pytest.raises(OutOfTurn, match="between two requests"):
        fake.child.call({"target": "attention.f"})
    assert fake.killed()


@pytest.mark.parametrize("body", [[1, 2], "text", {"seq": 1, "ok": True}, 3])
def test_non_dict_and_incomplete_replies_kill_the_child(fake, body):
    fake.answer(body)
    with pytest.raises(ChildDied, match="malformed reply"):
        fake.child.call({"import": "attention"})
    assert fake.killed()


def test_a_deeply_nested_reply_kills_the_child(fake):
    depth = 100_000  # a 200 KB header: more than a pipe holds, so it is written while the grader reads
    header = ('{"body": %s%s, "sizes": []}' % ("[" * depth, "]" * depth)).encode()
    fake.answer(raw=frame(header))
    with pytest.raises(ChildDied, match="nested deeper"):
        fake.child.call({"import": "attention"})
    assert fake.killed()


def test_an_oversized_reply_kills_the_child_once_its_header_is_in(fake):
    size = 250 << 20
    header = {"body": good_reply(result=tensor_ref(dtype="uint8", shape=(size,))), "sizes": [size]}
    fake.answer(raw=frame(header) + b"\1" * 4096)
    with pytest.raises(ChildDied, match="more than 8 MiB"):
        fake.child.call({"import": "attention"})
    assert fake.killed()
    assert fake.child.reader.pending() < CAP


def test_a_setup_error_on_the_reply_pipe_is_the_students_even_with_the_request_unread(fake):
    """The child decides whether it reads its request: a "setup_error" on the reply pipe is a malformed
    reply whether or not the request was read, never a grader error (which Gradescope's daily limit skips)."""
    fake.reply({"ok": False, "setup_error": "OSError: [Errno 28] No space left on device"})
    with pytest.raises(ChildDied, match="malformed reply") as died:
        fake.child.call({"import": "attention"})
    assert not died.value.reason.startswith("grader error"), died.value.reason
    assert fake.killed()


@pytest.mark.parametrize("numbered", [False, True])
def test_a_setup_error_sent_after_the_request_was_read_is_a_forgery(fake, numbered):
    """Numbered for the request or not, a "setup_error" on the reply pipe is no grader error."""
    fake.answer({"ok": False, "setup_error": "OSError: forged", **({"seq": 1} if numbered else {})})
    with pytest.raises(ChildDied, match="malformed reply") as died:
        fake.child.call({"import": "attention"})
    assert not died.value.reason.startswith("grader error"), died.value.reason
    assert fake.killed()


def test_a_setup_error_on_the_status_pipe_is_the_graders(fake):
    """Only the status pipe (the waiter's, and the child's until its setup is done) names a grader error."""
    os.write(fake.status_w, json.dumps({"setup_error": "PermissionError: no such uid"}).encode() + b"\n")
    os.write(fake.status_w, json.dumps({"status": 70 << 8, "swept": False}).encode() + b"\n")
    os.close(fake.request_r)  # the child exited: nobody will read the request
    fake.request_r = os.open(os.devnull, os.O_RDONLY)  # (for close())
    with pytest.raises(ChildDied, match="grader error: the sandbox could not start .PermissionError"):
        fake.child.call({"import": "attention"})


def test_a_request_the_child_does_not_read_times_out_within_the_call_limit(fake):
    """The request pipe shrunk to 4 KiB and never read: writing a large request must not block the grader;
    the call's limits (its CPU time and the wall-clock backstop) count from before the write."""
    fcntl.fcntl(fake.request_r, 1031, 4096)  # F_SETPIPE_SZ, as a child can do to its own pipe
    fake.child.limits = Limits(call_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention", "pad": "x" * (1 << 20)})
    assert died.value.timed_out and time.monotonic() - started < 0.5 * WALL_BACKSTOP + 2, time.monotonic() - started
    assert fake.killed()


def test_a_call_ends_at_the_submissions_deadline_when_that_comes_first(fake):
    started = time.monotonic()
    with pytest.raises(ChildDied) as died:
        fake.child.call({"import": "attention"}, deadline=started + 0.3)  # the call's own limit is 5 s
    assert died.value.timed_out and time.monotonic() - started < 2


def test_a_large_request_is_written_while_the_child_reads_it(fake):
    fake.answer(good_reply(seq=1, result=1))
    assert fake.child.call({"import": "attention", "pad": "x" * (2 << 20)})["value"] == {"result": 1}


# --- a real sandboxed child forging a 250 MiB reply -----------------------------------------------

def status_bytes(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def test_the_graders_memory_stays_bounded_when_a_child_sends_250_mib(open_tmp):
    """The huge_reply hostile payload, run in the real sandbox: the grader (this process) reads
    its reply and must grow by little more than the reply cap, not by the 250 MiB announced."""
    from variant_builder import FILES, ROOT, SOLUTION, without_markers

    from autograder.containment import isolation

    folder = open_tmp / "sub"
    folder.mkdir()
    folder.chmod(0o755)
    payload = (ROOT / "tests" / "heavy" / "hostile" / "huge_reply" / "attention.py.payload").read_text()  # inert until the sandbox runs it
    for name in FILES:
        text = without_markers((SOLUTION / name).read_text())
        (folder / name).write_text(text + payload if name == "attention.py" else text)
    level = isolation.choose_level()
    zygote = Zygote(level, hidden=[str(ROOT)])
    child = None
    try:
        uid = zygote.next_uid(slot=0)
        if os.getuid() == 0:
            for path in (folder, *folder.iterdir()):
                os.chown(path, uid, uid)
        child = zygote.spawn(str(folder), Limits(call_seconds=30), uid)
        assert child.call({"import": "attention"})["ok"]
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets this process's peak RSS (VmHWM) to its current RSS
        before = status_bytes("VmRSS")
        try:
            outcome = child.call({"target": "attention.causal_mask", "args": [4]})
        except ChildDied as died:
            outcome = died
        grown = status_bytes("VmHWM") - before
    finally:
        if child is not None:
            child.close()
        zygote.stop()
    assert grown < 64 << 20, f"reading a forged 250 MiB reply grew the grader's peak memory by {grown >> 20} MiB"
    assert isinstance(outcome, ChildDied) and "more than 8 MiB" in outcome.reason, (
        f"the forged reply was not refused as too large: {outcome!r}")
