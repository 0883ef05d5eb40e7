"""PAGE-4D's verdict: better pose on dynamic scenes than the static model and naive fine-tuning, depth no worse on
dynamic pixels, and no such gain on static scenes (the control that must fail); inconclusive unless the static
model learned pose and the metric can tell a straight line from the camera's path.

Per seed, every value is a mean over the seed's test scenes (the dynamic-pixel AbsRel pooled over the dynamic pixels
of the seed's dynamic test scenes); comparisons are relative, paired over seeds (:func:`iclr26.common.stats.
margin_test`, Student t, one-sided bounds at ``confidence``):

(a) ``ate_vs_frozen``: relative ATE reduction of ``page4d`` over ``frozen`` on dynamic scenes, mean > ``ate_margin``
    and lower bound > 0;
(b) ``ate_vs_naive``: the same over ``naive``;
(c) ``depth_dyn_vs_naive``, ``depth_dyn_vs_frozen``: the relative AbsRel increase on dynamic pixels has a one-sided
    upper bound below ``depth_tolerance``;
(d) ``control_static_ate_vs_naive``, the control that must fail: the ATE reduction of ``page4d`` over ``naive`` on
    static test scenes (nothing to mask) must not pass the rule of (b).

The claim holds when (a)-(c) pass and (d) does not. Gates (a failed one makes the verdict inconclusive):

- ``static_model_learned_pose``: on static test scenes the static model (``frozen``) reduces the ATE of its own
  predictions scored against another scene's path (``ate_shuffled``: what a predictor that ignores its input gets;
  with a few frames a Sim(3) alignment fits almost any non-degenerate shape, so the constant-pose predictor is too
  weak a baseline for ATE) and the RPE rotation of the constant-pose predictor (the true turn per frame), each by
  more than ``pose_gate_margin`` (relative, paired over seeds, lower bound > 0): without it the mask has no pose
  estimate to improve;
- ``metric_tells_a_line_from_the_path``: the best straight-line, constant-speed trajectory's ATE is at least
  ``line_gate_ratio`` times the constant predictor's (on a straight path a line scores ATE ≈ 0 whatever it learned);
- ``recipe_kept_frozen_blocks``, ``recipe_trained_its_blocks``: the fine-tuning recipe did what it says.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.page4d.config import Page4DConfig

__all__ = ["Measurements", "comparisons", "gates", "relative_reduction", "verdict"]


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, per arm (``frozen``, ``naive``, ``full``, ``page4d``) and seed.

    Attributes:
        ate_dynamic: arm -> per-seed mean ATE on the dynamic test scenes.
        ate_static: arm -> per-seed mean ATE on the static test scenes.
        absrel_dynamic: arm -> per-seed depth AbsRel over the dynamic pixels of the dynamic test scenes.
        rpe_rot_static: arm -> per-seed mean RPE rotation (degrees) on the static test scenes.
        ate_shuffled_static: arm -> per-seed mean ATE of each static test scene's prediction against the next
            scene's true path.
        ate_constant_static: per-seed mean ATE of the constant-pose predictor on the static test scenes.
        rpe_rot_constant_static: the same for its RPE rotation (the true rotation per frame).
        ate_line: per-seed mean ATE of the best straight-line, constant-speed trajectory on the static test scenes.
        frozen_unchanged: whether every parameter an arm freezes stayed bit-identical to the pretrained weights.
        trained_changed: whether every fine-tuned arm changed the parameters it trains.
        mask_iou: the ``page4d`` arm's mean mask IoU with the true motion mask (None when not measured).
    """

    ate_dynamic: dict[str, list[float]]
    ate_static: dict[str, list[float]]
    absrel_dynamic: dict[str, list[float]]
    rpe_rot_static: dict[str, list[float]]
    ate_shuffled_static: dict[str, list[float]]
    ate_constant_static: list[float]
    rpe_rot_constant_static: list[float]
    ate_line: list[float]
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


