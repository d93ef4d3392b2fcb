"""The public test cases: one table, read by the pytest tests and by the otter checks.

Each case checks one behaviour and is worth some points. It is a function whose
parameters name the student modules it needs (``attention``, ``mha``), and it fails
by raising :class:`checks.CheckFailed`. They run

* as pytest tests: ``test_masks.py``, ``test_attention.py`` and ``test_mha.py``
  run the cases of their parts (see ``PARTS`` in each), and ``test_extra.py`` the
  optional extra-credit cases (``EXTRA_PARTS``), which count apart from the points;
* as otter checks: ``../checks/<part>.py`` holds one otter test case per case here,
  generated from this table (do not edit them); each one calls :func:`run_case`;
* in nbgrader courses: the autograded cells of the playground call :func:`score`.
"""
import math
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass
import inspect
from inspect import signature
from pathlib import Path
from typing import Callable

import torch

from checks import (mask_constant, rows_not_attention, sampled_rows, ATTENTION_STOOD_IN, CONSTRUCTION_STOOD_IN, HEADS_STOOD_IN, TILED_GRADIENT_ONLY_WRONG, MISTAKES, forward_already_wrong, decode_steps, step_projections, tiled_blocks, tiled_rows, calls_differ, output_not_applied, likely_bug, output_without_rescaling, STEP_CACHE_HINT, STEP_PROJECT_HINT, TILED_MATRIX_BUILT, TILED_ROW_0, TILED_ROW_0_HINT,
                    TILED_SHAPE_HINT, FORMULA, FORWARD_INPUTS_MODIFIED, FORWARD_INPUTS_MODIFIED_HINT, INPLACE_ERROR, INPUTS_MODIFIED, INPUTS_MODIFIED_HINT, SHIFT_HINT, TILED_MEMORY_HINT,
                    UNSTABLE_SOFTMAX, FLOAT32_HINT, FLOAT64_DEPARTS, MISMATCH_NOT_RAISED_HINT, PLAIN_VALUE_ERROR_HINT, VALID_SIZE_REFUSED_TOO, CheckFailed, ForbiddenCall, LargestTensor, NotWritten, attention_hint, check_attention,
                    check_layout, copies, DEVICE_HINT, check_mha, no_gradient, bias_not_followed, size_not_refused, sizes_stored, check_tensor, describe, error_hint, explain,
                    fail, forbidden_calls, forbidden_message, device_ignored, import_student, inplace_edits, lower_triangle,
                    merge_hint, mha_hint, modified_inputs, padding_mask_hint, rows_per_key, causal_mask_hint, projections, randn, require_attention, shift_all_scores, split_hint, torch_attention, torch_mha, unpack_pair,
                    valid_size_refused, watch_forbidden_calls)

# The parts, in the order of the lab: an otter check each, and an nbgrader test cell each.
PARTS = {
    "part1_masks": "Part 1: causal_mask and padding_mask",
    "part1_attention": "Part 1: scaled_dot_product_attention",
    "part2_init": "Part 2: building MultiHeadAttention",
    "part2_heads": "Part 2: split_heads and merge_heads",
    "part2_forward": "Part 2: MultiHeadAttention.forward",
}

# Optional extra credit: checked by `make test` on a line of its own, outside the points above.
EXTRA_PARTS = {
    "extra_tiled": "Extra credit: tiled_attention",
    "extra_step": "Extra credit: MultiHeadAttention.step",
}

# A case of these parts that fails is run again on the lab's own lower parts, as the grader does, one more
# each time in the lab's order: attention built from torch, then the sizes and four projections the lab
# specifies, then split_heads and merge_heads as the heads cases state them. A bug below costs its own
# part's points, not these too (one defect, one charge).
LOWER_PARTS = ("attention", "construction", "heads")
LADDERS = {"part2_heads": ("construction",), "part2_forward": LOWER_PARTS, "extra_step": LOWER_PARTS}
STOOD_IN = {"attention": ATTENTION_STOOD_IN, "construction": CONSTRUCTION_STOOD_IN, "heads": HEADS_STOOD_IN}  # the grade's
PROJECTIONS = ("w_q", "w_k", "w_v", "w_o")
# The optional function each extra-credit part checks: a file that does not define it is skipped, not failed.
OPTIONAL = {"extra_tiled": ("attention", "tiled_attention"), "extra_step": ("mha", "MultiHeadAttention.step")}


@dataclass(frozen=True)
class Case:
    name: str
    part: str
    points: int
    check: Callable

    @property
    def needs(self):
        """The student modules the case takes, by name: ("attention",), ("mha",)."""
        return tuple(signature(self.check).parameters)

    @property
    def extra(self):
        return self.part in EXTRA_PARTS

    def run(self, module):
        """Run the case; ``module(name)`` gives the student's module of that name.

        Returns None, or a note when the case passed only on the lab's lower parts (``LADDERS``). A case
        whose run called a forbidden built-in fails, as in the grade (the from-scratch rule).
        """
        self._require_optional(module)
        try:
            self._check(module)
        except Exception as exc:
            part = self._lowest_part_at_fault(module)
            if part is None:
                raise
            first = (str(exc) if isinstance(exc, CheckFailed) else f"{type(exc).__name__}: {exc}").splitlines()[0]
            return f"{STOOD_IN[part]} (with yours: {first})"
        return None

    def _check(self, module):
        with forbidden_calls() as called:
            try:
                self.check(*(module(name) for name in self.needs))
            except Exception:
                if not called:
                    raise  # else the forbidden call is the failure, whatever the values (as in the grade)
        if called:
            raise ForbiddenCall(forbidden_message(called))

    def _require_optional(self, module):
        """Raise NotWritten when the optional function this case checks is not defined at all."""
        if self.part not in OPTIONAL:
            return
        file, path = OPTIONAL[self.part]
        owner = module(file)
        for name in path.split("."):
            owner = getattr(owner, name, None)
            if owner is None:
                raise NotWritten(f"{file}.py defines no {path}")

    def _lowest_part_at_fault(self, module):
        """The lowest of the part's ``LADDERS`` rungs on which the case passes (each rung lends one more lower
        part), or None when it fails on all of them. Attention's rung, the common case, is tried first."""
        ladder = LADDERS.get(self.part, ())
        if not ladder:
            return None
        if self._passes_on(module, ladder[:1]):
            return ladder[0]
        if len(ladder) == 1 or not self._passes_on(module, ladder):
            return None
        return next((ladder[i] for i in range(1, len(ladder) - 1) if self._passes_on(module, ladder[:i + 1])),
                    ladder[-1])

    def _passes_on(self, module, parts):
        """Run the case again with the lab's ``parts`` in place of the student's; True if it passes."""
        torch.manual_seed(0)  # the same random weights as the first run
        try:
            with lent(module, parts):
                self._check(module)
        except Exception:
            return False
        return True


@contextmanager
def lent(module, parts):
    """The lab's ``parts`` in place of the student's while the block runs: attention built from torch, the
    constructor's sizes and projections, split_heads and merge_heads. Everything is put back after."""
    mha = module("mha")
    cls = getattr(mha, "MultiHeadAttention", None)
    saved = []

    def put(owner, name, value):
        saved.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        setattr(owner, name, value)

    try:
        if "attention" in parts:
            for owner in [mha] + [m for m in (sys.modules.get("attention"),) if m is not None and m is not mha]:
                put(owner, "scaled_dot_product_attention", known_good_attention)
        if "construction" in parts and isinstance(cls, type):
            put(cls, "__init__", _lent_init(cls.__init__))
        if "heads" in parts and isinstance(cls, type):
            put(cls, "split_heads", _lent_split_heads)
            put(cls, "merge_heads", _lent_merge_heads)
        yield
    finally:
        for owner, name, original in reversed(saved):
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


_ABSENT = object()


