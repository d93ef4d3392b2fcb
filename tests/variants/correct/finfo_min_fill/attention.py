"""Blocked scores get the most negative finite value of the dtype instead of -inf."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    mask = torch.tril(torch.ones((seq_len, seq_len), device=device))
    return mask == 1


def padding_mask(tokens, pad_id):
    B, T = tokens.shape
    return tokens.ne(pad_id).view(B, 1, 1, T)


def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        blocked = mask == 0  # works for bool, int and float masks alike
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, value), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
