"""Multi-head attention in the style of a large sequence-to-sequence toolkit: sequence-first (T, B, C) inside,
the query pre-scaled by head_dim ** -0.5, heads folded into the batch for bmm, and its softmax helper, which
computes in float32 whatever the input dtype and casts back."""
import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


def softmax(x, dim):
    """The toolkit's softmax helper: always computed in float32."""
    return torch.softmax(x, dim, dtype=torch.float32)


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
        self.scaling = self.d_k ** -0.5
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        bsz, tgt_len, embed_dim = x.size()
        return x.view(bsz, tgt_len, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x):
        bsz, _, tgt_len, _ = x.size()
        return x.transpose(1, 2).contiguous().view(bsz, tgt_len, self.d_model)

    def forward(self, query, key, value, mask=None):
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))  # (T, B, C), sequence first
        tgt_len, bsz, embed_dim = query.size()
        src_len = key.size(0)
        q = self.w_q(query) * self.scaling
        k = self.w_k(key)
        v = self.w_v(value)
        q = q.contiguous().view(tgt_len, bsz * self.n_heads, self.d_k).transpose(0, 1)
        k = k.contiguous().view(src_len, bsz * self.n_heads, self.d_k).transpose(0, 1)
        v = v.contiguous().view(src_len, bsz * self.n_heads, self.d_k).transpose(0, 1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))  # (B * h, T_q, T_k)
        if mask is not None:
            attn_weights = attn_weights.view(bsz, self.n_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(mask == 0, float("-inf"))
            attn_weights = attn_weights.view(bsz * self.n_heads, tgt_len, src_len)
        attn_weights_float = softmax(attn_weights, dim=-1)
        attn_probs = attn_weights_float.type_as(attn_weights)
        attn = torch.bmm(attn_probs, v)  # (B * h, T_q, d_k)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        output = self.w_o(attn).transpose(0, 1)  # back to batch first
        return output, attn_probs.view(bsz, self.n_heads, tgt_len, src_len)
