"""Attention in minGPT's manual style: multiply by 1/sqrt(k.size(-1)), fill with -inf where the mask is 0."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device)).view(seq_len, seq_len).bool()


def padding_mask(tokens, pad_id):
    return tokens.ne(pad_id).view(tokens.size(0), 1, 1, tokens.size(1))


def scaled_dot_product_attention(query, key, value, mask=None):
    att = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(key.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    y = att @ value
    return y, att


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
