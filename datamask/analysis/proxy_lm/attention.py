"""Causal attention for the proxy's bfloat16 evaluation on the CPU, in blocks of queries.

torch's CPU flash-attention kernel for the ``tiny`` proxy's shapes (128 positions, heads of 32)
was 22% of a bfloat16 evaluation and ran at about a fifth of the matrix products' rate. Here the
queries go :data:`QUERY_BLOCK` at a time against only the keys up to their block's end (so
nothing is computed for the upper triangle beyond the diagonal block), the scores in float32
(bfloat16 operands, as the flash kernel accumulates them), the softmax in float32 and the
product with the values in the values' dtype: 0.74 of the flash kernel's time on those shapes,
with the same error against a float64 reference to within a third (benchmarks/results/eval_copy.md,
round 10). It serves the evaluation only (:func:`~.train.evaluate` sets it on its bfloat16 copy);
training keeps SDPA, whose backward this does not replace. Anything else — a padding mask, keys
longer than the queries (a cache), grouped key/value heads — goes to SDPA unchanged.

Registered with ``transformers`` under :data:`NAME` (an attention function and, for the
causal mask, SDPA's mask function: no mask when the batch needs none).
"""

from __future__ import annotations

__all__ = ["NAME", "QUERY_BLOCK", "block_causal_attention", "register"]

#: the name the evaluation's copy of the model sets as its attention implementation
NAME = "datamask_block_causal"
#: queries per block: 16 and 64 measured slower on the tiny proxy's 128 positions
QUERY_BLOCK = 32


def block_causal_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """``transformers``' attention-function signature: ``query``/``key``/``value`` (batch, heads,
    positions, head size); returns ``(output (batch, positions, heads, head size), None)``."""
    import torch

    B, H, L, D = query.shape
    if attention_mask is not None or key.shape != query.shape or value.shape != query.shape or dropout:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    q = query.float() * (D**-0.5 if scaling is None else float(scaling))
    k = key.float()
    causal = torch.full((L, L), float("-inf"), device=query.device).triu(1)
    out = torch.empty_like(query)
    for a in range(0, L, QUERY_BLOCK):
        b = min(L, a + QUERY_BLOCK)
        scores = torch.baddbmm(
            causal[a:b, :b].expand(B * H, b - a, b),
            q[:, :, a:b].reshape(B * H, b - a, D),
            k[:, :, :b].reshape(B * H, b, D).transpose(1, 2),
        )
        out[:, :, a:b] = scores.softmax(-1).to(value.dtype).view(B, H, b - a, b) @ value[:, :, :b]
    return out.transpose(1, 2).contiguous(), None


_REGISTERED = False


def register() -> str:
    """Register the attention with ``transformers`` (once per process); returns :data:`NAME`."""
    global _REGISTERED
    if not _REGISTERED:
        from transformers import AttentionInterface, AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask

        AttentionInterface.register(NAME, block_causal_attention)
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _REGISTERED = True
    return NAME
