"""Text that a submission controls (what it printed, its error messages, file and zip entry names,
names from Gradescope's metadata), made inert for each report format.

Control characters are stripped; markdown gets the text in a code fence longer than any backtick
run inside, or with every punctuation mark escaped; a gradebook cell starts with a quote unless it
plainly starts with a letter or a digit. The HTML pages escape it on top of ``clean`` (and their CSP
allows no script).
"""
import csv
import io
import re
import unicodedata

# C0 and C1 control characters (except tab and newline), and the bidi overrides that reorder text.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What can start markup inside a line (emphasis, code, links, HTML, entities, tables, strikethrough),
# and what can start a block at its beginning (lists, headings, quotes).
MD_INLINE = re.compile(r"([\\`*_\[\]<>&!|~])")
MD_LINE_START = re.compile(r"^([-+=#>]|\d+[.)])")


def clean(text):
    """``text`` without control characters, except newline and tab."""
    return CONTROL.sub("", str(text))


def md_text(text):
    """Student-controlled text as one line of inert markdown: no markup, link, HTML or entity survives."""
    text = MD_INLINE.sub(r"\\\1", " ".join(clean(text).split()))
    return MD_LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], text)


def fenced(text):
    """``text`` in a code fence that nothing inside can close: one backtick more than its longest run."""
    text = clean(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def spreadsheet_cell(text):
    """A gradebook cell a spreadsheet shows as text. Allow-list: it is written as it is only when its
    first character that counts is a letter or a digit (after the spaces and invisible format
    characters a spreadsheet may trim or skip, and in NFKC form, so a fullwidth ＝ is an =);
    anything else (=, +, -, @, a quote, a bracket, a symbol) gets a leading quote."""
    text = clean(text)
    first = next((ch for ch in text if not ch.isspace() and unicodedata.category(ch) != "Cf"), "")
    plain = not first or unicodedata.normalize("NFKC", first)[:1].isalnum()
    return text if plain else "'" + text


# A number the kit computed (-5, 87.5, 1e-3): in a number column it is written as it is, and stays a number.
PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def csv_cell(value, number=False):
    """One cell of a CSV the kit writes: in a `number` column a plain number as it is; anything else (any text a
    student or an instructor controls, even "-42") through ``spreadsheet_cell``."""
    text = "" if value is None else str(value)
    return text if number and PLAIN_NUMBER.fullmatch(text) else spreadsheet_cell(text)


def csv_value(cell):
    """What ``csv_cell`` was given, from the text cell it wrote (its leading quote removed): for a kit file read
    back."""
    return cell[1:] if cell.startswith("'") and csv_cell(cell[1:]) == cell else cell


def csv_text(rows, numbers=()):
    """The CSV text of `rows` (a header first), every cell guarded by ``csv_cell``; ``numbers``: the header's names
    of the columns that hold numbers. The one writer of every CSV the kit writes (gradebook.csv, the import
    files, history.csv, similarity.csv, the instructors' templates)."""
    rows = [list(row) for row in rows]
    is_number = [name in numbers for name in rows[0]] if rows else []
    buffer = io.StringIO()
    csv.writer(buffer).writerows([csv_cell(cell, n) for cell, n in zip(row, is_number + [False] * len(row))]
                                 for row in rows)
    return buffer.getvalue()
