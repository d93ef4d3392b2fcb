"""similarity.html and similarity.csv: which submissions share code, for an integrity review by a person.

Made with copydetect (pip: copydetect; the winnowing fingerprints of MOSS): each submission's graded Python
files (its submitted/ snapshot, so the exact code that was graded) are one document; names, strings and
comments are normalised away by copydetect's filter. Left out, so that code every correct solution must
share makes no pair similar: every fingerprint of the boilerplate the caller gives (the stubs students start
from and the reference solution), and, in a class of ``COMMON_MIN_CLASS`` or more, every fingerprint more than
``COMMON_SHARE`` of the submissions hold (what the contract forces everyone to write).
Every pair of submissions is compared once and ranked by the larger of its two shares. A pair is listed only
when it is an outlier of the class's own distribution: at least ``OUTLIER_MADS`` robust deviations (the median
absolute deviation, scaled to a standard deviation) above the median pair, and never below ``THRESHOLD``; in a
class too small for a distribution (fewer than ``DISTRIBUTION_MIN_PAIRS`` pairs), at ``THRESHOLD``. The page
shows each listed pair side by side with the shared code marked.

It never changes a grade: nothing here is read by the gradebook, history.csv or any feedback.
"""
import html
import io
import os

from autograder.reports.inert_text import csv_text

NOISE = 25  # characters of normalised code a match must span (copydetect's default noise threshold)
WINDOW = 1  # winnowing window: every fingerprint kept (guarantee threshold = noise threshold)
THRESHOLD = 0.5  # share of one submission's code found in the other: the floor of a listed pair
OUTLIER_MADS = 3.5  # Iglewicz and Hoaglin's cut-off for a robust z-score
DISTRIBUTION_MIN_PAIRS = 10  # five submissions: fewer pairs make no distribution to stand out from
COMMON_SHARE, COMMON_MIN_CLASS = 0.5, 5  # code more than half of a class of five or more holds is no evidence
SIDE_BY_SIDE = 50  # listed pairs shown side by side, most similar first (each view holds both sides' code)
CSV_NAME, HTML_NAME = "similarity.csv", "similarity.html"
COLUMNS = ("submission_a", "submission_b", "share_of_a", "share_of_b", "shared_tokens", "above_class", "listed")


def documents(out_dir, entries):
    """{submission id: its graded .py files joined, each under a '# --- name ---' line} from submitted/."""
    found = {}
    for submission_id, _, _ in entries:
        folder = os.path.join(out_dir, submission_id, "submitted")
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            continue
        files = {}
        for name in names:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                files[name] = f.read()
        if files:
            found[submission_id] = joined(files)
    return found


def joined(files):
    """One document of {file name: code}, as a submission's files are compared (and boilerplate is given)."""
    return "\n".join(f"# --- {name} ---\n{text}" for name, text in sorted(files.items()))


def compare(texts, boilerplate_texts):
    """[(a, b, share of a, share of b, shared tokens, a's marked html, b's marked html)] for every pair of
    ``texts`` ({id: code}), the most similar first; ``boilerplate_texts``: code whose fingerprints never count.
    The marked html is None but for the first SIDE_BY_SIDE listed pairs, the ones the page shows."""
    if len(texts) < 2:  # no pair: copydetect's import (matplotlib's, most of it) would double a one-submission grade
        return []
    _import_copydetect()
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    prints = fingerprints(texts, boilerplate_texts)
    occurrences = {i: _occurrences(fp) for i, fp in prints.items()}
    ids = list(prints)
    compared = []
    for n, a in enumerate(ids):
        for b in ids[n + 1:]:
            overlap, share_a, share_b = _shares(prints[a], prints[b], occurrences[a], occurrences[b])
            compared.append((a, b, share_a, share_b, overlap))
    compared.sort(key=lambda p: (-max(p[2], p[3]), p[0], p[1]))
    cutoff = class_cutoff(compared)
    pairs, shown = [], 0
    for a, b, share_a, share_b, overlap in compared:
        marked_a = marked_b = None
        if overlap and listed((a, b, share_a, share_b), cutoff) and shown < SIDE_BY_SIDE:  # the pairs the page shows
            shown += 1
            _, _, (slices_a, slices_b) = compare_files(prints[a], prints[b])
            marked_a, _ = highlight_overlap(prints[a].raw_code, slices_a, "<mark>", "</mark>", escape_html=True)
            marked_b, _ = highlight_overlap(prints[b].raw_code, slices_b, "<mark>", "</mark>", escape_html=True)
        pairs.append((a, b, share_a, share_b, overlap, marked_a, marked_b))
    return pairs


