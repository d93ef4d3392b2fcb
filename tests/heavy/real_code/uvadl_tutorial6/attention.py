"""Attention in the style of the UvA deep-learning course's Transformer tutorial: -9e15 fill, expand_mask helper."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


def expand_mask(mask):
    """Any 2-D to 4-D mask becomes 4-D: (T_q, T_k) -> (1, 1, T_q, T_k)."""
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), device=device)) == 1


def padding_mask(tokens, pad_id):
    return expand_mask((tokens != pad_id).unsqueeze(1))


def scaled_dot_product_attention(query, key, value, mask=None):
    return scaled_dot_product(query, key, value, mask)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product(query, key, value, mask=mask)
