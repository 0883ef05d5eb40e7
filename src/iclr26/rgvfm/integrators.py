"""ODE integrators on a manifold: geodesic (exp-map) Euler and RK4 with re-projection.

Both integrate dx/dt = v(x, t) on a uniform grid t_k = k h, h = t_end / steps, starting from x0 ∈ M.
Sampling a flow model runs t from 0 to t_end < 1 (the official scripts use ``linspace(0, 0.99, 101)``,
i.e. 100 steps to t = 0.99), because an endpoint model's velocity log_x(μ)/(1 - t) is undefined at t = 1.

Steps of one integration step (x at time t):
    Euler: x ← exp_x(h v(x, t)).
    RK4:   k1 = v(x, t); k2 = v(R(x + h/2 k1), t + h/2); k3 = v(R(x + h/2 k2), t + h/2);
           k4 = v(R(x + h k3), t + h); x ← R(x + h/6 (k1 + 2k2 + 2k3 + k4)),
           with R = manifold.proj the re-projection onto M (the identity on Rⁿ, where this is classical RK4).

Shapes: ``B`` batch, ``D`` ambient dimension.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor

from iclr26.rgvfm.manifolds import Manifold

VelocityField = Callable[[Tensor, Tensor], Tensor]
"""v(x, t): (B, D) points and (B, 1) times → (B, D) tangent vectors."""

METHODS = ("euler", "rk4")


def integrate(
    velocity: VelocityField,
    x0: Tensor,
    manifold: Manifold,
    *,
    steps: int,
    t_end: float = 1.0,
    method: Literal["euler", "rk4"] = "euler",
) -> Tensor:
    """Integrate dx/dt = v(x, t) from t = 0 to ``t_end`` on ``manifold``.

    Args:
        velocity: the vector field v(x, t).
        x0: initial points on the manifold, (B, D).
        manifold: where the trajectory lives (Rⁿ for the extrinsic models).
        steps: number of uniform steps (> 0).
        t_end: final time in (0, 1].
        method: ``"euler"`` (geodesic Euler) or ``"rk4"`` (RK4 with re-projection).

    Returns:
        x(t_end), (B, D), on ``manifold``.

    Raises:
        ValueError: naming ``steps``, ``t_end`` or ``method`` when out of range.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not 0.0 < t_end <= 1.0:
        raise ValueError(f"t_end must lie in (0, 1], got {t_end}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    manifold.check(x0, "x0")
    h = t_end / steps
    x = x0
    ones = torch.ones(x0.shape[0], 1, dtype=x0.dtype, device=x0.device)
    for k in range(steps):
        t = ones * (k * h)
        if method == "euler":
            # geodesic Euler: follow the geodesic with initial velocity h v for unit time
            x = manifold.exp(x, h * velocity(x, t))
            continue
        # RK4 in the ambient space, each stage re-projected onto M so v is only queried at points of M
        k1 = velocity(x, t)
        k2 = velocity(manifold.proj(x + 0.5 * h * k1), t + 0.5 * h)
        k3 = velocity(manifold.proj(x + 0.5 * h * k2), t + 0.5 * h)
        k4 = velocity(manifold.proj(x + h * k3), t + h)
        x = manifold.proj(x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return x
