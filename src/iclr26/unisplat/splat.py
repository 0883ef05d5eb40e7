"""A differentiable 3D Gaussian splatting renderer in pure PyTorch (Kerbl et al. 2023, as UniSplat uses it).

UniSplat (ICLR 2026, arXiv 2511.04595) renders its decoded Gaussians with the 3DGS rasteriser extended by a feature
channel (official code: ``diff-gaussian-rasterization-feature``, a CUDA kernel). This module is the same image
formation on dense tensors, tile-free, for small images:

1. **Projection** (EWA splatting): a Gaussian ``(μ, Σ)`` in the world maps to the camera as ``μ_c = R μ + t`` and to
   the image as ``μ' = π(μ_c)`` with 2D covariance ``Σ' = J R Σ Rᵀ Jᵀ + ε I``, where ``J`` is the Jacobian of the
   perspective projection at ``μ_c`` (its ``x/z``, ``y/z`` clamped to 1.3 × the half field of view, as in the 3DGS
   rasteriser) and ``ε = 0.3`` px² the low-pass dilation of the 3DGS rasteriser.
2. **Depth ordering**: Gaussians sorted by camera depth ``z`` (nearest first).
3. **Alpha compositing** per pixel ``p``: ``α_i = min(0.99, o_i exp(−½ dᵀ Σ'⁻¹ d))``, ``d = p − μ'_i``;
   ``T_i = Π_{j<i} (1 − α_j)``; ``C(p) = Σ_i T_i α_i c_i + T_N · background``. Every channel of ``colors`` (RGB
   and any extra feature channels, e.g. UniSplat's dynamic score) is composited with the same weights.

Handling of degenerate input (documented, tested):

- Gaussians with camera depth ``z <= near`` (behind the camera or too close) are culled: they contribute nothing.
- Gaussians whose 3σ box (half-width ``3 √λ_max(Σ')``, the 3DGS radius) misses the image are culled too.
- Scales must be finite and > 0 and quaternions non-zero (``ValueError`` naming the argument otherwise); the ε
  dilation keeps every projected covariance positive definite, so a flat (rank-deficient) 3D Gaussian still renders.
- Non-finite extrinsics or intrinsics raise ``ValueError``.

``backend="gsplat"`` sends the same arguments to ``gsplat.rasterization`` (optional extra; needs CUDA). ``gsplat`` is
not installed in the test environment, so that path is exercised only where it is.

Dimension letters: ``N`` Gaussians, ``C`` channels, ``H, W`` image size, ``P = H·W`` pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

__all__ = [
    "Projected",
    "Rendered",
    "covariance_from_scale_rotation",
    "project_gaussians",
    "quaternion_to_rotation",
    "render_gaussians",
    "render_reference",
]

#: The 3DGS rasteriser's screen-space dilation (px²) that keeps the 2D covariance positive definite.
DILATION = 0.3
#: The 3DGS opacity cap per Gaussian and pixel.
ALPHA_MAX = 0.99


def quaternion_to_rotation(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices of quaternions ``(w, x, y, z)``, normalised first: (N, 4) -> (N, 3, 3).

    Raises:
        ValueError: if a quaternion is zero or not finite.
    """
    if q.ndim != 2 or q.shape[1] != 4:
        raise ValueError(f"quats must have shape (N, 4), got {tuple(q.shape)}")
    norm = q.norm(dim=1, keepdim=True)
    if not torch.isfinite(q).all() or bool((norm < 1e-12).any()):
        raise ValueError("quats must be finite and non-zero")
    w, x, y, z = (q / norm).unbind(1)
    return torch.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        dim=1,
    ).reshape(-1, 3, 3)  # fmt: skip


def covariance_from_scale_rotation(scales: torch.Tensor, quats: torch.Tensor) -> torch.Tensor:
    """3DGS covariance ``Σ = R S Sᵀ Rᵀ`` with ``S = diag(scales)``: (N, 3), (N, 4) -> (N, 3, 3).

    Raises:
        ValueError: if a scale is not finite or not > 0, or a quaternion is zero.
    """
    if scales.ndim != 2 or scales.shape[1] != 3:
        raise ValueError(f"scales must have shape (N, 3), got {tuple(scales.shape)}")
    if not torch.isfinite(scales).all() or bool((scales <= 0).any()):
        raise ValueError("scales must be finite and > 0 (a degenerate Gaussian has no covariance)")
    m = quaternion_to_rotation(quats) * scales[:, None, :]  # R S, (N, 3, 3)
    return m @ m.transpose(1, 2)


