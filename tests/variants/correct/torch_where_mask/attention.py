"""Masking with torch.where instead of masked_fill."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().to(torch.bool)


def padding_mask(tokens, pad_id):
    keep = torch.where(tokens == pad_id, False, True)  # (B, T)
    return keep[:, None, None]


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(key.size(-1))
    if mask is not None:
        neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype)
        scores = torch.where(mask.to(torch.bool), scores, neg_inf)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, value), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
