"""Target distributions π ∝ exp(−f) for the reproduction: the paper's two and four with known ground truth.

Each target has ``potential(x)`` (``(n, d) -> (n,)``, float64 torch, vectorised), ``grad(x)`` for the first-order
baselines, and, where it can be sampled exactly, ``sample(n, generator)`` for reference samples.

* :class:`GaussianLassoMixture` — the paper's §5.1 target (from Liang & Chen 2023, §6): ½ N(1, Q⁻¹) + ½ Laplace(0,
  1/4)^⊗d in d = 5 with Q = U diag(14, …, 18) Uᵀ, U a random rotation. Exact samples.
* :class:`TwoTori` — the paper's §5.2 target: uniform on two disjoint solid tori in R³ through a membership
  potential (0 inside, 100 outside). T1: centre (10, 0, 0), R = 10, r = 1 (it passes through the origin, where the
  particles start); T2: centre (−13, 0, 0), R = 3, r = 1. Values from the authors' ``uniform_dist/eval_torus.py``.
* :class:`Gaussian` — an anisotropic Gaussian (exact W2 in closed form).
* :class:`GaussianMixture` — equal-variance isotropic Gaussian mixture (modes known, exact samples).
* :class:`DoubleWell` — f = a (x₁² − 1)² + ½‖x₂:‖², reference samples by inverse CDF on a fine grid along x₁.
* :class:`LogisticPosterior` — Bayesian logistic regression with a Gaussian prior (reference from a long MALA run).

Shape glossary: ``n`` query points, ``d`` dimension, ``K`` mixture components, ``m`` data points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch


def random_rotation(d: int, generator: torch.Generator) -> torch.Tensor:
    """A ``(d, d)`` orthogonal matrix from the QR decomposition of a Gaussian matrix (float64)."""
    q, r = torch.linalg.qr(torch.randn(d, d, dtype=torch.float64, generator=generator))
    return q * torch.sign(torch.diagonal(r))[None, :]


@dataclass(frozen=True)
class Gaussian:
    """N(mean, cov): f(x) = ½ (x − μ)ᵀ Σ⁻¹ (x − μ).

    Attributes:
        mean: ``(d,)``.
        cov: ``(d, d)`` symmetric positive definite.
    """

    mean: torch.Tensor
    cov: torch.Tensor

    @property
    def dim(self) -> int:
        """d."""
        return self.mean.shape[0]

    @cached_property
    def precision(self) -> torch.Tensor:
        """Σ⁻¹, ``(d, d)``."""
        return torch.linalg.inv(self.cov)

    def potential(self, x: torch.Tensor) -> torch.Tensor:
        """f at each row of ``x`` ``(n, d) -> (n,)``."""
        dx = x - self.mean.to(x.dtype)
        return 0.5 * ((dx @ self.precision.to(x.dtype)) * dx).sum(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """∇f, ``(n, d)``."""
        return (x - self.mean.to(x.dtype)) @ self.precision.to(x.dtype)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``(n, d)`` exact samples."""
        chol = torch.linalg.cholesky(self.cov)
        return self.mean + torch.randn(n, self.dim, dtype=self.mean.dtype, generator=generator) @ chol.T


def anisotropic_gaussian(dim: int, condition: float, generator: torch.Generator) -> Gaussian:
    """A rotated Gaussian with standard deviations log-spaced from 1 down to 1/√condition, mean (1, …, 1)."""
    stds = torch.logspace(0, -0.5 * math.log10(condition), dim, dtype=torch.float64)
    u = random_rotation(dim, generator)
    return Gaussian(mean=torch.ones(dim, dtype=torch.float64), cov=u @ torch.diag(stds**2) @ u.T)


