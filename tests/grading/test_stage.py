"""Staging: only attention.py and mha.py reach the sandbox, safely, whatever was handed in."""
import os
import re
import stat
import struct
import zipfile

import pytest

from autograder.grading.stage import (MAX_DEPTH, MAX_FILE_BYTES, MAX_SCANNED_ENTRIES, SUBMISSION_FILES, human_size,
                              safe_extract, stage)

ATTENTION = "def scaled_dot_product_attention(query, key, value, mask=None):\n    pass\n"
MHA = "from attention import scaled_dot_product_attention\n"


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def make_zip(path, entries, symlinks=()):
    """A zip with `entries` {name: text} and symlink entries {name: target} named in `symlinks`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
        for name, target in dict(symlinks).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def submission(folder, prefix=""):
    write(folder / prefix / "attention.py", ATTENTION)
    write(folder / prefix / "mha.py", MHA)
    return folder


def staged_names(staged):
    return sorted(os.listdir(staged.dir))


# --- folders --------------------------------------------------------------------------------

def test_a_flat_folder_is_staged_as_is(tmp_path):
    staged = stage(str(submission(tmp_path / "sub")), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "attention.py", "mha.py": "mha.py"}
    assert staged.problems == [], "a clean submission has nothing to report"
    assert (tmp_path / "out" / "attention.py").read_text() == ATTENTION
    assert (tmp_path / "out" / "mha.py").read_text() == MHA


@pytest.mark.parametrize("prefix", ["lab3", "lab3/src", "Downloads/lab3/src", "a/b/c/d/e/f"],
                         ids=["one-deep", "two-deep", "three-deep", "six-deep"])
def test_files_nested_in_folders_are_found(tmp_path, prefix):
    staged = stage(str(submission(tmp_path / "sub", prefix)), str(tmp_path / "out"))
    assert staged.found == {"attention.py": f"{prefix}/attention.py", "mha.py": f"{prefix}/mha.py"}
    assert staged.problems == []
    assert staged_names(staged) == sorted(SUBMISSION_FILES)


def test_files_in_a_zip_three_folders_deep_are_found(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"Downloads/lab3/src/attention.py": ATTENTION,
                                              "Downloads/lab3/src/mha.py": MHA, "Downloads/notes.txt": "x"})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "Downloads/lab3/src/attention.py", "mha.py": "Downloads/lab3/src/mha.py"}
    assert staged.problems == []


def test_files_deeper_than_the_depth_bound_are_not_searched(tmp_path):
    deep = "/".join(["d"] * (MAX_DEPTH + 1))
    write(tmp_path / "sub" / deep / "attention.py", ATTENTION)
    write(tmp_path / "sub" / deep / "mha.py", MHA)
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems == ["the upload is empty: upload attention.py and mha.py"]


def test_a_folder_with_more_entries_than_the_cap_is_searched_only_that_far(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    for i in range(MAX_SCANNED_ENTRIES):
        (sub / f"f{i:05}").touch()
    submission(sub, "zz")  # sorted after every f*: beyond the cap
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems[0] == (f"the upload holds more than {MAX_SCANNED_ENTRIES} files and folders: "
                                  "only the first were searched")


def test_a_notebook_only_upload_is_named_in_one_line(tmp_path):
    write(tmp_path / "sub" / "playground.ipynb", "{}")
    write(tmp_path / "sub" / ".ipynb_checkpoints" / "playground-checkpoint.ipynb", "{}")
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems == ["you uploaded playground.ipynb; upload attention.py and mha.py"]


def test_a_zip_without_the_files_names_what_it_held(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"lab/playground.ipynb": "{}", "lab/a.txt": "", "lab/b.txt": "",
                                              "lab/c.txt": "", "__MACOSX/lab/._playground.ipynb": ""})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.problems == ["you uploaded lab/playground.ipynb, lab/a.txt, lab/b.txt and 1 more file; "
                               "upload attention.py and mha.py"]


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_an_empty_upload_says_so_in_one_line(tmp_path, kind):
    if kind == "folder":
        (tmp_path / "sub" / "empty-folder").mkdir(parents=True)
        source = tmp_path / "sub"
    else:
        source = make_zip(tmp_path / "sub.zip", {})
    staged = stage(str(source), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems == ["the upload is empty: upload attention.py and mha.py"]


def test_a_missing_file_is_reported_and_the_other_still_staged(tmp_path):
    write(tmp_path / "sub" / "attention.py", ATTENTION)
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "attention.py"}
    assert staged.problems == ["mha.py is missing"]
    assert staged_names(staged) == ["attention.py"]


def test_no_other_file_is_ever_staged(tmp_path):
    sub = submission(tmp_path / "sub")
    for shadow in ("conftest.py", "sitecustomize.py", "torch.py", "evil.pth", "usercustomize.py"):
        write(sub / shadow, "open('/tmp/pwned', 'w')\n")
        write(sub / "lab" / shadow, "open('/tmp/pwned', 'w')\n")
    write(sub / "torch" / "__init__.py", "raise SystemExit\n")
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged_names(staged) == sorted(SUBMISSION_FILES), "only the two lab files may be staged"


def test_an_identical_nested_copy_is_no_choice_and_not_reported(tmp_path):
    sub = submission(tmp_path / "sub")
    write(sub / "backup" / "attention.py", ATTENTION)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found["attention.py"] == "attention.py"
    assert staged.problems == []


def test_a_different_nested_copy_is_named_and_the_shallowest_graded(tmp_path):
    sub = submission(tmp_path / "sub")
    write(sub / "old" / "attention.py", "# an older draft\n")
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found["attention.py"] == "attention.py"
    assert (tmp_path / "out" / "attention.py").read_text() == ATTENTION
    assert staged.problems == ["found 2 different copies of attention.py (attention.py, old/attention.py): "
                               "graded attention.py (from the folder holding both files)"]


def test_the_pair_comes_from_the_folder_holding_both_files(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "attention.py", "# a stray draft at the top\n")
    submission(sub, "final")
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "final/attention.py", "mha.py": "final/mha.py"}
    assert staged.problems == ["found 2 different copies of attention.py (attention.py, final/attention.py): "
                               "graded final/attention.py (from the folder holding both files)"]


def test_without_a_folder_holding_both_the_shallowest_copy_is_graded_and_named(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "a" / "b" / "attention.py", "# deeper\n")
    write(sub / "x" / "attention.py", ATTENTION)
    write(sub / "y" / "mha.py", MHA)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "x/attention.py", "mha.py": "y/mha.py"}
    assert staged.problems == ["found 2 different copies of attention.py (x/attention.py, a/b/attention.py): "
                               "graded x/attention.py (the shallowest)"]


def test_two_copies_at_the_same_depth_pick_the_first_path_and_say_so(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "b" / "mha.py", "# b\n")
    write(sub / "a" / "mha.py", "# a\n")
    write(sub / "c" / "attention.py", ATTENTION)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found["mha.py"] == "a/mha.py"
    assert (tmp_path / "out" / "mha.py").read_text() == "# a\n"
    assert staged.problems == ["found 2 different copies of mha.py (a/mha.py, b/mha.py): graded a/mha.py (the shallowest)"]


@pytest.mark.parametrize("misnamed", ["Attention.py", "attention (1).py", "ATTENTION-2.py"])
def test_a_file_misnamed_by_case_or_a_copy_number_is_graded_with_a_note(tmp_path, misnamed):
    """Browsers save a second download as "attention (1).py", Canvas keeps "-1" on a re-upload, and some
    editors capitalise: the file is graded under its own name, and the student is told to fix it."""
    write(tmp_path / "sub" / misnamed, ATTENTION)
    write(tmp_path / "sub" / "mha.py", MHA)
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found == {"attention.py": misnamed, "mha.py": "mha.py"}
    assert (tmp_path / "out" / "attention.py").read_text() == ATTENTION
    assert staged.problems == [f"graded {misnamed} as attention.py: name the file exactly attention.py"]


def test_a_misnamed_copy_in_a_zip_is_graded_with_a_note(tmp_path):
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("lab/mha (1).py", MHA)
        z.writestr("lab/attention.py", ATTENTION)
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "lab/attention.py", "mha.py": "lab/mha (1).py"}
    assert staged.problems == ["graded lab/mha (1).py as mha.py: name the file exactly mha.py"]


def test_the_exact_name_wins_over_a_misnamed_copy(tmp_path):
    write(tmp_path / "sub" / "attention.py", ATTENTION)
    write(tmp_path / "sub" / "Attention (1).py", "# an older copy\n")
    write(tmp_path / "sub" / "mha.py", MHA)
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found["attention.py"] == "attention.py" and staged.problems == []


def test_a_name_that_only_starts_like_a_submission_file_is_not_one(tmp_path):
    write(tmp_path / "sub" / "attention_old.py", ATTENTION)
    write(tmp_path / "sub" / "mha.py", MHA)
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert "attention.py" not in staged.found and staged.problems == ["attention.py is missing"]


def test_macos_junk_and_hidden_folders_are_not_searched(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "__MACOSX" / "attention.py", ATTENTION)
    write(sub / ".git" / "mha.py", MHA)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged_names(staged) == []


# --- symlinks and odd files -----------------------------------------------------------------

def test_a_symlink_to_etc_passwd_is_not_followed(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "mha.py", MHA)
    (sub / "attention.py").symlink_to("/etc/passwd")
    staged = stage(str(sub), str(tmp_path / "out"))
    assert "attention.py" not in staged.found
    assert staged_names(staged) == ["mha.py"], "the symlink's target must not be copied"
    assert staged.problems == ["attention.py is a symlink: ignored", "attention.py is missing"]


def test_a_symlinked_folder_is_not_searched(tmp_path):
    submission(tmp_path / "elsewhere")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "lab").symlink_to(tmp_path / "elsewhere")
    staged = stage(str(tmp_path / "sub"), str(tmp_path / "out"))
    assert staged.found == {}, "files reached through a symlinked folder must not be staged"


def test_a_symlinked_source_is_refused(tmp_path):
    submission(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    staged = stage(str(tmp_path / "link"), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems[0] == "the submission is a symlink: ignored"


def test_a_fifo_named_like_a_submission_file_is_skipped_without_hanging(tmp_path):
    sub = tmp_path / "sub"
    write(sub / "mha.py", MHA)
    os.mkfifo(sub / "attention.py")
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.problems == ["attention.py is not a regular file: ignored", "attention.py is missing"]


# --- size, encoding, permissions ------------------------------------------------------------

def test_a_file_over_the_size_cap_is_refused(tmp_path):
    sub = submission(tmp_path / "sub")
    write(sub / "mha.py", "#" * (MAX_FILE_BYTES + 1))
    staged = stage(str(sub), str(tmp_path / "out"))
    assert "mha.py" not in staged.found
    assert staged_names(staged) == ["attention.py"]
    assert staged.problems == [f"mha.py is too large (over {human_size(MAX_FILE_BYTES)}): not graded"]


def test_a_file_exactly_at_the_size_cap_is_staged(tmp_path):
    sub = submission(tmp_path / "sub")
    write(sub / "mha.py", "#" * MAX_FILE_BYTES)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert staged.found.get("mha.py") == "mha.py"
    assert staged.problems == []


@pytest.mark.parametrize("content", [b"\xef\xbb\xbf" + ATTENTION.encode(), ATTENTION.replace("\n", "\r\n").encode(),
                                     "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + ATTENTION.encode()],
                         ids=["bom", "crlf", "latin-1-cookie"])
def test_what_python_reads_is_staged_without_a_word_byte_for_byte(tmp_path, content):
    sub = submission(tmp_path / "sub")
    write(sub / "attention.py", content)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert (tmp_path / "out" / "attention.py").read_bytes() == content
    assert staged.problems == []


def test_bytes_python_refuses_are_reported_in_one_line_but_copied_byte_for_byte(tmp_path):
    invalid = b"x = 1\nname = 'caf\xe9'\n"
    sub = submission(tmp_path / "sub")
    write(sub / "attention.py", invalid)
    staged = stage(str(sub), str(tmp_path / "out"))
    assert (tmp_path / "out" / "attention.py").read_bytes() == invalid
    assert staged.problems == ["attention.py is not valid UTF-8 (byte 0xe9 at line 2): save it as UTF-8"]


def test_the_staged_folder_is_readable_by_another_user(tmp_path):
    old_umask = os.umask(0o077)
    try:
        staged = stage(str(submission(tmp_path / "sub")), str(tmp_path / "out"))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(staged.dir).st_mode) == 0o755
    for name in SUBMISSION_FILES:
        mode = stat.S_IMODE(os.stat(os.path.join(staged.dir, name)).st_mode)
        assert mode == 0o644, f"{name} has mode {oct(mode)}, the sandbox user could not read it"


def test_the_destination_must_not_exist(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError):
        stage(str(submission(tmp_path / "sub")), str(tmp_path / "out"))


# --- zips -----------------------------------------------------------------------------------

def test_a_zip_is_staged(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"attention.py": ATTENTION, "mha.py": MHA})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "attention.py", "mha.py": "mha.py"}
    assert staged.problems == []
    assert (tmp_path / "out" / "mha.py").read_text() == MHA


def test_a_zip_of_a_folder_is_staged(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"lab3/attention.py": ATTENTION, "lab3/mha.py": MHA,
                                             "__MACOSX/lab3/._mha.py": "junk"})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "lab3/attention.py", "mha.py": "lab3/mha.py"}
    assert staged.problems == []


def test_windows_backslash_paths_in_a_zip_are_folders(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"lab3\\attention.py": ATTENTION, "lab3\\mha.py": MHA})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.found == {"attention.py": "lab3/attention.py", "mha.py": "lab3/mha.py"}


def test_zip_extras_are_never_staged(tmp_path):
    entries = {"attention.py": ATTENTION, "mha.py": MHA, "conftest.py": "x = 1\n",
               "torch.py": "x = 1\n", "sitecustomize.py": "x = 1\n", "hack.pth": "import os\n"}
    staged = stage(str(make_zip(tmp_path / "sub.zip", entries)), str(tmp_path / "out"))
    assert staged_names(staged) == sorted(SUBMISSION_FILES)


def test_a_broken_zip_is_reported(tmp_path):
    write(tmp_path / "sub.zip", b"PK\x03\x04 this is not really a zip")
    staged = stage(str(tmp_path / "sub.zip"), str(tmp_path / "out"))
    assert staged.found == {}
    assert staged.problems == ["sub.zip is not a valid zip file",
                               "no files could be graded: upload attention.py and mha.py"]


def test_zip_entries_climbing_out_with_dotdot_are_refused(tmp_path):
    archive = make_zip(tmp_path / "in" / "sub.zip", {"../attention.py": ATTENTION,
                                                    "lab/../../mha.py": MHA})
    dest = tmp_path / "in" / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest))
    assert problems == ["zip entry ../attention.py points outside the submission: refused",
                        "zip entry lab/../../mha.py points outside the submission: refused"]
    assert not (tmp_path / "in" / "attention.py").exists()
    assert not (tmp_path / "mha.py").exists()
    assert list(dest.iterdir()) == []


def test_zip_entries_with_absolute_paths_are_refused(tmp_path):
    target = tmp_path / "abs" / "attention.py"
    archive = make_zip(tmp_path / "sub.zip", {str(target): ATTENTION, "C:\\Users\\mha.py": MHA})
    dest = tmp_path / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest))
    assert problems == [f"zip entry {target} has an absolute path: refused",
                        "zip entry C:\\Users\\mha.py has an absolute path: refused"]
    assert not target.exists()
    assert list(dest.iterdir()) == []


def test_zip_symlink_entries_are_ignored(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"mha.py": MHA}, symlinks={"attention.py": "/etc/passwd"})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged_names(staged) == ["mha.py"]
    assert staged.problems == ["zip entry attention.py is a symlink: ignored", "attention.py is missing"]


def test_a_zip_bomb_stops_at_the_byte_cap_and_leaves_no_partial_file(tmp_path):
    archive = make_zip(tmp_path / "bomb.zip", {"attention.py": "0" * 50_000})
    dest = tmp_path / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest), max_total_bytes=10 * 1024)
    assert problems == ["the zip expands to more than 10 KiB: extraction stopped"]
    assert list(dest.iterdir()) == [], "a truncated file must not pass for the real one"


def test_a_zip_announcing_more_entries_than_the_cap_is_refused_before_it_is_read(tmp_path):
    archive = make_zip(tmp_path / "many.zip", {f"f{i}.txt": "x" for i in range(5)})
    dest = tmp_path / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest), max_files=3)
    assert problems == ["many.zip holds 5 entries, more than 3: nothing was extracted (zip only your files)"]
    assert list(dest.iterdir()) == []


def test_a_zip64_directory_is_read_for_its_true_entry_count(tmp_path):
    """Over 65,535 entries the classic end record says 0xFFFF; the zip64 record holds the count."""
    archive = tmp_path / "huge.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        for i in range(70_000):
            z.writestr(f"d/{i}", "")
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.problems[0] == "huge.zip holds 70000 entries, more than 1000: nothing was extracted (zip only your files)"


def test_a_central_directory_larger_than_its_entries_need_is_refused(tmp_path):
    archive = make_zip(tmp_path / "long.zip", {"x" * 2000 + f"{i}.txt": "x" for i in range(2)})
    dest = tmp_path / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest), max_files=3)
    assert len(problems) == 1 and re.fullmatch(
        r"long\.zip's list of entries takes 4\.\d KiB, more than 3 entries need: nothing was extracted", problems[0]), problems
    assert list(dest.iterdir()) == []


def understate_entry_count(archive, count):
    """Make the zip's end record claim `count` entries: zipfile reads them all the same."""
    data = bytearray(archive.read_bytes())
    at = data.rfind(b"PK\5\6")
    data[at + 8:at + 12] = struct.pack("<HH", count, count)
    archive.write_bytes(bytes(data))


