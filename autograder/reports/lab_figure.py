"""The lab text's example picture, drawn from the reference: bidirectional vs causal attention.

    render(Path("solution/attention.py")) -> PNG bytes

The sentence, seed and projections are the playground's (section 3), so the picture in
assignment/README.md is the one a student's notebook draws once attention.py is right.
autograder/platforms/generate.py writes it to assignment/causal_attention.png like the stubs, and the
kit's tests fail when the committed image drifts from what this module draws.
"""
import importlib.util
import io
from pathlib import Path

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]
D_MODEL = 8
BLOCKED_COLOUR, BLOCKED_EDGE, HATCH = "0.85", "0.55", "///"


def load_reference(path: Path):
    """The reference attention.py as a private module (sys.modules keeps no `attention` from it)."""
    spec = importlib.util.spec_from_file_location("_lab_figure_attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sentence_weights(attention):
    """(bidirectional, causal, mask) weights of the playground's six-token sentence, (T, T) each."""
    import torch

    torch.manual_seed(0)
    x = torch.randn(len(TOKENS), D_MODEL)  # one embedding per token: (T, d_model)
    w_q, w_k, w_v = (torch.randn(D_MODEL, D_MODEL) / 2 for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_k)
    mask = attention.causal_mask(len(TOKENS))
    _, bidirectional = attention.scaled_dot_product_attention(q, k, v)
    _, causal = attention.scaled_dot_product_attention(q, k, v, mask)
    return bidirectional, causal, mask


def render(source: Path) -> bytes:
    """The figure as PNG bytes, the same on every run (no date or version in its metadata)."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    bidirectional, causal, mask = sentence_weights(load_reference(source))
    labels = [f"{i} {token}" for i, token in enumerate(TOKENS)]
    with matplotlib.rc_context(matplotlib.rcParamsDefault):  # no local matplotlibrc changes the bytes
        fig = Figure(figsize=(7.6, 3.8), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, (title, weights, allowed) in zip(axes, [("bidirectional", bidirectional, None),
                                                        ("causal", causal, mask)]):
            blocked = ~allowed if allowed is not None else weights != weights  # all False
            image = ax.imshow(weights.masked_fill(blocked, float("nan")).numpy(), vmin=0, vmax=1, cmap="viridis")
            for i, j in blocked.nonzero().tolist():
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=BLOCKED_COLOUR,
                                       edgecolor=BLOCKED_EDGE, hatch=HATCH, linewidth=0))
            ax.set_title(title)
            ax.set_xticks(range(len(labels)), labels, rotation=45)
            ax.set_yticks(range(len(labels)), labels)
            ax.set_xlabel("key")
            ax.set_ylabel("query")
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="weight")
        fig.legend(handles=[Patch(facecolor=BLOCKED_COLOUR, edgecolor=BLOCKED_EDGE, hatch=HATCH,
                                  label="blocked (weight 0)")], loc="outside lower center")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    return buffer.getvalue()
