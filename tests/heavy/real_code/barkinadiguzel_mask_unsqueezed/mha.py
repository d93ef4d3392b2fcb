"""Multi-head attention in the style of a ViT paper replication: a module attention, and mask.unsqueeze(1) kept."""
import torch.nn as nn

from attention import ScaledDotProductAttention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model}, n_heads={n_heads} must be positive")
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} % n_heads={n_heads} != 0")
        self.d_k = d_model // n_heads
        self.n_heads = n_heads
        self.d_model = d_model
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.attention = ScaledDotProductAttention()

    def split_heads(self, x):
        return x.view(x.size(0), -1, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        return x.transpose(1, 2).contiguous().view(x.size(0), -1, self.d_model)

    def forward(self, query, key, value, mask=None):
        Q = self.split_heads(self.w_q(query))
        K = self.split_heads(self.w_k(key))
        V = self.split_heads(self.w_v(value))
        if mask is not None:
            mask = mask.unsqueeze(1)  # for a (B, T, T) mask; the contract's masks already broadcast
        output, attn = self.attention(Q, K, V, mask)
        return self.w_o(self.merge_heads(output)), attn
