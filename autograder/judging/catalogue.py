"""A catalogue of the common mistakes, recomputed in the trusted grader to name a student's bug.

When a student's result is wrong, the grader recomputes every known mistake of that kind on
the same inputs; if the student's result matches one, the feedback names it in one sentence
and points to the part of the lab that covers it. Add a mistake by writing one small function
with the ``@mistake`` decorator below, and a mutant that makes it to tests/variants/mutants.yaml:
``tests/heavy/test_grading_variants.py`` proves each entry is recognised from a submission written that way.

Kinds and what their functions compute:
* ``causal_mask(seq_len) -> mask``
* ``padding_mask(tokens, pad_id) -> mask``
* ``sdpa(query, key, value, mask) -> (output, weights)``
* ``mha(state, n_heads, query, key, value, mask) -> (output, weights)``, with ``state`` the
  parameters of the reference module, by name.
* ``split_heads(x, n_heads)`` and ``merge_heads(x, n_heads)`` -> the reshaped tensor.
* ``tiled(query, key, value, causal, block_size) -> output`` (extra credit).
* ``decode(state, n_heads, x) -> [output of each step]`` (extra credit, ``MultiHeadAttention.step``).

Each mistake has the parts of the hidden suite where it lives, and so the only parts where it may cost points
(one defect, one charge): the lab's table says which (``MISTAKE_KIND_PARTS`` and ``MISTAKE_PARTS`` in
tests_hidden/parts.py, read by autograder/parts.py).
``tests/heavy/test_single_defects.py`` plants each mistake alone in the reference and checks it.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder.parts import MISTAKE_KIND_PARTS, MISTAKE_PARTS

LAB = "assignment/README.md"



@dataclass(frozen=True)
class Mistake:
    name: str
    kind: str
    sentence: str  # what the student did, in one sentence
    section: str  # where the lab covers it
    # The catalogued defects this mistake is made of, when it is several at once: the class summary counts
    # a submission once per defect, not once per name that matched.
    defects: tuple = ()
    # The parts of the hidden suite where it lives: the only ones it may cost points in. The lab's table says
    # (tests_hidden/parts.py): MISTAKE_PARTS by its name, else MISTAKE_KIND_PARTS by its kind (a name found
    # under two kinds lives in both).
    parts: tuple = ()

    def __post_init__(self):
        if not self.parts:
            object.__setattr__(self, "parts", MISTAKE_PARTS.get(self.name) or MISTAKE_KIND_PARTS.get(self.kind, ()))

    def explain(self):
        return f"{self.sentence} (see \"{self.section}\" in the lab text)"


CATALOGUE = {}  # kind -> [(Mistake, compute)]


def mistake(kind, name, sentence, section, defects=()):
    def register(compute):
        CATALOGUE.setdefault(kind, []).append((Mistake(name, kind, sentence, section, defects), compute))
        return compute
    return register


def diagnose(kind, got, *inputs):
    """The first catalogued mistake whose result matches ``got`` on ``inputs``, or None. A mistake whose result
    on these inputs is the right one (kv_from_query in self-attention, no_scaling at d_k = 1) is never named:
    matching it proves nothing, and the code that failed may be right in that respect."""
    right = _right(kind, *inputs)
    for entry, compute in CATALOGUE.get(kind, []):
        try:
            with torch.no_grad():
                candidate = compute(*inputs)
        except (RuntimeError, ValueError, IndexError):
            continue  # this mistake cannot even run on these inputs
        if candidate is not None and _matches(got, candidate) and not (right is not None
                                                                        and _matches(candidate, right)):
            return entry
    return None


def _right(kind, *inputs):
    """The right result of ``kind`` on ``inputs`` (RIGHT, below), or None when there is none to compute."""
    if kind not in RIGHT:
        return None
    try:
        with torch.no_grad():
            return RIGHT[kind](*inputs)
    except (RuntimeError, ValueError, IndexError):
        return None


def _matches(got, candidate):
    if isinstance(candidate, list):  # one result per decoding step
        return isinstance(got, list) and len(got) == len(candidate) and all(map(_matches, got, candidate))
    if isinstance(candidate, tuple):
        return (isinstance(got, (tuple, list)) and len(got) == len(candidate)
                and all(_matches(g, c) for g, c in zip(got, candidate)))
    if not isinstance(got, torch.Tensor) or got.shape != candidate.shape:
        return False
    if got.dtype == torch.bool or candidate.dtype == torch.bool:
        return got.dtype == candidate.dtype and torch.equal(got, candidate)
    got, candidate = got.double(), candidate.double()
    same_nan = torch.isnan(got) == torch.isnan(candidate)
    close = torch.isclose(got, candidate, rtol=1e-3, atol=1e-4, equal_nan=True)
    return bool(same_nan.all() and close.all())


SECTION_PRECISION = "Part 1: `attention.py`"  # where the lab text asks for float64-accurate float64 results

# Found from the pattern of the errors (compare.py), not recomputed: every error of a float64 result is
# within a few float32 ulps, whatever the inputs. precision_cause() then names the float32 step when it can.
FLOAT32_IN_FLOAT64 = Mistake(
    "float32_in_float64", "precision", "A float32 constant or intermediate in a float64 computation: the result "
    "is only float32-accurate (a torch.Tensor/torch.FloatTensor constant, a .float() cast or dtype=torch.float32 "
    "somewhere on the way)", SECTION_PRECISION)
# The float32 step named, after the words above (which `make test`, without a from-scratch attention to
# recompute the step, shares with the grade).
FLOAT32_SCALE = Mistake(
    "float32_scale", "precision", FLOAT32_IN_FLOAT64.sentence + ". Here it is your scale, a float32 tensor "
    "(torch.Tensor([d_k]) or torch.FloatTensor are float32): divide by math.sqrt(d_k)", SECTION_PRECISION)
FLOAT32_SOFTMAX = Mistake(
    "float32_softmax", "precision", FLOAT32_IN_FLOAT64.sentence + ". Here it is your softmax, which runs in "
    "float32 (a .float() before it, or dtype=torch.float32): take the softmax in the input's dtype",
    SECTION_PRECISION)


# --- masks ------------------------------------------------------------------------------------

SECTION_CAUSAL = "2. Causal masking"
SECTION_MASKS = "The mask convention (used everywhere)"
SECTION_SDPA = "Scaled dot-product attention"
SECTION_MHA = "Multi-head attention"
SECTION_HEADS = "Part 2: `mha.py`"
SPLIT_SENTENCE = ("Your split_heads reshapes straight to (B, n_heads, T, d_k), which mixes positions across heads: "
                  "view to (B, T, n_heads, d_k), then transpose(1, 2)")


@mistake("causal_mask", "causal_leaks_future", "Your causal mask lets each query see the future: it is True "
         "above the diagonal (torch.triu or a transposed mask) instead of on and below it", SECTION_CAUSAL)
def _causal_upper(seq_len):
    return torch.ones(seq_len, seq_len, dtype=torch.bool).triu()


@mistake("causal_mask", "causal_hides_diagonal", "Your causal mask hides the diagonal: a token must be able to "
         "attend to itself (torch.tril with diagonal=0, not -1)", SECTION_CAUSAL)
def _causal_no_diagonal(seq_len):
    return torch.ones(seq_len, seq_len, dtype=torch.bool).tril(-1)


@mistake("causal_mask", "causal_polarity_flipped", "Your causal mask marks the blocked positions with True; in "
         "this lab True means 'may attend'", SECTION_MASKS)
def _causal_inverted(seq_len):
    return ~torch.ones(seq_len, seq_len, dtype=torch.bool).tril()


@mistake("padding_mask", "padding_polarity_flipped", "Your padding mask is True at the padding tokens; in this lab "
         "True means 'may attend', so it should be tokens != pad_id", SECTION_MASKS)
def _padding_inverted(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]


# --- scaled dot-product attention -------------------------------------------------------------

def attention(query, key, value, mask, scale=None, fill=float("-inf"), softmax_dim=-1, mask_mode="fill",
              flip=False, stable=True, float32_scale=False, float32_softmax=False, only_one=False):
    """Reference attention with one knob per known mistake."""
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale  # (..., T_q, T_k)
    if float32_scale:  # scores / torch.sqrt(torch.Tensor([d_k])): the float32 square root, promoted
        scores = query @ key.transpose(-2, -1) / torch.sqrt(torch.tensor(float(query.size(-1)))).item()
    allowed = None
    if mask is not None:
        allowed = mask if mask.dtype == torch.bool else (mask == 1 if only_one else mask != 0)
        if flip:
            allowed = ~allowed
        if mask_mode == "fill":
            scores = scores.masked_fill(~allowed, fill)
        elif mask_mode == "add":
            scores = scores + mask
    if float32_softmax:
        weights = torch.softmax(scores.float(), dim=softmax_dim).to(scores.dtype)
    elif stable:
        weights = torch.softmax(scores, dim=softmax_dim)
    else:
        weights = scores.exp() / scores.exp().sum(dim=softmax_dim, keepdim=True)
    if mask is not None and mask_mode == "after":
        weights = weights * allowed
    return weights @ value, weights


@mistake("sdpa", "no_scaling", "You did not scale the scores: divide Q K^T by sqrt(d_k)", SECTION_SDPA)
def _no_scaling(q, k, v, mask):
    return attention(q, k, v, mask, scale=1.0)


@mistake("sdpa", "scale_by_d_k", "You scaled the scores by 1/d_k; the formula divides by sqrt(d_k)", SECTION_SDPA)
def _scale_by_d_k(q, k, v, mask):
    return attention(q, k, v, mask, scale=1.0 / q.size(-1))


@mistake("sdpa", "scale_by_d_v", "You scaled by the value's width; d_k is the query's last dim", SECTION_SDPA)
def _scale_by_d_v(q, k, v, mask):
    return attention(q, k, v, mask, scale=1.0 / math.sqrt(v.size(-1))) if v.size(-1) != q.size(-1) else None


@mistake("sdpa", "softmax_wrong_axis", "Your softmax runs over the queries (dim=-2); each query's weights must "
         "sum to 1 over the keys, so use dim=-1", SECTION_SDPA)
def _softmax_dim(q, k, v, mask):
    return attention(q, k, v, mask, softmax_dim=-2)


@mistake("sdpa", "mask_polarity_flipped", "You blocked the positions where the mask is True (or nonzero); in this "
         "lab True means 'may attend', so fill where the mask is False", SECTION_MASKS)
def _flipped(q, k, v, mask):
    return attention(q, k, v, mask, flip=True) if mask is not None else None


@mistake("sdpa", "masked_with_zero", "You filled blocked scores with 0; a score of 0 still gets weight after the "
         "softmax, so fill with -inf (or a very negative number)", SECTION_SDPA)
def _zero_fill(q, k, v, mask):
    return attention(q, k, v, mask, fill=0.0) if mask is not None else None


@mistake("sdpa", "mask_after_softmax", "You applied the mask after the softmax, so the remaining weights no "
         "longer sum to 1; mask the scores before the softmax", SECTION_SDPA)
def _after_softmax(q, k, v, mask):
    return attention(q, k, v, mask, mask_mode="after") if mask is not None else None


@mistake("sdpa", "numeric_mask_additive", "You added the numeric mask to the scores; here a numeric mask means "
         "nonzero = may attend and 0 = blocked, like a bool mask", SECTION_MASKS)
def _additive(q, k, v, mask):
    return attention(q, k, v, mask, mask_mode="add") if mask is not None and mask.dtype != torch.bool else None


# One call cannot tell "ignores numeric masks" from "ignores every mask" on a numeric mask: the numeric-mask
# tests ask the student's code again with the same mask as bool and rename it mask_ignored if that is ignored too.
@mistake("sdpa", "mask_ignored", "Your code ignores the mask (bool masks too): blocked keys get weight. Fill the "
         "scores with -inf where the mask is False (or 0) before the softmax", SECTION_MASKS)
def _mask_ignored(q, k, v, mask):
    return attention(q, k, v, None) if mask is not None and mask.dtype == torch.bool else None


@mistake("sdpa", "numeric_mask_ignored", "Your code ignores a numeric (int or float) mask, while it applies a bool "
         "one; convert it with mask != 0 and apply it like a bool mask", SECTION_MASKS)
def _numeric_ignored(q, k, v, mask):
    return attention(q, k, v, None) if mask is not None and mask.dtype != torch.bool else None


@mistake("sdpa", "numeric_mask_only_one_attends", "Your code lets only the mask value 1 attend (1 - mask, or "
         "mask == 1): a numeric mask means nonzero = may attend, so 2.0 or -1 attend too; block where mask == 0",
         SECTION_MASKS)
def _only_one(q, k, v, mask):
    binary = mask is None or mask.dtype == torch.bool or bool(((mask == 0) | (mask == 1)).all())
    return None if binary else attention(q, k, v, mask, only_one=True)


MASK_IGNORED = next(entry for entry, _ in CATALOGUE["sdpa"] if entry.name == "mask_ignored")


@mistake("sdpa", "unstable_softmax", "Your softmax overflows on large scores: exp() of a large score is inf. "
         "Subtract the row max first, or use torch.softmax", SECTION_SDPA)
def _unstable(q, k, v, mask):
    out, weights = attention(q, k, v, mask, stable=False)
    return (out, weights) if not torch.isfinite(weights).all() else None


UNSTABLE_SOFTMAX = next(entry for entry, _ in CATALOGUE["sdpa"] if entry.name == "unstable_softmax")


# Found from the pattern of a failure, not recomputed (like FLOAT32_IN_FLOAT64): the layout tests name the
# first, when the code passes with another number of leading dims; the exact-zero test names the second.
FIXED_LEADING_DIMS = Mistake(
    "fixed_leading_dims", "layout", "Your attention works for some numbers of leading dims and not for others "
    "(torch.bmm takes only 3-D inputs, key.transpose(1, 2) or (2, 3) and fixed-size unpacking fix the rank): use "
    "key.transpose(-2, -1) and @ (torch.matmul), which work for 2-D, 3-D and 4-D inputs alike", SECTION_SDPA)
FINITE_FILL_LEAKS = Mistake(
    "finite_fill_leaks", "fill", "Your blocked scores are filled with a finite value that is not negative enough "
    "(such as -100): exp(fill - max) still gives blocked keys a tiny nonzero weight. Fill with float(\"-inf\") (or "
    "torch.finfo(scores.dtype).min)", SECTION_SDPA)


SWAPPED_SENTENCE = "You return (weights, output): the pair is swapped; return (output, weights), in that order"


# Found whatever the shapes: a (weights, output) pair fails the comparison on its shapes (or values), and this
# entry matches it. Also one entry for MultiHeadAttention.forward, below.
@mistake("sdpa", "output_weights_swapped", SWAPPED_SENTENCE, SECTION_SDPA)
def _swapped(q, k, v, mask):
    return tuple(reversed(attention(q, k, v, mask)))


SWAPPED = next(entry for entry, _ in CATALOGUE["sdpa"] if entry.name == "output_weights_swapped")


# --- splitting and merging heads (MultiHeadAttention(d_model, n_heads)) ----------------------------

@mistake("split_heads", "split_without_transpose", SPLIT_SENTENCE, SECTION_HEADS)
def _split_only(x, n_heads):
    B, T, d_model = x.shape
    return x.reshape(B, n_heads, T, d_model // n_heads)


@mistake("merge_heads", "merge_without_transpose", "Your merge_heads reshapes (B, n_heads, T, d_k) straight to "
         "(B, T, d_model) without transpose(1, 2) first, which interleaves heads and positions", SECTION_HEADS)
def _merge_only(x, n_heads):
    B, h, T, d_k = x.shape
    return x.reshape(B, T, h * d_k)


# --- multi-head attention ---------------------------------------------------------------------

def mha(state, n_heads, query, key, value, mask, *, split="transpose", merge="transpose", output_projection=True,
        inputs=("query", "key", "value"), scale_dim=None, average_heads=False, project=("w_q", "w_k", "w_v"),
        **attention_knobs):
    """The reference MultiHeadAttention as a function of its parameters, with one knob per known mistake."""
    def linear(name, x):
        return F.linear(x, state[f"{name}.weight"], state.get(f"{name}.bias"))

    sources = {"query": query, "key": key, "value": value}
    x_q, x_k, x_v = (sources[name] for name in inputs)
    d_model = query.size(-1)
    d_k = d_model // n_heads

    def split_heads(x):
        B, T, _ = x.shape
        if split == "view":  # no transpose: positions and heads get mixed
            return x.reshape(B, n_heads, T, d_k)
        return x.view(B, T, n_heads, d_k).transpose(1, 2)

    def merge_heads(x):
        B, h, T, _ = x.shape
        if merge == "view":
            return x.reshape(B, T, h * d_k)
        return x.transpose(1, 2).reshape(B, T, h * d_k)

    q = split_heads(linear(project[0], x_q) if project[0] else x_q)
    k = split_heads(linear(project[1], x_k) if project[1] else x_k)
    v = split_heads(linear(project[2], x_v) if project[2] else x_v)
    scale = 1.0 / math.sqrt(scale_dim(d_model, d_k)) if scale_dim else None
    heads, weights = attention(q, k, v, mask, scale=scale, **attention_knobs)  # (B, h, T_q, d_k)
    merged = merge_heads(heads)
    output = linear("w_o", merged) if output_projection else merged
    return output, weights.mean(dim=1) if average_heads else weights


@mistake("mha", "split_without_transpose", SPLIT_SENTENCE, SECTION_MHA)
def _split_view(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, split="view")


# An MHA forward with both bugs matches neither one alone, so it needs an entry of its own; the split_heads
# and merge_heads tests name the two defects separately.
@mistake("mha", "split_and_merge_without_transpose", SPLIT_SENTENCE + "; merge_heads has the same problem",
         SECTION_MHA, defects=("split_without_transpose", "merge_without_transpose"))
def _split_merge_view(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, split="view", merge="view")


@mistake("mha", "merge_without_transpose", "Your merge_heads reshapes straight back without transpose(1, 2), so "
         "features of different positions get mixed", SECTION_MHA)
def _merge_view(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, merge="view")


@mistake("mha", "no_output_projection", "Your forward returns the merged heads without the output projection w_o",
         SECTION_MHA)
def _no_w_o(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, output_projection=False)


@mistake("mha", "key_value_swapped", "Your forward swaps the key and value projections (w_k on the value or w_v "
         "on the key)", SECTION_MHA)
def _kv_swapped(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, project=("w_q", "w_v", "w_k"))


@mistake("mha", "kv_from_query", "Your forward projects the query for keys and values too; in cross-attention "
         "they come from the key and value inputs", SECTION_MHA)
def _kv_from_query(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, inputs=("query", "query", "query"))


@mistake("mha", "only_query_projected", "Only the query is projected: keys and values must go through w_k and w_v",
         SECTION_MHA)
def _only_query(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, project=("w_q", None, None))


@mistake("mha", "scale_by_sqrt_d_model", "You scaled by sqrt(d_model); each head's scores are scaled by the head "
         "width, sqrt(d_k) with d_k = d_model // n_heads", SECTION_MHA)
def _scale_d_model(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, scale_dim=lambda d_model, d_k: d_model) if n_heads > 1 else None


@mistake("mha", "weights_averaged_over_heads", "You averaged the attention weights over the heads; return every "
         "head's weights, (B, n_heads, T_q, T_k)", SECTION_MHA)
def _averaged(state, n_heads, q, k, v, mask):
    return mha(state, n_heads, q, k, v, mask, average_heads=True) if n_heads > 1 else None


@mistake("mha", "mha_output_weights_swapped", SWAPPED_SENTENCE, SECTION_MHA)
def _mha_swapped(state, n_heads, q, k, v, mask):
    return tuple(reversed(mha(state, n_heads, q, k, v, mask)))


# --- precision: which float32 step made a float64 result float32-accurate --------------------------

PRECISION = {  # kind -> (the right result, [(Mistake, the result with that float32 step)])
    "sdpa": (lambda *inputs: attention(*inputs),
             [(FLOAT32_SCALE, lambda *inputs: attention(*inputs, float32_scale=True)),
              (FLOAT32_SOFTMAX, lambda *inputs: attention(*inputs, float32_softmax=True))]),
    "mha": (lambda *inputs: mha(*inputs),
            [(FLOAT32_SCALE, lambda *inputs: mha(*inputs, float32_scale=True)),
             (FLOAT32_SOFTMAX, lambda *inputs: mha(*inputs, float32_softmax=True))]),
}


def precision_cause(kind, got, *inputs):
    """The float32 step whose result is far closer to ``got`` than the right one is (both errors are tiny, so
    closeness is relative: a hundred times closer), or None when neither explains it."""
    if kind not in PRECISION:
        return None
    right, steps = PRECISION[kind]
    with torch.no_grad():
        off = _distance(got, right(*inputs))
        for entry, compute in steps:
            if _distance(got, compute(*inputs)) * 100 <= off:
                return entry
    return None


def _distance(got, candidate):
    """The largest absolute difference between two results (tensors or tuples of them)."""
    if isinstance(candidate, tuple):
        return max(_distance(g, c) for g, c in zip(got, candidate))
    return (got.double() - candidate.double()).abs().nan_to_num(0.0).max().item() if got.numel() else 0.0


# --- extra credit: tiled attention and KV-cache decoding --------------------------------------------

SECTION_EXTRA = "Extra credit"


def tiled(query, key, value, causal, block_size, rescale=True, causal_shift=0, offset=True):
    """The reference tiling with one knob per known mistake."""
    T_q, T_k = query.size(-2), key.size(-2)
    q = query / math.sqrt(query.size(-1))
    row_max = query.new_full((*query.shape[:-1], 1), float("-inf"))
    row_sum = query.new_zeros((*query.shape[:-1], 1))
    acc = query.new_zeros((*query.shape[:-1], value.size(-1)))
    rows = torch.arange(T_q)[:, None]
    for start in range(0, T_k, block_size):
        k, v = key[..., start:start + block_size, :], value[..., start:start + block_size, :]
        scores = q @ k.transpose(-2, -1)
        if causal:
            cols = torch.arange(start if offset else 0, (start if offset else 0) + k.size(-2))[None, :]
            scores = scores.masked_fill(cols > rows + causal_shift, float("-inf"))
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        safe_max = new_max.masked_fill(torch.isinf(new_max), 0.0)
        factor = torch.exp(row_max - safe_max) if rescale else torch.ones_like(row_sum)
        p = torch.exp(scores - safe_max)
        row_sum = row_sum * factor + p.sum(dim=-1, keepdim=True)
        acc = acc * factor + p @ v
        row_max = new_max
    return acc / row_sum


@mistake("tiled", "tiled_no_rescale", "Your running sum and output are not rescaled when the running max grows: "
         "multiply both by exp(old_max - new_max) before adding a block", SECTION_EXTRA)
def _tiled_no_rescale(q, k, v, causal, block_size):
    return tiled(q, k, v, causal, block_size, rescale=False) if k.size(-2) > block_size else None


@mistake("tiled", "tiled_causal_off_by_one", "Your causal block boundary is off by one: query i may attend keys "
         "j <= i, so block (start + offset) > i is blocked, not >= i nor > i + 1", SECTION_EXTRA)
def _tiled_off_by_one(q, k, v, causal, block_size):
    return tiled(q, k, v, causal, block_size, causal_shift=1) if causal else None


@mistake("tiled", "tiled_block_offset_forgotten", "Your causal mask inside a block forgets where the block starts: "
         "key positions are start + 0, 1, ..., not 0, 1, ...", SECTION_EXTRA)
def _tiled_offset(q, k, v, causal, block_size):
    return tiled(q, k, v, causal, block_size, offset=False) if causal and k.size(-2) > block_size else None


@mistake("decode", "cache_unprojected_tokens", "Your cache stores the new tokens as they come, not their projected "
         "keys and values: append split_heads(w_k(x)) and split_heads(w_v(x))", SECTION_EXTRA)
def _cache_unprojected(state, n_heads, x):
    B, T, d_model = x.shape
    d_k = d_model // n_heads

    def linear(name, t):
        return F.linear(t, state[f"{name}.weight"], state.get(f"{name}.bias"))

    def split(t):
        return t.view(B, t.size(1), n_heads, d_k).transpose(1, 2)

    outputs, past = [], None
    for t in range(T):
        token = x[:, t:t + 1]
        raw = split(token)  # the mistake: unprojected token in the cache
        past = raw if past is None else torch.cat([past, raw], dim=2)
        # this step uses the projected token with the (unprojected) past
        k = torch.cat([past[:, :, :-1], split(linear("w_k", token))], dim=2)
        v = torch.cat([past[:, :, :-1], split(linear("w_v", token))], dim=2)
        heads, _ = attention(split(linear("w_q", token)), k, v, None)
        outputs.append(linear("w_o", heads.transpose(1, 2).reshape(B, 1, d_model)))
    return outputs


# --- the right results, which no mistake may be named for matching ----------------------------------

def _split(x, n_heads):
    B, T, d_model = x.shape
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)  # (B, h, T, d_k)


def _merge(x, n_heads):
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_k)  # (B, T, d_model)


RIGHT = {  # kind -> the right result, on the inputs its mistakes take
    "causal_mask": lambda seq_len: torch.ones(seq_len, seq_len, dtype=torch.bool).tril(),
    "padding_mask": lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :],
    "sdpa": attention,
    "split_heads": _split,
    "merge_heads": _merge,
    "mha": mha,
    "tiled": tiled,
}


# --- every mistake by name ------------------------------------------------------------------------

# Named from the pattern of a failure, not recomputed by CATALOGUE or PRECISION. FLOAT32_IN_FLOAT64 is left out:
# it is the generic name the precision entries narrow down, not a defect of its own.
FOUND_FROM_PATTERN = (FIXED_LEADING_DIMS, FINITE_FILL_LEAKS)


def every_mistake():
    """{name: parts it lives in} for every catalogued mistake: a name found under several kinds (the split_heads
    test and the MHA forward both name split_without_transpose) lives in the parts of all of them."""
    found = {}
    entries = [entry for kind in CATALOGUE.values() for entry, _ in kind]
    entries += [entry for _, steps in PRECISION.values() for entry, _ in steps] + list(FOUND_FROM_PATTERN)
    for entry in entries:
        found[entry.name] = tuple(dict.fromkeys(found.get(entry.name, ()) + entry.parts))
    return found
