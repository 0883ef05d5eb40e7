"""PAGE-4D's verdict: better pose on dynamic scenes than the static model and naive fine-tuning, depth no worse on
dynamic pixels, and no such gain on static scenes (the control that must fail).

Per seed, every value is a mean over the seed's test scenes; comparisons are relative, paired over seeds
(:func:`iclr26.common.stats.margin_test`, Student t, one-sided bounds at ``confidence``):

(a) ``ate_vs_frozen``: relative ATE reduction of ``page4d`` over ``frozen`` on dynamic scenes, mean > ``ate_margin``
    and lower bound > 0;
(b) ``ate_vs_naive``: the same over ``naive``;
(c) ``depth_dyn_vs_naive``, ``depth_dyn_vs_frozen``: the relative AbsRel increase on dynamic pixels has a one-sided
    upper bound below ``depth_tolerance``;
(d) ``control_static_ate_vs_naive``, the control that must fail: the ATE reduction of ``page4d`` over ``naive`` on
    static test scenes (nothing to mask) must not pass the rule of (b).

The claim holds when (a)-(c) pass and (d) does not. ``ate_vs_full`` and ``naive_vs_frozen`` are reported outside the
rule. Gates: the recipe froze what it freezes and changed what it trains.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.page4d.config import Page4DConfig

__all__ = ["Measurements", "comparisons", "relative_reduction", "verdict"]


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, per arm (``frozen``, ``naive``, ``full``, ``page4d``) and seed.

    Attributes:
        ate_dynamic: arm -> per-seed mean ATE on the dynamic test scenes.
        ate_static: arm -> per-seed mean ATE on the static test scenes.
        absrel_dynamic: arm -> per-seed mean depth AbsRel on dynamic pixels of the dynamic test scenes.
        frozen_unchanged: whether every parameter an arm freezes stayed bit-identical to the pretrained weights.
        trained_changed: whether every fine-tuned arm changed the parameters it trains.
        mask_iou: the ``page4d`` arm's mean mask IoU with the true motion mask (None when not measured).
    """

    ate_dynamic: dict[str, list[float]]
    ate_static: dict[str, list[float]]
    absrel_dynamic: dict[str, list[float]]
    frozen_unchanged: bool
    trained_changed: bool
    mask_iou: float | None = None


def relative_reduction(base: list[float], new: list[float]) -> list[float]:
    """Per-seed relative reduction ``(base − new) / base``."""
    return [(b - n) / b for b, n in zip(base, new, strict=True)]


def comparisons(m: Measurements, config: Page4DConfig) -> dict[str, MarginTest]:
    """The paired tests (a)-(d) of the module docstring, and the two reported outside the rule."""
    c, ate, dep = config.confidence, m.ate_dynamic, m.absrel_dynamic

    def better(base: list[float], new: list[float]) -> MarginTest:
        return margin_test(relative_reduction(base, new), margin=config.ate_margin, confidence=c)

    def no_worse(base: list[float], new: list[float]) -> MarginTest:
        # the relative AbsRel increase is minus the relative reduction
        increase = [-x for x in relative_reduction(base, new)]
        return margin_test(increase, margin=config.depth_tolerance, confidence=c, kind="noninferior")

    return {
        "ate_vs_frozen": better(ate["frozen"], ate["page4d"]),
        "ate_vs_naive": better(ate["naive"], ate["page4d"]),
        "depth_dyn_vs_naive": no_worse(dep["naive"], dep["page4d"]),
        "depth_dyn_vs_frozen": no_worse(dep["frozen"], dep["page4d"]),
        "control_static_ate_vs_naive": better(m.ate_static["naive"], m.ate_static["page4d"]),
        "ate_vs_full": better(ate["full"], ate["page4d"]),
        "naive_vs_frozen": better(ate["frozen"], ate["naive"]),
    }


def _fmt(x: MarginTest) -> str:
    ci = f" ± {x.ci95_halfwidth:.1%}" if x.ci95_halfwidth is not None else " (one seed, no interval)"
    return f"{x.mean:+.1%}{ci}"


def verdict(m: Measurements, config: Page4DConfig) -> Verdict:
    """Held when (a)-(c) pass and the static-scene control (d) does not (module docstring); inconclusive when a
    gate fails."""
    t = comparisons(m, config)
    main = t["ate_vs_frozen"].passes and t["ate_vs_naive"].passes
    depth = t["depth_dyn_vs_naive"].passes and t["depth_dyn_vs_frozen"].passes
    control_passes = t["control_static_ate_vs_naive"].passes
    gates = [
        Gate("recipe_kept_frozen_blocks", m.frozen_unchanged, {"frozen_blocks_bit_identical": m.frozen_unchanged}),
        Gate("recipe_trained_its_blocks", m.trained_changed, {"trained_blocks_changed": m.trained_changed}),
    ]
    evidence = {
        **{name: x.record() for name, x in t.items()},
        "n_seeds": len(m.ate_dynamic["page4d"]),
        "frozen_blocks_bit_identical": m.frozen_unchanged,
        "trained_blocks_changed": m.trained_changed,
        "mask_iou_dynamic": m.mask_iou,
        "thresholds": {n: threshold(config, n) for n in ("ate_margin", "depth_tolerance", "confidence")},
    }
    measurement = (
        f"{len(m.ate_dynamic['page4d'])} seeds, dynamic scenes: PAGE-4D ATE reduction vs static model "
        f"{_fmt(t['ate_vs_frozen'])}, vs naive fine-tuning {_fmt(t['ate_vs_naive'])}, vs full "
        f"{_fmt(t['ate_vs_full'])}; dynamic-pixel AbsRel increase vs naive {_fmt(t['depth_dyn_vs_naive'])}, vs "
        f"static {_fmt(t['depth_dyn_vs_frozen'])}; static-scene control (vs naive) "
        f"{_fmt(t['control_static_ate_vs_naive'])}"
    )
    notes = (
        "Relative differences paired over seeds (each seed's value is the mean over its test scenes); ± is the 95% "
        f"two-sided half-width. Improvements pass when the mean exceeds ate_margin and the one-sided "
        f"{config.confidence:.0%} lower bound exceeds 0; depth passes when the one-sided upper bound of the AbsRel "
        "increase is below depth_tolerance; the static-scene control must not pass."
    )
    return Verdict.decide(
        gates, held=bool(main and depth and not control_passes), evidence=evidence, measurement=measurement,
        notes=notes,
    )  # fmt: skip
