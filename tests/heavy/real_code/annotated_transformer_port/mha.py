"""Multi-headed attention in the Annotated Transformer's style, importing its helper from attention.py."""
import torch.nn as nn

from attention import attention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model}, n_heads={n_heads}: both must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        nbatches = x.size(0)
        return x.view(nbatches, -1, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        nbatches = x.size(0)
        return x.transpose(1, 2).contiguous().view(nbatches, -1, self.n_heads * self.d_k)

    def forward(self, query, key, value, mask=None):
        # the contract's masks already broadcast over heads, so no mask.unsqueeze(1) here
        query, key, value = [self.split_heads(lin(x)) for lin, x in zip((self.w_q, self.w_k, self.w_v),
                                                                         (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask)
        return self.w_o(self.merge_heads(x)), self.attn
