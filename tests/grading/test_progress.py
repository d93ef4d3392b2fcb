"""What a run shows while it grades, and the table it ends with (issue 33, item 10)."""
import io
from types import SimpleNamespace

from autograder.grading.batch import Progress
from autograder.grading.discover import Submitter
from autograder.reports.results import results_json
from test_results import record, result


def results(score=7.0, **fields):
    made = results_json(record(result("masks", 10.0, passed=True), **fields))
    made["score"] = score
    return made


def test_a_run_logged_to_a_file_prints_one_progress_line_per_submission():
    log = io.StringIO()  # not a terminal
    progress = Progress(stream=log)
    progress.start(2, 0)
    progress.advance("alice", results(7.0))
    progress.advance("bob", results(0.0, found={}))
    lines = log.getvalue().splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == ["alice: 7/10", "bob: no files"], lines
    assert lines[0].startswith("graded 1/2 (") and lines[1].startswith("graded 2/2 ("), lines


def test_a_progress_line_names_the_students_beside_the_submission_id_as_the_table_does():
    log = io.StringIO()
    progress = Progress(stream=log)
    progress.start(1, 0)
    made = results(7.0)
    made["extra_data"]["submitters"] = [{"name": "Zoë Ångström", "email": "zoe@example.edu"}]
    progress.advance("400003", made)
    assert log.getvalue().split(": ", 1)[1] == "Zoë Ångström (400003): 7/10\n", log.getvalue()


def test_the_console_table_fits_100_columns(capsys):
    from autograder.cli import print_table
    from autograder.parts import PARTS
    tests = [result(part, 5.0, passed=True) for part in PARTS]
    long_name = (Submitter("Maximiliana Augustina Wolfeschlegelsteinhausen", "max@example.edu", "1"),)
    made = [("submission_123456789", long_name, results_json(record(*tests)))]
    print_table(SimpleNamespace(graded=made, skipped=[], entries=made), "out", "namespaces", 1.0)
    widest = max(len(line) for line in capsys.readouterr().out.splitlines())
    assert widest <= 100, widest


def test_each_submission_without_a_score_gets_one_line_saying_why(capsys):
    from autograder.cli import print_table
    empty = results(0.0, found={}, problems=["the upload is empty: upload attention.py and mha.py"])
    made = [("alice", (), results(7.0)), ("carol", (), empty)]
    print_table(SimpleNamespace(graded=made, skipped=[], entries=made), "out", "namespaces", 1.0)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("not graded")]
    assert lines == ["not graded: carol: the upload is empty: upload attention.py and mha.py"]


def test_the_run_ends_naming_the_lecture_page_and_the_lms_import_files_it_wrote(capsys, tmp_path):
    from autograder.cli import print_table
    (tmp_path / "import-moodle.csv").write_text("Identifier\n")  # an earlier run's: this run writes none
    made = [("turingalan_1912", (Submitter("turingalan", "", "", "canvas", "1912"),), results(7.0))]
    print_table(SimpleNamespace(graded=made, skipped=[], entries=made), str(tmp_path), "namespaces", 1.0)
    out = capsys.readouterr().out
    assert "summary-anonymous.html" in out and "import-canvas.csv" in out and "import-moodle.csv" not in out, out
