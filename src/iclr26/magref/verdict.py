"""The verdict of the MAGREF reproduction, a pure function of per-seed numbers.

Parts, each paired over seeds with a one-sided lower bound at ``confidence`` (:func:`iclr26.common.stats.margin_test`):

- (A) ID similarity of ``magref`` minus ``vanilla``: the seed mean exceeds ``id_margin`` and the lower bound 0;
- (B) swap rate of ``nodisent`` minus ``magref``: the same rule with ``swap_margin``;
- (C, the control that must fail) swap rate of ``nodisent`` minus ``placebo`` (values injected into randomly chosen
  regions) must *not* pass rule B.

The claim holds when A and B pass and C fails. ``t2v`` against ``magref`` is reported, outside the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Verdict
from iclr26.magref.config import MAGREFConfig


@dataclass(frozen=True)
class Measurements:
    """Per-seed means of each arm (seed k is entry k of every list).

    Attributes:
        id_sim: arm -> per-seed mean ID similarity.
        swap_rate: arm -> per-seed swap rate on the confusable two-subject prompts.
        classifier_accuracy: the identity classifier's accuracy on fresh windows.
    """

    id_sim: Mapping[str, Sequence[float]]
    swap_rate: Mapping[str, Sequence[float]]
    classifier_accuracy: float


def _diff(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x - y for x, y in zip(a, b, strict=True)]


def paired_tests(m: Measurements, config: MAGREFConfig) -> dict[str, MarginTest]:
    """The paired margin tests of the rule (A, B, control C) and the reported T2V comparisons.

    A test whose arms were not measured is absent.
    """
    conf, ids, swaps = config.confidence, m.id_sim, m.swap_rate
    specs = {
        "id_magref_vs_vanilla": (ids, "magref", "vanilla", config.id_margin),
        "swap_reduction_disent": (swaps, "nodisent", "magref", config.swap_margin),
        "swap_reduction_placebo": (swaps, "nodisent", "placebo", config.swap_margin),
        "id_magref_vs_t2v": (ids, "magref", "t2v", 0.0),
        "swap_reduction_vs_t2v": (swaps, "t2v", "magref", 0.0),
    }
    return {
        name: margin_test(_diff(values[a], values[b]), margin=margin, confidence=conf)
        for name, (values, a, b, margin) in specs.items()
        if a in values and b in values
    }


def _fmt(x: MarginTest | None, pct: bool = False) -> str:
    if x is None:
        return "not run"
    value = f"{x.mean:+.1%}" if pct else f"{x.mean:+.3f}"
    if x.ci95_halfwidth is None:
        return f"{value} (one seed, no interval)"
    return f"{value} ± {x.ci95_halfwidth:.1%}" if pct else f"{value} ± {x.ci95_halfwidth:.3f}"


def verdict(m: Measurements, config: MAGREFConfig) -> Verdict:
    """Held when A and B pass and the placebo control C does not (module docstring)."""
    t = paired_tests(m, config)
    a, b, control = (t.get(k) for k in ("id_magref_vs_vanilla", "swap_reduction_disent", "swap_reduction_placebo"))
    held = bool(a and a.passes and b and b.passes and control is not None and not control.passes)
    n_seeds = len(next(iter(m.id_sim.values())))
    evidence = {
        **{name: x.record() for name, x in t.items()},
        "n_seeds": n_seeds,
        "n_eval_multi": config.n_eval_multi,
        "classifier_accuracy": m.classifier_accuracy,
        "thresholds": {name: threshold(config, name) for name in ("id_margin", "swap_margin", "confidence")},
    }
    measurement = (
        f"{n_seeds} seed(s): ID-sim magref - vanilla {_fmt(a)}; swap rate lowered by disentanglement "
        f"{_fmt(b, True)} (placebo control {_fmt(control, True)}); magref vs T2V start: ID-sim "
        f"{_fmt(t.get('id_magref_vs_t2v'))}, swaps {_fmt(t.get('swap_reduction_vs_t2v'), True)}"
    )
    notes = (
        "Differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when the seed "
        f"mean exceeds its margin and the one-sided {config.confidence:.0%} lower bound exceeds 0; the placebo must "
        "not pass."
    )
    return Verdict.decide([], held=held, evidence=evidence, measurement=measurement, notes=notes)


__all__ = ["Measurements", "paired_tests", "verdict"]
