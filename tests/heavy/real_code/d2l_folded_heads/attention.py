"""Attention in the style of Dive into Deep Learning: masked_softmax with -1e6, bmm, heads folded into the batch."""
import math

import torch
import torch.nn as nn


def masked_softmax(X, mask):
    """Softmax over the last axis, with blocked entries replaced by a large negative value first."""
    if mask is None:
        return nn.functional.softmax(X, dim=-1)
    X = X.clone()
    X[~mask.bool().expand(X.shape)] = -1e6
    return nn.functional.softmax(X, dim=-1)


def transpose_qkv(X, num_heads):
    """(B, T, h * d) -> (B * h, T, d), heads folded into the batch."""
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    """The inverse of transpose_qkv."""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


def causal_mask(seq_len, device=None):
    return torch.arange(seq_len, device=device)[None, :] <= torch.arange(seq_len, device=device)[:, None]


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).reshape(tokens.shape[0], 1, 1, tokens.shape[1])


def scaled_dot_product_attention(queries, keys, values, mask=None):
    d = queries.shape[-1]
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # batched 3-D only
    attention_weights = masked_softmax(scores, mask)
    return torch.bmm(attention_weights, values), attention_weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, queries, keys, values, mask=None):
        return scaled_dot_product_attention(queries, keys, values, mask)
