"""Multi-head attention with einops, as much published code writes the heads:
`rearrange(x, "b t (h d) -> b h t d")` to split and its inverse to merge."""
import torch.nn as nn
from einops import rearrange

from attention import scaled_dot_product_attention


class DimensionMismatchError(ValueError):
    pass


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got {d_model} and {n_heads}")
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        return rearrange(x, "b t (h d) -> b h t d", h=self.n_heads)

    def merge_heads(self, x):
        return rearrange(x, "b h t d -> b t (h d)")

    def forward(self, query, key, value, mask=None):
        q, k, v = (self.split_heads(w(x)) for w, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge_heads(heads)), weights
