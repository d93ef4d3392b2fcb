"""Attention in the style of an early (2019) version of a popular from-scratch Transformer: the key "transposed"
with view, the scale from the full model width, blocked scores filled with a tiny number, an implicit-dim softmax."""
import math

import torch
from torch import nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device)).type(torch.BoolTensor)


def padding_mask(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)


class ScaledDotProductAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax()

    def forward(self, q, k, v, mask=None, e=1e-12):
        # input is 4 dimension tensor [batch_size, head, length, d_tensor]
        batch_size, head, length, d_tensor = k.size()
        d_model = head * d_tensor
        k_t = k.view(batch_size, head, d_tensor, length)
        score = (q @ k_t) / math.sqrt(d_model)
        if mask is not None:
            score = score.masked_fill(mask == 0, -e)
        score = self.softmax(score)
        v = score @ v
        return v, score


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)
