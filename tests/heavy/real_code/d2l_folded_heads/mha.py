"""Multi-head attention in d2l's style: heads folded into the batch with helpers imported from attention.py."""
import math

import torch
import torch.nn as nn

from attention import masked_softmax, transpose_output, transpose_qkv


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"num_hiddens={d_model} and num_heads={n_heads} must be positive")
        if d_model % n_heads:
            raise DimensionMismatchError(f"num_hiddens={d_model} is not a multiple of num_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        folded = transpose_qkv(x, self.n_heads)  # (B * h, T, d_k)
        return folded.reshape(x.shape[0], self.n_heads, x.shape[1], -1)

    def merge_heads(self, x):
        return transpose_output(x.reshape(-1, x.shape[2], x.shape[3]), self.n_heads)

    def forward(self, queries, keys, values, mask=None):
        B, h = queries.shape[0], self.n_heads
        queries = transpose_qkv(self.w_q(queries), h)
        keys = transpose_qkv(self.w_k(keys), h)
        values = transpose_qkv(self.w_v(values), h)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])  # (B * h, T_q, T_k)
        if mask is not None:  # the contract's mask broadcasts over (B, h, T_q, T_k), so unfold to apply it
            mask = mask.bool().expand(B, h, *scores.shape[1:]).reshape(scores.shape)
        weights = masked_softmax(scores, mask)
        output = transpose_output(torch.bmm(weights, values), h)
        return self.w_o(output), weights.reshape(B, h, *weights.shape[1:])
