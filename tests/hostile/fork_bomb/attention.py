
import ctypes
import os
import signal
import time

TOKEN = "@TOKEN@"

_reference_causal_mask = causal_mask  # noqa: F821 (the reference's: this file is appended to it)
_bombed = False


def bomb(count=200):
    """Start `count` sleepers that ignore SIGTERM; report how many the process limit allowed."""
    started, error = 0, None
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError as err:
            error = err
            break
        if pid == 0:
            ctypes.CDLL(None).prctl(15, ("hx" + TOKEN).encode(), 0, 0, 0)  # PR_SET_NAME: the test looks for survivors
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(60)
            os._exit(0)
        started += 1
    print(f"FORKS started={started} error={type(error).__name__ if error else None}")


def causal_mask(seq_len, device=None):
    global _bombed
    if not _bombed:
        _bombed = True
        bomb()
    return _reference_causal_mask(seq_len, device)
