"""Attention with einsum: the index letters say which dims are contracted."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()  # (T, T)


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, T)


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.bool().logical_not(), float("-inf"))
    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)
    return torch.einsum("...qk,...kd->...qd", weights, value), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask=mask)
