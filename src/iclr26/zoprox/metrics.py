"""Distances between a sample and reference samples (or a known Gaussian), and mode coverage.

* :func:`knn_kl` — the k-nearest-neighbour KL estimator of Wang, Kulkarni & Verdú (2009), the paper's metric
  (the authors call ``infomeasure.kld(..., approach="metric", k=4)``).
* :func:`wasserstein2` — exact W2 between two empirical measures (optimal transport by POT's network simplex).
* :func:`gaussian_w2` — closed-form W2 between Gaussians (Bures), for a sample's moment-matched Gaussian.
* :func:`mmd_rbf` — unbiased squared MMD with a Gaussian kernel.
* :func:`mode_fractions` — share of points nearest each mode.

Inputs are float64 tensors or arrays; outputs are Python floats. Every function refuses NaN or ±inf inputs (a
diverged sampler's samples), naming the argument: the estimators would otherwise return 0, NaN or a meaningless
number. Shape glossary: ``n`` sample size, ``m`` reference size, ``d`` dimension, ``K`` modes.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.spatial import cKDTree


def _np(x: torch.Tensor | np.ndarray, name: str) -> np.ndarray:
    """``x`` as a finite float64 ``(n, d)`` array, or a ValueError naming ``name``."""
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected an (n, d) array, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name}: expected real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    _check_finite(arr, name)
    return arr


def _check_finite(arr: np.ndarray | torch.Tensor, name: str) -> None:
    """Raise a ValueError naming ``name`` if ``arr`` holds NaN or ±inf (with the count and the first row)."""
    bad = ~torch.isfinite(arr) if isinstance(arr, torch.Tensor) else ~np.isfinite(arr)
    if bool(bad.any()):
        rows = bad.reshape(bad.shape[0], -1).any(1) if bad.ndim > 1 else bad
        first = int(rows.nonzero()[0][0]) if isinstance(rows, np.ndarray) else int(rows.nonzero()[0, 0])
        raise ValueError(
            f"{name}: {int(rows.sum())} of {rows.shape[0]} rows hold NaN or inf (first: row {first}); "
            "metrics need finite points (did the sampler diverge?)"
        )


def _same_dim(x: np.ndarray | torch.Tensor, r: np.ndarray | torch.Tensor) -> None:
    if x.shape[1] != r.shape[1]:
        raise ValueError(f"reference: dimension {r.shape[1]} differs from the samples' {x.shape[1]}")


def knn_kl(samples: torch.Tensor | np.ndarray, reference: torch.Tensor | np.ndarray, k: int = 4) -> float:
    """Estimate KL(p ‖ q) from ``samples`` ~ p ``(n, d)`` and ``reference`` ~ q ``(m, d)``.

    D̂ = (d/n) Σ_i log(ν_k(i) / ρ_k(i)) + log(m / (n − 1)), with ρ_k(i) the distance from x_i to its k-th nearest
    neighbour among the other samples and ν_k(i) to its k-th nearest neighbour in the reference.

    Raises:
        ValueError: for k < 1, mismatched dimensions, fewer than k + 1 samples, or NaN/inf in ``samples`` or
            ``reference`` (named).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k: the neighbour rank must be an integer >= 1, got {k!r}")
    x, r = _np(samples, "samples"), _np(reference, "reference")
    n, d = x.shape
    _same_dim(x, r)
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
        ValueError: naming ``samples`` or ``reference`` if it is not a non-empty ``(n, d)`` array of finite numbers
            (POT's solver returns 0 for NaN costs), or if the dimensions differ.
        ImportError: if POT is missing (``pip install 'iclr26[sampling]'``).
    """
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("wasserstein2 needs POT: pip install 'iclr26[sampling]'") from exc
    x, r = _np(samples, "samples"), _np(reference, "reference")
    _same_dim(x, r)
    for name, arr in (("samples", x), ("reference", r)):
        if arr.shape[0] == 0:
            raise ValueError(f"{name}: W2 needs at least one point")
    cost = ot.dist(x, r, metric="sqeuclidean")
    a = np.full(x.shape[0], 1.0 / x.shape[0])
    b = np.full(r.shape[0], 1.0 / r.shape[0])
    return float(math.sqrt(max(ot.emd2(a, b, cost, numItermax=10_000_000), 0.0)))


def gaussian_w2(mean1: torch.Tensor, cov1: torch.Tensor, mean2: torch.Tensor, cov2: torch.Tensor) -> float:
    """W2(N(m₁, Σ₁), N(m₂, Σ₂))² = ‖m₁ − m₂‖² + tr Σ₁ + tr Σ₂ − 2 tr (Σ₂^{½} Σ₁ Σ₂^{½})^{½}, returned as W2.

    Args:
        mean1: ``(d,)`` m₁.
        cov1: ``(d, d)`` Σ₁, symmetric positive semi-definite.
        mean2: ``(d,)`` m₂.
        cov2: ``(d, d)`` Σ₂.

    Raises:
        ValueError: naming the argument that is not finite or not of shape ``(d,)`` / ``(d, d)``.
    """
    d = mean1.shape[-1] if mean1.ndim == 1 else -1
    for name, value, shape in (
        ("mean1", mean1, (d,)),
        ("cov1", cov1, (d, d)),
        ("mean2", mean2, (d,)),
        ("cov2", cov2, (d, d)),
    ):
        if tuple(value.shape) != shape:
            raise ValueError(f"{name}: expected shape {shape} (mean1 sets d), got {tuple(value.shape)}")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name}: holds NaN or inf")
    evals, evecs = torch.linalg.eigh(cov2)
    root2 = evecs @ torch.diag(evals.clamp(min=0).sqrt()) @ evecs.T
    cross = torch.linalg.eigvalsh(root2 @ cov1 @ root2).clamp(min=0).sqrt().sum()
    sq = (mean1 - mean2).square().sum() + torch.trace(cov1) + torch.trace(cov2) - 2 * cross
    return float(sq.clamp(min=0).sqrt())


def mmd_rbf(samples: torch.Tensor, reference: torch.Tensor, bandwidth: float) -> float:
    """Unbiased estimate of MMD² with the kernel exp(−‖a − b‖² / 2 bandwidth²).

    Raises:
        ValueError: if ``bandwidth`` is not a finite number > 0, either set is not ``(n, d)``, has fewer than 2
            points or holds NaN/inf (named), or the dimensions differ.
    """
    if not (bandwidth > 0 and math.isfinite(bandwidth)):
        raise ValueError(f"bandwidth: must be a finite number > 0, got {bandwidth}")
    for name, arr in (("samples", samples), ("reference", reference)):
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected an (n, d) tensor, got shape {tuple(arr.shape)}")
        if arr.shape[0] < 2:
            raise ValueError(f"{name}: MMD needs at least 2 points in each set, got {arr.shape[0]}")
        _check_finite(arr, name)
    _same_dim(samples, reference)

    def gram(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.exp(-torch.cdist(a, b).square() / (2 * bandwidth**2))

    n, m = samples.shape[0], reference.shape[0]
    kxx, kyy, kxy = gram(samples, samples), gram(reference, reference), gram(samples, reference)
    xx = (kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1))
    yy = (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
    return float(xx + yy - 2 * kxy.mean())


def mode_fractions(samples: torch.Tensor, modes: torch.Tensor) -> torch.Tensor:
    """``(K,)`` fraction of ``samples`` ``(n, d)`` whose nearest centre among ``modes`` ``(K, d)`` is each mode.

    Raises:
        ValueError: naming ``samples`` or ``modes`` if it is not a non-empty ``(n, d)`` tensor of finite numbers (a
            NaN row would count for mode 0), or if the dimensions differ.
    """
    for name, arr in (("samples", samples), ("modes", modes)):
        if arr.ndim != 2 or arr.shape[0] == 0:
            raise ValueError(f"{name}: expected a non-empty (n, d) tensor, got shape {tuple(arr.shape)}")
        _check_finite(arr, name)
    if modes.shape[1] != samples.shape[1]:
        raise ValueError(f"modes: dimension {modes.shape[1]} differs from the samples' {samples.shape[1]}")
    nearest = (samples[:, None, :] - modes[None]).square().sum(-1).argmin(1)
    return torch.bincount(nearest, minlength=modes.shape[0]).double() / samples.shape[0]
