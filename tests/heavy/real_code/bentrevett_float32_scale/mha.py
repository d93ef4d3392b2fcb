"""Multi-head attention layer in the tutorial's style: fc_* renamed to w_*, permute for the heads,
and the same float32 scale made once in __init__."""
import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"hid_dim={d_model} and n_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"hid_dim={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.scale = torch.sqrt(torch.FloatTensor([self.d_k]))

    def split_heads(self, x):
        batch_size = x.shape[0]
        return x.view(batch_size, -1, self.n_heads, self.d_k).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        batch_size = x.shape[0]
        return x.permute(0, 2, 1, 3).contiguous().view(batch_size, -1, self.d_model)

    def forward(self, query, key, value, mask=None):
        Q = self.split_heads(self.w_q(query))
        K = self.split_heads(self.w_k(key))
        V = self.split_heads(self.w_v(value))
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(attention, V)
        return self.w_o(self.merge_heads(x)), attention
