"""LAMIR's losses and the base agent's policy-gradient targets, as pure tensor functions.

LAMIR (Kubíček & Lisý, ICLR 2026, arXiv 2510.05048):

* soft clustering (abstraction, and the same loss for the policy transformations)
  ``L^A = Σ_t Σ_l ‖c_l − κ(s^t)‖² · softmax_l(−γ ‖c_l − κ(s^t)‖²)`` with centroids ``c_l = κ_θ(Λ_i(s_0^t))_l``;
* assignment ``L^S = CE(Λ^I_i(s^t), argmin_l ‖sg(c_l) − κ(s^t)‖²)`` (stop-gradient on the target);
* policy transformation ``π^χ = normalize(clip(π + χ))``.

Base agent: NeuRD (Hennes et al. 2020) with RNaD's reward regularisation (Perolat et al. 2021/2022) and V-trace
targets (Espeholt et al. 2018), for simultaneous-move games (both players act at every step).

Glossary: ``B`` batch, ``H`` steps, ``L`` capacity, ``K`` attribute width, ``A`` actions, ``T`` transformations.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ClusteringLoss:
    """Soft-clustering loss and the hard assignment it implies.

    Attributes:
        loss: scalar ``L^A`` averaged over the batch.
        nearest: ``(B,)`` index of the nearest centroid (the target of ``L^S``).
        sq_dist: ``(B, L)`` squared distances (detached).
    """

    loss: torch.Tensor
    nearest: torch.Tensor
    sq_dist: torch.Tensor


def soft_clustering_loss(
    centroids: torch.Tensor, points: torch.Tensor, *, gamma: float, weights: torch.Tensor | None = None
) -> ClusteringLoss:
    """``L^A``: fuzzy (soft) k-means loss of points against per-sample centroids.

    The responsibilities ``softmax_l(−γ d_l)`` are treated as constants (an EM step of soft k-means): each centroid
    moves toward the points it is responsible for; no gradient pushes far centroids away.

    Args:
        centroids: ``(B, L, K)`` the ``L`` centroids available to each point (its public state's abstraction).
        points: ``(B, K)`` the attribute vectors ``κ(s)``.
        gamma: softness ``γ > 0`` (large γ → hard k-means).
        weights: optional ``(B,)`` non-negative sample weights (e.g. a validity mask).

    Returns:
        The loss, the nearest centroid of each point and the squared distances.

    Raises:
        ValueError: on mismatched shapes or ``gamma <= 0``.
    """
    if centroids.dim() != 3 or points.dim() != 2 or centroids.shape[::2] != points.shape:
        raise ValueError(f"centroids must be (B, L, K) and points (B, K); got {centroids.shape}, {points.shape}")
    if gamma <= 0:
        raise ValueError(f"gamma must be positive, got {gamma}")
    # d_l = ‖c_l − κ(s)‖²   (B, L)
    sq = (centroids - points.unsqueeze(1)).pow(2).sum(-1)
    # Eq. L^A: Σ_l d_l · softmax_l(−γ d_l), responsibilities held constant
    resp = torch.softmax(-gamma * sq.detach(), dim=-1)
    per_sample = (sq * resp).sum(-1)
    if weights is None:
        loss = per_sample.mean()
    else:
        loss = (per_sample * weights).sum() / weights.sum().clamp_min(1.0)
    return ClusteringLoss(loss=loss, nearest=sq.detach().argmin(-1), sq_dist=sq.detach())


def assignment_loss(
    logits: torch.Tensor, nearest: torch.Tensor, *, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """``L^S``: cross-entropy of Λ^I's logits ``(B, L)`` toward the nearest centroid ``(B,)`` (a constant target)."""
    ce = torch.nn.functional.cross_entropy(logits, nearest.detach(), reduction="none")
    if weights is None:
        return ce.mean()
    return (ce * weights).sum() / weights.sum().clamp_min(1.0)


def transform_policy(policy: torch.Tensor, chi: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``π^χ = normalize(clip(π + χ, 0, 1))`` over the legal actions.

    Args:
        policy: ``(..., A)`` a distribution over legal actions.
        chi: ``(..., T, A)`` transformations (summing to zero over legal actions, so the clipped mass is ≥ 1).
        legal: ``(..., A)`` bool.

    Returns:
        ``(..., T, A)`` the transformed policies.

    Raises:
        ValueError: if a transformed policy has no mass (χ does not sum to zero over the legal actions).
    """
    mask = legal.unsqueeze(-2).to(policy.dtype)
    shifted = (policy.unsqueeze(-2) + chi).clamp(0.0, 1.0) * mask
    total = shifted.sum(-1, keepdim=True)
    if (total <= 0).any():
        raise ValueError("a transformed policy has no mass on legal actions; χ must sum to zero over them")
    return shifted / total


def direction_targets(delta: torch.Tensor, *, scale: float, eps: float = 1e-12) -> torch.Tensor:
    """Targets for τ_θ's clustering: policy changes ``δ = π_new − π_old`` rescaled to L1 norm ``scale``.

    One gradient step changes the policy by O(learning rate); the rescaling keeps the direction of each change and
    gives the transformations a size at which they matter in search (see the README's Deviations).
    """
    return scale * delta / delta.abs().sum(-1, keepdim=True).clamp_min(eps)


def vtrace_targets(
    values: torch.Tensor,
    rewards: torch.Tensor,
    ratios: torch.Tensor,
    valid: torch.Tensor,
    *,
    rho_bar: float,
    c_bar: float,
) -> torch.Tensor:
    """V-trace targets (Espeholt et al. 2018, Eq. 1) with λ = 1 and no discount, for episodes padded to ``H``.

    ``v_s = V(x_s) + δ_s + c_s (v_{s+1} − V(x_{s+1}))``, ``δ_s = ρ_s (r_s + V(x_{s+1}) − V(x_s))``, where
    ``ρ_s = min(ρ̄, π/μ)`` and ``c_s = min(c̄, π/μ)``; the value after the last valid step is 0.

    Args:
        values: ``(H, B, ...)`` value estimates ``V(x_s)`` (any trailing shape, e.g. ``T × T`` pairs).
        rewards: ``(H, B, ...)`` rewards of the step ``s → s+1``.
        ratios: ``(H, B, ...)`` importance ratios ``π(a_s|x_s) / μ(a_s|x_s)``.
        valid: ``(H, B)`` bool, true for steps inside the episode.
        rho_bar: truncation of ``ρ``.
        c_bar: truncation of the trace ``c``.

    Returns:
        ``(H, B, ...)`` the targets (0 on invalid steps), detached.
    """
    values = values.detach()
    mask = valid.to(values.dtype).view(*valid.shape, *([1] * (values.dim() - 2)))
    rho = ratios.clamp(max=rho_bar) * mask
    c = ratios.clamp(max=c_bar) * mask
    out = torch.zeros_like(values)
    next_value = torch.zeros_like(values[0])
    next_target = torch.zeros_like(values[0])
    for s in range(values.shape[0] - 1, -1, -1):
        v = values[s] * mask[s]
        # V-trace (Espeholt et al., Eq. 1): δ_s = ρ_s (r_s + V(x_{s+1}) − V(x_s)), undiscounted
        delta = rho[s] * (rewards[s] + next_value - v)
        # v_s = V(x_s) + δ_s + c_s (v_{s+1} − V(x_{s+1})), the recursion run backward from the episode end
        target = v + delta + c[s] * (next_target - next_value)
        out[s] = target * mask[s]
        next_value, next_target = v, out[s]
    return out


def neurd_loss(
    logits: torch.Tensor,
    policy: torch.Tensor,
    q_values: torch.Tensor,
    legal: torch.Tensor,
    *,
    threshold: float,
    clip: float,
) -> torch.Tensor:
    """NeuRD (Hennes et al. 2020) loss per sample: ``−Σ_a y_a · sg(Q(a) − Σ_b π(b) Q(b))`` on legal actions.

    Logits ``y`` are centred over legal actions; a logit already beyond ``±threshold`` gets no further push in the
    same direction (the thresholding of RNaD's implementation).

    Args:
        logits: ``(B, A)``.
        policy: ``(B, A)`` softmax of the logits (treated as constant).
        q_values: ``(B, A)`` action-value estimates (treated as constant).
        legal: ``(B, A)`` bool.
        threshold: logit threshold β.
        clip: advantages are clipped to ``[−clip, clip]``.

    Returns:
        ``(B,)`` losses to be averaged by the caller.
    """
    mask = legal.to(logits.dtype)
    safe_logits = torch.where(legal, logits, torch.zeros_like(logits))
    centred = safe_logits - (safe_logits * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)
    q = torch.where(legal, q_values, torch.zeros_like(q_values)).detach()
    # NeuRD's advantage Q(a) − Σ_b π(b) Q(b), a constant with respect to the logits
    advantage = (q - (policy.detach() * q).sum(-1, keepdim=True)).clamp(-clip, clip)
    can_move = ((centred < threshold) & (advantage > 0)) | ((centred > -threshold) & (advantage < 0))
    force = advantage * can_move.to(advantage.dtype) * mask
    # gradient −advantage on the centred logits, with no π(a) factor (NeuRD, unlike the softmax policy gradient)
    return -(centred * force).sum(-1)
