"""GUI-Shift training: GRPO with the rule reward on K-step transitions, the data filter, and the SFT baseline.

GUI-Shift, ICLR 2026, arXiv 2505.12493, §4. GRPO is :mod:`iclr26.common.grpo` (DeepSeekMath Eq. (3)); one GRPO
step here:

1. draw ``Q`` items; one forward pass gives the policy's action distribution for each; sample ``G`` actions per item
   (the paper: 8 generations per prompt, official launch script ``--num_generations 8``);
2. score each action with ``R = R_format + R_action`` (:mod:`iclr26.guishift.reward`) against the item's ground
   truth (``R_format`` is 1 for every action of this policy: it always writes a well-formed answer);
3. group-relative advantages ``Â = (r − mean) / std`` per item (:func:`~iclr26.common.grpo.group_relative_advantages`);
4. minimise ``−J_GRPO`` (:func:`~iclr26.common.grpo.grpo_loss`) with per-action log-probs, ``π_θ_old = π_θ``
   (one update per batch, as VLM-R1's default ``num_iterations = 1``) and ``β · D_KL`` to the frozen starting policy
   (:func:`~iclr26.common.grpo.kl_k3`).

The data filter (§4.2 of the paper; [unverified] in the project notes: the v2 code is not public): sample ``G``
actions per candidate item from the starting policy and keep the items whose group is *partly* right,
``0 < #correct < G`` (:func:`mixed_groups`); a group all right or all wrong has zero advantage everywhere and teaches
GRPO nothing.

The SFT baseline trains the same policy by cross-entropy on the exact action (the cell of the explorer's click
point, not its box).

Parallelism is applied in one place: :func:`grpo_step` and :func:`sft_step` take the run's ``world``
(:class:`~iclr26.common.distributed.World`) and ``model``, the policy as its ranks train it
(``data_parallel(HeadSelect(policy), world)``: DistributedDataParallel under torchrun, the module itself in one
process). Every rank holds the same global batch of ``Q`` items (drawn alike from the shared seed); for GRPO every
rank samples the whole batch's ``G`` actions per item from one forward pass without gradient and the shared
generator (so the actions, rewards and advantages are the one-process ones), then runs the gradient forward through
``model`` on its contiguous shard of the items (:func:`~iclr26.common.distributed.shard_range`, whole groups) and
backpropagates its shard's loss times ``world size ×`` its share of the batch, so DDP's gradient average is the full
batch's gradient; the reported loss is summed over the ranks (:func:`~iclr26.common.distributed.all_reduce_sum`).
With one process the shard is the whole batch and the step is the plain one.

Every tensor is made on the policy's device (its parameters'), so a policy moved to a GPU trains there; the
sampling generator must live on that device too.

Shape glossary: ``Q`` items per batch, ``G`` samples per item, ``N = Q·G``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, shard_range
from iclr26.common.grpo import group_relative_advantages, grpo_loss, kl_k3
from iclr26.guishift.data import TransitionSet
from iclr26.guishift.env import ACTION_TYPES
from iclr26.guishift.policy import (
    ActionDist,
    GUIPolicy,
    SampledActions,
    decode_actions,
    encode_label,
    screens_to_tensor,
)
from iclr26.guishift.reward import best_action_reward

__all__ = [
    "GRPOSettings",
    "HeadSelect",
    "StepStats",
    "evaluate",
    "grpo_shard_loss",
    "grpo_step",
    "mixed_groups",
    "sample_rewards",
    "sft_shard_loss",
    "sft_step",
]


@dataclass(frozen=True)
class GRPOSettings:
    """GRPO hyperparameters (defaults: official launch script and VLM-R1/TRL defaults, see the experiment config).

    Attributes:
        group_size: ``G``, samples per item.
        beta: KL coefficient ``β``.
        clip_eps: ratio clip ``ε``.
    """

    group_size: int = 8
    beta: float = 0.04
    clip_eps: float = 0.2


@dataclass(frozen=True)
class StepStats:
    """Diagnostics of one training step: loss, mean reward (GRPO; NaN for SFT), and the share of groups with a
    non-zero advantage (GRPO; NaN for SFT)."""

    loss: float
    reward: float
    informative: float


def _device(policy: nn.Module) -> torch.device:
    return next(policy.parameters()).device


def _inputs(policy: GUIPolicy, items: TransitionSet) -> Tensor:
    """``(Q, 9, H, W)`` on the policy's device."""
    return screens_to_tensor(items.before, items.after, _device(policy))


def _score(policy: GUIPolicy, actions: SampledActions, items: TransitionSet) -> tuple[Tensor, Tensor]:
    """``(rewards, correct)``, each ``(Q, G)``: ``R = R_format + R_action`` by the official rules, and
    ``R_action == 1``."""
    dicts = decode_actions(actions, cell=policy.cell, grid=policy.grid)
    hits = [
        [best_action_reward(a, gts).reward == 1.0 for a in row] for row, gts in zip(dicts, items.actions, strict=True)
    ]
    correct = torch.tensor(hits, device=actions.type.device)
    # §4: R = R_format + R_action; R_format = 1 for every completion this policy writes (to_completion)
    return 1.0 + correct.to(torch.float32), correct


