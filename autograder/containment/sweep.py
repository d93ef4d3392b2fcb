"""After a child (root only): nothing of its sandbox uid survives, neither a process nor what it left.

At the uid level, every process of the uid is killed by pid; its System V IPC objects, its files
at the top of the shared folders and its keys are removed. With namespaces only the keys, which
live in the host's user namespace when the grader is root.

May import: the standard library, ``kernel`` and ``uids``.
"""
import ctypes
import os
import platform
import shutil
import signal

from autograder.containment.kernel import in_throwaway_child, in_user_namespace, libc
from autograder.containment.uids import FIRST_SANDBOX_UID

# --- killing a sandbox uid's processes (uid level, root only) -----------------------------------

def process_uids():
    """The real uid of every live process this one can see."""
    for pid in _pids():
        uid, _ = _uid_and_state(pid)
        if uid is not None:
            yield uid


def kill_all_of_uid(uid, max_rounds=200):
    """Kill every process of ``uid``, as root, by pid: a process of that uid cannot signal root, so
    nothing it runs can kill the sweeper first (as it can kill a sweeper that became ``uid`` to call
    kill(-1)). Without a PID namespace a child can leave its process group and session; not its uid.

    Stop first, round after round, until a scan finds none of them running: a stopped process can
    neither fork nor wake another, so the kill that follows reaches all of them. True when done."""
    if os.getuid() != 0 or uid == 0:
        return False
    for _ in range(max_rounds):
        running = [pid for pid in _pids() if _uid_and_state(pid) == (uid, "running")]
        if not running:
            break
        for pid in running:
            _signal_if_still(pid, uid, signal.SIGSTOP)
    else:
        return False
    for pid in _pids():
        if _uid_and_state(pid)[0] == uid:
            _signal_if_still(pid, uid, signal.SIGKILL)
    return True


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _uid_and_state(pid):
    """(real uid, "running" or "stopped") of a live process; (None, None) once it is gone or a zombie.
    From /proc/<pid>/status: /proc/<pid> itself belongs to root when the process is not dumpable."""
    uid = state = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    code = line.split()[1]
                    if code in ("Z", "X"):
                        return None, None
                    state = "stopped" if code in ("T", "t") else "running"
                elif line.startswith("Uid:"):
                    uid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        return None, None
    return uid, state


def _signal_if_still(pid, uid, sig):
    """Signal ``pid`` only if it still is a process of ``uid``: through a pidfd, opened before the check,
    so a pid reused in between (by the grader, say) is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # gone
    try:
        if _uid_and_state(pid)[0] == uid:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass  # exited after the check: nothing to signal
    finally:
        os.close(fd)


# --- what a sandbox uid leaves behind (root only) ------------------------------------------------

# World-writable places outside every sandbox folder, where a uid without Landlock could leave files.
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")
_IPC_RMID = 0
_KEYCTL_GET_KEYRING_ID, _KEYCTL_CLEAR = 0, 7
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}


def purge_uid(uid, level, layers=()):
    """When a child has ended: nothing of its ``uid`` may reach a later child. At the uid level, kill
    every process of the uid (True when done), remove its System V IPC objects, its files at the top
    of the shared folders and its keys; with namespaces (whose IPC, mounts and processes die with
    them) only the keys, which live in the host's user namespace when the grader is root.

    ``layers``: the child's confinement (``confine.LAYERS``). Under the seccomp filter the uid had
    one process, the child, which is reaped by now: the filter refused every way to start another
    (fork, vfork, clone, clone3, execve, io_uring), and no other process ever had this uid (it is
    new, ``allocate_uid``). The scan of every process on the machine, most of the purge's time, is
    then skipped; the run's final sweep (``Zygote.kill_sandbox_users``) still makes it."""
    if os.getuid() != 0 or in_user_namespace():
        return False
    if level != "uid":
        remove_keys({uid})
        return False
    swept = True if "seccomp" in layers else kill_all_of_uid(uid)
    remove_leftovers({uid})
    return swept


def remove_leftovers(uids):
    """Remove the System V IPC objects, files in ``SHARED_FOLDERS`` and keys of ``uids`` (their
    processes are gone: nothing can make more meanwhile)."""
    uids = {uid for uid in uids if uid >= FIRST_SANDBOX_UID}  # never a real account's
    if uids and os.getuid() == 0:
        remove_ipc(uids)
        remove_files(uids)
        remove_keys(uids)


def remove_ipc(uids):
    """Every shared memory segment, message queue and semaphore set that a uid of ``uids`` created or owns."""
    for kind, remove in (("shm", lambda i: libc.shmctl(i, _IPC_RMID, None)),
                         ("msg", lambda i: libc.msgctl(i, _IPC_RMID, None)),
                         ("sem", lambda i: libc.semctl(i, 0, _IPC_RMID))):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header, *rows = [line.split() for line in f]
        except (OSError, ValueError):
            continue
        owner, creator = header.index("uid"), header.index("cuid")
        for row in rows:
            if int(row[owner]) in uids or int(row[creator]) in uids:
                remove(int(row[1]))  # its id


def remove_files(uids, folders=SHARED_FOLDERS):
    """Whatever a uid of ``uids`` owns at the top of ``folders`` (a folder with all it holds). Sticky
    folders: no other user can swap such an entry between the check and the removal."""
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid not in uids:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)  # by descriptor: a link inside is removed, never followed
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def remove_keys(uids):
    """Empty the user and user-session keyrings of each uid of ``uids`` that holds keys. Only the uid
    itself may (root cannot clear another user's keyring): a throwaway process becomes it to do so."""
    number = _SYS_KEYCTL.get(platform.machine())
    try:
        with open("/proc/key-users") as f:
            holders = {int(line.split(":")[0]) for line in f if line.strip()}
    except (OSError, ValueError):
        return
    for uid in sorted(set(uids) & holders):
        def clear(uid=uid):
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for spec in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
                keyring = libc.syscall(number, _KEYCTL_GET_KEYRING_ID, ctypes.c_long(spec), 0)
                if keyring > 0:
                    libc.syscall(number, _KEYCTL_CLEAR, keyring)
            return True

        if number is not None:
            in_throwaway_child(clear)
