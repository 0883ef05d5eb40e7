"""Rectified flow (flow matching) as in Wan2.1: the interpolation, its velocity loss, and an Euler sampler.

With data z_0, noise eps ~ N(0, I) and t in [0, 1] (t = 1 is noise, Wan's convention):

    z_t = (1 - t) z_0 + t eps,      u = dz_t/dt = eps - z_0,      L = E || v_theta(z_t, t) - u ||^2.

Sampling integrates dz/dt = v from t = 1 to 0 with Euler steps on the shifted schedule
sigma(s) = shift * s / (1 + (shift - 1) s) (Wan's ``sample_shift``; the official MAGREF sampler uses UniPC/DPM++
with 40-50 steps, CFG 5, shift 3-5).

Dimension letters: B batch, ... any trailing latent shape.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def interpolate(z0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """z_t = (1 - t) z_0 + t eps with ``t`` of shape ``(B,)`` broadcast over ``(B, ...)``."""
    tb = t.reshape(-1, *([1] * (z0.dim() - 1))).to(z0.dtype)
    # rectified flow (Wan): z_t = (1 - t) z_0 + t eps
    return (1 - tb) * z0 + tb * eps


def flow_matching_loss(
    v_pred: torch.Tensor, z0: torch.Tensor, eps: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """L = mean || v - (eps - z_0) ||^2 over all elements (or the weighted mean with ``weight``, same shape/broadcast).

    Raises:
        ValueError: if the shapes differ.
    """
    if v_pred.shape != z0.shape or z0.shape != eps.shape:
        raise ValueError(f"v_pred {tuple(v_pred.shape)}, z0 {tuple(z0.shape)} and eps {tuple(eps.shape)} must match")
    # L = || v - u ||^2 with u = dz_t/dt = eps - z_0
    err = (v_pred - (eps - z0)) ** 2
    if weight is None:
        return err.mean()
    w = weight.to(err.dtype).expand_as(err)
    return (err * w).sum() / w.sum().clamp_min(torch.finfo(err.dtype).eps)


def shifted_sigmas(steps: int, shift: float) -> torch.Tensor:
    """``steps + 1`` times from 1 to 0: sigma(s) = shift s / (1 + (shift - 1) s) on s = linspace(1, 0).

    Raises:
        ValueError: for steps < 1 or shift <= 0.
    """
    if steps < 1:
        raise ValueError(f"steps: need >= 1, got {steps}")
    if shift <= 0:
        raise ValueError(f"shift: must be > 0, got {shift}")
    s = torch.linspace(1.0, 0.0, steps + 1)
    # Wan sample_shift: sigma(s) = shift s / (1 + (shift - 1) s)
    return shift * s / (1 + (shift - 1) * s)


@torch.no_grad()
def euler_sample(
    velocity: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], noise: torch.Tensor, *, steps: int, shift: float
) -> torch.Tensor:
    """Integrate dz/dt = v(z, t) from z_1 = ``noise`` to t = 0: z <- z + (t_next - t) v(z, t)."""
    sig = shifted_sigmas(steps, shift)
    z = noise
    for i in range(steps):
        t = torch.full((noise.shape[0],), float(sig[i]), dtype=noise.dtype, device=noise.device)
        # Euler step of dz/dt = v from t = sigma_i to sigma_{i+1} (< sigma_i)
        z = z + (sig[i + 1] - sig[i]).to(noise.dtype) * velocity(z, t).to(noise.dtype)
    return z
