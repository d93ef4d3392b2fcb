"""similarity.html and similarity.csv (issue 33, item 8): copydetect over each submission's graded files, the
stubs' code left out, the pairs above the threshold listed and shown side by side; never a grade."""
import csv
import io
import subprocess
import sys
import textwrap

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
    from copydetect import compare_files

    samples = sorted((ROOT / "examples" / "submissions").glob("*/*.py"))
    texts = {f"{path.parent.name}/{path.name}": path.read_text(encoding="utf-8") for path in samples}
    texts["other"] = OTHER
    texts["other_renamed"] = OTHER.replace("table", "memo").replace("items", "stock")
    for boilerplate_texts in (STUBS, []):
        pairs = similarity.compare(texts, boilerplate_texts)
        prints = similarity.fingerprints(texts, boilerplate_texts)
        assert len(pairs) == len(texts) * (len(texts) - 1) // 2
        assert any(pair[4] for pair in pairs), "no pair overlaps: the comparison proves nothing"
        for a, b, share_a, share_b, overlap, _, _ in pairs:
            expected_overlap, (expected_a, expected_b), _ = compare_files(prints[a], prints[b])
            assert (overlap, share_a, share_b) == pytest.approx((expected_overlap, expected_a, expected_b)), (a, b)


# --- what a class of 200 needs (issue 48): leave out what everyone must write, list only the outliers ---------

def own_code(n):
    """Code only submission n writes: lines of operators drawn at random per submission (copydetect keeps
    operators and normalises names), so no two submissions share a fingerprint of their own."""
    import random
    draw = random.Random(n)
    return "".join(f"value = (value {draw.choice('+-*/%&|^')} {draw.randint(2, 9)}) {draw.choice('<>')} "
                   f"(value {draw.choice('+-*/%&|^')} other)\n" for _ in range(30))


def overlaps(pairs):
    return {(a, b): overlap for a, b, _, _, overlap, _, _ in pairs}


def test_a_fingerprint_filtered_once_is_copydetects_own():
    """similarity.fingerprint builds what copydetect's CodeFingerprint builds, from a filter done once a text."""
    import numpy as np
    from copydetect import CodeFingerprint

    text = SOLUTION + OTHER
    boilerplate = similarity.boilerplate_hashes(STUBS)
    lexed = {}
    for _ in range(2):  # the first fills ``lexed``, the second reads it
        made = similarity.fingerprint(text, boilerplate, lexed)
        own = CodeFingerprint("s.py", similarity.NOISE, similarity.WINDOW, boilerplate, fp=io.StringIO(text))
        assert set(vars(made)) == set(vars(own))
        for name, value in vars(own).items():
            assert np.array_equal(np.asarray(getattr(made, name), dtype=object), np.asarray(value, dtype=object)) \
                if isinstance(value, np.ndarray) else getattr(made, name) == value, name
    assert list(lexed) == [text]


def test_code_most_of_the_class_shares_makes_no_pair_similar(monkeypatch):
    """What the contract forces everyone to write is no evidence: in a class of six, a block every submission
    holds is left out like the stubs (at most one window where it meets a submission's own code), and no pair
    is listed for it; kept in, it would make every pair similar."""
    alone = {f"s{n}": own_code(n) for n in range(6)}
    with_block = {i: OTHER + "\n" + code for i, code in alone.items()}
    without, found = overlaps(similarity.compare(alone, STUBS)), similarity.compare(with_block, STUBS)
    assert all(overlap <= without[pair] + similarity.NOISE for pair, overlap in overlaps(found).items())
    assert not any(similarity.listed(p, similarity.class_cutoff(found)) for p in found)
    monkeypatch.setattr(similarity, "COMMON_MIN_CLASS", 7)
    assert all(overlap > 100 for overlap in overlaps(similarity.compare(with_block, STUBS)).values())


def test_the_reference_solution_is_boilerplate_when_the_class_is_graded(tmp_path):
    """Two submissions of the reference share nothing once its fingerprints are left out, as `make grade` does."""
    from autograder.grading import resume
    reference = {name: (ROOT / "solution" / f"{name}.py").read_text(encoding="utf-8") for name in ("attention", "mha")}
    entries = [submitted(tmp_path, "ada", **reference), submitted(tmp_path, "alan", **reference)]
    resume._write_similarity(str(tmp_path), entries)
    assert (rows(tmp_path)[0]["shared_tokens"], rows(tmp_path)[0]["listed"]) == ("0", "")


def class_of_pairs(shares):
    return [(f"a{n}", f"b{n}", share, share / 2, 100, None, None) for n, share in enumerate(shares)]


def test_only_pairs_that_stand_out_from_the_class_are_listed():
    """At 200 students a fixed share lists hundreds of honest pairs: a pair is listed when it is OUTLIER_MADS
    robust deviations above the class's median pair (and never below THRESHOLD)."""
    honest = [0.45 + 0.15 * n / 44 for n in range(45)]  # every honest pair of ten submissions, up to 60%
    pairs = sorted(class_of_pairs(honest + [0.97]), key=lambda p: -p[2])
    shown = [p[2] for p in pairs if similarity.listed(p, similarity.class_cutoff(pairs))]
    assert shown == [0.97], "the copy, and none of the honest pairs above 50%"
    rows_ = list(csv.DictReader(io.StringIO(similarity.similarity_csv(pairs))))
    assert [r["listed"] for r in rows_].count("yes") == 1 and float(rows_[0]["above_class"]) > similarity.OUTLIER_MADS
    assert float(rows_[-1]["above_class"]) < 0, "every pair is ranked against the class"


def test_a_class_too_small_for_a_distribution_lists_at_the_threshold_and_never_below_it():
    assert similarity.class_cutoff(class_of_pairs([0.9, 0.55, 0.1])) == similarity.THRESHOLD
    quiet = class_of_pairs([0.0] * 44 + [0.3])
    assert similarity.class_cutoff(quiet) == similarity.THRESHOLD and not similarity.listed(quiet[-1],
                                                                                            similarity.THRESHOLD)


def test_comparing_a_class_never_imports_pyplot_yet_copydetect_can_still_use_it():
    """copydetect's detector imports matplotlib.pyplot for a report the kit never draws: about 0.45 s of every
    batch's serial end. A fresh interpreter, as `make grade` starts."""
    script = textwrap.dedent("""
        import sys
        from autograder.reports import similarity
        similarity.compare({"a": "x = 1\\n" * 40, "b": "x = 1\\n" * 40}, [])
        assert "matplotlib.pyplot" not in sys.modules, "pyplot was imported"
        from copydetect import detector
        assert callable(detector.plt.figure) and "matplotlib.pyplot" in sys.modules, "pyplot loads at first use"
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
