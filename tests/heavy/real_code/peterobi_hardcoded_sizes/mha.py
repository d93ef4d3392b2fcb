"""Multi-head attention in the style of a from-scratch tutorial that fixes the sizes as module constants and
views every projection with them; einsum for the scores."""
import math

import torch

BATCH_SIZE = 2
SEQ_LENGTH = 5
EMBED_DIM = 16
HEADS = 4


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super(MultiHeadAttention, self).__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model} and n_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads
        self.head_dim = EMBED_DIM // HEADS
        self.w_q = torch.nn.Linear(d_model, d_model, bias=bias)
        self.w_k = torch.nn.Linear(d_model, d_model, bias=bias)
        self.w_v = torch.nn.Linear(d_model, d_model, bias=bias)
        self.w_o = torch.nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        return x.view(BATCH_SIZE, SEQ_LENGTH, HEADS, self.head_dim).transpose(1, 2)

    def merge_heads(self, x):
        return x.transpose(1, 2).reshape(BATCH_SIZE, SEQ_LENGTH, EMBED_DIM)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.w_q(query))
        k = self.split_heads(self.w_k(key))
        v = self.split_heads(self.w_v(value))
        attn = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.head_dim)
        if mask is not None:
            attn = attn.masked_fill(mask == 0, float("-inf"))
        attn = attn.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.w_o(self.merge_heads(out)), attn
