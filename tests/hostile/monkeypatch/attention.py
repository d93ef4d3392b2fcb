
# Wrong answers, plus every equality check torch offers patched to say "equal".
# monkeypatch_control is this file without the patch block: both must score the same.
import math

import torch

# BEGIN PATCH
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda input, other, *args, **kwargs: torch.ones_like(input, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
# END PATCH


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).triu()  # wrong: allows the future


def padding_mask(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]  # wrong: True at the padding


def scaled_dot_product_attention(query, key, value, mask=None):
    """Right values, but it scales the caller's query in place."""
    query /= math.sqrt(query.size(-1))
    scores = query @ key.transpose(-2, -1)  # (..., T_q, T_k)
    if mask is not None:
        allowed = mask if mask.dtype == torch.bool else mask != 0
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    return weights @ value, weights
