"""The module holds the logic; the function is a thin wrapper around it."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril_()


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-2).unsqueeze(-2)  # (B, 1, 1, T)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        scores = query @ key.transpose(-2, -1)
        scores = scores / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ value, weights


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)
