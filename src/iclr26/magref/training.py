"""Conditioning layouts, training and sampling of the tiny generator: the MAGREF training code the release lacks.

Layouts (what ``y`` and the target latent are, per item):

- ``i2v`` (base-model pretraining, Wan I2V): target = the clip; y = [first-frame mask, VAE(frame 0, 0, ..., 0)].
- ``t2v`` (text-to-video pretraining): target = the clip; y = 0 (the I2V channels carry nothing).
- ``canvas`` (MAGREF masked guidance): target = the clip with frame 0 replaced by the reference canvas (the I2V
  "first frame" becomes the canvas; the official ``generate.py`` drops these first frames of the output);
  y = [canvas-mask channels, VAE(canvas, 0, ..., 0)]; subject i's region is its reference's cells on latent frame 0.
- ``temporal`` (the vanilla temporal mask): one leading latent frame per reference slot (each reference centred on a
  white frame; a missing slot is white with mask 0), then the clip's latent frames after the first; y masks the
  reference frames wholly; subject i's region is its reference's cells on its own frame.

One training step (flow matching, :mod:`.flow`): draw items from the pipeline, build the layout, z_t = (1-t) z_0 +
t eps with t ~ U(0, 1), minimise || v(concat(z_t, y), t, prompt) - (eps - z_0) ||^2 with AdamW.

In a world of several processes (``ctx.world`` under ``torchrun``, :mod:`iclr26.common.distributed`) :func:`train` is
data parallel: every rank draws the same global batch (items, t, eps, placebo permutation) from the shared generator,
runs the model (wrapped by :func:`~iclr26.common.distributed.data_parallel`) on its contiguous shard of the items, and
the wrapper averages the gradients. In one process the shard is the whole batch and the step is the plain one.

Dimension letters: B batch, K latent channels, s temporal stride, T latent frames, h/w latent cells, N subject slots,
J prompt tokens, F pixel frames, H/W pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, shard_range
from iclr26.magref.data import IDENTITY_ROLES, ROLES, Item, make_item
from iclr26.magref.flow import euler_sample, flow_matching_loss, interpolate
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.masking import (
    composite_canvas,
    dit_input,
    downsample_mask,
    mask_channels,
    masked_guidance,
    temporal_reference_frames,
)
from iclr26.magref.model import TinyVideoDiT

Layout = Literal["i2v", "t2v", "canvas", "temporal"]
MAX_SUBJECTS = 2


@dataclass(frozen=True)
class SpriteWorld:
    """The synthetic world's sizes and the training mixture.

    Attributes:
        size: frame height = width H (pixels).
        sprite: sprite size S.
        n_frames: F = s(T-1)+1.
        p_multi: share of two-subject clips.
        p_confusable: share of two-subject clips whose subjects share two attributes.
        fit: resize references to their canvas block (official) instead of only padding them.
    """

    size: int = 16
    sprite: int = 6
    n_frames: int = 5
    p_multi: float = 0.5
    p_confusable: float = 0.5
    fit: bool = False


@dataclass(frozen=True)
class Batch:
    """A model-ready batch.

    Attributes:
        z0: ``(B, K, T, h, w)`` target latents.
        y: ``(B, s+K, T, h, w)`` the masked-guidance condition.
        tokens: ``(B, J)`` prompt ids.
        subject_tokens: ``(B, N, J)`` subject i's identity words.
        regions: ``(B, N, T, h, w)`` subject regions on the latent grid.
        ref_pos: ``(B, N, 2)`` where subject i's reference sprite sits in the condition frame (top-left, pixels).
        out_from: first latent frame of the generated clip (frames after it decode to pixel frames 1..F-1).
    """

    z0: torch.Tensor
    y: torch.Tensor
    tokens: torch.Tensor
    subject_tokens: torch.Tensor
    regions: torch.Tensor
    ref_pos: torch.Tensor
    out_from: int


def subject_token_mask(tokens: torch.Tensor, n_slots: int = MAX_SUBJECTS) -> torch.Tensor:
    """``(J,)`` -> ``(N, J)``: slot i's colour/texture/shape tokens (non-padding)."""
    m = torch.zeros(n_slots, tokens.shape[0], dtype=torch.bool)
    for i in range(n_slots):
        m[i, i * ROLES : i * ROLES + IDENTITY_ROLES] = tokens[i * ROLES : i * ROLES + IDENTITY_ROLES] != 0
    return m


