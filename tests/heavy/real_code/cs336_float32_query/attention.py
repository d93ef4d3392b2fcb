"""Attention in the style of a course-assignment solution: einsum over "..." dims, a hand-written stable softmax,
the query cast to float32 "for stability" and the result cast back, and ~mask (bool masks only)."""
import math

import torch
import torch.nn as nn


def softmax(x, dim=-1):
    x = x - torch.max(x, dim=dim, keepdim=True).values
    e = torch.exp(x)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(seq_len, device=None):
    return ~torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[..., None, None, :]


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        d_k = Q.shape[-1]
        in_type = Q.dtype
        Q = Q.to(torch.float32)
        q_k = torch.einsum("...qd,...kd->...qk", Q, K)
        scores = q_k / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = softmax(scores, dim=-1)
        out = torch.einsum("...qk,...kd->...qd", weights, V)
        return out.to(in_type), weights.to(in_type)


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)
