"""Reproduction of GUI-Shift's claim on procedural GUI worlds with a CNN policy trained from scratch.

GUI-Shift: K-step GUI Transition as Self-supervised RL for GUI Agents, ICLR 2026, arXiv 2505.12493. Per seed k:

1. Draw worlds (:func:`~iclr26.guishift.env.generate_world`): ``explore_worlds`` for exploration, ``base_worlds``
   for the labelled data of the base policy, ``eval_worlds`` held out (apps whose screens no training step saw).
2. **Base policy** (the paper's pretrained VLM): supervised training on ``base_items`` goal-reaching items of the
   base worlds (current screen + goal screen → first action of a shortest path). Unit ``base-seed<k>``.
3. **Exploration** without instructions: random walks in the exploration worlds, cut into K-step pairs for each K in
   ``ks`` (:func:`~iclr26.guishift.data.kstep_pairs`: labelled with every shortest-path first action, pairs with
   identical screens dropped).
4. **Filter** (unit ``filter-seed<k>``): ``G`` samples per candidate pair from the base policy; keep the pairs whose
   group is partly right (:func:`~iclr26.guishift.training.mixed_groups`).
5. **Arms**, each from the base policy with the same optimiser, steps, batch and learning rate (unit
   ``<arm>-seed<k>``):
   ``guishift`` GRPO on the filtered pairs (``n_train / len(ks)`` per K); ``nofilter`` GRPO on as many unfiltered
   pairs; ``sft`` cross-entropy on guishift's pairs (exact click points); ``k1`` GRPO on ``n_train`` filtered K = 1
   pairs; ``shuffled`` (the control that must fail) GRPO on guishift's pairs with every after-screen swapped for
   another pair's, so the transition carries no information about the action; ``none``: the base policy itself.
6. **Evaluation** on the held-out worlds, greedy actions scored by the rule reward: downstream automation
   (``eval_items`` goal items at distance 1..4, accuracy of the first action: any first action of a shortest path
   counts), grounding (clicks at distance 1: the element that opens the goal screen) and K-step transition accuracy.
7. **Verdict** (:mod:`iclr26.guishift.verdict`): paired comparisons over seeds of downstream accuracy, gated on
   GUI-Shift having learned its pretraining task (held-out transition accuracy above no pretraining).

Under ``torchrun`` every rank builds the same data and runs every unit; the base policy's SFT and every arm's steps
train through :func:`iclr26.common.distributed.data_parallel` on the rank's shard of each global batch
(:mod:`iclr26.guishift.training`), the filter and the evaluations run alike on every rank, and rank 0 writes the
record.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr26.common.config import require
from iclr26.common.distributed import World, data_parallel
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.guishift.config import GUIShiftConfig
from iclr26.guishift.data import TransitionSet, derangement, explore, goal_items, kstep_pairs
from iclr26.guishift.env import World as GUIWorld
from iclr26.guishift.env import generate_world
from iclr26.guishift.policy import GUIPolicy
from iclr26.guishift.training import (
    GRPOSettings,
    HeadSelect,
    evaluate,
    grpo_step,
    mixed_groups,
    sample_rewards,
    sft_step,
)
from iclr26.guishift.verdict import ARMS, Measurements, comparisons, verdict

__all__ = [
    "EXPERIMENT",
    "ArmResult",
    "FilterResult",
    "SeedData",
    "arm_data",
    "build_data",
    "measurements",
    "run",
    "run_filter",
    "train_arm",
    "train_base",
]


@dataclass(frozen=True)
class SeedData:
    """The data of one seed (deterministic from the seed, rebuilt on resume).

    Attributes:
        base: labelled goal items of the base policy.
        pools: K -> K-step pairs from exploration (the filter's candidates).
        automation: held-out downstream goal items.
        grounding: held-out click items at distance 1.
        transitions: K -> held-out K-step pairs.
    """

    base: TransitionSet
    pools: dict[int, TransitionSet]
    automation: TransitionSet
    grounding: TransitionSet
    transitions: dict[int, TransitionSet]


def _worlds(config: GUIShiftConfig, seed: int, role: str, n: int) -> list[GUIWorld]:
    return [generate_world(n_apps=config.n_apps, n_text=config.n_text, size=config.size,
                           seed=derive_seed(seed, "world", role, i)) for i in range(n)]  # fmt: skip


def build_data(config: GUIShiftConfig, seed: int) -> SeedData:
    """Steps 1 and 3 of the module docstring, and the held-out evaluation items."""
    rng = numpy_rng(derive_seed(seed, "data"))
    base_w = _worlds(config, seed, "base", config.base_worlds)
    explore_w = _worlds(config, seed, "explore", config.explore_worlds)
    eval_w = _worlds(config, seed, "eval", config.eval_worlds)

    def per_world(n: int, worlds: list[GUIWorld], **kw: Any) -> TransitionSet:
        counts = np.bincount(np.arange(n) % len(worlds), minlength=len(worlds))
        return TransitionSet.concat(
            [goal_items(w, n=int(c), rng=rng, **kw) for w, c in zip(worlds, counts, strict=True) if c]
        )

    base = per_world(config.base_items, base_w, max_distance=config.max_distance)
    walks = [[explore(w, n_steps=config.walk_len, rng=rng) for _ in range(config.walks_per_world)] for w in explore_w]
    pools = {k: TransitionSet.concat([kstep_pairs(w, ws, k) for w, ws in zip(explore_w, walks, strict=True)])
             for k in config.ks}  # fmt: skip
    automation = per_world(config.eval_items, eval_w, max_distance=config.max_distance)
    grounding = per_world(config.ground_items, eval_w, max_distance=1, clicks_only=True)
    eval_walks = [[explore(w, n_steps=config.walk_len, rng=rng)] for w in eval_w]
    transitions = {}
    for k in config.ks:
        pairs = TransitionSet.concat([kstep_pairs(w, ws, k) for w, ws in zip(eval_w, eval_walks, strict=True)])
        transitions[k] = pairs.subset(np.arange(min(config.transition_items, len(pairs))))
    return SeedData(base, pools, automation, grounding, transitions)


def _policy(config: GUIShiftConfig, device: torch.device) -> GUIPolicy:
    return GUIPolicy(size=config.size, n_apps=config.n_apps, n_text=config.n_text, channels=config.channels,
                     hidden=config.hidden).to(device)  # fmt: skip


def _cpu_state(policy: GUIPolicy) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}


def train_base(config: GUIShiftConfig, data: SeedData, seed: int, world: World, device: torch.device) -> dict:
    """Step 2: the base policy's state dict (CPU tensors)."""
    torch.manual_seed(derive_seed(seed, "init"))
    policy = _policy(config, device)
    model = data_parallel(HeadSelect(policy), world, device=device, find_unused_parameters=True)
    opt = torch.optim.Adam(policy.parameters(), lr=config.lr)
    rng = numpy_rng(derive_seed(seed, "base-batches"))
    for _ in range(config.base_steps):
        sft_step(policy, opt, data.base.subset(rng.integers(0, len(data.base), config.batch)), world=world,
                 model=model)  # fmt: skip
    return _cpu_state(policy)


@dataclass(frozen=True)
class FilterResult:
    """Step 4: per K, the indices of the pool's pairs kept by the filter, and the share of pairs the base policy
    got right at least once / always."""

    kept: dict[int, list[int]]
    mixed_share: dict[int, float]
    sample_accuracy: dict[int, float]


def run_filter(config: GUIShiftConfig, data: SeedData, base: dict, seed: int, device: torch.device) -> FilterResult:
    """Step 4: sample ``G`` actions per candidate from the base policy and keep the partly right groups."""
    policy = _policy(config, device)
    policy.load_state_dict(base)
    gen = torch_generator(derive_seed(seed, "filter"), device)
    kept, share, acc = {}, {}, {}
    with torch.no_grad():
        for k, pool in data.pools.items():
            _, _, correct = sample_rewards(policy, pool, config.group_size, gen)
            mask = mixed_groups(correct).cpu()
            kept[k] = np.flatnonzero(mask.numpy()).tolist()
            share[k], acc[k] = float(mask.float().mean()), float(correct.float().mean())
    return FilterResult(kept, share, acc)


def arm_data(config: GUIShiftConfig, arm: str, data: SeedData, filt: FilterResult, seed: int) -> TransitionSet:
    """The training pairs of ``arm`` (step 5), the first pairs of each pool in exploration order. Every arm gets as
    many pairs per K as the filter kept for guishift (at most ``n_train / len(ks)``); k1 as many K = 1 pairs in all,
    if the filter kept that many."""
    per_k = config.n_train // len(config.ks)

    def kept_idx(k: int, n: int) -> list[int]:
        idx = filt.kept[k][:n]
        # a pool whose filter kept nothing (possible only at smoke sizes) falls back to its first pairs
        return idx if idx else list(range(min(n, len(data.pools[k]))))

    counts = {k: len(kept_idx(k, per_k)) for k in config.ks}
    if arm == "nofilter":
        return TransitionSet.concat([data.pools[k].subset(np.arange(counts[k])) for k in config.ks])
    if arm == "k1":
        return data.pools[1].subset(kept_idx(1, sum(counts.values())))
    pairs = TransitionSet.concat([data.pools[k].subset(kept_idx(k, per_k)) for k in config.ks])
    if arm == "shuffled":
        # the control: every after-screen replaced by another pair's, so it says nothing about the action
        perm = derangement(len(pairs), derive_seed(seed, "shuffle"))
        pairs = TransitionSet(pairs.before, pairs.after[perm], pairs.actions, pairs.k)
    return pairs


@dataclass(frozen=True)
class ArmResult:
    """One arm of one seed.

    Attributes:
        automation: ``(eval_items,)`` per-item correctness of the downstream first action.
        automation_k: goal distance of each automation item.
        grounding: grounding accuracy.
        transition: K -> held-out K-step transition accuracy.
        n_pairs: training pairs used.
        rewards: mean GRPO reward per step (empty for SFT and the base).
        informative: share of groups with a non-zero advantage per GRPO step.
    """

    automation: np.ndarray
    automation_k: np.ndarray
    grounding: float
    transition: dict[int, float]
    n_pairs: int
    rewards: list[float]
    informative: list[float]


def _evaluate(policy: GUIPolicy, data: SeedData, n_pairs: int, rewards: list, informative: list) -> ArmResult:
    return ArmResult(
        automation=evaluate(policy, data.automation),
        automation_k=data.automation.k.copy(),
        grounding=float(evaluate(policy, data.grounding).mean()),
        transition={k: float(evaluate(policy, t).mean()) for k, t in data.transitions.items()},
        n_pairs=n_pairs,
        rewards=rewards,
        informative=informative,
    )


def train_arm(config: GUIShiftConfig, arm: str, data: SeedData, base: dict, filt: FilterResult | None, seed: int,
              world: World, device: torch.device) -> ArmResult:  # fmt: skip
    """Step 5 for ``arm`` (``"none"``: evaluate the base policy), then step 6."""
    policy = _policy(config, device)
    policy.load_state_dict(base)
    if arm == "none":
        return _evaluate(policy, data, 0, [], [])
    if filt is None:
        raise ValueError(f"arm {arm!r} needs the filter's result")
    pairs = arm_data(config, arm, data, filt, seed)
    reference = copy.deepcopy(policy).requires_grad_(False)
    model = data_parallel(HeadSelect(policy), world, device=device, find_unused_parameters=arm == "sft")
    opt = torch.optim.Adam(policy.parameters(), lr=config.lr)
    rng = numpy_rng(derive_seed(seed, "batches", arm))
    gen = torch_generator(derive_seed(seed, "samples", arm), device)
    settings = GRPOSettings(group_size=config.group_size, beta=config.beta, clip_eps=config.clip_eps)
    rewards, informative = [], []
    for _ in range(config.steps):
        batch = pairs.subset(rng.integers(0, len(pairs), config.batch))
        if arm == "sft":
            sft_step(policy, opt, batch, world=world, model=model)
        else:
            stats = grpo_step(policy, reference, opt, batch, settings, gen, world=world, model=model)
            rewards.append(stats.reward)
            informative.append(stats.informative)
    return _evaluate(policy, data, len(pairs), rewards, informative)


def run(config: GUIShiftConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    world = ctx.world
    require(
        config.batch >= world.size, "batch", f"must be at least the {world.size} torchrun ranks, got {config.batch}"
    )
    device = ctx.device
    start = time.perf_counter()
    results: dict[str, list[ArmResult]] = {a: [] for a in ("none", *ARMS)}
    filters: list[FilterResult] = []
    data_s = 0.0
    for k in range(config.n_seeds):
        seed = derive_seed(config.seed, "seed", k)
        t0 = time.perf_counter()
        data = build_data(config, seed)
        data_s += time.perf_counter() - t0
        base = ctx.unit(f"base-seed{k}", lambda d=data, s=seed: train_base(config, d, s, world, device))
        filt = ctx.unit(f"filter-seed{k}", lambda d=data, b=base, s=seed: run_filter(config, d, b, s, device))
        filters.append(filt)
        for arm in ("none", *ARMS):
            res = ctx.unit(f"{arm}-seed{k}", lambda a=arm, d=data, b=base, f=filt, s=seed:
                           train_arm(config, a, d, b, f, s, world, device))  # fmt: skip
            results[arm].append(res)
            ctx.log(f"seed {k} {arm}: automation {res.automation.mean():.3f} grounding {res.grounding:.3f}")
    measured = measurements(config, results)
    _plot(ctx, results)
    return Outcome.of(
        verdict(measured, config),
        metrics={
            "arms": {arm: _arm_metrics(config, rs) for arm, rs in results.items()},
            "filter": _filter_metrics(config, filters),
            "tests": {name: x.record() for name, x in comparisons(measured, config).items()},
        },
        timings={"wall_s": time.perf_counter() - start, "data_s": data_s},
    )


def measurements(config: GUIShiftConfig, results: dict[str, list[ArmResult]]) -> Measurements:
    """The per-seed numbers the verdict reads."""
    return Measurements(
        automation={arm: [float(r.automation.mean()) for r in rs] for arm, rs in results.items()},
        transition={
            arm: [float(np.mean([r.transition[k] for k in config.ks])) for r in rs] for arm, rs in results.items()
        },
        eval_items=config.eval_items,
    )


def _arm_metrics(config: GUIShiftConfig, rs: list[ArmResult]) -> dict[str, Any]:
    """One arm's metrics: seed means of its accuracies, the per-seed downstream accuracy and its training stats."""
    acc = [float(r.automation.mean()) for r in rs]
    distances = sorted({int(d) for r in rs for d in r.automation_k})
    return {
        "automation_accuracy": float(np.mean(acc)),
        "automation_per_seed": acc,
        "automation_by_distance": {
            str(d): float(np.mean([r.automation[r.automation_k == d].mean() for r in rs])) for d in distances
        },
        "grounding_accuracy": float(np.mean([r.grounding for r in rs])),
        "transition_accuracy": {str(k): float(np.mean([r.transition[k] for r in rs])) for k in config.ks},
        "train_pairs": int(rs[0].n_pairs),
        "final_reward": float(np.mean([np.mean(r.rewards[-max(1, len(r.rewards) // 10):]) for r in rs]))
        if rs[0].rewards else None,
        "informative_groups": float(np.mean([np.mean(r.informative) for r in rs])) if rs[0].informative else None,
    }  # fmt: skip


def _filter_metrics(config: GUIShiftConfig, filters: list[FilterResult]) -> dict[str, Any]:
    return {
        "mixed_share": {str(k): float(np.mean([f.mixed_share[k] for f in filters])) for k in config.ks},
        "base_sample_accuracy": {str(k): float(np.mean([f.sample_accuracy[k] for f in filters])) for k in config.ks},
    }


def _plot(ctx: RunContext, results: dict[str, list[ArmResult]]) -> None:
    """Downstream accuracy of every arm (seed mean and seeds) and the GRPO arms' mean reward per step."""
    fig, axes = figure(2, 1, width=4.5)
    ax = axes[0][0]
    names = list(results)
    for i, arm in enumerate(names):
        per_seed = [float(r.automation.mean()) for r in results[arm]]
        ax.bar(i, float(np.mean(per_seed)), color="lightsteelblue")
        ax.plot([i] * len(per_seed), per_seed, "k.", ms=4)
    ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    ax.set_ylabel("first-action accuracy, held-out apps")
    ax.set_title("downstream automation")
    ax = axes[0][1]
    for arm, rs in results.items():
        if rs and rs[0].rewards:
            curve = np.mean([r.rewards for r in rs], axis=0)
            w = max(1, len(curve) // 20)
            ax.plot(np.convolve(curve, np.ones(w) / w, mode="valid"), label=arm, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward R_format + R_action")
    ax.set_title("GRPO training reward")
    ax.legend(fontsize=7)
    ctx.save_plot(fig, "accuracy_by_arm.png")


EXPERIMENT = Experiment(config_cls=GUIShiftConfig, run=run, data_parallel=True)
