"""Sample-based metrics on a manifold: checkerboard coverage, geodesic MMD, k-NN two-sample test.

- Coverage (the paper's headline metric; official ``scripts/mmd_metrics.py``,
  ``compute_checkerboard_coverage``, read through the code search): the fraction of generated samples
  whose normal coordinates at the base point fall in a black cell of the board, plus how many of the 8
  black cells receive any sample. (It measures precision: a model putting all mass in one cell scores
  100 %; the mode count, the cell-mass total variation and the MMD guard against that.) The official script measures
  extrinsic models on their raw, off-manifold samples, through the base-point log map's formula applied to them
  (:func:`official_unwrap`); ``raw=True`` does the same.
- MMD² with the geodesic Laplacian kernel k(x, y) = exp(-d(x, y)/ℓ), averaged over bandwidths ℓ.
  The geodesic distance of Sⁿ and of Hⁿ is conditionally negative definite, so this kernel is positive
  definite on both for every ℓ; the geodesic Gaussian kernel exp(-d²/2ℓ²) is not (Feragen et al., CVPR
  2015), hence the choice. Unbiased estimator.
- C2ST: accuracy of a k-nearest-neighbour classifier (geodesic distance) trained on half of the pooled
  real and generated samples and tested on the other half; 0.5 means indistinguishable. The official
  code trains an MLP classifier on the chart coordinates; a k-NN classifier needs no training loop and
  no extra package (deviation, stated in the README).

Shapes: ``N`` generated samples, ``M`` reference samples, ``D`` ambient dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from iclr26.rgvfm.benchmarks import black_cells
from iclr26.rgvfm.manifolds import Lorentz, Manifold, Sphere, inv_sinc, inv_sinhc


@dataclass(frozen=True)
class Coverage:
    """Checkerboard coverage of a sample.

    Attributes:
        coverage: fraction of samples inside a black cell, in [0, 1].
        modes_covered: number of black cells holding at least one sample (of 8).
        per_cell: sample count per black cell (8 numbers, row-major).
    """

    coverage: float
    modes_covered: int
    per_cell: list[int]


_UNWRAP_EPS = 1e-7
"""The official clamp margin of the unwrap's cosine (sphere ``eps`` 1e-7; on the hyperboloid 1e-8, below float32's
resolution at 1, so 1e-7 is used on both)."""


def official_unwrap(manifold: Manifold, x: Tensor) -> Tensor:
    """The official ``unwrap`` (log map at the base point o, chart coordinates) applied to ambient points x that need
    not lie on M, as the official coverage does with raw extrinsic samples, shape (N, 2).

    Sphere (o the north pole): c = θ/sin θ · (x_1, x_2), θ = acos(clamp(x_3, -1 + ε, 1 - ε)), the log map's formula
    with the raw x_3 as the cosine (for |x| = r ≠ 1 the radius is distorted). Hyperboloid (o = (1, 0, 0)):
    c = r/sinh r · (x_1, x_2), r = acosh(max(x_0, 1 + ε)). On M both equal :meth:`Manifold.to_chart`.

    Raises:
        ValueError: for a manifold other than S² and H², or x not of shape (N, 3).
    """
    if manifold.dim != 2 or not isinstance(manifold, Sphere | Lorentz):
        raise ValueError(f"official_unwrap is defined on S² and H², got {manifold.name}")
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"x must be an (N, 3) tensor of ambient points, got shape {tuple(x.shape)}")
    if isinstance(manifold, Sphere):
        theta = torch.acos(x[:, 2].clamp(-1 + _UNWRAP_EPS, 1 - _UNWRAP_EPS))
        return x[:, :2] * inv_sinc(theta).unsqueeze(-1)
    r = torch.acosh(x[:, 0].clamp_min(1 + _UNWRAP_EPS))
    return x[:, 1:] * inv_sinhc(r).unsqueeze(-1)


def checkerboard_coverage(manifold: Manifold, x: Tensor, *, raw: bool = False) -> Coverage:
    """Coverage of samples x on a 2-manifold, measured in normal coordinates at its base point.

    Args:
        manifold: the 2-manifold the board was wrapped onto.
        x: samples on the manifold, (N, D); with ``raw`` any ambient points (extrinsic samples as generated).
        raw: chart the points with :func:`official_unwrap` (the official coverage of extrinsic models) instead of
            requiring them on M.

    Returns:
        :class:`Coverage`.

    Raises:
        ValueError: if ``manifold`` is not 2-dimensional (the board lives in a 2-D chart) or ``x`` is not
            an (N, D) tensor of its ambient dimension.
    """
    if manifold.dim != 2:
        raise ValueError(f"checkerboard coverage needs a 2-dimensional manifold, got {manifold.name}")
    if x.ndim != 2:
        raise ValueError(f"x must be an (N, {manifold.ambient_dim}) tensor of samples, got shape {tuple(x.shape)}")
    # coverage: the share of samples in the checkerboard's black cells, read in normal coordinates at o
    cells = black_cells(official_unwrap(manifold, x) if raw else manifold.to_chart(manifold.check(x, "x")))
    counts = torch.bincount(cells[cells >= 0], minlength=8)
    return Coverage(
        coverage=float((cells >= 0).float().mean()),
        modes_covered=int((counts > 0).sum()),
        per_cell=[int(c) for c in counts],
    )


def cell_mass_tv(generated: Coverage, reference: Coverage) -> float:
    """Total variation ½ Σ_c |p_c - q_c| between the two samples' shares of the 8 black cells.

    Shares are taken among the samples inside black cells, so this complements coverage (which only
    asks whether samples land in black cells) with whether each cell gets its share of the mass.
    A sample with no point in any black cell is at distance 1.

    Args:
        generated: coverage of the generated sample.
        reference: coverage of held-out data.

    Returns:
        A number in [0, 1].
    """
    p, q = torch.tensor(generated.per_cell, dtype=torch.float64), torch.tensor(reference.per_cell, dtype=torch.float64)
    if p.sum() == 0 or q.sum() == 0:
        return 1.0
    return float(0.5 * (p / p.sum() - q / q.sum()).abs().sum())


def pairwise_dist(manifold: Manifold, x: Tensor, y: Tensor) -> Tensor:
    """Geodesic distances d(x_i, y_j), shape (N, M)."""
    return manifold.dist(x[:, None, :], y[None, :, :])


def _kernel_sum(manifold: Manifold, a: Tensor, b: Tensor, bandwidths: Sequence[float], chunk: int) -> float:
    """Σ_ij mean_ℓ exp(-d(a_i, b_j)/ℓ), accumulated in float64 over row chunks (memory O(chunk · M))."""
    total = 0.0
    for i in range(0, a.shape[0], chunk):
        d = pairwise_dist(manifold, a[i : i + chunk], b).double()
        total += float(sum(torch.exp(-d / ell).sum() for ell in bandwidths)) / len(bandwidths)
    return total


def geodesic_mmd2(
    manifold: Manifold, x: Tensor, y: Tensor, *, bandwidths: Sequence[float] = (0.1, 0.3, 1.0), chunk: int = 512
) -> float:
    """Unbiased MMD² between samples x and y with the kernel mean_ℓ exp(-d/ℓ).

    Args:
        manifold: where both samples live.
        x: (N, D) samples, N ≥ 2.
        y: (M, D) samples, M ≥ 2.
        bandwidths: the ℓ values (> 0).
        chunk: rows of the kernel matrix held in memory at once.

    Returns:
        The estimate (can be slightly negative when the two distributions agree).

    Raises:
        ValueError: for fewer than two samples or a non-positive bandwidth.
    """
    if x.shape[0] < 2 or y.shape[0] < 2:
        raise ValueError(f"need at least 2 samples on each side, got {x.shape[0]} and {y.shape[0]}")
    if not bandwidths or min(bandwidths) <= 0:
        raise ValueError(f"bandwidths must be positive, got {tuple(bandwidths)}")
    n, m = x.shape[0], y.shape[0]
    # unbiased: the within-sample sums drop their diagonals, where k(x, x) = 1
    within_x = (_kernel_sum(manifold, x, x, bandwidths, chunk) - n) / (n * (n - 1))
    within_y = (_kernel_sum(manifold, y, y, bandwidths, chunk) - m) / (m * (m - 1))
    across = _kernel_sum(manifold, x, y, bandwidths, chunk) / (n * m)
    return within_x + within_y - 2 * across


def knn_c2st(
    manifold: Manifold,
    real: Tensor,
    fake: Tensor,
    *,
    k: int = 11,
    generator: torch.Generator | None = None,
    chunk: int = 512,
) -> float:
    """Classifier two-sample test accuracy of a geodesic k-NN classifier (0.5 = indistinguishable).

    The pooled, labelled samples are split at random into equal train and test halves; each test point
    gets the majority label of its k nearest training points.

    Args:
        manifold: where both samples live.
        real: (M, D) reference samples.
        fake: (N, D) generated samples.
        k: odd number of neighbours.
        generator: torch generator for the split, on the samples' device.
        chunk: test points whose distances are held in memory at once.

    Returns:
        Test accuracy in [0, 1].

    Raises:
        ValueError: if k is not a positive odd integer or the train half has fewer than k points.
    """
    if k < 1 or k % 2 == 0:
        raise ValueError(f"k must be a positive odd integer, got {k}")
    points = torch.cat([real, fake])
    labels = torch.cat(
        [torch.zeros(real.shape[0], device=points.device), torch.ones(fake.shape[0], device=points.device)]
    )
    perm = torch.randperm(points.shape[0], generator=generator, device=points.device)
    half = points.shape[0] // 2
    train, test = perm[:half], perm[half:]
    if train.numel() < k:
        raise ValueError(f"k = {k} exceeds the {train.numel()} training points")
    neighbours = torch.cat(
        [
            pairwise_dist(manifold, points[test[i : i + chunk]], points[train]).topk(k, dim=1, largest=False).indices
            for i in range(0, test.numel(), chunk)
        ]
    )
    votes = labels[train][neighbours].mean(1)
    predicted = (votes > 0.5).float()
    return float((predicted == labels[test]).float().mean())
