"""The causal transformer of NextStep-1 over ``[text tokens, <boi>, image tokens]`` and its training loss.

NextStep-1 (ICLR 2026, arXiv 2508.10711) §2; ``stepfun-ai/NextStep-1`` ``modeling_nextstep.py``: text tokens are
embedded, continuous image tokens go through a linear ``image_in_projector``; the hidden state before each image
token, through ``image_out_projector``, conditions the per-token head; text positions use the LM head. Loss
(official ``lm_loss_weight = 0.01``, ``im_loss_weight = 1.0``)::

    L = 0.01 * CE_text + 1.0 * L_im

The transformer blocks are :class:`iclr26.common.tinylm.Block` (pre-norm, RoPE, causal SDPA).

Glossary: ``B`` batch, ``S`` text tokens (the last one is ``<boi>``), ``N`` image tokens, ``T = S + N``, ``D`` width,
``d`` token width, ``V`` text vocabulary.

Steps of one training step (:func:`nextstep_loss`):

1. hidden states ``(B, T, D)`` of ``[text, image tokens]`` under the causal mask;
2. text: logits at positions ``0..S-2`` against text ids ``1..S-1`` (cross-entropy);
3. image: conditions ``c_i = W_out h_{S-1+i}`` for tokens ``i = 0..N-1`` and the head loss (FM, MSE or CE);
4. ``L = lm_weight * CE_text + im_weight * L_im``.

Deviations: learned text vocabulary of class prompts instead of a pretrained LLM; no ``<eoi>`` (fixed token count).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.tinylm import Block, DenseMLP, TinyLMConfig, rope_tables


class ARHidden(NamedTuple):
    """What :meth:`ARTransformer.forward` returns.

    Attributes:
        text_logits: ``(B, S, V)`` next-token logits at the text positions.
        image_cond: ``(B, N + 1, D)`` head conditions at positions ``S-1 .. T-1``: entry ``i`` conditions image
            token ``i`` (the last entry would condition a token ``N``; the sampler uses it while generating).
    """

    text_logits: Tensor
    image_cond: Tensor


class ARTransformer(nn.Module):
    """Causal transformer over text ids and continuous image tokens.

    Args:
        vocab_size: V (class prompts, a null prompt for guidance and ``<boi>``).
        token_dim: d.
        d_model: D.
        n_layers: blocks.
        n_heads: attention heads.
        context_len: the longest ``S + N``.

    Shapes:
        ``forward(text: (B, S) long, image: (B, N, d)) -> ARHidden``; ``N`` may be 0.
    """

    def __init__(
        self, *, vocab_size: int, token_dim: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
        context_len: int = 64,
    ) -> None:  # fmt: skip
        super().__init__()
        self.cfg = TinyLMConfig(
            vocab_size=vocab_size, context_len=context_len, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            d_ff=4 * d_model,
        )  # fmt: skip
        self.token_dim = token_dim
        self.text_emb = nn.Embedding(vocab_size, d_model)
        self.image_in = nn.Linear(token_dim, d_model)
        self.blocks = nn.ModuleList(Block(self.cfg, DenseMLP(d_model, 4 * d_model)) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.image_out = nn.Linear(d_model, d_model)
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, text: Tensor, image: Tensor) -> ARHidden:
        if text.dim() != 2 or text.dtype != torch.long:
            raise ValueError(f"text must be a (B, S) long tensor, got {tuple(text.shape)} {text.dtype}")
        if image.dim() != 3 or image.shape[0] != text.shape[0] or image.shape[2] != self.token_dim:
            raise ValueError(f"image must have shape ({text.shape[0]}, N, {self.token_dim}), got {tuple(image.shape)}")
        S, T = text.shape[1], text.shape[1] + image.shape[1]
        if T > self.cfg.context_len:
            raise ValueError(f"S + N = {T} exceeds context_len={self.cfg.context_len}")
        x = torch.cat([self.text_emb(text), self.image_in(image)], dim=1)  # (B, T, D)
        rope = rope_tables(T, self.cfg.d_model // self.cfg.n_heads, self.cfg.rope_base, device=x.device, dtype=x.dtype)
        for block in self.blocks:
            x, _ = block(x, rope)
        h = self.ln_f(x)
        return ARHidden(text_logits=self.lm_head(h[:, :S]), image_cond=self.image_out(h[:, S - 1 :]))


class LossParts(NamedTuple):
    """The loss of one batch.

    Attributes:
        total: ``lm_weight * text + im_weight * image`` (scalar, differentiable).
        text: text cross-entropy (detached).
        image: image head loss (detached).
    """

    total: Tensor
    text: Tensor
    image: Tensor


def nextstep_loss(
    model: ARTransformer,
    head: nn.Module,
    text: Tensor,
    image: Tensor,
    *,
    image_targets: Tensor | None = None,
    lm_weight: float = 0.01,
    im_weight: float = 1.0,
    generator: torch.Generator | None = None,
    noise: tuple[Tensor, Tensor] | None = None,
) -> LossParts:
    """``L = lm_weight * CE_text + im_weight * L_im`` for one batch.

    Args:
        model: the transformer.
        head: an image head with ``loss(targets, c, generator=...)`` (:mod:`iclr26.nextstep.heads`).
        text: ``(B, S)`` text ids ending in ``<boi>``.
        image: ``(B, N, d)`` image tokens fed to the transformer.
        image_targets: what the head predicts per token: ``(B, N, d)`` tokens (default ``image``) or ``(B, N)``
            code indices for a discrete head.
        lm_weight: weight of the text cross-entropy (official 0.01).
        im_weight: weight of the image loss (official 1.0).
        generator: the head loss's random source.
        noise: a flow-matching head's ``(t, eps)``, given instead of drawn
            (:func:`~iclr26.nextstep.heads.flow_matching_loss`).
    """
    out = model(text, image)
    B, S = text.shape
    N = image.shape[1]
    # CE_text: next-token prediction over the prompt (position j predicts text id j + 1)
    ce = F.cross_entropy(out.text_logits[:, :-1].reshape(B * (S - 1), -1), text[:, 1:].reshape(-1)) if S > 1 else None
    ce = ce if ce is not None else image.new_zeros(())
    targets = image if image_targets is None else image_targets
    # c_i = W_out h_{S-1+i}: the hidden state one position before image token i conditions its head
    c = out.image_cond[:, :N].reshape(B * N, -1)  # (B N, D)
    flat_targets = targets.reshape(B * N, -1) if targets.dim() == 3 else targets.reshape(B * N)
    im = head.loss(flat_targets, c, generator=generator) if noise is None else head.loss(flat_targets, c, noise=noise)
    # L = lm_weight CE_text + im_weight L_im (official lm_loss_weight 0.01, im_loss_weight 1.0)
    return LossParts(total=lm_weight * ce + im_weight * im, text=ce.detach(), image=im.detach())