def sample_rewards(
    policy: GUIPolicy, items: TransitionSet, group_size: int, generator: torch.Generator
) -> tuple[SampledActions, Tensor, Tensor]:
    """Sample ``G`` actions per item and score them.

    Returns:
        ``(actions, rewards (Q, G) = R_format + R_action, correct (Q, G) bool = R_action == 1)``.
    """
    dist = policy(_inputs(policy, items))
    actions = policy.sample(dist, group_size, generator=generator)
    rewards, correct = _score(policy, actions, items)
    return actions, rewards, correct


def mixed_groups(correct: Tensor) -> Tensor:
    """The filter: ``(Q,)`` true where a group of ``G`` samples is partly right, ``0 < Σ_g correct < G``.

    Args:
        correct: ``(Q, G)`` bool, whether each sample earned ``R_action = 1``.
    """
    if correct.ndim != 2:
        raise ValueError(f"correct must have shape (Q, G), got {tuple(correct.shape)}")
    hits = correct.to(torch.int64).sum(dim=1)
    # §4.2 data filter: keep a candidate when 0 < #correct < G (an all-right or all-wrong group has Â = 0)
    return (hits > 0) & (hits < correct.shape[1])


def grpo_step(
    policy: GUIPolicy,
    reference: GUIPolicy,
    optimizer: torch.optim.Optimizer,
    items: TransitionSet,
    settings: GRPOSettings,
    generator: torch.Generator,
    *,
    world: World = SINGLE,
    model: nn.Module | None = None,
) -> StepStats:
    """One GRPO step on the global batch ``items`` (the module docstring's steps 1-4).

    Args:
        world: the run's processes; each trains on its shard of ``items`` (one process: the whole batch).
        model: the module the gradient forward runs through (``data_parallel(HeadSelect(policy), world)``);
            default ``policy``. Under torchrun it must be the DDP wrapper.
    """
    if world.is_distributed and model is None:
        raise ValueError("model: grpo_step under torchrun needs the DDP wrapper of the policy (data_parallel)")
    optimizer.zero_grad()
    loss, rewards, correct = grpo_shard_loss(policy, reference, items, settings, generator, rank=world.rank,
                                             size=world.size, model=model)  # fmt: skip
    loss.backward()  # DDP averages over the ranks: the full batch's gradient
    optimizer.step()
    (total,) = all_reduce_sum([float(loss.detach()) / world.size])
    return StepStats(total, float(rewards.mean()), float(mixed_groups(correct).float().mean()))


def _shard_rows(n: int, rank: int, size: int) -> slice:
    if n < size:
        raise ValueError(f"items: a batch of {n} items cannot give each of {size} ranks a shard; raise batch")
    rows = shard_range(n, rank, size)
    return slice(rows.start, rows.stop)


def _detached(dist: ActionDist) -> ActionDist:
    return ActionDist(*(t.detach() for t in (dist.type, dist.click, dist.direction, dist.app, dist.text)))


