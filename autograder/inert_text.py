"""Text that a submission controls (what it printed, its error messages, file and zip entry names,
names from Gradescope's metadata), made inert for each report format.

Control characters are stripped; markdown gets the text in a code fence longer than any backtick
run inside, or with every punctuation mark escaped; a gradebook cell that a spreadsheet would read
as a formula starts with a quote. The HTML pages escape it on top of ``clean`` (and their CSP
allows no script).
"""
import re

# C0 and C1 control characters (except tab and newline), and the bidi overrides that reorder text.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What can start markup inside a line (emphasis, code, links, HTML, entities, tables, strikethrough),
# and what can start a block at its beginning (lists, headings, quotes).
MD_INLINE = re.compile(r"([\\`*_\[\]<>&!|~])")
MD_LINE_START = re.compile(r"^([-+=#>]|\d+[.)])")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes Excel, Sheets or LibreOffice read a formula


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
    """A gradebook cell a spreadsheet shows as text: one that starts like a formula gets a leading quote."""
    text = clean(text)
    return "'" + text if text.startswith(FORMULA_START) else text
