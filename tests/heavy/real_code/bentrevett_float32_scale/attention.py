"""Attention with the scale of a well-known seq2seq tutorial: sqrt of a FloatTensor, -1e10 fill, "energy"."""
import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), device=device)).bool()


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)


def scaled_dot_product_attention(query, key, value, mask=None):
    scale = torch.sqrt(torch.FloatTensor([query.shape[-1]]))  # a float32 tensor, whatever the inputs are
    energy = torch.matmul(query, key.transpose(-2, -1)) / scale
    if mask is not None:
        energy = energy.masked_fill(mask == 0, -1e10)
    attention = torch.softmax(energy, dim=-1)
    x = torch.matmul(attention, value)
    return x, attention


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
