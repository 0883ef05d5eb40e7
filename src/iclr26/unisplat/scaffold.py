"""UniSplat's 3D latent scaffold on a dense voxel grid: lifting pixels with depth, and warping by ego motion.

UniSplat (ICLR 2026, arXiv 2511.04595), §3 "3D latent scaffold" and "spatio-temporal fusion":

1. **Lifting.** Each pixel with a (metric) depth becomes a 3D point in the ego frame,
   ``p = R_cᵀ (d · K⁻¹ [u, v, 1]ᵀ − t_c)``; the points are voxelised and every voxel's feature is the mean of its
   points' features (``scatter_mean``; official code: ``model/gaussian_head/head.py`` voxelises the metric point maps
   and scatter-means point coordinates and features).
2. **Warping.** The previous frame's scaffold is moved into the current ego frame by the known ego motion: the value
   at a current voxel centre ``p`` is read (trilinearly) at ``T_{prev←cur} p`` in the previous grid, zero outside it.
   On a shift by whole voxels this is an exact index shift.

The grid is dense (the official code uses sparse voxels and spconv); tensors are laid out ``(C, Z, Y, X)`` so that
``Conv3d`` sees depth = z, height = y, width = x.

Dimension letters: ``C`` channels, ``X, Y, Z`` voxels per axis, ``M`` points.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as nnf

__all__ = ["VoxelGrid", "lift_to_scaffold", "unproject", "warp_scaffold"]


@dataclass(frozen=True)
class VoxelGrid:
    """An axis-aligned voxel grid in the ego frame: ``lo + (i + ½) · size`` are the voxel centres.

    Attributes:
        lo: (x, y, z) of the grid's lower corner, metres.
        shape: voxels along (x, y, z).
        size: voxel edge, metres.
    """

    lo: tuple[float, float, float]
    shape: tuple[int, int, int]
    size: float

    def __post_init__(self) -> None:
        if self.size <= 0 or min(self.shape) < 1:
            raise ValueError(f"voxel size must be > 0 and shape >= 1 per axis, got {self.size}, {self.shape}")

    @property
    def n_voxels(self) -> int:
        """X · Y · Z."""
        return self.shape[0] * self.shape[1] * self.shape[2]

    def centers(self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> torch.Tensor:
        """(Z, Y, X, 3) ego coordinates of the voxel centres (on ``device``, the CPU if None)."""
        axes = [
            torch.arange(n, dtype=dtype, device=device or "cpu") * self.size + lo + self.size / 2
            for lo, n in zip(self.lo, self.shape, strict=True)
        ]
        zz, yy, xx = torch.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        return torch.stack([xx, yy, zz], dim=-1)

    def index(self, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat voxel index ``(z · Y + y) · X + x`` of each point (M, 3) and whether it lies inside the grid."""
        lo = torch.tensor(self.lo, dtype=points.dtype, device=points.device)
        ijk = torch.floor((points - lo) / self.size).long()  # (M, 3) as (x, y, z)
        n = torch.tensor(self.shape, device=points.device)
        inside = ((ijk >= 0) & (ijk < n)).all(dim=1)
        ijk = torch.where(inside[:, None], ijk, torch.zeros_like(ijk))
        return (ijk[:, 2] * self.shape[1] + ijk[:, 1]) * self.shape[0] + ijk[:, 0], inside

    def normalized(self, points: torch.Tensor) -> torch.Tensor:
        """``grid_sample`` coordinates (align_corners=False) of ego points (..., 3): −1 and 1 are the grid's faces."""
        lo = torch.tensor(self.lo, dtype=points.dtype, device=points.device)
        extent = torch.tensor(self.shape, dtype=points.dtype, device=points.device) * self.size
        return 2 * (points - lo) / extent - 1


