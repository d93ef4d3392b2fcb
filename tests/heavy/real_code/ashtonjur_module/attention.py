"""Attention in the style of a machine-translation project: the logic lives in the module's forward, matmul and
-1e9 for blocked scores; the function delegates to the module."""
import math

import torch
import torch.nn as nn


class ScaledDotProductAttention(nn.Module):
    def __init__(self):
        super(ScaledDotProductAttention, self).__init__()

    def forward(self, query, key, value, mask=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attn_weights = torch.softmax(scores, dim=-1)
        output = torch.matmul(attn_weights, value)
        return output, attn_weights


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril() == 1


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)
