"""Attention in the style of a popular "Attention is all you need" port: the query divided by a temperature,
and key.transpose(2, 3), which assumes (batch, head, length, d_k) inputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return (1 - torch.triu(torch.ones((1, seq_len, seq_len), device=device), diagonal=1)).bool()[0]


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-2).unsqueeze(1)


class ScaledDotProductAttention(nn.Module):
    """Scaled Dot-Product Attention"""

    def forward(self, q, k, v, mask=None):
        temperature = q.size(-1) ** 0.5
        attn = torch.matmul(q / temperature, k.transpose(2, 3))
        if mask is not None:
            attn = attn.masked_fill(mask == 0, -1e9)
        attn = F.softmax(attn, dim=-1)
        output = torch.matmul(attn, v)
        return output, attn


def scaled_dot_product_attention(query, key, value, mask=None):
    return ScaledDotProductAttention()(query, key, value, mask)
