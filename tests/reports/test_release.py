"""OUT/release/ (issue 33, item 7): each student's feedback as the visibility settings allow, in the forms
Canvas's and Moodle's bulk feedback uploads take, and nothing of another student."""
import subprocess
import sys
import zipfile

from autograder.grading.discover import Submitter
from autograder.reports import history, release, report
from autograder.reports.results import results_json
from conftest import ROOT
from test_results import record, result

ADA = (Submitter("Ada Lovelace", "ada@example.edu", "1815", "moodle", "482913"),)
ALAN = (Submitter("turingalan", "", "", "canvas", "1912", lms_file_id="9002"),)
HIDDEN_OUTPUT = "expected tensor([0.3141, 0.5926]) for the secret case"


def graded(submitters, passed_hidden=False):
    return record(result("masks", 3.0, message="public fine"),
                  result("heads", 4.0, passed=passed_hidden, visibility="after_due_date", message=HIDDEN_OUTPUT))


def term(out, graded_ones):
    """Reports and class files as make grade leaves them: [(id, submitters, record)]."""
    entries = []
    for submission_id, submitters, made in graded_ones:
        entries.append((submission_id, submitters, report.write_submission(str(out), submission_id, made, submitters)))
    report.write_term_files(str(out), entries, (), {e[0]: history.FIRST for e in entries})
    return entries


def released(out, show="visible"):
    return release.write_release(str(out), release.reports_in(str(out)), show)


def test_before_release_a_hidden_test_leaves_no_name_output_or_total(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA))])
    released(tmp_path)
    for page in ("feedback.md", "feedback.html"):
        text = (tmp_path / "release" / "ada" / page).read_text(encoding="utf-8")
        assert "a heads test" not in text and "0.3141" not in text and "secret" not in text
        assert "3 / 7" not in text and "not released yet" in text


def test_the_instructors_own_feedback_does_show_the_hidden_test(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA))])
    assert "0.3141" in (tmp_path / "ada" / "feedback.md").read_text(encoding="utf-8")


def test_once_published_every_test_and_the_final_total_with_its_adjustment_are_shown(tmp_path):
    (tmp_path / "adjustments.csv").write_text("student,points,override,reason\nada,1,,regrade request\n")
    term(tmp_path, [("ada", ADA, graded(ADA))])
    released(tmp_path, "after_published")
    text = (tmp_path / "release" / "ada" / "feedback.md").read_text(encoding="utf-8")
    assert "0.3141" in text and "**Tests: 3 / 7.**" in text
    assert "Adjusted by your instructor:" in text and "regrade request" in text
    assert "**Your total: 4 / 7.**" in text


def test_a_narrower_release_removes_what_a_wider_one_showed(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA))])
    released(tmp_path, "after_published")
    released(tmp_path, "visible")
    assert "0.3141" not in (tmp_path / "release" / "ada" / "feedback.md").read_text(encoding="utf-8")


def test_no_students_release_holds_another_students_name_or_results(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA)), ("alan", ALAN, graded(ALAN, passed_hidden=True))])
    released(tmp_path, "after_published")
    ada = (tmp_path / "release" / "ada" / "feedback.html").read_text(encoding="utf-8")
    alan = (tmp_path / "release" / "alan" / "feedback.html").read_text(encoding="utf-8")
    assert "turingalan" not in ada and "Ada Lovelace" not in alan
    assert "3 / 7" in ada and "7 / 7" in alan


def test_moodles_zip_has_a_folder_per_participant_named_as_its_feedback_import_reads(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA)), ("alan", ALAN, graded(ALAN))])
    released(tmp_path)
    with zipfile.ZipFile(tmp_path / "release" / "moodle-feedback.zip") as archive:
        assert archive.namelist() == ["Ada Lovelace_482913_assignfeedback_file/feedback.html"]
        assert "Ada Lovelace" in archive.read(archive.namelist()[0]).decode()


def test_canvas_zip_names_each_file_by_user_and_submitted_attachment_as_re_upload_reads(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA)), ("alan", ALAN, graded(ALAN))])
    released(tmp_path)
    with zipfile.ZipFile(tmp_path / "release" / "canvas-feedback.zip") as archive:
        assert archive.namelist() == ["turingalan_1912_9002_feedback.html"]


def test_an_anonymous_canvas_submissions_feedback_is_named_by_its_anonymous_id_as_re_upload_reads(tmp_path):
    """instructure/canvas-lms app/models/abstract_assignment.rb @028f76bb, infer_comment_context_from_filename:
    "LATE" dropped, a leading "anon" makes the next two parts the anonymous id and the attachment id."""
    anonymous = (Submitter("", "", "", "canvas", "", True, lms_file_id="9003", lms_file_name="mha.py",
                           anonymous_id="x7Kq2"),)
    term(tmp_path, [("anon_x7Kq2", anonymous, graded(anonymous))])
    released(tmp_path)
    with zipfile.ZipFile(tmp_path / "release" / "canvas-feedback.zip") as archive:
        assert archive.namelist() == ["anon_x7Kq2_9003_mha.py"]


