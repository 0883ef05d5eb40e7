"""The seed-paired Student-t analysis that every paper's verdict rests on.

A paper's claim is checked by running its method and a baseline on the same ``n`` seeds and looking at the per-seed
differences ``d_i = x_i − y_i`` (paired: both arms of a seed share data, initialisation or sampling noise). With
``d̄`` their mean, ``s`` their sample standard deviation (ddof 1) and ``t_{q, n−1}`` the ``q`` quantile of Student's
t with ``n − 1`` degrees of freedom:

- standard error ``se = s / √n``;
- two-sided interval at level ``L``: ``d̄ ± t_{(1+L)/2, n−1} · se``;
- one-sided lower bound at confidence ``c``: ``d̄ − t_{c, n−1} · se``;
- p-values of ``H0: E[d] = δ`` (``δ`` = ``null``, 0 by default) with ``T = (d̄ − δ) / se``: two-sided
  ``2 · P(t_{n−1} > |T|)`` (what ``scipy.stats.ttest_rel`` reports for ``δ = 0``) and one-sided ``P(t_{n−1} > T)``
  for the alternative ``E[d] > δ``.

Dimension letters: ``S`` seeds (the paired axis, always axis 0), ``...`` any trailing shape analysed element-wise.

A verdict of the form "the method beats the baseline by more than a margin" (or "is no worse than it within a
margin") is :func:`margin_test` on top of :func:`paired_t`:

- ``"improvement"`` passes when ``d̄ > margin`` **and** the one-sided lower bound ``d̄ − t_{c, n−1} · se > 0``
  (the effect is large enough and its sign is established at confidence ``c``);
- ``"noninferior"`` passes when the one-sided upper bound ``d̄ + t_{c, n−1} · se < margin``.

Degenerate cases are defined, never NaN:

- ``n = 0`` raises :class:`ValueError`;
- ``n = 1``: the spread is unknown, so ``sd = se = half_width = inf``, the interval is ``(−inf, inf)``, the lower
  bound ``−inf`` and both p-values 1;
- zero spread (``n ≥ 2``, all differences equal): ``se = 0``, the interval collapses to ``(d̄, d̄)``, the lower
  bound is ``d̄``; the two-sided p-value is 0 when ``d̄ ≠ δ`` and 1 when ``d̄ = δ``, the one-sided one 0 when
  ``d̄ > δ`` and 1 otherwise (the limits of ``T → ±inf``, and "no evidence" for ``0 / 0``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["MarginTest", "PairedT", "margin_test", "paired_t"]


@dataclass(frozen=True)
class PairedT:
    """The paired Student-t analysis of per-seed differences (see the module docstring for the formulas).

    Every statistic is a Python ``float`` for 1-D differences ``(S,)`` and an array of the trailing shape ``(...)``
    for differences ``(S, ...)`` (``wins`` then an integer array).

    Attributes:
        n: number of seeds (pairs).
        mean: ``d̄``, the mean difference (the effect).
        sd: sample standard deviation of the differences (ddof 1); ``inf`` when ``n = 1``.
        se: standard error ``sd / √n``; ``inf`` when ``n = 1``, 0 for zero spread.
        half_width: ``t_{(1+level)/2, n−1} · se``, the half-width of the two-sided interval.
        ci_low: ``mean − half_width``.
        ci_high: ``mean + half_width``.
        lower: one-sided lower confidence bound ``mean − t_{confidence, n−1} · se``.
        p_two_sided: two-sided p-value of ``E[d] = null``.
        p_greater: one-sided p-value of ``E[d] = null`` against ``E[d] > null``.
        wins: seeds with ``d > 0``.
        level: the two-sided interval's level.
        confidence: the one-sided bound's confidence.
        null: the hypothesised mean ``δ`` of the p-values.
    """

    n: int
    mean: float | np.ndarray
    sd: float | np.ndarray
    se: float | np.ndarray
    half_width: float | np.ndarray
    ci_low: float | np.ndarray
    ci_high: float | np.ndarray
    lower: float | np.ndarray
    p_two_sided: float | np.ndarray
    p_greater: float | np.ndarray
    wins: int | np.ndarray
    level: float
    confidence: float
    null: float


def paired_t(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray | None = None,
    *,
    level: float = 0.95,
    confidence: float = 0.95,
    null: float = 0.0,
    moments: Literal["numpy", "exact"] = "numpy",
) -> PairedT:
    """Paired Student-t analysis over seeds of ``d = x − y`` (or of ``d = x`` when ``y`` is None).

    Args:
        x: per-seed values of the method, shape ``(S,)`` or ``(S, ...)``; the differences themselves when ``y`` is
            None.
        y: per-seed values of the baseline, the same shape as ``x``, paired seed by seed.
        level: level of the two-sided interval, in (0, 1).
        confidence: confidence of the one-sided lower bound, in (0, 1).
        null: hypothesised mean difference ``δ`` of the p-values.
        moments: how ``mean`` and ``sd`` are computed. ``"numpy"``: ``d.mean(axis=0)`` and
            ``d.std(axis=0, ddof=1)``, any shape. ``"exact"``: ``statistics.fmean`` and ``statistics.stdev``
            (correctly rounded), 1-D only. The two agree to a few ulp; the choice exists so that records written
            with either keep their numbers bit for bit.

    Returns:
        :class:`PairedT`.

    Raises:
        ValueError: on no seeds, ``x`` and ``y`` of different shapes, ``level`` or ``confidence`` outside (0, 1),
            an unknown ``moments``, or ``moments="exact"`` with more than one dimension.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if moments not in ("numpy", "exact"):
        raise ValueError(f"moments must be 'numpy' or 'exact', got {moments!r}")
    d = np.asarray(x, dtype=float)
    if y is not None:
        other = np.asarray(y, dtype=float)
        if other.shape != d.shape:
            raise ValueError(f"x and y must have the same shape (paired seeds), got {d.shape} and {other.shape}")
        d = d - other  # (S, ...)
    if d.ndim == 0 or d.shape[0] == 0:
        raise ValueError(f"need at least one seed along axis 0, got shape {d.shape}")
    if moments == "exact" and d.ndim != 1:
        raise ValueError(f"moments='exact' needs 1-D differences, got shape {d.shape}")
    n = d.shape[0]
    wins = (d > 0).sum(axis=0)
    if moments == "exact":
        values = d.tolist()
        mean = np.asarray(statistics.fmean(values))
        sd = np.asarray(statistics.stdev(values) if n > 1 else math.inf)
    else:
        mean = np.asarray(d.mean(axis=0))
        sd = np.asarray(d.std(axis=0, ddof=1) if n > 1 else np.full(d.shape[1:], math.inf))
    if n < 2:  # spread unknown: the widest interval and no evidence
        inf = np.full(mean.shape, math.inf)
        one = np.ones(mean.shape)
        return _result(n, mean, inf, inf, inf, mean - inf, mean + inf, mean - inf, one, one, wins,
                       level, confidence, null)  # fmt: skip
    # Student's t from scipy.special, imported only here (scipy.stats takes far longer to import): scipy.stats.t
    # evaluates ppf(q, ν) as stdtrit(ν, q) and sf(x, ν) as stdtr(ν, −x), so the numbers are bit for bit its own
    from scipy.special import stdtr, stdtrit

    # se = s / √n
    se = sd / math.sqrt(n)
    # two-sided interval d̄ ± t_{(1+L)/2, n−1} · se
    half = stdtrit(n - 1, 0.5 + level / 2) * se
    # one-sided lower bound d̄ − t_{c, n−1} · se
    lower = mean - stdtrit(n - 1, confidence) * se
    spread = se > 0
    safe_se = np.where(spread, se, 1.0)  # no 0 / 0 where the spread is zero; those entries are replaced below
    # T = (d̄ − δ) / se; two-sided p = 2 P(t > |T|), one-sided p = P(t > T)
    p_two = np.where(spread, 2 * stdtr(n - 1, -(np.abs(mean - null) / safe_se)), np.where(mean != null, 0.0, 1.0))
    p_greater = np.where(spread, stdtr(n - 1, -((mean - null) / safe_se)), np.where(mean > null, 0.0, 1.0))
    return _result(n, mean, sd, se, half, mean - half, mean + half, lower, p_two, p_greater, wins,
                   level, confidence, null)  # fmt: skip


