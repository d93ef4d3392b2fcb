"""Attention in the style of a widely used GPT-2 port's ``_attn``: the scale is a 0-dim tensor made from the
value's width, blocked scores are set with torch.where to the dtype's most negative number."""
import torch
from torch import nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return tokens.ne(pad_id)[:, None, None, :]


def scaled_dot_product_attention(query, key, value, mask=None):
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
    attn_weights = attn_weights / torch.full(
        [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
    if mask is not None:
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype,
                                device=attn_weights.device)
        attn_weights = torch.where(mask != 0, attn_weights, mask_value)
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = attn_weights.type(value.dtype)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output, attn_weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
