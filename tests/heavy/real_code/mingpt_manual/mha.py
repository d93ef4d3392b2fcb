"""Multi-head attention with minGPT's head layout: view(B, T, nh, hs).transpose(1, 2)."""
import torch.nn as nn

from attention import scaled_dot_product_attention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model < 1 or n_heads < 1:
            raise ValueError(f"need d_model >= 1 and n_heads >= 1, got {d_model} and {n_heads}")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"n_embd={d_model} must be divisible by n_head={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        B, T, C = x.size()
        return x.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)

    def merge_heads(self, y):
        B, nh, T, hs = y.size()
        return y.transpose(1, 2).contiguous().view(B, T, nh * hs)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.split_heads(self.w_q(query)), self.split_heads(self.w_k(key)), self.split_heads(self.w_v(value))
        y, att = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge_heads(y)), att