def _lent_init(student_init):
    """The student's ``__init__``, then the sizes and projections the lab specifies (a bare module when theirs
    raises: its bug is the construction cases' alone)."""
    def __init__(self, d_model, n_heads, bias=True):
        try:
            student_init(self, d_model, n_heads, bias)
        except Exception:
            torch.nn.Module.__init__(self)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        for name in PROJECTIONS:
            setattr(self, name, torch.nn.Linear(d_model, d_model, bias=bias))
    return __init__


def _lent_split_heads(self, x):
    """(B, T, d_model) -> (B, n_heads, T, d_k): head i holds features [i*d_k, (i+1)*d_k), as the heads cases state."""
    return torch.stack(x.chunk(self.n_heads, dim=-1), dim=1)


def _lent_merge_heads(self, x):
    """(B, n_heads, T, d_k) -> (B, T, d_model): the heads side by side, head by head."""
    return torch.cat(x.unbind(dim=1), dim=-1)


def known_good_attention(query, key, value, mask=None):
    """Attention built from torch's own function, never from the reference: (output, weights).

    Both come back contiguous, as a matmul's result is: torch's fused kernels may return another
    memory layout, which would hide a `.view` on a transposed tensor in merge_heads.
    """
    # torch's fused kernel does not check that key and value hold as many positions (nor that query and key are
    # as wide): it reads past one of them, and its backward can crash the process. Raise as a matmul would.
    if query.size(-1) != key.size(-1) or key.size(-2) != value.size(-2):
        raise RuntimeError(f"attention got query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                           f"{tuple(value.shape)}: query and key must be as wide, key and value as long")
    return tuple(t.contiguous() for t in torch_attention(query, key, value, mask, differentiable=True))


def known_good_attention_module():
    """An ``attention`` module with the four contract names built from torch, never from the reference:
    what mha.py imports when your attention.py does not import (as the grader does). Any other name
    mha.py imports from attention.py is missing from it, so mha.py then fails to import, as in the grade."""
    module = types.ModuleType("attention")
    module.__file__ = "<attention built from torch>"

    def causal_mask(seq_len, device=None):
        return lower_triangle(seq_len).to(device)

    def padding_mask(tokens, pad_id):
        return (tokens != pad_id)[:, None, None, :]

    class ScaledDotProductAttention(torch.nn.Module):
        def __init__(self, *args, **kwargs):  # built as your MHA builds it (a dropout, a temperature): ignored
            super().__init__()

        def forward(self, query, key, value, mask=None):
            return known_good_attention(query, key, value, mask)

    module.causal_mask, module.padding_mask = causal_mask, padding_mask
    module.scaled_dot_product_attention = known_good_attention
    module.ScaledDotProductAttention = ScaledDotProductAttention
    return module


STAND_IN_NOTE = "attention.py does not import, so mha.py was tested on attention built from torch, as the grader does"


CASES = []
EXTRA_CASES = []


def case(part, points):
    """Add the decorated function to CASES (or EXTRA_CASES) as a case of ``part`` worth ``points``."""
    if part not in PARTS and part not in EXTRA_PARTS:
        raise ValueError(f"unknown part {part!r}")

    def register(check):
        (CASES if part in PARTS else EXTRA_CASES).append(Case(check.__name__, part, points, check))
        return check
    return register


def cases_of(*parts):
    return [c for c in CASES + EXTRA_CASES if c.part in parts]


# ============================================================================= part1_masks

# (B=2, T=5); 0 is the usual pad id, 9 shows that pad_id is a parameter.
TOKENS = torch.tensor([[5, 7, 2, 0, 0],
                       [3, 0, 9, 4, 1]])


def real_tokens(tokens, pad_id):
    """The expected padding mask, entry by entry: True where the token is not padding."""
    batch, seq = tokens.shape
    expected = torch.zeros(batch, 1, 1, seq, dtype=torch.bool)
    for b in range(batch):
        for t in range(seq):
            expected[b, 0, 0, t] = tokens[b, t].item() != pad_id
    return expected


def require_a_mask(mask, case, hint):
    """As the grade: a mask's shape, dtype and device earn points only on a mask that follows something (the
    right mask of every case that asks holds both True and False); a constant one is no work done."""
    constant = mask_constant(mask)
    if constant:
        fail(case, constant, hint=hint(mask))


@case("part1_masks", points=1)
def causal_mask_is_a_square_bool_tensor(attention):
    for seq_len in (1, 4, 7):
        mask = attention.causal_mask(seq_len)
        check_layout(mask, (seq_len, seq_len), torch.bool, case=f"causal_mask({seq_len})", what="mask",
                     hint="causal_mask(T) is a (T, T) tensor")
        require_a_mask(mask, f"causal_mask({seq_len})", causal_mask_hint(seq_len))


@case("part1_masks", points=2)
def causal_mask_allows_the_past_and_blocks_the_future(attention):
    for seq_len in (2, 5):
        check_tensor(attention.causal_mask(seq_len), lower_triangle(seq_len),
                     case=f"causal_mask({seq_len})", what="mask", hint=causal_mask_hint(seq_len))


@case("part1_masks", points=1)
def causal_mask_is_created_on_the_requested_device(attention):
    # This machine has no second device to ask for (and "meta" costs seconds of imports), so the text tells.
    # The call must accept a device and give a tensor; its values and layout are the other causal cases' to
    # judge, as in the grade (one defect, one charge).
    got = attention.causal_mask(3, device=torch.device("cpu"))
    if not torch.is_tensor(got):
        fail("causal_mask(3, device='cpu')", f"mask should be a torch.Tensor, got {type(got).__name__}")
    require_a_mask(got, "causal_mask(3, device='cpu')", causal_mask_hint(3))
    why = device_ignored(inspect.getsource(attention))
    if why:
        fail("causal_mask(seq_len, device)", why, hint=DEVICE_HINT)


@case("part1_masks", points=1)
def padding_mask_is_bool_with_shape_batch_1_1_seq(attention):
    mask = attention.padding_mask(TOKENS, pad_id=0)
    check_layout(mask, (2, 1, 1, 5), torch.bool, case="padding_mask(tokens (2, 5), pad_id=0)", what="mask", hint=(
        "add two singleton dims so the mask is (B, 1, 1, T): it broadcasts over heads and queries"))
    require_a_mask(mask, "padding_mask(tokens (2, 5), pad_id=0)", padding_mask_hint(TOKENS, 0))


@case("part1_masks", points=2)
def padding_mask_is_true_exactly_at_real_tokens(attention):
    for pad_id in (0, 9):
        expected = real_tokens(TOKENS, pad_id)
        check_tensor(attention.padding_mask(TOKENS, pad_id), expected,
                     case=f"padding_mask({TOKENS.tolist()}, pad_id={pad_id})", what="mask",
                     hint=padding_mask_hint(TOKENS, pad_id))


# ============================================================================= part1_attention

# (name, query shape, key shape, value shape): 2-D, 3-D and 4-D inputs,
# including T_q != T_k and d_v != d_k.
SHAPES = [
    ("2-D", (5, 4), (5, 4), (5, 4)),
    ("3-D, T_q != T_k, d_v != d_k", (2, 3, 4), (2, 6, 4), (2, 6, 5)),
    ("4-D (batch, heads)", (2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)),
]


def qkv(q_shape, k_shape, v_shape, dtype=torch.float32):
    """Query, key and value of the given shapes, each from its own fixed seed. float32, as the grade's cases:
    a float32 step in a float64 run is charged by the few float64 cases alone, as in the grade."""
    return tuple(randn(*shape, dtype=dtype, seed=seed)
                 for seed, shape in enumerate((q_shape, k_shape, v_shape), start=1))


def attend(attention, query, key, value, mask=None, any_rank=True, either_order=False):
    """Call the student's function on copies of the inputs, as the grader does (an in-place edit of an input is
    charged once, by attention_leaves_its_inputs_unchanged), and return (output, weights, case). With ``any_rank``,
    code that raises at the inputs' rank is asked at a rank it takes (at_another_rank): only the shapes case,
    which passes any_rank=False, charges leading dims, as the grade charges them in one test. With
    ``either_order``, a (weights, output) pair comes back in order (``unpack_pair``)."""
    case = f"scaled_dot_product_attention({describe(q=query, k=key, v=value, mask=mask)})"
    try:
        result = attention.scaled_dot_product_attention(*copies(query, key, value, mask))
    except Exception:
        result = at_another_rank(attention, query, key, value, mask) if any_rank else None
        if result is None:
            raise
    shapes = ((*query.shape[:-1], value.size(-1)), (*query.shape[:-1], key.size(-2)))  # output's, weights'
    output, weights = unpack_pair(result, case=case, what="scaled_dot_product_attention", shapes=shapes,
                                  inputs={"query": query, "key": key, "value": value}, either_order=either_order)
    return output, weights, case


def again(attention, query, key, value, mask=None, either_order=False):
    """A function of no arguments that calls the student's function again on the same inputs: (output, weights)."""
    return lambda: attend(attention, query, key, value, mask, either_order=either_order)[:2]


def at_another_rank(attention, query, key, value, mask):
    """Your result on the same inputs at a rank your code takes, its leading dims put back; None when no other
    rank works or the mask has leading dims of its own. Leading dims are the shapes case's charge, as in the grade."""
    rank = rank_that_works(attention, query, key, value) if mask is None or mask.dim() <= 2 else None
    if rank is None:
        return None
    moved = [at_rank(t, rank) for t in (query, key, value)]
    try:
        result = attention.scaled_dot_product_attention(*copies(*moved, mask))
    except Exception:
        return None
    return tuple(r.reshape(*query.shape[:-2], *r.shape[-2:]) if torch.is_tensor(r) and r.dim() >= 2 else r
                 for r in result) if isinstance(result, (tuple, list)) else result


def at_rank(t, rank):
    """``t`` with its leading dims merged into one (3-D), padded with a 1 (4-D) or dropped (2-D, when there is one
    leading index in all): the same inputs at another rank. None when ``t`` cannot take that rank."""
    lead = math.prod(t.shape[:-2])
    if rank == 2:
        return t.reshape(t.shape[-2:]) if lead == 1 else None
    return t.reshape(*([1] * (rank - 3)), lead, *t.shape[-2:])


def rank_that_works(attention, query, key, value):
    """Another rank (2, 3 or 4) at which the same inputs give an output and weights of the right shapes, or None."""
    for rank in (2, 3, 4):
        moved = [at_rank(t, rank) for t in (query, key, value)]
        if rank == query.dim() or any(t is None for t in moved):
            continue
        q, k, v = moved
        try:
            output, weights = attention.scaled_dot_product_attention(q, k, v)
        except Exception:
            continue
        if (getattr(output, "shape", None), getattr(weights, "shape", None)) == (
                (*q.shape[:-1], v.size(-1)), (*q.shape[:-1], k.size(-2))):
            return rank
    return None


def at_a_rank_that_works(attention, query, key, value):
    """The inputs as given or, when your code raises at their rank while another rank works, at that rank:
    leading dims are one case's charge (the shapes case below), as in the grade."""
    try:
        attention.scaled_dot_product_attention(*copies(query, key, value))
    except Exception:
        rank = rank_that_works(attention, query, key, value)
        if rank is not None:
            return tuple(at_rank(t, rank) for t in (query, key, value))
    return query, key, value


@case("part1_attention", points=1)
def attention_returns_output_and_weights_with_the_right_shapes(attention):
    for name, q_shape, k_shape, v_shape in SHAPES:
        query, key, value = qkv(q_shape, k_shape, v_shape)
        try:
            output, weights, case = attend(attention, query, key, value, any_rank=False)
        except Exception as exc:  # the grader's layout test: a rank the code cannot take, while another works
            works = None if isinstance(exc, CheckFailed) else rank_that_works(attention, query, key, value)
            if works is None:
                raise
            fail(f"scaled_dot_product_attention({describe(q=query, k=key, v=value)})",
                 f"{type(exc).__name__} at {query.dim()}-D: {' '.join(str(exc).split())}",
                 f"the same inputs as {works}-D tensors give the right shapes",
                 hint=MISTAKES["layout"]["fixed_leading_dims"])
        check_layout(output, (*q_shape[:-1], v_shape[-1]), query.dtype, case=case, what="output",
                     hint="output is (..., T_q, d_v): one row per query, as wide as value")
        check_layout(weights, (*q_shape[:-1], k_shape[-2]), query.dtype, case=case, what="weights",
                     hint="weights are (..., T_q, T_k): one row per query, one column per key")


@case("part1_attention", points=2)
def attention_weights_match_pytorch(attention):
    for name, *shapes in SHAPES:
        query, key, value = at_a_rank_that_works(attention, *qkv(*shapes))
        output, weights, case = attend(attention, query, key, value)
        check_tensor(weights, torch_attention(query, key, value)[1], case=f"{name}: {case}", what="weights",
                     hint=lambda got: calls_differ((output, weights), again(attention, query, key, value)())
                     or attention_hint(query, key, value, None, got) or FORMULA)


@case("part1_attention", points=2)
def attention_output_matches_pytorch(attention):
    for name, *shapes in SHAPES:
        query, key, value = at_a_rank_that_works(attention, *qkv(*shapes))
        output, weights, case = attend(attention, query, key, value)
        check_tensor(output, torch_attention(query, key, value)[0], case=f"{name}: {case}", what="output",
                     hint=lambda got: calls_differ((output, weights), again(attention, query, key, value)())
                     or attention_hint(query, key, value, None, weights) or output_not_applied(got, weights, value)
                     or "output = weights @ value: the weighted sum of the values")


@case("part1_attention", points=1)
def attention_weights_are_non_negative_and_rows_sum_to_one(attention):
    query, key, value = at_a_rank_that_works(attention, *qkv((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)))
    output, weights, case = attend(attention, query, key, value)
    check_layout(weights, (*query.shape[:-1], 7), query.dtype, case=case, what="weights")
    if (weights < 0).any():
        fail(case, f"weights contain negative values (min {float(weights.min()):.3g})",
             hint="weights come out of a softmax, so they are never negative")
    sums = weights.detach().sum(dim=-1)
    check_tensor(sums, torch.ones_like(sums), case=case, what="row sums of weights (sum over the keys)",
                 hint=lambda _: calls_differ((output, weights), again(attention, query, key, value)())
                 or attention_hint(query, key, value, None, weights) or FORMULA)


@case("part1_attention", points=1)
def attention_works_in_float32(attention):
    query, key, value = qkv((2, 5, 8), (2, 5, 8), (2, 5, 8), dtype=torch.float32)
    output, weights, case = attend(attention, query, key, value)
    check_attention((output, weights), query, key, value, case=case, what="scaled_dot_product_attention",
                    again=again(attention, query, key, value))


@case("part1_attention", points=1)
def attention_is_float64_accurate_in_float64(attention):
    # The grade's float64 test, the one case that charges a float32 constant, cast or intermediate in a float64
    # run (the value cases run float32; the other float64 cases accept float32 accuracy). Wrong values are the
    # value cases' charge: a float64 result wrong the way your own float32 run is wrong passes here, as in the grade.
    query, key, value = qkv((2, 5, 8), (2, 5, 8), (2, 5, 8), dtype=torch.float64)
    mask = lower_triangle(5)
    output, weights, case = attend(attention, query, key, value, mask, either_order=True)
    require_attention((output, weights), value, mask, case=case)  # as in the grade: points for attention only
    expected_output, expected_weights = torch_attention(query, key, value, mask)
    pairs = [(weights, expected_weights, "weights"), (output, expected_output, "output")]
    for got, expected, what in pairs:
        check_layout(got, expected.shape, torch.float64, case=case, what=what)
    if all(float32_close(got, expected) for got, expected, _ in pairs):  # right: now to float64 precision
        for got, expected, what in pairs:
            check_tensor(got, expected, case=case, what=what, precision=True,
                         hint=lambda got: calls_differ((output, weights), again(attention, query, key, value, mask, True)())
                         or attention_hint(query, key, value, mask, weights) or FORMULA)
        return
    try:
        own_output, own_weights, _ = attend(attention, *(t.float() for t in (query, key, value)), mask, either_order=True)
    except Exception:  # float32 inputs: the float32 cases' charge
        return
    for (got, _, what), own in zip(pairs, (own_weights, own_output)):
        if not float32_close(got, own):
            error = (got.detach().double() - own.detach().double()).abs().nan_to_num(float("inf")).max().item()
            fail(case, f"{what} " + FLOAT64_DEPARTS.format(f" (max abs error {error:.3g})"), hint=FLOAT32_HINT)


def float32_close(got, expected):
    """The same shape and float32-close values, NaN where NaN: "right, its precision aside" (the grade's gate)."""
    return (got.shape == expected.shape and
            torch.allclose(got.detach().double(), expected.detach().double(), atol=1e-4, rtol=1e-3, equal_nan=True))


def every_row_and_column_mixed(t):
    """A (T, T) bool mask (T >= 4) whose every row and column allows two keys and blocks two, as does its
    inverse: a mask read the wrong way round still leaves weights that move with the inputs."""
    offset = (torch.arange(t)[None, :] - torch.arange(t)[:, None]) % t
    return (offset == 0) | (offset == 2)


def backward(total, leaves, case, module):
    """``torch.autograd.grad(total, leaves, allow_unused=True)``; a backward that raises fails as the grade's does:
    torch's error, the in-place edits in your files that broke it (read beside ``module``'s), and the hint."""
    try:
        return torch.autograd.grad(total, leaves, allow_unused=True)
    except RuntimeError as exc:
        text = " ".join(str(exc).split())
        file, edits = getattr(module, "__file__", None), []
        if INPLACE_ERROR in text and file:
            for name in ("attention.py", "mha.py"):
                path = Path(file).resolve().parent / name
                edits += inplace_edits(path.read_text(encoding="utf-8"), name) if path.is_file() else []
        fail(case, f"the backward pass failed: RuntimeError: {text}", *(f"in-place edit: {e}" for e in edits),
             hint=error_hint(text))


@case("part1_attention", points=1)
def gradients_flow_back_to_query_key_and_value(attention):
    # The twin of the grader's public gradient test: (B, T, d) = (2, 5, 4), float64, a mask. As in the grade,
    # the gradients are judged against finite differences of YOUR forward, not against PyTorch's: a wrong
    # forward is the value tests' failure, not this one's too.
    query, key, value = (t.requires_grad_() for t in qkv((2, 5, 4), (2, 5, 4), (2, 5, 4), dtype=torch.float64))
    mask = every_row_and_column_mixed(5)
    grad_output, grad_weights = randn(2, 5, 4, seed=4), randn(2, 5, 5, seed=5)
    case = f"scaled_dot_product_attention({describe(q=query, k=key, v=value, mask=mask)})"
    # The leaves themselves (an in-place edit of a leaf breaks autograd, in the grade too), and a copy of the mask.
    result = attention.scaled_dot_product_attention(query, key, value, mask.clone())
    output, weights = unpack_pair(result, case=case, what="scaled_dot_product_attention", shapes=((2, 5, 4), (2, 5, 5)),
                                  either_order=True)  # a swapped pair is the value cases' charge, as in the grade
    in_order = (lambda pair: pair[::-1]) if result[0] is weights else (lambda pair: pair)
    # Shapes only: a dtype is the float64 test's failure, not this one's too.
    check_layout(output, (2, 5, 4), getattr(output, "dtype", None), case=case, what="output")
    check_layout(weights, (2, 5, 5), getattr(weights, "dtype", None), case=case, what="weights")
    require_attention((output, weights), value, mask, case=case)  # as in the grade: points for attention only
    names = ("query", "key", "value")
    if not (output.requires_grad or weights.requires_grad):  # as the grade: neither holds a gradient
        fail(case, "no gradient flows from output and weights back to query, key and value",
             hint=no_gradient([(name, None) for name in names]))
    # The gradient of this one number is what autograd.grad((output, weights), ..., (grad_output, grad_weights))
    # gives, exactly; passing grad_outputs would import sympy on first use, 2-3 s of every `make test`.
    weighted = sum((t * g).sum() for t, g in ((output, grad_output), (weights, grad_weights)) if t.requires_grad)
    grads = backward(weighted, (query, key, value), case, attention)
    inputs = [t.detach() for t in (query, key, value)]
    # inf/NaN values (-inf scores returned as weights) are left out, as in the grade
    grad_output, grad_weights = (g.masked_fill(~torch.isfinite(t.detach()), 0.0)
                                 for g, t in ((grad_output, output), (grad_weights, weights)))
    missing = no_gradient(zip(names, grads))
    for index, (name, got) in enumerate(zip(names, grads)):
        if got is None or not got.any():
            fail(case, f"the {name} gets no gradient" if got is None else f"the gradient w.r.t. {name} is all zeros",
                 hint=missing)
        for direction in (randn(*inputs[index].shape, seed=40 + 2 * index + i) for i in range(2)):
            direction = direction / direction.norm()
            moved = [list(inputs), list(inputs)]
            moved[0][index], moved[1][index] = inputs[index] + 1e-3 * direction, inputs[index] - 1e-3 * direction
            with torch.no_grad():
                ends = [in_order(attention.scaled_dot_product_attention(*copies(*args, mask))) for args in moved]
            finite_difference = sum(float(torch.where(g != 0, (a.double() - b.double()) * g, 0.0).sum())
                                    for a, b, g in zip(*ends, (grad_output, grad_weights))) / 2e-3
            claimed = float((got * direction).sum())
            # tolerances as the grader's (autograder/judging/own_forward.py): a float32-accurate forward passes
            if not abs(claimed - finite_difference) <= 1e-6 + 1e-3 * float(got.norm()):
                fail(case, f"the gradient w.r.t. {name} does not match your own forward: along a random direction "
                           f"your backward gives {claimed:.6g}, finite differences of your forward {finite_difference:.6g}",
                     hint=calls_differ(*(attend(attention, *inputs, mask, either_order=True)[:2] for _ in range(2)))
                     or "the backward must differentiate what forward computes: no .detach() or .data on the way, "
                        "no in-place edit of a tensor autograd saved, no custom autograd.Function with a wrong backward")


@case("part1_attention", points=1)
def module_wrapper_matches_pytorch(attention):
    query, key, value = qkv((2, 5, 4), (2, 5, 4), (2, 5, 4))  # d_v != d_k is the value tests' case
    mask = lower_triangle(5)
    case = f"ScaledDotProductAttention()({describe(q=query, k=key, v=value, mask=mask)})"
    result = attention.ScaledDotProductAttention()(*copies(query, key, value, mask))
    check_attention(result, query, key, value, mask, case=case, what="ScaledDotProductAttention.forward",
                    again=lambda: attention.ScaledDotProductAttention()(*copies(query, key, value, mask)))


@case("part1_attention", points=3)
def causal_mask_in_attention_matches_pytorch(attention):
    for shapes in [((2, 5, 4), (2, 5, 4), (2, 5, 4)),          # 3-D inputs
                   ((2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 8))]:  # a (T, T) mask broadcast over batch and heads
        query, key, value = qkv(*shapes)
        mask = lower_triangle(query.size(-2))
        output, weights, case = attend(attention, query, key, value, mask)
        check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention",
                        again=again(attention, query, key, value, mask))


