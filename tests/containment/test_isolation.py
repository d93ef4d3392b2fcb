"""isolation's pure parts: the sandbox uids, the choice of level, and what a sandbox uid could read.

The layers themselves (namespaces, dropped privileges, Landlock) are tested against hostile code
in test_hostile.py; these tests need no sandbox.
"""
import mmap
import os

import pytest

from autograder.containment import isolation

UID_MAX = 2 ** 32 - 2  # (uid_t)-1 means "no uid" to the kernel


# --- sandbox uids ------------------------------------------------------------------------------

@pytest.fixture
def uid_state(tmp_path, monkeypatch):
    """The uid counter in a folder of this test's (root-only, as the real one must be)."""
    if os.getuid() != 0:
        pytest.skip("sandbox uids are only allocated when the grader runs as root")
    folder = tmp_path / "state"
    monkeypatch.setattr(isolation, "UID_STATE", str(folder / "sandbox-uid"))
    return folder


def test_every_sandbox_uid_lies_above_real_accounts_and_below_the_largest_uid(uid_state):
    assert isolation.FIRST_SANDBOX_UID > 65534, "nobody and every login uid lie below"
    assert isolation.LAST_SANDBOX_UID <= UID_MAX, "the largest sandbox uid is not a valid uid"
    assert isolation.allocate_uid() == isolation.FIRST_SANDBOX_UID
    (uid_state / "sandbox-uid").write_text(f"{isolation.LAST_SANDBOX_UID}\n")
    assert isolation.allocate_uid() == isolation.FIRST_SANDBOX_UID, "past the last uid the counter wraps"


def test_the_uid_counter_is_rewritten_in_place_never_emptied_first(uid_state, monkeypatch):
    """ext4 writes a file that was truncated to zero back to disk at its close: with the disk busy, each
    child's uid took up to 1.6 s (bench/RESULTS.md). The counter is overwritten, and only ever shortened."""
    truncations = []
    real_ftruncate = os.ftruncate
    monkeypatch.setattr(os, "ftruncate", lambda fd, size: truncations.append(size) or real_ftruncate(fd, size))
    first = isolation.allocate_uid()
    assert isolation.allocate_uid() == first + 1
    (uid_state / "sandbox-uid").write_text(f"{first + 1}\n\n\n")  # longer than the number: shortened, not emptied
    assert isolation.allocate_uid() == first + 2
    assert (uid_state / "sandbox-uid").read_text() == f"{first + 2}\n"
    assert 0 not in truncations, f"the counter was emptied before being written: {truncations}"


