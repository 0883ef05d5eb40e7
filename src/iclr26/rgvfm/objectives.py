"""The RG-VFM and RFM objectives as pure functions of a manifold and tensors.

RG-VFM (Zaghen et al., ICLR 2026, arXiv 2502.12981). The variational posterior over the endpoint x1 given
x_t is a Riemannian Gaussian N_R(x1 | μ_θ(x_t, t), σ_t) ∝ exp(-d_g(x1, μ_θ)² / 2σ_t²). On a homogeneous
manifold with closed-form geodesics (Sⁿ, Hⁿ, Rⁿ) its normaliser does not depend on μ, so the negative
log-likelihood reduces, up to a constant and the factor 1/2σ_t², to the geodesic endpoint loss

    L_RG-VFM(θ) = E_{t, x0, x1} [ d_g(x1, μ_θ(x_t, t))² ],   x_t = exp_{x0}(t log_{x0} x1).

Riemannian Flow Matching (Chen & Lipman, ICLR 2024) regresses the velocity of the same interpolant:

    L_RFM(θ) = E_{t, x0, x1} [ |v_θ(x_t, t) - u_t(x_t | x1)|²_g ],   u_t = d/dt x_t = log_{x_t}(x1)/(1 - t).

An endpoint predictor induces the velocity v_θ = log_{x_t}(μ_θ)/(1 - t). In flat space
|v_θ - u_t|² (1 - t)² = |μ_θ - x1|², so the two objectives coincide up to the time weight (1 - t)²
(test ``test_objectives_coincide_on_flat_space``). On a curved manifold they
differ. The paper's Jacobi-field analysis (as given in the notes, unverified against the PDF) reads
L_RG-VFM = L_RFM + E[-⅓<R(D_τJ(0), v)v, D_τJ(0)> - ⅙<(∇_v R)(...)> + ...]: the geodesic endpoint
error carries curvature terms that the tangent-space velocity error lacks. For constant curvature K
the leading term is explicit: with a = log_{x_t} μ_θ and b = log_{x_t} x1,
d(exp a, exp b)² = |a - b|² - (K/3)(|a|²|b|² - <a, b>²) + O(|·|⁵)  (``curvature_gap``; test
``test_curvature_gap_leading_term``). The paper's equation numbers could not be checked; the names
here follow the notes.

Shapes: ``B`` batch, ``D`` ambient dimension. ``t`` is always ``(B, 1)``.
"""

from __future__ import annotations

from torch import Tensor

from iclr26.rgvfm.manifolds import Manifold, point_checks_enabled


def _same_shape(manifold: Manifold, **tensors: Tensor) -> None:
    """Check that the named per-sample tensors all have one shape (..., D): a silent broadcast of, say,
    (B, 1, D) against (B, D) would average B² pairs instead of B."""
    for name, tensor in tensors.items():
        manifold.check_ambient(tensor, name)
    shapes = {name: tuple(tensor.shape) for name, tensor in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"{', '.join(shapes)} must have the same shape, got {shapes}")


def geodesic_interpolant(manifold: Manifold, x0: Tensor, x1: Tensor, t: Tensor) -> Tensor:
    """x_t = exp_{x0}(t log_{x0} x1): the conditional path shared by every model (straight line in Rⁿ).

    Args:
        manifold: the manifold the path lives on.
        x0: source points, (B, D).
        x1: data points, (B, D).
        t: times in [0, 1], (B, 1).

    Returns:
        x_t, (B, D), on ``manifold``.
    """
    return manifold.geodesic(x0, x1, t)


def conditional_velocity(manifold: Manifold, x0: Tensor, x1: Tensor, t: Tensor) -> Tensor:
    """u_t(x_t | x1) = d/dt x_t = log_{x_t}(x1)/(1 - t), computed as Γ_{x0→x_t}(log_{x0} x1).

    The transported form is exact for geodesics and has no 0/0 as t → 1.

    Returns:
        Tangent vectors at x_t, (B, D).
    """
    return manifold.geodesic_velocity(x0, x1, t)