@case("part1_attention", points=2)
def causal_attention_gives_future_keys_exactly_zero_weight(attention):
    query, key, value = qkv((2, 6, 4), (2, 6, 4), (2, 6, 4))
    _, weights, case = attend(attention, query, key, value, lower_triangle(6))
    check_layout(weights, (2, 6, 6), query.dtype, case=case, what="weights")
    future = ~lower_triangle(6).expand(2, 6, 6)
    leaked = future & (weights.detach() != 0)
    if leaked.any():
        b, i, j = (int(n) for n in leaked.nonzero()[0])
        fail(case, f"future leak at {int(leaked.sum())} positions: weights[{b}, {i}, {j}] = "
                   f"{float(weights[b, i, j]):.3g}, but key {j} comes after query {i}",
             hint=attention_hint(query, key, value, lower_triangle(6), weights)
             or "fill blocked scores with -inf before the softmax: they then get exactly 0 weight")


@case("part1_attention", points=2)
def padding_mask_in_attention_matches_pytorch(attention):
    query, key, value = qkv((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4))  # (B, h, T, d_k)
    real = torch.tensor([[True, True, True, False, False],
                         [True, True, True, True, True]])
    mask = real[:, None, None, :]  # (B, 1, 1, T): broadcast over heads and queries
    output, weights, case = attend(attention, query, key, value, mask)
    check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention",
                    again=again(attention, query, key, value, mask))


