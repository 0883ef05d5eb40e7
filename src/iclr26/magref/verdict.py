"""The verdict of the MAGREF reproduction, a pure function of per-seed numbers.

Gates (a failed one makes the verdict ``inconclusive``): the identity classifier's accuracy reaches
``min_judge_accuracy``; the ``magref`` and ``nodisent`` arms place at least ``min_placed`` of their subject-frames at
the prompted window (else their swap rates sit at chance and part B cannot discriminate).

Parts, each paired over seeds with a one-sided lower bound at ``confidence`` (:func:`iclr26.common.stats.margin_test`):

- (A) ID similarity *at the prompted place* of ``magref`` minus ``vanilla``, and of ``magref`` minus the
  ``copy_paste`` baseline (the reference canvas pasted into every frame): each seed mean exceeds ``id_margin`` and
  each lower bound 0. Similarity at the best window anywhere would let copy-paste pass;
- (B) swap rate of ``nodisent`` minus ``magref``: the same rule with ``swap_margin``;
- (C, the control that must fail) swap rate of ``nodisent`` minus ``placebo`` (values injected into randomly chosen
  regions) must *not* pass rule B.

The claim holds when every gate passes, A and B pass and C fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.magref.config import MAGREFConfig

#: The arms whose swap rates part B compares, gated on their placement.
SWAP_ARMS = ("magref", "nodisent")


@dataclass(frozen=True)
class Measurements:
    """Per-seed means of each arm (seed k is entry k of every list); ``copy_paste`` is the baseline of part A.

    Attributes:
        id_at_place: arm -> per-seed mean ID similarity at the prompted windows.
        swap_rate: arm -> per-seed swap rate on the confusable two-subject prompts.
        placed: arm -> per-seed share of subject-frames whose prompted window shows that subject.
        classifier_accuracy: the identity classifier's accuracy on fresh windows.
    """

    id_at_place: Mapping[str, Sequence[float]]
    swap_rate: Mapping[str, Sequence[float]]
    placed: Mapping[str, Sequence[float]]
    classifier_accuracy: float


def _diff(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x - y for x, y in zip(a, b, strict=True)]


def paired_tests(m: Measurements, config: MAGREFConfig) -> dict[str, MarginTest]:
    """The paired margin tests of parts A, B and the control C; a test whose arms were not measured is absent."""
    ids, swaps = m.id_at_place, m.swap_rate
    specs = {
        "id_magref_vs_vanilla": (ids, "magref", "vanilla", config.id_margin),
        "id_magref_vs_copy_paste": (ids, "magref", "copy_paste", config.id_margin),
        "swap_reduction_disent": (swaps, "nodisent", "magref", config.swap_margin),
        "swap_reduction_placebo": (swaps, "nodisent", "placebo", config.swap_margin),
    }
    return {
        name: margin_test(_diff(values[a], values[b]), margin=margin, confidence=config.confidence)
        for name, (values, a, b, margin) in specs.items()
        if a in values and b in values
    }


def gates(m: Measurements, config: MAGREFConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    placed = {arm: float(np.mean(m.placed[arm])) if arm in m.placed else None for arm in SWAP_ARMS}
    return [
        Gate(
            "judge_accuracy",
            m.classifier_accuracy >= config.min_judge_accuracy,
            {"value": m.classifier_accuracy, "threshold": config.min_judge_accuracy},
        ),
        Gate(
            "subjects_placed",
            all(v is not None and v >= config.min_placed for v in placed.values()),
            {"placed": placed, "threshold": config.min_placed},
        ),
    ]


def _fmt(x: MarginTest | None, pct: bool = False) -> str:
    if x is None:
        return "not run"
    value = f"{x.mean:+.1%}" if pct else f"{x.mean:+.3f}"
    if x.ci95_halfwidth is None:
        return f"{value} (one seed, no interval)"
    return f"{value} ± {x.ci95_halfwidth:.1%}" if pct else f"{value} ± {x.ci95_halfwidth:.3f}"


def verdict(m: Measurements, config: MAGREFConfig) -> Verdict:
    """Held when the gates pass, A and B pass and the placebo control C does not (module docstring)."""
    t = paired_tests(m, config)
    parts = ("id_magref_vs_vanilla", "id_magref_vs_copy_paste", "swap_reduction_disent")
    control = t.get("swap_reduction_placebo")
    held = all(p in t and t[p].passes for p in parts) and control is not None and not control.passes
    n_seeds = len(next(iter(m.id_at_place.values())))
    names = ("id_margin", "swap_margin", "confidence", "min_placed", "min_judge_accuracy")
    evidence = {
        **{name: x.record() for name, x in t.items()},
        "n_seeds": n_seeds,
        "n_eval_multi": config.n_eval_multi,
        "classifier_accuracy": m.classifier_accuracy,
        "thresholds": {name: threshold(config, name) for name in names},
    }
    placed = ", ".join(f"{a} {np.mean(m.placed[a]):.2f}" for a in SWAP_ARMS if a in m.placed)
    measurement = (
        f"{n_seeds} seed(s): ID-sim at the prompted place magref - vanilla {_fmt(t.get(parts[0]))}, magref - "
        f"copy-paste {_fmt(t.get(parts[1]))}; swap rate lowered by disentanglement {_fmt(t.get(parts[2]), True)} "
        f"(placebo control {_fmt(control, True)}); placed {placed}"
    )
    notes = (
        "Differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when the seed "
        f"mean exceeds its margin and the one-sided {config.confidence:.0%} lower bound exceeds 0; the placebo must "
        "not pass."
    )
    return Verdict.decide(gates(m, config), held=held, evidence=evidence, measurement=measurement, notes=notes)


__all__ = ["SWAP_ARMS", "Measurements", "gates", "paired_tests", "verdict"]
