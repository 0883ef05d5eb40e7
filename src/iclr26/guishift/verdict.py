"""The verdict on GUI-Shift's claim from per-seed accuracies of the arms (pure: plain numbers in, a Verdict out).

Every comparison is paired over seeds (:func:`iclr26.common.stats.paired_t`, exact moments, Student t) and *passes*
when the seed mean of the differences exceeds its margin and the one-sided ``confidence`` lower bound exceeds 0
(:func:`compare`; one seed gives no bound and never passes). The claim holds when

- guishift − none passes with ``pretrain_margin`` (the K-step pretraining helps downstream),
- guishift − sft passes with ``sft_margin`` (GRPO beats SFT on the same pairs),
- guishift − nofilter passes with ``filter_margin`` (the filter helps),
- and the control shuffled − none does **not** pass with ``pretrain_margin`` (GRPO on transitions that say nothing
  about the action must not raise accuracy).

Gate (else ``inconclusive``): the pretraining task is learned, i.e. guishift − none in held-out K-step transition
accuracy (the mean over the K of ``ks``) passes with ``transition_margin``. A policy that did not learn to read
transitions cannot show whether reading them transfers. guishift − k1 is reported, not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.guishift.config import GUIShiftConfig

__all__ = ["ARMS", "Comparison", "Measurements", "compare", "comparisons", "task_learned", "verdict"]

#: The trained arms; ``none`` (the base policy) is the baseline of all of them.
ARMS = ("guishift", "nofilter", "sft", "k1", "shuffled")


@dataclass(frozen=True)
class Measurements:
    """What the verdict reads.

    Attributes:
        automation: arm (``none`` and every name of :data:`ARMS`) -> per-seed downstream first-action accuracy on
            the held-out worlds, seeds in the same order for every arm.
        transition: the same arms -> per-seed held-out K-step transition accuracy (mean over the K).
        eval_items: downstream items per seed.
    """

    automation: Mapping[str, Sequence[float]]
    transition: Mapping[str, Sequence[float]]
    eval_items: int


@dataclass(frozen=True)
class Comparison:
    """A paired comparison over seeds of per-seed differences.

    Attributes:
        diffs: the per-seed differences.
        mean: their mean.
        lower: the one-sided lower bound (None with one seed).
        ci95: the half-width of the two-sided 95% interval (None with one seed).
        margin: the margin the mean must exceed.
        passes: ``mean > margin`` and ``lower > 0``.
    """

    diffs: list[float]
    mean: float
    lower: float | None
    ci95: float | None
    margin: float
    passes: bool

    def record(self) -> dict[str, Any]:
        """The comparison as the record holds it."""
        return {"per_seed": self.diffs, "mean": self.mean, "lower_bound": self.lower, "ci95_halfwidth": self.ci95,
                "margin": self.margin, "passes": self.passes}  # fmt: skip

    def describe(self) -> str:
        """``+1.2 ± 3.4`` in points (or a note that one seed gives no interval)."""
        ci = f" ± {self.ci95 * 100:.1f}" if self.ci95 is not None else " (one seed, no interval)"
        return f"{self.mean * 100:+.1f}{ci}"


def compare(diffs: Sequence[float], *, margin: float, confidence: float) -> Comparison:
    """The rule on per-seed ``diffs``: passes when ``mean > margin`` and the one-sided lower bound > 0.

    Args:
        diffs: per-seed differences (method − baseline).
        margin: the margin the mean must exceed.
        confidence: the one-sided confidence of the lower bound.
    """
    t = paired_t(list(diffs), level=0.95, confidence=confidence, moments="exact")
    if t.n < 2:
        return Comparison(list(diffs), t.mean, None, None, margin, False)
    return Comparison(list(diffs), t.mean, t.lower, t.half_width, margin, bool(t.mean > margin and t.lower > 0))


def comparisons(m: Measurements, config: GUIShiftConfig) -> dict[str, Comparison]:
    """The five paired comparisons of downstream accuracy (module docstring)."""
    acc = m.automation

    def diff(a: str, b: str) -> list[float]:
        return [x - y for x, y in zip(acc[a], acc[b], strict=True)]

    c = config.confidence
    return {
        "guishift_vs_none": compare(diff("guishift", "none"), margin=config.pretrain_margin, confidence=c),
        "guishift_vs_sft": compare(diff("guishift", "sft"), margin=config.sft_margin, confidence=c),
        "guishift_vs_nofilter": compare(diff("guishift", "nofilter"), margin=config.filter_margin, confidence=c),
        "shuffled_vs_none": compare(diff("shuffled", "none"), margin=config.pretrain_margin, confidence=c),
        "guishift_vs_k1": compare(diff("guishift", "k1"), margin=0.0, confidence=c),
    }


def task_learned(m: Measurements, config: GUIShiftConfig) -> Comparison:
    """The gate's comparison: guishift − none in held-out transition accuracy, per seed."""
    diffs = [x - y for x, y in zip(m.transition["guishift"], m.transition["none"], strict=True)]
    return compare(diffs, margin=config.transition_margin, confidence=config.confidence)


def verdict(m: Measurements, config: GUIShiftConfig) -> Verdict:
    """Held when GUI-Shift beats no pretraining, SFT and no filtering and the shuffled control does not pass;
    inconclusive when GUI-Shift did not learn its pretraining task."""
    tests = comparisons(m, config)
    learned = task_learned(m, config)
    gates = [Gate("pretraining_task_learned", learned.passes, {"transition_gain": learned.record()})]
    held = (
        tests["guishift_vs_none"].passes
        and tests["guishift_vs_sft"].passes
        and tests["guishift_vs_nofilter"].passes
        and not tests["shuffled_vs_none"].passes  # the control must fail
    )
    n_seeds = len(m.automation["none"])
    evidence = {
        **{name: x.record() for name, x in tests.items() if name != "guishift_vs_k1"},  # k1: in the metrics only
        "n_seeds": n_seeds,
        "eval_items_per_seed": m.eval_items,
        "thresholds": {
            n: threshold(config, n)
            for n in ("pretrain_margin", "sft_margin", "filter_margin", "confidence", "transition_margin")
        },
    }
    mean = {arm: sum(v) / len(v) for arm, v in m.automation.items()}
    measurement = (
        f"{n_seeds} seed(s), downstream accuracy on held-out apps (points): GUI-Shift {mean['guishift'] * 100:.1f} "
        f"vs no pretraining {mean['none'] * 100:.1f} ({tests['guishift_vs_none'].describe()}); vs SFT "
        f"{tests['guishift_vs_sft'].describe()}; vs no filter {tests['guishift_vs_nofilter'].describe()}; "
        f"shuffled-transition control vs none {tests['shuffled_vs_none'].describe()}; vs K=1 only "
        f"{tests['guishift_vs_k1'].describe()}; K-step transition accuracy vs none {learned.describe()}"
    )
    notes = (
        "Differences of first-action accuracy, paired over seeds; ± is the 95% two-sided interval half-width. A "
        f"comparison passes when the mean exceeds its margin and the one-sided {config.confidence:.0%} lower bound "
        "exceeds 0."
    )
    return Verdict.decide(gates, held=bool(held), evidence=evidence, measurement=measurement, notes=notes)
