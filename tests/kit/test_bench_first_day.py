"""`make bench`'s first-day rows (bench/run.py): the first `make grade` of a fresh clone, its venv's size,
and a re-run with nothing to grade, each against its target. The measurement itself installs packages,
so the kit's tests check the rows from given figures; `make bench` measures them."""
import importlib.util
from types import SimpleNamespace

from conftest import ROOT

spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
TORCH = {"torch": SimpleNamespace(wall=lambda: 2.0)}


def rows(**day):
    return {row[0]: row for row in bench.first_day_rows(TORCH, day)}


def test_a_lean_first_day_meets_every_target():
    met = rows(first=90.0, venv_mb=950.0, again=1.5)
    assert [met[key][4] for key in ("8a", "8b", "8c")] == ["met"] * 3, met
    assert "90 s" in met["8a"][2] and "950 MB" in met["8b"][2] and "0.75x" in met["8c"][2]


def test_a_slow_or_heavy_first_day_is_marked_missed():
    missed = rows(first=480.0, venv_mb=1700.0, again=25.0)
    assert [missed[key][4] for key in ("8a", "8b", "8c")] == ["**missed**"] * 3, missed


def test_a_smoke_run_says_the_first_day_was_not_measured():
    (row,) = bench.first_day_rows(TORCH, None)
    assert row[0] == "8" and "not measured" in row[2]


def test_the_venv_size_counts_a_hard_linked_file_once(tmp_path):
    data = tmp_path / "lib.so"
    data.write_bytes(b"\0" * 1_000_000)
    (tmp_path / "link.so").hardlink_to(data)
    assert 0.9 < bench.disk_mb(tmp_path) < 1.2
