
import ctypes
import os
import signal
import time

OUT, TOKEN, MARKERS = "@OUT@", "@TOKEN@", "@MARKERS@"


def _haunt():
    """Outlive the grader, then overwrite this submission's report once it is written."""
    ctypes.CDLL(None).prctl(15, ("hx" + TOKEN).encode(), 0, 0, 0)  # PR_SET_NAME: the test looks for survivors
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for name in ("results.json", "feedback.md"):
            path = os.path.join(OUT, "daemon", name)
            try:
                if os.path.exists(path):
                    with open(path, "w") as f:
                        f.write('{"score": 1000.0, "output": "FAKE-REPORT-' + TOKEN + '", "tests": []}')
            except OSError:
                pass
        try:
            open(os.path.join(MARKERS, f"hx-{TOKEN}-daemon-alive"), "w").close()
        except OSError:
            pass
        time.sleep(0.2)
    os._exit(0)


def _daemonize():
    """The classic double fork: a session of its own, and a parent that is already gone."""
    first = os.fork()
    if first:
        os.waitpid(first, 0)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    try:
        _haunt()
    finally:
        os._exit(0)


_daemonize()
print("DAEMON started")
