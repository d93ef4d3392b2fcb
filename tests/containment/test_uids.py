"""The sandbox uids (``uids``): above every real account, never handed out twice, kept by the zygote
for its final sweep. These tests need no sandbox."""
import mmap
import os

import pytest

from autograder.containment import uids as sandbox_uids
from autograder.containment.isolation import CannotIsolate

UID_MAX = 2 ** 32 - 2  # (uid_t)-1 means "no uid" to the kernel


# --- sandbox uids ------------------------------------------------------------------------------

@pytest.fixture
def uid_state(tmp_path, monkeypatch):
    """The uid counter in a folder of this test's (root-only, as the real one must be)."""
    if os.getuid() != 0:
        pytest.skip("sandbox uids are only allocated when the grader runs as root")
    folder = tmp_path / "state"
    monkeypatch.setattr(sandbox_uids, "UID_STATE", str(folder / "sandbox-uid"))
    return folder


def test_every_sandbox_uid_lies_above_real_accounts_and_below_the_largest_uid(uid_state):
    assert sandbox_uids.FIRST_SANDBOX_UID > 65534, "nobody and every login uid lie below"
    assert sandbox_uids.LAST_SANDBOX_UID <= UID_MAX, "the largest sandbox uid is not a valid uid"
    assert sandbox_uids.allocate_uid() == sandbox_uids.FIRST_SANDBOX_UID
    (uid_state / "sandbox-uid").write_text(f"{sandbox_uids.LAST_SANDBOX_UID}\n")
    assert sandbox_uids.allocate_uid() == sandbox_uids.FIRST_SANDBOX_UID, "past the last uid the counter wraps"


def test_the_uid_counter_is_rewritten_in_place_never_emptied_first(uid_state, monkeypatch):
    """ext4 writes a file that was truncated to zero back to disk at its close: with the disk busy, each
    child's uid took up to 1.6 s (bench/RESULTS.md). The counter is overwritten, and only ever shortened."""
    truncations = []
    real_ftruncate = os.ftruncate
    monkeypatch.setattr(os, "ftruncate", lambda fd, size: truncations.append(size) or real_ftruncate(fd, size))
    first = sandbox_uids.allocate_uid()
    assert sandbox_uids.allocate_uid() == first + 1
    (uid_state / "sandbox-uid").write_text(f"{first + 1}\n\n\n")  # longer than the number: shortened, not emptied
    assert sandbox_uids.allocate_uid() == first + 2
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
            os.write(write_end, b"".join(b"%d\n" % sandbox_uids.allocate_uid() for _ in range(3)))
            os._exit(0)
        forks.append(pid)
    for pid in forks:
        os.waitpid(pid, 0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        uids = [int(line) for line in f.read().split()]
    uids += [sandbox_uids.allocate_uid() for _ in range(2)]  # a later run
    assert len(uids) == 14 and len(set(uids)) == 14, f"a uid was handed out twice: {sorted(uids)}"


def test_the_uid_counter_must_live_where_only_root_writes(uid_state):
    uid_state.mkdir(mode=0o777)
    uid_state.chmod(0o777)
    with pytest.raises(CannotIsolate, match="only root can write"):
        sandbox_uids.allocate_uid()


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
