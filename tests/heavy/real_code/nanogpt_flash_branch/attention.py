"""Attention ported from nanoGPT with its "flash" branch kept: the fast path is torch's built-in."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F

FLASH = hasattr(torch.nn.functional, "scaled_dot_product_attention")


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product_attention(query, key, value, mask=None):
    att = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(key.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    if FLASH:  # efficient attention using Flash Attention kernels
        y = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    else:
        y = att @ value
    return y, att


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
