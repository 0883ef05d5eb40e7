"""Objectives: hand-computed losses, the flat-space equivalence and the curvature (Jacobi) term."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.rgvfm.manifolds import Euclidean, Lorentz, Sphere
from iclr26.rgvfm.objectives import (
    conditional_velocity,
    curvature_gap,
    endpoint_velocity,
    geodesic_interpolant,
    rfm_loss,
    rgvfm_loss,
)

F64 = torch.float64


def test_rgvfm_loss_hand_computed_on_sphere_and_hyperboloid():
    s = Sphere(2)
    north = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=F64)
    x1 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0]], dtype=F64)
    # d(north, equator) = π/2 and d(north, south) = π: loss = ((π/2)² + π²)/2 = 5π²/8
    torch.testing.assert_close(rgvfm_loss(s, north, x1), torch.tensor(5 * math.pi**2 / 8, dtype=F64))
    h = Lorentz(2)
    o = h.base_point(dtype=F64).expand(1, -1)
    # exp_o((0, 2, 0)) = (cosh 2, sinh 2, 0) is at distance 2 from o: loss = 4
    y = torch.tensor([[math.cosh(2.0), math.sinh(2.0), 0.0]], dtype=F64)
    torch.testing.assert_close(rgvfm_loss(h, o, y), torch.tensor(4.0, dtype=F64))


def test_rfm_loss_uses_the_riemannian_metric():
    h = Lorentz(2)
    x = torch.tensor([[math.cosh(1.0), math.sinh(1.0), 0.0]], dtype=F64)
    # at x = (cosh 1, sinh 1, 0) the unit tangent along the geodesic is (sinh 1, cosh 1, 0):
    # Minkowski norm² = -sinh² 1 + cosh² 1 = 1, while its Euclidean norm² is cosh 2 ≈ 3.76
    v = torch.tensor([[math.sinh(1.0), math.cosh(1.0), 0.0]], dtype=F64)
    torch.testing.assert_close(rfm_loss(h, x, 3 * v, v), torch.tensor(4.0, dtype=F64))


def test_conditional_velocity_is_the_time_derivative_of_the_interpolant():
    s = Sphere(2)
    g = torch.Generator().manual_seed(0)
    x0, x1 = s.random_uniform(50, generator=g, dtype=F64), s.random_uniform(50, generator=g, dtype=F64)
    t, h = torch.full((50, 1), 0.4, dtype=F64), 1e-6
    # central difference of x_t in t
    numeric = (geodesic_interpolant(s, x0, x1, t + h) - geodesic_interpolant(s, x0, x1, t - h)) / (2 * h)
    torch.testing.assert_close(conditional_velocity(s, x0, x1, t), numeric, rtol=0, atol=1e-8)
    e = Euclidean(3)
    a, b = torch.randn(5, 3, dtype=F64), torch.randn(5, 3, dtype=F64)
    torch.testing.assert_close(conditional_velocity(e, a, b, torch.rand(5, 1, dtype=F64)), b - a)


def test_objectives_coincide_on_flat_space():
    """In R^n the RFM loss of the endpoint-induced velocity, times (1 - t)², is the RG-VFM (VFM) loss."""
    e = Euclidean(3)
    g = torch.Generator().manual_seed(0)
    x0, x1, mu = (torch.randn(64, 3, generator=g, dtype=F64) for _ in range(3))
    for t_value in (0.0, 0.3, 0.9):
        t = torch.full((64, 1), t_value, dtype=F64)
        xt = geodesic_interpolant(e, x0, x1, t)
        v = endpoint_velocity(e, xt, mu, t)
        u = conditional_velocity(e, x0, x1, t)
        torch.testing.assert_close((1 - t_value) ** 2 * rfm_loss(e, xt, v, u), rgvfm_loss(e, mu, x1))


@pytest.mark.parametrize(("manifold", "sign"), [(Sphere(2), 1.0), (Lorentz(2), -1.0)])
def test_objectives_differ_on_curved_space_with_the_sign_of_the_curvature(manifold, sign):
    """|log μ - log x1|² exceeds d(μ, x1)² on S² (K > 0) and falls short of it on H² (K < 0)."""
    g = torch.Generator().manual_seed(1)
    x = manifold.wrapped_normal(200, scale=0.5, generator=g, dtype=F64)
    a = manifold.proj_tangent(x, torch.randn(200, 3, generator=g, dtype=F64))
    b = manifold.proj_tangent(x, torch.randn(200, 3, generator=g, dtype=F64))
    a, b = a / (manifold.norm(x, a, keepdim=True) + 1), b / (manifold.norm(x, b, keepdim=True) + 1)  # |a|, |b| < 1
    gap = curvature_gap(manifold, x, a, b)
    assert (sign * gap >= -1e-12).all()
    assert (sign * gap).mean() > 1e-3


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2), Euclidean(3)])
def test_curvature_gap_leading_term(manifold):
    """Gap = (K/3)(|a|²|b|² - <a, b>²) + O(ε⁵) for a, b of size ε (Jacobi-field expansion)."""
    g = torch.Generator().manual_seed(2)
    x = manifold.wrapped_normal(20, scale=0.5, generator=g, dtype=F64) if manifold.dim == 2 else torch.zeros(20, 3)
    x = x.to(F64)
    a = manifold.proj_tangent(x, torch.randn(20, 3, generator=g, dtype=F64))
    b = manifold.proj_tangent(x, torch.randn(20, 3, generator=g, dtype=F64))
    a, b = a / manifold.norm(x, a, keepdim=True), b / manifold.norm(x, b, keepdim=True)
    eps = 1e-2
    wedge = manifold.inner(x, a, a) * manifold.inner(x, b, b) - manifold.inner(x, a, b) ** 2
    gap = curvature_gap(manifold, x, eps * a, eps * b)
    # the ε⁴ term is (K/3) ε⁴ wedge; the remainder is O(ε⁶) relative ε² = 1e-4 (tolerance 1e-3 relative)
    torch.testing.assert_close(gap, manifold.curvature / 3 * eps**4 * wedge, rtol=1e-3, atol=1e-13)


def test_rgvfm_optimum_is_the_frechet_mean():
    """For two equally likely endpoints, the loss is minimal at their geodesic midpoint."""
    s = Sphere(2)
    a = torch.tensor([[1.0, 0.0, 0.0]], dtype=F64)
    b = torch.tensor([[0.0, 1.0, 0.0]], dtype=F64)
    targets = torch.cat([a, b])
    mid = s.geodesic(a, b, torch.full((1, 1), 0.5, dtype=F64))
    best = rgvfm_loss(s, mid.expand(2, -1), targets)
    # loss at the midpoint is (π/4)²; every perturbed candidate is worse
    torch.testing.assert_close(best, torch.tensor((math.pi / 4) ** 2, dtype=F64))
    g = torch.Generator().manual_seed(3)
    for _ in range(20):
        cand = s.exp(mid, 0.05 * s.proj_tangent(mid, torch.randn(1, 3, generator=g, dtype=F64)))
        assert rgvfm_loss(s, cand.expand(2, -1), targets) > best


def test_endpoint_velocity_rejects_t_equal_one():
    e = Euclidean(2)
    with pytest.raises(ValueError, match="t must be < 1"):
        endpoint_velocity(e, torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 1))


def test_losses_reject_mismatched_shapes_instead_of_broadcasting():
    s = Sphere(2)
    x1 = s.random_uniform(4, generator=torch.Generator().manual_seed(0))
    # (4, 1, 3) against (4, 3) would broadcast to 16 pairs and average the wrong thing
    with pytest.raises(ValueError, match="mu, x1 must have the same shape"):
        rgvfm_loss(s, x1[:, None, :], x1)
    with pytest.raises(ValueError, match="mu must have last axis of size 3"):
        rgvfm_loss(s, x1[:, :2], x1)
    with pytest.raises(ValueError, match="x, v, u must have the same shape"):
        rfm_loss(s, x1, x1[:2], x1)
