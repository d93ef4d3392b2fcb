"""Text that a submission controls (what it printed, its error messages, file and zip entry names,
names from Gradescope's metadata), made inert for each report format.

Control characters are stripped; markdown gets the text in a code fence longer than any backtick
run inside, or with every punctuation mark escaped; a gradebook cell starts with a quote unless it
plainly starts with a letter or a digit. The HTML pages escape it on top of ``clean`` (and their CSP
allows no script).
"""
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
