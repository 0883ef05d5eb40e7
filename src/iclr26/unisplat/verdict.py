"""UniSplat's verdict: fusion and memory raise out-of-coverage PSNR over the single-frame model (but not when the ego
stands still, the control that must fail), and the dual branch beats either branch alone.

Paired over seeds with :func:`iclr26.common.stats.margin_test` (seed mean > margin and one-sided lower bound > 0):

(A) ``out_of_coverage``: out-of-coverage PSNR of *unisplat* − *single* passes with ``out_margin``;
(A0) ``out_of_coverage_control``, the control that must fail: the same difference on the same streets with the ego
     standing still (nothing outside the current coverage was ever observed) does **not** pass;
(B) ``dual_vs_point``, ``dual_vs_voxel``: all-view PSNR of *unisplat* − *point* and *unisplat* − *voxel* both pass
    with ``branch_margin``.

Held when A and B pass and A0 does not. Reported beside the rule, with intervals: fusion alone and memory alone
outside the coverage, the dynamic filter's effect on dynamic-region PSNR, unisplat vs single-frame inside.

Gates (a failed one makes the verdict inconclusive):

- ``dynamic_filter_fires``: on the test drives, the UniSplat model's filter (dynamic probability >= 0.5) removes at
  least ``filter_recall_gate`` of the moving Gaussians, and at least ``filter_precision_gate`` of what it removes is
  moving. The memory of the *unisplat* arm is the paper's static memory only when its filter keeps moving cars out;
  a filter that never fires makes the memory arms and the with/without-filter comparison measure something else.
- ``models_trained``: every model's training changed its parameters (``steps=0`` trains nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Gate, Verdict
from iclr26.unisplat.config import UniSplatConfig

__all__ = ["Measurements", "comparisons", "filter_rates", "gates", "paired_difference", "reported", "verdict"]

#: arm -> metric -> per-seed value (None where a metric does not apply, e.g. no moving car seen).
ArmTable = dict[str, dict[str, list[float | None]]]


@dataclass(frozen=True)
class Measurements:
    """Per-seed means over the seed's test drives, per evaluated arm and metric.

    Attributes:
        main: the test drives (arms ``single``, ``fusion``, ``unisplat``, ``point``, ``voxel``,
            ``unisplat_nofilter``; metrics ``psnr_in``, ``psnr_out``, ``psnr_all``, ``psnr_dynamic``, and the
            filter's counts ``filter_moving``, ``filter_static``, ``filter_removed_moving``,
            ``filter_removed_static`` summed over the seed's drives and frames).
        control: the same streets with the ego standing still (arms ``single``, ``unisplat``).
        models_trained: whether every model's training changed its parameters.
    """

    main: ArmTable
    control: ArmTable
    models_trained: bool = True


def filter_rates(m: Measurements, arm: str = "unisplat") -> tuple[float, float]:
    """``(recall, precision)`` of an arm's dynamic filter pooled over seeds: the share of moving Gaussians it removes,
    and the share of what it removes that is moving (0 when there is nothing to share)."""
    t = m.main[arm]
    moving, hit = sum(t["filter_moving"]), sum(t["filter_removed_moving"])
    removed = hit + sum(t["filter_removed_static"])
    return (hit / moving if moving else 0.0), (hit / removed if removed else 0.0)


def gates(m: Measurements, config: UniSplatConfig) -> list[Gate]:
    """The test bed's gates (module docstring)."""
    recall, precision = filter_rates(m)
    t = m.main["unisplat"]
    fires = recall >= config.filter_recall_gate and precision >= config.filter_precision_gate
    return [
        Gate("dynamic_filter_fires", fires, {
            "recall": recall, "precision": precision, "moving": sum(t["filter_moving"]),
            "removed_moving": sum(t["filter_removed_moving"]), "removed_static": sum(t["filter_removed_static"]),
        }),
        Gate("models_trained", m.models_trained, {"models_trained": m.models_trained}),
    ]  # fmt: skip


def paired_difference(table: ArmTable, a: str, b: str, metric: str) -> list[float]:
    """Per-seed ``a − b`` of ``metric`` over the seeds where both are measured."""
    return [x - y for x, y in zip(table[a][metric], table[b][metric], strict=True) if x is not None and y is not None]


def comparisons(m: Measurements, config: UniSplatConfig) -> dict[str, MarginTest]:
    """The paired tests of the rule (module docstring)."""
    kw = {"confidence": config.confidence}
    return {
        "out_of_coverage": margin_test(paired_difference(m.main, "unisplat", "single", "psnr_out"),
                                       margin=config.out_margin, **kw),
        "out_of_coverage_control": margin_test(paired_difference(m.control, "unisplat", "single", "psnr_out"),
                                               margin=config.out_margin, **kw),
        "dual_vs_point": margin_test(paired_difference(m.main, "unisplat", "point", "psnr_all"),
                                     margin=config.branch_margin, **kw),
        "dual_vs_voxel": margin_test(paired_difference(m.main, "unisplat", "voxel", "psnr_all"),
                                     margin=config.branch_margin, **kw),
    }  # fmt: skip


def reported(m: Measurements, config: UniSplatConfig) -> dict[str, MarginTest]:
    """The differences reported beside the rule (margin 0)."""
    kw = {"margin": 0.0, "confidence": config.confidence}
    return {
        "fusion_vs_single_out": margin_test(paired_difference(m.main, "fusion", "single", "psnr_out"), **kw),
        "memory_vs_fusion_out": margin_test(paired_difference(m.main, "unisplat", "fusion", "psnr_out"), **kw),
        "dynamic_filter_dynamic_psnr": margin_test(
            paired_difference(m.main, "unisplat", "unisplat_nofilter", "psnr_dynamic"), **kw
        ),
        "unisplat_vs_single_in": margin_test(paired_difference(m.main, "unisplat", "single", "psnr_in"), **kw),
    }


def _brief(t: MarginTest) -> dict[str, object]:
    """A test as the evidence states it (the per-seed values are in the record's metrics)."""
    return {"mean": t.mean, "lower_bound": t.lower_bound, "upper_bound": t.upper_bound, "passes": t.passes}


def _fmt(t: MarginTest) -> str:
    ci = f" ± {t.ci95_halfwidth:.2f}" if t.ci95_halfwidth is not None else " (one seed, no interval)"
    return f"{t.mean:+.2f}{ci} dB"


def verdict(m: Measurements, config: UniSplatConfig) -> Verdict:
    """Held when A and B pass and the stationary-ego control A0 does not (module docstring)."""
    t, r = comparisons(m, config), reported(m, config)
    held = (t["out_of_coverage"].passes and not t["out_of_coverage_control"].passes
            and t["dual_vs_point"].passes and t["dual_vs_voxel"].passes)  # fmt: skip
    evidence = {
        **{name: _brief(x) for name, x in t.items()},
        "reported": {name: _brief(x) for name, x in r.items()},
        "n_seeds": len(m.main["unisplat"]["psnr_out"]),
        "thresholds": {
            n: threshold(config, n)
            for n in ("out_margin", "branch_margin", "confidence", "filter_recall_gate", "filter_precision_gate")
        },
    }
    measurement = (
        f"{len(m.main['unisplat']['psnr_out'])} seed(s): out-of-coverage PSNR UniSplat − single-frame "
        f"{_fmt(t['out_of_coverage'])} (stationary-ego control {_fmt(t['out_of_coverage_control'])}); all-view PSNR "
        f"dual − point {_fmt(t['dual_vs_point'])}, dual − voxel {_fmt(t['dual_vs_voxel'])}; dynamic-region PSNR "
        f"with − without the dynamic filter {_fmt(r['dynamic_filter_dynamic_psnr'])}; the filter removes "
        f"{filter_rates(m)[0]:.0%} of moving Gaussians at {filter_rates(m)[1]:.0%} precision"
    )
    notes = (
        "Differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when the seed "
        f"mean exceeds its margin and the one-sided {config.confidence:.0%} lower bound exceeds 0; the stationary-ego "
        "control must not pass. LPIPS is not computed (its networks need hub weights)."
    )
    return Verdict.decide(gates(m, config), held=bool(held), evidence=evidence, measurement=measurement, notes=notes)
