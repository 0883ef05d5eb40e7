"""Distances between a sample and reference samples (or a known Gaussian), and mode coverage.

* :func:`knn_kl` — the k-nearest-neighbour KL estimator of Wang, Kulkarni & Verdú (2009), the paper's metric
  (the authors call ``infomeasure.kld(..., approach="metric", k=4)``).
* :func:`wasserstein2` — exact W2 between two empirical measures (optimal transport by POT's network simplex).
* :func:`gaussian_w2` — closed-form W2 between Gaussians (Bures), for a sample's moment-matched Gaussian.
* :func:`mmd_rbf` — unbiased squared MMD with a Gaussian kernel.
* :func:`mode_fractions` — share of points nearest each mode.

Inputs are float64 tensors or arrays; outputs are Python floats. Shape glossary: ``n`` sample size, ``m`` reference
size, ``d`` dimension, ``K`` modes.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.spatial import cKDTree


def _np(x: torch.Tensor | np.ndarray) -> np.ndarray:
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"samples: expected an (n, d) array, got shape {arr.shape}")
    return arr.astype(np.float64, copy=False)


def knn_kl(samples: torch.Tensor | np.ndarray, reference: torch.Tensor | np.ndarray, k: int = 4) -> float:
    """Estimate KL(p ‖ q) from ``samples`` ~ p ``(n, d)`` and ``reference`` ~ q ``(m, d)``.

    D̂ = (d/n) Σ_i log(ν_k(i) / ρ_k(i)) + log(m / (n − 1)), with ρ_k(i) the distance from x_i to its k-th nearest
    neighbour among the other samples and ν_k(i) to its k-th nearest neighbour in the reference.

    Raises:
        ValueError: for k < 1, mismatched dimensions or fewer than k + 1 samples.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k: the neighbour rank must be an integer >= 1, got {k!r}")
    x, r = _np(samples), _np(reference)
    n, d = x.shape
    if r.shape[1] != d:
        raise ValueError(f"reference: dimension {r.shape[1]} differs from the samples' {d}")
    if n <= k or r.shape[0] < k:
        raise ValueError(f"samples: need more than k={k} samples and at least k reference points")
    # k=[j] asks for the j-th neighbour only and always returns an (n, 1) array (a plain k=1 returns (n,))
    rho = cKDTree(x).query(x, k=[k + 1])[0][:, 0]  # the nearest "neighbour" of x_i among the samples is x_i
    nu = cKDTree(r).query(x, k=[k])[0][:, 0]
    tiny = np.finfo(np.float64).tiny
    return float(d * np.mean(np.log(np.maximum(nu, tiny) / np.maximum(rho, tiny))) + math.log(r.shape[0] / (n - 1)))


def wasserstein2(samples: torch.Tensor | np.ndarray, reference: torch.Tensor | np.ndarray) -> float:
    """Exact W2 between the uniform empirical measures on ``samples`` ``(n, d)`` and ``reference`` ``(m, d)``.

    Raises:
        ImportError: if POT is missing (``pip install 'iclr26[sampling]'``).
    """
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("wasserstein2 needs POT: pip install 'iclr26[sampling]'") from exc
    x, r = _np(samples), _np(reference)
    cost = ot.dist(x, r, metric="sqeuclidean")
    a = np.full(x.shape[0], 1.0 / x.shape[0])
    b = np.full(r.shape[0], 1.0 / r.shape[0])
    return float(math.sqrt(max(ot.emd2(a, b, cost, numItermax=10_000_000), 0.0)))


def gaussian_w2(mean1: torch.Tensor, cov1: torch.Tensor, mean2: torch.Tensor, cov2: torch.Tensor) -> float:
    """W2(N(m₁, Σ₁), N(m₂, Σ₂))² = ‖m₁ − m₂‖² + tr Σ₁ + tr Σ₂ − 2 tr (Σ₂^{½} Σ₁ Σ₂^{½})^{½}, returned as W2."""
    evals, evecs = torch.linalg.eigh(cov2)
    root2 = evecs @ torch.diag(evals.clamp(min=0).sqrt()) @ evecs.T
    cross = torch.linalg.eigvalsh(root2 @ cov1 @ root2).clamp(min=0).sqrt().sum()
    sq = (mean1 - mean2).square().sum() + torch.trace(cov1) + torch.trace(cov2) - 2 * cross
    return float(sq.clamp(min=0).sqrt())


def mmd_rbf(samples: torch.Tensor, reference: torch.Tensor, bandwidth: float) -> float:
    """Unbiased estimate of MMD² with the kernel exp(−‖a − b‖² / 2 bandwidth²).

    Raises:
        ValueError: if ``bandwidth`` ≤ 0 or either set has fewer than 2 points.
    """
    if not bandwidth > 0:
        raise ValueError(f"bandwidth: must be > 0, got {bandwidth}")
    if samples.shape[0] < 2 or reference.shape[0] < 2:
        raise ValueError("samples: MMD needs at least 2 points in each set")

    def gram(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.exp(-torch.cdist(a, b).square() / (2 * bandwidth**2))

    n, m = samples.shape[0], reference.shape[0]
    kxx, kyy, kxy = gram(samples, samples), gram(reference, reference), gram(samples, reference)
    xx = (kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1))
    yy = (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
    return float(xx + yy - 2 * kxy.mean())


def mode_fractions(samples: torch.Tensor, modes: torch.Tensor) -> torch.Tensor:
    """``(K,)`` fraction of ``samples`` ``(n, d)`` whose nearest centre among ``modes`` ``(K, d)`` is each mode."""
    nearest = (samples[:, None, :] - modes[None]).square().sum(-1).argmin(1)
    return torch.bincount(nearest, minlength=modes.shape[0]).double() / samples.shape[0]
