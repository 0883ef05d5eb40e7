"""HICRA's hierarchy-aware advantage, and the entropy-selected control of the paper's ablation.

Wang et al., "Emergent Hierarchical Reasoning in LLMs through Reinforcement Learning", ICLR 2026, arXiv 2509.03646,
§3 (HICRA). With the GRPO advantage of response ``o_i`` to query ``q`` in a group of ``G``,

    Â_{i,t} = R(q, o_i) − (1/G) Σ_j R(q, o_j)                       (group-centred, no std division in the paper)

HICRA moves credit to the planning tokens ``S_i`` (tokens inside a Strategic Gram occurrence):

    Â^HICRA_{i,t} = Â_{i,t} + α·|Â_{i,t}|   if t ∈ S_i,     Â_{i,t} otherwise,     α = 0.2

so a planning token of a successful response gets ``(1 + α)·Â`` and one of a failed response ``(1 − α)·Â`` (less
blame for a failed plan). The result replaces ``Â`` in the clipped surrogate; the planning mask is data (no gradient).

Any GRPO trainer that exposes per-token advantages calls it between computing ``Â`` and the loss::

    adv = group_relative_advantages(rewards, scale="none").reshape(-1)          # (N,)
    adv = hicra_advantages(adv, planning_mask, alpha=0.2, mask=completion_mask)  # (N, T)

The paper's "high-entropy token" ablation applies the same transform to the tokens of highest policy entropy instead
of the planning tokens (:func:`entropy_mask`, with the same token coverage as the planning mask).

Shape glossary: ``B`` (= ``N``) sequences, ``T`` completion tokens.

Deviations: none from the equation. The function also accepts one advantage per sequence ``(B,)`` and broadcasts it
over ``T`` (GRPO's outcome advantage is constant over a response's tokens); padded positions come back as 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["entropy_mask", "hicra_advantages"]


def _bool_mask(mask: Tensor, name: str, shape: torch.Size) -> Tensor:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if mask.shape != shape:
        raise ValueError(
            f"{name} must have shape {tuple(shape)} (that of the token advantages), got {tuple(mask.shape)}"
        )
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex() or not ((mask == 0) | (mask == 1)).all():
        raise ValueError(f"{name} must be bool or hold only 0/1")
    return mask.detach() != 0


def hicra_advantages(
    advantages: Tensor, planning_mask: Tensor, *, alpha: float = 0.2, mask: Tensor | None = None
) -> Tensor:
    """HICRA's advantage: ``Â + α·|Â|`` on planning tokens, ``Â`` elsewhere (module docstring).

    Args:
        advantages: ``(B, T)`` per-token advantages ``Â``, or ``(B,)`` one per sequence (broadcast over ``T``).
        planning_mask: ``(B, T)`` bool or 0/1, true on planning tokens ``t ∈ S_i``; used as data (detached).
        alpha: ``α ≥ 0`` (paper: 0.2; 0 gives back ``Â``).
        mask: ``(B, T)`` bool or 0/1, true on real (non-padding) tokens; ``None``: every token is real. Padded
            positions may hold anything in ``advantages`` (NaN included) and come back as 0.

    Returns:
        ``(B, T)`` advantages in the dtype and device of ``advantages``.

    Raises:
        TypeError: if ``advantages`` or a mask is not a tensor.
        ValueError: for ``alpha`` negative or not finite, mismatched shapes, a mask that is not 0/1, non-floating
            or non-finite advantages at real tokens.
    """
    if not isinstance(advantages, Tensor):
        raise TypeError(f"advantages must be a torch.Tensor, got {type(advantages).__name__}")
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0 (paper: 0.2), got {alpha!r}")
    if not advantages.is_floating_point():
        raise ValueError(f"advantages must be a floating-point tensor, got {advantages.dtype}")
    if not isinstance(planning_mask, Tensor):
        raise TypeError(f"planning_mask must be a torch.Tensor, got {type(planning_mask).__name__}")
    if planning_mask.ndim != 2:
        raise ValueError(f"planning_mask must have shape (B, T), got {tuple(planning_mask.shape)}")
    shape = planning_mask.shape
    if advantages.ndim == 1 and advantages.shape[0] == shape[0]:
        advantages = advantages[:, None].expand(shape)  # (B, T): the outcome advantage on every token
    elif advantages.shape != shape:
        raise ValueError(
            f"advantages must have shape (B, T) = {tuple(shape)} (that of planning_mask) or (B,) = ({shape[0]},), "
            f"got {tuple(advantages.shape)}"
        )
    planning = _bool_mask(planning_mask, "planning_mask", shape).to(advantages.device)
    real = torch.ones_like(planning) if mask is None else _bool_mask(mask, "mask", shape).to(advantages.device)
    if not torch.isfinite(advantages[real]).all():
        raise ValueError("advantages must be finite at real tokens; check the rewards that produced them")
    adv = advantages.masked_fill(~real, 0.0)
    # Eq. (HICRA): Â' = Â + α·|Â| on planning tokens t ∈ S_i, Â elsewhere
    return torch.where(planning & real, adv + alpha * adv.abs(), adv)


def entropy_mask(entropy: Tensor, mask: Tensor, *, fraction: float) -> Tensor:
    """The tokens of highest policy entropy: the top ``fraction`` of the real tokens of the batch.

    The control arm of the paper's ablation ("high-entropy token" credit): the same HICRA transform applied to these
    tokens instead of the planning tokens; ``fraction`` is set to the planning mask's token coverage so that both
    arms amplify the same number of tokens. Ties at the cut are broken by position (earliest first).

    Args:
        entropy: ``(B, T)`` per-token entropy of the policy's next-token distribution (nats).
        mask: ``(B, T)`` bool or 0/1, true on real tokens.
        fraction: share of real tokens selected, in [0, 1] (rounded to the nearest count).

    Returns:
        ``(B, T)`` bool, true on the selected tokens (never on padding).

    Raises:
        ValueError: for mismatched shapes, ``fraction`` outside [0, 1], or non-finite entropies at real tokens.
    """
    if entropy.ndim != 2:
        raise ValueError(f"entropy must have shape (B, T), got {tuple(entropy.shape)}")
    real = _bool_mask(mask, "mask", entropy.shape)
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must lie in [0, 1], got {fraction}")
    values = entropy.detach()[real]
    if not torch.isfinite(values).all():
        raise ValueError("entropy must be finite at real tokens")
    k = round(fraction * values.numel())
    out = torch.zeros_like(real)
    if k == 0:
        return out
    # stable sort of −entropy: the k largest, earlier positions first among equals
    order = torch.sort(-values, stable=True).indices[:k]
    chosen = torch.zeros(values.numel(), dtype=torch.bool, device=entropy.device)
    chosen[order] = True
    out[real] = chosen
    return out
