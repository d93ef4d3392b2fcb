"""Discovery: which submissions a PATH holds, what they are called, and who handed them in."""
import os
import zipfile
from pathlib import Path

import pytest

from autograder.grading.discover import SubmissionSource, Submitter, UsageError, discover, discovered
from autograder.grading.stage import stage

ATTENTION = "def scaled_dot_product_attention(query, key, value, mask=None):\n    pass\n"
MHA = "from attention import scaled_dot_product_attention\n"

# The shape of a Gradescope "Download submissions" export's metadata: Ruby symbols as keys,
# Rails timestamps, a group submission, and Ruby-tagged values a safe loader must get past.
GRADESCOPE_METADATA = """\
submission_231245781:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2025-10-14 22:41:07.334051000 -07:00
  :score: !ruby/object:BigDecimal 18:0.875e2
  :history:
  - :created_at: 2025-10-13 19:02:44.120377000 -07:00
    :score: !ruby/object:BigDecimal 18:0.5e2
submission_231246990:
  :submitters:
  - :name: Alan Turing
    :sid: 1912
    :email: alan@example.edu
  - :name: Grace Hopper
    :sid: '1906'
    :email: grace@example.edu
  :created_at: 2025-10-15 09:12:55.001200000 -07:00
  :score:
  :history: []
"""
ADA = (Submitter("Ada Lovelace", "ada@example.edu", "1815", submitted_at="2025-10-14T22:41:07.334051-07:00"),)
TURING_HOPPER = (Submitter("Alan Turing", "alan@example.edu", "1912", submitted_at="2025-10-15T09:12:55.001200-07:00"),
                 Submitter("Grace Hopper", "grace@example.edu", "1906", submitted_at="2025-10-15T09:12:55.001200-07:00"))


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def submission(folder, prefix=""):
    write(folder / prefix / "attention.py", ATTENTION)
    write(folder / prefix / "mha.py", MHA)
    return folder


def zip_folder(folder, path, under=""):
    """Zip everything below `folder`, stored under the prefix `under`."""
    with zipfile.ZipFile(path, "w") as archive:
        for entry in sorted(folder.rglob("*")):  # folders too: an empty one is a submission
            archive.write(entry, f"{under}{entry.relative_to(folder)}")
    return path


def gradescope_export(folder):
    write(folder / "submission_metadata.yml", GRADESCOPE_METADATA)
    submission(folder / "submission_231245781")
    submission(folder / "submission_231246990", "lab3")
    return folder


def ids(sources):
    return [s.id for s in sources]


# --- one submission -------------------------------------------------------------------------

def test_a_folder_with_the_files_is_one_submission(tmp_path):
    folder = submission(tmp_path / "alice")
    assert discover([str(folder)]) == [SubmissionSource("alice", str(folder))]


@pytest.mark.parametrize("prefix", ["lab3", "lab3/src", "Downloads/lab3/src", "a/b/c/d/e"],
                         ids=["one-deep", "two-deep", "three-deep", "five-deep"])
def test_a_single_chain_of_folders_down_to_the_files_is_one_submission(tmp_path, prefix):
    folder = submission(tmp_path / "alice", prefix)
    write(folder / "__MACOSX" / "lab3" / "._attention.py", "junk")
    assert discover([str(folder)]) == [SubmissionSource("alice", str(folder))]


def test_a_zip_with_the_files_is_one_submission_named_after_the_zip(tmp_path):
    archive = zip_folder(submission(tmp_path / "src"), tmp_path / "alice.zip")
    assert discover([str(archive)], scratch=str(tmp_path)) == [SubmissionSource("alice", str(archive))]


def test_a_zip_of_a_folder_is_one_submission(tmp_path):
    archive = zip_folder(submission(tmp_path / "src"), tmp_path / "alice.zip", under="lab3/")
    assert discover([str(archive)], scratch=str(tmp_path)) == [SubmissionSource("alice", str(archive))]


def test_a_zip_of_a_folder_three_deep_is_one_submission(tmp_path):
    archive = zip_folder(submission(tmp_path / "src"), tmp_path / "alice.zip", under="Downloads/lab3/src/")
    assert discover([str(archive)], scratch=str(tmp_path)) == [SubmissionSource("alice", str(archive))]


def test_a_folder_without_any_submission_inside_is_one_submission_with_files_missing(tmp_path):
    write(tmp_path / "alice" / "notes.txt", "I ran out of time\n")
    assert ids(discover([str(tmp_path / "alice")])) == ["alice"]


# --- batches --------------------------------------------------------------------------------

def make_batch(batch):
    submission(batch / "alice")
    submission(batch / "carol", "lab3/src")
    (batch / "dave").mkdir()                                   # handed in nothing
    zip_folder(submission(batch.parent / "bob-src"), batch / "bob.zip", under="lab3/")
    write(batch / "erin.zip", b"this is not a zip file")       # broken upload
    write(batch / "README.md", "grading notes\n")               # not a submission
    submission(batch / "__MACOSX" / "ghost")
    return batch