def test_a_submission_that_was_not_graded_is_told_so_never_0(tmp_path):
    term(tmp_path, [("empty", (), record(result("masks", 3.0, passed=False), found={}))])
    released(tmp_path, "after_published")
    text = (tmp_path / "release" / "empty" / "feedback.md").read_text(encoding="utf-8")
    assert "Not graded" in text and "0 / " not in text


def test_a_submission_graded_by_hand_is_released_with_the_instructors_total(tmp_path):
    (tmp_path / "adjustments.csv").write_text("student,points,override,reason\nempty,,80,graded by hand\n")
    term(tmp_path, [("empty", (), record(result("masks", 3.0, passed=False), found={}))])
    released(tmp_path)
    for page in ("feedback.md", "feedback.html"):
        text = (tmp_path / "release" / "empty" / page).read_text(encoding="utf-8")
        assert "graded by hand" in text and "80 / 3" in text and "will be in touch" not in text


def test_release_files_are_the_owners_alone(tmp_path):
    term(tmp_path, [("ada", ADA, graded(ADA))])
    released(tmp_path)
    assert (tmp_path / "release" / "ada" / "feedback.md").stat().st_mode & 0o077 == 0
    assert (tmp_path / "release" / "moodle-feedback.zip").stat().st_mode & 0o077 == 0


def test_release_of_a_folder_without_reports_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "autograder", "release", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "no graded reports" in run.stderr


# --- Canvas's Re-Upload Submissions shows the submitted file's name (read from source, not run) -------------
# instructure/canvas-lms app/models/assignment.rb (as indexed): generate_comments_from_files attaches each file
# with FileInContext.attach(self, filename, display_name), display_name from infer_comment_context_from_filename:
# attachment.display_name, the attachment named by the file name's second number. What the uploaded file is
# called is never shown: the feedback must open as the kind of file the student submitted.

def canvas_released(tmp_path, file_name):
    who = (Submitter("turingalan", "", "", "canvas", "1912", lms_file_id="9002", lms_file_name=file_name),)
    term(tmp_path, [("alan", who, graded(who))])
    released(tmp_path, "after_published")
    archive = zipfile.ZipFile(tmp_path / "release" / "canvas-feedback.zip")
    [name] = archive.namelist()
    return name, archive.read(name)


def test_canvas_feedback_on_a_py_file_is_python_whose_comments_are_the_feedback(tmp_path):
    import ast
    name, data = canvas_released(tmp_path, "attention.py")
    assert name == "turingalan_1912_9002_attention.py", "the user id and attachment id come first, as Canvas reads"
    text = data.decode("utf-8")
    assert ast.parse(text).body == [], "only comments: it opens as Python and runs nothing"
    assert "3 / 7" in text and "Canvas names this file after the file you handed in" in text


def test_canvas_feedback_on_a_notebook_is_a_notebook_with_the_feedback_as_markdown(tmp_path):
    import json
    name, data = canvas_released(tmp_path, "playground.ipynb")
    notebook = json.loads(data)
    assert name.endswith("_9002_playground.ipynb") and notebook["nbformat"] == 4
    assert notebook["cells"][0]["cell_type"] == "markdown" and "3 / 7" in notebook["cells"][0]["source"]


def test_canvas_feedback_on_a_zip_is_a_zip_holding_the_feedback_pages(tmp_path):
    import io
    name, data = canvas_released(tmp_path, "submission.zip")
    with zipfile.ZipFile(io.BytesIO(data)) as inner:
        assert sorted(inner.namelist()) == ["feedback.html", "feedback.md"]
        assert "3 / 7" in inner.read("feedback.md").decode("utf-8")


def test_the_feedback_zips_flag_non_ascii_names_as_utf_8(tmp_path):
    """Without the flag (general purpose bit 11), Windows' unzip reads "Kurt Gödel" as "Kurt G├╢del"."""
    godel = (Submitter("Kurt Gödel", "", "", "moodle", "482917"),)
    term(tmp_path, [("godel", godel, graded(godel))])
    released(tmp_path)
    with zipfile.ZipFile(tmp_path / "release" / "moodle-feedback.zip") as archive:
        [info] = archive.infolist()
        assert info.filename.startswith("Kurt Gödel_482917") and info.flag_bits & 0x800
