"""Correct variant: MHA builds its attention layer with constructor arguments (issue 45).

Multi-head attention built on your scaled dot-product attention.

LAB-03, part 2. Fill in every method marked with ``raise NotImplementedError``.

Shapes: B = batch, T = sequence length, h = ``n_heads``,
d_k = ``d_model // n_heads`` (the width of one head).

Rules: do not use ``torch.nn.MultiheadAttention``,
``torch.nn.functional.multi_head_attention_forward`` or
``torch.nn.functional.scaled_dot_product_attention``: the grader checks.
"""
import torch
import torch.nn as nn

from attention import ScaledDotProductAttention, scaled_dot_product_attention


class DimensionMismatchError(ValueError):
    """Raised when ``d_model`` cannot be split evenly into ``n_heads`` heads."""


class MultiHeadAttention(nn.Module):
    """Multi-head attention: h parallel attention heads over learned projections.

    Attributes (the grader reads them by these exact names):
        d_model, n_heads, d_k: ints, with ``d_k = d_model // n_heads``.
        w_q, w_k, w_v, w_o: ``nn.Linear(d_model, d_model, bias=bias)`` each,
            the query, key, value and output projections. No other layers.
    """

    def __init__(self, d_model, n_heads, bias=True):
        """Check the sizes and create the four projections.

        Raises:
            ValueError: if ``d_model`` or ``n_heads`` is not positive.
            DimensionMismatchError: if ``d_model % n_heads != 0``; the message
                names both numbers, e.g. "d_model=16 is not divisible by
                n_heads=5".

        Hint: call ``super().__init__()`` first, or ``nn.Module`` cannot
        register the layers.
        """
        super().__init__()
        ### BEGIN SOLUTION
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got d_model={d_model}, n_heads={n_heads}")
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        # A published style: the attention layer is built with its own settings.
        self.attention = ScaledDotProductAttention(dropout=0.0, temperature=self.d_k ** 0.5)
        ### END SOLUTION

    def split_heads(self, x):
        """``(B, T, d_model) -> (B, n_heads, T, d_k)``.

        Head i takes features ``[i * d_k, (i + 1) * d_k)`` of each position.

        Hint: ``view`` to ``(B, T, n_heads, d_k)``, then swap dims 1 and 2.
        Viewing straight to ``(B, n_heads, T, d_k)`` mixes positions up.
        """
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        x = x.view(B, T, self.n_heads, self.d_k)  # (B, T, h, d_k)
        return x.transpose(1, 2)  # (B, h, T, d_k)
        ### END SOLUTION

    def merge_heads(self, x):
        """``(B, n_heads, T, d_k) -> (B, T, d_model)``, the exact inverse of split_heads.

        Hint: transpose back first, then ``.contiguous().view(...)`` (or
        ``reshape``), because ``view`` needs contiguous memory.
        """
        ### BEGIN SOLUTION
        B, h, T, d_k = x.shape
        x = x.transpose(1, 2).contiguous()  # (B, T, h, d_k)
        return x.view(B, T, h * d_k)  # (B, T, d_model)
        ### END SOLUTION

    def forward(self, query, key, value, mask=None):
        """Project, split into heads, attend, merge, project out.

        Args:
            query: ``(B, T_q, d_model)``.
            key:   ``(B, T_k, d_model)``.
            value: ``(B, T_k, d_model)``. Key and value may differ from the
                query (cross-attention), and T_q may differ from T_k.
            mask: ``None`` or a mask broadcastable to ``(B, n_heads, T_q, T_k)``
                with the convention of ``attention.py``, passed on unchanged
                (e.g. a ``(T, T)`` causal mask or a ``(B, 1, 1, T_k)`` padding mask).

        Returns:
            ``(output, weights)``: output ``(B, T_q, d_model)`` and the
            attention weights of every head, ``(B, n_heads, T_q, T_k)``.

        Hint: use your ``scaled_dot_product_attention``; it already handles
        the extra heads dim.
        """
        ### BEGIN SOLUTION
        q = self.split_heads(self.w_q(query))  # (B, h, T_q, d_k)
        k = self.split_heads(self.w_k(key))  # (B, h, T_k, d_k)
        v = self.split_heads(self.w_v(value))  # (B, h, T_k, d_k)
        heads, weights = self.attention(q, k, v, mask)  # (B, h, T_q, d_k)
        output = self.w_o(self.merge_heads(heads))  # (B, T_q, d_model)
        return output, weights
        ### END SOLUTION

    def step(self, x, cache=None):
        """Extra credit: one decoding step of causal self-attention, with a KV cache.

        Args:
            x: the new token(s), ``(B, 1, d_model)``.
            cache: ``None`` on the first step, then the ``(k, v)`` this method returned last time:
                the projected keys and values of every earlier token, ``(B, n_heads, T_past, d_k)`` each.

        Returns:
            ``(y, cache)``: y ``(B, 1, d_model)``, and the cache grown by the new token's key and
            value, ``(B, n_heads, T_past + 1, d_k)`` each.

        Feeding a sequence one token at a time reproduces ``forward(x, x, x, causal_mask(T))`` at
        every position. Project only the new token: the cache already holds the past.

        Hint: the newest token may attend every cached position and itself, so no mask is needed;
        ``torch.cat(..., dim=2)`` grows the cache along the time dim.
        """
        ### BEGIN SOLUTION
        k = self.split_heads(self.w_k(x))  # (B, h, 1, d_k)
        v = self.split_heads(self.w_v(x))  # (B, h, 1, d_k)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, h, T_past + 1, d_k)
            v = torch.cat([cache[1], v], dim=2)
        q = self.split_heads(self.w_q(x))  # (B, h, 1, d_k)
        heads, _ = scaled_dot_product_attention(q, k, v)  # (B, h, 1, d_k)
        return self.w_o(self.merge_heads(heads)), (k, v)
        ### END SOLUTION
