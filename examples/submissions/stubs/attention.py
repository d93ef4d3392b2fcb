"""Scaled dot-product attention and the masks that go with it.

LAB-03, part 1. Fill in every function marked with ``raise NotImplementedError``.

Mask convention used everywhere in this lab
--------------------------------------------
A mask says where a query MAY attend:

* a ``torch.bool`` mask: ``True`` = may attend, ``False`` = blocked;
* a numeric mask (int or float): nonzero = may attend, ``0`` = blocked.

A mask is broadcast against the scores ``(..., T_q, T_k)``, so a ``(T, T)``
causal mask and a ``(B, 1, 1, T_k)`` padding mask both work as given.

Rules: build attention from tensor operations (``matmul``/``@``/``einsum``,
``softmax``, ``masked_fill``...). Do not call
``torch.nn.functional.scaled_dot_product_attention``: the grader checks.
"""
import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    """Causal (autoregressive) mask: query i may attend key j only when j <= i.

    Args:
        seq_len: number of positions T (an int >= 1).
        device: where to create the mask (default: the CPU).

    Returns:
        A ``torch.bool`` tensor of shape ``(T, T)``: ``True`` on and below the
        diagonal (allowed), ``False`` above it (the future, blocked).

    Hint: ``torch.tril`` of a matrix of ones keeps the lower triangle.
    """
    raise NotImplementedError


def padding_mask(tokens, pad_id):
    """Padding mask: no query may attend a key that is a padding token.

    Args:
        tokens: integer tensor of token ids, shape ``(B, T)``.
        pad_id: the id that marks padding.

    Returns:
        A ``torch.bool`` tensor of shape ``(B, 1, 1, T)``: ``True`` where the
        key is a real token, ``False`` where it is padding. The two singleton
        dims let it broadcast over heads and queries: ``(B, h, T_q, T)``.

    Hint: compare with ``!=``, then add dims with ``[:, None, None, :]``.
    """
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    """softmax(Q K^T / sqrt(d_k), masked) V, for any number of leading dims.

    Args:
        query: ``(..., T_q, d_k)`` float tensor.
        key:   ``(..., T_k, d_k)``, same dtype as ``query``.
        value: ``(..., T_k, d_v)``, same dtype as ``query``.
        mask:  ``None``, a ``torch.bool`` mask (``True`` = may attend) or a
            numeric mask (nonzero = may attend, ``0`` = blocked), broadcastable
            to ``(..., T_q, T_k)``.

    Returns:
        ``(output, weights)``: output ``(..., T_q, d_v)`` and weights
        ``(..., T_q, T_k)``, both in the input dtype and as accurate as it
        (no float32 constant or step in a float64 run). Each row of ``weights``
        sums to 1 over the keys, and blocked positions get exactly 0 weight.

    Contract: scale by ``1 / sqrt(d_k)`` with ``d_k = query.size(-1)``; never
    modify the inputs in place; gradients must flow to query, key and value;
    stay finite for large scores (``torch.softmax`` is stable). Rows where
    every key is blocked are undefined and never graded.

    Hint: fill blocked scores with ``float("-inf")`` *before* the softmax,
    and take the softmax over the keys (the last dim).
    """
    raise NotImplementedError


def tiled_attention(query, key, value, causal=False, block_size=64):
    """Extra credit: exact attention, computed block by block over the keys.

    The same result as ``scaled_dot_product_attention(query, key, value, mask)[0]``, with
    ``mask = causal_mask(T)`` when ``causal=True`` (then T_q == T_k), but it never builds the
    ``(T_q, T_k)`` score matrix: only ``(T_q, block_size)`` scores exist at any time. This is the
    idea behind FlashAttention.

    Args:
        query: ``(..., T_q, d_k)``; key: ``(..., T_k, d_k)``; value: ``(..., T_k, d_v)``.
        causal: query i attends keys j <= i only.
        block_size: keys per block, any int >= 1 (it need not divide T_k).

    Returns:
        output ``(..., T_q, d_v)`` in the input dtype (no weights: they are never materialised).

    Hint: keep, per query, a running max ``m``, a running sum ``l`` of exp(score - m) and a running
    output ``acc``. For each block: ``m_new = max(m, block max)``; rescale the old ``l`` and ``acc``
    by ``exp(m - m_new)`` before adding the block's terms; at the end return ``acc / l``.
    """
    raise NotImplementedError


class ScaledDotProductAttention(nn.Module):
    """Module wrapper around :func:`scaled_dot_product_attention`.

    ``forward(query, key, value, mask=None)`` has exactly the same contract
    and returns ``(output, weights)``.
    """

    def forward(self, query, key, value, mask=None):
        raise NotImplementedError
