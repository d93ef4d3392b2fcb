"""A hand-written softmax, made stable by subtracting the row max first."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def softmax(scores):
    """softmax over the last dim; exp(x - max) never overflows."""
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    exps = shifted.exp()  # exp(-inf) = 0 for blocked keys
    return exps / exps.sum(dim=-1, keepdim=True)


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = softmax(scores)
    return weights @ value, weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