def endpoint_velocity(manifold: Manifold, x: Tensor, mu: Tensor, t: Tensor) -> Tensor:
    """The velocity an endpoint prediction induces: v = log_x(μ)/(1 - t) (straight to μ in the time left).

    Args:
        manifold: the manifold of the path (Rⁿ for the extrinsic models, where v = (μ - x)/(1 - t)).
        x: current points, (B, D).
        mu: predicted endpoints, (B, D), on ``manifold``.
        t: current times, (B, 1), strictly below 1.

    Returns:
        Tangent vectors at x, (B, D).

    Raises:
        ValueError: if some t ≥ 1 (the velocity is undefined at the end of the path).
    """
    if point_checks_enabled() and bool((t >= 1).any()):
        raise ValueError("t must be < 1 for the endpoint-induced velocity log_x(mu)/(1 - t); integrate to t_end < 1")
    # v_θ = log_x(μ_θ)/(1 - t): reach μ_θ along the geodesic in the time left ((μ - x)/(1 - t) in Rⁿ)
    return manifold.log(x, mu) / (1 - t)


def rgvfm_loss(manifold: Manifold, mu: Tensor, x1: Tensor) -> Tensor:
    """L_RG-VFM = mean_b d_g(x1_b, μ_b)²: the Riemannian-Gaussian NLL up to constants (VFM when flat).

    Args:
        manifold: the manifold of the endpoint (Sⁿ/Hⁿ for RG-VFM, Rⁿ for Euclidean VFM).
        mu: predicted endpoints on ``manifold``, (B, D).
        x1: data points, (B, D).

    Returns:
        Scalar loss.

    Raises:
        ValueError: naming ``mu`` or ``x1`` if its last axis is not D, the two shapes differ, or a point is not
            on ``manifold``.
    """
    _same_shape(manifold, mu=mu, x1=x1)
    manifold.check(mu, "mu")
    manifold.check(x1, "x1")
    # L_RG-VFM = E d_g(x1, μ_θ)²: the Riemannian-Gaussian NLL once its μ-independent normaliser is dropped
    return manifold.dist(mu, x1).pow(2).mean()


def rfm_loss(manifold: Manifold, x: Tensor, v: Tensor, u: Tensor) -> Tensor:
    """L_RFM = mean_b |v_b - u_b|²_g at x_b: velocity regression (Euclidean CFM when flat).

    Args:
        manifold: the manifold of the path.
        x: points at which both vectors are tangent, (B, D).
        v: predicted velocities, (B, D).
        u: target velocities, (B, D).

    Returns:
        Scalar loss.

    Raises:
        ValueError: naming ``x``, ``v`` or ``u`` if its last axis is not D or the three shapes differ, or ``x`` if
            it is not on ``manifold``.
    """
    _same_shape(manifold, x=x, v=v, u=u)
    manifold.check(x, "x")
    diff = v - u
    # L_RFM = E |v_θ - u_t|²_g in the metric at x_t: a tangent-space error, blind to the curvature terms
    return manifold.inner(x, diff, diff).mean()


def curvature_gap(manifold: Manifold, x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """|a - b|²_g - d(exp_x a, exp_x b)²: what RFM's tangent-space error misses of the geodesic error.

    Zero in flat space; for constant curvature K it is (K/3)(|a|²|b|² - <a, b>²) + O(|·|⁵) (Jacobi fields),
    positive on the sphere and negative on hyperbolic space.

    Args:
        manifold: the manifold.
        x: base points, (B, D).
        a: tangent vectors at x, (B, D) (e.g. log_x μ).
        b: tangent vectors at x, (B, D) (e.g. log_x x1).

    Returns:
        (B,) gaps.
    """
    diff = a - b
    # tangent error minus geodesic error: (K/3)(|a|²|b|² - <a, b>²) to leading order (Jacobi fields)
    return manifold.inner(x, diff, diff) - manifold.dist(manifold.exp(x, a), manifold.exp(x, b)).pow(2)


__all__ = [
    "conditional_velocity",
    "curvature_gap",
    "endpoint_velocity",
    "geodesic_interpolant",
    "rfm_loss",
    "rgvfm_loss",
]
