"""Properties of a student's own results, measured: a hint states one that failed, with its evidence.

Every function takes what the student's code returned (and, where a property needs it, a second call on the
same inputs, or the inputs themselves) and returns one sentence saying which property failed and where, or
None when it holds. Nothing here knows the right answer or guesses a cause: a catalogued cause is named only by
its own probe (catalogue.py recomputes it). The grader calls these in the hidden suite, and
``make stubs`` copies this module's code into a marked region of the public checks
(assignment/tests/checks.py), so ``make test`` and the grade say the same words.
"""
import itertools
import math

import torch

PROPERTY_ATOL = 1e-4  # float32-loose: a float32 step in a float64 run is the precision test's to charge
# How each property's sentence opens, by property: how a report (or a test) tells which properties a text states.
PROPERTY_WORDS = {
    "not a distribution": ("the weights are not a distribution",),
    "blocked key weighted": ("a key the mask blocks got weight",),
    "output is not weights @ value": ("the output is not your weights applied to the values",),
    "random": ("two calls on the same inputs returned different results",),
    "sizes permuted": ("the sizes are right but in the wrong order",),
    "sizes merged or split": ("in one dim where two belong", "in two dims where one belongs"),
    "dims of size 1 missing or extra": ("in order, without its ", "of size 1 more: remove"),
    "dtype or device changed": ("the dtype changed", "the device changed"),
    "padding polarity": ("the mask is True at the padding",),
    "another pad_id": ("the mask follows pad_id=",),
    "first sentence's padding": ("every sentence got the first sentence's padding",),
    "scores scaled": ("the weights are softmax(c · Q K^T / sqrt(d_k)) with c = ",),
    "weights right, output wrong": ("your weights are right in every head, the output is not",),
    "rows scaled": ("each wrong output row is a multiple of the right one",),
    "rows across blocks": ("only the output rows whose keys span more than one block are wrong",),
    "not a weighted average": ("is not a weighted average of the value rows",),
    "not finite": ("where attention's output is finite",),
    "a row of one block wrong": ("is wrong though every key it may attend lies in the first block",
                                 "is wrong though all the keys lie in one block"),
    "one block right, more wrong": ("the output is right when one block holds every key",),
    "one block wrong": ("the output is wrong even when one block holds every key",),
    "projection not of the new token": ("the projection ran ", "was given an input of shape "),
    "cached steps wrong": ("step 1 is right and steps",),
    "every step wrong": ("every step is wrong, the first (no cache yet) too",),
    "forward already wrong": ("on these inputs is already wrong",),
    "only the gradient wrong": ("your forward's output and weights are right, the gradient",
                                "your forward's output is right, the gradient"),
    "no gradient": ("no gradient reaches ",),
    "backward not of the forward": ("does not match your own forward",),  # a finite difference of it, measured
    "sizes stored wrong": ("the sizes stored are not the ones given",),
    "bias not followed": ("bias=True gave ", "bias=False gave "),
    "size not refused": ("was not refused with a ValueError",),
    # student.forbidden_message and the public checks' twin: said only where the op recorder saw the call
    "a forbidden built-in called": ("which the from-scratch rule forbids",),
    # error_hints.PLAIN_VALUE_ERROR_HINT: said only where the call raised a ValueError that is not the lab's class
    "a plain ValueError raised": ("not a plain ValueError",),
    "scores not from Q K^T": ("the weights are not a softmax of any multiple of Q K^T",),
    "a row per key": ("one row per key where one per query belongs",),
    "returned an input": ("as it was given: nothing was computed",),
    "heads not merged": ("the heads are back in place but not flattened", "holds values of other positions",
                         "each position holds its own values in the wrong order"),
    "where the matrices differ": ("; only positions ", "; only blocked positions", "; only allowed positions"),
    "mask constant": ("at every position: it follows nothing",),
    "sampled rows not attention": ("rows compared with attention",),
}


# How a test of a higher part that passed only on the lab's own lower parts is noted (one defect, one charge):
# by the lowest part that had to stand in, the same words in `make test` and the grade.
ATTENTION_STOOD_IN = ("MultiHeadAttention is right when given a correct attention: it passed with the lab's attention "
                      "in place of yours, so only the attention tests count that bug.")
