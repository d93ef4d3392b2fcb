"""Multi-head attention in the style of timm's ViT `Attention`: a `Final[bool]` annotation for the
fused path (kept off here), `scale = head_dim ** -0.5` applied to the query, softmax over the keys."""
import torch
import torch.nn as nn
from torch.jit import Final


class DimensionMismatchError(ValueError):
    pass


class MultiHeadAttention(nn.Module):
    fused_attn: Final[bool]

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got {d_model} and {n_heads}")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads
        self.scale = self.d_k ** -0.5
        self.fused_attn = False  # timm switches to F.scaled_dot_product_attention here: not in this lab
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        B, N, C = x.shape
        return x.reshape(B, N, self.n_heads, self.d_k).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        B, h, N, d = x.shape
        return x.transpose(1, 2).reshape(B, N, h * d)

    def forward(self, query, key, value, mask=None):
        q = self.split_heads(self.w_q(query)) * self.scale
        k = self.split_heads(self.w_k(key))
        v = self.split_heads(self.w_v(value))
        attn = q @ k.transpose(-2, -1)
        if mask is not None:
            allowed = mask if mask.dtype == torch.bool else mask != 0
            attn = attn.masked_fill(~allowed, float("-inf"))
        attn = attn.softmax(dim=-1)
        x = attn @ v
        return self.w_o(self.merge_heads(x)), attn
