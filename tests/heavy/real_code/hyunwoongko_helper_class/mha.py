"""Multi-head attention in the style of the same Transformer: it imports the attention helper class by its own
name, and splits and concatenates the heads with view and transpose."""
from torch import nn

from attention import ScaleDotProductAttention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model={d_model} and n_head={n_heads} must be positive")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_head={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.attention = ScaleDotProductAttention()
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, tensor):
        batch_size, length, d_model = tensor.size()
        d_tensor = d_model // self.n_heads
        return tensor.view(batch_size, length, self.n_heads, d_tensor).transpose(1, 2)

    def merge_heads(self, tensor):
        batch_size, head, length, d_tensor = tensor.size()
        return tensor.transpose(1, 2).contiguous().view(batch_size, length, head * d_tensor)

    def forward(self, q, k, v, mask=None):
        q, k, v = self.w_q(q), self.w_k(k), self.w_v(v)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        out, attention = self.attention(q, k, v, mask=mask)
        return self.w_o(self.merge_heads(out)), attention
