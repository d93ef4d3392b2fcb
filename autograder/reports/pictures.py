"""Pictures for the reports: expected vs got as a text heatmap (Gradescope strips images) or a PNG.

A ``figure`` is what the grader keeps of a failed matrix comparison (``compare.matrix_figure``):
``{"what": "weights" | "mask" | ..., "expected": rows, "got": rows}`` and, when the tensor holds several
matrices, ``"where"`` (e.g. "batch 1, head 2": the one with the largest error), at most 16 x 16, and
the values may be NaN, inf or any finite float64 (±1.7e308 too: every step below is total, and
``text_or_note`` drops a picture with a note rather than fail the report it is in). Pillow and
matplotlib (its colormaps and font) are imported only inside the PNG functions, so grading pays for
them only when a picture is drawn (and Gradescope, which shows no images, never does).
"""
import functools
import io
import math
from pathlib import Path

SHADES = " .:-=+*#%@"  # low -> high
NAN, INF = "?", "!"
BAD_COLOR = "#ff00ff"  # NaN/inf cells in the PNGs: a colour no colormap here uses


# --- text -------------------------------------------------------------------------------------

def text_heatmap(figure):
    """expected | got | |diff| side by side, one shade character per entry, with a legend."""
    expected, got = figure["expected"], figure["got"]
    rows, cols = len(expected), len(expected[0]) if expected else 0
    diff = [[_abs_diff(e, g) for e, g in zip(erow, grow)] for erow, grow in zip(expected, got)]
    low, high = _finite_range(expected, got)
    top = _finite_range(diff)[1]
    panels = [("expected", expected, low, high), ("got", got, low, high), ("|diff|", diff, 0.0, top)]
    repeat = 2 if cols <= 8 else 1  # two characters per entry look square; one keeps 16 columns narrow
    width = repeat * cols
    index = "".join(f"{j % 10:<{repeat}}" for j in range(cols))
    lines = [f"{figure['what']}, {rows}x{cols} matrix{_which(figure)} ({_axes(figure['what'])}):",
             "   " + " ".join(f" {title:^{width}} " for title, *_ in panels),
             "   " + " ".join(f" {index} " for _ in panels)]
    for i in range(rows):
        cells = ("|" + "".join(_shade(v, lo, hi) * repeat for v in matrix[i]) + "|" for _, matrix, lo, hi in panels)
        lines.append(f"{i:>2} " + " ".join(cells))
    lines.append(f"shades '{SHADES}' low to high: expected/got from {low:.3g} to {high:.3g}, "
                 f"|diff| from 0 to {top:.3g}; '{NAN}' NaN, '{INF}' inf")
    return "\n".join(lines)


def text_or_note(figure):
    """``text_heatmap(figure)``, or one line saying it could not be drawn: a picture never costs a grade."""
    try:
        return text_heatmap(figure)
    except Exception as err:  # noqa: BLE001 - the report comes first
        return f"(the picture could not be drawn: {type(err).__name__})"


def _which(figure):
    """Which matrix of the tensor is drawn: " of batch 1, head 2 (the largest error)", or nothing for one matrix."""
    where = figure.get("where")
    return f" of {where} (the largest error)" if where else ""


def _axes(what):
    return "rows: query i, columns: key j" if what == "weights" else "rows i, columns j"


def _abs_diff(expected, got):
    if expected == got or (math.isnan(expected) and math.isnan(got)):
        return 0.0  # equal, including the same inf: no difference to show
    return abs(expected - got)  # NaN or inf when only one side is finite


def _finite_range(*matrices):
    values = [v for matrix in matrices for row in matrix for v in row if math.isfinite(v)]
    return (min(values), max(values)) if values else (0.0, 0.0)


def _fraction(value, low, high):
    """Where ``value`` lies from ``low`` (0) to ``high`` (1), for finite values of any size: halved first,
    so that high - low cannot overflow (1.7e308 - -1.7e308 is inf, and inf / inf is NaN)."""
    span = high / 2 - low / 2
    return min(max((value / 2 - low / 2) / span, 0.0), 1.0) if span > 0 else 0.0


def _shade(value, low, high):
    if math.isnan(value):
        return NAN
    if math.isinf(value):
        return INF
    if high <= low:
        return SHADES[-1] if value > 0 else SHADES[0]
    return SHADES[round(_fraction(value, low, high) * (len(SHADES) - 1))]


# --- PNG --------------------------------------------------------------------------------------

CELL_PX = 30, 22  # a cell's side in pixels: up to 8 columns, more (up to 16)
MARGIN_PX = 75, 10, 75, 60  # left, right, top, bottom: room for the indices and titles
GAP = 3.5  # cells after each panel: room for a colour ramp and its labels
FONT_PX = {"title": 15, "panel": 14, "label": 11, "bad": 10}


