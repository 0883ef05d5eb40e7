"""The verdict of the HICRA reproduction: HICRA beats GRPO on held-out accuracy, and the placebo does not.

The rule, fixed before any run: HICRA's held-out greedy accuracy, final and area under the curve, exceeds GRPO's by a
one-sided paired Student t-test across seeds (the lower confidence bound of the mean paired difference above
``min_gain``), **and** the placebo (the same α on random n-grams of equal count and coverage) does not exceed GRPO by
the same test. The gate: RL moved the policy at all — GRPO's final held-out accuracy exceeds the SFT start's by the
same test with margin ``min_rl_gain``; if not, no arm comparison means anything and the verdict is inconclusive.
Reported beside it: the power of the test for a gain of ``effect_size`` (:func:`power`), from the binomial
evaluation noise of the held-out set and from the measured spread. The two-phase dynamic (:func:`two_phase`) is
reported as observed or not, never part of the rule.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.hicra.config import HicraConfig


@dataclass(frozen=True)
class Measurements:
    """What the verdict reads: plain per-seed numbers of every arm (seeds paired across arms).

    Attributes:
        start_acc: arm -> held-out greedy accuracy at RL step 0 (the SFT start), one per seed.
        final_acc: arm -> held-out greedy accuracy at the last RL step, one per seed.
        auc: arm -> normalised area under the held-out accuracy curve, one per seed.
        exec_entropy: arm -> per seed, the execution-token entropy of every RL step (for :func:`two_phase`).
        semantic_entropy: arm -> per seed, the Strategic-Gram semantic entropy of every RL step.
        n_held_out: held-out problems each accuracy is measured on.
    """

    start_acc: dict[str, list[float]]
    final_acc: dict[str, list[float]]
    auc: dict[str, list[float]]
    exec_entropy: dict[str, list[list[float]]]
    semantic_entropy: dict[str, list[list[float]]]
    n_held_out: int


@dataclass(frozen=True)
class PairedTest:
    """A one-sided paired t-test of ``x − y`` across seeds.

    Attributes:
        diffs: per-seed differences.
        mean: their mean (the effect).
        lower: the one-sided lower confidence bound of the mean (−inf with one seed).
        p_value: one-sided p-value of ``mean > min_gain`` (1 with one seed or zero spread and no gain).
        exceeds: ``lower > min_gain``.
    """

    diffs: list[float]
    mean: float
    lower: float
    p_value: float
    exceeds: bool

    def summary(self) -> dict[str, Any]:
        """The test as the record holds it (``lower_bound`` None with one seed: no interval)."""
        return {
            "diffs": self.diffs,
            "mean": self.mean,
            "lower_bound": _bound(self),
            "p_value": self.p_value,
            "exceeds": self.exceeds,
        }


def paired_test(x: Sequence[float], y: Sequence[float], *, confidence: float, min_gain: float) -> PairedTest:
    """``x`` exceeds ``y`` across paired seeds: the one-sided ``confidence`` lower bound of ``mean(x − y)``
    (Student t with ``n − 1`` degrees of freedom, :func:`iclr26.common.stats.paired_t`) is above ``min_gain``."""
    diffs = [a - b for a, b in zip(x, y, strict=True)]
    t = paired_t(diffs, confidence=confidence, null=min_gain, moments="exact")
    return PairedTest(diffs, t.mean, t.lower, t.p_greater, t.lower > min_gain)


def power(effect: float, sd: float, n: int, *, confidence: float, min_gain: float = 0.0) -> float:
    """Power of the one-sided paired t-test (``n`` seeds, ``confidence``) to find a mean gain ``effect`` above
    ``min_gain`` when the per-seed differences have standard deviation ``sd``.

    ``P(T > t_{confidence, n−1})`` with ``T`` noncentral Student t of ``n − 1`` degrees of freedom and noncentrality
    ``(effect − min_gain)·√n / sd``; nan with fewer than two seeds or ``sd = 0``.
    """
    if n < 2 or not sd > 0:
        return math.nan
    ncp = (effect - min_gain) * math.sqrt(n) / sd  # noncentrality of the t statistic under the effect
    return float(stats.nct.sf(stats.t.ppf(confidence, n - 1), n - 1, ncp))


def binomial_sd(accuracy: float, n_items: int) -> float:
    """The sd of a paired accuracy difference on ``n_items`` items whose outcomes in the two arms are independent
    Bernoulli(``accuracy``): ``√(2·p(1 − p)/N)``, the evaluation noise alone."""
    return math.sqrt(2 * accuracy * (1 - accuracy) / max(1, n_items))


def two_phase(exec_entropy: Sequence[Sequence[float]], semantic: Sequence[Sequence[float]], drop: float) -> dict:
    """The two-phase dynamic as observed or not (rules fixed before any run), on the mean curves over seeds.

    Phase 1 (procedural consolidation): the execution-token entropy averaged over the last ``w`` steps of the first
    quarter of RL is at most ``(1 − drop)`` times its average over the first ``w`` steps (``w = min(5, quarter / 2)``).
    Phase 2 (strategic exploration): the semantic entropy averaged over the last quarter exceeds its average over the
    first quarter.

    Args:
        exec_entropy: per seed, the execution-token entropy of every RL step.
        semantic: per seed, the semantic entropy of every RL step.
        drop: the share by which phase 1's entropy must fall.
    """
    steps = len(exec_entropy[0])
    q = max(1, steps // 4)
    w = max(1, min(5, q // 2))  # the two windows of phase 1 never overlap
    exec_mean = np.nanmean(np.asarray(exec_entropy, dtype=float), axis=0)
    sem_mean = np.nanmean(np.asarray(semantic, dtype=float), axis=0)
    start, end_q1 = float(np.mean(exec_mean[:w])), float(np.mean(exec_mean[q - w : q]))
    sem_first, sem_last = float(np.mean(sem_mean[:q])), float(np.mean(sem_mean[-q:]))
    return {
        "exec_entropy_start": start,
        "exec_entropy_end_of_first_quarter": end_q1,
        "phase1_observed": bool(end_q1 <= (1 - drop) * start),
        "semantic_entropy_first_quarter": sem_first,
        "semantic_entropy_last_quarter": sem_last,
        "phase2_observed": bool(sem_last > sem_first),
    }


def paired_tests(m: Measurements, config: HicraConfig) -> dict[str, dict[str, PairedTest]]:
    """Every amplifying arm against GRPO, on final accuracy and on the AUC."""

    def test(arm: str, metric: dict[str, list[float]]) -> PairedTest:
        return paired_test(metric[arm], metric["grpo"], confidence=config.confidence, min_gain=config.min_gain)

    return {arm: {"final": test(arm, m.final_acc), "auc": test(arm, m.auc)} for arm in m.final_acc if arm != "grpo"}


def power_report(m: Measurements, config: HicraConfig) -> dict[str, Any]:
    """The power of the final-accuracy test for a gain of ``effect_size``: from the held-out set's binomial noise at
    GRPO's accuracy (what the design allows), and from the measured sd of HICRA − GRPO across seeds."""
    n = len(m.final_acc["grpo"])
    design_sd = binomial_sd(statistics.fmean(m.final_acc["grpo"]), m.n_held_out)
    diffs = [a - b for a, b in zip(m.final_acc["hicra"], m.final_acc["grpo"], strict=True)]
    measured_sd = statistics.stdev(diffs) if n > 1 else math.nan

    def at(sd: float) -> float:
        return power(config.effect_size, sd, n, confidence=config.confidence, min_gain=config.min_gain)

    return {
        "effect": config.effect_size,
        "seeds": n,
        "held_out_items": m.n_held_out,
        "design_sd": design_sd,
        "design_power": at(design_sd),
        "measured_sd": measured_sd,
        "measured_power": at(measured_sd) if math.isfinite(measured_sd) else math.nan,
    }