def grpo_shard_loss(
    policy: GUIPolicy,
    reference: GUIPolicy,
    items: TransitionSet,
    settings: GRPOSettings,
    generator: torch.Generator,
    *,
    rank: int = 0,
    size: int = 1,
    model: nn.Module | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Rank ``rank``'s part of a GRPO step on the global batch ``items`` (module docstring).

    Steps 1-3 run on the whole batch (a forward pass without gradient and ``generator``, alike on every rank);
    step 4's loss on the shard's items ``r``: ``−J_r · size · |r| / Q``, so the ranks' losses average to the full
    batch's ``−J`` (Eq. (3) is a mean over the ``N`` samples) and DDP's averaged gradient is its gradient. With one
    rank the shard is the whole batch, and the gradient forward also gives the sampling distribution.

    Args:
        model: the module the gradient forward runs through (the DDP wrapper of ``policy``; default ``policy``).

    Returns:
        ``(scaled shard loss with gradient, rewards (Q, G), correct (Q, G))``.
    """
    rows = _shard_rows(len(items), rank, size)
    x = _inputs(policy, items)
    net = policy if model is None else model
    if size == 1:
        dist = net(x)
        whole = _detached(dist)
    else:
        with torch.no_grad():
            whole = policy(x)
        dist = net(x[rows])
    with torch.no_grad():
        actions = policy.sample(whole, settings.group_size, generator=generator)  # step 1, whole batch
        rewards, correct = _score(policy, actions, items)  # step 2
        # step 3, GRPO's advantage (DeepSeekMath Eq. (3)): Â_i = (r_i − mean_g r) / std_g r over whole groups
        adv = group_relative_advantages(rewards)[rows]
        mine = SampledActions(actions.type[rows], actions.param[rows])
        ref_lp = GUIPolicy.log_prob(reference(x[rows]), mine).reshape(-1)  # (N,)
    logp = GUIPolicy.log_prob(dist, mine).reshape(-1)  # (N,)
    # step 4, DeepSeekMath Eq. (3): −J = −mean[min(ρÂ, clip(ρ, 1±ε)Â) − β·D_KL] with π_old = π_θ (ρ = 1), the
    # k3 estimator D_KL = π_ref/π_θ − log(π_ref/π_θ) − 1
    out = grpo_loss(logp, logp.detach(), adv.reshape(-1), kl=kl_k3(logp, ref_lp), beta=settings.beta,
                    clip_eps=settings.clip_eps)  # fmt: skip
    share = (rows.stop - rows.start) / len(items)  # rescaled so the ranks' DDP average is the full batch's −J
    return out.loss * (share * size), rewards, correct


def _labels(policy: GUIPolicy, items: TransitionSet) -> tuple[Tensor, Tensor]:
    """``(types, params)``, each ``(Q,)``, of the first ground-truth action of each item (a click: its cell)."""
    labels = [encode_label(gts[0], cell=policy.cell, grid=policy.grid) for gts in items.actions]
    device = _device(policy)
    return torch.tensor([t for t, _ in labels], device=device), torch.tensor([p for _, p in labels], device=device)


def sft_shard_loss(policy: GUIPolicy, items: TransitionSet, *, rank: int = 0, size: int = 1,
                   model: nn.Module | None = None) -> Tensor:  # fmt: skip
    """Rank ``rank``'s part of an SFT step on the global batch ``items``: the shard's summed NLL of the type and of
    the parameter given the type, over ``Q``, times ``size``; so the ranks' losses average to the batch's mean
    ``NLL(type) + NLL(param | type)``.

    Args:
        model: the module the forward runs through: a :class:`HeadSelect` of ``policy`` (or its DDP wrapper), which
            returns only the heads this shard's loss uses; default ``policy`` (every head).
    """
    rows = _shard_rows(len(items), rank, size)
    types, params = _labels(policy, items.subset(np.arange(rows.start, rows.stop)))
    x = screens_to_tensor(items.before[rows], items.after[rows], _device(policy))
    if model is None:
        dist = policy(x)
        outputs = (dist.type, *dist.heads())
    else:  # DDP sees only the heads this shard's loss uses (unused outputs would stall its reduction)
        outputs = model(x, keep=(True, *(bool((types == t).any()) for t in range(len(ACTION_TYPES)))))
    # the SFT baseline: NLL(type) + NLL(param | type), a click's target the exact point's cell (no bbox credit)
    loss = F.nll_loss(outputs[0], types, reduction="sum")
    for t, head in enumerate(outputs[1:]):
        sel = types == t
        if head is not None and bool(sel.any()):
            loss = loss + F.nll_loss(head[sel], params[sel], reduction="sum")
    return loss * (size / len(items))


class HeadSelect(nn.Module):
    """The module a data-parallel wrapper wraps: the policy, whose forward can return only the heads a loss uses.

    With ``keep`` (a flag for the type head and one per action type) the output is a tuple ``(type, head_0, ...)``
    with ``None`` for the heads left out, so DDP's search for unused parameters (``find_unused_parameters``) finds
    exactly the parameters the loss reaches; without it, the policy's :class:`ActionDist`.
    """

    def __init__(self, policy: GUIPolicy):
        super().__init__()
        self.policy = policy

    def forward(self, x: Tensor, keep: tuple[bool, ...] | None = None) -> ActionDist | tuple[Tensor | None, ...]:
        dist = self.policy(x)
        if keep is None:
            return dist
        return tuple(t if k else None for t, k in zip((dist.type, *dist.heads()), keep, strict=True))


def sft_step(policy: GUIPolicy, optimizer: torch.optim.Optimizer, items: TransitionSet, *, world: World = SINGLE,
             model: nn.Module | None = None) -> StepStats:  # fmt: skip
    """One cross-entropy step on the first ground-truth action of each item (click: the cell of its exact point).

    Args:
        world: the run's processes; each trains on its shard of ``items`` (:func:`sft_shard_loss`).
        model: ``data_parallel(HeadSelect(policy), world, find_unused_parameters=True)``; default ``policy``. Under
            torchrun it must be the DDP wrapper.
    """
    if world.is_distributed and model is None:
        raise ValueError("model: sft_step under torchrun needs the DDP wrapper of the policy (data_parallel)")
    optimizer.zero_grad()
    loss = sft_shard_loss(policy, items, rank=world.rank, size=world.size, model=model)
    loss.backward()
    optimizer.step()
    (total,) = all_reduce_sum([float(loss.detach()) / world.size])
    return StepStats(total, float("nan"), float("nan"))


@torch.no_grad()
def evaluate(policy: GUIPolicy, items: TransitionSet, *, batch: int = 256) -> np.ndarray:
    """``(M,)`` 1.0 where the greedy action earns ``R_action = 1`` against any of the item's correct actions."""
    out = []
    for i in range(0, len(items), batch):
        part = items.subset(np.arange(i, min(i + batch, len(items))))
        dicts = decode_actions(policy.greedy(policy(_inputs(policy, part))), cell=policy.cell, grid=policy.grid)
        # held-out accuracy: the greedy action scored by the training rule's R_action against any correct first action
        out += [best_action_reward(row[0], gts).reward for row, gts in zip(dicts, part.actions, strict=True)]
    return np.asarray(out, dtype=np.float64)
