"""Scaled dot-product attention in the style of FastSpeech2's `ScaledDotProductAttention`: the
temperature is `np.power(d_k, 0.5)`, the mask filled with -inf, softmax over the keys."""
import numpy as np
import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product_attention(query, key, value, mask=None):
    temperature = np.power(query.size(-1), 0.5)
    attn = torch.matmul(query, key.transpose(-2, -1)) / temperature
    if mask is not None:
        attn = attn.masked_fill(mask == 0, -np.inf)
    attn = torch.softmax(attn, dim=-1)
    output = torch.matmul(attn, value)
    return output, attn


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
