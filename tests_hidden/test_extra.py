"""Extra credit (points above the maximum): tiled attention and KV-cache decoding."""
import pytest
import torch

from attention_checks import sdpa_expected, with_hint, with_parts_below
from autograder.lab import (STEP_CACHE_HINT, STEP_PROJECT_HINT, TILED_MATRIX_BUILT, TILED_MEMORY_HINT, TILED_ROW_0,
                            TILED_GRADIENT_ONLY_WRONG, TILED_ROW_0_HINT, TILED_SHAPE_HINT, Failure, StudentError, decode_steps, diagnosed,
                            expect_close, fail, forward_already_wrong, no_gradient, rows_not_attention, sampled_rows,
                            step_projections, tiled_blocks, tiled_rows)
from cases import AttentionCase, MHACase, randn, reference_grads

pytestmark = pytest.mark.part("extra")

TILED = "attention.tiled_attention"
MHA = "mha.MultiHeadAttention"
TILED_HINT = ("rescale the running sum and output by exp(old_max - new_max) whenever the max grows; in a causal "
              "block, key j = start + offset is allowed for query i when j <= i")
MEMORY_T, MEMORY_D = 4096, 16


def check_tiled(student, reference, case, block_size, block_sizes=()):
    """The tiled output at ``block_size`` against attention's; when it is wrong, a measured property of its rows,
    else of the outputs at the other ``block_sizes`` (called only then) as the hint."""
    (q, k, v, mask), (expected, _) = sdpa_expected(reference, case)
    causal = case.mask == "causal"
    got = student.call(TILED, q, k, v, kwargs={"causal": causal, "block_size": block_size}).result
    label = f"tiled_attention({case.describe().split(' with ', 1)[1]}, block_size={block_size})"
    try:
        with diagnosed("tiled", got, q, k, v, causal, block_size):
            expect_close(got, expected, label, "output", TILED_HINT)
    except StudentError as error:
        finding = None if error.mistake is not None else (
            tiled_rows(got, expected, v, causal, block_size)
            or tiled_blocks(_outputs(student, (q, k, v), causal, block_sizes, {block_size: got}), expected, k.size(-2)))
        if finding:
            raise with_hint(error, finding) from None
        raise


def _outputs(student, qkv, causal, block_sizes, known):
    """{block_size: tiled_attention's output}: ``known``, and a call for each other size (its failures left out)."""
    outputs = dict(known)
    for size in block_sizes:
        if size not in outputs:
            reply = student.try_call(TILED, *qkv, kwargs={"causal": causal, "block_size": size})
            if not isinstance(reply, Failure):
                outputs[size] = reply.result
    return outputs


@pytest.mark.points(2)
@pytest.mark.public
def test_tiled_attention_matches_attention(student, reference):
    """Extra: tiled_attention equals attention for block sizes 1, 5 (not a divisor), 64 and 100 (> T)"""
    for causal in (False, True):
        case = AttentionCase((2, 3), 17, 17, 8, 5, mask="causal" if causal else "none", seed=70 + causal)
        sizes = (1, 5, 64, 100)
        for block_size in sizes:
            check_tiled(student, reference, case, block_size, sizes)


@pytest.mark.points(1)
def test_tiled_attention_float64_and_more_keys_than_queries(student, reference):
    """Extra: tiled_attention keeps float64, and handles T_q != T_k"""
    check_tiled(student, reference, AttentionCase((2,), 9, 13, 8, 8, dtype=torch.float64, seed=72), 4, (4, 64))
    check_tiled(student, reference, AttentionCase((2,), 11, 11, 4, 4, mask="causal", dtype=torch.float64, seed=73), 3,
                (3, 64))