def test_a_batch_folder_lists_every_sub_folder_and_zip_sorted(tmp_path):
    batch = make_batch(tmp_path / "batch")
    sources = discover([str(batch)])
    assert ids(sources) == ["alice", "bob", "carol", "dave", "erin"]
    assert [s.path for s in sources] == [str(batch / "alice"), str(batch / "bob.zip"),
                                         str(batch / "carol"), str(batch / "dave"),
                                         str(batch / "erin.zip")]
    assert all(s.submitters == () for s in sources), "only Gradescope exports name students"


def test_an_empty_sub_folder_is_listed_and_staging_says_what_is_missing(tmp_path):
    batch = make_batch(tmp_path / "batch")
    dave = next(s for s in discover([str(batch)]) if s.id == "dave")
    staged = stage(dave.path, str(tmp_path / "staged"))
    assert staged.problems == ["the upload is empty: upload attention.py and mha.py"]


def test_a_broken_zip_is_listed_and_staging_reports_it(tmp_path):
    batch = make_batch(tmp_path / "batch")
    erin = next(s for s in discover([str(batch)]) if s.id == "erin")
    staged = stage(erin.path, str(tmp_path / "staged"))
    assert staged.problems[0] == "erin.zip is not a valid zip file"


def test_a_batch_zip_is_extracted_into_the_scratch_folder_and_removed_afterwards(tmp_path):
    archive = zip_folder(make_batch(tmp_path / "batch"), tmp_path / "class.zip", under="class/")
    with discovered([str(archive)]) as sources:
        assert ids(sources) == ["alice", "bob", "carol", "dave", "erin"]
        assert all(os.path.exists(s.path) for s in sources)
        staged = stage(sources[2].path, str(tmp_path / "carol"))
        assert staged.found == {"attention.py": "lab3/src/attention.py", "mha.py": "lab3/src/mha.py"}
    assert not any(os.path.exists(s.path) for s in sources), "the extracted batch must be cleaned up"


def test_the_order_does_not_depend_on_creation_order(tmp_path):
    for name in ("zed", "mia", "abe"):
        (tmp_path / "batch" / name).mkdir(parents=True)
    assert ids(discover([str(tmp_path / "batch")])) == ["abe", "mia", "zed"]


def test_symlinks_in_a_batch_are_not_followed(tmp_path):
    submission(tmp_path / "secret")
    batch = tmp_path / "batch"
    submission(batch / "alice")
    submission(batch / "bob")
    (batch / "mallory").symlink_to(tmp_path / "secret")
    (batch / "trudy.zip").symlink_to(tmp_path / "secret.zip")
    assert ids(discover([str(batch)])) == ["alice", "bob"]


# --- Gradescope -----------------------------------------------------------------------------

def test_a_gradescope_export_folder_is_named_by_submission_id_with_its_students(tmp_path):
    export = gradescope_export(tmp_path / "assignment_4242_export")
    assert discover([str(export)], export="gradescope") == [
        SubmissionSource("231245781", str(export / "submission_231245781"), ADA),
        SubmissionSource("231246990", str(export / "submission_231246990"), TURING_HOPPER),
    ]


def test_a_gradescope_export_zip_is_read_through_its_top_folder(tmp_path):
    export = gradescope_export(tmp_path / "export")
    archive = zip_folder(export, tmp_path / "export.zip", under="assignment_4242_export/")
    with discovered([str(archive)], export="gradescope") as sources:
        assert ids(sources) == ["231245781", "231246990"]
        assert [s.submitters for s in sources] == [ADA, TURING_HOPPER]
        assert [os.path.basename(s.path) for s in sources] == ["submission_231245781",
                                                               "submission_231246990"]


def test_a_gradescope_export_of_one_submission_is_still_a_batch(tmp_path):
    export = tmp_path / "export"
    write(export / "submission_metadata.yml", GRADESCOPE_METADATA)
    submission(export / "submission_231245781")
    assert discover([str(export)], export="gradescope") == [
        SubmissionSource("231245781", str(export / "submission_231245781"), ADA)]


def test_unreadable_gradescope_metadata_is_a_usage_error(tmp_path):
    export = gradescope_export(tmp_path / "export")
    write(export / "submission_metadata.yml", "submission_1: [unclosed\n")
    with pytest.raises(UsageError, match=r"^cannot read .*submission_metadata\.yml: [^\n]*$"):
        discover([str(export)], export="gradescope")


# --- forcing a layout -----------------------------------------------------------------------

def test_layout_single_reads_a_batch_as_one_submission(tmp_path):
    batch = make_batch(tmp_path / "batch")
    assert discover([str(batch)], layout="single") == [SubmissionSource("batch", str(batch))]


