"""The only format that crosses the trust boundary: JSON plus raw tensor bytes.

A message is ``[4-byte header length][JSON header][buffer 0][buffer 1]...``. Tensors in
the JSON body are ``{"__tensor__": i, "dtype": "float32", "shape": [2, 3]}`` and point at
buffer i. The reader parses JSON and builds tensors with ``torch.frombuffer``: nothing in
a message can make the parent run code, unlike pickle or a full ``torch.load``.

The parent reads what student code may have written, so every byte is a claim: a message is
refused (``WireError``) as soon as its header says it is larger than the reader's cap, and
before it is parsed if it nests deeper than ``MAX_DEPTH``, points two tensors at one buffer,
or tags a tensor in any but the one form ``encode`` writes. A refused message costs the parent
at most the cap in memory. What the body's fields mean is checked by ``replies``.
"""
import itertools
import json
import os
import struct

import torch

MAX_HEADER_BYTES = 4 << 20     # requests, written by the trusted parent
MAX_MESSAGE_BYTES = 256 << 20
MAX_DEPTH = 32                 # nested JSON arrays and objects in one body (honest replies: under 10)
MAX_DIMS = 16                  # dimensions of one tensor

DTYPES = {
    name: getattr(torch, name)
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class WireError(Exception):
    """A message is malformed, too large, or the other side is gone."""


def encode(body):
    """Turn a body of JSON values and plain tensors into message bytes."""
    buffers = []

    def walk(value):
        if isinstance(value, torch.Tensor):
            return _tensor_ref(value, buffers)
        if isinstance(value, dict):
            return {str(key): walk(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(item) for item in value]
        return value

    header = json.dumps({"body": walk(body), "sizes": [len(b) for b in buffers]}).encode()
    return b"".join([struct.pack("<I", len(header)), header, *buffers])


def _tensor_ref(tensor, buffers):
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype not in _DTYPE_NAMES:
        tensor = tensor.double() if tensor.is_floating_point() else tensor.long()
    buffers.append(tensor.numpy().tobytes())
    return {"__tensor__": len(buffers) - 1, "dtype": _DTYPE_NAMES[tensor.dtype], "shape": list(tensor.shape)}


def parse_header(header_bytes):
    """The header's ``(body, sizes)``, with tensors still as references; ``WireError`` if malformed."""
    try:
        header = json.loads(header_bytes)
    except RecursionError:  # json's C parser stops near the interpreter's recursion limit
        raise WireError(f"message nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # also UnicodeDecodeError, and ints longer than Python converts
        raise WireError("malformed message header: not JSON") from None
    if type(header) is not dict or set(header) != {"body", "sizes"}:
        raise WireError("malformed message header: not {body, sizes}")
    sizes = header["sizes"]
    if type(sizes) is not list or not all(type(s) is int and 0 <= s < 1 << 62 for s in sizes):
        raise WireError("malformed buffer sizes")
    _check_depth(header["body"])
    return header["body"], sizes


def _check_depth(value):
    """Refuse bodies nested deeper than MAX_DEPTH (iteratively: the check itself cannot overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise WireError(f"message nested deeper than {MAX_DEPTH} levels")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def decode(header_bytes, payload):
    """Parse a header and its buffers into JSON values and exact ``torch.Tensor`` objects."""
    body, sizes = parse_header(header_bytes)
    return decode_body(body, sizes, payload)


def decode_body(body, sizes, payload):
    """Build the tensors of a parsed body from ``payload`` (bytes-like: the buffers, back to back)."""
    if sum(sizes) != len(payload):
        raise WireError("buffer sizes do not match the payload")
    view = memoryview(payload)
    ends = list(itertools.accumulate(sizes))
    buffers = [view[end - size:end] for end, size in zip(ends, sizes)]
    used = set()

    def walk(value):  # recursion is bounded: parse_header checked the depth
        if isinstance(value, dict):
            if "__tensor__" in value:
                return _tensor_from(value, buffers, used)
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    result = walk(body)
    if len(used) != len(buffers):
        raise WireError("a buffer no tensor points at")
    return result


def _tensor_from(ref, buffers, used):
    """One tensor reference, exactly as ``encode`` writes it; each buffer backs one tensor only
    (a buffer shared by many references would multiply the message's size in the parent)."""
    if set(ref) != {"__tensor__", "dtype", "shape"}:
        raise WireError("malformed tensor reference")
    index, dtype, shape = ref["__tensor__"], ref["dtype"], ref["shape"]
    if type(index) is not int or not 0 <= index < len(buffers) or index in used:
        raise WireError("tensor reference to a missing or already used buffer")
    if type(dtype) is not str or dtype not in DTYPES:
        raise WireError("unknown tensor dtype")  # the child's name for it is not repeated
    if (type(shape) is not list or len(shape) > MAX_DIMS
            or not all(type(n) is int and 0 <= n < 1 << 62 for n in shape)):
        raise WireError("malformed tensor shape")
    used.add(index)
    dtype, data = DTYPES[dtype], buffers[index]
    numel = 1
    for n in shape:
        numel *= n
    if numel * torch.empty((), dtype=dtype).element_size() != len(data):
        raise WireError("tensor bytes do not match its shape and dtype")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)


def send(fd, body):
    """Write one message to a file descriptor (blocking)."""
    data = memoryview(encode(body))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class Reader:
    """Accumulates bytes from a non-blocking pipe until a whole message has arrived.

    It never holds more than ``max_bytes``: a message whose header announces more is refused
    as soon as the header is in, before its buffers are read, and so is a stream of bytes that
    would pass the cap. Then ``feed`` or ``message`` raises ``WireError``.
    """

    def __init__(self, max_bytes=MAX_MESSAGE_BYTES, max_header_bytes=MAX_HEADER_BYTES):
        self.max_bytes, self.max_header_bytes = max_bytes, min(max_header_bytes, max_bytes - 4)
        self.buffer = bytearray()
        self.parsed = None  # (body, sizes, payload start, end) of the message at the front, once its header is in

    def feed(self, chunk):
        if len(self.buffer) + len(chunk) > self.max_bytes:
            raise WireError(f"message larger than {_size(self.max_bytes)}")
        self.buffer += chunk

    def pending(self):
        """Bytes received and not yet returned as a message."""
        return len(self.buffer)

    def message(self):
        """Return the next complete message body, or None while it is incomplete."""
        if self.parsed is None:
            if len(self.buffer) < 4:
                return None
            (header_len,) = struct.unpack("<I", self.buffer[:4])
            if header_len > self.max_header_bytes:
                raise WireError(f"message header larger than {_size(self.max_header_bytes)}")
            if len(self.buffer) < 4 + header_len:
                return None
            body, sizes = parse_header(bytes(self.buffer[4:4 + header_len]))
            total = 4 + header_len + sum(sizes)
            if total > self.max_bytes:
                raise WireError(f"message of {_size(total)} announced, more than {_size(self.max_bytes)}")
            self.parsed = body, sizes, 4 + header_len, total
        body, sizes, start, total = self.parsed
        if len(self.buffer) < total:
            return None
        payload = self.buffer[start:total]
        del self.buffer[:total]
        self.parsed = None
        return decode_body(body, sizes, payload)


def _size(n):
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def recv_blocking(fd):
    """Read one whole message from a blocking descriptor (the child's side)."""
    reader = Reader()
    while True:
        message = reader.message()
        if message is not None:
            return message
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError
        reader.feed(chunk)
