"""similarity.html and similarity.csv (issue 33, item 8): copydetect over each submission's graded files, the
stubs' code left out, the pairs above the threshold listed and shown side by side; never a grade."""
import csv
import io
import subprocess
import sys

import pytest

from autograder.reports import similarity
from conftest import ROOT

STUBS = [(ROOT / "assignment" / name).read_text(encoding="utf-8") for name in ("attention.py", "mha.py")]
SOLUTION = (ROOT / "examples" / "submissions" / "reference" / "attention.py").read_text(encoding="utf-8")
OTHER = '''
def fibonacci_table(limit):
    table = {0: 0, 1: 1}
    for position in range(2, limit):
        table[position] = table[position - 1] + table[position - 2]
    return [table[k] for k in sorted(table)]


class Inventory:
    def __init__(self):
        self.items = []

    def add(self, name, count):
        self.items.append((name, count))
        return sum(c for _, c in self.items)
'''


def submitted(out, submission_id, **files):
    folder = out / submission_id / "submitted"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return (submission_id, (), {})


def rows(out):
    return list(csv.DictReader(io.StringIO((out / "similarity.csv").read_text(encoding="utf-8"))))


def test_a_renamed_copy_is_listed_and_unrelated_code_is_not(tmp_path):
    renamed = SOLUTION.replace("scores", "logits_matrix").replace("weights", "probabilities")
    entries = [submitted(tmp_path, "ada", attention=SOLUTION), submitted(tmp_path, "alan", attention=renamed),
               submitted(tmp_path, "grace", attention=OTHER)]
    similarity.write(str(tmp_path), entries, STUBS, {})
    found = {(r["submission_a"], r["submission_b"]): r for r in rows(tmp_path)}
    assert found[("ada", "alan")]["listed"] == "yes" and float(found[("ada", "alan")]["share_of_a"]) > 0.9
    assert found[("ada", "grace")]["listed"] == "" and found[("alan", "grace")]["listed"] == ""


def test_the_stubs_own_code_makes_no_pair_similar(tmp_path):
    stub = STUBS[0]
    entries = [submitted(tmp_path, "ada", attention=stub + OTHER), submitted(tmp_path, "alan", attention=stub)]
    similarity.write(str(tmp_path), entries, STUBS, {})
    (pair,) = rows(tmp_path)
    assert (pair["shared_tokens"], pair["listed"]) == ("0", "")


def test_the_same_stub_compared_without_it_as_boilerplate_would_be_listed(tmp_path):
    entries = [submitted(tmp_path, "ada", attention=STUBS[0]), submitted(tmp_path, "alan", attention=STUBS[0])]
    similarity.write(str(tmp_path), entries, [], {})
    assert rows(tmp_path)[0]["listed"] == "yes"


def test_the_page_shows_each_listed_pair_side_by_side_with_the_shared_code_marked_and_escaped(tmp_path):
    code = SOLUTION + "\n# <script>alert(1)</script>\n"
    entries = [submitted(tmp_path, "ada", attention=code), submitted(tmp_path, "alan", attention=code)]
    similarity.write(str(tmp_path), entries, STUBS, {"ada": "Ada Lovelace (ada)"})
    page = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert page.count('<div class="side">') == 1 and "<mark>" in page and "Ada Lovelace (ada)" in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_class_of_near_copies_gets_a_page_of_bounded_size_with_every_pair_still_in_the_table():
    pairs = [(f"s{n}", f"t{n}", 1.0 - n / 1000, 1.0, 500, "x" * 1000, "y" * 1000) for n in range(300)]
    page = similarity.similarity_html(pairs, {})
    assert page.count('<div class="side">') == similarity.SIDE_BY_SIDE < len(pairs)
    assert page.count("<tr><td>") == len(pairs) and "similarity.csv" in page


def test_a_submission_without_graded_python_files_is_left_out(tmp_path):
    entries = [submitted(tmp_path, "ada", attention=SOLUTION), ("empty", (), {}), submitted(tmp_path, "alan", mha=OTHER)]
    similarity.write(str(tmp_path), entries, STUBS, {})
    assert [(r["submission_a"], r["submission_b"]) for r in rows(tmp_path)] == [("ada", "alan")]


def test_the_report_is_the_owners_alone_and_touches_no_grade_file(tmp_path):
    entries = [submitted(tmp_path, "ada", attention=SOLUTION), submitted(tmp_path, "alan", attention=SOLUTION)]
    similarity.write(str(tmp_path), entries, STUBS, {})
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["similarity.csv", "similarity.html"]
    assert all((tmp_path / n).stat().st_mode & 0o077 == 0 for n in ("similarity.csv", "similarity.html"))


def test_one_submission_has_no_pair_and_costs_no_import_of_copydetect():
    """copydetect imports matplotlib (about 0.6 s): a one-submission grade, with no pair to compare, never pays it."""
    code = ("import sys; from autograder.reports import similarity; "
            "print(similarity.compare({'alone': 'x = 1'}, []), 'copydetect' in sys.modules)")
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert process.stdout.split() == ["[]", "False"], process.stdout + process.stderr


def test_every_pairs_shares_are_copydetects_own():
    """The pairs' overlap is found with arrays, not copydetect's loop over every shared hash: the numbers must be
    the ones copydetect's compare_files gives, on the samples' code, with and without the stubs left out."""
    from copydetect import CodeFingerprint, compare_files

    samples = sorted((ROOT / "examples" / "submissions").glob("*/*.py"))
    texts = {f"{path.parent.name}/{path.name}": path.read_text(encoding="utf-8") for path in samples}
    texts["other"] = OTHER
    texts["other_renamed"] = OTHER.replace("table", "memo").replace("items", "stock")
    for boilerplate_texts in (STUBS, []):
        pairs = similarity.compare(texts, boilerplate_texts)
        boilerplate = similarity.boilerplate_hashes(boilerplate_texts)
        prints = {i: CodeFingerprint(f"{i}.py", similarity.NOISE, similarity.WINDOW, boilerplate,
                                     fp=io.StringIO(text)) for i, text in texts.items()}
        assert len(pairs) == len(texts) * (len(texts) - 1) // 2
        assert any(pair[4] for pair in pairs), "no pair overlaps: the comparison proves nothing"
        for a, b, share_a, share_b, overlap, _, _ in pairs:
            expected_overlap, (expected_a, expected_b), _ = compare_files(prints[a], prints[b])
            assert (overlap, share_a, share_b) == pytest.approx((expected_overlap, expected_a, expected_b)), (a, b)
