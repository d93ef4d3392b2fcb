"""Attention in the style of a video-course Transformer: the mask is ADDED to the scores (its masks hold 0 and
-inf), through a permute that assumes 4-D (batch, head, T, d) inputs."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.full([seq_len, seq_len], True, device=device).tril()


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    scaled = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        scaled = scaled.permute(1, 0, 2, 3) + mask
        scaled = scaled.permute(1, 0, 2, 3)
    attention = F.softmax(scaled, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


def scaled_dot_product_attention(query, key, value, mask=None):
    return scaled_dot_product(query, key, value, mask)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product(query, key, value, mask)
