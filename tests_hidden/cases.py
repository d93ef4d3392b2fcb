"""Seeded inputs for the hidden suite: every case is built the same way on every run."""
from dataclasses import dataclass, replace

import torch

from autograder.lab import randn, weighted_sum


def reference_grads(outputs, leaves, grad_outputs):
    """The vector-Jacobian product, as torch.autograd.grad(outputs, leaves, grad_outputs) gives it,
    computed the way the sandbox does (no slow first-use import of sympy in every grader)."""
    return torch.autograd.grad(weighted_sum(list(zip(outputs, grad_outputs))), leaves, allow_unused=True)


def tokens_with_padding(lengths, total, pad_id, seed):
    """(B, T) token ids where row b has lengths[b] real tokens, then padding."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 50, (len(lengths), total), generator=generator)
    tokens[tokens == pad_id] = pad_id + 1  # real tokens never collide with the pad id
    for row, length in enumerate(lengths):
        tokens[row, length:] = pad_id
    return tokens


def random_mask(shape, seed, dtype=torch.bool):
    """A mask with random holes, but every query keeps at least one key (all-blocked rows are undefined)."""
    generator = torch.Generator().manual_seed(seed)
    allowed = torch.rand(shape, generator=generator) > 0.4
    allowed[..., 0] = True
    return allowed.to(dtype)


# The values a "nonbinary" mask gives its allowed positions: all nonzero, so all may attend.
NONBINARY_VALUES = {torch.int64: [1, 2, -3], torch.int32: [1, 2, -3], torch.float32: [1.0, 2.5, -1.0, 0.5],
                    torch.float64: [1.0, 2.5, -1.0, 0.5]}


@dataclass(frozen=True)
class AttentionCase:
    """One call of scaled_dot_product_attention: shapes, mask kind and dtype."""

    batch: tuple  # leading dims, e.g. () for 2-D inputs or (2, 3) for 4-D
    t_q: int
    t_k: int
    d_k: int
    d_v: int
    mask: str = "none"  # none | causal | padding | random | mixed | nonbinary (see make_mask)
    mask_dtype: torch.dtype = torch.bool
    dtype: torch.dtype = torch.float32
    scale: float = 1.0  # multiplies q and k: large values test a stable softmax
    seed: int = 0
    rank: int = 0  # 0: inputs of len(batch) + 2 dims; 3 or 4: the same inputs in that many dims (at_rank)

    def at_rank(self, rank):
        """The same case with 3-D or 4-D inputs (the same numbers): a 2-D or 3-D case gains leading dims of
        size 1, a 4-D case folds its batch and heads into one batch dim. See ``rank``."""
        return replace(self, rank=rank)

    def native_rank(self):
        return len(self.batch) + 2

    def inputs(self):
        q = randn(*self.batch, self.t_q, self.d_k, seed=self.seed, dtype=self.dtype, scale=self.scale)
        k = randn(*self.batch, self.t_k, self.d_k, seed=self.seed + 1, dtype=self.dtype, scale=self.scale)
        v = randn(*self.batch, self.t_k, self.d_v, seed=self.seed + 2, dtype=self.dtype)
        mask = self.make_mask()
        if not self.rank or self.rank == self.native_rank():
            return q, k, v, mask
        return (*(self._reshaped(x) for x in (q, k, v)), self._reshaped_mask(mask))

    def _reshaped(self, x):
        """A query, key or value at ``self.rank`` dims: (..., T, d) -> (B', T, d) or (B', h', T, d)."""
        if self.native_rank() == 4:  # rank 3: batch and heads folded
            return x.flatten(0, 1)
        return x.reshape(*([1] * (self.rank - self.native_rank())), *x.shape) if not self.batch else x.unsqueeze(1)

    def _reshaped_mask(self, mask):
        if mask is None or mask.dim() <= 2:  # a (T_q, T_k) mask broadcasts at any rank
            return mask
        if self.native_rank() == 4:  # every (batch, head) pair keeps its own rows once the two are folded
            return mask.expand(*self.batch, self.t_q, self.t_k).reshape(-1, self.t_q, self.t_k)
        return mask.unsqueeze(-3)  # (B, T_q, T_k) -> (B, 1, T_q, T_k)

    def make_mask(self):
        if self.mask == "none":
            return None
        if self.mask == "causal":
            allowed = torch.ones(self.t_q, self.t_k, dtype=torch.bool).tril()  # (T, T)
        elif self.mask == "padding":
            b = self.batch[0]
            lengths = [self.t_k - (i % self.t_k) for i in range(b)]  # every row keeps >= 1 real key
            allowed = (tokens_with_padding(lengths, self.t_k, 0, self.seed) != 0)[:, None, None, :]
            allowed = allowed.reshape(b, *([1] * (len(self.batch) - 1)), 1, self.t_k)
        elif self.mask == "mixed":  # (T, T), T >= 4: every row and column allows two keys and blocks two, as
            # does the inverse, so a mask read the wrong way round still gives weights that move with the inputs
            offset = (torch.arange(self.t_k)[None, :] - torch.arange(self.t_q)[:, None]) % self.t_k
            allowed = (offset == 0) | (offset == 2)  # the public gradient case's mask (every_row_and_column_mixed)
        elif self.mask == "nonbinary":  # a numeric mask whose nonzero values are not all 1: nonzero = may attend
            allowed = random_mask((*self.batch, self.t_q, self.t_k), self.seed + 3)
            generator = torch.Generator().manual_seed(self.seed + 4)
            values = torch.tensor(NONBINARY_VALUES[self.mask_dtype])
            picked = values[torch.randint(len(values), allowed.shape, generator=generator)]
            return torch.where(allowed, picked, torch.zeros((), dtype=picked.dtype)).to(self.mask_dtype)
        else:
            allowed = random_mask((*self.batch, self.t_q, self.t_k), self.seed + 3)
        return allowed.to(self.mask_dtype)

    def describe(self):
        q, k, v, mask = self.inputs()
        text = (f"scaled_dot_product_attention with query {tuple(q.shape)}, key {tuple(k.shape)}, "
                f"value {tuple(v.shape)}, {str(self.dtype).replace('torch.', '')}")
        if self.mask != "none":
            text += f", {self.mask} mask {tuple(mask.shape)} {str(mask.dtype).replace('torch.', '')}"
            if self.mask == "nonbinary":
                text += f" (values {', '.join(f'{x:g}' for x in [0, *NONBINARY_VALUES[self.mask_dtype]])})"
        if self.scale != 1.0:
            text += f", inputs scaled by {self.scale:g}"
        return text


@dataclass(frozen=True)
class MHACase:
    """One MultiHeadAttention forward: sizes, cross-attention, mask, bias and dtype."""

    d_model: int = 16
    n_heads: int = 4
    batch: int = 2
    t_q: int = 5
    t_k: int = 5
    cross: bool = False  # key and value differ from the query
    mask: str = "none"  # none | causal | padding
    bias: bool = True
    dtype: torch.dtype = torch.float32
    seed: int = 100

    def inputs(self):
        x = randn(self.batch, self.t_q, self.d_model, seed=self.seed, dtype=self.dtype)
        if not self.cross:
            return x, x, x, self.make_mask()
        key = randn(self.batch, self.t_k, self.d_model, seed=self.seed + 1, dtype=self.dtype)
        value = randn(self.batch, self.t_k, self.d_model, seed=self.seed + 2, dtype=self.dtype)
        return x, key, value, self.make_mask()

    def make_mask(self):
        if self.mask == "causal":
            return torch.ones(self.t_q, self.t_k, dtype=torch.bool).tril()
        if self.mask == "padding":
            lengths = [max(1, self.t_k - 2 * i) for i in range(self.batch)]
            return tokens_with_padding(lengths, self.t_k, 0, self.seed).ne(0)[:, None, None, :]
        return None

    def state(self, reference_mha):
        """Seeded parameters, from the reference module, that the student's module is loaded with."""
        # The CPU generator alone: the same parameters as torch.manual_seed, without its lazy CUDA, XPU and MTIA
        # seeds, each of which formats the whole stack (under pytest, about 1 ms a call).
        torch.default_generator.manual_seed(self.seed)
        module = reference_mha.MultiHeadAttention(self.d_model, self.n_heads, bias=self.bias).to(self.dtype)
        return module, {name: p.detach().clone() for name, p in module.named_parameters()}

    def describe(self):
        kind = "cross-attention" if self.cross else "self-attention"
        text = (f"MultiHeadAttention(d_model={self.d_model}, n_heads={self.n_heads}, bias={self.bias}), {kind}, "
                f"query ({self.batch}, {self.t_q}, {self.d_model})")
        if self.cross:
            text += f", key/value ({self.batch}, {self.t_k}, {self.d_model})"
        if self.mask != "none":
            text += f", {self.mask} mask {tuple(self.make_mask().shape)}"
        return text + f", {str(self.dtype).replace('torch.', '')}"