def _import_copydetect():
    """Import copydetect without importing ``matplotlib.pyplot``, which its detector module imports at the top for
    the report it draws and this module never asks for (about 0.45 s of a batch's serial end). While it is
    imported, ``matplotlib.pyplot`` is a stand-in that imports the real one at its first use, so copydetect's own
    plots would still work; no other code sees the stand-in."""
    import sys
    import types

    if "copydetect.detector" in sys.modules or "matplotlib.pyplot" in sys.modules:
        return

    class PyplotOnFirstUse(types.ModuleType):
        def __getattr__(self, name):
            import importlib
            return getattr(importlib.import_module("matplotlib.pyplot"), name)

    sys.modules["matplotlib.pyplot"] = PyplotOnFirstUse("matplotlib.pyplot")
    try:
        import copydetect.detector  # noqa: F401
    finally:
        del sys.modules["matplotlib.pyplot"]


def fingerprints(texts, boilerplate_texts):
    """{id: copydetect's fingerprint of its code}, the boilerplate's fingerprints and the class's common ones left
    out. Each text is filtered once (``fingerprint``): the class's common fingerprints need a first pass."""
    import numpy as np

    lexed = {}

    def printed(boilerplate):
        return {i: fingerprint(text, boilerplate, lexed) for i, text in sorted(texts.items())}
    boilerplate = boilerplate_hashes(boilerplate_texts)
    prints = printed(boilerplate)
    common = class_common(prints.values())
    return printed(np.union1d(boilerplate, common)) if len(common) else prints


def fingerprint(text, boilerplate, lexed):
    """``CodeFingerprint("s.py", NOISE, WINDOW, boilerplate, fp=io.StringIO(text))``, built as copydetect's
    ``__init__`` builds it (copydetect is pinned; tests/reports/test_similarity.py compares the two), but with
    ``text``'s filtered code taken from ``lexed`` ({text: copydetect's filter_code of it}) when it is there:
    the filter (pygments' lexer) is most of a fingerprint's cost, and the same for every boilerplate."""
    from copydetect import CodeFingerprint
    from copydetect.utils import filter_code, get_document_fingerprints, get_token_coverage

    if text not in lexed:
        lexed[text] = filter_code(text, "s.py", None)
    filtered, offsets = lexed[text]
    hashes, idx = get_document_fingerprints(filtered, NOISE, WINDOW, boilerplate)
    made = CodeFingerprint.__new__(CodeFingerprint)
    made.filename, made.raw_code, made.filtered_code, made.offsets = "s.py", text, filtered, offsets
    made.hashes, made.hash_idx, made.k = hashes, idx, NOISE
    made.token_coverage = get_token_coverage(idx, NOISE, len(filtered))
    return made


def class_common(prints):
    """The fingerprints more than COMMON_SHARE of the documents hold, in a class of COMMON_MIN_CLASS or more."""
    import numpy as np

    prints = list(prints)
    if len(prints) < COMMON_MIN_CLASS:
        return np.array([], dtype=np.int64)
    hashes, counts = np.unique(np.concatenate([np.unique(np.fromiter(fp.hash_idx.keys(), dtype=np.int64))
                                               for fp in prints]), return_counts=True)
    return hashes[counts > COMMON_SHARE * len(prints)]