@case("part1_attention", points=1)
def numeric_masks_mean_nonzero_may_attend(attention):
    query, key, value = qkv((2, 5, 4), (2, 5, 4), (2, 5, 4))
    others = torch.tensor([2.5, -1.0, 0.5, 2.0])[(torch.arange(5)[:, None] + torch.arange(5)) % 4]  # (5, 5)
    for mask in (lower_triangle(5).to(torch.int64), lower_triangle(5).to(torch.float32),  # 1 = may attend, 0 = blocked
                 torch.where(torch.eye(5, dtype=torch.bool), 1.0, others) * lower_triangle(5)):  # other nonzero values too
        output, weights, case = attend(attention, query, key, value, mask)
        check_attention((output, weights), query, key, value, mask, case=case, what="scaled_dot_product_attention",
                        again=again(attention, query, key, value, mask))


@case("part1_attention", points=1)
def attention_leaves_its_inputs_unchanged(attention):
    # The grader's in-place test: a bool mask first (code that converts a numeric mask to a new tensor may still
    # edit a bool one in place, mask.logical_not_()), then a float mask. A crash on the float mask says nothing
    # about in-place edits: the numeric-mask case charges it.
    # Causal: its last row blocks no key, so a forward whose blocked rows are all NaN is still judged on one.
    query, key, value = qkv((2, 5, 8), (2, 5, 8), (2, 5, 8))
    for mask in (lower_triangle(5), lower_triangle(5).to(torch.float32)):
        given = copies(query, key, value, mask)
        case = f"scaled_dot_product_attention({describe(q=query, k=key, v=value, mask=mask)})"
        try:
            result = attention.scaled_dot_product_attention(*given)
        except Exception:
            if mask.dtype == torch.bool:
                raise
            continue
        changed = modified_inputs((query, key, value, mask), given)
        if changed:
            fail(case, INPUTS_MODIFIED.format(", ".join(changed)), hint=INPUTS_MODIFIED_HINT)
        if mask.dtype == torch.bool:  # as in the grade: points for attention only
            require_attention(result, value, mask, case=case)


