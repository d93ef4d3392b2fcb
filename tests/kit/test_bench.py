"""`make bench` works end to end: a smoke run (three submissions, one round) prints and writes its table.

No timing is asserted here: the kit's tests run on machines of every speed. The measured
figures are in bench/RESULTS.md, written by `make bench`.
"""
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # runs the bench's smoke measurement (`make check-fast` skips it)

ROWS = ("0", "1", "2a", "2b", "2c", "2d", "2e", "3a", "3b", "3c", "3d", "4", "5", "7", "8", "9a", "9b")
KEPT_ABOVE, KEPT_BELOW = "# Results\n\nNotes above the table.\n\n", "\n\n## Analysis\n\nNotes below the table.\n"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke run into a results file that already holds a table and notes around it."""
    results = tmp_path_factory.mktemp("bench") / "RESULTS.md"
    results.write_text(KEPT_ABOVE + "<!-- bench:begin -->\nan old table\n<!-- bench:end -->" + KEPT_BELOW)
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--results", str(results)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"bench/run.py --smoke failed:\n{run.stderr[-3000:]}"
    return run, results.read_text()


def row(text, number):
    """The table row numbered ``number``, or None."""
    return next((line for line in text.splitlines() if line.startswith(f"| {number} |")), None)


def test_the_table_has_a_row_for_every_measure(smoke):
    _, text = smoke
    missing = [number for number in ROWS if row(text, number) is None]
    assert not missing, f"rows {missing} are missing from the table:\n{text}"


def test_the_table_is_printed_as_well(smoke):
    run, _ = smoke
    assert row(run.stdout, "1") is not None, f"the table was not printed:\n{run.stdout[-2000:]}"


def test_the_new_table_replaces_the_old_and_keeps_the_notes(smoke):
    _, text = smoke
    assert "an old table" not in text, "the old table was not replaced"
    assert text.startswith(KEPT_ABOVE) and text.endswith(KEPT_BELOW), "the notes around the table were not kept"


def test_the_machine_and_the_torch_import_time_are_stated(smoke):
    _, text = smoke
    assert "Machine:" in text and "cores" in text, "the machine is not described"
    assert "import torch" in row(text, "0") and " s " in row(text, "0"), "the torch import time is missing"


def test_a_hostile_batch_still_writes_every_report(smoke):
    hostile = row(smoke[1], "5")
    assert "3/3 reports, 0 grader errors" in hostile, f"a looping submission cost a report or a worker: {hostile}"
    assert "identical to the clean run" in hostile, f"a looping submission changed other submissions' reports: {hostile}"


def test_reports_do_not_depend_on_the_number_of_jobs(smoke):
    _, text = smoke
    line = next(line for line in text.splitlines() if "identical with `--jobs 1` and `--jobs 2`" in line)
    assert "| yes |" in line, f"--jobs 1 and --jobs 2 wrote different reports: {line}"


def test_only_some_rows_can_be_measured_with_an_earlier_checkout_beside_them(tmp_path):
    """`--only` measures the named rows alone and prints their medians (no table is written); `--before`
    runs the same grading from another checkout in the same rounds (here the kit itself)."""
    results = tmp_path / "RESULTS.md"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--only", "torch,one",
                          "--before", str(ROOT), "--results", str(results)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"bench/run.py --only failed:\n{run.stderr[-3000:]}"
    rows = {line.split(" | ")[0].strip("| "): line for line in run.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) >= {"torch", "one", "one@before"}, run.stdout
    assert "the unit" in rows["torch"] and rows["one@before"].endswith("x |"), run.stdout
    assert not results.exists(), "a partial measurement was written as the table"


def test_only_refuses_a_row_it_does_not_know():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--only", "torch,nope"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "no item nope" in run.stderr, run.stderr[-1000:]


def bench_module(name):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_a_timed_run_has_no_memory_sampler_beside_it():
    measured = bench_module("measure").measure([sys.executable, "-c", "pass"], interval=None)
    assert measured.returncode == 0 and measured.wall_seconds > 0
    assert (measured.peak_pss_mb, measured.cpu_seconds) == (0.0, 0.0), "a sampler ran beside a timed run"


def test_an_items_time_comes_from_its_timed_runs_and_its_memory_from_the_memory_round():
    item = bench_module("run").Item("batch", lambda n: [], runs=[
        {"wall": 30.0, "pss": 900.0, "rss": 2000.0, "sampled": True},
        {"wall": 20.0, "pss": 0.0, "rss": 0.0, "sampled": False}, {"wall": 22.0, "pss": 0.0, "rss": 0.0, "sampled": False}])
    assert (item.wall(), item.pss(), item.rss()) == (21.0, 900.0, 2000.0)
