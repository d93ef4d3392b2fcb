"""Multi-head attention with reshape/permute for the head split and merge."""
import torch.nn as nn

from attention import scaled_dot_product_attention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model < 1 or n_heads < 1:
            raise ValueError(f"need positive sizes, got d_model={d_model} and n_heads={n_heads}")
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.n_heads, self.d_k).permute(0, 2, 1, 3)  # (B, h, T, d_k)

    def merge_heads(self, x):
        B, _, T, _ = x.shape
        return x.permute(0, 2, 1, 3).reshape(B, T, self.d_model)  # (B, T, d_model)

    def forward(self, query, key, value, mask=None):
        q, k, v = (self.split_heads(w(x)) for w, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        heads, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        return self.w_o(self.merge_heads(heads)), weights
