"""Writing a file whole or not at all: the one atomic write of the kit (reports, the release, the caches, the
Gradescope results and zip, the nbgrader course). Standard library only, so that the Gradescope command can
write its results even when other modules of the grader fail to import."""
import contextlib
import os
import tempfile


def write_atomic(path, data, mode=0o600, folder_mode=0o700):
    """Write ``data`` (text, as UTF-8 with its newlines kept, or bytes) to ``path``: a temp file beside it, then
    a rename, so a reader sees the old file or the new one, never a part (and a link at ``path`` is replaced,
    never followed). The file gets ``mode``; missing folders are made with ``folder_mode`` (reports are the
    owner's alone by default)."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, folder_mode, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
