"""Multi-head attention in the same course's style: the heads' values are reshaped back to (B, T, d_model)
without moving the head axis back first."""
import torch.nn as nn

from attention import scaled_dot_product


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model} and num_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by num_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        batch_size, sequence_length, _ = x.size()
        return x.reshape(batch_size, sequence_length, self.n_heads, self.d_k).permute(0, 2, 1, 3)

    def merge_heads(self, values):
        batch_size, _, sequence_length, _ = values.size()
        return values.reshape(batch_size, sequence_length, self.n_heads * self.d_k)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.split_heads(self.w_q(query)), self.split_heads(self.w_k(key)), self.split_heads(self.w_v(value))
        values, attention = scaled_dot_product(q, k, v, mask)
        return self.w_o(self.merge_heads(values)), attention
