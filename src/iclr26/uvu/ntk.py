"""Infinite-width theory of UVU (§4 of the paper): ReLU NNGP/NTK kernels and the converged TD predictor.

For a ReLU MLP in NTK parameterisation (:class:`iclr26.uvu.model.UniversalMLP` with ``parameterization="ntk"``)
the output at initialisation is a Gaussian process with kernel ``κ`` (NNGP) and gradient descent moves it along the
neural tangent kernel ``Θ`` (Jacot et al. 2018). Both follow the arc-cosine recursion (Cho & Saul 2009), from
``Σ¹(x, x') = σ_w² x·x'/D + σ_b²``, ``Θ¹ = Σ¹`` and, per hidden layer,

    κ^{l+1} = σ_w² E[φ(u) φ(u')] + σ_b²,      Θ^{l+1} = κ^{l+1} + σ_w² E[φ'(u) φ'(u')] Θ^l,   (u, u') ~ N(0, Σ^l)

with ``E[φφ'] = sqrt(Σ_xx Σ_x'x') (sin θ + (π - θ) cos θ) / (2π)`` and ``E[φ'φ'] = (π - θ) / (2π)`` for φ = ReLU.

Semi-gradient TD (learning rate η, batch of N data points X with successors X') in function space reads
``∂_t f(x) = -(η/N) Θ(x, X) (f(X) - r - γ f(X'))``; with ``A = Θ_XX - γ Θ_X'X`` (eigenvalues with positive real
part) it converges to

    f_∞(x) = f_0(x) - Θ(x, X) A⁻¹ (f_0(X) - γ f_0(X') - r).                                   [derived]

* Ensemble (§4): members differ only in ``f_0 ~ GP(0, κ)``, so ``V[f_∞(x)] = ℓ_xᵀ κ ℓ_x`` with the linear map
  ``ℓ_x = e_x - (Θ_xX A⁻¹) (E_X - γ E_X')`` applied to ``f_0`` on the finite point set.
* UVU: ``u_∞ - g = ℓ[u_0 - g]`` with ``r = r_g = g(X) - γ g(X')``, and ``u_0 - g ~ GP(0, 2κ)`` (independent
  initialisations), so ``E[ε²(x)] = 2 ℓ_xᵀ κ ℓ_x = 2 V[f_∞(x)]`` — the paper's "UVU errors equal the ensemble
  variance" with the factor 2 of two independent draws (derived here; the paper's normalisation could not be read).

Glossary: ``M`` points of a finite input set, ``N`` data points (indices into the M), ``D`` input features.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Kernels:
    """NNGP and NTK Gram matrices of a ReLU MLP on a point set.

    Attributes:
        nngp: ``(M, M)`` covariance ``κ`` of the network output at initialisation.
        ntk: ``(M, M)`` neural tangent kernel ``Θ``.
    """

    nngp: Tensor
    ntk: Tensor


def relu_kernels(x: Tensor, *, depth: int, sigma_w: float = 1.0, sigma_b: float = 0.0) -> Kernels:
    """Infinite-width NNGP and NTK of a ReLU MLP with ``depth`` hidden layers (NTK parameterisation).

    Args:
        x: ``(M, D)`` network inputs (already encoded, e.g. by :meth:`UniversalMLP.encode`).
        depth: number of hidden layers ``>= 1``.
        sigma_w: weight scale ``σ_w`` of every layer.
        sigma_b: bias scale ``σ_b`` of every layer (0: no biases).

    Returns:
        :class:`Kernels` in float64.

    Raises:
        ValueError: for ``depth < 1`` or a zero input row with ``sigma_b = 0`` (undefined angle).
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    x = x.to(torch.float64)
    # Σ¹(x, x') = σ_w² x·x'/D + σ_b² ;  Θ¹ = Σ¹
    sigma = sigma_w**2 * (x @ x.T) / x.shape[1] + sigma_b**2
    theta = sigma.clone()
    for _ in range(depth):
        diag = sigma.diagonal()
        if (diag <= 0).any():
            raise ValueError("an input row has zero variance (zero features and sigma_b = 0); the angle is undefined")
        norms = torch.sqrt(diag[:, None] * diag[None, :])
        cos = (sigma / norms).clamp(-1.0, 1.0)
        angle = torch.arccos(cos)
        # E[φ(u)φ(u')] = sqrt(Σ_xx Σ_x'x') (sin θ + (π - θ) cos θ) / (2π)
        e_phi = norms * (torch.sin(angle) + (math.pi - angle) * cos) / (2 * math.pi)
        # E[φ'(u)φ'(u')] = (π - θ) / (2π)
        e_dphi = (math.pi - angle) / (2 * math.pi)
        new_sigma = sigma_w**2 * e_phi + sigma_b**2
        # Θ^{l+1} = κ^{l+1} + σ_w² E[φ'φ'] Θ^l
        theta = new_sigma + sigma_w**2 * e_dphi * theta
        sigma = new_sigma
    return Kernels(nngp=sigma, ntk=theta)


