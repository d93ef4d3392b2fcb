"""Pictures for the reports: expected vs got as a text heatmap (Gradescope strips images) or a PNG.

A ``figure`` is what the grader keeps of a failed matrix comparison (``compare.matrix_figure``):
``{"what": "weights" | "mask" | ..., "expected": rows, "got": rows}`` and, when the tensor holds several
matrices, ``"where"`` (e.g. "batch 1, head 2": the one with the largest error), at most 16 x 16, and
the values may be NaN, inf or any finite float64 (±1.7e308 too: every step below is total, and
``text_or_note`` drops a picture with a note rather than fail the report it is in). matplotlib is imported only inside the PNG functions, so grading
pays for it only when a picture is drawn (and Gradescope, which shows no images, never does).
"""
import io
import math

SHADES = " .:-=+*#%@"  # low -> high
NAN, INF = "?", "!"
BAD_COLOR = "#ff00ff"  # NaN/inf cells in the PNGs: a colour no colormap here uses
DPI = 100


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

def png_heatmap(figure):
    """expected, got (one colour scale) and |expected - got| side by side as a PNG, with token indices.

    All three are drawn on one bare Axes, with the indices as plain text and a colour ramp per
    scale: matplotlib's tick and colorbar machinery would make each picture 3x slower, and every
    failing submission of a batch pays for its pictures.
    """
    import numpy as np

    expected, got = (np.asarray(figure[key], dtype=float) for key in ("expected", "got"))
    same = (expected == got) | (np.isnan(expected) & np.isnan(got))
    with np.errstate(over="ignore", invalid="ignore"):  # 1.7e308 - -1.7e308 is inf: shown as such
        diff = np.where(same, 0.0, np.abs(expected - got))  # NaN/inf where only one side is finite
    rows, cols = expected.shape
    low, high = _finite_range(expected.tolist(), got.tolist())
    weights = figure["what"] == "weights"
    fig, canvas, ax = _cells_axes(width=3 * cols + 3 * GAP, height=rows, cell=0.3 if cols <= 8 else 0.22)
    panels = [("expected", expected, "viridis", low, high), ("got", got, "viridis", low, high),
              ("|expected - got|", diff, "Reds", 0.0, _finite_range(diff.tolist())[1])]
    for k, (title, matrix, cmap, vmin, vmax) in enumerate(panels):
        x0 = k * (cols + GAP)
        cmap = _colormap(cmap)
        # Colours from fractions computed here (NaN and inf stay "bad"): matplotlib's own scaling overflows
        # between -1.7e308 and 1.7e308.
        shown = np.vectorize(lambda v: _fraction(v, vmin, vmax) if math.isfinite(v) else math.nan, otypes=[float])
        ax.imshow(shown(matrix) if matrix.size else matrix, cmap=cmap, vmin=0.0, vmax=1.0,
                  extent=(x0, x0 + cols, rows, 0), interpolation="nearest")
        ax.add_patch(_frame(x0, cols, rows))
        _label(ax, x0 + cols / 2, -0.4, title, ha="center", va="bottom", fontsize=10)
        for j in range(cols):
            _label(ax, x0 + j + 0.5, rows + 0.15, str(j), ha="center", va="top", fontsize=8)
        _label(ax, x0 + cols / 2, rows + 0.9, "key j" if weights else "column j", ha="center", va="top", fontsize=8)
        for i, j in zip(*np.nonzero(~np.isfinite(matrix))):
            _label(ax, x0 + j + 0.5, i + 0.5, NAN, ha="center", va="center", fontsize=7)
        if k:  # expected and got share one scale, so one colour ramp for both
            _colour_ramp(ax, x0 + cols + 0.3, rows, cmap, vmin, vmax)
    for i in range(rows):
        _label(ax, -0.2, i + 0.5, str(i), ha="right", va="center", fontsize=8)
    _label(ax, -1.0, rows / 2, "query i" if weights else "row i", ha="right", va="center", rotation=90, fontsize=8)
    note = "  (magenta '?' = NaN or inf)" if not np.isfinite(np.concatenate([expected, got])).all() else ""
    fig.suptitle(f"{figure['what']}: {rows}x{cols} matrix{_which(figure)}{note}", fontsize=11, parse_math=False)
    return _png(canvas)


GAP = 3.5  # cells after each panel: room for a colour ramp and its labels


def _label(ax, x, y, text, **style):
    """Plain text at (x, y): never parsed as mathtext (a label is no formula, and skipping the parse
    makes a heatmap about 15% faster: every failing submission of a batch draws four)."""
    return ax.text(x, y, text, parse_math=False, **style)


def _cells_axes(width, height, cell):
    """A figure whose one Axes, without ticks or frame, is ``width`` x ``height`` square cells."""
    left, right, bottom, top = 0.75, 0.1, 0.6, 0.75  # inches around the cells, for the labels
    fig, canvas = _figure(left + width * cell + right, bottom + height * cell + top)
    fig_width, fig_height = fig.get_figwidth(), fig.get_figheight()
    ax = fig.add_axes((left / fig_width, bottom / fig_height, width * cell / fig_width, height * cell / fig_height))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # row 0 on top, as in a matrix
    ax.set_axis_off()
    return fig, canvas, ax


def _frame(x0, width, height):
    from matplotlib.patches import Rectangle

    return Rectangle((x0, 0), width, height, fill=False, linewidth=0.8)


def _colour_ramp(ax, x0, rows, cmap, low, high):
    """A colorbar drawn as one image: the scale from ``low`` (bottom) to ``high`` (top), labelled."""
    import numpy as np

    ax.imshow(np.linspace(1, 0, 64)[:, None], cmap=cmap, extent=(x0, x0 + 0.5, rows, 0), aspect="auto")
    ax.add_patch(_frame(x0, 0.5, rows))
    labels = [(0, high), (rows / 2, low / 2 + high / 2), (rows, low)] if rows >= 3 else [(0, high), (rows, low)]
    for y, value in labels:
        _label(ax, x0 + 0.7, y, f"{value:.3g}", va="center", fontsize=8)


def _figure(width, height):
    # A bare Figure on an Agg canvas: no pyplot, so no global figure registry to clean up.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    return fig, FigureCanvasAgg(fig)


def _colormap(name):
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=BAD_COLOR)


def _png(canvas):
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return buffer.getvalue()
