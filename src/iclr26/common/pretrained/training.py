"""Training steps on a pretrained causal LM (usually with LoRA adapters): SFT, DPO and GRPO, one function each.

Each step accumulates micro-batches whose losses are weighted by their share of the batch, so its update does not
depend on ``micro_batch_size``; then it clips the gradient norm, steps the optimizer and zeroes the gradients. The
same function serves one process and data parallelism: after :func:`~iclr26.common.pretrained.distribute` every rank
passes its shard of the global batch, and the step meets the other ranks only through
:mod:`iclr26.common.pretrained.parallel` (global counts, the world-size factor on the loss, the reported sums).

- :func:`sft_step`: ``L = −Σ_t log π_θ(c_t | p, c_<t) / #tokens`` over the batch.
- :func:`dpo_step`: Rafailov et al., NeurIPS 2023, "Direct Preference Optimization", Eq. (7), on summed response
  log-probabilities against precomputed reference log-probabilities.
- :func:`grpo_step`: DeepSeekMath (Shao et al., 2024) Eq. (3) on a :class:`~iclr26.common.pretrained.Rollout`,
  through :func:`iclr26.common.grpo.grpo_loss`.

Shape glossary: ``N`` sequences (for GRPO ``N = Q·G``, row-major), ``T`` completion tokens, ``M`` preference pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from iclr26.common.grpo import group_relative_advantages, grpo_loss, kl_k3
from iclr26.common.pretrained.model import PretrainedLM, Prompt
from iclr26.common.pretrained.parallel import (
    backward_scale,
    clip_gradients,
    global_mean,
    global_sums,
    require_full_shard,
    training_model,
)
from iclr26.common.pretrained.rollout import Rollout
from iclr26.common.pretrained.scoring import completion_token_logprobs

__all__ = [
    "DPOLoss",
    "DPOStepResult",
    "GRPOStepResult",
    "StepResult",
    "dpo_loss",
    "dpo_step",
    "grpo_step",
    "sft_step",
]


def _micro_batches(n: int, size: int) -> list[slice]:
    """Consecutive slices of ``size`` rows (the last one shorter) covering ``range(n)``."""
    if size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {size}")
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


# ------------------------------------------------------------------------------------------------ SFT
@dataclass(frozen=True)
class StepResult:
    """One supervised step.

    Attributes:
        loss: mean negative log-likelihood per completion token, before the update.
        n_tokens: completion tokens in the batch.
        grad_norm: gradient norm before clipping.
    """

    loss: float
    n_tokens: int
    grad_norm: float


def sft_step(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    prompts: Sequence[Prompt],
    completions: Sequence[str],
    *,
    chat: bool = True,
    add_eos: bool = True,
    micro_batch_size: int = 8,
    max_grad_norm: float | None = 1.0,
) -> StepResult:
    """One supervised fine-tuning step: minimise ``−Σ log π(c_t | p, c_<t) / #tokens`` over the batch.

    Args:
        lm: the model (usually with LoRA adapters).
        optimizer: over ``lm``'s trainable parameters.
        prompts: ``N`` prompts (this rank's shard after :func:`~iclr26.common.pretrained.distribute`).
        completions: ``N`` target replies.
        chat: apply the chat template to the prompts.
        add_eos: train the end-of-turn token after each reply.
        micro_batch_size: sequences per forward/backward pass.
        max_grad_norm: clip the gradient norm to this (``None``: no clipping).

    Returns:
        :class:`StepResult` of the (global) batch.

    Raises:
        ValueError: if the completions hold no token, or (data parallel) a rank's micro-batch holds none.
    """
    params = lm.trainable_parameters()
    prompt_ids = lm.encode_prompts(prompts, chat=chat)
    completion_ids = lm.encode_completions(completions, add_eos=add_eos)
    batches = _micro_batches(len(prompt_ids), micro_batch_size)
    (total,) = global_sums(lm, [sum(len(c) for c in completion_ids)])
    if total == 0:
        raise ValueError("completions hold no tokens; nothing to train on")
    require_full_shard(lm, [sum(len(c) for c in completion_ids[rows]) for rows in batches])
    model, scale = training_model(lm), backward_scale(lm)
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for rows in batches:
        scored = completion_token_logprobs(
            model,
            prompt_ids[rows],
            completion_ids[rows],
            pad_token_id=lm.pad_token_id,
            micro_batch_size=micro_batch_size,
        )
        if not scored.mask.any():  # a micro-batch of empty completions adds nothing
            continue
        nll = -(scored.logprobs * scored.mask).sum() / total  # this micro-batch's part of the mean over tokens
        (nll * scale).backward()
        loss_sum += float(nll.detach())
    (loss,) = global_sums(lm, [loss_sum])
    grad_norm = clip_gradients(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return StepResult(loss=loss, n_tokens=int(total), grad_norm=grad_norm)


# ------------------------------------------------------------------------------------------------ DPO
@dataclass(frozen=True)
class DPOLoss:
    """The DPO loss and its diagnostics over ``M`` pairs.

    Attributes:
        loss: scalar mean ``−log σ(β Δ)`` (carries the gradient).
        margins: ``(M,)`` ``Δ = (log π_θ(y_w) − log π_ref(y_w)) − (log π_θ(y_l) − log π_ref(y_l))``, detached.
        accuracy: share of pairs with ``Δ > 0``.
    """

    loss: Tensor
    margins: Tensor
    accuracy: float


def dpo_loss(
    policy_chosen: Tensor, policy_rejected: Tensor, ref_chosen: Tensor, ref_rejected: Tensor, *, beta: float = 0.1
) -> DPOLoss:
    """The sigmoid DPO loss (Rafailov et al., 2023, Eq. (7)) on summed response log-probabilities, each ``(M,)``.

    Raises:
        ValueError: for ``beta <= 0`` or inputs of different shapes.
    """
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    shapes = {tuple(t.shape) for t in (policy_chosen, policy_rejected, ref_chosen, ref_rejected)}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        raise ValueError(f"the four log-probability tensors must share one (M,) shape, got {sorted(shapes)}")
    # Δ = (log π_θ(y_w|x) − log π_ref(y_w|x)) − (log π_θ(y_l|x) − log π_ref(y_l|x))
    margins = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)  # (M,)
    # Eq. (7): L = −log σ(β Δ), averaged over pairs
    loss = -torch.nn.functional.logsigmoid(beta * margins).mean()
    return DPOLoss(loss=loss, margins=margins.detach(), accuracy=float((margins > 0).float().mean()))


@dataclass(frozen=True)
class DPOStepResult:
    """One DPO step, over the (global) batch, before the update.

    Attributes:
        loss: mean ``−log σ(β Δ)``.
        margin: mean ``Δ``.
        accuracy: share of pairs with ``Δ > 0``.
        grad_norm: gradient norm before clipping.
        n_pairs: pairs in the batch.
    """

    loss: float
    margin: float
    accuracy: float
    grad_norm: float
    n_pairs: int


def dpo_step(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    prompts: Sequence[Prompt],
    chosen: Sequence[str],
    rejected: Sequence[str],
    ref_chosen: Tensor,
    ref_rejected: Tensor,
    *,
    beta: float = 0.1,
    chat: bool = True,
    add_eos: bool = True,
    micro_batch_size: int = 4,
    max_grad_norm: float | None = 1.0,
) -> DPOStepResult:
    """One DPO step on ``M`` preference pairs (Rafailov et al., 2023, Eq. (7)).

    Per micro-batch of pairs, the chosen and rejected responses are scored in one forward pass (summed
    log-probabilities, :func:`~iclr26.common.pretrained.completion_token_logprobs`) and the mean loss is
    backpropagated weighted by the micro-batch's share of the pairs.

    Args:
        lm: the policy (usually with LoRA adapters).
        optimizer: over its trainable parameters.
        prompts: ``M`` prompts (this rank's shard after :func:`~iclr26.common.pretrained.distribute`).
        chosen: ``M`` preferred responses ``y_w``.
        rejected: ``M`` dispreferred responses ``y_l``.
        ref_chosen: ``(M,)`` summed ``log π_ref(y_w | x)``, tokenised as here (e.g. ``lm.sequence_logprobs`` with
            the same ``chat``/``add_eos`` inside :func:`~iclr26.common.pretrained.adapters_disabled`).
        ref_rejected: ``(M,)`` summed ``log π_ref(y_l | x)``.
        beta: ``β``.
        chat: apply the chat template to the prompts.
        add_eos: score the end-of-turn token after each response.
        micro_batch_size: pairs per forward/backward pass.
        max_grad_norm: clip the gradient norm to this (``None``: no clipping).

    Returns:
        :class:`DPOStepResult`.

    Raises:
        ValueError: for lists of different lengths, an empty batch, or ``beta <= 0``.
    """
    params = lm.trainable_parameters()
    n = len(prompts)
    if not len(chosen) == len(rejected) == len(ref_chosen) == len(ref_rejected) == n:
        raise ValueError(
            f"prompts ({n}), chosen ({len(chosen)}), rejected ({len(rejected)}), ref_chosen ({len(ref_chosen)}) "
            f"and ref_rejected ({len(ref_rejected)}) must pair up"
        )
    batches = _micro_batches(n, micro_batch_size)
    (n_global,) = global_sums(lm, [n])
    if n_global == 0:
        raise ValueError("no preference pairs; nothing to train on")
    require_full_shard(lm, [rows.stop - rows.start for rows in batches])
    model, scale = training_model(lm), backward_scale(lm)
    optimizer.zero_grad(set_to_none=True)
    loss_sum, margins = 0.0, []
    for rows in batches:
        k = rows.stop - rows.start
        prompt_ids = lm.encode_prompts(prompts[rows], chat=chat)
        responses = lm.encode_completions([*chosen[rows], *rejected[rows]], add_eos=add_eos)
        scored = completion_token_logprobs(
            model, prompt_ids + prompt_ids, responses, pad_token_id=lm.pad_token_id, micro_batch_size=2 * k
        ).total  # (2k,): chosen rows first
        device = scored.device
        out = dpo_loss(scored[:k], scored[k:], ref_chosen[rows].to(device), ref_rejected[rows].to(device), beta=beta)
        # the micro-batch's share of the (global) batch of pairs
        (out.loss * k / n_global * scale).backward()
        loss_sum += float(out.loss.detach()) * k / n_global
        margins.append(out.margins)
    (loss,) = global_sums(lm, [loss_sum])
    m = torch.cat(margins)
    margin, accuracy = global_mean(lm, m), global_mean(lm, (m > 0).float())
    grad_norm = clip_gradients(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return DPOStepResult(loss=loss, margin=margin, accuracy=accuracy, grad_norm=grad_norm, n_pairs=int(n_global))


# ------------------------------------------------------------------------------------------------ GRPO
@dataclass(frozen=True)
class GRPOStepResult:
    """One GRPO gradient step (the fields of :class:`iclr26.common.grpo.GRPOLoss` as floats, over the batch).

    Attributes:
        loss: ``−J_GRPO`` before the update.
        surrogate: mean clipped surrogate.
        kl: mean KL term (0 without a reference).
        ratio_mean: mean probability ratio ``π_θ / π_θ_old`` (1 on the first step after sampling).
        clip_fraction: share of tokens on the clipped branch.
        grad_norm: gradient norm before clipping.
        n_tokens: completion tokens in the batch.
    """

    loss: float
    surrogate: float
    kl: float
    ratio_mean: float
    clip_fraction: float
    grad_norm: float
    n_tokens: int


_GRPO_TERMS = ("loss", "surrogate", "kl", "ratio_mean", "clip_fraction")


def grpo_step(
    lm: PretrainedLM,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    *,
    rewards: Tensor | None = None,
    advantages: Tensor | None = None,
    beta: float = 0.0,
    clip_eps: float = 0.2,
    aggregation: Literal["sequence", "token"] = "sequence",
    micro_batch_size: int = 8,
    max_grad_norm: float | None = 1.0,
) -> GRPOStepResult:
    """Step 3 of a GRPO iteration (DeepSeekMath Eq. (3)) on a causal LM, built on :func:`iclr26.common.grpo.grpo_loss`.

    1. Advantages: from ``rewards`` ``(Q, G)`` by :func:`group_relative_advantages`, or given (``(N,)`` per
       sample, or ``(N, T)`` per token, e.g. a paper's reshaped advantage).
    2. Per micro-batch: recompute per-token ``logp`` under ``π_θ`` (prompt and padding masked), the k3 KL to
       ``logp_ref`` if ``beta > 0``, and ``grpo_loss``; backpropagate it weighted by the micro-batch's share
       (samples for ``"sequence"``, tokens for ``"token"``), so the gradient equals the full-batch one.
    3. Clip the gradient norm, step the optimizer, zero the gradients.

    Call it several times on one rollout for several updates per sample (``logp_old`` stays fixed). After
    :func:`~iclr26.common.pretrained.distribute` every rank passes the rollout of its shard of the prompts (whole
    groups).

    Args:
        lm: the policy (usually with LoRA adapters).
        optimizer: over its trainable parameters.
        rollout: from :func:`~iclr26.common.pretrained.sample_rollout` or ``score_rollout``.
        rewards: ``(Q, G)`` or ``(N,)`` rewards (exactly one of ``rewards``/``advantages``).
        advantages: ``(N,)`` or ``(N, T)``.
        beta: KL coefficient (needs ``rollout.logp_ref``).
        clip_eps: ratio clip ``ε``.
        aggregation: ``"sequence"`` (Eq. (3)) or ``"token"``, as :func:`grpo_loss`.
        micro_batch_size: sequences per forward/backward pass.
        max_grad_norm: gradient clipping (``None``: none).

    Returns:
        :class:`GRPOStepResult`.

    Raises:
        ValueError: for both or neither of ``rewards``/``advantages``, wrong shapes, or ``beta > 0`` without a
            reference.
    """
    params = lm.trainable_parameters()
    n, width = rollout.mask.shape
    if (rewards is None) == (advantages is None):
        raise ValueError("pass exactly one of rewards (Q, G) and advantages (N,) or (N, T)")
    if rewards is not None:
        advantages = group_relative_advantages(rewards.reshape(-1, rollout.group_size).float()).reshape(-1)
    assert advantages is not None
    if advantages.shape not in ((n,), (n, width)):
        raise ValueError(f"advantages must have shape ({n},) or ({n}, {width}), got {tuple(advantages.shape)}")
    if beta > 0 and rollout.logp_ref is None:
        raise ValueError("beta > 0 needs rollout.logp_ref; sample with reference='base' or a reference model")
    device = lm.device
    advantages, mask = advantages.to(device), rollout.mask.to(device)
    batches = _micro_batches(n, micro_batch_size)
    n_global, tokens_global = global_sums(lm, [n, int(mask.sum())])
    require_full_shard(lm, [sum(len(c) for c in rollout.completion_ids[rows]) for rows in batches])
    model, scale = training_model(lm), backward_scale(lm)
    sums = dict.fromkeys(_GRPO_TERMS, 0.0)
    optimizer.zero_grad(set_to_none=True)
    for rows in batches:
        terms, m = _micro_batch_terms(model, lm.pad_token_id, rollout, rows, mask, advantages, beta, clip_eps,
                                      aggregation, micro_batch_size)  # fmt: skip
        # the micro-batch's share of the (global) batch: samples (Eq. (3)) or tokens
        if aggregation == "sequence":
            weight = (rows.stop - rows.start) / n_global
        else:
            weight = float(m.sum()) / max(tokens_global, 1)
        if terms.loss.requires_grad:  # False only for a micro-batch of empty completions (loss 0)
            (weight * scale * terms.loss).backward()
        for name in sums:
            sums[name] += weight * float(getattr(terms, name).detach())
    reduced = global_sums(lm, [sums[name] for name in _GRPO_TERMS])
    grad_norm = clip_gradients(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return GRPOStepResult(
        **dict(zip(_GRPO_TERMS, reduced, strict=True)), grad_norm=grad_norm, n_tokens=int(tokens_global)
    )


def _micro_batch_terms(
    model: nn.Module,
    pad_token_id: int,
    rollout: Rollout,
    rows: slice,
    mask: Tensor,
    advantages: Tensor,
    beta: float,
    clip_eps: float,
    aggregation: str,
    micro_batch_size: int,
) -> tuple[Any, Tensor]:
    """The GRPO loss terms (:func:`iclr26.common.grpo.grpo_loss`) of the micro-batch ``rows`` of ``rollout`` under
    ``model``, and its completion mask (trimmed to the micro-batch's longest completion)."""
    device = mask.device
    scored = completion_token_logprobs(
        model,
        rollout.prompt_ids[rows],
        rollout.completion_ids[rows],
        pad_token_id=pad_token_id,
        micro_batch_size=micro_batch_size,
    )
    t_mb = scored.logprobs.shape[1]
    logp, m = scored.logprobs, mask[rows, :t_mb]
    logp_old = rollout.logp_old[rows, :t_mb].to(device)
    adv = advantages[rows] if advantages.ndim == 1 else advantages[rows, :t_mb]
    kl = kl_k3(logp, rollout.logp_ref[rows, :t_mb].to(device)) if beta > 0 else None
    terms = grpo_loss(logp, logp_old, adv, mask=m, kl=kl, beta=beta, clip_eps=clip_eps, aggregation=aggregation)
    return terms, m