def test_a_zip_announcing_fewer_entries_than_it_holds_is_refused_whole(tmp_path):
    """zipfile walks the directory's bytes, not its count: the count cannot be trusted to bound the entries."""
    entries = {f"junk/{i}.txt": "x" for i in range(5)}
    archive = make_zip(tmp_path / "sub.zip", {**entries, "attention.py": ATTENTION, "mha.py": MHA})
    understate_entry_count(archive, 3)
    dest = tmp_path / "unzipped"
    dest.mkdir()
    problems = safe_extract(str(archive), str(dest), max_files=3, only=SUBMISSION_FILES)
    assert problems == ["sub.zip announces 3 entries but holds 7: nothing was extracted (zip it again)"]
    assert list(dest.iterdir()) == []


_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")


def two_faced_zip64(path, entries, told_entries, told_size=None):
    """A zip with `entries` (name -> text) and two zip64 end records: the one its locator points at
    (placed before the central directory) announces a single small entry; the one zipfile reads (just
    before the locator) announces `told_entries` entries in `told_size` bytes (the real directory's
    size by default). A reader that follows the locator and zipfile see two different zips."""
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, text in entries.items():
            z.writestr(name, text)
    data = buffer.getvalue()
    end = data.rfind(b"PK\5\6")
    size, offset = struct.unpack_from("<2L", data, end + 12)
    body, directory = data[:offset], data[offset:offset + size]
    decoy_at = len(body)
    decoy = _ZIP64_END.pack(b"PK\6\6", 44, 45, 45, 0, 0, 1, 1, 46 + 12, decoy_at + _ZIP64_END.size)
    directory_at = decoy_at + len(decoy)
    # Local header offsets in the directory are absolute: moving the directory by the decoy's size
    # changes none of them, since the decoy sits after the last local entry.
    told = _ZIP64_END.pack(b"PK\6\6", 44, 45, 45, 0, 0, told_entries, told_entries,
                           size if told_size is None else told_size, directory_at)
    locator = _ZIP64_LOCATOR.pack(b"PK\6\7", 0, decoy_at, 1)
    classic = struct.pack("<4s4H2LH", b"PK\5\6", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    path.write_bytes(body + decoy + directory + told + locator + classic)
    return path


def test_a_zip64_record_is_read_where_zipfile_reads_it(tmp_path):
    """Finding 6a of issue 23: the entry cap read a zip64 record zipfile never uses. 2,000 real entries
    (zipfile would parse them all) behind a record, where the locator points, that announces one."""
    archive = two_faced_zip64(tmp_path / "two.zip", {f"d/{i}": "" for i in range(2000)}, 2000)
    with zipfile.ZipFile(archive) as z:
        assert len(z.infolist()) == 2000, "the test zip is not what zipfile reads"
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.problems[0] == "two.zip holds 2000 entries, more than 1000: nothing was extracted (zip only your files)"


def test_a_small_zip64_announcing_two_million_entries_is_refused_before_zipfile_reads_it(tmp_path, monkeypatch):
    """The same two-faced zip, small but lying: zipfile would read a 94 MB directory. Refused from the end
    records alone, before zipfile.ZipFile parses anything."""
    archive = two_faced_zip64(tmp_path / "liar.zip", {"attention.py": ATTENTION, "mha.py": MHA}, 2_000_002,
                              told_size=94_000_000)
    opened = []
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: opened.append(a) or pytest.fail("zipfile parsed it"))
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged.problems[0] == ("liar.zip holds 2000002 entries, more than 1000: nothing was extracted "
                                  "(zip only your files)"), staged.problems
    assert not opened and staged_names(staged) == []


def test_an_oversize_file_in_a_zip_does_not_stop_the_other_from_being_staged(tmp_path):
    bomb = "0" * (20 * 1024 * 1024)  # over the zip's 16 MiB cap by itself; deflates to about 20 KiB
    archive = make_zip(tmp_path / "sub.zip", {"attention.py": bomb, "mha.py": MHA})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged_names(staged) == ["mha.py"], "mha.py was not extracted after attention.py hit a size cap"
    assert staged.problems == [f"attention.py is too large (over {human_size(MAX_FILE_BYTES)}): not graded"]


def test_an_oversize_file_in_a_zip_is_refused(tmp_path):
    too_large = "#" * (MAX_FILE_BYTES + 1)
    archive = make_zip(tmp_path / "sub.zip", {"attention.py": ATTENTION, "mha.py": too_large})
    staged = stage(str(archive), str(tmp_path / "out"))
    assert staged_names(staged) == ["attention.py"]
    assert staged.problems == [f"mha.py is too large (over {human_size(MAX_FILE_BYTES)}): not graded"]
