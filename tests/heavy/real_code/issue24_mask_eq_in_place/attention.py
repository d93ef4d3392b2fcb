"""Attention that turns any mask into a bool "blocked" mask before filling: numeric masks are converted
first (a new tensor), and then the mask is inverted with eq_(0), in place."""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)


def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            mask = mask != 0
        mask.eq_(0)  # True now marks the blocked keys
        scores = scores.masked_fill(mask, -1e9)
    p_attn = torch.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
