"""UniSplat's training loss on streamed drives, and the batch loss a data-parallel rank computes on its shard.

UniSplat (ICLR 2026, arXiv 2511.04595); loss weights from the official ``configs/waymo_stage3.yaml``
(chenshi3/UniSplat, read for facts). One drive's loss (:func:`drive_loss`), after streaming its earlier frames
without gradients and decoding the last one:

1. ``L_rgb``: L1 between each supervised novel view rendered at half resolution and its ground truth;
2. ``L_dyn``: binary cross-entropy of the Gaussians' dynamic logits against their share of moving pixels/points,
   the moving side weighted by the drive's ratio of static to moving mass (capped at ``dyn_pos_weight_cap``), so
   that the few moving Gaussians weigh as much as the many static ones (:func:`dynamic_loss`);
3. ``L_scale``: ``|log γ − log γ*|``, the predicted against the true per-camera metric scale;

``loss = w_rgb · mean_views L_rgb + w_dyn · L_dyn + w_scale · L_scale``. A batch's loss is the mean over its
drives; its (drive, view) items can be split over ranks (:func:`batch_loss`).

Dimension letters: ``V`` rig cameras, ``H, W`` image size, ``N`` Gaussians.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as nnf
from torch import nn

from iclr26.unisplat.model import Frame, UniSplat
from iclr26.unisplat.world import DrivingSequence

__all__ = [
    "BatchLoss",
    "DriveTerms",
    "LossWeights",
    "batch_loss",
    "drive_loss",
    "drive_terms",
    "dynamic_loss",
    "frames_of",
]


@dataclass(frozen=True)
class LossWeights:
    """The loss weights (official ``waymo_stage3.yaml``: ``rec_loss`` 5, ``dyn_loss_weight`` 0.05; stage-1 scale
    loss 0.1).

    Attributes:
        rgb: weight of the L1 RGB loss.
        dyn: weight of the dynamic-logit BCE.
        scale: weight of the log-scale L1.
        dyn_pos_weight_cap: the largest weight of the moving side of the dynamic BCE (1: plain BCE).
    """

    rgb: float = 5.0
    dyn: float = 0.05
    scale: float = 0.1
    dyn_pos_weight_cap: float = 1.0


def dynamic_loss(logits: torch.Tensor, target: torch.Tensor, *, pos_weight_cap: float = 1.0) -> torch.Tensor:
    """Binary cross-entropy of dynamic logits (N,) against soft targets (N,) in [0, 1], the moving side weighted:

    ``L = −mean_i [w · t_i log σ(x_i) + (1 − t_i) log(1 − σ(x_i))]`` with ``w = clamp(Σ(1 − t) / Σ t, 1, cap)``
    (PyTorch's ``pos_weight``; ``w`` is a constant of the batch, not differentiated). ``cap = 1`` is plain BCE.
    """
    n_pos, n_neg = target.sum(), (1 - target).sum()
    # w = clamp(Σ(1 − t) / Σ t, 1, cap): the few moving Gaussians weigh as much as the many static ones
    w = (n_neg / n_pos.clamp(min=1e-6)).clamp(1.0, pos_weight_cap).detach()
    return nnf.binary_cross_entropy_with_logits(logits, target, pos_weight=w)


@dataclass(frozen=True)
class DriveTerms:
    """One drive's loss terms.

    Attributes:
        rgb: the L1 RGB error of each supervised view (scalars).
        dyn: the dynamic logits' BCE (scalar).
        scale: the log-scale L1 (scalar).
    """

    rgb: list[torch.Tensor]
    dyn: torch.Tensor
    scale: torch.Tensor


def frames_of(seq: DrivingSequence, device: torch.device | str | None = None) -> list[Frame]:
    """The drive as a list of :class:`~iclr26.unisplat.model.Frame` tensors on ``device`` (torch's default device if
    None)."""

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a, dtype=np.float32), device=device)

    return [Frame(t(seq.images[f]), t(seq.rel_depth[f]), t(seq.dynamic[f]), t(seq.rig), t(seq.intrinsic),
                  t(seq.ego_poses[f])) for f in range(seq.images.shape[0])]  # fmt: skip


def drive_terms(model: UniSplat, seq: DrivingSequence, views: tuple[int, ...], bg: torch.Tensor, *,
                dyn_pos_weight_cap: float = 1.0) -> DriveTerms:  # fmt: skip
    """Stream ``seq`` (earlier frames without gradients), decode its last frame and return the loss terms of the
    novel views ``views`` (rendered at half resolution). Every tensor goes to the device of the background colour
    ``bg`` (the model's)."""
    frames = frames_of(seq, bg.device)
    history = None
    if model.fusion:
        with torch.no_grad():
            for f in frames[:-1]:
                o = model.step(f, history)
                history = (o.scaffold, o.valid, f.ego_pose)
    out = model.step(frames[-1], history)
    device = frames[-1].images.device
    h, w = seq.images.shape[-2:]
    k = frames[-1].intrinsic.clone()
    k[:2] *= 0.5  # the loss is taken at half resolution (the camera's pixels twice as large)
    rgb = []
    for q in views:
        r = out.render_set.render(torch.as_tensor(seq.novel[q], dtype=torch.float32, device=device), k, h // 2,
                                  w // 2, background=bg)  # fmt: skip
        target = nnf.avg_pool2d(torch.as_tensor(seq.novel_images[q], device=device), 2)
        rgb.append((r.image[:3] - target).abs().mean())  # step 1: L1 on the novel view
    g = out.gaussians
    sup = g.dynamic_target >= 0
    # step 2: BCE of the dynamic logits against each Gaussian's share of moving pixels/points
    dyn = dynamic_loss(g.dynamic_logits[sup], g.dynamic_target[sup], pos_weight_cap=dyn_pos_weight_cap)
    log_s = torch.log(torch.as_tensor(seq.depth_scale[-1], dtype=torch.float32, device=device))
    scale = (out.log_scale - log_s).abs().mean()  # step 3: |log γ − log γ*|
    return DriveTerms(rgb, dyn, scale)


def drive_loss(model: UniSplat, seq: DrivingSequence, views: tuple[int, ...], bg: torch.Tensor,
               weights: LossWeights) -> torch.Tensor:  # fmt: skip
    """One drive's loss, ``w_rgb · mean over views of L1 + w_dyn · BCE + w_scale · |log γ − log γ*|``."""
    terms = drive_terms(model, seq, views, bg, dyn_pos_weight_cap=weights.dyn_pos_weight_cap)
    rgb = 0.0
    for term in terms.rgb:
        rgb = rgb + term / len(views)
    # the paper's 5·L1 + 0.05·LPIPS + 0.05·dynamic + 0.25·aux, without LPIPS and aux, plus the scale L1
    return weights.rgb * rgb + weights.dyn * terms.dyn + weights.scale * terms.scale


def batch_loss(model: UniSplat, draws: list[tuple[DrivingSequence, tuple[int, ...]]], items: range,
               bg: torch.Tensor, weights: LossWeights) -> torch.Tensor:  # fmt: skip
    """The mean loss of the items ``items`` of a batch of drives (all of them in one process, a rank's shard under
    torchrun).

    The batch's items are the (drive, novel view) pairs, drive-major, ``len(views)`` per drive. Item (d, v)'s loss
    is ``w_rgb · L1_{d,v} + w_dyn · BCE_d + w_scale · scale_d``; a drive's loss (:func:`drive_loss`) is the mean
    over its views of these, and the batch's loss the mean over its drives, so the batch's loss is the mean over
    all items: here each drive with ``k`` of its views in ``items`` is streamed once and contributes ``k /
    len(items)`` times its loss over those views. ``batch_loss(items) · len(items) / n_items`` summed over a
    partition of the items is the batch's loss.
    """
    per_drive = len(draws[0][1])
    chosen: dict[int, list[int]] = {}
    for i in items:
        chosen.setdefault(i // per_drive, []).append(draws[i // per_drive][1][i % per_drive])
    total = None
    for d, views in chosen.items():
        term = drive_loss(model, draws[d][0], tuple(views), bg, weights) * (len(views) / len(items))
        total = term if total is None else total + term
    return total


class BatchLoss(nn.Module):
    """A module whose forward is :func:`batch_loss`, so DistributedDataParallel can wrap the model's training."""

    def __init__(self, model: UniSplat, bg: torch.Tensor, weights: LossWeights) -> None:
        super().__init__()
        self.model, self.bg, self.weights = model, bg, weights

    def forward(self, draws: list[tuple[DrivingSequence, tuple[int, ...]]], items: range) -> torch.Tensor:
        return batch_loss(self.model, draws, items, self.bg, self.weights)
