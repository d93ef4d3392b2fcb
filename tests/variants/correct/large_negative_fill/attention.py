"""The classic -1e9 fill of the original Transformer code bases."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    upper = torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1)
    return upper == 0  # (T, T), True on and below the diagonal


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = query.matmul(key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = nn.functional.softmax(scores, dim=-1)
    output = weights.matmul(value)
    return output, weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