@dataclass(frozen=True)
class Projected:
    """Gaussians in one camera.

    Attributes:
        mean2d: (N, 2) pixel coordinates ``(u, v)`` of the projected centres.
        cov2d: (N, 2, 2) screen-space covariances (dilated by ε).
        depth: (N,) camera z of the centres.
        valid: (N,) bool, ``depth > near`` (the others are culled).
    """

    mean2d: torch.Tensor
    cov2d: torch.Tensor
    depth: torch.Tensor
    valid: torch.Tensor


def _check_camera(extrinsic: torch.Tensor, intrinsic: torch.Tensor) -> None:
    if extrinsic.shape != (3, 4):
        raise ValueError(f"extrinsic must be a (3, 4) camera-from-world matrix, got {tuple(extrinsic.shape)}")
    if intrinsic.shape != (3, 3):
        raise ValueError(f"intrinsic must be a (3, 3) pinhole matrix, got {tuple(intrinsic.shape)}")
    if not torch.isfinite(extrinsic).all():
        raise ValueError("extrinsic (the camera pose) contains NaN or inf")
    if not torch.isfinite(intrinsic).all():
        raise ValueError("intrinsic contains NaN or inf")


def project_gaussians(
    means: torch.Tensor, covs: torch.Tensor, extrinsic: torch.Tensor, intrinsic: torch.Tensor, *, near: float = 0.05
) -> Projected:
    """EWA projection of 3D Gaussians into a pinhole camera (module docstring, step 1).

    Args:
        means: (N, 3) world centres.
        covs: (N, 3, 3) world covariances.
        extrinsic: (3, 4) camera-from-world ``[R | t]`` (OpenCV axes).
        intrinsic: (3, 3) ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``.
        near: Gaussians with camera depth ``<= near`` are marked invalid (culled).

    Returns:
        :class:`Projected`.

    Raises:
        ValueError: on wrong shapes or non-finite cameras or means.
    """
    _check_camera(extrinsic, intrinsic)
    if means.ndim != 2 or means.shape[1] != 3 or covs.shape != (means.shape[0], 3, 3):
        raise ValueError(f"means must be (N, 3) and covs (N, 3, 3), got {tuple(means.shape)}, {tuple(covs.shape)}")
    if not torch.isfinite(means).all():
        raise ValueError("means contain NaN or inf")
    r, t = extrinsic[:, :3], extrinsic[:, 3]
    pc = means @ r.T + t  # (N, 3) camera coordinates
    z = pc[:, 2]
    valid = z > near
    zs = torch.where(valid, z, torch.ones_like(z))  # culled Gaussians get a harmless depth (masked later)
    fx, fy, cx, cy = intrinsic[0, 0], intrinsic[1, 1], intrinsic[0, 2], intrinsic[1, 2]
    # μ' = (fx x/z + cx, fy y/z + cy)
    mean2d = torch.stack([fx * pc[:, 0] / zs + cx, fy * pc[:, 1] / zs + cy], dim=1)
    # J = [[fx/z, 0, −fx x/z²], [0, fy/z, −fy y/z²]], with x/z and y/z clamped to 1.3 × the half field of view
    # (the 3DGS rasteriser's computeCov2D does the same: the linearisation is meaningless far off screen, where it
    # would blow a Gaussian near the camera plane up over the whole image)
    lim_x, lim_y = 1.3 * cx / fx, 1.3 * cy / fy
    tx = torch.minimum(torch.maximum(pc[:, 0] / zs, -lim_x), lim_x) * zs
    ty = torch.minimum(torch.maximum(pc[:, 1] / zs, -lim_y), lim_y) * zs
    zero = torch.zeros_like(zs)
    jac = torch.stack([fx / zs, zero, -fx * tx / zs**2, zero, fy / zs, -fy * ty / zs**2], dim=1).reshape(-1, 2, 3)
    m = jac @ r  # (N, 2, 3)
    # Σ' = J R Σ Rᵀ Jᵀ + ε I
    cov2d = m @ covs @ m.transpose(1, 2) + DILATION * torch.eye(2, dtype=means.dtype, device=means.device)
    return Projected(mean2d=mean2d, cov2d=cov2d, depth=z, valid=valid)


@dataclass(frozen=True)
class Rendered:
    """One rendered view.

    Attributes:
        image: (C, H, W) composited channels (background where nothing covers a pixel).
        alpha: (H, W) accumulated opacity ``1 − T_N``.
        depth: (H, W) expected depth ``Σ T_i α_i z_i`` (not normalised by alpha).
    """

    image: torch.Tensor
    alpha: torch.Tensor
    depth: torch.Tensor