CONSTRUCTION_STOOD_IN = ("MultiHeadAttention is right on a correct construction: it passed once the lab's sizes and four "
                         "projections stood in for your __init__'s, so only the construction tests count that bug.")
HEADS_STOOD_IN = ("MultiHeadAttention is right on a correct split_heads and merge_heads: it passed once the lab's stood "
                  "in for yours, so only the head split/merge tests count that bug.")


def properties_named(text):
    """The properties (PROPERTY_WORDS' names) whose sentences ``text`` holds."""
    return {name for name, openings in PROPERTY_WORDS.items() if any(words in text for words in openings)}


def _at(index):
    return "(" + ", ".join(str(int(i)) for i in index) + ")"


def _worst(values):
    """The index of the largest entry of ``values``, as a tuple."""
    flat = int(values.flatten().argmax())
    index = []
    for size in reversed(values.shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def _first_true(t):
    """The index of the first True entry of ``t``, as a tuple."""
    return tuple(int(i) for i in t.nonzero()[0].tolist())


def not_a_distribution(weights):
    """Why ``weights`` are not a distribution over the keys (a weight is negative or not finite, or a row does
    not sum to 1: which row, what sum), or None."""
    w = weights.detach().double()
    if w.dim() < 1 or not w.numel():
        return None
    if not torch.isfinite(w).all():
        return f"the weights are not a distribution: they hold inf/NaN, first at {_at(_first_true(~torch.isfinite(w)))}"
    if (w < -PROPERTY_ATOL).any():
        at = _worst(-w)
        return f"the weights are not a distribution: weight {_at(at)} is {w[at].item():.4g}, below 0"
    off = (w.sum(-1) - 1).abs()
    if (off > PROPERTY_ATOL).any():
        row = _worst(off)
        return (f"the weights are not a distribution over the keys: row {_at(row)} sums to "
                f"{w.sum(-1)[row].item():.4g}, not 1")
    return None


def blocked_weight(weights, mask):
    """Which keys the mask blocks got weight, or None: "above the diagonal only" for a (T, T) mask whose
    leaks all lie there, "padding position p of sentence b" for a (B, 1, 1, T) mask, else the first index."""
    if mask is None:
        return None
    w = weights.detach().double()
    allowed = mask != 0  # a bool mask too: True != 0
    try:
        blocked = ~allowed.expand_as(w)
    except RuntimeError:
        return None
    leaked = blocked & (w.abs() > 0) & torch.isfinite(w)
    if not leaked.any():
        return None
    largest = w[leaked].abs().max().item()
    pattern = leaked.reshape(-1, *w.shape[-2:]).any(dim=0)  # (T_q, T_k): leaked in any matrix
    t_q, t_k = pattern.shape
    if mask.dim() == 4 and mask.shape[1:3] == (1, 1):  # a padding mask: which sentence, which position
        sentence, *_, position = _first_true(leaked)
        return (f"a key the mask blocks got weight (up to {largest:.3g}): padding position {int(position)} of "
                f"sentence {int(sentence)}")
    where = ""
    if t_q == t_k and t_q > 1 and not (pattern & ~torch.ones(t_q, t_k, dtype=torch.bool).triu(1)).any():
        where = ": positions above the diagonal only (the future)"
    return f"a key the mask blocks got weight (up to {largest:.3g}), first at index {_at(_first_true(leaked))}{where}"


def output_not_applied(output, weights, value):
    """Why ``output`` is not ``weights @ value`` (the student's own weights), or None."""
    w, out, v = (t.detach().double() for t in (weights, output, value))
    try:
        applied = w @ v
    except RuntimeError:
        return f"the output is not your weights applied to the values: weights {tuple(w.shape)} and values {tuple(v.shape)} do not multiply"
    if applied.shape != out.shape:
        return (f"the output is not your weights applied to the values: it has shape {tuple(out.shape)}, "
                f"weights @ value has {tuple(applied.shape)}")
    error = (out - applied).abs().nan_to_num(float("inf"))
    if (error > PROPERTY_ATOL * (1 + applied.abs())).any():
        at = _worst(error)
        return (f"the output is not your weights applied to the values: output{_at(at)} is {out[at].item():.4g}, "
                f"(weights @ value){_at(at)} is {applied[at].item():.4g}")
    return None


SCORE_FIT = 1e-3  # of the log-weights' spread: what a float32 softmax of c · Q K^T / sqrt(d_k) stays within


def scores_off(weights, query, key, mask=None):
    """How the weights depart from a softmax over the allowed keys of Q K^T / sqrt(d_k), read from their logs,
    or None: a softmax of c times those scores for one c != 1 (the scale: which c, what it divides by), or of
    no multiple of them (the scores are made of something else). Weights that are not a distribution, or
    that weigh a blocked key, are other properties' (checked first); rows with fewer than two positive
    allowed weights say nothing here."""
    if not all(torch.is_tensor(t) for t in (weights, query, key)) or query.dim() < 2 or key.dim() < 2:
        return None
    w = weights.detach().double()
    width = query.size(-1)  # d_k
    try:
        s = (query.detach().double() @ key.detach().double().transpose(-2, -1) / math.sqrt(width)).expand(w.shape)
        keep = (w > 1e-30) & torch.isfinite(w)
        keep = keep if mask is None else keep & (mask != 0).expand(w.shape)
    except RuntimeError:
        return None
    counted = keep.sum(-1, keepdim=True)
    rows = counted >= 2
    keep = keep & rows
    if not keep.any():
        return None
    logs = torch.where(keep, w.clamp_min(1e-300).log(), torch.zeros_like(w))
    s = torch.where(keep, s, torch.zeros_like(s))
    n = counted.clamp_min(1)
    x = torch.where(keep, s - s.sum(-1, keepdim=True) / n, torch.zeros_like(s))  # centred in each row
    y = torch.where(keep, logs - logs.sum(-1, keepdim=True) / n, torch.zeros_like(s))
    if float((x * x).sum()) == 0.0:
        return None
    c = float((x * y).sum() / (x * x).sum())
    departure = (y - c * x).abs()
    if float(departure.max()) > SCORE_FIT * max(1.0, float(y.abs().max())):
        return (f"the weights are not a softmax of any multiple of Q K^T / sqrt(d_k) over the allowed keys: their "
                f"logs depart from the best fit (c = {c:.4g}) by up to {float(departure.max()):.3g}, at "
                f"{_at(_worst(departure))}: the scores are built from other tensors or entries than query @ key^T")
    if abs(c - 1) <= SCORE_FIT:
        return None
    divisor = f"divided by {math.sqrt(width) / c:.4g}" if c > 0 else f"times {-c / math.sqrt(width):.4g}, negated"
    return (f"the weights are softmax(c · Q K^T / sqrt(d_k)) with c = {c:.4g}, not 1: your scores are Q K^T "
            f"{divisor}, where sqrt(d_k) = {math.sqrt(width):.4g} (d_k = query.size(-1) = {width})")


def tiled_rows(got, expected, value, causal, block_size):
    """Which rows of a tiled attention's output are wrong and how, measured against the right output, or None:
    every wrong row a multiple of the right one (its weights do not sum to 1), only the rows whose allowed keys
    span more than one block (causal: query i sees keys 0..i), a row outside the value rows' range (no weighted
    average of them gives it), or a wrong row whose allowed keys all lie in one block; first, an inf or NaN where
    the right output is finite. ``block_size`` None: the
    call's own (unknown), so a row spans one block only if it may attend to a single key."""
    if not (torch.is_tensor(got) and torch.is_tensor(expected) and got.shape == expected.shape):
        return None
    g, e, v = got.detach().double(), expected.detach().double(), value.detach().double()
    broken = ~torch.isfinite(g) & torch.isfinite(e)
    if broken.any():
        at = _first_true(broken)
        return (f"output row {_at(at[:-1])} holds {g[at].item()} where attention's output is finite: find the step "
                f"that makes it (exp() of a large score, 0/0 where every key of a block is masked, or -inf - -inf)")
    wrong = ((g - e).abs() > PROPERTY_ATOL * (1 + e.abs())).any(-1)  # (..., T_q)
    if not wrong.any() or not torch.isfinite(g).all():
        return None
    ratio = (g * e).sum(-1) / (e * e).sum(-1).clamp_min(1e-300)  # (..., T_q): the best multiple of each row
    scaled = ((g - ratio[..., None] * e).abs() <= PROPERTY_ATOL * (1 + g.abs())).all(-1)
    if scaled[wrong].all():
        row = _first_true(wrong)
        return (f"each wrong output row is a multiple of the right one (row {_at(row)} is {ratio[row].item():.4g} times "
                f"it): the weights of those rows do not sum to 1")
    rows, size = torch.arange(g.size(-2)), block_size or 1  # unknown: as if one key a block
    spans = rows >= size if causal else torch.full_like(rows, v.size(-2) > size, dtype=torch.bool)
    if block_size and not spans.all() and not (wrong & ~spans).any():
        return (f"only the output rows whose keys span more than one block are wrong (block_size={block_size}; the "
                f"first wrong row is {int(wrong.reshape(-1, wrong.size(-1)).any(0).nonzero()[0])}): the blocks' "
                f"partial results are combined wrongly")
    low, high = v.amin(-2, keepdim=True), v.amax(-2, keepdim=True)  # (..., 1, d_v): no average leaves this range
    outside = ((g < low - PROPERTY_ATOL) | (g > high + PROPERTY_ATOL))
    if outside.any():
        at = _first_true(outside)
        return (f"output row {_at(at[:-1])} is not a weighted average of the value rows: feature {at[-1]} is "
                f"{g[at].item():.4g}, outside the values' range [{low[at[:-2] + (0, at[-1])].item():.4g}, "
                f"{high[at[:-2] + (0, at[-1])].item():.4g}]")
    if (wrong & ~spans).any():
        row = _first_true(wrong & ~spans)
        where = f"block_size={block_size}" if block_size else "any block size"
        if causal:
            return (f"output row {_at(row)} is wrong though every key it may attend lies in the first block ({where}, "
                    f"causal): check what one block computes, and what the later blocks, every key of them masked "
                    f"for this row, add to it")
        return (f"output row {_at(row)} is wrong though all the keys lie in one block ({where}): one block's result "
                f"is wrong already")
    return None


def tiled_blocks(outputs, expected, keys):
    """What a tiled attention's outputs at several block sizes on the same inputs tell against the right output,
    or None: right when one block holds every key (block_size >= ``keys``, T_k) but wrong with a smaller block,
    or wrong even with one block. ``outputs``: {block_size: what the call returned}."""
    e = expected.detach().double()

    def right(got):
        return torch.is_tensor(got) and got.shape == e.shape and bool(
            ((got.detach().double() - e).abs() <= PROPERTY_ATOL * (1 + e.abs())).all())
    whole = [size for size in sorted(outputs) if size >= keys]
    if not whole or not torch.is_tensor(outputs[whole[0]]) or outputs[whole[0]].shape != e.shape:
        return None
    one = whole[0]
    if not right(outputs[one]):
        return (f"the output is wrong even when one block holds every key (block_size={one} >= {keys} keys): check "
                f"what one block computes, and where the running max, sum and output start")
    wrong = [size for size in sorted(outputs) if size < keys and torch.is_tensor(outputs[size])
             and outputs[size].shape == e.shape and not right(outputs[size])]
    if wrong:
        return (f"the output is right when one block holds every key (block_size={one} >= {keys} keys) and wrong with "
                f"block_size={wrong[0]}: the blocks after the first are handled wrongly (how their partial results "
                f"are combined or, with causal=True, where their keys sit)")
    return None


def step_projections(layer, seen, steps, d_model):
    """What decoding ``steps`` tokens one at a time fed ``layer`` (``seen``: the input shape a hook saw at each of
    its calls), when it is not the new token alone at every step, or None."""
    if len(seen) != steps:
        return (f"the projection ran {len(seen)} times in {steps} steps ({layer}): once a step, on the new token, "
                f"is what the cache needs")
    for t, shape in enumerate(seen, start=1):
        if list(shape[-2:]) != [1, d_model]:
            return (f"at step {t}, {layer} was given an input of shape {list(shape)}, not the new token alone "
                    f"(B, 1, {d_model}): the cache already holds the past keys and values")
    return None


def decode_steps(outputs, expected):
    """Which steps of token-by-token decoding are wrong against ``expected`` (B, T, d_model), or None: the first
    step (no cache yet) right and later ones wrong, or every step wrong, the first too."""
    if not all(torch.is_tensor(y) for y in outputs) or not outputs:
        return None
    wrong = []
    for t, y in enumerate(outputs[:expected.size(1)]):
        e = expected[:, t:t + 1].detach().double()
        if y.shape != e.shape or ((y.detach().double() - e).abs().nan_to_num(float("inf"))
                                  > PROPERTY_ATOL * (1 + e.abs())).any():
            wrong.append(t + 1)
    if not wrong:
        return None
    if wrong[0] > 1:
        return (f"step 1 is right and steps {', '.join(map(str, wrong))} of {len(outputs)} are not: step 1 has no "
                f"cache yet, so what the cache brings from the earlier tokens is wrong")
    if len(wrong) == len(outputs):
        return ("every step is wrong, the first (no cache yet) too: the new token's own attention is wrong before "
                "any cache is involved")
    return None


# Measured on a gradient test's own call: the forward's results are right, so what differs is the backward.
GRADIENT_ONLY_WRONG = ("your forward's output and weights are right, the gradient w.r.t. {} is not: part of the "
                       "forward is hidden from autograd (.detach(), .data, torch.no_grad()) or goes another way "
                       "backward than forward")


# The same for tiled_attention, whose result is its output alone.
TILED_GRADIENT_ONLY_WRONG = GRADIENT_ONLY_WRONG.replace("output and weights are", "output is")


def forward_already_wrong(what, got, expected):
    """Why a gradient test's gradients, judged against the lab's, are wrong when the forward is: the student's
    ``what`` on the test's inputs (``got``) departs from the lab's (``expected``), in a sentence; or None."""
    want = expected.detach().double()
    if not torch.is_tensor(got) or got.shape != want.shape:
        how = "its shape"
    elif not torch.isfinite(got.detach()[torch.isfinite(want)]).all():
        how = "it holds inf/NaN where the lab's is finite"
    else:
        error = (got.detach().double() - want).abs().nan_to_num(0.0)
        if not (error > PROPERTY_ATOL * (1 + want.abs().nan_to_num(0.0))).any():
            return None
        how = f"by up to {error.max().item():.3g}"
    return f"your forward's {what} on these inputs is already wrong ({how}), so its gradients are too: the forward tests say why"


def sampled_rows(seq_len, count=32):
    """The rows a long output is compared at: every ``seq_len // count``-th from 0, and the last."""
    return list(range(0, seq_len, max(1, seq_len // count))) + [seq_len - 1]


def rows_not_attention(got, expected, rows):
    """Where the ``rows`` (indices) of a long output ``got`` depart from attention's ``expected`` (those rows, in
    order), in a sentence; or None. Loose (float32 summed over thousands of keys): it tells attention from an
    output that is not, which earns no points for the memory it saved."""
    mine = got.detach()[rows].double()
    want = expected.detach().double()
    error = (mine - want).abs().nan_to_num(math.inf)
    wrong = (error > 1e-3 * (1 + want.abs())).any(-1)  # (len(rows),)
    if not wrong.any():
        return None
    first = int(wrong.nonzero()[0])
    return (f"row {rows[first]} of the output is wrong by up to {error[first].max().item():.3g} ({int(wrong.sum())} of "
            f"{len(rows)} rows compared with attention): the memory points need an output computed by attention")


# Measured by comparing the weights first: they match, so the bug is in what follows attention.
WEIGHTS_RIGHT_OUTPUT_WRONG = ("your weights are right in every head, the output is not: what follows attention is "
                              "wrong (value goes through w_v; merge_heads swaps back to (B, T, n_heads, d_k) before "
                              "flattening; w_o comes last)")


def calls_differ(first, second):
    """Why two calls on the same inputs are not the same (randomness such as dropout), or None."""
    firsts = first if isinstance(first, (tuple, list)) else (first,)
    seconds = second if isinstance(second, (tuple, list)) else (second,)
    for i, (a, b) in enumerate(zip(firsts, seconds)):
        if torch.is_tensor(a) and torch.is_tensor(b) and a.shape == b.shape and not torch.equal(
                a.detach().nan_to_num(), b.detach().nan_to_num()):
            error = (a.detach().double() - b.detach().double()).abs().nan_to_num(float("inf")).max().item()
            return (f"two calls on the same inputs returned different results (item {i} differs by up to "
                    f"{error:.3g}): the code is random, e.g. dropout or torch.rand; attention here is deterministic")
    return None


def no_gradient(grads):
    """Which inputs autograd gave no gradient, or an all-zero one (``grads``: (name, gradient or None) pairs,
    None where the result holds no gradient at all), or None when each got one."""
    none = [name for name, grad in grads if grad is None]
    zeros = [name for name, grad in grads if torch.is_tensor(grad) and not grad.any()]
    if not none and not zeros:
        return None
    names = none + zeros
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    shown = f" (the gradient w.r.t. {', '.join(zeros)} is all zeros)" if zeros else ""
    return (f"no gradient reaches {listed}{shown}: the result does not depend on {'it' if len(names) == 1 else 'them'} "
            f"through autograd; do not detach, call .item()/.numpy(), or compute under torch.no_grad()")


def sizes_stored(got, expected):
    """Which of the sizes a module stored (``got``: {attribute: value}) are not ``expected``'s ints, or None."""
    wrong = [f"self.{name} is {got.get(name, '<missing>')!r}" + (" (a float)" if isinstance(got.get(name), float) else "")
             + f", not {value}" for name, value in expected.items()
             if type(got.get(name)) is not int or got.get(name) != value]
    if not wrong:
        return None
    return (f"the sizes stored are not the ones given: {'; '.join(wrong)}: store d_model, n_heads and "
            f"d_k = d_model // n_heads as ints (// keeps an int; / gives a float)")


def bias_not_followed(biased, bias):
    """Which projections (``biased``: {name: has a bias}) did not follow ``bias``, or None."""
    wrong = [name for name, has in biased.items() if has != bias]
    if not wrong:
        return None
    return (f"bias={bias} gave {', '.join(wrong)} {'no bias' if bias else 'a bias'}: pass bias=bias on to every "
            f"nn.Linear")


def size_not_refused(outcomes):
    """Which sizes that are not positive MultiHeadAttention did not refuse with a ValueError, or None.
    ``outcomes``: ((d_model, n_heads), what it did: "ValueError", "created a module" or the error it raised)."""
    wrong = [f"MultiHeadAttention{tuple(sizes)} " + (did if did == "created a module" else f"raised {did}")
             for sizes, did in outcomes if did != "ValueError"]
    if not wrong:
        return None
    return (f"a size that is not positive was not refused with a ValueError: {'; '.join(wrong)}: check "
            f"d_model > 0 and n_heads > 0 first, before d_model % n_heads")


def sizes_permuted(got_shape, expected_shape):
    """Why a shape is wrong when its sizes are right but in another order (which dims moved), or None."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    if got == expected or sorted(got) != sorted(expected):
        return None
    return (f"the sizes are right but in the wrong order: got {got}, expected {expected} (check how you unpack "
            f"x.shape and which dims you transpose)")


def sizes_merged(got_shape, expected_shape):
    """Why a shape is wrong when it holds the expected sizes but two of them in one dim, or one of them split in
    two (a view or reshape missing): which sizes, or None. Sizes of 1 are left out (an unsqueeze, not a view)."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    for fewer, more, merged in ((got, expected, True), (expected, got, False)):
        if len(more) != len(fewer) + 1:
            continue
        for i, j in itertools.combinations(range(len(more)), 2):
            a, b = more[i], more[j]
            rest = [size for k, size in enumerate(more) if k not in (i, j)]
            if 1 not in (a, b) and sorted(rest + [a * b]) == sorted(fewer):
                where = "in one dim where two belong" if merged else f"in two dims where one belongs ({a * b})"
                return (f"the result {got} has the sizes of {expected} but with {a} and {b} {where}: "
                        f"a view or reshape {'into' if merged else 'that joins'} them is missing")
    return None


def sizes_of_one(got_shape, expected_shape):
    """Why a shape is wrong when it holds the expected sizes in order, but with dims of size 1 missing or extra (an
    unsqueeze or ``[:, None]`` missing, or a squeeze or ``keepdim`` missing): which, or None."""
    got, expected = tuple(got_shape), tuple(expected_shape)
    if len(got) == len(expected) or [s for s in got if s != 1] != [s for s in expected if s != 1]:
        return None
    count = abs(len(expected) - len(got))
    dims = f"{count} dim{'s' if count > 1 else ''} of size 1"
    if len(got) < len(expected):
        return (f"the result {got} has the sizes of {expected} in order, without its {dims}: add "
                f"{'them' if count > 1 else 'it'} (unsqueeze, or None in an index as in x[:, None])")
    return (f"the result {got} has the sizes of {expected} in order, with {dims} more: remove "
            f"{'them' if count > 1 else 'it'} (squeeze, or keepdim=False)")


def returned_an_input(got, inputs):
    """Which of ``inputs`` ({name: tensor}, in order) a call returned as it was given, in a sentence, or None."""
    if not torch.is_tensor(got):
        return None
    for name, given in inputs.items():
        if torch.is_tensor(given) and got.shape == given.shape and torch.equal(got.detach(), given.detach()):
            return (f"it returned its {name} as it was given: nothing was computed; return the pair "
                    f"scaled_dot_product_attention gives, (output, weights)")
    return None


def rows_per_key(got, t_q, t_k):
    """Why a result (..., rows, cols) of a call with T_q != T_k has a row per key, T_k rows where one per query
    belongs: its queries were made from the key or the value; or None."""
    if not torch.is_tensor(got) or got.dim() < 2 or t_q == t_k or got.size(-2) != t_k:
        return None
    return (f"the result has {t_k} rows, one row per key where one per query belongs ({t_q} queries): the queries "
            f"were made from the key or the value; project the query (w_q(query)) and attend with it")


def heads_not_merged(got, heads):
    """What a wrong merge_heads result shows, measured against the ``heads`` (B, h, T, d_k) it was given (their
    values distinct): not flattened, a position holding values of others, or its own values in another order; or None."""
    if not torch.is_tensor(got) or not torch.is_tensor(heads) or heads.dim() != 4:
        return None
    b, h, t, d_k = heads.shape
    if tuple(got.shape) == (b, t, h, d_k):
        return ("the result is (B, T, n_heads, d_k): the heads are back in place but not flattened; view or "
                "reshape it to (B, T, d_model)")
    if tuple(got.shape) != (b, t, h * d_k):
        return None
    own = heads.detach().transpose(1, 2).reshape(b, t, h * d_k)  # each position's values, head by head
    got = got.detach().to(own.dtype)
    if not torch.equal(got.flatten().sort().values, own.flatten().sort().values):
        return None  # not the given values rearranged: the other tests' to explain
    mixed = (got.sort(dim=-1).values != own.sort(dim=-1).values).any(dim=-1)  # (B, T)
    if mixed.any():
        where = tuple(int(i) for i in mixed.nonzero()[0])
        return (f"row (batch, position) = {where} of the result holds values of other positions: swap dims 1 and 2 "
                f"back to (B, T, n_heads, d_k) before you flatten")
    if torch.equal(got, own):
        return None
    return ("each position holds its own values in the wrong order: head i's d_k features belong at "
            "[i*d_k, (i+1)*d_k), so flatten (n_heads, d_k) as it is, after transpose(1, 2)")


def dtype_changed(got, expected):
    """Why a result of dtype ``got`` is not of dtype ``expected``: a floating-point result not of its inputs'
    dtype, or a mask that is not torch.bool; None otherwise."""
    if got == expected:
        return None
    if expected == torch.bool:
        return (f"the dtype changed: got {got}, a mask is torch.bool: comparisons such as != or <= and "
                f"torch.ones(..., dtype=torch.bool) give one; no .float(), .int() or arithmetic on the way")
    if not expected.is_floating_point:
        return None
    return (f"the dtype changed: got {got}, the inputs are {expected}: keep their dtype all the way (tensors you "
            f"create need dtype=query.dtype; no .float(), .double() or dtype=torch.float32 on the way)")


def dtype_or_device_changed(got, expected):
    """Why ``got`` has another dtype or device than ``expected``, or None."""
    if got.dtype != expected.dtype:
        return dtype_changed(got.dtype, expected.dtype) or f"the dtype changed: got {got.dtype}, expected {expected.dtype}"
    if got.device != expected.device:
        return f"the device changed: got {got.device}, the inputs are on {expected.device}"
    return None


def mask_constant(mask):
    """The words when ``mask`` holds one value at every position, else None. Asked on a case whose right mask
    holds both values: a constant one follows neither the positions nor the tokens (no work done), so a test of
    its shape, dtype or device does not earn its points on it."""
    if not torch.is_tensor(mask) or mask.numel() < 2:
        return None
    first = mask.flatten()[0]
    if not bool((mask == first).all()):
        return None
    return (f"the mask is {first.item()} at every position: it follows nothing, so its shape, dtype and device "
            "earn no points yet")


def padding_followed(got, tokens, pad_id):
    """Which padding a wrong padding mask follows, measured against ``tokens`` (B, T): True at the padding,
    another pad id, or the first sentence's padding for every sentence; None when it is none of these."""
    if not torch.is_tensor(got) or got.numel() != tokens.numel():
        return None
    got = got.detach().reshape(tokens.shape).bool()
    if torch.equal(got, tokens != pad_id):
        return None
    if torch.equal(got, tokens == pad_id):
        return f"the mask is True at the padding (tokens == {pad_id}): True must mean 'may attend'"
    for other in torch.unique(tokens).tolist() + [0]:
        if other != pad_id and torch.equal(got, tokens != other):
            return f"the mask follows pad_id={other}, not the pad_id={pad_id} it was given"
    if tokens.size(0) > 1 and torch.equal(got, (tokens[:1] != pad_id).expand_as(tokens)):
        return "every sentence got the first sentence's padding: compare each row of tokens with pad_id"
    return None


def attention_properties(output, weights, value, mask=None):
    """The first property of an (output, weights) pair that fails, in the order that explains the rest: the
    weights a distribution, no weight on a blocked key, output = weights @ value. None when all hold."""
    if not (torch.is_tensor(output) and torch.is_tensor(weights) and torch.is_tensor(value)):
        return None
    return (not_a_distribution(weights) or blocked_weight(weights, mask)
            or output_not_applied(output, weights, value))


def where_differ(differs, mask=None):
    """A sentence saying which entries of the (..., T_q, T_k) matrices differ, when a pattern shows."""
    if differs.dim() < 2 or not differs.numel():
        return ""
    rows, cols = differs.shape[-2:]
    pattern = differs.reshape(-1, rows, cols).any(dim=0)  # (T_q, T_k): differs in any matrix
    regions = {}
    if rows == cols and rows > 1:
        upper = torch.ones(rows, cols, dtype=torch.bool).triu(1)
        regions["above the diagonal"] = upper
        regions["below the diagonal"] = upper.T
        regions["on the diagonal"] = torch.eye(rows, dtype=torch.bool)
    allowed = None if mask is None else (mask if mask.dtype == torch.bool else mask != 0).expand(differs.shape)
    if allowed is not None:
        blocked = (~allowed & differs).any(), (allowed & differs).any()
        if blocked[0] and not blocked[1]:
            return "; only blocked positions (mask False/0) differ"
        if blocked[1] and not blocked[0]:
            return "; only allowed positions differ (the blocked ones are right)"
    for label, region in regions.items():
        if pattern.any() and not (pattern & ~region).any():
            return f"; only positions {label} differ"
    if pattern.all():
        return "; every entry differs"
    return ""


def mask_picture(mask):
    """A small (T_q, T_k) bool mask as rows of 1 and 0, for a failure message (None when too big to read)."""
    m = mask.detach().reshape(-1, mask.shape[-1]) if mask.dim() != 2 else mask.detach()
    if max(m.shape) > 12:
        return None
    return " / ".join("".join("1" if bool(x) else "0" for x in row) for row in m)


def shapes_in(values):
    """'the call got (2, 3, 4) float64, (2, 6, 4) float64, None': what went into a call that raised, in order
    (None when no tensor did); a student's error message then shows which operand had which shape."""
    if not any(torch.is_tensor(v) for v in values):
        return None
    shown = [f"{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}" if torch.is_tensor(v) else type(v).__name__
             if not isinstance(v, (int, float, bool, type(None))) else repr(v) for v in values]
    return "the call got " + ", ".join(shown)
