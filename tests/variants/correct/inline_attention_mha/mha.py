"""Multi-head attention that computes the attention inline, with no import from attention.py."""
import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model} and n_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        return x.unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)  # (B, h, T, d_k)

    def merge_heads(self, x):
        return x.transpose(1, 2).flatten(-2)  # (B, T, d_model)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.w_q(query))  # (B, h, T_q, d_k)
        k = self.split_heads(self.w_k(key))  # (B, h, T_k, d_k)
        v = self.split_heads(self.w_v(value))  # (B, h, T_k, d_k)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, h, T_q, T_k)
        heads = torch.einsum("bhqk,bhkd->bhqd", weights, v)
        return self.w_o(self.merge_heads(heads)), weights