def png_heatmap(figure):
    """expected, got (one colour scale) and |expected - got| side by side as a PNG, with token indices.

    Cells are pixels of matplotlib's colormaps, scaled up, and the labels are text drawn by Pillow in
    matplotlib's own font. The same picture through matplotlib's artists took about 50 ms (its text
    layout most of it), and every failing submission of a batch draws up to html_pages.MAX_PICTURES.
    """
    import numpy as np
    from PIL import Image, ImageDraw

    expected, got = (np.asarray(figure[key], dtype=float) for key in ("expected", "got"))
    same = (expected == got) | (np.isnan(expected) & np.isnan(got))
    with np.errstate(over="ignore", invalid="ignore"):  # 1.7e308 - -1.7e308 is inf: shown as such
        diff = np.where(same, 0.0, np.abs(expected - got))  # NaN/inf where only one side is finite
    rows, cols = expected.shape
    cell = CELL_PX[0] if cols <= 8 else CELL_PX[1]
    left, right, top, bottom = MARGIN_PX
    panel_px, gap_px = cols * cell, round(GAP * cell)
    image = Image.new("RGB", (left + 3 * (panel_px + gap_px) + right, top + rows * cell + bottom), "white")
    draw = ImageDraw.Draw(image)
    low, high = _finite_range(expected.tolist(), got.tolist())
    weights = figure["what"] == "weights"
    panels = [("expected", expected, "viridis", low, high), ("got", got, "viridis", low, high),
              ("|expected - got|", diff, "Reds", 0.0, _finite_range(diff.tolist())[1])]
    for k, (title, matrix, cmap, vmin, vmax) in enumerate(panels):
        x0 = left + k * (panel_px + gap_px)
        cmap = _colormap(cmap)
        if matrix.size:
            image.paste(_cells(matrix, cmap, vmin, vmax, cell), (x0, top))
        draw.rectangle((x0 - 1, top - 1, x0 + panel_px, top + rows * cell), outline="black")
        _text(draw, (x0 + panel_px / 2, top - 6), title, "panel", "md")
        for j in range(cols):
            _text(draw, (x0 + (j + 0.5) * cell, top + rows * cell + 4), str(j), "label", "ma")
        _text(draw, (x0 + panel_px / 2, top + rows * cell + 22), "key j" if weights else "column j", "label", "ma")
        for i, j in zip(*np.nonzero(~np.isfinite(matrix))):
            _text(draw, (x0 + (j + 0.5) * cell, top + (i + 0.5) * cell), NAN, "bad", "mm")
        if k:  # expected and got share one scale, so one colour ramp for both
            _colour_ramp(image, draw, x0 + panel_px + round(0.3 * cell), top, rows * cell, cell, cmap, vmin, vmax)
    for i in range(rows):
        _text(draw, (left - 6, top + (i + 0.5) * cell), str(i), "label", "rm")
    axis = _text_image("query i" if weights else "row i", "label").rotate(90, expand=True)
    image.paste(axis, (left - 30 - axis.width, top + (rows * cell - axis.height) // 2))
    note = "  (magenta '?' = NaN or inf)" if not np.isfinite(np.concatenate([expected, got])).all() else ""
    _text(draw, (image.width / 2, top / 3), f"{figure['what']}: {rows}x{cols} matrix{_which(figure)}{note}",
          "title", "mm")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def preload():
    """Import and load what ``png_heatmap`` uses (Pillow, matplotlib's colormaps, the fonts) by drawing
    one cell: a process that forks graders calls it once, and each fork draws without loading them."""
    png_heatmap({"what": "weights", "expected": [[0.0]], "got": [[1.0]]})


def _cells(matrix, cmap, low, high, cell):
    """The matrix as an image of ``cell``-pixel squares; NaN and inf in the colormap's "bad" colour."""
    import numpy as np
    from PIL import Image

    # Fractions computed here (NaN and inf stay "bad"): matplotlib's own scaling overflows between
    # -1.7e308 and 1.7e308.
    shown = np.vectorize(lambda v: _fraction(v, low, high) if math.isfinite(v) else math.nan, otypes=[float])(matrix)
    rgb = cmap(shown, bytes=True)[..., :3]  # (rows, cols, 3)
    return Image.fromarray(np.ascontiguousarray(rgb.repeat(cell, axis=0).repeat(cell, axis=1)), "RGB")


def _colour_ramp(image, draw, x0, y0, height, cell, cmap, low, high):
    """A colorbar: the scale from ``low`` (bottom) to ``high`` (top), labelled at both ends and the middle."""
    import numpy as np
    from PIL import Image

    width = max(round(0.5 * cell), 1)
    ramp = cmap(np.linspace(1, 0, height), bytes=True)[:, None, :3].repeat(width, axis=1)
    image.paste(Image.fromarray(np.ascontiguousarray(ramp), "RGB"), (x0, y0))
    draw.rectangle((x0 - 1, y0 - 1, x0 + width, y0 + height), outline="black")
    rows = height // cell
    labels = [(0, high), (height / 2, low / 2 + high / 2), (height, low)] if rows >= 3 else [(0, high), (height, low)]
    for y, value in labels:
        _text(draw, (x0 + width + 4, y0 + y), f"{value:.3g}", "label", "lm")


def _text(draw, xy, text, size, anchor):
    draw.text(xy, text, fill="black", font=_font(FONT_PX[size]), anchor=anchor)


def _text_image(text, size):
    """``text`` alone on a white image just its size (to be rotated)."""
    from PIL import Image, ImageDraw

    font = _font(FONT_PX[size])
    x0, y0, x1, y1 = font.getbbox(text)
    image = Image.new("RGB", (x1 - x0 + 2, y1 - y0 + 2), "white")
    ImageDraw.Draw(image).text((1 - x0, 1 - y0), text, fill="black", font=font)
    return image


@functools.lru_cache(maxsize=None)
def _font(pixels):
    # matplotlib's bundled DejaVu Sans: the font the kit's other figures use, present wherever matplotlib is.
    import matplotlib
    from PIL import ImageFont

    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"), pixels)


@functools.lru_cache(maxsize=None)
def _colormap(name):
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=BAD_COLOR)