def test_a_uid_is_never_handed_out_twice_across_forks_and_runs(uid_state):
    """The per-submission graders are forks of the batch process: each fork's uids must be new to all
    the others (a counter kept in memory restarted at each fork, and the next student met the last
    one's keyring), and so must a later run's."""
    read_end, write_end = os.pipe()
    forks = []
    for _ in range(4):  # four graders at once, three children each
        pid = os.fork()
        if pid == 0:
            os.write(write_end, b"".join(b"%d\n" % isolation.allocate_uid() for _ in range(3)))
            os._exit(0)
        forks.append(pid)
    for pid in forks:
        os.waitpid(pid, 0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        uids = [int(line) for line in f.read().split()]
    uids += [isolation.allocate_uid() for _ in range(2)]  # a later run
    assert len(uids) == 14 and len(set(uids)) == 14, f"a uid was handed out twice: {sorted(uids)}"


def test_the_uid_counter_must_live_where_only_root_writes(uid_state):
    uid_state.mkdir(mode=0o777)
    uid_state.chmod(0o777)
    with pytest.raises(isolation.CannotIsolate, match="only root can write"):
        isolation.allocate_uid()


def test_a_zygote_keeps_the_uids_its_forks_allocated(uid_state):
    """The final sweep (``Zygote.kill_sandbox_users``) must know the uids the forked graders took."""
    from autograder.containment.zygote import LEDGER_BYTES, Zygote

    zygote = Zygote.__new__(Zygote)  # its ledger alone: no interpreter is started
    zygote.ledger = mmap.mmap(-1, LEDGER_BYTES)
    pid = os.fork()
    if pid == 0:
        zygote.next_uid(slot=1)
        os._exit(0)
    os.waitpid(pid, 0)
    mine = zygote.next_uid(slot=0)
    assert len(zygote.uids()) == 2 and mine in zygote.uids() and len(set(zygote.uids())) == 2


# --- choosing the level ------------------------------------------------------------------------

@pytest.fixture
def no_detection(monkeypatch):
    """Detection would try each level in a throwaway child: here it must not be reached."""
    def refuse():
        raise AssertionError("detect_level ran although AUTOGRADER_ISOLATION chose the level")

    monkeypatch.setattr(isolation, "detect_level", refuse)
    return monkeypatch


def test_without_autograder_isolation_the_strongest_level_that_works_is_chosen(monkeypatch):
    monkeypatch.delenv("AUTOGRADER_ISOLATION", raising=False)
    monkeypatch.setattr(isolation, "detect_level", lambda: "uid")
    assert isolation.choose_level() == "uid"


def test_autograder_isolation_chooses_the_level(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "namespaces")
    assert isolation.choose_level() == "namespaces"


def test_an_unknown_level_is_refused_with_the_levels_there_are(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "chroot")
    with pytest.raises(SystemExit) as raised:
        isolation.choose_level()
    assert "chroot" in str(raised.value.code) and "namespaces, uid, rlimits" in str(raised.value.code)


def test_rlimits_is_refused_to_root_who_would_run_student_code_as_root(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "rlimits")
    no_detection.setattr(isolation.os, "getuid", lambda: 0)
    with pytest.raises(isolation.CannotIsolate, match="as root"):
        isolation.choose_level()


def test_rlimits_is_allowed_to_an_unprivileged_grader(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "rlimits")
    no_detection.setattr(isolation.os, "getuid", lambda: 1000)
    assert isolation.choose_level() == "rlimits"


def test_the_uid_level_needs_root(no_detection):
    no_detection.setenv("AUTOGRADER_ISOLATION", "uid")
    no_detection.setattr(isolation.os, "getuid", lambda: 1000)
    with pytest.raises(isolation.CannotIsolate, match="needs root"):
        isolation.choose_level()


# --- what a sandbox uid could read -------------------------------------------------------------

def test_a_folder_others_may_read_is_exposed(open_tmp):
    (open_tmp / "kit").mkdir(mode=0o755)
    os.chmod(open_tmp / "kit", 0o755)  # whatever the umask
    assert isolation.exposed_to_sandbox([str(open_tmp / "kit")]) == [str(open_tmp / "kit")]


def test_a_folder_closed_to_others_is_not_exposed(open_tmp):
    (open_tmp / "kit").mkdir()
    os.chmod(open_tmp / "kit", 0o750)
    assert isolation.exposed_to_sandbox([str(open_tmp / "kit")]) == []


def test_a_readable_folder_inside_a_closed_one_is_not_exposed(open_tmp):
    (open_tmp / "closed" / "kit").mkdir(parents=True)
    os.chmod(open_tmp / "closed", 0o700)
    os.chmod(open_tmp / "closed" / "kit", 0o755)
    assert isolation.exposed_to_sandbox([str(open_tmp / "closed" / "kit")]) == []


def test_a_readable_file_is_exposed_and_a_missing_path_is_not(open_tmp):
    (open_tmp / "grades.csv").write_text("id,score\n")
    os.chmod(open_tmp / "grades.csv", 0o644)
    paths = [str(open_tmp / "grades.csv"), str(open_tmp / "missing"), ""]
    assert isolation.exposed_to_sandbox(paths) == [str(open_tmp / "grades.csv")]


# --- what a sandbox uid leaves behind --------------------------------------------------------------

@pytest.fixture
def sandbox_uid():
    if os.getuid() != 0:
        pytest.skip("only root purges a sandbox uid")
    return isolation.LAST_SANDBOX_UID - 7  # no child of a real run gets it for two billion children


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
    isolation.remove_files({sandbox_uid}, folders=[str(shared)])
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
        isolation.remove_ipc({sandbox_uid})
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
    monkeypatch.setattr(isolation, "kill_all_of_uid", lambda uid: scans.append(uid) or True)
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT
    assert segment >= 0, os.strerror(ctypes.get_errno())
    try:
        info = (ctypes.c_uint32 * 64)()  # struct ipc_perm first: key, uid, ...
        assert libc.shmctl(segment, 2, info) == 0  # IPC_STAT
        info[1] = sandbox_uid
        assert libc.shmctl(segment, 1, info) == 0  # IPC_SET: the sandbox uid's segment
        assert isolation.purge_uid(sandbox_uid, "uid", layers=["landlock-fs", "seccomp"]) is True
        assert scans == [], "processes were scanned for a uid that could start none"
        with open("/proc/sysvipc/shm") as f:
            assert segment not in [int(line.split()[1]) for line in list(f)[1:]], "the uid's shared memory was kept"
        isolation.purge_uid(sandbox_uid, "uid", layers=["landlock-fs"])
        assert scans == [sandbox_uid], "without the filter the uid's processes were not swept"
    finally:
        libc.shmctl(segment, 0, None)
