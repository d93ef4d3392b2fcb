"""The only format that crosses the trust boundary: JSON plus raw tensor bytes.

A message is ``[4-byte header length][JSON header][buffer 0][buffer 1]...``. Tensors in
the JSON body are ``{"__tensor__": i, "dtype": "float32", "shape": [2, 3]}`` and point at
buffer i. The reader parses JSON and builds tensors with ``torch.frombuffer``: nothing in
a message can make the parent run code, unlike pickle or a full ``torch.load``.
"""
import json
import os
import struct

import torch

MAX_HEADER_BYTES = 4 << 20
MAX_MESSAGE_BYTES = 256 << 20

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


def decode(header_bytes, payload):
    """Parse a header and its buffers into JSON values and exact ``torch.Tensor`` objects."""
    try:
        header = json.loads(header_bytes)
        sizes = header["sizes"]
        body = header["body"]
    except (ValueError, KeyError, TypeError) as err:
        raise WireError(f"malformed message header: {err}") from None
    if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):
        raise WireError("malformed buffer sizes")
    if sum(sizes) != len(payload):
        raise WireError("buffer sizes do not match the payload")
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    buffers = [payload[o:o + s] for o, s in zip(offsets, sizes)]

    def walk(value):
        if isinstance(value, dict):
            if "__tensor__" in value:
                return _tensor_from(value, buffers)
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(body)


def _tensor_from(ref, buffers):
    try:
        index, dtype, shape = ref["__tensor__"], DTYPES[ref["dtype"]], ref["shape"]
        data = buffers[index]
    except (KeyError, IndexError, TypeError):
        raise WireError("malformed tensor reference") from None
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise WireError("malformed tensor shape")
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
    """Accumulates bytes from a non-blocking pipe until a whole message has arrived."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk):
        self.buffer += chunk
        if len(self.buffer) > MAX_MESSAGE_BYTES:
            raise WireError(f"message larger than {MAX_MESSAGE_BYTES >> 20} MB")

    def message(self):
        """Return the next complete message body, or None while it is incomplete."""
        if len(self.buffer) < 4:
            return None
        (header_len,) = struct.unpack("<I", self.buffer[:4])
        if header_len > MAX_HEADER_BYTES:
            raise WireError("message header too large")
        if len(self.buffer) < 4 + header_len:
            return None
        header = bytes(self.buffer[4:4 + header_len])
        try:
            sizes = json.loads(header)["sizes"]
            total = 4 + header_len + sum(sizes)
        except (ValueError, KeyError, TypeError):
            raise WireError("malformed message header") from None
        if len(self.buffer) < total:
            return None
        payload = bytes(self.buffer[4 + header_len:total])
        del self.buffer[:total]
        return decode(header, payload)


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