def test_layout_batch_reads_a_lone_student_folder_as_a_batch_of_one(tmp_path):
    submission(tmp_path / "batch" / "alice")
    assert ids(discover([str(tmp_path / "batch")])) == ["batch"], "auto: a single chain is one submission"
    assert ids(discover([str(tmp_path / "batch")], layout="batch")) == ["alice"]


def test_layout_batch_on_a_folder_without_submissions_is_a_usage_error(tmp_path):
    submission(tmp_path / "alice")
    with pytest.raises(UsageError, match="no submissions in"):
        discover([str(tmp_path / "alice")], layout="batch")


def test_an_unknown_layout_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown layout 'flat'"):
        discover([str(tmp_path)], layout="flat")


# --- several PATHs --------------------------------------------------------------------------

def test_several_paths_are_concatenated_with_unique_ids(tmp_path):
    submission(tmp_path / "monday" / "alice")
    submission(tmp_path / "monday" / "bob")
    submission(tmp_path / "tuesday" / "alice")
    submission(tmp_path / "tuesday" / "alice-2")
    sources = discover([str(tmp_path / "monday"), str(tmp_path / "tuesday")])
    assert ids(sources) == ["alice", "bob", "alice-3", "alice-2"]
    assert sources[2].path == str(tmp_path / "tuesday" / "alice"), "the later duplicate is renamed"


def test_a_folder_and_a_zip_with_the_same_name_get_distinct_ids(tmp_path):
    batch = tmp_path / "batch"
    submission(batch / "alice")
    zip_folder(submission(tmp_path / "src"), batch / "alice.zip")
    sources = discover([str(batch)])
    assert ids(sources) == ["alice", "alice-2"]
    assert sources[1].path == str(batch / "alice.zip")


# --- bad paths ------------------------------------------------------------------------------

