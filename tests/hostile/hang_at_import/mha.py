
import ctypes
import signal

ctypes.CDLL(None).prctl(15, ("hx" + "@TOKEN@").encode(), 0, 0, 0)  # PR_SET_NAME: the test looks for survivors
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:  # the import never finishes
    pass
