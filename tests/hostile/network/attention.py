
import socket

PORT, TOKEN = int("@PORT@"), "@TOKEN@"

_reference_causal_mask = causal_mask  # noqa: F821 (the reference's: this file is appended to it)
_called_home = False


def call_home():
    """Connect to a listener of the host (the test's) and send it something."""
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=1) as conn:
            conn.sendall(("hx-" + TOKEN).encode())
        print("CONNECT -> ok")
    except OSError as err:
        print(f"CONNECT -> failed ({type(err).__name__}: {err})")


def causal_mask(seq_len, device=None):
    global _called_home
    if not _called_home:
        _called_home = True
        call_home()
    return _reference_causal_mask(seq_len, device)