def class_cutoff(pairs):
    """The share a pair must reach to be listed: OUTLIER_MADS robust deviations above the class's median pair,
    and at least THRESHOLD (THRESHOLD alone below DISTRIBUTION_MIN_PAIRS pairs)."""
    scores = sorted(max(p[2], p[3]) for p in pairs)
    if len(scores) < DISTRIBUTION_MIN_PAIRS:
        return THRESHOLD
    median, spread = _median_and_spread(scores)
    return max(THRESHOLD, median + OUTLIER_MADS * spread)


def above_class(pairs):
    """{(a, b): how many robust deviations the pair's larger share is above the class's median pair}, or {} when
    the class makes no distribution (too few pairs, or no spread)."""
    scores = [max(p[2], p[3]) for p in pairs]
    if len(scores) < DISTRIBUTION_MIN_PAIRS:
        return {}
    median, spread = _median_and_spread(scores)
    return {(p[0], p[1]): (max(p[2], p[3]) - median) / spread for p in pairs} if spread else {}


def _median_and_spread(scores):
    """The median and the median absolute deviation, scaled (x 1.4826) to a normal distribution's deviation."""
    import statistics

    median = statistics.median(scores)
    return median, 1.4826 * statistics.median(abs(s - median) for s in scores)


def boilerplate_hashes(texts):
    """Every fingerprint of ``texts`` (window 1: all of them), as copydetect takes boilerplate."""
    import numpy as np
    from copydetect import CodeFingerprint

    return np.unique(np.array([h for i, text in enumerate(texts) for h in CodeFingerprint(
        f"stub{i}.py", NOISE, 1, None, fp=io.StringIO(text)).hashes], dtype=np.int64))


def _occurrences(fp):
    """A fingerprint's (distinct hashes, the hash at each winnowed position, those positions) as arrays."""
    import numpy as np

    hashes = np.fromiter(fp.hash_idx.keys(), dtype=np.int64, count=len(fp.hash_idx))
    counts = [len(positions) for positions in fp.hash_idx.values()]
    positions = np.fromiter((i for ps in fp.hash_idx.values() for i in ps), dtype=np.int64, count=sum(counts))
    return hashes, np.repeat(hashes, counts), positions


def _shares(fp_a, fp_b, occ_a, occ_b):
    """copydetect's compare_files (token overlap, each side's share), the overlap found with arrays instead of a
    Python loop over every shared hash: quadratic in the class, so most of a batch's class files otherwise.
    Same copydetect helpers and arithmetic (tests/reports/test_similarity.py checks it against compare_files)."""
    import numpy as np
    from copydetect.utils import get_copied_slices

    common = np.intersect1d(occ_a[0], occ_b[0], assume_unique=True)
    if len(common) == 0:
        return 0, 0.0, 0.0
    slices_a = get_copied_slices(occ_a[2][np.isin(occ_a[1], common)], fp_a.k)
    slices_b = get_copied_slices(occ_b[2][np.isin(occ_b[1], common)], fp_b.k)
    tokens_a, tokens_b = int(np.sum(slices_a[1] - slices_a[0])), int(np.sum(slices_b[1] - slices_b[0]))
    share_a = tokens_a / fp_a.token_coverage if len(fp_a.filtered_code) > 0 else 0.0
    share_b = tokens_b / fp_b.token_coverage if len(fp_b.filtered_code) > 0 else 0.0
    return tokens_a, float(share_a), float(share_b)


def listed(pair, cutoff=THRESHOLD):
    return max(pair[2], pair[3]) >= cutoff


def similarity_csv(pairs):
    """Every pair, most similar first, with how far it stands above the class's median pair; the submission ids
    are the students' own folder names, guarded as every kit CSV is."""
    cutoff, z = class_cutoff(pairs), above_class(pairs)
    return csv_text([COLUMNS, *([a, b, f"{share_a:.2f}", f"{share_b:.2f}", overlap,
                                 f"{z[(a, b)]:.1f}" if (a, b) in z else "",
                                 "yes" if listed((a, b, share_a, share_b), cutoff) else ""]
                                for a, b, share_a, share_b, overlap, _, _ in pairs)],
                    ("share_of_a", "share_of_b", "shared_tokens", "above_class"))