@case("part1_attention", points=1)
def attention_stays_finite_on_large_scores(attention):
    # The grader's large-scores test: every score moved by one large constant (softmax does not change), no mask
    # (a fill value is the mask cases' charge). The output is compared with your own output on the plain
    # inputs, so a value bug (the other cases' charge) passes here.
    for dtype, shift in ((torch.float32, 300.0), (torch.float64, -1000.0)):  # exp(300) = inf, exp(-1000) = 0
        query, key, value = qkv((2, 6, 16), (2, 6, 16), (2, 6, 16), dtype=dtype)
        plain = attend(attention, query, key, value, either_order=True)[:2]
        require_attention(plain, value, case=f"scaled_dot_product_attention({describe(q=query, k=key, v=value)})")
        big_query, big_key = shift_all_scores(query, key, shift)
        *shifted, case = attend(attention, big_query, big_key, value, either_order=True)
        case = f"{case}, every score shifted by {shift:g}"
        for what, got, before in zip(("output", "weights"), shifted, plain):
            if not (torch.is_tensor(got) and torch.is_tensor(before)) or got.shape != before.shape:
                fail(case, f"{what} has shape {tuple(getattr(got, 'shape', ()))} for the shifted inputs, "
                           f"{tuple(getattr(before, 'shape', ()))} for the plain ones")
            if not torch.isfinite(got).all() and torch.isfinite(before).all():
                fail(case, f"{what} has inf/NaN, while it is finite before the shift", f"likely bug: {UNSTABLE_SOFTMAX}")
        (after, _), (before, _) = shifted, plain
        if not torch.allclose(after.detach().double(), before.detach().double(), atol=1e-4, rtol=1e-3, equal_nan=True):
            error = float((after.detach().double() - before.detach().double()).abs().max())
            fail(case, f"output changed by up to {error:.3g}; a softmax over the keys does not change when "
                       "every score moves by the same constant",
                 hint=calls_differ(plain, attend(attention, query, key, value, either_order=True)[:2]) or SHIFT_HINT)


# ============================================================================= part2_init

