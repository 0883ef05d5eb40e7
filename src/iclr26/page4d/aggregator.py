"""PAGE-4D's dynamics-aware aggregator: the dynamics mask head, the dynamics-aware global attention and the
mask-strength schedule, as components for any VGGT-like alternating-attention model.

PAGE-4D: Disentangled Pose and Geometry Estimation for (VGGT-)4D Perception, ICLR 2026, arXiv 2510.17568,
OpenReview Nfmzp5PBzr. Facts from the official code (kaichen-z/PAGE4D, read for facts, nothing copied):
``model/page/layers/block.py`` (``SpatialMaskHead_IMP``, ``mask_alpha``), ``model/page/layers/attention.py``
(the q/k augmentation), ``model/page/models/aggregator.py`` (where the mask is computed and used).

Dimension letters: ``B`` batch, ``S`` frames, ``P`` tokens per frame (``n_special`` camera/register tokens, then
``h·w`` patch tokens), ``N = S·P`` tokens of the global attention, ``Hh`` heads, ``Dh`` head width, ``D`` model width.

One forward pass of the aggregator with the mask (the steps the paper's dynamics-aware aggregator adds):

1. After the last frame-attention block of the early (frozen) group, the patch tokens are detached and normalised
   per channel over space; the mask head maps them to ``c_j = σ(logit_j + mean_ch(h_norm)_j) − 0.5 ∈ (−½, ½)`` per
   patch (``DynamicsMaskHead``). Special tokens get ``c = 0``.
2. The row strength ``r_i = α`` for camera/register queries and 0 for patch queries (``dynamics_bias_vectors``),
   with ``α = 64 · m(step)`` (``mask_strength``).
3. In every global block of the middle group the attention logits become ``q_i·k_j/√Dh + r_i c_j``
   (``dynamics_aware_attention``): the pose pathway (camera/register tokens) is steered away from the patches the
   mask marks as dynamic, while patch queries (the geometry pathway) attend as before.

There is no direct supervision of the mask: it learns through the task losses (the bias is differentiable in
``c``; the tokens it reads are detached, so the mask head does not change the backbone's features).

Deviations: the head's hidden width is a parameter (official: 256, for VGGT's 1024-wide tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "DynamicsMaskHead",
    "MaskSchedule",
    "dynamics_aware_attention",
    "dynamics_bias_vectors",
    "mask_strength",
]


def mask_strength(step: float, *, hold: float, end: float, scale: float = 64.0) -> float:
    """The mask strength ``α = scale · m(step)``: ``m = 1`` before ``hold``, 0 from ``end`` on, and a cosine
    ``m = ½(1 + cos(π (step − hold) / (end − hold)))`` in between (official ``mask_alpha``; scale 64).

    Args:
        step: training steps taken so far (the official head counts forward passes in training mode).
        hold: last step of full strength (official 6000).
        end: step where the strength reaches 0 (official 10000); ``end == hold`` is a hard switch.
        scale: α at full strength.

    Raises:
        ValueError: if ``end < hold`` or ``scale < 0``.
    """
    if end < hold:
        raise ValueError(f"end must be >= hold, got hold={hold}, end={end}")
    if scale < 0:
        raise ValueError(f"scale must be >= 0, got {scale}")
    if step < hold:
        return float(scale)
    if step >= end:
        return 0.0
    u = (step - hold) / (end - hold)
    # α = scale · m(step) (official 64): full strength until hold, then a cosine anneal to 0 at end
    return float(scale * 0.5 * (1.0 + math.cos(math.pi * u)))


@dataclass(frozen=True)
class MaskSchedule:
    """:func:`mask_strength` with its parameters fixed: ``schedule(step) -> α``.

    Attributes:
        hold: last step of full strength.
        end: step where the strength reaches 0. ``hold = end = inf`` keeps the mask on forever (the official
            README's "inference-time masking" variant); ``end`` at the last training step gives the
            "training-only masking" variant (the final network is the plain VGGT structure).
        scale: α at full strength (official 64).
    """

    hold: float
    end: float
    scale: float = 64.0

    def __post_init__(self) -> None:
        mask_strength(0.0, hold=self.hold, end=self.end, scale=self.scale)  # validates

    def __call__(self, step: float) -> float:
        return mask_strength(step, hold=self.hold, end=self.end, scale=self.scale)


class DynamicsMaskHead(nn.Module):
    """Per-patch dynamics score from (detached) patch tokens: ``c = σ(f(ĥ) + mean_ch(ĥ)) − 0.5``.

    ``ĥ`` is the token grid normalised per channel over space (mean 0, std 1 per frame and channel); ``f`` is a
    depthwise 3×3 conv → GELU → 1×1 conv to ``hidden`` → GELU → 1×1 conv to 1 (official ``SpatialMaskHead_IMP``).
    The channel mean of ``ĥ`` enters detached, as in the official code. ``c ∈ (−½, ½)``: low values mark the
    patches the pose pathway should ignore (dynamic content).

    Args:
        dim: token width D.
        hidden: width of the pointwise layer (official 256).
    """

    def __init__(self, dim: int, *, hidden: int = 256) -> None:
        super().__init__()
        if dim < 1 or hidden < 1:
            raise ValueError(f"dim and hidden must be >= 1, got {dim}, {hidden}")
        self.net = nn.Sequential(
            nn.Conv2d(dim, dim, 3, padding=1, groups=dim),
            nn.GELU(),
            nn.Conv2d(dim, hidden, 1),
            nn.GELU(),
            nn.Conv2d(hidden, 1, 1),
        )

    def forward(self, patch_tokens: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
        """Scores of the patches.

        Args:
            patch_tokens: (B, S, h·w, D) patch tokens (detached inside).
            grid: (h, w), the patch grid.

        Returns:
            (B, S, h·w) scores in (−½, ½).
        """
        b, s, n, d = patch_tokens.shape
        h, w = grid
        if n != h * w:
            raise ValueError(f"patch_tokens hold {n} patches, but the grid {h}x{w} has {h * w}")
        x = patch_tokens.detach().reshape(b * s, h, w, d).permute(0, 3, 1, 2)  # (B·S, D, h, w)
        # per-channel normalisation over space
        mean = x.mean(dim=(2, 3), keepdim=True)
        std = x.std(dim=(2, 3), keepdim=True).clamp(min=1e-6) if h * w > 1 else torch.ones_like(mean)
        x = (x - mean) / std
        logit = self.net(x)  # (B·S, 1, h, w)
        # c = σ(logit + mean_ch(ĥ)) − 0.5
        c = torch.sigmoid(logit + x.mean(dim=1, keepdim=True).detach()) - 0.5
        return c.reshape(b, s, h * w)


def dynamics_bias_vectors(scores: torch.Tensor, *, n_special: int, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The row and column vectors of the additive logit bias ``r_i c_j`` over the global token sequence.

    Args:
        scores: (B, S, h·w) patch scores from :class:`DynamicsMaskHead`.
        n_special: camera + register tokens at the start of each frame.
        alpha: mask strength α.

    Returns:
        ``(r, c)``, each (B, N) with ``N = S·(n_special + h·w)``: ``r`` is α on special tokens and 0 on patches
        (which queries are biased); ``c`` is 0 on special tokens and the score on patches (the bias per key).
    """
    b, s, n = scores.shape
    p = n_special + n
    c = scores.new_zeros(b, s, p)
    # c_j: the dynamics score on patch keys; camera/register keys get no bias
    c[:, :, n_special:] = scores
    r = scores.new_zeros(b, s, p)
    # r_i = α on camera/register queries only: the pose pathway is steered, the geometry pathway is not
    r[:, :, :n_special] = alpha
    return r.reshape(b, s * p), c.reshape(b, s * p)


def dynamics_aware_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, r: torch.Tensor | None = None, c: torch.Tensor | None = None
) -> torch.Tensor:
    """``softmax(q kᵀ/√Dh + r cᵀ) v`` per head: scaled dot-product attention with PAGE-4D's rank-one bias.

    Computed as the official code does, by one extra dimension on queries and keys so the fused SDPA kernel
    applies: ``q' = [q·√(D'/Dh), r·√D', 0…]``, ``k' = [k, c, 0…]``, ``v' = [v, 0…]`` with ``D'`` = ``Dh + 1``
    rounded up to a multiple of 8; SDPA's ``1/√D'`` then gives exactly ``q·k/√Dh + r_i c_j``. With ``r`` None or all
    zero it is plain attention.

    Args:
        q: (B, Hh, N, Dh) queries.
        k: (B, Hh, N, Dh) keys.
        v: (B, Hh, N, Dh) values.
        r: (B, N) row strengths (one per query), or None.
        c: (B, N) column scores (one per key), or None.

    Returns:
        (B, Hh, N, Dh).
    """
    if r is None or c is None or not bool(r.any()):
        return F.scaled_dot_product_attention(q, k, v)
    b, hh, n, dh = q.shape
    if r.shape != (b, n) or c.shape != (b, n):
        raise ValueError(f"r and c must be (B, N) = ({b}, {n}), got {tuple(r.shape)} and {tuple(c.shape)}")
    d_aug = ((dh + 1 + 7) // 8) * 8
    pad = d_aug - dh - 1
    rr = r[:, None, :, None].to(q.dtype).expand(b, hh, n, 1)
    cc = c[:, None, :, None].to(k.dtype).expand(b, hh, n, 1)
    zeros = q.new_zeros(b, hh, n, pad)
    # q'·k'/√D' = (q·k)·√(D'/Dh)/√D' + r c √D'/√D' = q·k/√Dh + r c
    q2 = torch.cat([q * math.sqrt(d_aug / dh), rr * math.sqrt(d_aug), zeros], dim=-1)
    k2 = torch.cat([k, cc, zeros], dim=-1)
    v2 = torch.cat([v, q.new_zeros(b, hh, n, pad + 1)], dim=-1)
    return F.scaled_dot_product_attention(q2, k2, v2)[..., :dh]
