"""Task rejection by uncertainty: success-vs-rejection curves, their area, and rank correlations.

The agent is offered ``T`` tasks; it rejects the fraction ``ρ`` with the largest uncertainty and attempts the rest.
The curve ``c(ρ)`` is the success rate over the attempted tasks; a good uncertainty rejects failures first, so
``c`` rises with ``ρ``. Its area (mean over an even grid of ``ρ``) summarises it; a random ranking gives the base
success rate at every ``ρ`` in expectation, the oracle (failures first) the best achievable curve.

Glossary: ``T`` tasks, ``G`` rejection fractions on the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr


@dataclass(frozen=True)
class RejectionCurve:
    """Success rate of the accepted tasks at each rejection fraction.

    Attributes:
        fractions: ``(G,)`` rejection fractions ``ρ``.
        success: ``(G,)`` success rate among the ``T - floor(ρ T)`` tasks with the lowest uncertainty.
        auc: mean of ``success`` over the grid (area under the curve per unit ``ρ``).
    """

    fractions: np.ndarray
    success: np.ndarray
    auc: float


def rejection_grid(max_fraction: float, points: int) -> np.ndarray:
    """``points`` evenly spaced rejection fractions from 0 to ``max_fraction`` (inclusive)."""
    if not 0.0 <= max_fraction < 1.0:
        raise ValueError(f"max_fraction must be in [0, 1), got {max_fraction}")
    if points < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    return np.linspace(0.0, max_fraction, points)


def rejection_curve(uncertainty: np.ndarray, success: np.ndarray, fractions: np.ndarray) -> RejectionCurve:
    """Reject the ``floor(ρ T)`` most uncertain tasks and measure success on the rest, for every ``ρ``.

    Ties in ``uncertainty`` are broken by task order (a stable sort), so the curve is deterministic.

    Args:
        uncertainty: ``(T,)`` finite uncertainty per task.
        success: ``(T,)`` bool or {0, 1} outcome per task.
        fractions: ``(G,)`` rejection fractions in ``[0, 1)``.

    Returns:
        :class:`RejectionCurve`.

    Raises:
        ValueError: for mismatched lengths, an empty task set, non-finite uncertainties, outcomes other than 0/1
            or fractions outside ``[0, 1)``.
    """
    u = np.asarray(uncertainty, dtype=np.float64)
    s = np.asarray(success, dtype=np.float64)
    if u.ndim != 1 or u.shape != s.shape or u.size == 0:
        raise ValueError(f"uncertainty and success must be non-empty (T,) arrays, got {u.shape} and {s.shape}")
    if not np.isfinite(u).all():
        raise ValueError("uncertainty contains non-finite values")
    if not ((s == 0) | (s == 1)).all():
        raise ValueError("success must hold only 0/1 (or False/True) outcomes")
    fr = np.asarray(fractions, dtype=np.float64)
    if ((fr < 0) | (fr >= 1)).any():
        raise ValueError("fractions must lie in [0, 1)")
    # reject the most uncertain ρ share of the tasks; a good uncertainty rejects failures first
    order = np.argsort(u, kind="stable")  # most certain first
    cum = np.cumsum(s[order])
    # floor(ρ T) rejected; the 1e-9 keeps e.g. 0.57 · 100 = 56.99999999999999 from losing a task to rounding
    kept = u.size - np.floor(fr * u.size + 1e-9).astype(int)  # ≥ 1 because ρ < 1
    # c(ρ): success rate among the kept tasks
    curve = cum[kept - 1] / kept
    return RejectionCurve(fractions=fr, success=curve, auc=float(curve.mean()))


def oracle_curve(success: np.ndarray, fractions: np.ndarray) -> RejectionCurve:
    """The best curve: failures rejected first (uncertainty = 1 - success)."""
    s = np.asarray(success, dtype=np.float64)
    return rejection_curve(1.0 - s, s, fractions)


def rank_correlation(uncertainty: np.ndarray, error: np.ndarray) -> float:
    """Spearman rank correlation between an uncertainty and the true error (``nan`` if either is constant).

    Raises:
        ValueError: for arrays of different shapes or non-finite values.
    """
    u, e = np.asarray(uncertainty, dtype=np.float64), np.asarray(error, dtype=np.float64)
    if u.shape != e.shape or u.ndim != 1:
        raise ValueError(f"uncertainty and error must be (T,) arrays of equal length, got {u.shape} and {e.shape}")
    if not (np.isfinite(u).all() and np.isfinite(e).all()):
        raise ValueError("uncertainty and error must be finite")
    if np.ptp(u) == 0 or np.ptp(e) == 0:
        return float("nan")
    return float(spearmanr(u, e).statistic)


def paired_bootstrap_auc_difference(
    uncertainty_a: np.ndarray,
    uncertainty_b: np.ndarray,
    success: np.ndarray,
    fractions: np.ndarray,
    *,
    resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Bootstrap distribution of ``AUC(a) - AUC(b)``, resampling tasks jointly for both methods: ``(resamples,)``."""
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n = len(success)
    out = np.empty(resamples)
    for i in range(resamples):
        idx = rng.integers(n, size=n)
        out[i] = (
            rejection_curve(uncertainty_a[idx], success[idx], fractions).auc
            - rejection_curve(uncertainty_b[idx], success[idx], fractions).auc
        )
    return out
