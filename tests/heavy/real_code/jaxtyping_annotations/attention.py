"""Scaled dot-product attention annotated with jaxtyping's shapes, as typed research code writes it:
`Float[Tensor, "... t_q d_k"]` on every argument and result."""
import math
from typing import Optional

import torch
import torch.nn as nn
from jaxtyping import Bool, Float
from torch import Tensor


def causal_mask(seq_len: int, device=None) -> Bool[Tensor, "t t"]:
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id: int) -> Bool[Tensor, "b 1 1 t"]:
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product_attention(
    query: Float[Tensor, "... t_q d_k"],
    key: Float[Tensor, "... t_k d_k"],
    value: Float[Tensor, "... t_k d_v"],
    mask: Optional[Tensor] = None,
) -> tuple[Float[Tensor, "... t_q d_v"], Float[Tensor, "... t_q t_k"]]:
    scores: Float[Tensor, "... t_q t_k"] = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, value), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        return scaled_dot_product_attention(query, key, value, mask)
