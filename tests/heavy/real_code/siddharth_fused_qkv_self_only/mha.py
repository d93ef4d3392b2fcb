"""Multi-head attention in the style of a CLIP/ViT block: one fused qkv projection of the input (here the three
contract projections stacked), reshape(B, N, 3, h, d).permute(2, 0, 3, 1, 4), scale = head_dim ** -0.5. Like its
source it is self-attention only: keys and values come from the query, and there is no mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"embed_dim={d_model} and num_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"embed_dim={d_model} must be divisible by num_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.scale = self.d_k ** -0.5
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        B, N, C = x.shape
        return x.reshape(B, N, self.n_heads, C // self.n_heads).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        B, h, N, d = x.shape
        return x.transpose(1, 2).reshape(B, N, h * d)

    def qkv(self, x):
        layers = (self.w_q, self.w_k, self.w_v)
        weight = torch.cat([layer.weight for layer in layers])
        bias = torch.cat([layer.bias for layer in layers]) if self.w_q.bias is not None else None
        return F.linear(x, weight, bias)

    def forward(self, query, key, value, mask=None):
        B, N, C = query.shape
        qkv = self.qkv(query).reshape(B, N, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.w_o(x), attn