def _brief(t: MarginTest) -> dict[str, object]:
    """A test as the evidence states it (the per-seed values are in the record's metrics)."""
    return {"mean": t.mean, "lower_bound": t.lower_bound, "upper_bound": t.upper_bound, "passes": t.passes}


def gates(m: Measurements, config: Page4DConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    kw = {"margin": config.pose_gate_margin, "confidence": config.confidence}
    pose_ate = margin_test(relative_reduction(m.ate_shuffled_static["frozen"], m.ate_static["frozen"]), **kw)
    pose_rot = margin_test(relative_reduction(m.rpe_rot_constant_static, m.rpe_rot_static["frozen"]), **kw)
    ratio = float(np.mean(m.ate_line) / np.mean(m.ate_constant_static))
    return [
        Gate("static_model_learned_pose", pose_ate.passes and pose_rot.passes, {
            "ate_static_model": float(np.mean(m.ate_static["frozen"])),
            "ate_shuffled_scenes": float(np.mean(m.ate_shuffled_static["frozen"])),
            "ate_constant_pose": float(np.mean(m.ate_constant_static)),
            "ate_reduction": _brief(pose_ate),
            "rpe_rot_static_model": float(np.mean(m.rpe_rot_static["frozen"])),
            "rpe_rot_constant_pose": float(np.mean(m.rpe_rot_constant_static)),
            "rpe_rot_reduction": _brief(pose_rot),
        }),
        Gate("metric_tells_a_line_from_the_path", ratio >= config.line_gate_ratio,
             {"ate_line": float(np.mean(m.ate_line)), "ratio_to_constant": ratio}),
        Gate("recipe_kept_frozen_blocks", m.frozen_unchanged, {"frozen_blocks_bit_identical": m.frozen_unchanged}),
        Gate("recipe_trained_its_blocks", m.trained_changed, {"trained_blocks_changed": m.trained_changed}),
    ]  # fmt: skip


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
    rule = ("ate_vs_frozen", "ate_vs_naive", "depth_dyn_vs_naive", "depth_dyn_vs_frozen", "control_static_ate_vs_naive")
    names = ("ate_margin", "depth_tolerance", "confidence", "pose_gate_margin", "line_gate_ratio")
    evidence = {
        **{name: _brief(t[name]) for name in rule},
        "n_seeds": len(m.ate_dynamic["page4d"]),
        "mask_iou_dynamic": m.mask_iou,
        "thresholds": {n: threshold(config, n) for n in names},
    }
    measurement = (
        f"{len(m.ate_dynamic['page4d'])} seeds, dynamic scenes: PAGE-4D ATE reduction vs static model "
        f"{_fmt(t['ate_vs_frozen'])}, vs naive fine-tuning {_fmt(t['ate_vs_naive'])}, vs full "
        f"{_fmt(t['ate_vs_full'])}; dynamic-pixel AbsRel increase vs naive {_fmt(t['depth_dyn_vs_naive'])}, vs "
        f"static {_fmt(t['depth_dyn_vs_frozen'])}; static-scene control (vs naive) "
        f"{_fmt(t['control_static_ate_vs_naive'])}; static model ATE {np.mean(m.ate_static['frozen']):.3f} vs "
        f"constant pose {np.mean(m.ate_constant_static):.3f}"
    )
    notes = (
        "Relative differences paired over seeds (each seed's value is the mean over its test scenes); ± is the 95% "
        f"two-sided half-width. Improvements pass when the mean exceeds ate_margin and the one-sided "
        f"{config.confidence:.0%} lower bound exceeds 0; depth passes when the one-sided upper bound of the AbsRel "
        "increase is below depth_tolerance; the static-scene control must not pass."
    )
    return Verdict.decide(
        gates(m, config), held=bool(main and depth and not control_passes), evidence=evidence,
        measurement=measurement, notes=notes,
    )  # fmt: skip