def _check_gaussians(means, scales, quats, opacities, colors) -> None:  # noqa: ANN001
    n = means.shape[0]
    if opacities.shape != (n,):
        raise ValueError(f"opacities must have shape ({n},), got {tuple(opacities.shape)}")
    if colors.ndim != 2 or colors.shape[0] != n:
        raise ValueError(f"colors must have shape ({n}, C), got {tuple(colors.shape)}")
    if scales.shape != (n, 3) or quats.shape != (n, 4):
        raise ValueError(f"scales must be ({n}, 3) and quats ({n}, 4), got {tuple(scales.shape)}, {tuple(quats.shape)}")
    if not (torch.isfinite(opacities).all() and bool(((opacities >= 0) & (opacities <= 1)).all())):
        raise ValueError("opacities must lie in [0, 1]")


def render_gaussians(
    means: torch.Tensor,
    scales: torch.Tensor,
    quats: torch.Tensor,
    opacities: torch.Tensor,
    colors: torch.Tensor,
    extrinsic: torch.Tensor,
    intrinsic: torch.Tensor,
    height: int,
    width: int,
    *,
    background: torch.Tensor | None = None,
    near: float = 0.05,
    backend: Literal["torch", "gsplat"] = "torch",
) -> Rendered:
    """Render Gaussians into one camera (module docstring, steps 1–3), differentiable in every Gaussian argument.

    Args:
        means: (N, 3) world centres.
        scales: (N, 3) standard deviations along the Gaussian's axes (> 0).
        quats: (N, 4) rotations ``(w, x, y, z)`` (normalised here).
        opacities: (N,) in [0, 1].
        colors: (N, C) channels to composite (RGB first, then any features).
        extrinsic: (3, 4) camera-from-world.
        intrinsic: (3, 3) pinhole matrix.
        height: H.
        width: W.
        background: (C,) value where the accumulated opacity is below 1 (zeros if None).
        near: near-plane depth below which Gaussians are culled.
        backend: ``"torch"`` (this file) or ``"gsplat"`` (``gsplat.rasterization``, CUDA only).

    Returns:
        :class:`Rendered`.

    Raises:
        ValueError: on bad shapes, non-positive scales, opacities outside [0, 1], non-finite cameras.
        RuntimeError: for ``backend="gsplat"`` when gsplat or CUDA is missing.
    """
    _check_gaussians(means, scales, quats, opacities, colors)
    c = colors.shape[1]
    bg = torch.zeros(c, dtype=colors.dtype, device=colors.device) if background is None else background
    if bg.shape != (c,):
        raise ValueError(f"background must have shape ({c},), got {tuple(bg.shape)}")
    if backend == "gsplat":
        return _render_gsplat(means, scales, quats, opacities, colors, extrinsic, intrinsic, height, width, bg, near)
    if backend != "torch":
        raise ValueError(f"backend must be 'torch' or 'gsplat', got {backend!r}")
    covs = covariance_from_scale_rotation(scales, quats)
    proj = project_gaussians(means, covs, extrinsic, intrinsic, near=near)
    keep = (proj.valid & _on_screen(proj, height, width)).nonzero().squeeze(1)
    order = keep[torch.argsort(proj.depth[keep])]  # step 2: nearest first
    mean2d, cov2d, z = proj.mean2d[order], proj.cov2d[order], proj.depth[order]
    o, col = opacities[order], colors[order]
    # inverse of the 2x2 covariance [[a, b], [b, d]]: [[d, −b], [−b, a]] / (ad − b²)
    a, b, d = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 1]
    det = a * d - b * b
    ia, ib, id_ = d / det, -b / det, a / det
    v, u = torch.meshgrid(
        torch.arange(height, dtype=means.dtype, device=means.device) + 0.5,
        torch.arange(width, dtype=means.dtype, device=means.device) + 0.5,
        indexing="ij",
    )
    du = u.reshape(-1, 1) - mean2d[:, 0]  # (P, N)
    dv = v.reshape(-1, 1) - mean2d[:, 1]
    # Step 3: α = min(0.99, o exp(−½ dᵀ Σ'⁻¹ d))
    power = -0.5 * (ia * du * du + 2 * ib * du * dv + id_ * dv * dv)
    alpha = (o * torch.exp(power.clamp(max=0.0))).clamp(max=ALPHA_MAX)  # (P, N)
    # T_i = Π_{j<i} (1 − α_j), as exp of an exclusive cumulative sum of log(1 − α) (α ≤ 0.99 keeps the log finite)
    log_t = torch.cumsum(torch.log1p(-alpha), dim=1)
    trans = torch.exp(log_t - torch.log1p(-alpha))  # (P, N) exclusive
    weight = trans * alpha
    empty = torch.ones(height * width, dtype=means.dtype, device=means.device)
    t_final = torch.exp(log_t[:, -1]) if weight.shape[1] else empty
    # C(p) = Σ T_i α_i c_i + T_N · background
    image = weight @ col + t_final[:, None] * bg  # (P, C)
    return Rendered(
        image=image.T.reshape(c, height, width),
        alpha=(1 - t_final).reshape(height, width),
        depth=(weight @ z).reshape(height, width),
    )


