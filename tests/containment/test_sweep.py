"""After a child (``sweep``): what its sandbox uid left in the shared folders and in System V IPC is
removed, and nothing of anyone else's. Root only; these tests need no sandbox."""
import os

import pytest

from autograder.containment import sweep
from autograder.containment.uids import LAST_SANDBOX_UID


# --- what a sandbox uid leaves behind --------------------------------------------------------------

@pytest.fixture
def sandbox_uid():
    if os.getuid() != 0:
        pytest.skip("only root purges a sandbox uid")
    return LAST_SANDBOX_UID - 7  # no child of a real run gets it for two billion children


def test_a_uids_files_in_a_shared_folder_are_removed_and_no_one_elses(tmp_path, sandbox_uid):
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    (shared / "left").write_text("x")
    (shared / "left-folder").mkdir()
    (shared / "left-folder" / "inside").write_text("x")
    (shared / "linked").symlink_to(tmp_path / "victim")
    (tmp_path / "victim").write_text("kept")
    (shared / "someone-elses").write_text("kept")
    for name in ("left", "left-folder", "left-folder/inside"):
        os.chown(shared / name, sandbox_uid, sandbox_uid)
    os.chown(shared / "linked", sandbox_uid, sandbox_uid, follow_symlinks=False)
    sweep.remove_files({sandbox_uid}, folders=[str(shared)])
    assert sorted(p.name for p in shared.iterdir()) == ["someone-elses"]
    assert (tmp_path / "victim").read_text() == "kept", "a link was followed"


def test_a_uids_system_v_shared_memory_is_removed(sandbox_uid):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT
    assert segment >= 0, os.strerror(ctypes.get_errno())
    try:
        # struct shmid_ds begins with struct ipc_perm: key, uid, gid, cuid, cgid, mode (x86_64 and aarch64)
        info = (ctypes.c_uint32 * 64)()
        assert libc.shmctl(segment, 2, info) == 0  # IPC_STAT
        info[1] = sandbox_uid
        assert libc.shmctl(segment, 1, info) == 0  # IPC_SET: the segment is now the sandbox uid's
        sweep.remove_ipc({sandbox_uid})
        with open("/proc/sysvipc/shm") as f:
            ids = [int(line.split()[1]) for line in list(f)[1:]]
        assert segment not in ids, "the uid's shared memory outlived the purge"
    finally:
        libc.shmctl(segment, 0, None)


def test_under_the_kernel_filter_the_purge_skips_the_process_scan_and_nothing_else(sandbox_uid, monkeypatch):
    """A child under the seccomp filter could start no process, so its uid has none once it is reaped: the
    purge does not scan every process on the machine (most of its time), but still removes what the uid left."""
    import ctypes

    scans = []
    monkeypatch.setattr(sweep, "kill_all_of_uid", lambda uid: scans.append(uid) or True)
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT
    assert segment >= 0, os.strerror(ctypes.get_errno())
    try:
        info = (ctypes.c_uint32 * 64)()  # struct ipc_perm first: key, uid, ...
        assert libc.shmctl(segment, 2, info) == 0  # IPC_STAT
        info[1] = sandbox_uid
        assert libc.shmctl(segment, 1, info) == 0  # IPC_SET: the sandbox uid's segment
        assert sweep.purge_uid(sandbox_uid, "uid", layers=["landlock-fs", "seccomp"]) is True
        assert scans == [], "processes were scanned for a uid that could start none"
        with open("/proc/sysvipc/shm") as f:
            assert segment not in [int(line.split()[1]) for line in list(f)[1:]], "the uid's shared memory was kept"
        sweep.purge_uid(sandbox_uid, "uid", layers=["landlock-fs"])
        assert scans == [sandbox_uid], "without the filter the uid's processes were not swept"
    finally:
        libc.shmctl(segment, 0, None)
