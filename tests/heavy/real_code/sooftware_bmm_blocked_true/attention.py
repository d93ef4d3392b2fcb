"""Attention in the style of a collection of attention modules: bmm for 3-D inputs, masked_fill_ where the mask
is True (that collection's masks mark the positions to hide), mask.view(score.size())."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()


def padding_mask(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(1)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        sqrt_dim = math.sqrt(query.size(-1))
        score = torch.bmm(query, key.transpose(1, 2)) / sqrt_dim
        if mask is not None:
            score.masked_fill_(mask.view(score.size()), -float("Inf"))
        attn = F.softmax(score, -1)
        context = torch.bmm(attn, value)
        return context, attn


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)