@case("part2_init", points=1)
def mha_stores_its_sizes(mha):
    for d_model, n_heads in [(12, 3), (8, 1), (8, 8)]:
        model = new_mha(mha, d_model, n_heads)
        case = f"MultiHeadAttention({d_model}, {n_heads})"
        expected = {"d_model": d_model, "n_heads": n_heads, "d_k": d_model // n_heads}
        got = {name: getattr(model, name, "<missing>") for name in expected}
        for name in expected:
            if type(got[name]) is not int or got[name] != expected[name]:  # 4.0 == 4, but a float d_k breaks view()
                fail(case, f"self.{name} is {got[name]!r}, expected the int {expected[name]}",
                     hint=sizes_stored(got, expected))


@case("part2_init", points=1)
def mha_has_four_linear_projections_and_nothing_else(mha):
    for bias in (True, False):
        d_model = 12
        model = new_mha(mha, d_model, 3, bias=bias)
        case = f"MultiHeadAttention({d_model}, 3, bias={bias})"
        layers = dict(zip(("w_q", "w_k", "w_v", "w_o"), projections(model, case=case)))
        for name, layer in layers.items():
            if (layer.in_features, layer.out_features) != (d_model, d_model):
                fail(case, f"{name} maps {layer.in_features} -> {layer.out_features} features, "
                           f"expected {d_model} -> {d_model}",
                     hint="all four projections are nn.Linear(d_model, d_model): the heads share them")
            if (layer.bias is not None) != bias:
                fail(case, f"{name} {'has no' if bias else 'has a'} bias",
                     hint=bias_not_followed({n: l.bias is not None for n, l in layers.items()}, bias))
        expected = 4 * (d_model * d_model + (d_model if bias else 0))
        count = sum(p.numel() for p in model.parameters())
        if count != expected:
            fail(case, f"the module has {count} parameters, expected {expected} (the four projections)",
                 hint="MultiHeadAttention has no layers besides w_q, w_k, w_v and w_o")


def require_a_valid_size_builds(mha):
    """As the grade: refusing a size earns points only when a valid size builds (a constructor that always raises
    refuses nothing in particular), and a valid size refused is told as such, not as the wrong exception."""
    try:
        new_mha(mha, 16, 4)
    except NotImplementedError:
        raise  # not written yet: the stub's one line, not a finding
    except CheckFailed as refused:
        raise CheckFailed(f"{refused}\n    {VALID_SIZE_REFUSED_TOO}") from None
    except Exception as exc:  # noqa: BLE001 - whichever error a valid size raised is the finding
        told = explain(exc, Path(mha.__file__).resolve().parent) or f"{type(exc).__name__}: {exc}"
        fail("MultiHeadAttention(16, 4)", told, VALID_SIZE_REFUSED_TOO)


@case("part2_init", points=2)
def mha_raises_dimension_mismatch_when_heads_do_not_divide_d_model(mha):
    require_a_valid_size_builds(mha)
    case = "MultiHeadAttention(16, 5)"
    try:
        mha.MultiHeadAttention(16, 5)
    except mha.DimensionMismatchError as exc:
        message = str(exc)
    except ValueError as exc:
        fail(case, f"raised {type(exc).__name__}: {exc}",
             hint=PLAIN_VALUE_ERROR_HINT)
    else:
        fail(case, "created a module, but 16 is not divisible by 5", hint=MISMATCH_NOT_RAISED_HINT)
    if "16" not in message or "5" not in message:
        fail(case, f"the error message {message!r} should name both numbers",
             hint='for example "d_model=16 is not divisible by n_heads=5"')


@case("part2_init", points=1)
def mha_raises_value_error_for_non_positive_sizes(mha):
    require_a_valid_size_builds(mha)
    sizes = [(0, 2), (-8, 2), (8, 0)]
    outcomes = [(args, constructed(mha, *args)) for args in sizes]
    did = [(args, "ValueError" if isinstance(got, ValueError) else type(got).__name__ if got else "created a module")
           for args, got in outcomes]
    for (args, error), (_, what) in zip(outcomes, did):
        if what != "ValueError":
            told = explain(error, Path(mha.__file__).resolve().parent) if error else None
            fail(f"MultiHeadAttention{args}", told or (what if what == "created a module" else f"raised {what}"),
                 hint=size_not_refused(did))


def constructed(mha, d_model, n_heads):
    """The exception ``MultiHeadAttention(d_model, n_heads)`` raised, or None when it created a module."""
    try:
        mha.MultiHeadAttention(d_model, n_heads)
    except NotImplementedError:
        raise  # not written yet: the stub's one line, not a finding
    except Exception as exc:  # noqa: BLE001 - which error (a ValueError or another) is the finding
        return exc
    return None


# ============================================================================= part2_heads

def build(mha, d_model, n_heads, bias=True, dtype=torch.float32):
    """The student's module in ``dtype``: float32, as the grade's forward cases, float64 in the precision and
    gradient cases, as there."""
    return new_mha(mha, d_model, n_heads, bias=bias).to(dtype)


def new_mha(mha, d_model, n_heads, **kwargs):
    """``MultiHeadAttention(d_model, n_heads, **kwargs)``; a DimensionMismatchError for sizes that divide
    evenly fails with its cause first, in the grader's words (``valid_size_refused``)."""
    try:
        return mha.MultiHeadAttention(d_model, n_heads, **kwargs)
    except Exception as exc:
        why = valid_size_refused(d_model, n_heads, type(exc).__name__)
        if why is None:
            raise
        raise CheckFailed(f"{why}\n{explain(exc, Path(mha.__file__).resolve().parent)}") from None


def check_form(got, x, shape, *, case, what, hint=None):
    """The result of a reshape: this shape, x's dtype (float64 in, float64 out) and a gradient flowing back to x,
    as the grade's heads tests check them (nothing above split_heads and merge_heads charges their precision or
    gradient: the lab's own stand in for them there)."""
    check_layout(got, shape, x.dtype, case=case, what=what, hint=hint)
    if not (isinstance(got, torch.Tensor) and got.requires_grad):
        fail(case, "no gradient flows back to x", hint=no_gradient([("x", None)]))


@case("part2_heads", points=1)
def split_heads_returns_batch_heads_seq_d_k(mha):
    model = build(mha, 12, 3)
    x = randn(2, 5, 12).requires_grad_() * 1  # as a layer's output reaches it (not a leaf): in place is fine
    check_form(model.split_heads(x), x, (2, 3, 5, 4), case=f"MultiHeadAttention(12, 3).split_heads(x {tuple(x.shape)})",
               what="split_heads(x)", hint=split_hint(x.detach(), 3))


@case("part2_heads", points=2)
def split_heads_gives_head_i_its_own_slice_of_features(mha):
    model = build(mha, 12, 3)
    x = randn(2, 5, 12)
    # Head i holds features [i*d_k, (i+1)*d_k) of every position.
    expected = torch.stack([x[:, :, 4 * i: 4 * (i + 1)] for i in range(3)], dim=1)  # (B, h, T, d_k)
    check_tensor(model.split_heads(x), expected,
                 case=f"MultiHeadAttention(12, 3).split_heads(x {tuple(x.shape)})",
                 what="split_heads(x)", hint=split_hint(x, 3))


@case("part2_heads", points=2)
def merge_heads_undoes_split_heads(mha):
    model = build(mha, 12, 3)
    heads = randn(2, 3, 5, 4)  # (B, h, T, d_k)
    expected = torch.cat([heads[:, i] for i in range(3)], dim=-1)  # (B, T, d_model), head by head
    given = heads.clone().requires_grad_() * 1  # as attention's output reaches it (not a leaf)
    check_form(model.merge_heads(given), given, (2, 5, 12), case=f"merge_heads(x {tuple(heads.shape)})",
               what="merge_heads(x)", hint=merge_hint(heads))
    check_tensor(model.merge_heads(heads), expected, case=f"merge_heads(x {tuple(heads.shape)})",
                 what="merge_heads(x)", hint=merge_hint(heads))
    x = randn(2, 5, 12)
    check_tensor(model.merge_heads(model.split_heads(x)), x, case=f"merge_heads(split_heads(x {tuple(x.shape)}))",
                 what="the round trip", hint="merge_heads is right, so split_heads must be wrong: see its tests")


# ============================================================================= part2_forward

def run(model, label, query, key, value, mask=None, inputs_untouched=False):
    """Call the student's forward on copies of the inputs, as the grader does; ``label`` names the module in
    messages. With ``inputs_untouched``, fail if forward changed one of them in place (as the grader checks
    in its cross-attention case alone)."""
    case = f"{label}({describe(query=query, key=key, value=value, mask=mask)})"
    given = copies(query, key, value, mask)
    result = model(*given)
    changed = modified_inputs((query, key, value, mask), given)
    if inputs_untouched and changed:
        fail(case, FORWARD_INPUTS_MODIFIED.format(", ".join(changed)), hint=FORWARD_INPUTS_MODIFIED_HINT)
    return result, case


@case("part2_forward", points=1)
def mha_forward_returns_output_and_per_head_weights(mha):
    model = build(mha, 8, 2)
    query, memory = (randn(2, t, 8, seed=seed, dtype=torch.float32) for seed, t in ((1, 3), (2, 6)))  # T_q 3, T_k 6
    result, case = run(model, "MultiHeadAttention(8, 2)", query, memory, memory)
    output, weights = unpack_pair(result, case=case, what="MultiHeadAttention.forward", shapes=((2, 3, 8), (2, 2, 3, 6)))
    check_layout(output, (2, 3, 8), torch.float32, case=case, what="output",
                 hint=rows_per_key(output, 3, 6) or "the output has the query's shape (B, T_q, d_model)")
    check_layout(weights, (2, 2, 3, 6), torch.float32, case=case, what="weights",
                 hint=rows_per_key(weights, 3, 6) or mha_hint(model, 2, query, memory, memory, None))


@case("part2_forward", points=2)
def mha_self_attention_matches_pytorch(mha):
    model = build(mha, 8, 2)
    x = randn(2, 5, 8, dtype=torch.float32)
    result, case = run(model, "MultiHeadAttention(8, 2)", x, x, x)
    check_mha(result, torch_mha(model, 2, x, x, x, case=case), model, 2, x, x, x, case=case)


@case("part2_forward", points=2)
def mha_causal_self_attention_matches_pytorch(mha):
    model = build(mha, 12, 3, dtype=torch.float64)
    x = randn(2, 6, 12)
    causal = lower_triangle(6)  # (T, T), passed on unchanged
    result, case = run(model, "MultiHeadAttention(12, 3)", x, x, x, causal)
    # The one MHA case that charges float32 in a float64 run (dtype or precision), as the grade's float64 test does.
    check_mha(result, torch_mha(model, 3, x, x, x, allowed=causal, case=case), model, 3, x, x, x, causal, case=case,
              precision=True)


@case("part2_forward", points=2)
def mha_cross_attention_with_padding_matches_pytorch(mha):
    model = build(mha, 8, 2, bias=False)
    query, key, value = (randn(2, t, 8, seed=seed, dtype=torch.float32) for seed, t in ((1, 3), (2, 6), (3, 6)))
    real = torch.tensor([[True, True, True, True, False, False],
                         [True, True, True, True, True, True]])
    padding = real[:, None, None, :]  # (B, 1, 1, T_k)
    result, case = run(model, "MultiHeadAttention(8, 2, bias=False)", query, key, value, padding)
    expected = torch_mha(model, 2, query, key, value, real_keys=real, case=case)
    check_mha(result, expected, model, 2, query, key, value, padding, case=case)
    run(model, "MultiHeadAttention(8, 2, bias=False)", query, key, value, padding, inputs_untouched=True)  # as the grade


@case("part2_forward", points=1)
def mha_gradients_reach_every_input_and_parameter(mha):
    # As the grade's gradient test: the output and the weights, differentiated w.r.t. the inputs and every parameter,
    # in float64.
    model = build(mha, 8, 2, dtype=torch.float64)
    query, key, value = (randn(2, t, 8, seed=seed).requires_grad_() for seed, t in ((1, 3), (2, 6), (3, 6)))
    case = f"MultiHeadAttention(8, 2)({describe(query=query, key=key, value=value)})"
    result = model(query, key, value)  # the leaves themselves, as the grader sends them (an in-place edit raises)
    pair = unpack_pair(result, case=case, what="MultiHeadAttention.forward", shapes=((2, 3, 8), (2, 2, 3, 6)))
    leaves = {"query": query, "key": key, "value": value, **dict(model.named_parameters())}
    reached = [t for t in pair if torch.is_tensor(t) and t.requires_grad]
    grads = backward(sum((t * randn(*t.shape, seed=60 + i, dtype=t.dtype)).sum() for i, t in enumerate(reached)),
                     list(leaves.values()), case, mha) if reached else [None] * len(leaves)
    missing = [(name, None) for name, grad in zip(leaves, grads) if grad is None]
    if missing:
        fail(case, "not every input and parameter gets a gradient", hint=no_gradient(missing))


# ============================================================================= extra credit (optional)
# Not in the points of `make test`; each case weighs what its hidden twins weigh in the grade's extra credit
# (values 2, float64 and T_q != T_k 1, gradients 1, memory 2, step 2, its projections 2), so a case failed here is
# the share the grade takes.

@case("extra_tiled", points=2)
def tiled_attention_matches_pytorch(attention):
    for causal in (False, True):
        query, key, value = qkv((2, 2, 7, 4), (2, 2, 7, 4), (2, 2, 7, 3))
        sizes = (1, 3, 64)  # one key per block, a block size that does not divide T, one block
        for block_size in sizes:
            case = f"tiled_attention({describe(q=query, k=key, v=value)}, causal={causal}, block_size={block_size})"
            expected, _ = torch_attention(query, key, value, lower_triangle(7) if causal else None)
            check_tensor(attention.tiled_attention(query, key, value, causal=causal, block_size=block_size),
                         expected, case=case, what="output",
                         hint=tiled_hint(query, key, value, causal, block_size, attention, sizes))


def tiled_hint(query, key, value, causal, block_size, attention=None, sizes=()):
    """Hint for a wrong tiled output, in the grade's words when it is PyTorch's attention under the causal mask of
    a mistake it names (the boundary one key late, or each block's keys numbered from 0), or the output of a
    running sum never rescaled; else a measured property of its rows, or of ``attention``'s tiled outputs at the
    other block ``sizes`` (called only then)."""
    rows, cols = torch.arange(query.size(-2))[:, None], torch.arange(key.size(-2))[None, :]
    named = [(cols <= rows + 1, "tiled_causal_off_by_one"), (cols % block_size <= rows, "tiled_block_offset_forgotten")]

    def hint(got):
        expected = torch_attention(query, key, value, lower_triangle(query.size(-2), key.size(-2)) if causal else None)[0]
        named_bug = likely_bug(got, [(lambda allowed=allowed: torch_attention(query, key, value, allowed)[0],
                                      MISTAKES["tiled"][name]) for allowed, name in (named if causal else [])] + [
            (lambda: output_without_rescaling(query, key, value, causal, block_size)
             if key.size(-2) > block_size else None, MISTAKES["tiled"]["tiled_no_rescale"])], right=lambda: expected)
        return named_bug or tiled_rows(got, expected, value, causal, block_size) \
            or tiled_blocks(tiled_outputs(attention, (query, key, value), causal, sizes, {block_size: got}), expected,
                            key.size(-2)) \
            or ("rescale the running sum and output by exp(m - m_new) whenever the max grows; "
                "with causal=True, key j of a block sits at position start + j")
    return hint


def tiled_outputs(attention, qkv, causal, sizes, known):
    """{block_size: tiled_attention's output}: ``known``, and a call for each other size (an error leaves it out)."""
    outputs = dict(known)
    for size in sizes:
        if size not in outputs and attention is not None:
            try:
                outputs[size] = attention.tiled_attention(*qkv, causal=causal, block_size=size)
            except Exception:  # that size is judged by its own case
                pass
    return outputs


# Half the grader's T (4096), to stay fast: a (T, T) float32 score matrix is then 16 MiB, a block of 64 keys 0.5 MiB.
MEMORY_T, MEMORY_D = 2048, 16


@case("extra_tiled", points=1)
def tiled_attention_is_float64_accurate_with_more_keys_than_queries(attention):
    # As the grade: float64 to float64 precision, T_q != T_k without a mask, then a causal mask in blocks of 3.
    for (t_q, t_k, d), causal, block_size in [((9, 13, 8), False, 4), ((11, 11, 4), True, 3)]:
        query, key, value = qkv((2, t_q, d), (2, t_k, d), (2, t_k, d), dtype=torch.float64)
        case = f"tiled_attention({describe(q=query, k=key, v=value)}, causal={causal}, block_size={block_size})"
        expected, _ = torch_attention(query, key, value, lower_triangle(t_q, t_k) if causal else None)
        check_tensor(attention.tiled_attention(query, key, value, causal=causal, block_size=block_size), expected,
                     case=case, what="output", precision=True,
                     hint=tiled_hint(query, key, value, causal, block_size, attention, (block_size, 64)))


@case("extra_tiled", points=1)
def tiled_attention_passes_gradients_to_query_key_and_value(attention):
    names = ("query", "key", "value")
    leaves = [t.requires_grad_() for t in qkv((2, 6, 4), (2, 6, 4), (2, 6, 4), dtype=torch.float64)]
    case = f"tiled_attention({describe(q=leaves[0], k=leaves[1], v=leaves[2])}, causal=True, block_size=4)"
    output = attention.tiled_attention(*leaves, causal=True, block_size=4)
    check_layout(output, (2, 6, 4), torch.float64, case=case, what="output", float32_ok=True)
    grad_output = randn(2, 6, 4, seed=75)
    grads = backward((output * grad_output).sum(), leaves, case, attention) if output.requires_grad else [None] * 3
    if any(got is None for got in grads):
        fail(case, "not every input gets a gradient", hint=no_gradient(zip(names, grads)))
    twins = [t.detach().clone().requires_grad_() for t in leaves]  # PyTorch's attention, differentiated by autograd
    pytorch = torch.nn.functional.scaled_dot_product_attention(*twins, attn_mask=lower_triangle(6))
    expected = torch.autograd.grad((pytorch * grad_output).sum(), twins)
    forward_wrong = forward_already_wrong("output", output, pytorch)  # as the grade: a wrong forward, else the backward
    for name, got, want in zip(names, grads, expected):
        check_tensor(got, want, case=case, what=f"gradient w.r.t. {name}",
                     hint=forward_wrong or TILED_GRADIENT_ONLY_WRONG.format(name))


@case("extra_tiled", points=2)
def tiled_attention_never_builds_the_score_matrix(attention):
    # The grader measures the call's peak memory; here, the largest tensor it makes stands in for it (cheap, and
    # the same verdict for a (T, T) score matrix). As in the grade, the memory points need an output that is
    # attention: its shape, its row 0 (under the causal mask query 0 sees key 0 alone, so it is value[0]) and
    # rows sampled across the sequence, to 1e-3; what is wrong with the values is the case above's to say.
    query, key, value = (randn(MEMORY_T, MEMORY_D, seed=76 + i, dtype=torch.float32) for i in range(3))
    case = f"tiled_attention(query/key/value ({MEMORY_T}, {MEMORY_D}) float32, causal=True)"
    rows = sampled_rows(MEMORY_T)  # attention at rows across the sequence, computed before the call may edit its inputs
    allowed = torch.arange(MEMORY_T)[None, :] <= torch.tensor(rows)[:, None]  # (rows, T): causal, those queries
    expected = torch.nn.functional.scaled_dot_product_attention(query[rows].double(), key.double(), value.double(),
                                                                attn_mask=allowed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small ops: on a busy machine, torch's threads mostly wait on each other (seconds)
    try:
        with LargestTensor() as largest:
            output = attention.tiled_attention(query, key, value, causal=True)
    finally:
        torch.set_num_threads(threads)
    if not torch.is_tensor(output) or tuple(output.shape) != (MEMORY_T, MEMORY_D):
        fail(case, f"returned {tuple(output.shape) if torch.is_tensor(output) else type(output).__name__}, expected an "
                   f"output of shape {(MEMORY_T, MEMORY_D)}", hint=TILED_SHAPE_HINT)
    if not torch.isfinite(output).all() or not torch.allclose(output[0].double(), value[0].double(), atol=1e-4):
        fail(case, TILED_ROW_0, hint=tiled_rows(output[:1], value[:1], value, True, None) or TILED_ROW_0_HINT)
    wrong = rows_not_attention(output, expected, rows)
    if wrong:
        fail(case, wrong)  # the measured rows are the finding; the value case says what is wrong
    matrix = MEMORY_T * MEMORY_T * 4  # one float32 (T, T) matrix
    if largest.bytes > matrix / 2:
        fail(case, f"the call made a tensor of {largest.bytes / 2**20:.0f} MiB; " + TILED_MATRIX_BUILT.format(matrix / 2**20),
             hint=TILED_MEMORY_HINT)


@case("extra_step", points=2)
def step_reproduces_the_causal_forward(mha):
    # Only the outputs, as in the grade: what the cache holds is the next case's.
    model = build(mha, 12, 3)
    x = randn(2, 5, 12, dtype=torch.float32)
    with torch.no_grad():
        expected, _ = torch_mha(model, 3, x, x, x, allowed=lower_triangle(5), case="MultiHeadAttention(12, 3)")
        cache, outputs, cases = None, [], []
        for t in range(5):  # every step first, so a failure can say which steps are wrong, as the grade does
            cases.append(f"MultiHeadAttention(12, 3).step(x[:, {t}:{t + 1}], cache) for t = 0..{t}")
            y, cache = unpack_pair(model.step(x[:, t:t + 1], cache), case=cases[-1], what="step")
            outputs.append(y)
        for t, (y, case) in enumerate(zip(outputs, cases)):
            check_tensor(y, expected[:, t:t + 1], case=case, what="y (B, 1, d_model)",
                         hint=lambda _: decode_steps(outputs, expected) or (
                             "step t must equal position t of forward(x, x, x, causal_mask(T)): project the new "
                             "token, append its key and value to the cache (dim 2), attend over the whole cache"))


@case("extra_step", points=2)
def step_projects_only_the_new_token_and_grows_the_cache(mha):
    # The grader's cache case: what reaches w_k and w_v at each step, then the cache's values, each token's
    # features compared as a set (the head layout is split_heads' charge).
    model = build(mha, 12, 3)
    x = randn(2, 5, 12, dtype=torch.float32)
    seen = {"w_k": [], "w_v": []}
    hooks = [getattr(model, name).register_forward_pre_hook(
        lambda _, inputs, name=name: seen[name].append(list(inputs[0].shape))) for name in seen]
    caches, cache = [], None
    try:
        with torch.no_grad():
            for t in range(5):
                _, cache = unpack_pair(model.step(x[:, t:t + 1], cache), case=f"step {t + 1} of 5", what="step")
                caches.append(cache)
    finally:
        for hook in hooks:
            hook.remove()
    for layer, shapes in seen.items():
        if len(shapes) != 5 or any(shape[-2:] != [1, 12] for shape in shapes):
            fail("decoding 5 tokens", f"{layer} saw inputs of shapes {shapes}",
                 hint=step_projections(layer, shapes, 5, 12) or STEP_PROJECT_HINT)
    with torch.no_grad():
        projected = {"keys": model.w_k(x), "values": model.w_v(x)}  # (B, T, d_model)
    hint = STEP_CACHE_HINT
    for t, cache in enumerate(caches, start=1):
        case = f"decoding 5 tokens, the cache after step {t}"
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            fail(case, f"is a {type(cache).__name__}{f' of {len(cache)} items' if isinstance(cache, (tuple, list)) else ''}, "
                       f"expected a pair (k, v) of {[2, 3, t, 4]} tensors", hint=hint)
        for (what, expected), got in zip(projected.items(), cache):
            if not torch.is_tensor(got) or list(got.shape) != [2, 3, t, 4]:
                fail(case, f"holds {what} of shape {list(got.shape) if torch.is_tensor(got) else type(got).__name__}, "
                           f"expected {[2, 3, t, 4]}", hint=hint)
            per_token = got.transpose(1, 2).reshape(2, t, 12).sort(dim=-1).values  # (B, t, d_model)
            unprojected = x[:, :t].sort(dim=-1).values  # the tokens as they came
            check_tensor(per_token, expected[:, :t].sort(dim=-1).values, case=case, what=f"cached {what}",
                         hint=lambda got: MISTAKES["decode"]["cache_unprojected_tokens"]
                         if torch.allclose(got, unprojected) else hint)


# ============================================================================= outside pytest

def run_case(name, folder="."):
    """Run one case on the attention.py and mha.py in ``folder``, as an otter check does.

    The files are imported afresh, as they are on disk now, and whatever modules of those
    names were loaded before are put back afterwards: a notebook keeps its own imports.
    A failure raises CheckFailed with the message the pytest test gives.
    """
    case = {c.name: c for c in CASES + EXTRA_CASES}[name]
    folder = Path(folder).resolve()
    saved = {module: sys.modules.pop(module, None) for module in ("attention", "mha")}
    sys.path.insert(0, str(folder))  # first, so `from attention import ...` in mha.py finds theirs
    torch.manual_seed(0)  # the same random weights as under pytest
    try:
        note = case.run(lambda module: import_student(module, folder))
        if note:
            print(f"note: {note}")
    except CheckFailed:
        raise
    except Exception as exc:
        message = explain(exc, folder)
        if message is None:
            raise
        raise CheckFailed(message) from None
    finally:
        sys.path.remove(str(folder))
        for module, previous in saved.items():
            sys.modules.pop(module, None)
            if previous is not None:
                sys.modules[module] = previous


def score(part, folder="."):
    """Run the cases of one part, print how each went, and return the points earned.

    The nbgrader course's autograded cells end with this call: nbgrader reads the
    number as the cell's partial credit.
    """
    earned = 0
    print(f"{PARTS[part]}")
    for c in cases_of(part):
        try:
            run_case(c.name, folder)
        except CheckFailed as exc:
            print(f"  FAILED {c.name} (0/{c.points})\n" + "\n".join(f"    {line}" for line in str(exc).splitlines()))
        else:
            earned += c.points
            print(f"  passed {c.name} ({c.points}/{c.points})")
    return earned
