"""Group Relative Policy Optimization (GRPO): the paper-agnostic core, written once for every paper that uses it.

Shao et al., 2024, "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models",
arXiv 2402.03300, §4.1 (GRPO). Users in this package: RLAF (per-sample log-probs of a one-shot SAT-solver
parameterisation); HICRA, Explore-on-Graph and GUI-Shift (per-token log-probs of sampled text) reuse it.

Implemented (equation numbers of the DeepSeekMath paper):

- the group-relative advantage of outcome supervision (§4.1.2): every sample of a group gets
  ``Â_i = (r_i − mean(r)) / std(r)``, the statistics taken over the group's ``G`` rewards;
- the clipped surrogate of Eq. (3): per token (or per sample) ``min(ρ·Â, clip(ρ, 1−ε, 1+ε)·Â)`` with the
  probability ratio ``ρ = π_θ / π_θ_old``;
- the KL penalty of Eq. (3), ``− β·D_KL(π_θ ‖ π_ref)``, with the unbiased per-token estimator of Eq. (4),
  ``D_KL = π_ref/π_θ − log(π_ref/π_θ) − 1`` (:func:`kl_k3`), or any other per-element KL the caller computes
  (RLAF uses the closed-form KL of its Bernoulli/log-normal policy, passed in as ``kl``);
- the loss ``−J_GRPO`` with Eq. (3)'s averaging, ``1/G Σ_i 1/|o_i| Σ_t`` ("sequence"), or one mean over all
  tokens of the batch ("token").

One GRPO iteration, as these functions are meant to be composed:

1. For each of ``Q`` prompts, sample ``G`` outputs from the current policy, kept as ``π_θ_old``; store their
   log-probs ``logp_old`` (and, if ``π_ref`` is not ``π_θ_old``, the reference log-probs).
2. Score every output (reward ``r``, shape ``(Q, G)``) and compute :func:`group_relative_advantages`.
3. For a few gradient steps, recompute ``logp`` under ``π_θ`` and minimise :func:`grpo_loss`.

Shape glossary:
    Q: groups (prompts, formulas); G: group size (samples per prompt); N: samples, ``N = Q·G`` once flattened
    (row-major: sample ``g`` of group ``q`` is row ``q·G + g``); T: tokens per sample (absent when a sample has a
    single log-prob).

Deviations: none from the equations. Choices the paper leaves open, with the default used here: the standard
deviation is the unbiased one (``ddof=1``; as ``torch.std`` and the RLAF code's ``pandas.std``), and ``eps=1e-8``
is added to it (RLAF code, ``src/training/grpo.py``). A group of identical rewards gets advantage exactly 0 (not
the float rounding error of its mean divided by ``eps``). Per-token inputs may hold anything (NaN, ``-inf``) at
masked positions: they are replaced before any arithmetic, so they reach neither the loss nor the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from iclr26.common.config import opt, require
from iclr26.common.distributed import World

__all__ = [
    "Parallel",
    "RolloutSeeds",
    "check_parallel",
    "parallel_field",
    "per_prompt_seeds",
    "rollout_seeds_field",
    "GRPOLoss",
    "SurrogateTerms",
    "clipped_surrogate",
    "group_relative_advantages",
    "grpo_loss",
    "kl_k3",
    "masked_mean",
]


def group_relative_advantages(
    rewards: Tensor, *, eps: float = 1e-8, scale: Literal["std", "none"] = "std", unbiased: bool = True
) -> Tensor:
    """The group-relative advantage of GRPO's outcome supervision (DeepSeekMath §4.1.2).

    Args:
        rewards: ``(Q, G)`` rewards, one row per group (higher is better; pass ``-cost`` for a cost).
        eps: added to the group standard deviation (RLAF's code: 1e-8). A group of identical rewards gets
            advantage exactly 0 whatever ``eps`` is.
        scale: ``"std"`` divides by the group standard deviation (the paper); ``"none"`` only centres.
        unbiased: use the unbiased (``ddof=1``) standard deviation.

    Returns:
        ``(Q, G)`` advantages in the dtype of ``rewards``.

    Raises:
        ValueError: if ``rewards`` is not a 2-D floating-point tensor, a group is too small for the unbiased
            standard deviation, a reward is not finite, or ``eps < 0``.
    """
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (groups, group_size), got {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        raise ValueError(f"rewards must be a floating-point tensor, got {rewards.dtype}; convert with rewards.double()")
    if scale not in ("std", "none"):
        raise ValueError(f"scale must be 'std' or 'none', got {scale!r}")
    if scale == "std" and unbiased and rewards.shape[1] < 2:
        raise ValueError("rewards: the unbiased group std needs group_size >= 2; sample more per group")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards must be finite; give failed samples a finite worst-case reward")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    # a group of identical rewards carries no signal: its advantage is exactly 0, not the rounding error of its mean
    # (e.g. float32 mean(0.1, ..., 0.1) ≠ 0.1) divided by a std of the same order
    identical = rewards.amax(dim=1, keepdim=True) == rewards.amin(dim=1, keepdim=True)  # (Q, 1)
    # §4.1.2: r̃_i = r_i − mean(r), the group mean as the baseline
    centred = torch.where(identical, 0.0, rewards - rewards.mean(dim=1, keepdim=True))
    if scale == "none":
        return centred
    # §4.1.2: Â_i = (r_i − mean(r)) / std(r); the denominator of an identical group is set to 1 (its r̃ is 0)
    std = rewards.std(dim=1, keepdim=True, correction=1 if unbiased else 0)
    return centred / torch.where(identical, 1.0, std + eps)


def kl_k3(logp: Tensor, logp_ref: Tensor) -> Tensor:
    """The unbiased, non-negative per-token KL estimator of DeepSeekMath Eq. (4).

    ``D_KL(π_θ ‖ π_ref) ≈ π_ref/π_θ − log(π_ref/π_θ) − 1`` evaluated at tokens sampled from ``π_θ``.

    Args:
        logp: log-probs under ``π_θ``, any shape.
        logp_ref: log-probs under ``π_ref``, the same shape.

    Returns:
        The estimate per element, the shape of ``logp``.

    Raises:
        ValueError: if the shapes differ.
    """
    if logp.shape != logp_ref.shape:
        raise ValueError(f"logp_ref must have the shape of logp {tuple(logp.shape)}, got {tuple(logp_ref.shape)}")
    # Eq. (4): log(π_ref/π_θ) = logp_ref − logp
    log_ratio = logp_ref - logp
    return torch.exp(log_ratio) - log_ratio - 1.0


@dataclass(frozen=True)
class SurrogateTerms:
    """Per-element pieces of the clipped surrogate.

    Attributes:
        objective: ``min(ρ·Â, clip(ρ, 1−ε, 1+ε)·Â)``, the shape of ``logp`` (to be maximised).
        ratio: ``ρ = exp(logp − logp_old)``.
        clipped: where the clipped branch is the active one (its gradient is zero there).
    """

    objective: Tensor
    ratio: Tensor
    clipped: Tensor


def clipped_surrogate(logp: Tensor, logp_old: Tensor, advantages: Tensor, *, clip_eps: float = 0.2) -> SurrogateTerms:
    """The clipped importance-weighted advantage of DeepSeekMath Eq. (3) (PPO's clip), per element.

    Args:
        logp: ``(N,)`` or ``(N, T)`` log-probs under the policy being optimised (carries the gradient).
        logp_old: log-probs under the sampling policy ``π_θ_old``, the shape of ``logp`` (no gradient needed).
        advantages: ``(N,)`` one advantage per sample, broadcast over ``T``; or the shape of ``logp``.
        clip_eps: the ratio clip ``ε`` (0.2 in PPO, DeepSeekMath and RLAF).

    Returns:
        :class:`SurrogateTerms`, every field the shape of ``logp``.

    Raises:
        ValueError: for mismatched shapes or ``clip_eps`` outside (0, 1).
    """
    if not 0.0 < clip_eps < 1.0:
        raise ValueError(f"clip_eps must be in (0, 1), got {clip_eps}")
    if logp_old.shape != logp.shape:
        raise ValueError(f"logp_old must have the shape of logp {tuple(logp.shape)}, got {tuple(logp_old.shape)}")
    adv = _broadcast_advantages(advantages, logp)
    # Eq. (3): ρ = π_θ(o) / π_θ_old(o)
    ratio = torch.exp(logp - logp_old.detach())
    unclipped = ratio * adv
    # Eq. (3): clip(ρ, 1 − ε, 1 + ε) · Â
    clipped_value = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    # Eq. (3): min(ρ·Â, clip(ρ)·Â)
    objective = torch.minimum(unclipped, clipped_value)
    return SurrogateTerms(objective=objective, ratio=ratio, clipped=clipped_value < unclipped)


def masked_mean(values: Tensor, mask: Tensor | None, dim: int | None = None) -> Tensor:
    """Mean of ``values`` over ``dim`` (all elements if ``None``) counting only where ``mask`` is true.

    Args:
        values: any shape.
        mask: bool or 0/1 tensor of the shape of ``values``, or ``None`` for a plain mean. Masked-out values are
            never used (a NaN there does not reach the result).
        dim: the dimension to reduce, or ``None`` for all.

    Returns:
        The reduced tensor; a row with no unmasked element gives 0 (not NaN).

    Raises:
        ValueError: if the mask's shape differs from the values' or it holds values other than 0/1.
    """
    if mask is None:
        return values.mean() if dim is None else values.mean(dim=dim)
    keep = _as_bool_mask(mask, values)
    kept = torch.where(keep, values, values.new_zeros(()))
    count = keep.to(values.dtype)
    total, count = (kept.sum(), count.sum()) if dim is None else (kept.sum(dim=dim), count.sum(dim=dim))
    return total / count.clamp_min(1.0)


def _as_bool_mask(mask: Tensor, like: Tensor) -> Tensor:
    if mask.shape != like.shape:
        raise ValueError(f"mask must have the shape of the values {tuple(like.shape)}, got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask
    if not ((mask == 0) | (mask == 1)).all():
        raise ValueError("mask must be bool or hold only 0/1 (1 = a real token); weighted masks are not supported")
    return mask != 0


@dataclass(frozen=True)
class GRPOLoss:
    """The GRPO loss and the diagnostics of one evaluation.

    Attributes:
        loss: scalar to minimise, ``−(surrogate − β·kl)``.
        surrogate: scalar mean clipped surrogate (the first term of Eq. (3)).
        kl: scalar mean KL term (0 when no KL was given).
        ratio_mean: mean probability ratio (1 at the first step after sampling), detached.
        clip_fraction: fraction of (unmasked) elements on the clipped branch, detached.
    """

    loss: Tensor
    surrogate: Tensor
    kl: Tensor
    ratio_mean: Tensor
    clip_fraction: Tensor


def grpo_loss(
    logp: Tensor,
    logp_old: Tensor,
    advantages: Tensor,
    *,
    mask: Tensor | None = None,
    kl: Tensor | None = None,
    beta: float = 0.0,
    clip_eps: float = 0.2,
    aggregation: Literal["sequence", "token"] = "sequence",
) -> GRPOLoss:
    """``−J_GRPO``, DeepSeekMath Eq. (3): clipped surrogate minus ``β`` times a KL to the reference policy.

    ``J = 1/G Σ_i 1/|o_i| Σ_t [min(ρ_{i,t}Â_{i,t}, clip(ρ_{i,t}, 1−ε, 1+ε)Â_{i,t}) − β·D_KL,{i,t}]``.

    Args:
        logp: ``(N,)`` per-sample or ``(N, T)`` per-token log-probs under ``π_θ`` (with gradient).
        logp_old: log-probs under the sampling policy, the shape of ``logp``.
        advantages: ``(N,)`` (e.g. ``group_relative_advantages(r).reshape(-1)``) or the shape of ``logp``.
        mask: ``(N, T)`` bool or 0/1, true on real tokens (``None``: all count). Only for per-token inputs.
            Whatever ``logp``, ``logp_old``, ``kl`` or per-token ``advantages`` hold at masked positions (NaN,
            ``-inf``) is ignored. A sample with no real token counts as 0 in the ``"sequence"`` mean.
        kl: per-element KL to the reference policy, the shape of ``logp`` (:func:`kl_k3`, or a closed form).
        beta: the KL coefficient ``β`` (needs ``kl`` when > 0).
        clip_eps: the ratio clip ``ε``.
        aggregation: ``"sequence"``: mean over each sample's tokens, then over samples (Eq. (3));
            ``"token"``: one mean over every token of the batch. Identical for per-sample log-probs.

    Returns:
        :class:`GRPOLoss`.

    Raises:
        ValueError: for mismatched shapes, a negative ``beta``, ``beta > 0`` without ``kl``, a mask on per-sample
            inputs or one that is not 0/1, or an unknown aggregation.
    """
    if logp.ndim not in (1, 2):
        raise ValueError(f"logp must have shape (N,) or (N, T), got {tuple(logp.shape)}")
    if logp_old.shape != logp.shape:
        raise ValueError(f"logp_old must have the shape of logp {tuple(logp.shape)}, got {tuple(logp_old.shape)}")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if beta > 0 and kl is None:
        raise ValueError("beta > 0 needs kl (per-element KL to the reference policy, e.g. kl_k3(logp, logp_ref))")
    if kl is not None and kl.shape != logp.shape:
        raise ValueError(f"kl must have the shape of logp {tuple(logp.shape)}, got {tuple(kl.shape)}")
    if mask is not None and logp.ndim == 1:
        raise ValueError("mask is for per-token log-probs (N, T); per-sample log-probs take no mask")
    if aggregation not in ("sequence", "token"):
        raise ValueError(f"aggregation must be 'sequence' or 'token', got {aggregation!r}")
    if mask is not None:
        # padded positions may hold NaN or -inf: replace them before exp() so that neither the loss nor the
        # gradient sees them (a NaN multiplied by a zero weight would still be NaN)
        keep = _as_bool_mask(mask, logp)
        logp, logp_old = logp.masked_fill(~keep, 0.0), logp_old.masked_fill(~keep, 0.0)
        kl = None if kl is None else kl.masked_fill(~keep, 0.0)
        if advantages.shape == logp.shape:
            advantages = advantages.masked_fill(~keep, 0.0)
        mask = keep
    terms = clipped_surrogate(logp, logp_old, advantages, clip_eps=clip_eps)
    kl_values = torch.zeros_like(terms.objective) if kl is None else kl
    # Eq. (3): per-element objective min(...) − β·D_KL
    per_element = terms.objective - beta * kl_values

    def reduce(values: Tensor) -> Tensor:
        if values.ndim == 1 or aggregation == "token":
            return masked_mean(values, mask)
        # Eq. (3): 1/G Σ_i 1/|o_i| Σ_t
        return masked_mean(values, mask, dim=1).mean()

    with torch.no_grad():
        ratio_mean = reduce(terms.ratio)
        clip_fraction = reduce(terms.clipped.to(logp.dtype))
    return GRPOLoss(
        loss=-reduce(per_element),
        surrogate=reduce(terms.objective),
        kl=reduce(kl_values),
        ratio_mean=ratio_mean,
        clip_fraction=clip_fraction,
    )


def _broadcast_advantages(advantages: Tensor, logp: Tensor) -> Tensor:
    if advantages.shape == logp.shape:
        return advantages.detach()
    if advantages.ndim == 1 and advantages.shape[0] == logp.shape[0]:
        return advantages.detach().reshape(-1, *([1] * (logp.ndim - 1)))
    raise ValueError(
        f"advantages must have shape (N,) = ({logp.shape[0]},) or the shape of logp {tuple(logp.shape)}, "
        f"got {tuple(advantages.shape)}"
    )


def per_prompt_seeds(rollout_seeds: str, world: World) -> bool:
    """Whether a GRPO trainer samples each prompt's group from a seed of its own (config field ``rollout_seeds``).

    ``"batch"``: one sampling stream per step (the one-process default of the papers' trainers); ``"prompt"``: one
    seed per prompt, so a prompt's completions do not depend on which rank draws them; ``"auto"``: ``prompt`` under
    torchrun, ``batch`` otherwise.

    Raises:
        ConfigError: naming ``rollout_seeds`` for ``"batch"`` in a world of several ranks (one stream cannot be
            sharded).
    """
    require(
        not (rollout_seeds == "batch" and world.is_distributed),
        "rollout_seeds",
        f"batch (one sampling stream per step) cannot be split over {world.size} ranks; use prompt or auto",
    )
    return rollout_seeds == "prompt" or (rollout_seeds == "auto" and world.is_distributed)


#: How a GRPO step's completions are seeded (config field ``rollout_seeds``, :func:`per_prompt_seeds`).
RolloutSeeds = Literal["auto", "batch", "prompt"]
#: How the gradients of a GRPO step are averaged over the ranks (config field ``parallel``).
Parallel = Literal["ddp", "fsdp"]


def rollout_seeds_field() -> Any:
    """The config field ``rollout_seeds`` of a GRPO reproduction with a torchrun path (one help text for all)."""
    return opt(
        "auto",
        "RL sampling streams: batch = one stream for a step's whole batch (the one-process record); prompt = one "
        "seed per prompt, so a prompt's samples do not depend on the ranks (torchrun needs it); auto = batch in one "
        "process, prompt under torchrun",
    )


def parallel_field() -> Any:
    """The config field ``parallel`` of a GRPO reproduction with a torchrun path (one help text for all)."""
    return opt(
        "ddp",
        "gradient averaging of the RL steps under torchrun: ddp, or fsdp (FSDP2 shards the pretrained LM's weights, "
        "the adapters' gradients and optimizer state; backend=smollm2 only); unused in one process",
    )


def check_parallel(parallel: str, backend: str) -> None:
    """The cross-field check of ``parallel``: FSDP shards a pretrained LM, so it needs ``backend="smollm2"``.

    Raises:
        ConfigError: naming ``parallel`` for ``fsdp`` with another backend.
    """
    require(
        parallel == "ddp" or backend == "smollm2",
        "parallel",
        "fsdp shards the pretrained LM: it needs backend=smollm2 (the tiny LM uses ddp)",
    )
