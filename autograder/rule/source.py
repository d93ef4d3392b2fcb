"""Reading a student's file as Python reads it: the grader, the public tests and submit.py all read with
``read_source``, so a byte-order mark, CRLF line endings or a coding line mean the same everywhere, and
bytes Python refuses get one message (``UnreadableSource``).
"""
import ast
import io
import tokenize
from pathlib import Path


class UnreadableSource(ValueError):
    """Bytes Python would not read as source code; the message is one line for the student."""


# ----------------------------------------------------------------------------- reading a file

def read_source(path) -> str:
    """The text of the Python file at ``path``, decoded as Python itself decodes it (see
    :func:`decode_source`). The grader, the public tests and this script all read your files
    with it, so they agree with Python and with each other. Raises OSError if it cannot be read."""
    path = Path(path)
    return decode_source(path.read_bytes(), path.name)


def decode_source(data: bytes, filename: str) -> str:
    """``data`` decoded as Python decodes a source file: UTF-8 unless a PEP 263 coding line says
    otherwise, a UTF-8 byte-order mark dropped, and CRLF or CR line endings read as newlines.
    Raises UnreadableSource with one line to show for bytes Python would refuse to import."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:  # bytes on the first two lines that are not UTF-8, or a coding line Python rejects
        encoding, refused = "utf-8", f"{filename} has a coding line Python does not accept ({exc.msg}): " \
                                     "save it as UTF-8 without one"
    else:
        refused = None
    try:
        text = data.decode(encoding)  # "utf-8-sig" (detect_encoding's name when a BOM is there) drops it
    except UnicodeDecodeError as exc:
        if not _python_reads(data):
            line = data.count(b"\n", 0, exc.start) + 1
            shown = "UTF-8" if encoding.startswith("utf-8") else encoding
            raise UnreadableSource(f"{filename} is not valid {shown} (byte 0x{data[exc.start]:02x} at line {line}): "
                                   "save it as UTF-8") from None
        text = data.decode(encoding, errors="replace")  # Python skips such bytes in comments: so do we
    if refused:
        raise UnreadableSource(refused)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _python_reads(data):
    """Does Python import these bytes? It skips undecodable bytes in comments (3.11 does)."""
    try:
        compile(data, "<source>", "exec", flags=ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        return False
    return True
