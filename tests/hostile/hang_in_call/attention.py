
import ctypes
import signal

TOKEN = "@TOKEN@"


def padding_mask(tokens, pad_id):
    ctypes.CDLL(None).prctl(15, ("hx" + TOKEN).encode(), 0, 0, 0)  # PR_SET_NAME: the test looks for survivors
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while True:  # spins forever and shrugs off every polite signal
        pass