def _on_screen(proj: Projected, height: int, width: int) -> torch.Tensor:
    """(N,) bool: whether the 3σ box of each projected Gaussian (half-width ``3 √λ_max(Σ')``, the 3DGS radius)
    overlaps the image; the others are culled (3DGS assigns them to no tile)."""
    a, b, d = proj.cov2d[:, 0, 0], proj.cov2d[:, 0, 1], proj.cov2d[:, 1, 1]
    lam = 0.5 * (a + d) + torch.sqrt((0.25 * (a - d) ** 2 + b * b).clamp(min=0))
    r = 3 * torch.sqrt(lam)
    u, v = proj.mean2d[:, 0], proj.mean2d[:, 1]
    return (u + r > 0) & (u - r < width) & (v + r > 0) & (v - r < height)


def render_reference(
    means: torch.Tensor,
    scales: torch.Tensor,
    quats: torch.Tensor,
    opacities: torch.Tensor,
    colors: torch.Tensor,
    extrinsic: torch.Tensor,
    intrinsic: torch.Tensor,
    height: int,
    width: int,
    *,
    background: torch.Tensor | None = None,
    near: float = 0.05,
) -> torch.Tensor:
    """Brute-force reference of :func:`render_gaussians` (image only): a Python loop over pixels and, per pixel, over
    the depth-sorted Gaussians with front-to-back compositing — the 3DGS rasteriser's inner loop, no vectorisation.

    Meant for tests on a handful of Gaussians and pixels; (C, H, W).
    """
    covs = covariance_from_scale_rotation(scales, quats)
    proj = project_gaussians(means, covs, extrinsic, intrinsic, near=near)
    c = colors.shape[1]
    bg = torch.zeros(c, dtype=colors.dtype) if background is None else background
    shown = proj.valid & _on_screen(proj, height, width)
    order = sorted((i for i in range(means.shape[0]) if bool(shown[i])), key=lambda i: float(proj.depth[i].detach()))
    rows = []
    for y in range(height):
        for x in range(width):
            p = torch.tensor([x + 0.5, y + 0.5], dtype=means.dtype)
            acc = torch.zeros(c, dtype=colors.dtype)
            t = torch.ones((), dtype=means.dtype)
            for i in order:
                dlt = p - proj.mean2d[i]
                maha = dlt @ torch.linalg.inv(proj.cov2d[i]) @ dlt
                a = torch.clamp(opacities[i] * torch.exp(-0.5 * maha), max=ALPHA_MAX)
                acc = acc + t * a * colors[i]
                t = t * (1 - a)
            rows.append(acc + t * bg)
    return torch.stack(rows).T.reshape(c, height, width)


def _render_gsplat(means, scales, quats, opacities, colors, extrinsic, intrinsic, height, width, bg, near):  # noqa: ANN001, ANN202
    """The same call on ``gsplat.rasterization`` (gsplat >= 1.0; CUDA). Not exercised without a GPU."""
    try:
        import gsplat  # type: ignore[import-not-found]
    except ImportError as err:
        raise RuntimeError("backend='gsplat' needs the optional package gsplat (pip install gsplat)") from err
    if not means.is_cuda:
        raise RuntimeError("backend='gsplat' needs CUDA tensors (gsplat has CUDA kernels only)")
    _check_camera(extrinsic, intrinsic)
    view = torch.eye(4, dtype=means.dtype, device=means.device)
    view[:3, :] = extrinsic
    out, alpha, _ = gsplat.rasterization(
        means, quats, scales, opacities, colors, view[None], intrinsic[None], width, height,
        near_plane=near, render_mode="RGB+ED", eps2d=DILATION,
    )  # fmt: skip
    img = out[0]  # (H, W, C + 1): channels composited over zero, then the alpha-normalised expected depth
    a = alpha[0, ..., 0]
    image = img[..., :-1] + (1 - a)[..., None] * bg  # C(p) = Σ T_i α_i c_i + T_N · background
    return Rendered(image=image.permute(2, 0, 1), alpha=a, depth=img[..., -1] * a)
