"""Scaled dot-product attention with a debug flag read from the environment, as many repositories
keep one (`os.environ.get`), printing the shapes when it is set."""
import math
import os

import torch
import torch.nn as nn

DEBUG = os.environ.get("ATTENTION_DEBUG", "0") == "1"


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if DEBUG:
        print("attention", tuple(query.shape), tuple(weights.shape))
    return weights @ value, weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
