"""Multi-head attention that imports a class and a module object from its own attention.py."""
import torch.nn as nn

import attention
from attention import HEAD_AXIS, HeadShape


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if min(d_model, n_heads) < 1:
            raise ValueError(f"sizes must be positive: d_model={d_model}, n_heads={n_heads}")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"cannot split d_model={d_model} into n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.heads = HeadShape(n_heads)
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def split_heads(self, x):
        return self.heads.split(x)

    def merge_heads(self, x):
        return self.heads.merge(x)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.w_q(query))  # (B, h, T_q, d_k)
        k = self.split_heads(self.w_k(key))
        v = self.split_heads(self.w_v(value))
        # the attribute is read at call time, through the module: the import-time names are not enough
        heads, weights = attention.scaled_dot_product_attention(q, k, v, mask)
        assert weights.size(HEAD_AXIS) == self.n_heads
        return self.w_o(self.merge_heads(heads)), weights
