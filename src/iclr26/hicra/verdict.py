"""The verdict of the HICRA reproduction: HICRA beats GRPO on held-out accuracy, and the placebo does not.

The rule, fixed before any run: HICRA's held-out greedy accuracy, final and area under the curve, exceeds GRPO's by a
one-sided paired Student t-test across seeds (the lower confidence bound of the mean paired difference above
``min_gain``), **and** the placebo (the same α on random n-grams of equal count and coverage) does not exceed GRPO by
the same test. The two-phase dynamic (:func:`two_phase`) is reported as observed or not, never part of the rule.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Verdict
from iclr26.hicra.config import HicraConfig


@dataclass(frozen=True)
class Measurements:
    """What the verdict reads: plain per-seed numbers of every arm (seeds paired across arms).

    Attributes:
        final_acc: arm -> held-out greedy accuracy at the last RL step, one per seed.
        auc: arm -> normalised area under the held-out accuracy curve, one per seed.
        exec_entropy: arm -> per seed, the execution-token entropy of every RL step (for :func:`two_phase`).
        semantic_entropy: arm -> per seed, the Strategic-Gram semantic entropy of every RL step.
    """

    final_acc: dict[str, list[float]]
    auc: dict[str, list[float]]
    exec_entropy: dict[str, list[list[float]]]
    semantic_entropy: dict[str, list[list[float]]]


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


def verdict(m: Measurements, config: HicraConfig) -> Verdict:
    """Held iff HICRA exceeds GRPO (final and AUC) and the placebo does not (module docstring)."""
    tests = paired_tests(m, config)
    h, p = tests["hicra"], tests["placebo"]
    hicra_exceeds = h["final"].exceeds and h["auc"].exceeds
    placebo_exceeds = p["final"].exceeds and p["auc"].exceeds
    phases = two_phase(m.exec_entropy["hicra"], m.semantic_entropy["hicra"], config.entropy_drop)
    evidence = {
        "test": f"one-sided paired Student t across {config.n_seeds} seeds, confidence {config.confidence}",
        "hicra_minus_grpo_final": {"mean": h["final"].mean, "lower_bound": _bound(h["final"])},
        "hicra_minus_grpo_auc": {"mean": h["auc"].mean, "lower_bound": _bound(h["auc"])},
        "placebo_minus_grpo_final": {"mean": p["final"].mean, "lower_bound": _bound(p["final"])},
        "placebo_minus_grpo_auc": {"mean": p["auc"].mean, "lower_bound": _bound(p["auc"])},
        "hicra_exceeds_grpo": hicra_exceeds,
        "placebo_exceeds_grpo": placebo_exceeds,
        "thresholds": {name: threshold(config, name) for name in ("confidence", "min_gain", "entropy_drop")},
    }
    measurement = (
        f"held-out acc final HICRA {statistics.fmean(m.final_acc['hicra']):.3f} vs GRPO "
        f"{statistics.fmean(m.final_acc['grpo']):.3f}: "
        f"gain {_fmt(h['final'])}, AUC gain {_fmt(h['auc'])}; placebo gain {_fmt(p['final'])}, AUC {_fmt(p['auc'])}; "
        f"two-phase (HICRA): phase 1 {'observed' if phases['phase1_observed'] else 'not observed'}, phase 2 "
        f"{'observed' if phases['phase2_observed'] else 'not observed'}"
    )
    return Verdict.decide([], held=hicra_exceeds and not placebo_exceeds, evidence=evidence, measurement=measurement)


def _bound(t: PairedTest) -> float | None:
    return t.lower if math.isfinite(t.lower) else None  # None: one seed, no interval


def _fmt(t: PairedTest) -> str:
    bound = "n/a (one seed)" if not math.isfinite(t.lower) else f"{t.lower:+.3f}"
    return f"{t.mean:+.3f} (lower bound {bound})"


__all__ = ["Measurements", "PairedTest", "paired_test", "paired_tests", "two_phase", "verdict"]
