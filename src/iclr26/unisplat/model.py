"""UniSplat's feed-forward reconstructor: scale head, scaffold, spatio-temporal fusion, dual-branch decoder, memory.

UniSplat: Unified Spatio-Temporal Fusion via 3D Latent Scaffolds for Dynamic Driving Scene Reconstruction, ICLR 2026,
arXiv 2511.04595 (official code chenshi3/UniSplat, read for facts, e.g. ``model/gaussian_head/head.py``). One
streaming step at frame ``t`` (:meth:`UniSplat.step`):

1. Per rig camera: an image encoder gives per-pixel features; a scale head turns the foundation model's relative
   depth into metric depth, ``d = γ · d_rel`` (the paper's per-camera metric-scale head, supervised by the optimal
   scale).
2. **3D latent scaffold**: pixels are lifted with their metric depth and scatter-meaned into the voxel grid
   (:mod:`iclr26.unisplat.scaffold`).
3. **Spatio-temporal fusion**: the previous frame's fused scaffold is warped by the ego motion and fused with the
   current one by a 3D CNN, ``S_t = g([L_t, warp(S_{t−1}), valid]) + warp(S_{t−1})``.
4. **Dual-branch decoder**: (a) point-anchored Gaussians, one per pixel patch at its lifted point, from image
   features plus the fused scaffold sampled there; (b) voxel-generated Gaussians, ``voxel_gs`` per occupied voxel
   of the fused scaffold. Each Gaussian has a centre offset, scales, rotation, opacity, RGB and a **dynamic logit**.
5. **History and static memory**: the fused scaffold's voxels are kept as history by an opacity quantile (top 60%,
   separately inside and outside the rig's view); Gaussians whose dynamic probability is below ½ are stored in world
   coordinates, and at the next frame the remembered Gaussians outside the rig's current view are rendered with the
   current ones, completing the scene beyond the current camera coverage.

Deviations (also in the README): a small dense 3D CNN (1×1×1 then 3×3×3 convolution) with a residual in place of
the sparse-conv U-Net; no coarsening of the history to 2× voxels; no image features sampled at voxel centres; one
point Gaussian per ``patch × patch`` pixels (paper: per pixel); no sky Gaussians (the renderer's background is the
sky colour); dynamic logits supervised per Gaussian (the fraction of its pixels/points on moving objects) instead of
through a rendered dynamic mask; memory Gaussians are excluded by their own dynamic probability rather than by
projecting into a rendered dynamic mask; the history is not back-propagated through (earlier frames run without
gradients).

Dimension letters: ``V`` rig cameras, ``H, W`` image size, ``D`` feature width, ``N`` Gaussians, ``G = 15``
parameters per Gaussian (3 offset, 3 scale, 4 rotation, 1 opacity, 3 RGB, 1 dynamic).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as nnf
from torch import nn

from iclr26.unisplat.scaffold import VoxelGrid, lift_to_scaffold, unproject, warp_scaffold
from iclr26.unisplat.splat import Rendered, render_gaussians

__all__ = ["Frame", "Gaussians", "StaticMemory", "StepOutput", "UniSplat", "in_view", "select_history", "select_static"]

G = 15
#: Offset of the dynamic logits (prior probability sigmoid(−2) ≈ 0.12 of "moving": most of a street is static), so
#: that an untrained decoder already remembers static content.
DYNAMIC_PRIOR = 2.0


@dataclass(frozen=True)
class Gaussians:
    """A set of 3D Gaussians (one frame's decoded set, or the memory).

    Attributes:
        means: (N, 3) centres.
        scales: (N, 3) > 0.
        quats: (N, 4) ``(w, x, y, z)``.
        opacities: (N,) in (0, 1).
        colors: (N, 3) RGB.
        dynamic_logits: (N,) logit of "on a moving object".
        dynamic_target: (N,) supervision of the dynamic logit (fraction of the Gaussian's pixels on moving objects),
            or None for remembered Gaussians.
    """

    means: torch.Tensor
    scales: torch.Tensor
    quats: torch.Tensor
    opacities: torch.Tensor
    colors: torch.Tensor
    dynamic_logits: torch.Tensor
    dynamic_target: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.means.shape[0])

    @staticmethod
    def cat(parts: list[Gaussians]) -> Gaussians:
        """Concatenate sets (the dynamic targets are dropped unless every part has them)."""
        tgt = [p.dynamic_target for p in parts]
        return Gaussians(
            *(torch.cat([getattr(p, f) for p in parts]) for f in ("means", "scales", "quats", "opacities", "colors",
                                                                  "dynamic_logits")),
            dynamic_target=torch.cat(tgt) if all(t is not None for t in tgt) else None,  # type: ignore[arg-type]
        )  # fmt: skip

    def index(self, keep: torch.Tensor) -> Gaussians:
        """The subset ``keep`` (bool mask or indices)."""
        return Gaussians(self.means[keep], self.scales[keep], self.quats[keep], self.opacities[keep],
                         self.colors[keep], self.dynamic_logits[keep],
                         None if self.dynamic_target is None else self.dynamic_target[keep])  # fmt: skip

    def transform(self, m: torch.Tensor) -> Gaussians:
        """Apply the rigid transform ``m`` (4, 4) to centres and rotations."""
        r = m[:3, :3].to(self.means.dtype)
        w, x, y, z = _matrix_to_quat(r)
        q_r = torch.stack([w, x, y, z])
        return replace(self, means=self.means @ r.T + m[:3, 3].to(self.means.dtype), quats=_quat_mul(q_r, self.quats))

    def detach(self) -> Gaussians:
        """A copy without autograd history (and without dynamic targets)."""
        return Gaussians(self.means.detach(), self.scales.detach(), self.quats.detach(), self.opacities.detach(),
                         self.colors.detach(), self.dynamic_logits.detach())  # fmt: skip

    def render(self, extrinsic: torch.Tensor, intrinsic: torch.Tensor, height: int, width: int, *,
               background: torch.Tensor) -> Rendered:  # fmt: skip
        """Render RGB and the dynamic probability (a feature channel, as in the paper's feature rasteriser)."""
        feats = torch.cat([self.colors, torch.sigmoid(self.dynamic_logits)[:, None]], dim=1)
        bg = torch.cat([background, background.new_zeros(1)])
        return render_gaussians(self.means, self.scales, self.quats, self.opacities, feats, extrinsic, intrinsic,
                                height, width, background=bg)  # fmt: skip


def _matrix_to_quat(r: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Quaternion (w, x, y, z) of a rotation matrix (trace branch with the largest diagonal, numerically safe)."""
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    cands = torch.stack([1 + tr, 1 + r[0, 0] - r[1, 1] - r[2, 2], 1 - r[0, 0] + r[1, 1] - r[2, 2],
                         1 - r[0, 0] - r[1, 1] + r[2, 2]])  # fmt: skip
    k = int(torch.argmax(cands))
    s = torch.sqrt(cands[k].clamp(min=1e-12)) * 2
    if k == 0:
        q = (s / 4, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s)
    elif k == 1:
        q = ((r[2, 1] - r[1, 2]) / s, s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s)
    elif k == 2:
        q = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s)
    else:
        q = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4)
    return q


def _quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a ⊗ b`` of (4,) with (N, 4)."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b.unbind(1)
    return torch.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], dim=1)  # fmt: skip


def select_static(g: Gaussians, *, dynamic_threshold: float = 0.5) -> Gaussians:
    """The memory's filter: drop Gaussians whose dynamic probability is ``>= dynamic_threshold`` (official code:
    ``head.py`` drops Gaussians that project into the predicted dynamic mask before saving them)."""
    # dynamic-aware memory: only Gaussians judged static persist, so moving objects leave no ghosts
    return g.index(torch.sigmoid(g.dynamic_logits) < dynamic_threshold)


def select_history(opacity: torch.Tensor, inside: torch.Tensor, *, quantile: float, cap_inside: int,
                   cap_outside: int) -> torch.Tensor:  # fmt: skip
    """Which history voxels the fusion keeps: separately among the voxels inside and outside the rig's view, those
    whose opacity lies in the top ``quantile`` share, at most ``cap_*`` of them (official config
    ``voxel_stream_quantile`` 0.6, ``voxel_stream_inview_num`` 300k, ``voxel_stream_outview_num`` 400k).

    Args:
        opacity: (M,) per-voxel opacity.
        inside: (M,) bool, whether the voxel centre is in the rig's view.
        quantile: share kept in (0, 1].
        cap_inside: most voxels kept inside.
        cap_outside: most voxels kept outside.

    Returns:
        (M,) bool keep mask.
    """
    keep = torch.zeros_like(inside)
    for part, cap in ((inside, cap_inside), (~inside, cap_outside)):
        idx = part.nonzero().squeeze(1)
        k = min(cap, int(round(quantile * idx.numel())))
        if k > 0:
            # the history keeps the top-quantile voxels by opacity, capped, inside and outside the view
            keep[idx[torch.topk(opacity[idx], k).indices]] = True
    return keep


def in_view(points: torch.Tensor, rig: torch.Tensor, intrinsic: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(N,) bool: whether each ego-frame point projects inside any rig camera's image (in front of it)."""
    seen = torch.zeros(points.shape[0], dtype=torch.bool, device=points.device)
    for e in rig:
        pc = points @ e[:, :3].T + e[:, 3]
        z = pc[:, 2]
        uv = pc @ intrinsic.T
        u, v = uv[:, 0] / z.clamp(min=1e-6), uv[:, 1] / z.clamp(min=1e-6)
        seen |= (z > 0.05) & (u >= 0) & (u < width) & (v >= 0) & (v < height)
    return seen


class StaticMemory:
    """Persistent static Gaussians in world coordinates (module docstring, step 5; official code: ``head.py``,
    ``process_history_gaussians``: remembered Gaussians that the current cameras see are replaced by the current
    ones, the others are rendered with them).

    Attributes:
        gaussians: the remembered set in world coordinates (None before the first frame).
    """

    def __init__(self, *, filter_dynamic: bool = True) -> None:
        self.filter_dynamic = filter_dynamic
        self.gaussians: Gaussians | None = None

    def recall(self, ego_pose: torch.Tensor, rig: torch.Tensor, intrinsic: torch.Tensor, height: int,
               width: int) -> Gaussians | None:  # fmt: skip
        """The remembered Gaussians outside the rig's current view, in the current ego frame (None if empty)."""
        if self.gaussians is None or len(self.gaussians) == 0:
            return None
        local = self.gaussians.transform(torch.linalg.inv(ego_pose))
        return local.index(~in_view(local.means, rig, intrinsic, height, width))

    def update(self, current: Gaussians, recalled: Gaussians | None, ego_pose: torch.Tensor) -> None:
        """Memory ← (static Gaussians of this frame) ∪ (recalled out-of-view memory), in world coordinates."""
        kept = select_static(current.detach(), dynamic_threshold=0.5 if self.filter_dynamic else 2.0)
        parts = [kept] + ([recalled.detach()] if recalled is not None else [])
        self.gaussians = Gaussians.cat(parts).transform(ego_pose)


@dataclass(frozen=True)
class Frame:
    """One frame of rig observations as tensors.

    Attributes:
        images: (V, 3, H, W).
        rel_depth: (V, H, W), 0 where invalid.
        dynamic: (V, H, W) float, 1 on moving objects (supervision; zeros at inference).
        rig: (V, 3, 4) camera-from-ego.
        intrinsic: (3, 3).
        ego_pose: (4, 4) world-from-ego.
    """

    images: torch.Tensor
    rel_depth: torch.Tensor
    dynamic: torch.Tensor
    rig: torch.Tensor
    intrinsic: torch.Tensor
    ego_pose: torch.Tensor


@dataclass(frozen=True)
class StepOutput:
    """What one streaming step produces.

    Attributes:
        gaussians: this frame's decoded Gaussians (ego frame).
        render_set: what to render at this frame: the decoded Gaussians plus recalled memory (ego frame).
        log_scale: (V,) predicted log metric scale per camera.
        scaffold: (D, Z, Y, X) fused scaffold, zero outside ``valid`` (the next frame's history).
        valid: (Z, Y, X) voxels kept as history: holding current or remembered content, and (with a voxel branch)
            in the top ``history_quantile`` by opacity among those inside / outside the rig's view.
    """

    gaussians: Gaussians
    render_set: Gaussians
    log_scale: torch.Tensor
    scaffold: torch.Tensor
    valid: torch.Tensor


class UniSplat(nn.Module):
    """The feed-forward reconstructor (module docstring, steps 1–5).

    ``branches`` selects the decoder: ``"dual"`` (UniSplat), ``"point"`` or ``"voxel"`` (the ablations);
    ``fusion=False`` drops the history input (the single-frame ablation): the fusion network then sees zeros in place
    of the warped scaffold.
    """

    def __init__(
        self,
        grid: VoxelGrid,
        *,
        dim: int = 16,
        patch: int = 2,
        voxel_gs: int = 2,
        branches: Literal["dual", "point", "voxel"] = "dual",
        fusion: bool = True,
        point_offset: float = 0.3,
        history_quantile: float = 0.6,
        history_caps: tuple[int, int] = (300_000, 400_000),
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if branches not in ("dual", "point", "voxel"):
            raise ValueError(f"branches must be 'dual', 'point' or 'voxel', got {branches!r}")
        self.grid, self.dim, self.patch, self.voxel_gs = grid, dim, patch, voxel_gs
        self.branches, self.fusion, self.point_offset = branches, fusion, point_offset
        if not 0 < history_quantile <= 1:
            raise ValueError(f"history_quantile must lie in (0, 1], got {history_quantile}")
        self.history_quantile, self.history_caps = history_quantile, history_caps
        self.encoder = nn.Sequential(nn.Conv2d(5, dim, 3, padding=1), nn.ReLU(), nn.Conv2d(dim, dim, 3, padding=1),
                                     nn.ReLU())  # fmt: skip
        self.scale_head = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 1))
        lifted = dim + 3 + 3 + 1  # features, RGB, in-voxel offset, occupancy
        self.fuse = nn.Sequential(nn.Conv3d(lifted + dim + 1, dim, 1), nn.ReLU(), nn.Conv3d(dim, dim, 3, padding=1))
        self.point_head = nn.Sequential(nn.Conv2d(dim + 3 + dim, 32, 1), nn.ReLU(), nn.Conv2d(32, G, 1))
        self.voxel_head = nn.Conv3d(dim, voxel_gs * G, 1)
        if generator is not None:
            with torch.no_grad():
                for p in self.parameters():
                    if p.ndim > 1:
                        bound = (6 / (p[0].numel() + p.shape[0])) ** 0.5 * 0.5
                        p.copy_(torch.rand(p.shape, generator=generator, device=generator.device) * 2 * bound - bound)
                    else:
                        p.zero_()
        with torch.no_grad():  # γ = 1 at the start: the foundation depth as given
            self.scale_head[-1].weight.zero_()
            self.scale_head[-1].bias.zero_()

    def metric_depth(self, rel_depth: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Step 1: ``(d = γ · d_rel (V, H, W), log γ (V,))``; the head reads the 4×6 pooled log relative depth."""
        valid = (rel_depth > 0).float()
        logd = torch.log(rel_depth.clamp(min=1e-3)) * valid
        pooled = nnf.adaptive_avg_pool2d(logd[:, None], (4, 6)) / nnf.adaptive_avg_pool2d(valid[:, None], (4, 6)).clamp(
            min=1e-3
        )
        log_scale = self.scale_head(pooled.flatten(1)).squeeze(1)  # (V,)
        # Step 1: d = γ · d_rel, the per-camera metric scale (log γ from the head) on the foundation depth
        return rel_depth * torch.exp(log_scale)[:, None, None], log_scale

    def step(self, frame: Frame, history: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None,
             memory: StaticMemory | None = None) -> StepOutput:  # fmt: skip
        """One streaming step (module docstring).

        Args:
            frame: the current rig observations.
            history: ``(scaffold, valid, ego_pose)`` of the previous step, or None at the first frame.
            memory: the static memory to recall from (and that the caller updates), or None.

        Returns:
            :class:`StepOutput`.
        """
        v, _, h, w = frame.images.shape
        if not torch.isfinite(frame.ego_pose).all() or not torch.isfinite(frame.rig).all():
            raise ValueError("frame.ego_pose and frame.rig must be finite (got NaN or inf in a pose)")
        if frame.rel_depth.shape != (v, h, w) or frame.rig.shape != (v, 3, 4):
            raise ValueError(f"frame.rel_depth must be (V, H, W) = {(v, h, w)} and frame.rig (V, 3, 4), got "
                             f"{tuple(frame.rel_depth.shape)}, {tuple(frame.rig.shape)}")  # fmt: skip
        grid = self.grid
        depth, log_scale = self.metric_depth(frame.rel_depth)
        valid_px = frame.rel_depth > 0  # (V, H, W)
        x_in = torch.cat([frame.images, torch.log(depth.clamp(min=1e-3))[:, None] * valid_px[:, None] / 4,
                          valid_px[:, None].float()], dim=1)  # fmt: skip
        feats = self.encoder(x_in)  # (V, D, H, W)
        pts = torch.stack([unproject(depth[i], frame.intrinsic, frame.rig[i]) for i in range(v)])  # (V, H, W, 3)
        # Step 2: lift into the scaffold (features, RGB, in-voxel offset, occupancy)
        m = valid_px.reshape(-1)
        p_flat = pts.reshape(-1, 3)[m]
        f_flat = torch.cat([feats.permute(0, 2, 3, 1), frame.images.permute(0, 2, 3, 1)], dim=-1).reshape(
            -1, self.dim + 3
        )[m]
        lo = torch.tensor(grid.lo, dtype=p_flat.dtype, device=p_flat.device)
        offset = torch.remainder(p_flat - lo, grid.size) / grid.size - 0.5
        dyn_flat = frame.dynamic.reshape(-1)[m]
        lifted, count = lift_to_scaffold(p_flat, torch.cat([f_flat, offset, dyn_flat[:, None]], dim=1), grid)
        occ = (count > 0).float()
        voxel_dyn = torch.where(occ > 0, lifted[-1], torch.full_like(occ, -1.0))
        lifted = torch.cat([lifted[:-1], occ[None]], dim=0)
        # Step 3: fuse with the warped history
        if history is not None and self.fusion:
            prev, prev_valid, prev_pose = history
            # ego motion T_{prev←cur} = (world←prev)⁻¹ (world←cur) warps the history into the current ego frame
            prev_from_cur = torch.linalg.inv(prev_pose) @ frame.ego_pose
            warped = warp_scaffold(prev, prev_from_cur, grid)
            warped_valid = warp_scaffold(prev_valid[None].float(), prev_from_cur, grid)[0]
        else:
            warped = lifted.new_zeros(self.dim, *occ.shape)
            warped_valid = torch.zeros_like(occ)
        # Step 3: S_t = g([L_t, warp(S_{t−1}), valid]) + warp(S_{t−1}), a dense 3D CNN for the sparse U-Net
        scaffold = self.fuse(torch.cat([lifted, warped, warped_valid[None]], dim=0)[None])[0] + warped
        valid = (occ > 0) | (warped_valid > 0.5)
        parts = []
        if self.branches in ("dual", "point"):
            parts.append(self._point_branch(frame, feats, depth, pts, valid_px, scaffold))
        if self.branches in ("dual", "voxel"):
            parts.append(self._voxel_branch(scaffold, valid, voxel_dyn))
        gaussians = Gaussians.cat(parts)
        if self.branches in ("dual", "voxel"):  # keep the history voxels by opacity quantile, in and out of view
            n_valid = int(valid.sum())
            opacity = parts[-1].opacities.detach().reshape(self.voxel_gs, n_valid).amax(0)
            centers = grid.centers(scaffold.dtype, scaffold.device).reshape(-1, 3)[valid.reshape(-1)]
            inside = in_view(centers, frame.rig, frame.intrinsic, h, w)
            keep = select_history(opacity, inside, quantile=self.history_quantile, cap_inside=self.history_caps[0],
                                  cap_outside=self.history_caps[1])  # fmt: skip
            kept = torch.zeros(grid.n_voxels, dtype=torch.bool, device=valid.device)
            kept[valid.reshape(-1).nonzero().squeeze(1)[keep]] = True
            history_valid = kept.reshape(valid.shape)
        else:
            history_valid = valid
        render_set = gaussians
        if memory is not None:
            # Step 5: remembered static Gaussians outside the current view complete the scene beyond coverage
            recalled = memory.recall(frame.ego_pose, frame.rig, frame.intrinsic, h, w)
            if recalled is not None and len(recalled):
                render_set = Gaussians.cat([gaussians, replace(recalled, dynamic_target=None)])
            memory.update(gaussians, recalled, frame.ego_pose)
        return StepOutput(gaussians, render_set, log_scale, scaffold * history_valid, history_valid)

    def _point_branch(self, frame: Frame, feats, depth, pts, valid_px, scaffold) -> Gaussians:  # noqa: ANN001
        """Step 4a: one Gaussian per ``patch × patch`` pixels at the mean lifted point of its valid pixels."""
        k = self.patch
        vf = valid_px[:, None].float()
        cnt = nnf.avg_pool2d(vf, k)  # (V, 1, h, w) share of valid pixels
        safe = cnt.clamp(min=1e-6)
        anchor = nnf.avg_pool2d(pts.permute(0, 3, 1, 2) * vf, k) / safe  # (V, 3, h, w)
        d_mean = nnf.avg_pool2d(depth[:, None] * vf, k) / safe
        rgb = nnf.avg_pool2d(frame.images, k)
        f = nnf.avg_pool2d(feats, k)
        dyn = nnf.avg_pool2d(frame.dynamic[:, None] * vf, k) / safe
        coords = self.grid.normalized(anchor.permute(0, 2, 3, 1))  # (V, h, w, 3)
        sampled = nnf.grid_sample(scaffold[None], coords.reshape(1, 1, -1, 1, 3), align_corners=False)
        sampled = sampled.reshape(self.dim, *coords.shape[:3]).permute(1, 0, 2, 3)  # (V, D, h, w)
        raw = self.point_head(torch.cat([f, rgb, sampled], dim=1))  # (V, G, h, w)
        keep = (cnt[:, 0] > 0).reshape(-1)
        raw = raw.permute(0, 2, 3, 1).reshape(-1, G)[keep]
        anchor = anchor.permute(0, 2, 3, 1).reshape(-1, 3)[keep]
        footprint = (d_mean.reshape(-1)[keep] * k / frame.intrinsic[0, 0])[:, None]  # patch width in metres
        base = rgb.permute(0, 2, 3, 1).reshape(-1, 3)[keep].clamp(0.01, 0.99)
        return Gaussians(
            # Step 4a: a bounded offset from the lifted point; scale a share of the patch footprint in metres
            means=anchor + self.point_offset * torch.tanh(raw[:, 0:3]),
            scales=footprint * (0.1 + 0.8 * torch.sigmoid(raw[:, 3:6])),
            quats=raw[:, 6:10] + raw.new_tensor([1.0, 0.0, 0.0, 0.0]),
            opacities=torch.sigmoid(raw[:, 10] + 2.0),
            colors=torch.sigmoid(torch.logit(base) + raw[:, 11:14]),
            dynamic_logits=raw[:, 14] - DYNAMIC_PRIOR,
            dynamic_target=dyn.reshape(-1)[keep],
        )

    def _voxel_branch(self, scaffold: torch.Tensor, valid: torch.Tensor, voxel_dyn: torch.Tensor) -> Gaussians:
        """Step 4b: ``voxel_gs`` Gaussians per valid voxel, offset within the voxel from its centre."""
        s = self.grid.size
        raw = self.voxel_head(scaffold[None])[0]  # (voxel_gs · G, Z, Y, X)
        raw = raw.reshape(self.voxel_gs, G, -1)[:, :, valid.reshape(-1)].permute(0, 2, 1).reshape(-1, G)
        centers = self.grid.centers(scaffold.dtype, scaffold.device).reshape(-1, 3)[valid.reshape(-1)]
        centers = centers.repeat(self.voxel_gs, 1)
        dyn = voxel_dyn.reshape(-1)[valid.reshape(-1)].repeat(self.voxel_gs)  # −1: remembered only, unsupervised
        return Gaussians(
            # Step 4b: each voxel-generated Gaussian stays within its voxel (offset ≤ half a voxel)
            means=centers + 0.5 * s * torch.tanh(raw[:, 0:3]),
            scales=s * (0.05 + 0.6 * torch.sigmoid(raw[:, 3:6])),
            quats=raw[:, 6:10] + raw.new_tensor([1.0, 0.0, 0.0, 0.0]),
            opacities=torch.sigmoid(raw[:, 10]),
            colors=torch.sigmoid(raw[:, 11:14]),
            dynamic_logits=raw[:, 14] - DYNAMIC_PRIOR,
            dynamic_target=dyn,
        )
