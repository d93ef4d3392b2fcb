"""A two-file port in the style of The Annotated Transformer: a free `attention` helper that mha.py imports."""
import math

import torch
import torch.nn as nn


def attention(query, key, value, mask=None):
    """Compute 'Scaled Dot Product Attention' and return the output with the probabilities."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


def causal_mask(seq_len, device=None):
    return torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1) == 0


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-2).unsqueeze(1)


def scaled_dot_product_attention(query, key, value, mask=None):
    return attention(query, key, value, mask)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return attention(query, key, value, mask)
