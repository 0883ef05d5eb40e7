"""The partially frozen LLM block (PF-LLM) of ST-HHOL, on the first decoder layers of a pretrained Llama model.

ST-HHOL, ICLR 2026, OpenReview Nc3dl43s5Z. The paper takes the first 2 layers of GPT-2 small, freezes their
feed-forward layers and trains attention and layer norms; each region is one token (third-party summary,
[unverified]). Here the layers come from SmolLM2-135M-Instruct (a ``LlamaForCausalLM``, width 576, through
:mod:`iclr26.common.pretrained`): the MLP (``gate_proj``, ``up_proj``, ``down_proj``) is frozen, attention
(``q/k/v/o_proj``) and both RMSNorms are trainable. :meth:`PartiallyFrozenLLM.random_like` builds the ablation: the
same shapes and the same frozen/trainable split, randomly initialised (normal, std = the config's
``initializer_range``, norms at 1, as ``transformers`` initialises a fresh Llama).

Shape glossary: ``B`` batch, ``N`` tokens (regions), ``D`` the LM width (576).

Deviations: SmolLM2 instead of GPT-2 (no GPT-2 weights offline here); rotary positions over the region index; the
region tokens attend to each other in both directions (an all-zero additive mask), where GPT-2's causal mask would
let region n see only regions < n, an order that regions do not have.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["PartiallyFrozenLLM", "is_frozen_parameter"]


def is_frozen_parameter(name: str) -> bool:
    """Whether the PF-LLM parameter ``name`` (a ``named_parameters`` key) stays frozen: the feed-forward (MLP)."""
    return ".mlp." in f".{name}"


class PartiallyFrozenLLM(nn.Module):
    """``n_layers`` Llama decoder layers over region tokens, MLP frozen, attention and norms trainable.

    Args:
        layers: the decoder layers (moved in, not copied).
        rotary: the model's rotary embedding module (position → cos/sin).
        hidden_size: the width ``D``.
    """

    def __init__(self, layers: list[nn.Module], rotary: nn.Module, hidden_size: int) -> None:
        super().__init__()
        if not layers:
            raise ValueError("layers must hold at least one decoder layer")
        self.layers = nn.ModuleList(layers)
        self.rotary = rotary
        self.hidden_size = hidden_size
        for name, p in self.named_parameters():
            # PF-LLM: feed-forward frozen, attention and norms trained (third-party summary [unverified]; the
            # abstract: attention adapted, pre-trained priors kept)
            p.requires_grad_(not is_frozen_parameter(name))

    @classmethod
    def from_causal_lm(cls, model: Any, n_layers: int) -> PartiallyFrozenLLM:
        """The first ``n_layers`` decoder layers of a ``LlamaForCausalLM`` (e.g. ``load_pretrained().model``),
        deep-copied in float32.

        Raises:
            ValueError: if ``n_layers`` is not in ``[1, number of layers]``.
        """
        layers = model.model.layers
        if not 1 <= n_layers <= len(layers):
            raise ValueError(f"n_layers must lie in [1, {len(layers)}], got {n_layers}")
        copied = [copy.deepcopy(layers[i]).float() for i in range(n_layers)]
        return cls(copied, copy.deepcopy(model.model.rotary_emb).float(), model.config.hidden_size)

    @classmethod
    def random_like(cls, config: Any, n_layers: int, *, generator: torch.Generator) -> PartiallyFrozenLLM:
        """A randomly initialised block of the same shape as :meth:`from_causal_lm` for a Llama ``config``.

        Raises:
            ValueError: if ``n_layers < 1``.
        """
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        layers = [LlamaDecoderLayer(config, layer_idx=i).float() for i in range(n_layers)]
        std = float(getattr(config, "initializer_range", 0.02))
        with torch.no_grad():
            for layer in layers:
                for name, p in layer.named_parameters():
                    if name.endswith("layernorm.weight"):
                        p.fill_(1.0)
                    else:
                        p.copy_(torch.randn(p.shape, generator=generator) * std)
        return cls(layers, LlamaRotaryEmbedding(config=config), config.hidden_size)

    def forward(self, h: Tensor) -> Tensor:
        """``(B, N, D)`` → ``(B, N, D)``: the decoder layers with bidirectional attention over the N tokens."""
        if h.dim() != 3 or h.shape[-1] != self.hidden_size:
            raise ValueError(f"h must be (B, N, {self.hidden_size}), got shape {tuple(h.shape)}")
        b, n, _ = h.shape
        positions = torch.arange(n, device=h.device).unsqueeze(0).expand(b, n)  # (B, N)
        cos_sin = self.rotary(h, positions)
        mask = torch.zeros(b, 1, n, n, dtype=h.dtype, device=h.device)  # additive, all visible
        for layer in self.layers:
            out = layer(h, attention_mask=mask, position_ids=positions, position_embeddings=cos_sin)
            h = out[0] if isinstance(out, tuple) else out
        return h
