"""Seeded inputs for the hidden suite: every case is built the same way on every run."""
from dataclasses import dataclass

import torch

from autograder.containment.probes import weighted_sum
from autograder.grading.seeded import randn  # the public checks hold a generated copy


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


@dataclass(frozen=True)
class AttentionCase:
    """One call of scaled_dot_product_attention: shapes, mask kind and dtype."""

    batch: tuple  # leading dims, e.g. () for 2-D inputs or (2, 3) for 4-D
    t_q: int
    t_k: int
    d_k: int
    d_v: int
    mask: str = "none"  # none | causal | padding | random | mixed (see make_mask)
    mask_dtype: torch.dtype = torch.bool
    dtype: torch.dtype = torch.float32
    scale: float = 1.0  # multiplies q and k: large values test a stable softmax
    seed: int = 0

    def inputs(self):
        q = randn(*self.batch, self.t_q, self.d_k, seed=self.seed, dtype=self.dtype, scale=self.scale)
        k = randn(*self.batch, self.t_k, self.d_k, seed=self.seed + 1, dtype=self.dtype, scale=self.scale)
        v = randn(*self.batch, self.t_k, self.d_v, seed=self.seed + 2, dtype=self.dtype)
        return q, k, v, self.make_mask()

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
        else:
            allowed = random_mask((*self.batch, self.t_q, self.t_k), self.seed + 3)
        return allowed.to(self.mask_dtype)

    def describe(self):
        shape = lambda *tail: "(" + ", ".join(str(n) for n in (*self.batch, *tail)) + ")"  # noqa: E731
        text = (f"scaled_dot_product_attention with query {shape(self.t_q, self.d_k)}, key {shape(self.t_k, self.d_k)}, "
                f"value {shape(self.t_k, self.d_v)}, {str(self.dtype).replace('torch.', '')}")
        if self.mask != "none":
            mask = self.make_mask()
            text += f", {self.mask} mask {tuple(mask.shape)} {str(mask.dtype).replace('torch.', '')}"
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
