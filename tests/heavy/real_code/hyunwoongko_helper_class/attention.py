"""Attention in the style of a popular from-scratch Transformer, where the attention is a helper class of its own
name (ScaleDotProductAttention) that mha.py imports; its softmax is an nn.Softmax() with the implicit dim."""
import math

import torch
from torch import nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)


class ScaleDotProductAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax()

    def forward(self, q, k, v, mask=None, e=-10000):
        d_tensor = k.size(-1)
        k_t = k.transpose(-2, -1)
        score = (q @ k_t) / math.sqrt(d_tensor)
        if mask is not None:
            score = score.masked_fill(mask == 0, e)
        score = self.softmax(score)
        v = score @ v
        return v, score


class ScaledDotProductAttention(ScaleDotProductAttention):
    """The contract's name for the same module."""


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaleDotProductAttention()(query, key, value, mask)