def build_batch(
    items: list[Item], layout: Layout, codec: CausalPatchify, world: SpriteWorld, gen: torch.Generator
) -> Batch:
    """The layout of the module docstring for each item, stacked.

    Raises:
        ValueError: for an unknown layout or an item with more subjects than slots.
    """
    if layout not in ("i2v", "t2v", "canvas", "temporal"):
        raise ValueError(f"layout: unknown {layout!r}; use i2v, t2v, canvas or temporal")
    p, s, hw = codec.p, codec.s, world.size
    z0s, ys, regs, refpos = [], [], [], []
    for it in items:
        n = len(it.identities)
        if n > MAX_SUBJECTS:
            raise ValueError(f"items: {n} subjects, the model has {MAX_SUBJECTS} slots")
        video = it.video[None]  # (1, C, F, H, W)
        f = video.shape[2]
        reg = torch.zeros(MAX_SUBJECTS, 1, hw // p, hw // p)
        pos = torch.zeros(MAX_SUBJECTS, 2)
        if layout in ("i2v", "t2v"):
            z0 = codec.encode(video)[0]
            if layout == "i2v":
                # Stage A, plain Wan I2V: the clip's own first frame, zeros after, with a whole-frame mask
                cond = torch.cat([video[:, :, :1], torch.zeros_like(video[:, :, 1:])], dim=2)
                y = masked_guidance(mask_channels(torch.ones(hw // p, hw // p), f, s), codec.encode(cond)[0])
            else:
                # the "start from a T2V backbone" ablation: no image condition, y = 0 in the same channels
                y = torch.zeros(s + codec.latent_channels, *z0.shape[1:])
            reg = reg.expand(-1, z0.shape[1], -1, -1)
        elif layout == "canvas":
            cv = composite_canvas(
                list(it.references), list(it.ref_masks), height=hw, width=hw, fit=world.fit, generator=gen
            )
            # the canvas takes the I2V first frame's place, so the generated clip is frames 1..F-1
            z0 = codec.encode(torch.cat([cv.image[None, :, None], video[:, :, 1:]], dim=2))[0]
            cond = torch.cat([cv.image[None, :, None], torch.zeros_like(video[:, :, 1:])], dim=2)
            # region-aware mask: 1 only on the references' valid pixels of the canvas (any-pixel downsampling)
            y = masked_guidance(mask_channels(downsample_mask(cv.mask, p), f, s), codec.encode(cond)[0])
            reg = torch.zeros(MAX_SUBJECTS, z0.shape[1], hw // p, hw // p)
            # M_sub^i on latent frame 0 only: disentanglement injects into first-frame tokens inside subject i's region
            reg[:n, 0] = downsample_mask(cv.region_masks, p)
            for i in range(n):  # where the reference's top-left landed: centred in its block (fit=False)
                x0, y0, x1, y1 = cv.blocks[i].tolist()
                rh, rw = it.references[i].shape[1:]
                pos[i] = torch.tensor([y0 + (y1 - y0 - rh) // 2, x0 + (x1 - x0 - rw) // 2], dtype=torch.float32)
        else:  # temporal
            frames = temporal_reference_frames(
                list(it.references), list(it.ref_masks), height=hw, width=hw, fit=world.fit
            )
            white = torch.ones(MAX_SUBJECTS, *frames.shape[1:])
            white[:n] = frames
            ref_lat = codec.encode(white[:, :, None])[:, :, 0]  # (N, K, h, w)
            clip = codec.encode(video)[0][:, 1:]  # (K, T-1, h, w)
            # vanilla temporal mask: each reference its own leading latent frame, whole-frame mask on those frames
            z0 = torch.cat([ref_lat.permute(1, 0, 2, 3), clip], dim=1)  # (K, N + T - 1, h, w)
            t_all = z0.shape[1]
            msk = torch.zeros(s, t_all, hw // p, hw // p)
            msk[:, :n] = 1.0
            cond = torch.zeros_like(z0)
            cond[:, :n] = z0[:, :n]
            y = masked_guidance(msk, cond)
            reg = torch.zeros(MAX_SUBJECTS, t_all, hw // p, hw // p)
            off = (hw - world.sprite) // 2
            for i in range(n):
                full = torch.zeros(hw, hw)
                full[off : off + world.sprite, off : off + world.sprite] = it.ref_masks[i]
                reg[i, i] = downsample_mask(full, p)
                pos[i] = torch.tensor([off, off], dtype=torch.float32)
        z0s.append(z0)
        ys.append(y)
        regs.append(reg)
        refpos.append(pos)
    out_from = MAX_SUBJECTS if layout == "temporal" else 1
    tokens = torch.stack([it.tokens for it in items])
    return Batch(
        torch.stack(z0s),
        torch.stack(ys),
        tokens,
        torch.stack([subject_token_mask(t) for t in tokens]),
        torch.stack(regs),
        torch.stack(refpos),
        out_from,
    )


def draw_items(
    n: int, world: SpriteWorld, gen: torch.Generator, *, multi: bool | None = None, confusable: bool | None = None
) -> list[Item]:
    """``n`` items from the pipeline; ``multi``/``confusable`` None draws them from the world's mixture."""
    out = []
    for _ in range(n):
        m = bool(torch.rand(1, generator=gen) < world.p_multi) if multi is None else multi
        c = bool(torch.rand(1, generator=gen) < world.p_confusable) if confusable is None else confusable
        out.append(
            make_item(
                gen,
                size=world.size,
                sprite_size=world.sprite,
                n_frames=world.n_frames,
                n_subjects=2 if m else 1,
                confusable=c,
            )
        )
    return out


def permute_regions(regions: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """The placebo control: each item's region masks reassigned to subjects by a random permutation."""
    # the placebo control: subject i's value goes to a randomly chosen subject's region, breaking the pairing
    perm = torch.stack([torch.randperm(regions.shape[1], generator=gen) for _ in range(regions.shape[0])])
    return regions[torch.arange(regions.shape[0])[:, None], perm]


def velocity_fn(model: TinyVideoDiT, batch: Batch, alpha: float, regions: torch.Tensor | None = None):  # noqa: ANN201
    """``v(z_t, t)`` of the model for ``batch``'s condition, prompt and (possibly replaced) regions."""
    reg = batch.regions if regions is None else regions

    def v(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return model(
            dit_input(z, batch.y), t, batch.tokens, regions=reg, subject_tokens=batch.subject_tokens, alpha=alpha
        )

    return v


@dataclass(frozen=True)
class TrainSpec:
    """How one arm trains.

    Attributes:
        layout: the conditioning layout.
        alpha: disentanglement strength (0 = off).
        placebo: inject each subject's value into a randomly chosen subject's region (the control).
        steps: optimiser steps.
        batch_size: items per step.
        lr: AdamW learning rate.
    """

    layout: Layout
    alpha: float
    placebo: bool
    steps: int
    batch_size: int
    lr: float


def train(
    model: TinyVideoDiT,
    spec: TrainSpec,
    codec: CausalPatchify,
    sprites: SpriteWorld,
    gen: torch.Generator,
    *,
    world: World = SINGLE,
    device: torch.device | None = None,
) -> list[float]:
    """Train ``model`` in place (module docstring's step); returns the per-step losses of the global batch.

    Every rank draws the same global batch of ``spec.batch_size`` items (and t, eps, placebo permutation) from
    ``gen``; rank r runs the model on its contiguous shard (:func:`~iclr26.common.distributed.shard_range`) and
    backpropagates its shard's mean loss times ``world.size x`` its share of the batch, so the wrapper's gradient
    average is the global batch's gradient and every rank takes the same AdamW step. The recorded loss is the shards'
    weighted losses summed over the ranks. In one process the shard is the batch, the weight 1.

    Args:
        model: the generator, already on ``device``.
        spec: how the arm trains.
        codec: the latent codec.
        sprites: the synthetic world.
        gen: the CPU generator of the data, t, eps and the placebo permutation (shared by the ranks).
        world: the run's processes (``ctx.world``).
        device: where the batch goes (``ctx.device``); default the model's.

    Raises:
        ValueError: if the batch has fewer items than there are ranks.
    """
    b = spec.batch_size
    if b < world.size:
        raise ValueError(f"batch_size={b} is smaller than the {world.size} ranks; every rank needs a shard")
    device = device if device is not None else next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.0, **fused_on(device))
    shard = shard_range(b, world.rank, world.size)
    rows, share = slice(shard.start, shard.stop), len(shard) / b
    # with alpha = 0 the disentanglement path takes no part, alike on every rank
    net = data_parallel(model, world, device=device, find_unused_parameters=True)
    losses: list[float] = []
    for _ in range(spec.steps):
        batch = to_device(build_batch(draw_items(b, sprites, gen), spec.layout, codec, sprites, gen), device)
        t = torch.rand(b, generator=gen).to(device)  # flow time t ~ U(0, 1), one per item (1 = noise)
        eps = torch.randn(batch.z0.shape, generator=gen).to(device)
        zt = interpolate(batch.z0, eps, t)  # z_t = (1 - t) z_0 + t eps
        reg = permute_regions(batch.regions, gen) if spec.placebo else batch.regions
        loss = shard_loss(net, batch, zt, t, eps, reg, spec.alpha, rows)
        opt.zero_grad(set_to_none=True)
        (loss * (share * world.size)).backward()
        opt.step()
        losses.append(loss.detach() * share)
    values = [float(x) for x in losses]  # one host sync per run, not per step
    return all_reduce_sum(values) if world.is_distributed else values  # summed over ranks: the global batch's loss


def fused_on(device: torch.device) -> dict[str, bool]:
    """AdamW's fused CUDA kernel where the device is CUDA; the plain (bit-identical) CPU path elsewhere."""
    return {"fused": True} if device.type == "cuda" else {}


def to_device(batch: Batch, device: torch.device) -> Batch:
    """``batch`` with its tensors on ``device`` (the same object on the CPU)."""
    if device.type == "cpu":
        return batch
    return Batch(*(getattr(batch, f).to(device) for f in Batch.__dataclass_fields__ if f != "out_from"), batch.out_from)


def shard_loss(
    model: torch.nn.Module, batch: Batch, zt: torch.Tensor, t: torch.Tensor, eps: torch.Tensor, reg: torch.Tensor,
    alpha: float, rows: slice,
) -> torch.Tensor:  # fmt: skip
    """The flow-matching loss of the items ``rows`` of a global batch (a data-parallel rank's shard).

    The loss is a mean over equally sized items, so ``shard_loss(rows) * len(rows) / B`` summed over a partition of
    the batch's rows is the whole batch's loss.
    """
    with autocast(zt.device):
        v = model(
            dit_input(zt[rows], batch.y[rows]), t[rows], batch.tokens[rows], regions=reg[rows],
            subject_tokens=batch.subject_tokens[rows], alpha=alpha,
        )  # fmt: skip
    # L = || v(concat(z_t, y), t, prompt) - (eps - z_0) ||^2 (rectified flow, in float32)
    return flow_matching_loss(v.float(), batch.z0[rows], eps[rows])


def generate(
    model: TinyVideoDiT,
    batch: Batch,
    codec: CausalPatchify,
    *,
    alpha: float,
    steps: int,
    shift: float,
    gen: torch.Generator,
    regions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sample the clips of ``batch``: ``(B, C, F-1, H, W)`` pixel frames 1..F-1 (the condition frames dropped)."""
    device = next(model.parameters()).device
    batch = to_device(batch, device)
    regions = regions.to(device) if regions is not None else None
    model.eval()
    noise = torch.randn(batch.z0.shape, generator=gen).to(device)
    with autocast(device):
        z = euler_sample(velocity_fn(model, batch, alpha, regions), noise, steps=steps, shift=shift)
    model.train()
    out = z[:, :, batch.out_from :].float()  # drop the condition frames: canvas/first frame, or the N references
    lead = torch.zeros_like(out[:, :, :1])  # a dummy first latent frame, dropped after decoding
    return codec.decode(torch.cat([lead, out], dim=2))[:, :, 1:].cpu()


def autocast(device: torch.device) -> torch.autocast:
    """bf16 autocast on CUDA (the field's mixed precision); off elsewhere, so CPU results stay bit-identical."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def copy_paste_clips(batch: Batch, codec: CausalPatchify, n_frames: int) -> torch.Tensor:
    """The laziest generator: the condition frame (the reference canvas) pasted into every generated frame,
    ``(B, C, F-1, H, W)``. Every criterion on identity must fail it: it shows each reference, but not where the prompt
    puts it, and it does not move."""
    canvas = codec.decode(batch.y[:, codec.s :, :1])[:, :, :1]  # (B, C, 1, H, W): the first latent frame's image
    return canvas.expand(-1, -1, n_frames - 1, -1, -1).clone()


def ground_truth(batch_items: list[Item]) -> torch.Tensor:
    """``(B, C, F-1, H, W)``: the items' frames 1..F-1."""
    return torch.stack([it.video[:, 1:] for it in batch_items])


def to_numpy(x: torch.Tensor) -> np.ndarray:
    """A detached float32 NumPy copy."""
    return x.detach().float().cpu().numpy()