def test_a_path_that_does_not_exist_is_a_usage_error(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(UsageError) as error:
        discover([missing])
    assert str(error.value) == f"no such file or folder: {missing}"


def test_a_broken_zip_given_as_path_is_a_usage_error(tmp_path):
    broken = write(tmp_path / "class.zip", b"PK not really")
    with pytest.raises(UsageError) as error:
        discover([str(broken)])
    assert str(error.value) == f"not a zip file: {broken}"


def test_a_plain_file_given_as_path_is_a_usage_error(tmp_path):
    file = write(tmp_path / "attention.py", ATTENTION)
    with pytest.raises(UsageError) as error:
        discover([str(file)])
    assert str(error.value) == f"not a folder or .zip file: {file}"


def test_no_path_at_all_is_a_usage_error():
    with pytest.raises(UsageError, match="no submission PATH given"):
        discover([])


# --- a tampered export (issue 23, 6b) ---------------------------------------------------------

# 9 levels of 9 aliases each: 605 bytes of YAML that name a string of 9**9 * 2 characters.
ALIAS_BOMB = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")) + \
    "submission_1:\n  :submitters:\n  - :name: *i\n"


def test_yaml_aliases_in_gradescope_metadata_are_refused(tmp_path):
    """An alias repeats a whole subtree: a few hundred bytes of them become hundreds of MB in the grader."""
    export = gradescope_export(tmp_path / "export")
    write(export / "submission_metadata.yml", ALIAS_BOMB)
    with pytest.raises(UsageError, match=r"^cannot read .*submission_metadata\.yml: aliases \(\*name\) are not "
                                         r"allowed [^\n]*$"):
        discover([str(export)], export="gradescope")


def test_gradescope_metadata_past_its_size_cap_is_refused_unread(tmp_path, monkeypatch):
    from autograder.grading import discover as module

    monkeypatch.setattr(module, "METADATA_MAX_BYTES", 1024)
    export = gradescope_export(tmp_path / "export")
    write(export / "submission_metadata.yml", GRADESCOPE_METADATA + "#" * 1024 + "\n")
    with pytest.raises(UsageError, match=r"larger than 0 MiB, which no Gradescope export is$"):
        discover([str(export)], export="gradescope")


def test_gradescope_metadata_nested_too_deeply_is_a_usage_error(tmp_path):
    export = gradescope_export(tmp_path / "export")
    write(export / "submission_metadata.yml", "submission_1: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UsageError, match=r"^cannot read .*: nested too deeply$"):
        discover([str(export)], export="gradescope")


def test_submitter_fields_from_the_metadata_are_bounded(tmp_path):
    export = gradescope_export(tmp_path / "export")
    long_name = "A" * 7_000_000  # a 7 MB name made a 15 MB results.json and 17 MB pages
    write(export / "submission_metadata.yml",
          GRADESCOPE_METADATA.replace("Ada Lovelace", long_name).replace("'1815'", "'" + "9" * 500 + "'"))
    ada = discover([str(export)], export="gradescope")[0].submitters[0]
    assert len(ada.name) == 200 and ada.name.endswith("…") and len(ada.sid) == 200
    assert ada.email == "ada@example.edu"


# --- what LMS downloads look like -------------------------------------------------------------

def test_a_folder_holding_one_zip_is_graded_as_the_zips_contents(tmp_path):
    """alice/submission.zip, what `make submit` builds, beside bob's plain files."""
    batch = tmp_path / "class"
    (batch / "alice").mkdir(parents=True)
    zip_folder(submission(tmp_path / "src"), batch / "alice" / "submission.zip")
    submission(batch / "bob")
    sources = discover([str(batch)])
    assert [(s.id, s.path) for s in sources] == [("alice", str(batch / "alice" / "submission.zip")),
                                                 ("bob", str(batch / "bob"))]
    staged = stage(sources[0].path, str(tmp_path / "staged"))
    assert sorted(staged.found) == ["attention.py", "mha.py"], staged.problems


def test_a_lone_folder_holding_one_zip_is_one_submission_named_after_the_folder(tmp_path):
    folder = tmp_path / "alice"
    folder.mkdir()
    zip_folder(submission(tmp_path / "src"), folder / "submission.zip")
    assert discover([str(folder)]) == [SubmissionSource("alice", str(folder / "submission.zip"))]


def canvas_download(folder):
    """Canvas's flat download: <lastfirst>_[LATE_]<userid>_<submissionid>_<file>, a -1 on a re-upload."""
    write(folder / "lovelaceada_1815_9001_attention.py", ATTENTION)
    write(folder / "lovelaceada_1815_9001_mha-1.py", MHA)
    write(folder / "turingalan_LATE_1912_9002_attention.py", ATTENTION)
    write(folder / "turingalan_LATE_1912_9002_mha.py", MHA)
    zip_folder(submission(folder.parent / "src"), folder / "hoppergrace_1906_9003_submission.zip")
    return folder


def test_a_canvas_download_is_one_submission_per_student_with_the_canvas_user_id(tmp_path):
    sources = discover([str(canvas_download(tmp_path / "canvas"))], export="canvas")
    assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912"]
    who = {s.id: s.submitters for s in sources}
    assert who["lovelaceada_1815"] == (Submitter("lovelaceada", "", "", "canvas", "1815", lms_file_id="9001",
                                                 lms_file_name="attention.py"),)
    assert who["hoppergrace_1906"][0].lms_file_name == "submission.zip"
    assert who["turingalan_1912"][0].late and not who["lovelaceada_1815"][0].late


def test_a_canvas_submitter_keeps_the_attachment_id_its_re_upload_matches_feedback_by():
    from autograder.grading import lms
    assert lms.flat_file("turingalan_LATE_1912_9002_mha-1.py").file_id == "9002"


def test_each_canvas_student_is_staged_from_their_own_files_under_their_own_names(tmp_path):
    with discovered([str(canvas_download(tmp_path / "canvas"))], export="canvas") as sources:
        for source in sources:
            staged = stage(source.path, str(tmp_path / f"staged-{source.id}"))
            assert sorted(staged.found) == ["attention.py", "mha.py"], (source.id, staged.problems)


def test_a_canvas_re_upload_of_a_file_is_graded_in_place_of_the_earlier_copy(tmp_path):
    folder = tmp_path / "canvas"
    write(folder / "nunezjose_2002_9009_attention.py", ATTENTION)
    write(folder / "nunezjose_2002_9009_mha.py", "# the first upload\n")
    write(folder / "nunezjose_2002_9010_mha-1.py", MHA)
    with discovered([str(folder)], export="canvas") as [source]:
        assert (Path(source.path) / "mha.py").read_text() == MHA


def test_moodle_folders_keep_the_participant_id(tmp_path):
    export = tmp_path / "moodle"
    submission(export / "Zoë Ångström_482913_assignsubmission_file_")
    folder = export / "Ada Lovelace_482914_assignsubmission_file_"
    folder.mkdir(parents=True)
    zip_folder(submission(tmp_path / "src"), folder / "submission.zip")
    sources = discover([str(export)], export="moodle")
    assert [(s.id, s.submitters[0].lms, s.submitters[0].lms_id) for s in sources] == [
        ("Ada Lovelace_482914", "moodle", "482914"), ("Zoë Ångström_482913", "moodle", "482913")]
    assert sources[0].path == str(folder / "submission.zip")


def test_a_flat_moodle_download_is_one_submission_per_participant(tmp_path):
    export = tmp_path / "moodle"
    for name in ("attention.py", "mha.py"):
        write(export / f"Ada Lovelace_482914_assignsubmission_file_{name}", ATTENTION)
    write(export / "Alan Turing_482915_assignsubmission_file_notes.txt", "no code")
    with discovered([str(export)], export="moodle") as sources:
        assert [(s.id, s.submitters[0].lms_id) for s in sources] == [("Ada Lovelace_482914", "482914"),
                                                                    ("Alan Turing_482915", "482915")]
        assert sorted(os.listdir(sources[0].path)) == ["attention.py", "mha.py"]


# --- each LMS's own naming grammar (issue 48) ------------------------------------------------
# Read from source, not run against a live LMS:
# - Canvas, instructure/canvas-lms lib/content_zipper.rb @05e9653c (get_filename, add_upload_submission,
#   sanitize_user_name): "<lastfirst>[_LATE]_<user_id>_<attachment id>_<display name>", lastfirst with every
#   "_<digits>_" run written as "<digits>"; app/models/assignment.rb infer_comment_context_from_filename (as
#   indexed): split on "_", the first two all-digit parts are the user id and the attachment id.
# - Moodle, moodle/moodle mod/assign/locallib.php download_submissions (as indexed): the prefix is
#   str_replace('_', ' ', fullname) . '_' . uniqueid, then "_assignsubmission_<plugin>_".

def test_a_canvas_students_own_file_name_never_changes_how_the_class_is_read(tmp_path):
    """Canvas's prefix is fixed (content_zipper.rb get_filename): a tail that spells Moodle's marker is still
    that Canvas student's file, and every student of the download is found."""
    folder = canvas_download(tmp_path / "canvas")
    write(folder / "lovelaceada_1815_9004_notes_7_assignsubmission_file_attention.py", "# notes\n")
    with discovered([str(folder)], export="canvas") as sources:
        assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912"]
        assert sources.notes == ["canvas: read as a Canvas download: 3 students, named by its file names"]
        ada = next(s for s in sources if s.id == "lovelaceada_1815")
        assert "notes_7_assignsubmission_file_attention.py" in os.listdir(ada.path)


def test_a_canvas_lastfirst_may_hold_underscores_and_the_ids_are_the_first_two_numbers():
    """Canvas keeps word characters (underscores too) of the sortable name, and writes a "_<digits>_" run as
    "<digits>", so its re-upload reader takes the first two all-digit parts as the user id and the attachment id
    (assignment.rb infer_comment_context_from_filename)."""
    from autograder.grading import lms
    who = lms.flat_file("o_brienpat_LATE_2024_77_mha_v2_3.py")
    assert (who.lms, who.name, who.user, who.file_id, who.file, who.late) == (
        "canvas", "o_brienpat", "2024", "77", "mha_v2_3.py", True)


def test_a_canvas_text_entry_belongs_to_its_student():
    """content_zipper.rb add_text_or_url: "<lastfirst>_<user id>_text.html", no attachment id."""
    from autograder.grading import lms
    who = lms.flat_file("lovelaceada_1815_text.html")
    assert (who.lms, who.user, who.file, who.file_id) == ("canvas", "1815", "text.html", "")


def test_the_moodle_prefix_ends_at_the_first_underscore_whatever_the_file_is_called():
    """Moodle replaces "_" in the full name by a space (locallib.php download_submissions): the participant id
    is the first number, whatever the student called the file."""
    from autograder.grading import lms
    who = lms.flat_file("Ada Lovelace_482914_assignsubmission_file_x_9_assignsubmission_file_mha.py")
    assert (who.lms, who.user, who.name, who.file) == ("moodle", "482914", "Ada Lovelace",
                                                       "x_9_assignsubmission_file_mha.py")
    assert lms.flat_file("Ada_Lovelace_482914_assignsubmission_file_mha.py") is None, "no Moodle name holds a _"


def test_a_file_that_fits_no_grammar_is_named_in_one_line_and_the_class_is_graded(tmp_path):
    folder = canvas_download(tmp_path / "canvas")
    write(folder / "grading notes.txt", "the instructor's")
    write(folder / "Ada Lovelace_482914_assignsubmission_file_mha.py", MHA)
    with discovered([str(folder)], export="canvas") as sources:
        assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912"]
        assert sources.notes[1:] == [
            "not graded: Ada Lovelace_482914_assignsubmission_file_mha.py, grading notes.txt in canvas (not named as "
            "Canvas names a download's files, <lastfirst>[_LATE]_<userid>_<attachmentid>_<file> or, graded "
            "anonymously, [LATE_]anon_<anonymousid>_<attachmentid>_<file>); the rest of the class is graded"]


def test_a_folder_holding_canvas_submissions_zip_alone_is_the_class(tmp_path):
    """What a browser saves: Canvas's submissions.zip, alone in a folder."""
    saved = tmp_path / "Downloads"
    saved.mkdir()
    zip_folder(canvas_download(tmp_path / "canvas"), saved / "submissions.zip")
    with discovered([str(saved)], export="canvas") as sources:
        assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912"]
        assert all(s.submitters[0].lms == "canvas" for s in sources)


def test_a_students_zip_of_several_folders_alone_in_a_folder_is_still_one_submission(tmp_path):
    folder = tmp_path / "alice"
    folder.mkdir()
    src = submission(tmp_path / "src", "lab3")
    write(src / "notes" / "readme.txt", "mine")
    zip_folder(src, folder / "submission.zip")
    assert discover([str(folder)]) == [SubmissionSource("alice", str(folder / "submission.zip"))]


def test_a_moodle_online_text_folder_belongs_to_its_participant(tmp_path):
    """Moodle writes one folder per plugin (locallib.php: "_assignsubmission_<plugin>_"): the online text and
    the upload are one participant's one submission, and an online text alone is that participant's row."""
    export = tmp_path / "moodle"
    submission(export / "Ada Lovelace_482914_assignsubmission_file_")
    write(export / "Ada Lovelace_482914_assignsubmission_onlinetext_" / "onlinetext.html", "<p>hi</p>")
    write(export / "Alan Turing_482915_assignsubmission_onlinetext_" / "onlinetext.html", "<p>no code</p>")
    sources = discover([str(export)], export="moodle")
    assert [(s.id, s.submitters[0].lms_id) for s in sources] == [("Ada Lovelace_482914", "482914"),
                                                                ("Alan Turing_482915", "482915")]
    assert sources[0].path == str(export / "Ada Lovelace_482914_assignsubmission_file_")


def forged_export(folder):
    """A student's upload dressed as a Gradescope export: her own row, a classmate's, and a 2020 hand-in time."""
    write(folder / "submission_metadata.yml", GRADESCOPE_METADATA.replace("2025-10-14", "2020-01-01"))
    submission(folder / "submission_231245781")
    submission(folder / "submission_231246990")
    return folder


def test_an_upload_inside_a_batch_is_never_read_as_an_export(tmp_path):
    batch = tmp_path / "class"
    submission(batch / "bob")
    zip_folder(forged_export(tmp_path / "forged"), batch / "eve.zip")
    sources = discover([str(batch)])
    assert [(s.id, s.submitters) for s in sources] == [("bob", ()), ("eve", ())]


def test_a_zip_graded_beside_the_class_is_one_submission_whatever_it_holds(tmp_path):
    """An upload is never an export: identity and hand-in time come from the layout the instructor named."""
    canvas = canvas_download(tmp_path / "canvas")
    eve = zip_folder(forged_export(tmp_path / "forged"), tmp_path / "eve.zip")
    with discovered([str(canvas), str(eve)], export="canvas") as sources:
        assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912", "eve"]
        assert sources[-1].submitters == () and sources[-1].path == str(eve)
        assert all(not who.submitted_at for s in sources for who in s.submitters)


def test_every_export_read_says_so_in_one_line(tmp_path):
    with discovered([str(gradescope_export(tmp_path / "export"))], export="gradescope") as sources:
        assert sources.notes == ["export: read as a Gradescope export: 2 submissions named by its "
                                 "submission_metadata.yml (names, emails, SIDs, hand-in times)"]
    moodle = tmp_path / "moodle"
    submission(moodle / "Ada Lovelace_482914_assignsubmission_file_")
    submission(moodle / "Alan Turing_482915_assignsubmission_file_")
    with discovered([str(moodle)], export="moodle") as sources:
        assert sources.notes == ["moodle: read as a Moodle download: 2 participants, named by its folder names"]
    with discovered([str(submission(tmp_path / "alice"))]) as sources:
        assert sources.notes == [], "one student's folder is no export"


# --- an upload is never an export (issue 48): the instructor names the download, or nothing names anyone ---------
# A student controls every byte of her upload: a submission_metadata.yml, folders named submission_<id>, files named
# the way Canvas or Moodle names a download's. None of it may add a row, name a classmate or set a hand-in time.

def refusal(paths, **options):
    with pytest.raises(UsageError) as error:
        discover([str(p) for p in paths], **options)
    assert "\n" not in str(error.value), "one line"
    return str(error.value)


def test_a_forged_export_zip_given_alone_is_refused_naming_the_flag_for_a_class_and_the_one_for_one_submission(
        tmp_path):
    eve = zip_folder(forged_export(tmp_path / "forged"), tmp_path / "eve.zip")
    assert refusal([eve]) == (f"{eve} looks like a Gradescope export (a submission_metadata.yml at its top): --export "
                              "gradescope (make grade EXPORT=gradescope) grades it as the class, with the names and "
                              "times it holds; --single grades it as one submission")


def test_a_forged_export_zip_alone_in_a_folder_is_refused(tmp_path):
    """alice/submission.zip is one upload: a folder holding one zip is never the class unless named as one."""
    folder = tmp_path / "eve"
    folder.mkdir()
    zip_folder(forged_export(tmp_path / "forged"), folder / "submission.zip", under="assignment_1_export/")
    assert "looks like a Gradescope export" in refusal([folder])


def test_the_one_zip_a_folder_holds_is_judged_by_its_names_alone_and_never_extracted(tmp_path, monkeypatch):
    """It is one student's upload whatever it holds: only staging, with its own bounds, reads what is inside."""
    from autograder.grading import discover as module

    def extracted(*args):
        raise AssertionError("a lone zip was extracted")
    monkeypatch.setattr(module, "extract_all", extracted)
    alice, eve, saved = tmp_path / "alice", tmp_path / "eve", tmp_path / "Downloads"
    for folder in (alice, eve, saved):
        folder.mkdir()
    src = submission(tmp_path / "src", "lab3")
    write(src / "lab3" / "submission_metadata.yml", GRADESCOPE_METADATA)  # beside her files: still hers
    zip_folder(src, alice / "submission.zip")
    zip_folder(forged_export(tmp_path / "forged"), eve / "submission.zip", under="a/b/")
    zip_folder(canvas_download(tmp_path / "canvas"), saved / "submissions.zip")
    assert discover([str(alice)]) == [SubmissionSource("alice", str(alice / "submission.zip"))]
    assert "looks like a Gradescope export" in refusal([eve])
    assert "looks like a Canvas download" in refusal([saved]), "Canvas's zip saved alone needs EXPORT=canvas"


def test_a_folder_with_a_forged_export_at_its_top_is_refused(tmp_path):
    assert "--export gradescope" in refusal([forged_export(tmp_path / "eve")])


@pytest.mark.parametrize("kind", ["canvas", "moodle"])
def test_a_students_zip_named_like_a_canvas_or_moodle_download_is_refused(tmp_path, kind):
    """Files named <lastfirst>_<userid>_<attachmentid>_<file>, or folders named <Full Name>_<id>_assignsubmission_
    file_, are names a student can type: without --export they name nobody."""
    forged = tmp_path / "forged"
    if kind == "canvas":
        write(forged / "lovelaceada_1815_9001_attention.py", ATTENTION)
        write(forged / "turingalan_LATE_1912_9002_attention.py", ATTENTION)
    else:
        submission(forged / "Ada Lovelace_482914_assignsubmission_file_")
        submission(forged / "Alan Turing_482915_assignsubmission_file_")
    eve = zip_folder(forged, tmp_path / "eve.zip")
    assert f"--export {kind} (make grade EXPORT={kind})" in refusal([eve])


def test_with_single_a_lookalike_is_one_submission_naming_nobody(tmp_path):
    eve = zip_folder(forged_export(tmp_path / "forged"), tmp_path / "eve.zip")
    assert discover([str(eve)], layout="single") == [SubmissionSource("eve", str(eve))]


def test_with_batch_a_lookalike_is_read_as_plain_uploads_naming_nobody(tmp_path):
    sources = discover([str(forged_export(tmp_path / "eve"))], layout="batch")
    assert [(s.id, s.submitters) for s in sources] == [("submission_231245781", ()), ("submission_231246990", ())]


def test_a_forged_export_zip_beside_the_named_export_adds_one_unnamed_row_and_loses_nothing(tmp_path):
    export = gradescope_export(tmp_path / "export")
    eve = zip_folder(forged_export(tmp_path / "forged"), tmp_path / "eve.zip")
    with discovered([str(export)], export="gradescope") as alone:
        class_only = [(s.id, s.submitters) for s in alone]
    with discovered([str(export), str(eve)], export="gradescope") as sources:
        assert [(s.id, s.submitters) for s in sources] == class_only + [("eve", ())]
        assert sources[-1].path == str(eve)


def test_a_forged_export_folder_beside_the_named_export_is_refused(tmp_path):
    export = gradescope_export(tmp_path / "export")
    eve = forged_export(tmp_path / "eve")
    assert refusal([export, eve], export="gradescope") == (
        f"{eve} looks like a Gradescope export (a submission_metadata.yml at its top), and only the first PATH is "
        "read as a download (--export gradescope): grade it in a run of its own, with --single to grade it as one "
        "submission")


@pytest.mark.parametrize("kind", ["gradescope", "canvas", "moodle"])
def test_a_forged_export_inside_one_submission_of_the_named_download_is_that_students_files(tmp_path, kind):
    """The named download's top alone names students: an upload in it is one submission whatever it holds."""
    download = {"gradescope": gradescope_export, "canvas": canvas_download, "moodle": moodle_download}[kind](
        tmp_path / "download")
    forged = forged_export(tmp_path / "forged")
    write(forged / "hoppergrace_1906_9003_attention.py", ATTENTION)
    upload = {"gradescope": download / "submission_231245781" / "forged.zip",
              "canvas": download / "lovelaceada_1815_9005_forged.zip",
              "moodle": download / "Ada Lovelace_482914_assignsubmission_file_" / "forged.zip"}[kind]
    with discovered([str(download)], export=kind) as clean:
        before = [(s.id, s.submitters) for s in clean]
    zip_folder(forged, upload)
    with discovered([str(download)], export=kind) as sources:
        assert [(s.id, s.submitters) for s in sources] == before
        assert not any(who.submitted_at.startswith("2020") for s in sources for who in s.submitters)


def moodle_download(folder):
    submission(folder / "Ada Lovelace_482914_assignsubmission_file_")
    submission(folder / "Alan Turing_482915_assignsubmission_file_")
    return folder


def test_a_path_named_as_a_download_it_is_not_is_refused(tmp_path):
    class_folder = make_batch(tmp_path / "class")
    assert refusal([class_folder], export="canvas") == (
        f"--export canvas: {class_folder} is not a Canvas download: it has no files named as Canvas names a "
        "download's")
    assert "is not a Gradescope export" in refusal([canvas_download(tmp_path / "canvas")], export="gradescope")


def test_a_folder_in_a_named_canvas_download_is_named_and_not_graded(tmp_path):
    """Canvas's download is flat (content_zipper.rb adds every file at the zip's top): a folder in it is no
    student's, whatever it is called."""
    folder = canvas_download(tmp_path / "canvas")
    submission(folder / "Eve Forger_1_assignsubmission_file_")
    with discovered([str(folder)], export="canvas") as sources:
        assert ids(sources) == ["hoppergrace_1906", "lovelaceada_1815", "turingalan_1912"]
        assert sources.notes[-1].startswith("not graded: Eve Forger_1_assignsubmission_file_ in canvas")


def test_export_is_not_combined_with_single_or_batch(tmp_path):
    assert "give it without --single" in refusal([canvas_download(tmp_path / "canvas")], export="canvas",
                                                 layout="single")


# --- Canvas, graded anonymously (issue 48) ------------------------------------------------------------------
# Read from source, not run against a live Canvas:
# - instructure/canvas-lms lib/content_zipper.rb @05e9653c, get_filename: when the assignment anonymizes students
#   there is no name, and the id is "anon_#{submission.anonymous_id}": "[LATE_]anon_<id>_<attachment id>_<file>".
# - lib/anonymity.rb @3a612b11: an anonymous id is SecureRandom.base58(5), 5 characters of base58.
# - app/models/abstract_assignment.rb @028f76bb, infer_comment_context_from_filename: split on "_", "LATE" dropped;
#   a first part "anon" makes the next two the anonymous id and the attachment id.

def anonymous_canvas_download(folder):
    write(folder / "anon_x7Kq2_9001_attention.py", ATTENTION)
    write(folder / "anon_x7Kq2_9001_mha.py", MHA)
    write(folder / "LATE_anon_3mZp8_9002_attention.py", ATTENTION)
    write(folder / "LATE_anon_3mZp8_9002_mha-1.py", MHA)
    write(folder / "anon_Qr5tW_text.html", "<p>no code</p>")
    return folder


def test_an_anonymous_canvas_download_is_one_submission_per_anonymous_id_naming_nobody(tmp_path):
    with discovered([str(anonymous_canvas_download(tmp_path / "canvas"))], export="canvas") as sources:
        assert ids(sources) == ["anon_3mZp8", "anon_Qr5tW", "anon_x7Kq2"]
        who = {s.id: s.submitters[0] for s in sources}
        assert who["anon_x7Kq2"] == Submitter("", "", "", "canvas", "", lms_file_id="9001",
                                              lms_file_name="attention.py", anonymous_id="x7Kq2")
        assert who["anon_3mZp8"].late and not who["anon_x7Kq2"].late
        assert sorted(os.listdir(next(s.path for s in sources if s.id == "anon_3mZp8"))) == ["attention.py", "mha.py"]


def test_an_anonymous_canvas_download_says_its_import_cannot_name_the_students(tmp_path):
    with discovered([str(anonymous_canvas_download(tmp_path / "canvas"))], export="canvas") as sources:
        assert sources.notes == ["canvas: read as a Canvas download: 3 students, named by its file names (3 by "
                                 "Canvas's anonymous id alone: import-canvas.csv cannot name them; "
                                 "docs/reference/lms.md, 'Anonymous grading on Canvas')"]


def test_canvas_anonymous_ids_are_five_base58_characters_as_canvas_makes_them():
    """Base58 has no 0, O, I or l (anonymity.rb): a name with another id is not Canvas's, and is named."""
    from autograder.grading import lms
    assert lms.flat_file("anon_12345_678_attention.py").anonymous_id == "12345"
    for name in ("anon_0OIl1_678_attention.py", "anon_x7Kq_678_attention.py", "anon_x7Kq2a_678_attention.py",
                 "anon_x7Kq2_attention.py"):
        assert lms.flat_file(name) is None, name


def test_an_anonymous_file_is_never_read_as_a_named_one():
    """Canvas's re-upload reads a leading "anon" before looking for a user id: so does intake, so an anonymous id
    of five digits is not a user id."""
    from autograder.grading import lms
    who = lms.flat_file("LATE_anon_23456_9001_attention.py")
    assert (who.user, who.anonymous_id, who.name, who.file_id, who.late) == ("anon_23456", "23456", "", "9001", True)
