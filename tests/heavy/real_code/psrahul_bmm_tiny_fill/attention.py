"""Attention in the style of a learner's Transformer utilities: bmm and transpose(1, 2) for 3-D inputs, blocked
logits overwritten in place with 1e-15 (which is about 0, not -inf), softmax over dim=2."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device)) == 1


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(1)


def scaled_dot_product(query, key, value, mask=None):
    d_k = query.size()[-1]
    attention_logits = torch.bmm(query, key.transpose(1, 2))
    attention_logits = attention_logits / math.sqrt(d_k)
    if mask is not None:
        attention_logits.masked_fill_(mask == 0, 1e-15)
    attention = F.softmax(attention_logits, dim=2)
    value = torch.bmm(attention, value)
    return value, attention


def scaled_dot_product_attention(query, key, value, mask=None):
    return scaled_dot_product(query, key, value, mask)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product(query, key, value, mask)
