"""Multi-head attention whose four projections are made in a loop with `setattr(self, f"w_{name}", ...)`,
a common way to avoid four near-identical lines, and used by their plain names."""
import torch.nn as nn

from attention import scaled_dot_product_attention


class DimensionMismatchError(ValueError):
    pass


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got {d_model} and {n_heads}")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        for name in ("q", "k", "v", "o"):
            setattr(self, f"w_{name}", nn.Linear(d_model, d_model, bias=bias))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        B, h, T, d = x.shape
        return x.transpose(1, 2).reshape(B, T, h * d)

    def forward(self, query, key, value, mask=None):
        q, k, v = (self.split_heads(project(x))
                   for project, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge_heads(heads)), weights