@pytest.mark.points(1)
def test_tiled_attention_gradients(student, reference):
    """Extra: gradients flow through tiled_attention to query, key and value"""
    case = AttentionCase((2,), 6, 6, 4, 4, mask="causal", dtype=torch.float64, seed=74)
    q, k, v, mask = case.inputs()
    grad_out = randn(2, 6, 4, seed=75, dtype=torch.float64)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, _ = reference[0].scaled_dot_product_attention(*leaves, mask)
    expected = reference_grads([out], leaves, [grad_out])
    reply = student.call(TILED, q, k, v, kwargs={"causal": True, "block_size": 4},
                         grad={"inputs": [0, 1, 2], "grad_outputs": [grad_out]})
    grads = reply.grads or {}
    got = grads["inputs"] if grads.get("connected") else [None] * 3
    if any(g is None for g in got):
        fail("tiled_attention(causal=True, block_size=4)", "not every input gets a gradient",
             no_gradient(zip(("query", "key", "value"), got)))
    for name, got, want in zip(("query", "key", "value"), grads["inputs"], expected):
        try:
            # float32-accurate gradients pass: precision is charged once, in the float64 test above
            expect_close(got, want, "tiled_attention(causal=True, block_size=4)", f"gradient w.r.t. {name}", grad=True,
                         float32_ok=True)
        except StudentError as error:
            finding = forward_already_wrong("output", reply.result, out) or TILED_GRADIENT_ONLY_WRONG.format(name)
            raise with_hint(error, finding) from None


@pytest.mark.points(2)
def test_tiled_attention_never_builds_the_score_matrix(student, reference):
    """Extra: tiled_attention's peak memory stays far below the (T, T) score matrix (T = 4096)"""
    q, k, v = (randn(MEMORY_T, MEMORY_D, seed=76 + i, dtype=torch.float32) for i in range(3))
    label = f"tiled_attention(query/key/value ({MEMORY_T}, {MEMORY_D}) float32, causal=True)"
    reply = student.call(TILED, q, k, v, kwargs={"causal": True}, measure_memory=True)
    # The memory points need the work: an output of the right shape that is attention (below). Saying what is
    # wrong with the values is the other tiled tests' job.
    if not isinstance(reply.result, torch.Tensor) or tuple(reply.result.shape) != (MEMORY_T, MEMORY_D):
        shape = tuple(reply.result.shape) if isinstance(reply.result, torch.Tensor) else type(reply.result).__name__
        fail(label, f"returned {shape}, expected an output of shape {(MEMORY_T, MEMORY_D)}",
             TILED_SHAPE_HINT)
    # ...and one that attention alone explains: under the causal mask query 0 sees only key 0, so its
    # row is value[0] whatever the tiling (a missing rescale included); a made-up output is not.
    first = reply.result[0].double()
    if not bool(torch.isfinite(reply.result).all()) or not torch.allclose(first, v[0].double(), atol=1e-4):
        fail(label, TILED_ROW_0, tiled_rows(reply.result[:1], v[:1], v, True, None) or TILED_ROW_0_HINT)
    # ...and attention at rows across the sequence: an output that is not attention saved no memory doing the work.
    rows = sampled_rows(MEMORY_T)
    allowed = torch.arange(MEMORY_T)[None, :] <= torch.tensor(rows)[:, None]  # (rows, T): causal, those queries
    expected, _ = reference[0].scaled_dot_product_attention(q[rows].double(), k.double(), v.double(), allowed)
    wrong = rows_not_attention(reply.result, expected, rows)
    if wrong:
        fail(label, wrong)  # the measured rows are the finding; the value tests say what is wrong
    matrix = MEMORY_T * MEMORY_T * 4  # one float32 (T, T) matrix
    peak = reply.peak_bytes
    if peak is None:
        fail(label, "the sandbox could not measure memory here", None)
    if not isinstance(peak, int) or peak < 0:  # a claim from the child: a peak below the start is forged
        fail(label, f"the memory figure ({peak!r}) is impossible: it was tampered with", None)
    if peak > matrix / 2:
        fail(label, f"the call's peak memory grew by {peak / 2**20:.0f} MiB; " + TILED_MATRIX_BUILT.format(matrix / 2**20),
             TILED_MEMORY_HINT)