def _result(n, mean, sd, se, half, lo, hi, lower, p_two, p_greater, wins, level, confidence, null) -> PairedT:
    """Pack the statistics, as Python scalars for 1-D differences and arrays otherwise."""

    def out(v):
        v = np.asarray(v)
        return v.item() if v.ndim == 0 else v

    return PairedT(n, out(mean), out(sd), out(se), out(half), out(lo), out(hi), out(lower), out(p_two),
                   out(p_greater), out(wins), float(level), float(confidence), float(null))  # fmt: skip


@dataclass(frozen=True)
class MarginTest:
    """A margin rule over per-seed differences (module docstring); the fields are the record's keys (:meth:`record`).

    Attributes:
        per_seed: the per-seed differences ``d_i``.
        mean: ``d̄``.
        lower_bound: one-sided lower bound at the rule's confidence; None with fewer than two seeds or a non-finite
            mean.
        upper_bound: one-sided upper bound ``2 d̄ − lower`` (the bound is symmetric); None as ``lower_bound``.
        ci95_halfwidth: half-width of the two-sided 95% interval; None as ``lower_bound``.
        passes: the rule's outcome; False whenever the bounds are None (one seed decides nothing).
    """

    per_seed: list[float]
    mean: float
    lower_bound: float | None
    upper_bound: float | None
    ci95_halfwidth: float | None
    passes: bool

    def record(self) -> dict[str, object]:
        """The test as a record entry (plain JSON types)."""
        return {
            "per_seed": list(self.per_seed),
            "mean": self.mean,
            "lower_bound": self.lower_bound,
            "upper_bound": self.upper_bound,
            "ci95_halfwidth": self.ci95_halfwidth,
            "passes": self.passes,
        }