@dataclass(frozen=True)
class GaussianMixture:
    """Σ_k p_k N(μ_k, s² I): f(x) = −log Σ_k p_k exp(−‖x − μ_k‖² / 2s²) (constants dropped).

    Attributes:
        means: ``(K, d)`` mode centres.
        std: s > 0, the common standard deviation.
        weights: ``(K,)`` mixture weights summing to 1.
    """

    means: torch.Tensor
    std: float
    weights: torch.Tensor

    @property
    def dim(self) -> int:
        """d."""
        return self.means.shape[1]

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        sq = (x[:, None, :] - self.means[None].to(x.dtype)).square().sum(-1)  # (n, K)
        return self.weights.log().to(x.dtype)[None] - sq / (2 * self.std**2)

    def potential(self, x: torch.Tensor) -> torch.Tensor:
        """f at each row of ``x`` ``(n, d) -> (n,)``."""
        return -torch.logsumexp(self._logits(x), dim=1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """∇f = Σ_k r_k(x) (x − μ_k) / s² with responsibilities r_k."""
        r = torch.softmax(self._logits(x), dim=1)  # (n, K)
        return (x - r @ self.means.to(x.dtype)) / self.std**2

    def assign(self, x: torch.Tensor) -> torch.Tensor:
        """``(n,)`` index of the nearest mode centre of each row."""
        return (x[:, None, :] - self.means[None]).square().sum(-1).argmin(1)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``(n, d)`` exact samples."""
        k = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        return self.means[k] + self.std * torch.randn(n, self.dim, dtype=self.means.dtype, generator=generator)


def ring_mixture(dim: int, n_modes: int, radius: float, std: float) -> GaussianMixture:
    """Equal-weight modes on a circle of ``radius`` in the first two coordinates (zero in the others)."""
    angles = torch.arange(n_modes, dtype=torch.float64) * (2 * math.pi / n_modes)
    means = torch.zeros(n_modes, dim, dtype=torch.float64)
    means[:, 0], means[:, 1] = radius * torch.cos(angles), radius * torch.sin(angles)
    return GaussianMixture(means=means, std=std, weights=torch.full((n_modes,), 1.0 / n_modes, dtype=torch.float64))


@dataclass(frozen=True)
class GaussianLassoMixture:
    """½ N(1, Q⁻¹) + ½ Π_i Laplace(x_i; 0, b), b = 1/4 (Liang & Chen 2023, §6; the paper's §5.1).

    Attributes:
        q: ``(d, d)`` precision Q of the Gaussian component, centred at (1, …, 1).
        b: Laplace scale (1/4).
    """

    q: torch.Tensor
    b: float = 0.25

    @property
    def dim(self) -> int:
        """d."""
        return self.q.shape[0]

    @cached_property
    def _log_norm(self) -> float:
        """log of the Gaussian component's normalising constant, ½ log det Q − (d/2) log 2π."""
        return 0.5 * float(torch.logdet(self.q)) - 0.5 * self.dim * math.log(2 * math.pi)

    def _log_parts(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.dim
        dx = x - 1.0
        log_gauss = self._log_norm - 0.5 * ((dx @ self.q.to(x.dtype)) * dx).sum(-1)
        log_laplace = -d * math.log(2 * self.b) - x.abs().sum(-1) / self.b
        return math.log(0.5) + log_gauss, math.log(0.5) + log_laplace

    def potential(self, x: torch.Tensor) -> torch.Tensor:
        """f = −log(½ φ_Q(x − 1) + ½ Laplace(x)), normalised (∫ e^{−f} = 1)."""
        lg, ll = self._log_parts(x)
        return -torch.logaddexp(lg, ll)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """A (sub)gradient of f, with sign(0) = 0 on the Laplace part."""
        lg, ll = self._log_parts(x)
        r = torch.sigmoid(lg - ll)[:, None]  # weight of the Gaussian component
        return r * ((x - 1.0) @ self.q.to(x.dtype)) + (1 - r) * torch.sign(x) / self.b

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``(n, d)`` exact samples: a fair coin picks the component."""
        d = self.dim
        gauss_l = torch.linalg.cholesky(torch.linalg.inv(self.q))
        gauss = 1.0 + torch.randn(n, d, dtype=torch.float64, generator=generator) @ gauss_l.T
        u = torch.rand(n, d, dtype=torch.float64, generator=generator) - 0.5
        laplace = -self.b * torch.sign(u) * torch.log1p(-2 * u.abs())
        coin = torch.rand(n, 1, dtype=torch.float64, generator=generator) < 0.5
        return torch.where(coin, gauss, laplace)


def gaussian_lasso_mixture(
    generator: torch.Generator, eigenvalues: tuple[float, ...] = (14, 15, 16, 17, 18)
) -> GaussianLassoMixture:
    """The §5.1 target with Q = U diag(eigenvalues) Uᵀ for a random rotation U."""
    u = random_rotation(len(eigenvalues), generator)
    q = u @ torch.diag(torch.tensor(eigenvalues, dtype=torch.float64)) @ u.T
    return GaussianLassoMixture(q=0.5 * (q + q.T))


@dataclass(frozen=True)
class Torus:
    """A solid torus around the z axis through ``centre``: ((√(x² + y²) − R)² + z² ≤ r²) in local coordinates."""

    centre: tuple[float, float, float]
    major: float
    minor: float

    def contains(self, x: torch.Tensor) -> torch.Tensor:
        """``(n,)`` bool, whether each row of ``x`` ``(n, 3)`` lies in the solid torus."""
        c = torch.tensor(self.centre, dtype=x.dtype, device=x.device)
        p = x - c
        rho = torch.sqrt(p[:, 0].square() + p[:, 1].square())
        return (rho - self.major).square() + p[:, 2].square() <= self.minor**2

    @property
    def volume(self) -> float:
        """2π² R r²."""
        return 2 * math.pi**2 * self.major * self.minor**2


@dataclass(frozen=True)
class TwoTori:
    """Uniform distribution on T1 ∪ T2 through a membership potential (0 inside, ``v_out`` outside).

    Attributes:
        t1: the near torus (through the origin).
        t2: the far torus.
        v_out: potential outside (paper: 100).
    """

    t1: Torus = Torus((10.0, 0.0, 0.0), 10.0, 1.0)
    t2: Torus = Torus((-13.0, 0.0, 0.0), 3.0, 1.0)
    v_out: float = 100.0

    @property
    def dim(self) -> int:
        """3."""
        return 3

    def potential(self, x: torch.Tensor) -> torch.Tensor:
        """0 inside T1 ∪ T2, ``v_out`` elsewhere."""
        inside = self.t1.contains(x) | self.t2.contains(x)
        return torch.where(inside, torch.zeros((), dtype=x.dtype), torch.full((), self.v_out, dtype=x.dtype))

    def fractions(self, x: torch.Tensor) -> tuple[float, float]:
        """(fraction of rows in T1, fraction in T2)."""
        return float(self.t1.contains(x).double().mean()), float(self.t2.contains(x).double().mean())

    @property
    def t2_mass(self) -> float:
        """π(T2) = vol(T2) / (vol(T1) + vol(T2)) (3/13 for the paper's tori)."""
        return self.t2.volume / (self.t1.volume + self.t2.volume)


@dataclass(frozen=True)
class DoubleWell:
    """f(x) = a (x₁² − 1)² + ½ Σ_{i≥2} x_i²: two modes at x₁ = ±1 separated by a barrier of height a.

    Attributes:
        dim: d ≥ 1.
        barrier: a > 0.
    """

    dim: int
    barrier: float

    def potential(self, x: torch.Tensor) -> torch.Tensor:
        """f at each row of ``x`` ``(n, d) -> (n,)``."""
        return self.barrier * (x[:, 0].square() - 1).square() + 0.5 * x[:, 1:].square().sum(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """∇f, ``(n, d)``."""
        g = x.clone()
        g[:, 0] = 4 * self.barrier * x[:, 0] * (x[:, 0].square() - 1)
        return g

    def sample(self, n: int, generator: torch.Generator, grid_size: int = 200_001) -> torch.Tensor:
        """``(n, d)`` samples: x₁ by inverse CDF of exp(−a(x₁² − 1)²) on a grid over [−4, 4], the rest Gaussian."""
        grid = np.linspace(-4.0, 4.0, grid_size)
        dens = np.exp(-self.barrier * (grid**2 - 1) ** 2)
        cdf = np.cumsum(dens)
        cdf /= cdf[-1]
        u = torch.rand(n, dtype=torch.float64, generator=generator).numpy()
        x = torch.randn(n, self.dim, dtype=torch.float64, generator=generator)
        x[:, 0] = torch.from_numpy(np.interp(u, cdf, grid))
        return x


@dataclass(frozen=True)
class LogisticPosterior:
    """Bayesian logistic regression: f(θ) = Σ_i log(1 + exp(−s_i a_iᵀθ)) + ‖θ‖² / (2 τ²).

    Attributes:
        features: ``(m, d)`` design matrix a_i (include a column of ones for an intercept).
        labels: ``(m,)`` labels s_i in {−1, +1}.
        prior_var: τ² > 0.
    """

    features: torch.Tensor
    labels: torch.Tensor
    prior_var: float

    @property
    def dim(self) -> int:
        """d."""
        return self.features.shape[1]

    def potential(self, theta: torch.Tensor) -> torch.Tensor:
        """f at each row of ``theta`` ``(n, d) -> (n,)``."""
        margins = (theta @ self.features.T) * self.labels  # (n, m)
        return torch.nn.functional.softplus(-margins).sum(1) + theta.square().sum(1) / (2 * self.prior_var)

    def grad(self, theta: torch.Tensor) -> torch.Tensor:
        """∇f, ``(n, d)``."""
        margins = (theta @ self.features.T) * self.labels  # (n, m)
        weights = -torch.sigmoid(-margins) * self.labels  # (n, m)
        return weights @ self.features + theta / self.prior_var
