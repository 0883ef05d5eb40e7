"""PAGE-4D's efficient fine-tuning: which blocks are frozen, which are trained, and at what rates.

PAGE-4D (ICLR 2026, arXiv 2510.17568), from the official ``training/config/training_final.yaml``
(kaichen-z/PAGE4D, read for facts): starting from pretrained VGGT, the patch embedding, frame and global blocks
0–9 and 20–23 and all heads are frozen; frame and global blocks 10–19 (the middle ten) and the mask head are
trained with AdamW, each group with a linear warm-up and cosine decay (blocks: peak 1e-5, warm-up 5%, weight decay
0.01; mask head: peak 2e-5, warm-up 15%, weight decay 0.02); every other parameter (camera/register tokens
included) has learning rate 0; gradients are clipped to norm 1.

Steps of one fine-tuning step (:func:`train_step`):

1. α ← schedule(step) on the model (:class:`~iclr26.page4d.aggregator.MaskSchedule`; 0 for arms without the mask).
2. Each group's learning rate ← its warm-up/cosine value at ``step`` (:func:`warmup_cosine`).
3. Loss = ``camera_weight`` · camera L1 + depth loss; backward; clip to ``max_norm``; AdamW step.

The arms of the reproduction differ only in :func:`trainable_groups`'s ``recipe``: ``"page4d"`` (middle blocks +
mask head, mask on), ``"naive"`` (the same middle blocks, no mask), ``"full"`` (every parameter, no mask).

Under ``torchrun`` the same step is data parallel (``world`` and ``net`` of :func:`train_step`): the batch stays the
global batch, every rank runs the model on its contiguous shard of the scenes through DistributedDataParallel, which
averages the gradients before the clipping and the AdamW step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, shard_range
from iclr26.page4d.aggregator import MaskSchedule
from iclr26.page4d.model import TinyVGGT, depth_loss, pose_loss

__all__ = [
    "GroupSpec",
    "Recipe",
    "StepResult",
    "apply_recipe",
    "train_step",
    "trainable_groups",
    "warmup_cosine",
]

Recipe = Literal["page4d", "naive", "full"]


@dataclass(frozen=True)
class GroupSpec:
    """One optimiser group's schedule: peak learning rate, warm-up share, weight decay.

    Attributes:
        lr: peak learning rate.
        warmup: share of the steps spent in the linear warm-up (official: 0.05 blocks, 0.15 mask head).
        weight_decay: AdamW decoupled weight decay (official: 0.01 blocks, 0.02 mask head).
    """

    lr: float
    warmup: float
    weight_decay: float


def warmup_cosine(step: int, total: int, *, peak: float, warmup: float, floor: float = 1e-8) -> float:
    """fvcore's composite schedule of the official config: linear ``floor → peak`` over the first ``warmup·total``
    steps, then cosine ``peak → floor`` over the rest.

    Raises:
        ValueError: if ``total < 1`` or ``warmup`` is outside [0, 1].
    """
    if total < 1:
        raise ValueError(f"total must be >= 1, got {total}")
    if not 0.0 <= warmup <= 1.0:
        raise ValueError(f"warmup must be in [0, 1], got {warmup}")
    u = step / total
    if warmup > 0 and u < warmup:
        return floor + (peak - floor) * u / warmup
    v = (u - warmup) / (1.0 - warmup) if warmup < 1 else 1.0
    return floor + (peak - floor) * 0.5 * (1.0 + math.cos(math.pi * min(v, 1.0)))


def _middle_names(model: TinyVGGT) -> list[str]:
    a, b = model.middle
    return [f"{kind}.{i}." for kind in ("frame_blocks", "global_blocks") for i in range(a, b)]


def trainable_groups(model: TinyVGGT, recipe: Recipe, *, blocks: GroupSpec,
                     mask_head: GroupSpec) -> list[tuple[list[nn.Parameter], GroupSpec]]:  # fmt: skip
    """The parameters each recipe trains, with their group schedule.

    - ``"page4d"``: frame and global blocks ``middle`` with ``blocks``; the mask head with ``mask_head``.
    - ``"naive"``: the same middle blocks with ``blocks``; no mask head.
    - ``"full"``: every parameter except the mask head with ``blocks``.

    Raises:
        ValueError: for an unknown recipe.
    """
    if recipe not in ("page4d", "naive", "full"):
        raise ValueError(f"recipe must be 'page4d', 'naive' or 'full', got {recipe!r}")
    named = list(model.named_parameters())
    if recipe == "full":
        return [([p for n, p in named if not n.startswith("mask_head.")], blocks)]
    prefixes = _middle_names(model)
    # efficient fine-tuning: only the middle frame/global blocks (10–19 in VGGT) train, the rest stays frozen
    groups = [([p for n, p in named if any(n.startswith(x) for x in prefixes)], blocks)]
    if recipe == "page4d":
        groups.append(([p for n, p in named if n.startswith("mask_head.")], mask_head))
    return groups


def apply_recipe(model: TinyVGGT, groups: list[tuple[list[nn.Parameter], GroupSpec]]) -> torch.optim.AdamW:
    """Freeze every parameter not in ``groups`` (``requires_grad=False``) and build the AdamW over the groups (the
    fused kernel when the model is on a GPU)."""
    keep = {id(p) for ps, _ in groups for p in ps}
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)
    cuda = {"fused": True} if next(model.parameters()).device.type == "cuda" else {}
    return torch.optim.AdamW(
        [{"params": ps, "lr": spec.lr, "weight_decay": spec.weight_decay} for ps, spec in groups], **cuda
    )


@dataclass(frozen=True)
class StepResult:
    """One step's losses and settings.

    Attributes:
        loss: total loss.
        camera: camera L1.
        depth: depth loss.
        alpha: the mask strength used.

    The losses are 0-dim tensors instead of floats when the step was asked not to synchronise (``sync=False``).
    """

    loss: float | torch.Tensor
    camera: float | torch.Tensor
    depth: float | torch.Tensor
    alpha: float


def train_step(
    model: TinyVGGT,
    opt: torch.optim.Optimizer,
    specs: list[GroupSpec],
    batch: dict[str, torch.Tensor],
    *,
    step: int,
    total: int,
    schedule: MaskSchedule | None,
    camera_weight: float = 5.0,
    max_norm: float = 1.0,
    world: World = SINGLE,
    net: nn.Module | None = None,
    sync: bool = True,
) -> StepResult:
    """One fine-tuning (or pre-training) step (the module docstring's steps 1–3), on this rank's shard of ``batch``.

    In a one-process world the step runs the model on the whole batch. Under torchrun every rank holds the same
    global batch of B scenes and runs ``net`` (``model`` in DistributedDataParallel) on its contiguous shard
    (:func:`~iclr26.common.distributed.shard_range`). The camera and depth losses are means over scenes of equal
    size, so the shard's loss times its share B_r / B, summed over the ranks, is the global batch's loss; each rank
    backpropagates that times ``world.size``, and DDP's average of the gradients is the global loss's gradient, the
    same on every rank, so the clipping and the AdamW step agree on every rank. The returned losses are the global
    batch's (summed over the ranks).

    Args:
        model: the model (its ``alpha`` is set here).
        opt: the optimiser of :func:`apply_recipe`, one group per entry of ``specs``.
        specs: each group's schedule.
        batch: ``images`` (B, S, 3, H, W), ``pose_enc`` (B, S, 7), ``depth`` (B, S, H, W).
        step: steps taken so far.
        total: steps in the run.
        schedule: the mask schedule, or None (α = 0).
        camera_weight: weight of the camera loss (official 5).
        max_norm: gradient clipping norm (official 1).
        world: the run's processes (a one-process world by default).
        net: ``model`` as the ranks train it (:func:`~iclr26.common.distributed.data_parallel`); ``model`` if None.
        sync: return the losses as floats (a host synchronisation on a GPU); else as detached 0-dim tensors, so
            that a GPU loop reads them back once at its end. Under torchrun the losses are always floats.

    On a GPU the forward pass runs under bfloat16 autocast (the official recipe trains in bf16); the losses are
    computed in float32. On the CPU everything is float32.
    Raises:
        ValueError: if the batch has fewer scenes than there are ranks.
    """
    b = batch["images"].shape[0]
    if b < world.size:
        raise ValueError(f"a batch of {b} scenes is smaller than the {world.size} ranks; raise batch_size")
    shard = shard_range(b, world.rank, world.size)
    rows, share = slice(shard.start, shard.stop), len(shard) / b
    _set_schedules(model, opt, specs, step=step, total=total, schedule=schedule)
    images = batch["images"][rows]
    if images.device.type == "cuda":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = (model if net is None else net)(images)
    else:
        pred = (model if net is None else net)(images)
    cam = pose_loss(pred.pose_enc.float(), batch["pose_enc"][rows])
    dep = depth_loss(pred.depth.float(), batch["depth"][rows])
    # Loss = camera_weight · camera L1 + depth loss (official training_final.yaml)
    loss = camera_weight * cam + dep
    opt.zero_grad(set_to_none=True)
    # DDP averages the ranks' gradients: each rank's term times world.size gives the global batch's gradient
    (loss if world.size == 1 else loss * (share * world.size)).backward()
    params = [p for g in opt.param_groups for p in g["params"]]
    # gradients clipped to max_norm (official 1) before the AdamW step
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    opt.step()
    if world.size == 1 and not sync:
        return StepResult(loss.detach(), cam.detach(), dep.detach(), float(model.alpha))
    if world.size == 1:
        return StepResult(loss.item(), cam.item(), dep.item(), float(model.alpha))
    total_loss, total_cam, total_dep = all_reduce_sum([x.item() * share for x in (loss, cam, dep)])
    return StepResult(total_loss, total_cam, total_dep, float(model.alpha))


def _set_schedules(model: TinyVGGT, opt: torch.optim.Optimizer, specs: list[GroupSpec], *, step: int, total: int,
                   schedule: MaskSchedule | None) -> None:  # fmt: skip
    """Steps 1-2 of the module docstring: training mode, α and every group's learning rate at ``step``."""
    model.train()
    # step 1: the mask strength α of this step (0: plain VGGT global attention)
    model.alpha = schedule(step) if schedule is not None else 0.0
    for group, spec in zip(opt.param_groups, specs, strict=True):
        # step 2: per-group linear warm-up then cosine decay (blocks and mask head on their own schedules)
        group["lr"] = warmup_cosine(step, total, peak=spec.lr, warmup=spec.warmup)
