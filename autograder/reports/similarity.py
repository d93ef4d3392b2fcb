"""similarity.html and similarity.csv: which submissions share code, for an integrity review by a person.

Made with copydetect (pip: copydetect; the winnowing fingerprints of MOSS): each submission's graded Python
files (its submitted/ snapshot, so the exact code that was graded) are one document; names, strings and
comments are normalised away by copydetect's filter, and every fingerprint the stubs students start from
also hold (assignment/attention.py and mha.py) is left out, so the given boilerplate makes no pair similar.
Every pair of submissions is compared once; a pair is listed when either side has ``THRESHOLD`` or more of
its code in common with the other. The page shows each listed pair side by side with the shared code marked.

It never changes a grade: nothing here is read by the gradebook, history.csv or any feedback.
"""
import html
import io
import os

from autograder.reports.inert_text import csv_text

NOISE = 25  # characters of normalised code a match must span (copydetect's default noise threshold)
WINDOW = 1  # winnowing window: every fingerprint kept (guarantee threshold = noise threshold)
THRESHOLD = 0.5  # share of one submission's code found in the other
SIDE_BY_SIDE = 50  # listed pairs shown side by side, most similar first (each view holds both sides' code)
CSV_NAME, HTML_NAME = "similarity.csv", "similarity.html"
COLUMNS = ("submission_a", "submission_b", "share_of_a", "share_of_b", "shared_tokens", "listed")


def documents(out_dir, entries):
    """{submission id: its graded .py files joined, each under a '# --- name ---' line} from submitted/."""
    found = {}
    for submission_id, _, _ in entries:
        folder = os.path.join(out_dir, submission_id, "submitted")
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            continue
        parts = []
        for name in names:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                parts.append(f"# --- {name} ---\n{f.read()}")
        if parts:
            found[submission_id] = "\n".join(parts)
    return found


def compare(texts, boilerplate_texts):
    """[(a, b, share of a, share of b, shared tokens, a's marked html, b's marked html)] for every pair of
    ``texts`` ({id: code}), the most similar first; ``boilerplate_texts``: code whose fingerprints never count.
    The marked html is None but for the first SIDE_BY_SIDE listed pairs, the ones the page shows."""
    if len(texts) < 2:  # no pair: copydetect's import (matplotlib's, most of it) would double a one-submission grade
        return []
    from copydetect import CodeFingerprint, compare_files
    from copydetect.utils import highlight_overlap

    boilerplate = boilerplate_hashes(boilerplate_texts)
    prints = {i: CodeFingerprint("s.py", NOISE, WINDOW, boilerplate, fp=io.StringIO(text))
              for i, text in sorted(texts.items())}
    occurrences = {i: _occurrences(fp) for i, fp in prints.items()}
    ids = list(prints)
    compared = []
    for n, a in enumerate(ids):
        for b in ids[n + 1:]:
            overlap, share_a, share_b = _shares(prints[a], prints[b], occurrences[a], occurrences[b])
            compared.append((a, b, share_a, share_b, overlap))
    compared.sort(key=lambda p: (-max(p[2], p[3]), p[0], p[1]))
    pairs, shown = [], 0
    for a, b, share_a, share_b, overlap in compared:
        marked_a = marked_b = None
        if overlap and listed((a, b, share_a, share_b)) and shown < SIDE_BY_SIDE:  # the pairs the page shows
            shown += 1
            _, _, (slices_a, slices_b) = compare_files(prints[a], prints[b])
            marked_a, _ = highlight_overlap(prints[a].raw_code, slices_a, "<mark>", "</mark>", escape_html=True)
            marked_b, _ = highlight_overlap(prints[b].raw_code, slices_b, "<mark>", "</mark>", escape_html=True)
        pairs.append((a, b, share_a, share_b, overlap, marked_a, marked_b))
    return pairs


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


def listed(pair):
    return max(pair[2], pair[3]) >= THRESHOLD


def similarity_csv(pairs):
    """The pairs as CSV; the submission ids are the students' own folder names, guarded as every kit CSV is."""
    return csv_text([COLUMNS, *([a, b, f"{share_a:.2f}", f"{share_b:.2f}", overlap,
                                 "yes" if listed((a, b, share_a, share_b)) else ""]
                                for a, b, share_a, share_b, overlap, _, _ in pairs)],
                    ("share_of_a", "share_of_b", "shared_tokens"))


def similarity_html(pairs, labels):
    """The listed pairs, then each side by side; ``labels``: {id: who handed it in}."""
    shown = [p for p in pairs if listed(p)]
    e = html.escape
    body = ["<h1>Code similarity</h1>",
            f"<p>{len(pairs)} pairs compared with copydetect (k = {NOISE} characters of normalised code; the stubs' "
            f"code left out); {len(shown)} pairs share {THRESHOLD:.0%} or more of one side's code. Similar code is a "
            "reason to look, never a finding: two correct solutions of a short exercise can look alike. "
            "This page changes no grade.</p>"]
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
    from autograder.reports.report import write_atomic

    texts = documents(out_dir, entries)
    try:
        pairs = compare(texts, stub_texts)
    except ImportError:
        return "similarity: copydetect is not installed here (make venv installs it); no similarity report"
    write_atomic(os.path.join(out_dir, CSV_NAME), similarity_csv(pairs))
    write_atomic(os.path.join(out_dir, HTML_NAME), similarity_html(pairs, labels))
    flagged = sum(1 for p in pairs if listed(p))
    return f"similarity: {flagged} of {len(pairs)} pairs share {THRESHOLD:.0%} or more of one side's code " \
           f"({HTML_NAME})" if flagged else None