def verdict(m: Measurements, config: HicraConfig) -> Verdict:
    """Held iff HICRA exceeds GRPO (final and AUC) and the placebo does not; inconclusive if RL did not move GRPO
    (module docstring)."""
    tests = paired_tests(m, config)
    h, p = tests["hicra"], tests["placebo"]
    hicra_exceeds = h["final"].exceeds and h["auc"].exceeds
    placebo_exceeds = p["final"].exceeds and p["auc"].exceeds
    moved = paired_test(
        m.final_acc["grpo"], m.start_acc["grpo"], confidence=config.confidence, min_gain=config.min_rl_gain
    )
    gate = Gate(
        "rl_moves_grpo",
        moved.exceeds,
        {"grpo_final_minus_start": moved.mean, "lower_bound": _bound(moved), "min_rl_gain": config.min_rl_gain},
    )
    phases = two_phase(m.exec_entropy["hicra"], m.semantic_entropy["hicra"], config.entropy_drop)
    evidence = {
        "test": f"one-sided paired Student t across {config.n_seeds} seeds, confidence {config.confidence}",
        "hicra_minus_grpo_final": {"mean": h["final"].mean, "lower_bound": _bound(h["final"])},
        "hicra_minus_grpo_auc": {"mean": h["auc"].mean, "lower_bound": _bound(h["auc"])},
        "placebo_minus_grpo_final": {"mean": p["final"].mean, "lower_bound": _bound(p["final"])},
        "placebo_minus_grpo_auc": {"mean": p["auc"].mean, "lower_bound": _bound(p["auc"])},
        "hicra_exceeds_grpo": hicra_exceeds,
        "placebo_exceeds_grpo": placebo_exceeds,
        "power": power_report(m, config),
        "thresholds": {
            name: threshold(config, name)
            for name in ("confidence", "min_gain", "min_rl_gain", "effect_size", "entropy_drop")
        },
    }
    measurement = (
        f"held-out acc final HICRA {statistics.fmean(m.final_acc['hicra']):.3f} vs GRPO "
        f"{statistics.fmean(m.final_acc['grpo']):.3f}: "
        f"gain {_fmt(h['final'])}, AUC gain {_fmt(h['auc'])}; placebo gain {_fmt(p['final'])}, AUC {_fmt(p['auc'])}; "
        f"two-phase (HICRA): phase 1 {'observed' if phases['phase1_observed'] else 'not observed'}, phase 2 "
        f"{'observed' if phases['phase2_observed'] else 'not observed'}; GRPO's gain over the SFT start "
        f"{_fmt(moved)}; power for +{config.effect_size:.2f}: {evidence['power']['design_power']:.2f} (binomial "
        f"noise of {m.n_held_out} items), {evidence['power']['measured_power']:.2f} (measured spread)"
    )
    return Verdict.decide(
        [gate], held=hicra_exceeds and not placebo_exceeds, evidence=evidence, measurement=measurement
    )


def _bound(t: PairedTest) -> float | None:
    return t.lower if math.isfinite(t.lower) else None  # None: one seed, no interval


def _fmt(t: PairedTest) -> str:
    bound = "n/a (one seed)" if not math.isfinite(t.lower) else f"{t.lower:+.3f}"
    return f"{t.mean:+.3f} (lower bound {bound})"


__all__ = [
    "Measurements",
    "PairedTest",
    "binomial_sd",
    "paired_test",
    "paired_tests",
    "power",
    "power_report",
    "two_phase",
    "verdict",
]