def margin_test(
    diffs: Sequence[float],
    *,
    margin: float,
    confidence: float,
    kind: Literal["improvement", "noninferior"] = "improvement",
) -> MarginTest:
    """The margin rule of the module docstring on per-seed differences ``diffs`` (method − baseline, per seed).

    Args:
        diffs: per-seed differences, oriented so that larger is better for ``"improvement"`` and smaller is better
            for ``"noninferior"``.
        margin: the margin, fixed before the run (a config threshold with its source).
        confidence: confidence of the one-sided bounds, in (0, 1).
        kind: ``"improvement"`` (``d̄ > margin`` and lower bound > 0) or ``"noninferior"`` (upper bound < margin).

    Raises:
        ValueError: on a ``confidence`` outside (0, 1) or an unknown ``kind`` (no seeds: a failed test, mean NaN).
    """
    if kind not in ("improvement", "noninferior"):
        raise ValueError(f"kind must be 'improvement' or 'noninferior', got {kind!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    values = [float(d) for d in diffs]
    if len(values) < 2 or not all(map(math.isfinite, values)):  # one seed or a failed seed: no evidence
        return MarginTest(values, statistics.fmean(values) if values else math.nan, None, None, None, False)
    t = paired_t(values, level=0.95, confidence=confidence, moments="exact")
    lower, upper = float(t.lower), float(2 * t.mean - t.lower)
    passes = (t.mean > margin and lower > 0) if kind == "improvement" else upper < margin
    return MarginTest(values, float(t.mean), lower, upper, float(t.half_width), bool(passes))
