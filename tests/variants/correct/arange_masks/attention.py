"""Masks built from index comparisons instead of tril."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    pos = torch.arange(seq_len, device=device)
    return pos[None, :] <= pos[:, None]  # key j <= query i


def padding_mask(tokens, pad_id):
    return torch.ne(tokens, pad_id)[:, None, None, :]


def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
