"""The kit's one atomic write (autograder/files.py): whole or not at all, with the mode asked for."""
import os
import stat

import pytest

from autograder.files import write_atomic


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_text_and_bytes_are_written_whole_with_the_mode_asked_for(tmp_path):
    write_atomic(tmp_path / "a.md", "ünïcode\r\nkept as written\n")
    write_atomic(tmp_path / "b.zip", b"PK\x03\x04", mode=0o644)
    assert (tmp_path / "a.md").read_bytes() == "ünïcode\r\nkept as written\n".encode("utf-8")
    assert (tmp_path / "b.zip").read_bytes() == b"PK\x03\x04"
    assert (mode_of(tmp_path / "a.md"), mode_of(tmp_path / "b.zip")) == (0o600, 0o644)


def test_a_missing_folder_is_made_private_by_default(tmp_path):
    write_atomic(tmp_path / "out" / "results.json", "{}")
    write_atomic(tmp_path / "dist" / "autograder.zip", b"", folder_mode=0o755)
    assert (mode_of(tmp_path / "out"), mode_of(tmp_path / "dist")) == (0o700, 0o755)


def test_a_link_in_the_files_place_is_replaced_never_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("not mine to overwrite")
    (tmp_path / "feedback.md").symlink_to(target)
    write_atomic(tmp_path / "feedback.md", "the report")
    assert target.read_text() == "not mine to overwrite"
    assert not (tmp_path / "feedback.md").is_symlink() and (tmp_path / "feedback.md").read_text() == "the report"


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    (tmp_path / "gradebook.csv").write_text("old")
    with pytest.raises(TypeError):
        write_atomic(tmp_path / "gradebook.csv", 42)  # neither text nor bytes
    assert (tmp_path / "gradebook.csv").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gradebook.csv"]
