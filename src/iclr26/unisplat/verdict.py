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
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.config import threshold
from iclr26.common.stats import MarginTest, margin_test
from iclr26.common.verdict import Verdict
from iclr26.unisplat.config import UniSplatConfig

__all__ = ["Measurements", "comparisons", "paired_difference", "reported", "verdict"]

#: arm -> metric -> per-seed value (None where a metric does not apply, e.g. no moving car seen).
ArmTable = dict[str, dict[str, list[float | None]]]


@dataclass(frozen=True)
class Measurements:
    """Per-seed means over the seed's test drives, per evaluated arm and metric.

    Attributes:
        main: the test drives (arms ``single``, ``fusion``, ``unisplat``, ``point``, ``voxel``,
            ``unisplat_nofilter``; metrics ``psnr_in``, ``psnr_out``, ``psnr_all``, ``psnr_dynamic``, ...).
        control: the same streets with the ego standing still (arms ``single``, ``unisplat``).
    """

    main: ArmTable
    control: ArmTable


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


def _fmt(t: MarginTest) -> str:
    ci = f" ± {t.ci95_halfwidth:.2f}" if t.ci95_halfwidth is not None else " (one seed, no interval)"
    return f"{t.mean:+.2f}{ci} dB"


def verdict(m: Measurements, config: UniSplatConfig) -> Verdict:
    """Held when A and B pass and the stationary-ego control A0 does not (module docstring)."""
    t, r = comparisons(m, config), reported(m, config)
    held = (t["out_of_coverage"].passes and not t["out_of_coverage_control"].passes
            and t["dual_vs_point"].passes and t["dual_vs_voxel"].passes)  # fmt: skip
    evidence = {
        **{name: x.record() for name, x in t.items()},
        "reported": {name: x.record() for name, x in r.items()},
        "n_seeds": len(m.main["unisplat"]["psnr_out"]),
        "thresholds": {n: threshold(config, n) for n in ("out_margin", "branch_margin", "confidence")},
    }
    measurement = (
        f"{len(m.main['unisplat']['psnr_out'])} seed(s): out-of-coverage PSNR UniSplat − single-frame "
        f"{_fmt(t['out_of_coverage'])} (stationary-ego control {_fmt(t['out_of_coverage_control'])}); all-view PSNR "
        f"dual − point {_fmt(t['dual_vs_point'])}, dual − voxel {_fmt(t['dual_vs_voxel'])}; dynamic-region PSNR "
        f"with − without the dynamic filter {_fmt(r['dynamic_filter_dynamic_psnr'])}"
    )
    notes = (
        "Differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when the seed "
        f"mean exceeds its margin and the one-sided {config.confidence:.0%} lower bound exceeds 0; the stationary-ego "
        "control must not pass. LPIPS is not computed (its networks need hub weights)."
    )
    return Verdict.decide([], held=bool(held), evidence=evidence, measurement=measurement, notes=notes)
