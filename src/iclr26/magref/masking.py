"""Masked guidance: the region-aware composite canvas, its mask, and the Wan-I2V channel layout.

MAGREF: Masked Guidance for Any-Reference Video Generation with Subject Disentanglement, ICLR 2026, arXiv
2505.23742 (§3, "masked guidance"). The steps follow the official inference code (MAGREF-Video/MAGREF,
``magref/subject2video.py``, ``process_refimg``, ``resize_and_pad`` and ``generate``), read for facts only:

1. Choose the block layout for N references: the smallest of 1/2/3/4/6/8 blocks that holds them, on a white canvas
   (1 block: whole canvas; 2 and 3: vertical strips; 4: 2x2; 6: 3 columns x 2 rows; 8: 4 columns x 2 rows). The
   block order is shuffled.
2. Each reference is resized with its aspect ratio kept (``fit=True``, as in the official code) or kept at its size
   (``fit=False``) and padded with white, centred in its block; the binary mask marks its valid pixels.
3. The mask is downsampled by the VAE's spatial stride: a latent cell is 1 if any pixel of its patch is 1.
4. Channel layout (Wan2.1 I2V): with F = s(T-1)+1 pixel frames and temporal stride s, the pixel-frame mask is the
   canvas mask on frame 0 and zeros after; frame 0 is repeated s times and the result is folded into ``s`` mask
   channels over T latent frames. ``y = concat(mask_s, VAE(canvas, 0, ..., 0))`` and the DiT input is
   ``concat(z_t, y)``: 16 + 4 + 16 = 36 channels for Wan (no architecture change relative to I2V).

The *vanilla temporal mask* baseline (the paper's ablation "I2V + vanilla mask") puts each reference in its own
leading frame instead, with a whole-frame mask on those frames.

Dimension letters: N references, C colour channels, H/W pixel height/width, h/w latent height/width, F pixel frames,
T latent frames, s temporal stride, K latent channels.

Deviations: ``fit=False`` (padding without rescaling) is offered for tiny canvases, where rescaling a few-pixel
sprite changes its texture; resizing uses bilinear interpolation instead of PIL's Lanczos.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

#: Block counts the official layout supports (``available_scales`` in subject2video.py).
BLOCK_COUNTS = (1, 2, 3, 4, 6, 8)
MAX_REFERENCES = BLOCK_COUNTS[-1]


def block_layout(n_refs: int, height: int, width: int) -> list[tuple[int, int, int, int]]:
    """The canvas blocks ``(x0, y0, x1, y1)`` for ``n_refs`` references, unshuffled, as in the official code.

    Raises:
        ValueError: if ``n_refs`` is not in 1..8 or the canvas is too small for the blocks.
    """
    if n_refs < 1:
        raise ValueError(f"n_refs: need at least one reference, got {n_refs}")
    if n_refs > MAX_REFERENCES:
        raise ValueError(f"n_refs: at most {MAX_REFERENCES} references fit the layout, got {n_refs}")
    scale = min(s for s in BLOCK_COUNTS if s >= n_refs)
    cols, rows = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2), 6: (3, 2), 8: (4, 2)}[scale]
    if width < cols or height < rows:
        raise ValueError(f"canvas {height}x{width} is too small for {cols}x{rows} blocks")
    bw, bh = width // cols, height // rows
    blocks = []
    for r in range(rows):
        for c in range(cols):
            # the last column/row takes the remainder (x_end = target_width in the official code)
            x1 = width if c == cols - 1 else bw * (c + 1)
            y1 = height if r == rows - 1 else bh * (r + 1)
            blocks.append((bw * c, bh * r, x1, y1))
    return blocks


@dataclass(frozen=True)
class Canvas:
    """A composite reference canvas.

    Attributes:
        image: ``(C, H, W)`` the canvas, white (+1) where no reference lies.
        mask: ``(H, W)`` 1 on the references' valid pixels, else 0.
        region_masks: ``(N, H, W)`` the valid pixels of each reference (reference order, not block order).
        blocks: ``(N, 4)`` the block ``(x0, y0, x1, y1)`` each reference was placed in (reference order).
    """

    image: torch.Tensor
    mask: torch.Tensor
    region_masks: torch.Tensor
    blocks: torch.Tensor


def _fit_and_pad(ref: torch.Tensor, valid: torch.Tensor, bh: int, bw: int, fit: bool) -> tuple[torch.Tensor, ...]:
    """Resize ``ref`` (C, h, w) keeping its aspect ratio (or not at all), then centre-pad it with white to (bh, bw)."""
    _, h, w = ref.shape
    if fit:
        if w / h > bw / bh:
            nw, nh = bw, max(1, int(bw / (w / h)))
        else:
            nh, nw = bh, max(1, int(bh * (w / h)))
        ref = F.interpolate(ref[None], size=(nh, nw), mode="bilinear", align_corners=False)[0]
        valid = F.interpolate(valid[None, None].float(), size=(nh, nw), mode="nearest")[0, 0]
    elif h > bh or w > bw:
        raise ValueError(f"references: a {h}x{w} reference does not fit a {bh}x{bw} block without fit=True")
    nh, nw = ref.shape[1:]
    top, left = (bh - nh) // 2, (bw - nw) // 2
    img = torch.ones(ref.shape[0], bh, bw, dtype=ref.dtype)
    msk = torch.zeros(bh, bw, dtype=ref.dtype)
    v = valid.to(ref.dtype)
    # white outside the cut-out's valid pixels (the pipeline's segmentation), the reference inside
    img[:, top : top + nh, left : left + nw] = ref * v + (1 - v)
    msk[top : top + nh, left : left + nw] = v
    return img, msk


def composite_canvas(
    references: list[torch.Tensor],
    valid_masks: list[torch.Tensor] | None,
    *,
    height: int,
    width: int,
    fit: bool,
    generator: torch.Generator | None = None,
    shuffle: bool = True,
) -> Canvas:
    """Build the region-aware canvas of ``references`` (official ``process_refimg``, steps 1-2 of the docstring).

    Args:
        references: N tensors ``(C, h_i, w_i)`` in [-1, 1], in prompt order (reference i is subject i).
        valid_masks: N tensors ``(h_i, w_i)`` marking each reference's pixels (a segmentation cut-out), or None
            for whole rectangles.
        height: canvas height H.
        width: canvas width W.
        fit: resize each reference to its block keeping the aspect ratio (official) or only pad it.
        generator: draws the block shuffle.
        shuffle: shuffle the block order (official: always).

    Returns:
        :class:`Canvas`.

    Raises:
        ValueError: for zero references, more than 8, references of different channel counts, masks of the wrong
            size, or a reference too large for its block without ``fit``.
    """
    n = len(references)
    if n == 0:
        raise ValueError("references: need at least one reference image, got none")
    if n > MAX_REFERENCES:
        raise ValueError(f"references: at most {MAX_REFERENCES} references fit the layout, got {n}")
    chans = {r.shape[0] for r in references}
    if len(chans) != 1 or any(r.dim() != 3 for r in references):
        raise ValueError(
            f"references: need (C, h, w) tensors with one C, got shapes {[tuple(r.shape) for r in references]}"
        )
    if valid_masks is not None:
        if len(valid_masks) != n:
            raise ValueError(f"valid_masks: need one mask per reference ({n}), got {len(valid_masks)}")
        for i, (r, m) in enumerate(zip(references, valid_masks, strict=True)):
            if tuple(m.shape) != tuple(r.shape[1:]):
                raise ValueError(
                    f"valid_masks[{i}]: shape {tuple(m.shape)} differs from reference {tuple(r.shape[1:])}"
                )
    blocks = block_layout(n, height, width)
    if shuffle:
        order = torch.randperm(len(blocks), generator=generator).tolist()
        blocks = [blocks[i] for i in order]
    c = references[0].shape[0]
    image = torch.ones(c, height, width, dtype=references[0].dtype)
    regions = torch.zeros(n, height, width, dtype=references[0].dtype)
    for i, (ref, (x0, y0, x1, y1)) in enumerate(zip(references, blocks, strict=False)):
        valid = valid_masks[i] if valid_masks is not None else torch.ones(ref.shape[1:])
        img, msk = _fit_and_pad(ref, valid, y1 - y0, x1 - x0, fit)
        image[:, y0:y1, x0:x1] = img
        regions[i, y0:y1, x0:x1] = msk
    mask = regions.amax(dim=0)
    return Canvas(image, mask, regions, torch.tensor(blocks[:n], dtype=torch.long))


def downsample_mask(mask: torch.Tensor, factor: int) -> torch.Tensor:
    """``(..., H, W)`` -> ``(..., H/f, W/f)``: a cell is 1 if any pixel of its f x f patch is non-zero (official).

    Raises:
        ValueError: if H or W is not a multiple of ``factor``.
    """
    h, w = mask.shape[-2:]
    if h % factor or w % factor:
        raise ValueError(f"mask: size {h}x{w} is not a multiple of the stride {factor}")
    pooled = F.max_pool2d((mask != 0).float().reshape(-1, 1, h, w), factor)
    return pooled.reshape(*mask.shape[:-2], h // factor, w // factor).to(mask.dtype)


def latent_frames(n_frames: int, temporal_stride: int) -> int:
    """T = (F - 1) / s + 1 latent frames of a causal VAE (Wan: 81 frames, s = 4 -> 21).

    Raises:
        ValueError: if F - 1 is not a multiple of s.
    """
    if n_frames < 1 or (n_frames - 1) % temporal_stride:
        raise ValueError(f"n_frames: need F = s*(T-1)+1 frames for stride s={temporal_stride}, got {n_frames}")
    return (n_frames - 1) // temporal_stride + 1


def mask_channels(first_frame_mask: torch.Tensor, n_frames: int, temporal_stride: int) -> torch.Tensor:
    """The Wan-I2V mask channels: ``(h, w)`` first-frame latent mask -> ``(s, T, h, w)``.

    Official ``generate``: msk = zeros(F, h, w); msk[0] = mask; msk = concat(repeat(msk[0], s), msk[1:]) (F+s-1
    frames); view as (T, s, h, w); transpose to (s, T, h, w). Channel j of latent frame t is pixel frame s*t + j of
    the padded sequence, so latent frame 0 carries the mask in all s channels and later frames are zero.
    """
    h, w = first_frame_mask.shape
    t = latent_frames(n_frames, temporal_stride)
    msk = torch.zeros(n_frames, h, w, dtype=first_frame_mask.dtype)
    msk[0] = first_frame_mask
    msk = torch.cat([msk[:1].repeat(temporal_stride, 1, 1), msk[1:]], dim=0)  # (F + s - 1, h, w)
    return msk.reshape(t, temporal_stride, h, w).transpose(0, 1).contiguous()  # (s, T, h, w)


def masked_guidance(mask_s: torch.Tensor, cond_latent: torch.Tensor) -> torch.Tensor:
    """``y = concat(mask_s, cond_latent)`` along channels: ``(s, T, h, w)``, ``(K, T, h, w)`` -> ``(s+K, T, h, w)``.

    ``cond_latent`` is the VAE encoding of the video ``(canvas, 0, ..., 0)``.

    Raises:
        ValueError: if the latent frames or sizes differ.
    """
    if mask_s.shape[1:] != cond_latent.shape[1:]:
        raise ValueError(f"mask {tuple(mask_s.shape)} and latent {tuple(cond_latent.shape)} differ in (T, h, w)")
    # masked guidance: y = concat(mask_s, VAE(canvas, 0, ..., 0)), the Wan-I2V condition (s + K channels)
    return torch.cat([mask_s, cond_latent], dim=0)


def dit_input(noisy: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The DiT input ``concat(z_t, y)`` along the channel dimension (Wan ``model.py``: noisy latent first).

    Works batched (``(B, K, T, h, w)``, channel dim 1) or not (``(K, T, h, w)``, channel dim 0).

    Raises:
        ValueError: if the non-channel dimensions differ.
    """
    dim = 1 if noisy.dim() == 5 else 0
    if noisy.shape[:dim] + noisy.shape[dim + 1 :] != y.shape[:dim] + y.shape[dim + 1 :]:
        raise ValueError(f"noisy latent {tuple(noisy.shape)} and condition {tuple(y.shape)} differ outside channels")
    # pixel-level channel concatenation: the DiT input concat(z_t, y) (Wan: 16 + 4 + 16 = 36 channels)
    return torch.cat([noisy, y], dim=dim)


def temporal_reference_frames(
    references: list[torch.Tensor], valid_masks: list[torch.Tensor] | None, *, height: int, width: int, fit: bool
) -> torch.Tensor:
    """Vanilla temporal masking: each reference centred on its own white frame, ``(N, C, H, W)`` in prompt order.

    Raises:
        ValueError: for zero references or more than 8 (the same limit as the canvas, for a like-for-like ablation).
    """
    if len(references) == 0:
        raise ValueError("references: need at least one reference image, got none")
    if len(references) > MAX_REFERENCES:
        raise ValueError(f"references: at most {MAX_REFERENCES} references, got {len(references)}")
    frames = []
    for i, ref in enumerate(references):
        valid = valid_masks[i] if valid_masks is not None else torch.ones(ref.shape[1:])
        img, _ = _fit_and_pad(ref, valid, height, width, fit)
        frames.append(img)
    return torch.stack(frames)