def similarity_html(pairs, labels):
    """The listed pairs, then each side by side; ``labels``: {id: who handed it in}."""
    cutoff = class_cutoff(pairs)
    shown = [p for p in pairs if listed(p, cutoff)]
    e = html.escape
    how = (f"stand out from the class: {OUTLIER_MADS:g} robust deviations above its median pair, and at least "
           f"{THRESHOLD:.0%} of one side's code ({cutoff:.0%} here)" if len(pairs) >= DISTRIBUTION_MIN_PAIRS
           else f"share {THRESHOLD:.0%} or more of one side's code (too few pairs for a class distribution)")
    body = ["<h1>Code similarity</h1>",
            f"<p>{len(pairs)} pairs compared with copydetect (k = {NOISE} characters of normalised code; the stubs', "
            f"the reference's and the code most of the class shares left out); {len(shown)} pairs {how}. Similar "
            "code is a reason to look, never a finding: two correct solutions of a short exercise can look alike. "
            f"This page changes no grade; {CSV_NAME} ranks every pair.</p>"]
    if shown:
        body.append("<table><tr><th>Pair</th><th>Share of the first</th><th>Share of the second</th></tr>")
        for n, (a, b, share_a, share_b, _, _, _) in enumerate(shown):
            pair = f"{e(labels.get(a, a))} / {e(labels.get(b, b))}"
            linked = f'<a href="#pair{n}">{pair}</a>' if n < SIDE_BY_SIDE else pair
            body.append(f'<tr><td>{linked}</td>'
                        f'<td class="num">{share_a:.0%}</td><td class="num">{share_b:.0%}</td></tr>')
        body.append("</table>")
    if len(shown) > SIDE_BY_SIDE:
        body.append(f"<p>Side by side below: the {SIDE_BY_SIDE} most similar pairs (a page with every one would grow "
                    f"with the square of the class); {CSV_NAME} lists every pair.</p>")
    for n, (a, b, share_a, share_b, _, marked_a, marked_b) in enumerate(shown[:SIDE_BY_SIDE]):
        body += [f'<h2 id="pair{n}">{e(labels.get(a, a))} ({share_a:.0%}) / {e(labels.get(b, b))} ({share_b:.0%})</h2>',
                 '<div class="side">', f"<pre>{marked_a}</pre>", f"<pre>{marked_b}</pre>", "</div>"]
    return PAGE.format(body="\n".join(body))


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Code similarity</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #24292f; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #d0d7de; padding: 4px 8px; }}
.num {{ text-align: right; }}
.side {{ display: flex; gap: 12px; }} .side pre {{ flex: 1; overflow-x: auto; background: #f6f8fa; padding: 8px;
  font-size: 12px; }}
mark {{ background: #ffd8b5; }}
</style></head><body>
{body}
</body></html>
"""


def write(out_dir, entries, stub_texts, labels):
    """Write similarity.csv and similarity.html in OUT; returns a line to show, or None."""
    from autograder.files import write_atomic

    texts = documents(out_dir, entries)
    try:
        pairs = compare(texts, stub_texts)
    except ImportError:
        return "similarity: copydetect is not installed here (make venv installs it); no similarity report"
    write_atomic(os.path.join(out_dir, CSV_NAME), similarity_csv(pairs))
    write_atomic(os.path.join(out_dir, HTML_NAME), similarity_html(pairs, labels))
    cutoff = class_cutoff(pairs)
    flagged = sum(1 for p in pairs if listed(p, cutoff))
    return f"similarity: {flagged} of {len(pairs)} pairs stand out from the class ({cutoff:.0%} or more of one " \
           f"side's code; {HTML_NAME})" if flagged else None
