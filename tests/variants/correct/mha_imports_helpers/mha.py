"""Multi-head attention that imports helpers (not only the contract names) from its own attention.py."""
import torch.nn as nn

from attention import attend, join_heads, split_last


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model} and n_heads={n_heads} must be positive")
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        return split_last(x, self.n_heads)  # (B, h, T, d_k)

    def merge_heads(self, x):
        return join_heads(x)  # (B, T, d_model)

    def forward(self, query, key, value, mask=None):
        q, k, v = (self.split_heads(w(x)) for w, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        heads, weights = attend(q, k, v, mask)  # (B, h, T_q, d_k)
        return self.w_o(self.merge_heads(heads)), weights
