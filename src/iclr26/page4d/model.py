"""A small VGGT-style geometry transformer with PAGE-4D's dynamics-aware aggregator built in.

PAGE-4D: Disentangled Pose and Geometry Estimation for (VGGT-)4D Perception, ICLR 2026, arXiv 2510.17568. The
layout follows VGGT as PAGE-4D's official code uses it (kaichen-z/PAGE4D ``model/page/models/aggregator.py``,
``vggt.py``; read for facts): per frame a patch embedding, one camera token and 4 register tokens (one set for the
first frame, one shared by the others), then ``depth`` rounds of frame attention (tokens of one frame) followed
by global attention (all frames' tokens); a camera head on the camera token and a dense depth head on the patch
tokens, both reading the last round's frame and global outputs concatenated.

Dimension letters: ``B`` batch, ``S`` frames, ``P`` tokens per frame, ``N = S·P``, ``D`` width, ``Hh`` heads,
``Dh = D/Hh``, ``H, W`` image size, ``p`` patch size, ``h = H/p``, ``w = W/p``.

The blocks split into three groups as PAGE-4D's recipe does for VGGT's 24 (frozen 0–9, trained 10–19, frozen
20–23): ``early`` blocks, ``middle`` blocks (``middle = (start, stop)``) and the rest. The mask head reads the
tokens after the last early frame block; every middle global block uses the dynamics-aware attention with the
current strength ``alpha`` (:attr:`TinyVGGT.alpha`, 0 = plain VGGT).

Deviations from VGGT: a convolutional patch embedding with learned absolute positions instead of DINOv2 (2D RoPE
in every block, as VGGT); no QK-norm; the camera head is an MLP on the last camera token (VGGT: a 4-block trunk with
iterative refinement) and predicts translation and quaternion (no field of view: intrinsics are known here); the
depth head is a linear map from each patch token to its p×p depths with an ``exp`` activation (VGGT: DPT with
confidence); no point-map or track head (points follow from depth and cameras).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from iclr26.page4d.aggregator import DynamicsMaskHead, dynamics_aware_attention, dynamics_bias_vectors

__all__ = ["Block", "Predictions", "TinyVGGT", "depth_loss", "pose_loss", "rope_2d"]


def rope_2d(x: torch.Tensor, pos: torch.Tensor, *, base: float = 100.0) -> torch.Tensor:
    """2D rotary position embedding (VGGT's ``RotaryPositionEmbedding2D``, frequency 100): the first half of each
    head's channels is rotated by angles ``y·ω_k``, the second half by ``x·ω_k``, ``ω_k = base^(−2k/(Dh/2))``.

    Args:
        x: (B, Hh, N, Dh) queries or keys, Dh divisible by 4.
        pos: (N, 2) integer (y, x) positions (special tokens at (0, 0), patches from (1, 1)).
        base: frequency base.

    Returns:
        (B, Hh, N, Dh), the rotated ``x``.
    """
    dh = x.shape[-1]
    if dh % 4:
        raise ValueError(f"head width must be divisible by 4 for 2D RoPE, got {dh}")
    half = dh // 2
    freqs = base ** (-torch.arange(0, half, 2, dtype=torch.float32, device=x.device) / half)  # (Dh/4,)
    out = []
    for axis, chunk in enumerate(x.split(half, dim=-1)):
        ang = pos[:, axis, None].to(torch.float32) * freqs  # (N, Dh/4)
        ang = torch.cat([ang, ang], dim=-1).to(x.dtype)  # (N, Dh/2)
        a, b = chunk.chunk(2, dim=-1)
        rotated = torch.cat([-b, a], dim=-1)
        out.append(chunk * ang.cos() + rotated * ang.sin())
    return torch.cat(out, dim=-1)


class Block(nn.Module):
    """Pre-norm transformer block: ``x + γ1·Attn(LN(x))``, then ``x + γ2·MLP(LN(x))`` (LayerScale γ, as VGGT),
    with 2D RoPE on queries and keys when positions are given."""

    def __init__(self, dim: int, heads: int, *, mlp_ratio: float = 4.0, init_scale: float = 0.1) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.gamma1 = nn.Parameter(torch.full((dim,), init_scale))
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.gamma2 = nn.Parameter(torch.full((dim,), init_scale))

    def forward(self, x: torch.Tensor, pos: torch.Tensor | None = None, r: torch.Tensor | None = None,
                c: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """(B, N, D) -> (B, N, D); ``pos`` (N, 2) token positions for RoPE; ``r``, ``c`` (B, N) add the logit bias
        ``r_i c_j`` (see aggregator)."""
        b, n, d = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # (B, Hh, N, Dh) each
        if pos is not None:
            q, k = rope_2d(q, pos), rope_2d(k, pos)
        a = dynamics_aware_attention(q, k, v, r, c).transpose(1, 2).reshape(b, n, d)
        x = x + self.gamma1 * self.proj(a)
        return x + self.gamma2 * self.mlp(self.norm2(x))


@dataclass
class Predictions:
    """Outputs of :class:`TinyVGGT`.

    Attributes:
        pose_enc: (B, S, 7) translation and quaternion ``(x, y, z, w)`` of each camera-from-world (frame 0's is
            the reference).
        depth: (B, S, H, W) depth > 0.
        mask: (B, S, h, w) dynamics scores c ∈ (−½, ½), or None when the mask is off (α = 0).
    """

    pose_enc: torch.Tensor
    depth: torch.Tensor
    mask: torch.Tensor | None


def _special(tokens: torch.Tensor, b: int, s: int) -> torch.Tensor:
    """(1, 2, X, D) -> (B·S, X, D): entry 0 for each sequence's first frame, entry 1 for the others."""
    first = tokens[:, :1].expand(b, 1, *tokens.shape[2:])
    rest = tokens[:, 1:].expand(b, s - 1, *tokens.shape[2:])
    return torch.cat([first, rest], dim=1).reshape(b * s, *tokens.shape[2:])


class TinyVGGT(nn.Module):
    """VGGT in miniature, with the dynamics-aware aggregator (mask head and masked middle global blocks).

    Args:
        img_size: (H, W), each divisible by ``patch``.
        patch: patch size p.
        dim: width D.
        depth: rounds of (frame block, global block).
        heads: attention heads.
        n_register: register tokens per frame (VGGT: 4).
        middle: ``(start, stop)`` of the middle blocks (trained and masked; VGGT-1B/PAGE-4D: (10, 20) of 24).
        mask_hidden: mask head width (official 256).
    """

    def __init__(self, *, img_size: tuple[int, int] = (32, 32), patch: int = 8, dim: int = 64, depth: int = 8,
                 heads: int = 4, n_register: int = 4, middle: tuple[int, int] = (3, 7),
                 mask_hidden: int = 32) -> None:  # fmt: skip
        super().__init__()
        h, w = img_size
        if patch < 1 or h % patch or w % patch:
            raise ValueError(f"img_size {img_size} must be divisible by patch ({patch})")
        if not 1 <= middle[0] < middle[1] <= depth:
            raise ValueError(f"middle must satisfy 1 <= start < stop <= depth ({depth}), got {middle}")
        self.img_size, self.patch, self.dim, self.depth = (h, w), patch, dim, depth
        self.grid = (h // patch, w // patch)
        self.middle = middle
        self.n_special = 1 + n_register
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, self.grid[0] * self.grid[1], dim) * 0.02)
        self.camera_token = nn.Parameter(torch.randn(1, 2, 1, dim) * 0.02)
        self.register_token = nn.Parameter(torch.randn(1, 2, n_register, dim) * 0.02)
        if (dim // heads) % 4:
            raise ValueError(f"dim/heads ({dim}/{heads}) must be divisible by 4 for 2D RoPE")
        gy, gx = torch.meshgrid(torch.arange(self.grid[0]) + 1, torch.arange(self.grid[1]) + 1, indexing="ij")
        patch_pos = torch.stack([gy.flatten(), gx.flatten()], dim=1)
        # special tokens at (0, 0), patches at (row + 1, col + 1), as VGGT
        self.register_buffer("token_pos", torch.cat([torch.zeros(self.n_special, 2, dtype=torch.long), patch_pos]),
                             persistent=False)  # fmt: skip
        self.frame_blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.global_blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.mask_head = DynamicsMaskHead(dim, hidden=mask_hidden)
        self.camera_head = nn.Sequential(nn.LayerNorm(2 * dim), nn.Linear(2 * dim, 2 * dim), nn.GELU(),
                                         nn.Linear(2 * dim, 7))  # fmt: skip
        self.depth_head = nn.Sequential(nn.LayerNorm(2 * dim), nn.Linear(2 * dim, patch * patch))
        with torch.no_grad():  # start at the identity pose (quaternion w = 1) and depth 1
            self.camera_head[-1].weight.mul_(0.1)
            self.camera_head[-1].bias.copy_(torch.tensor([0, 0, 0, 0, 0, 0, 1.0]))
        #: mask strength α used by the middle global blocks (0: plain VGGT). Set it from a MaskSchedule.
        self.alpha = 0.0

    @property
    def mask_after(self) -> int:
        """Index of the frame block whose output the mask head reads (the last early block; official: 9)."""
        return self.middle[0] - 1

    def check_images(self, images: torch.Tensor) -> None:
        """Raise ValueError unless ``images`` is a finite (B, S, 3, H, W) batch of this model's size, S >= 1."""
        if images.ndim != 5 or images.shape[2] != 3:
            raise ValueError(f"images must be (B, S, 3, H, W), got {tuple(images.shape)}")
        if images.shape[1] < 1:
            raise ValueError("images hold no frames (S = 0)")
        if tuple(images.shape[3:]) != self.img_size:
            raise ValueError(f"images are {tuple(images.shape[3:])}, the model takes {self.img_size}")
        if not torch.isfinite(images).all():
            raise ValueError("images contain NaN or inf values")

    def forward(self, images: torch.Tensor) -> Predictions:
        """Cameras, depth and (when α > 0) the dynamics mask of a batch of sequences.

        Args:
            images: (B, S, 3, H, W) in [0, 1].

        Returns:
            :class:`Predictions`.

        Raises:
            ValueError: for a wrong shape or size, no frames, or NaN/inf pixels.
        """
        self.check_images(images)
        b, s = images.shape[:2]
        x = self.patch_embed(images.flatten(0, 1) * 2 - 1)  # (B·S, D, h, w)
        x = x.flatten(2).transpose(1, 2) + self.pos  # (B·S, h·w, D)
        x = torch.cat([_special(self.camera_token, b, s), _special(self.register_token, b, s), x], dim=1)
        p = x.shape[1]
        r = c = scores = None
        frame_out = global_out = x
        for i in range(self.depth):
            x = frame_out = self.frame_blocks[i](x.reshape(b * s, p, self.dim), self.token_pos)  # (B·S, P, D)
            if i == self.mask_after and self.alpha > 0:
                # Step 1: mask from the detached patch tokens after the last early frame block
                scores = self.mask_head(x.reshape(b, s, p, self.dim)[:, :, self.n_special :], self.grid)
                # Step 2: r = α on camera/register queries, c = scores on patch keys
                r, c = dynamics_bias_vectors(scores, n_special=self.n_special, alpha=self.alpha)
            masked = self.middle[0] <= i < self.middle[1] and r is not None
            # Step 3: the middle global blocks attend with the bias r_i c_j
            x = global_out = self.global_blocks[i](
                x.reshape(b, s * p, self.dim), self.token_pos.repeat(s, 1), *((r, c) if masked else ())
            )
        feats = torch.cat([frame_out.reshape(b, s, p, self.dim), global_out.reshape(b, s, p, self.dim)], dim=-1)
        pose_enc = self.camera_head(feats[:, :, 0])  # (B, S, 7)
        gh, gw = self.grid
        logd = self.depth_head(feats[:, :, self.n_special :])  # (B, S, h·w, p·p)
        logd = logd.reshape(b * s, gh, gw, self.patch, self.patch).permute(0, 1, 3, 2, 4)  # (B·S, h, p, w, p)
        depth = torch.exp(logd.reshape(b, s, gh * self.patch, gw * self.patch).clamp(-10, 10))
        mask = scores.reshape(b, s, gh, gw) if scores is not None else None
        return Predictions(pose_enc=pose_enc, depth=depth, mask=mask)


def pose_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """VGGT's camera loss (L1, as PAGE-4D's ``training_final.yaml``): ``mean|T̂ − T| + mean|q̂ − q|`` over cameras.

    The predicted quaternion is compared as predicted (unnormalised), as VGGT does; the target has ``w >= 0``.
    (B, S, 7), (B, S, 7) -> scalar.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)}, {tuple(target.shape)}")
    # VGGT's camera L1 on translation and quaternion (this tiny model predicts no field of view)
    return (pred[..., :3] - target[..., :3]).abs().mean() + (pred[..., 3:] - target[..., 3:]).abs().mean()


def depth_loss(pred: torch.Tensor, target: torch.Tensor, *, grad_weight: float = 1.0) -> torch.Tensor:
    """Depth regression plus VGGT's gradient term (no confidence): ``mean|d̂ − d| + λ·mean|∇d̂ − ∇d|``, with
    ∇ the horizontal and vertical finite differences. (B, S, H, W), (B, S, H, W) -> scalar."""
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)}, {tuple(target.shape)}")
    reg = (pred - target).abs().mean()
    gx = F.l1_loss(pred.diff(dim=-1), target.diff(dim=-1))
    gy = F.l1_loss(pred.diff(dim=-2), target.diff(dim=-2))
    # VGGT's depth regression plus gradient term, without its confidence weighting
    return reg + grad_weight * (gx + gy)