@dataclass(frozen=True)
class TDLimit:
    """The infinite-width limit of TD policy evaluation on a finite point set.

    Attributes:
        covariance: ``(M, M)`` ``Cov_{θ₀}[f_∞(x), f_∞(x')] = ℓ_x κ ℓ_x'ᵀ`` across initialisations.
        ensemble_variance: ``(M,)`` ``V_{θ₀}[f_∞(x)]``, the variance of an infinite ensemble of wide networks.
        uvu_error: ``(M,)`` ``E[ε²(x)] = 2 V[f_∞(x)]`` of UVU with independently initialised ``u`` and ``g``.
        mean: ``(M,)`` ``E[f_∞(x)] = Θ(x, X) A⁻¹ r`` (the kernel TD solution).
        operator_eigenvalues: ``(N,)`` complex eigenvalues of ``A = Θ_XX - γ Θ_X'X`` (GD converges iff all real
            parts are positive; their spread sets the number of steps).
    """

    covariance: Tensor
    ensemble_variance: Tensor
    uvu_error: Tensor
    mean: Tensor
    operator_eigenvalues: Tensor


def td_limit(kernels: Kernels, data: Tensor, successors: Tensor, rewards: Tensor, *, gamma: float) -> TDLimit:
    """The converged wide-network TD predictor on every point of a finite set (see the module docstring).

    Args:
        kernels: NNGP and NTK on the ``M`` points.
        data: ``(N,)`` distinct indices of the data points ``X`` among the ``M``.
        successors: ``(N,)`` indices of their successors ``X' = (s', a', z)``.
        rewards: ``(N,)`` rewards of the data transitions.
        gamma: discount ``γ`` in ``[0, 1)``.

    Returns:
        :class:`TDLimit` (float64).

    Raises:
        ValueError: for ``gamma`` outside ``[0, 1)``, mismatched shapes, indices outside ``[0, M)``, repeated data
            indices, or an operator ``A`` with an eigenvalue whose real part is not positive (TD would not converge).
    """
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must be in [0, 1), got {gamma}")
    m, n = kernels.ntk.shape[0], data.shape[0]
    if kernels.ntk.shape != (m, m) or kernels.nngp.shape != (m, m):
        raise ValueError(
            f"kernels.ntk and kernels.nngp must both be (M, M), got {tuple(kernels.ntk.shape)} and "
            f"{tuple(kernels.nngp.shape)}"
        )
    for name, idx in (("data", data), ("successors", successors)):
        if idx.numel() and (idx.min() < 0 or idx.max() >= m):
            raise ValueError(f"{name} indices must lie in [0, M={m}), got [{int(idx.min())}, {int(idx.max())}]")
    if successors.shape != (n,) or rewards.shape != (n,):
        raise ValueError(
            f"data, successors and rewards must all have shape (N,), got {tuple(data.shape)}, "
            f"{tuple(successors.shape)}, {tuple(rewards.shape)}"
        )
    if torch.unique(data).numel() != n:
        raise ValueError("data indices must be distinct (one transition per point)")
    theta, kappa = kernels.ntk, kernels.nngp
    select = torch.zeros(n, m, dtype=torch.float64)
    select[torch.arange(n), data] = 1.0
    select_next = torch.zeros(n, m, dtype=torch.float64)
    select_next[torch.arange(n), successors] = 1.0
    # A = Θ_XX - γ Θ_X'X
    a = theta[data][:, data] - gamma * theta[successors][:, data]
    eig = torch.linalg.eigvals(a)
    if (eig.real <= 0).any():
        raise ValueError(
            f"TD operator A has an eigenvalue with real part {eig.real.min().item():.3g} <= 0; "
            "semi-gradient TD diverges on this data (lower gamma or change the coverage)"
        )
    # ℓ = I - Θ_{·X} A⁻¹ (E_X - γ E_X')
    ell = torch.eye(m, dtype=torch.float64) - theta[:, data] @ torch.linalg.solve(a, select - gamma * select_next)
    # Cov[f_∞] = ℓ κ ℓᵀ ;  V[f_∞(x)] = its diagonal ;  E[ε²(x)] = 2 V[f_∞(x)]
    covariance = ell @ kappa @ ell.T
    variance = covariance.diagonal().clone()
    # E f_∞ = Θ_{·X} A⁻¹ r
    mean = theta[:, data] @ torch.linalg.solve(a, rewards.to(torch.float64))
    return TDLimit(
        covariance=covariance, ensemble_variance=variance, uvu_error=2.0 * variance, mean=mean, operator_eigenvalues=eig
    )