def unproject(depth: torch.Tensor, intrinsic: torch.Tensor, extrinsic: torch.Tensor) -> torch.Tensor:
    """Ego-frame points of every pixel: ``p = R_cᵀ (d · K⁻¹ [u + ½, v + ½, 1]ᵀ − t_c)``.

    Args:
        depth: (H, W) camera z-depth.
        intrinsic: (3, 3).
        extrinsic: (3, 4) camera-from-ego.

    Returns:
        (H, W, 3).

    Raises:
        ValueError: if the camera is not finite.
    """
    if not (torch.isfinite(extrinsic).all() and torch.isfinite(intrinsic).all()):
        raise ValueError("extrinsic/intrinsic contain NaN or inf (the camera pose must be finite)")
    h, w = depth.shape
    v, u = torch.meshgrid(torch.arange(h, dtype=depth.dtype, device=depth.device) + 0.5,
                          torch.arange(w, dtype=depth.dtype, device=depth.device) + 0.5, indexing="ij")  # fmt: skip
    rays = torch.stack([u, v, torch.ones_like(u)], dim=-1) @ torch.linalg.inv(intrinsic).T  # (H, W, 3), z = 1
    cam = rays * depth[..., None]
    r, t = extrinsic[:, :3], extrinsic[:, 3]
    return (cam - t) @ r  # Rᵀ (X − t), row-vector form


def lift_to_scaffold(
    points: torch.Tensor, features: torch.Tensor, grid: VoxelGrid
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scatter-mean point features into the grid (module docstring, step 1).

    Args:
        points: (M, 3) ego coordinates; points outside the grid are dropped.
        features: (M, C).
        grid: the voxel grid.

    Returns:
        ``(scaffold (C, Z, Y, X), count (Z, Y, X))``: the mean feature of each voxel's points (0 if empty) and how
        many points fell in it.

    Raises:
        ValueError: on mismatched shapes or non-finite points.
    """
    if points.ndim != 2 or points.shape[1] != 3 or features.shape[0] != points.shape[0]:
        raise ValueError(f"points must be (M, 3) and features (M, C), got {tuple(points.shape)}, "
                         f"{tuple(features.shape)}")  # fmt: skip
    if not torch.isfinite(points).all():
        raise ValueError("points contain NaN or inf")
    idx, inside = grid.index(points)
    idx, feats = idx[inside], features[inside]
    c = features.shape[1]
    total = torch.zeros(grid.n_voxels, c, dtype=features.dtype, device=features.device).index_add(0, idx, feats)
    count = torch.zeros(grid.n_voxels, dtype=features.dtype, device=features.device).index_add(
        0, idx, torch.ones_like(idx, dtype=features.dtype)
    )
    mean = total / count.clamp(min=1)[:, None]  # scatter_mean
    x, y, z = grid.shape
    return mean.T.reshape(c, z, y, x), count.reshape(z, y, x)


def warp_scaffold(scaffold: torch.Tensor, prev_from_cur: torch.Tensor, grid: VoxelGrid) -> torch.Tensor:
    """The previous scaffold in the current ego frame (module docstring, step 2).

    Args:
        scaffold: (C, Z, Y, X) features in the previous ego frame.
        prev_from_cur: (4, 4) transform of current-ego coordinates into previous-ego coordinates
            (``inv(ego_pose_prev) @ ego_pose_cur``).
        grid: the voxel grid (the same in both frames, attached to the ego).

    Returns:
        (C, Z, Y, X), trilinear samples of ``scaffold`` at ``T_{prev←cur} p`` for every current voxel centre ``p``;
        zero where that point falls outside the previous grid.

    Raises:
        ValueError: if ``prev_from_cur`` is not a finite (4, 4) matrix.
    """
    if prev_from_cur.shape != (4, 4) or not torch.isfinite(prev_from_cur).all():
        raise ValueError("prev_from_cur must be a finite (4, 4) ego-motion matrix (got NaN/inf or a wrong shape)")
    centers = grid.centers(scaffold.dtype, scaffold.device)  # (Z, Y, X, 3)
    t = prev_from_cur.to(scaffold.dtype)
    q = centers @ t[:3, :3].T + t[:3, 3]  # T_{prev←cur} p
    coords = grid.normalized(q)  # (Z, Y, X, 3) ordered (x, y, z) = (W, H, D) as grid_sample wants
    out = nnf.grid_sample(scaffold[None], coords[None], mode="bilinear", padding_mode="zeros", align_corners=False)
    return out[0]
