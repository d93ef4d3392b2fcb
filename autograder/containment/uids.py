"""Sandbox uids (root only): each child gets one no child on this machine had before.

``sweep`` removes what a uid leaves behind; ``zygote`` asks for the uids and keeps its run's.

May import: the standard library and ``isolation`` (for ``CannotIsolate``).
"""
import os

from autograder.containment.isolation import CannotIsolate

# Every child gets a uid of its own when the grader is root, one no child on this machine had before:
# what a uid leaves behind (a keyring, System V IPC, a file in /tmp) then reaches nobody, and killing
# "every process of the child's uid" can never touch another child, another grader run, or a person.
# The uids lie far above what useradd gives system users (100-999) and login users (1000-60000) and
# above nobody: no real account can have one. The counter lives in a root-only file, taken under a
# lock by whichever process asks (the per-submission graders are forks: a counter in memory would
# restart in each), so it holds across forks, concurrent runs and runs on other days; it wraps only
# after 2.29 billion children.
FIRST_SANDBOX_UID = 2_000_000_000
LAST_SANDBOX_UID = 2 ** 32 - 2  # (uid_t)-1 means "no uid" to the kernel
UID_STATE = "/var/lib/attention-kit/sandbox-uid"


def allocate_uid(record=None):
    """The next sandbox uid, never handed out before on this machine (root only). ``record(uid)`` is
    called while the lock is held (``zygote.Zygote`` keeps its run's uids for the final sweep)."""
    import fcntl
    import stat

    folder = os.path.dirname(UID_STATE)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise CannotIsolate(f"{folder} must be a folder only root can write (it holds the sandbox uid counter)")
    fd = os.open(UID_STATE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the close
        text = os.pread(fd, 64, 0).strip()
        if text and not text.isdigit():
            raise CannotIsolate(f"{UID_STATE} holds no uid counter ({text[:20]!r}): remove it")
        uid = int(text) + 1 if text else FIRST_SANDBOX_UID
        uid = uid if FIRST_SANDBOX_UID <= uid <= LAST_SANDBOX_UID else FIRST_SANDBOX_UID
        if record is not None:
            record(uid)
        # Rewritten in place, never truncated to empty first: ext4 writes a file truncated to zero back to
        # disk when it is closed, which took up to 1.6 s per child while the disk was busy.
        line = b"%d\n" % uid
        os.pwrite(fd, line, 0)
        if os.fstat(fd).st_size > len(line):
            os.ftruncate(fd, len(line))
    finally:
        os.close(fd)
    return uid
