"""Image metrics of the reproduction: PSNR and SSIM (LPIPS needs hub weights and is left out).

- ``PSNR = −10 log10(MSE)`` for images in [0, 1] (optionally over a pixel mask).
- ``SSIM`` (Wang et al. 2004) with the usual 11×11 Gaussian window (σ = 1.5), ``C1 = (0.01)²``, ``C2 = (0.03)²``,
  averaged over the valid (unpadded) window positions and the channels:
  ``SSIM = (2 μx μy + C1)(2 σxy + C2) / ((μx² + μy² + C1)(σx² + σy² + C2))``.

Dimension letters: ``C`` channels, ``H, W`` image size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as nnf

__all__ = ["psnr", "ssim"]


def psnr(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """PSNR in dB of (C, H, W) images in [0, 1], over the pixels where ``mask`` (H, W) is True (all if None).

    Raises:
        ValueError: on mismatched shapes or an empty mask.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)}, {tuple(target.shape)}")
    err = (pred - target) ** 2
    if mask is not None:
        if not bool(mask.any()):
            raise ValueError("mask selects no pixel")
        err = err[:, mask]
    mse = float(err.mean())
    return 10 * math.log10(1.0 / max(mse, 1e-10))


def ssim(pred: torch.Tensor, target: torch.Tensor, *, window: int = 11, sigma: float = 1.5) -> float:
    """SSIM of (C, H, W) images in [0, 1] (module docstring).

    Raises:
        ValueError: on mismatched shapes or images smaller than the window.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)}, {tuple(target.shape)}")
    c, h, w = pred.shape
    if h < window or w < window:
        raise ValueError(f"images must be at least {window}x{window} for SSIM, got {h}x{w}")
    x = torch.arange(window, dtype=torch.float64, device=pred.device) - (window - 1) / 2
    g = torch.exp(-(x**2) / (2 * sigma**2))
    g = g / g.sum()
    k = (g[:, None] * g[None, :]).expand(c, 1, window, window)
    a, b = pred[None].double(), target[None].double()

    def blur(t: torch.Tensor) -> torch.Tensor:
        return nnf.conv2d(t, k, groups=c)

    mu_x, mu_y = blur(a), blur(b)
    sxx = blur(a * a) - mu_x**2
    syy = blur(b * b) - mu_y**2
    sxy = blur(a * b) - mu_x * mu_y
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mu_x * mu_y + c1) * (2 * sxy + c2)) / ((mu_x**2 + mu_y**2 + c1) * (sxx + syy + c2))
    return float(s.mean())
