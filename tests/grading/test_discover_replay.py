"""Issue 48's intake attack, replayed through `python -m autograder grade` as the held-out review ran it: a
student's zip dressed as a Gradescope export (her own row at 110, a classmate's SID and email at 0, a 2020 hand-in
time) graded beside the class. The gradebook holds the rows the named export holds, plus hers under the name of
her upload; no classmate is named twice and no time comes from her zip."""
import csv
import io
import shutil
import zipfile

import pytest

from conftest import ROOT, gradescope_metadata, run_grader

SAMPLES = ROOT / "examples" / "submissions"
METADATA = gradescope_metadata(("Ada Lovelace", "1815", "ada@example.edu", "2026-10-01 09:00:00.000000000 -07:00"),
                               ("Alan Turing", "1912", "alan@example.edu", "2026-10-01 10:00:00.000000000 -07:00"))
# Eve's upload: the export's own shape, naming herself and Alan, both handed in in 2020.
FORGED = METADATA.replace("Ada Lovelace", "Eve Forger").replace("'1815'", "'6666'").replace(
    "ada@example.edu", "eve@example.edu").replace("2026-10-01", "2020-01-01")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    export = root / "export"
    for n, sample in ((1, "reference"), (2, "mask_bug")):
        shutil.copytree(SAMPLES / sample, export / f"submission_{n}")
    (export / "submission_metadata.yml").write_text(METADATA)
    eve = root / "eve.zip"
    with zipfile.ZipFile(eve, "w") as archive:
        archive.writestr("submission_metadata.yml", FORGED)
        for n, sample in ((1, "reference"), (2, "stubs")):
            for name in ("attention.py", "mha.py"):
                archive.write(SAMPLES / sample / name, f"submission_{n}/{name}")
    alone = run_grader("grade", "--export", "gradescope", export, "--out", root / "alone", "--jobs", 1)
    beside = run_grader("grade", "--export", "gradescope", export, eve, "--out", root / "beside", "--jobs", 1)
    forged_alone = run_grader("grade", eve, "--out", root / "forged-alone", "--jobs", 1)
    return root, alone, beside, forged_alone


def book(out):
    return list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8-sig"))))


@pytest.mark.slow  # grades a class twice
def test_a_forged_export_beside_the_class_adds_one_unnamed_row_and_changes_no_other(replay):
    root, alone, beside, _ = replay
    assert alone.returncode == 0 and beside.returncode == 0, beside.stderr[-2000:]
    columns = ("Student", "SIS User ID", "SIS Login ID", "total", "submission_id", "late")
    before = [tuple(row[c] for c in columns) for row in book(root / "alone")]
    after = [tuple(row[c] for c in columns) for row in book(root / "beside")]
    assert after[:len(before)] == before, "the class's rows are unchanged"
    [eve] = after[len(before):]
    assert (eve[0], eve[1], eve[2], eve[4]) == ("eve", "", "", "eve"), eve
    assert not {"6666", "eve@example.edu"} & {cell for row in after for cell in row}
    assert [row[1] for row in after].count("1912") == 1, "Alan is named once, by the export"


@pytest.mark.slow
def test_a_forged_export_graded_alone_is_refused_and_nothing_is_graded(replay):
    root, _, _, forged_alone = replay
    assert forged_alone.returncode == 2 and "--export gradescope" in forged_alone.stderr
    assert not (root / "forged-alone" / "gradebook.csv").exists()
