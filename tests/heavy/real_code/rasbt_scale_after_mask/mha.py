"""Multi-head attention in the style of a popular LLM-from-scratch book: masked_fill_ in place on the scores,
the scale applied after masking, keys.shape[-1] ** 0.5, W_query/W_key/W_value renamed to w_q/w_k/w_v."""
import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_out={d_model} and num_heads={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_out={d_model} must be divisible by num_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        b, num_tokens, _ = x.shape
        return x.view(b, num_tokens, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, context_vec):
        b, _, num_tokens, _ = context_vec.shape
        return context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_model)

    def forward(self, query, key, value, mask=None):
        queries = self.split_heads(self.w_q(query))
        keys = self.split_heads(self.w_k(key))
        values = self.split_heads(self.w_v(value))
        attn_scores = queries @ keys.transpose(2, 3)
        if mask is not None:
            attn_scores.masked_fill_(~mask.bool(), -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values
        return self.w_o(self.merge_heads(context_vec)), attn_weights