def _decode(student, reference, case, where):
    module, state = case.state(reference[1])
    x = randn(case.batch, case.t_q, case.d_model, seed=case.seed, dtype=case.dtype)
    expected, _ = module(x, x, x, reference[0].causal_mask(case.t_q))
    reply = student.call(MHA, init={"args": [case.d_model, case.n_heads]}, state=state, decode=x, **where)
    return reply, expected.detach(), state, x


@pytest.mark.points(2)
@pytest.mark.public
def test_step_reproduces_the_causal_forward(student, reference, request):
    """Extra: feeding tokens one at a time through step reproduces forward with a causal mask"""
    case = MHACase(t_q=7, t_k=7, seed=80)

    def compare(where):
        reply, expected, state, x = _decode(student, reference, case, where)
        outputs = reply.result
        for t, got in enumerate(outputs):
            label = f"step {t + 1} of {case.t_q}, {case.describe()}"
            try:
                with diagnosed("decode", outputs, state, case.n_heads, x):
                    expect_close(got, expected[:, t:t + 1], label, "output",
                                 "the new token attends every cached key and itself; concatenate the cache on dim 2")
            except StudentError as error:
                finding = None if error.mistake is not None else decode_steps(outputs, expected)
                if finding:
                    raise with_hint(error, finding) from None
                raise

    with_parts_below(compare, request, student, reference, case.state(reference[1])[0], runs="step")


@pytest.mark.points(2)
def test_step_projects_only_the_new_token_and_grows_the_cache(student, reference, request):
    """Extra: step projects only the new token, and the cache holds (B, n_heads, t, d_k) keys and values"""
    case = MHACase(t_q=5, t_k=5, seed=81)
    with_parts_below(lambda where: _check_cache(student, reference, case, where), request, student, reference,
                     case.state(reference[1])[0], runs="step")


def _check_cache(student, reference, case, where):
    reply, _, _, _ = _decode(student, reference, case, where)
    B, h, d_k = case.batch, case.n_heads, case.d_model // case.n_heads
    for layer in ("w_k", "w_v"):
        seen = reply.projected.get(layer, [])
        wrong = [(t + 1, shape) for t, shape in enumerate(seen) if shape[-2:] != [1, case.d_model]]
        if len(seen) != case.t_q or wrong:
            fail(f"decoding {case.t_q} tokens", f"{layer} saw inputs of shapes {seen}",
                 step_projections(layer, seen, case.t_q, case.d_model) or STEP_PROJECT_HINT)
    # The cache is judged by its values, against keys and values projected here with the weights
    # the student's module was loaded with: the child's word about shapes is not evidence. Each
    # token's cached features are compared as a set, so the head layout (split_heads, graded in
    # its own part) does not count twice.
    module, _ = case.state(reference[1])
    x = randn(case.batch, case.t_q, case.d_model, seed=case.seed, dtype=case.dtype)
    with torch.no_grad():
        projected = {"keys": module.w_k(x), "values": module.w_v(x)}  # (B, T, d_model)
    hint = STEP_CACHE_HINT
    if len(reply.caches) != case.t_q:
        fail(f"decoding {case.t_q} tokens", f"{len(reply.caches)} caches came back", hint)
    for t, cache in enumerate(reply.caches, start=1):
        label = f"decoding {case.t_q} tokens, the cache after step {t}"
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            fail(label, f"is {cache!r}, expected a pair (k, v) of {[B, h, t, d_k]} tensors", hint)
        for (what, expected), got in zip(projected.items(), cache):
            if not isinstance(got, torch.Tensor) or list(got.shape) != [B, h, t, d_k]:
                shape = list(got.shape) if isinstance(got, torch.Tensor) else repr(got)
                fail(label, f"holds {what} of shape {shape}, expected {[B, h, t, d_k]}", hint)
            per_token = got.transpose(1, 2).reshape(B, t, h * d_k).sort(dim=-1).values  # (B, t, d_model)
            expect_close(per_token, expected[:, :t].sort(dim=-1).values, label, f"cached {what}", hint)
