"""Attention for training forwards on the CPU: torch's fused forward, an explicit backward.

At the lengths this package trains on (a few hundred tokens), the backward of torch's CPU flash-attention kernel
is slow: in a torch profile of one bfloat16 LoRA step of SmolLM2 (8 x 125 tokens) it took ~0.7 s of ~5.2 s, about
three times this module's backward (``benchmarks/pretrained_lm.py`` times the whole step against plain
``transformers`` + ``peft``). :func:`fused_forward_explicit_backward` keeps the forward of ``sdpa`` (so a
forward with a gradient gives bit for bit the log-probs of one without, and GRPO's first ratio is exactly 1) and
computes the backward from the softmax recomputed in float32: the gradient of the same attention, rounded the way
eager attention rounds it.

Registered with ``transformers`` as :data:`NAME` (:func:`register`) and used by
:func:`~iclr26.common.pretrained.scoring.scoring_attention` for half-precision models on the CPU. Without a
gradient, or where the explicit backward does not apply (dropout, a key/value cache longer than the queries, a
position bias), it is plain ``sdpa``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["NAME", "fused_forward_explicit_backward", "register"]

NAME = "sdpa_explicit_backward"


class _FusedForwardExplicitBackward(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None,
        module: nn.Module,
        scaling: float | None,
        causal: bool,
    ) -> Tensor:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        ctx.save_for_backward(query, key, value, mask)
        ctx.groups, ctx.causal = getattr(module, "num_key_value_groups", 1), causal
        ctx.scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
        out, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=scaling, is_causal=causal)
        return out  # (B, L, H, d)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        from transformers.integrations.sdpa_attention import repeat_kv

        query, key, value, mask = ctx.saved_tensors
        with torch.enable_grad():
            q, k, v = (t.detach().requires_grad_() for t in (query, key, value))
            scores = (q @ repeat_kv(k, ctx.groups).transpose(2, 3) * ctx.scaling).float()  # (B, H, L, S)
            if mask is None and ctx.causal:
                mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
            if mask is not None and mask.dtype == torch.bool:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # a fully masked row stays finite
            elif mask is not None:
                scores = scores + mask
            weights = torch.softmax(scores, dim=-1).to(q.dtype)  # softmax in float32, as eager attention takes it
            out = (weights @ repeat_kv(v, ctx.groups)).transpose(1, 2)
            grads = torch.autograd.grad(out, (q, k, v), grad_out)
        return (*grads, None, None, None, None)


def fused_forward_explicit_backward(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    """An attention function of ``transformers``' ``AttentionInterface``: ``sdpa``'s output, the explicit backward.

    ``query`` is ``(B, H, L, d)``, ``key``/``value`` ``(B, H_kv, S, d)``, ``attention_mask`` ``sdpa``'s (boolean,
    true where a query may attend, or ``None`` for plain causal attention). Returns ``((B, L, H, d), None)``.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    plain = dropout > 0 or kwargs.get("position_bias") is not None or key.shape[2] != query.shape[2]
    if not needs_grad or plain:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    # the causal flag as sdpa decides it: only without a mask, and only for more than one query
    causal = is_causal if is_causal is not None else module.is_causal
    causal = query.shape[2] > 1 and attention_mask is None and causal
    out = _FusedForwardExplicitBackward.apply(query, key, value, attention_mask, module, scaling, causal)
    return out, None


def register() -> str:
    """Register :func:`fused_forward_explicit_backward` (and ``sdpa``'s mask) with ``transformers`` as
    :data:`NAME`; idempotent. Returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, fused_forward_explicit_backward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
