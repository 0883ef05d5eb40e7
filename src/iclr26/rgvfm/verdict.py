"""The RG-VFM verdict, over the per-seed checkerboard coverages of the S² benchmark.

The rule (fixed before the runs; thresholds are config fields with sources), two parts reported separately:

1. RG-VFM-M beats RFM;
2. RG-VFM-M beats the better Euclidean baseline (the one of CFM and VFM with the higher mean coverage, paired seed by
   seed with that arm).

Each part is a paired Student-t test over the seeds (:func:`paired_part`): it passes when the mean gap exceeds
``min_margin`` points and its one-sided ``confidence`` lower bound exceeds 0. Held when both pass.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Verdict
from iclr26.rgvfm.config import RGVFMConfig
from iclr26.rgvfm.flows import FLOW_SPECS

PAPER_SPHERE_COVERAGE = {"cfm": 64.97, "vfm": 79.08, "rgvfm_ambient": 83.10, "rfm": 66.83, "rgvfm": 84.21}
"""The paper's S² checkerboard coverage in % (from the notes' table; the notes tag it [unverified])."""
NEEDED = ("rgvfm", "rfm", "cfm", "vfm")


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured on the S² checkerboard.

    Attributes:
        coverage: model -> final coverage (%) per seed (seed order; paired across models); empty when the S²
            checkerboard was not run.
        secondary: numbers reported beside the verdict and not judged (plain JSON-able values).
    """

    coverage: dict[str, list[float]]
    secondary: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class PairedPart:
    """One part of the verdict: the seed-paired coverage gap of RG-VFM-M over one baseline.

    Attributes:
        baseline: the baseline arm.
        diffs: per-seed gaps (percentage points).
        mean: their mean (the effect).
        ci95: two-sided 95 % Student-t interval of the mean (None with one seed).
        lower: one-sided ``confidence`` lower bound (None with one seed).
        p_greater: one-sided p-value of "mean gap > 0".
        wins: seeds where RG-VFM-M is ahead.
        passes: mean > min_margin and lower > 0.
    """

    baseline: str
    diffs: list[float]
    mean: float
    ci95: tuple[float, float] | None
    lower: float | None
    p_greater: float
    wins: int
    passes: bool


def paired_part(
    method: list[float], baseline: list[float], name: str, *, margin: float, confidence: float
) -> PairedPart:
    """The paired Student-t test of ``method - baseline`` over seeds (:func:`iclr26.common.stats.paired_t`): passes when
    the mean gap exceeds ``margin`` and its one-sided ``confidence`` lower bound exceeds 0."""
    diffs = [x - y for x, y in zip(method, baseline, strict=True)]
    t = paired_t(diffs, level=0.95, confidence=confidence, moments="exact")
    if t.n < 2:
        return PairedPart(name, diffs, t.mean, None, None, 1.0, int(t.wins), False)
    return PairedPart(
        name, diffs, t.mean, (t.ci_low, t.ci_high), t.lower, t.p_greater, int(t.wins),
        bool(t.mean > margin and t.lower > 0),
    )  # fmt: skip


def _part_text(label: str, part: PairedPart) -> str:
    ci = "" if part.ci95 is None else f" [95% CI {part.ci95[0]:+.1f}, {part.ci95[1]:+.1f}]"
    outcome = "holds" if part.passes else "does not hold"
    return f"RG-VFM-M - {label} = {part.mean:+.1f}{ci}, ahead in {part.wins}/{len(part.diffs)} seeds: {outcome}"


def _label(key: str) -> str:
    return FLOW_SPECS[key].label.replace("^D", "3")


def verdict(m: Measurements, config: RGVFMConfig) -> Verdict:
    """Claim check on the S² checkerboard (module docstring).

    Args:
        m: the per-seed coverages (and the secondary numbers to report).
        config: ``min_margin``, ``confidence`` and the protocol (for the evidence and the report line).

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; not held (with ``evidence["evaluated"]`` False) when the S²
        checkerboard or one of RG-VFM-M, RFM, CFM, VFM was not run.
    """
    if not set(NEEDED) <= set(m.coverage):
        return Verdict.decide(
            [], held=False, evidence={"evaluated": False},
            measurement="claim not evaluated: needs sphere_checkerboard and rgvfm, rfm, cfm, vfm",
        )  # fmt: skip
    cov = m.coverage
    means = {k: statistics.fmean(v) for k, v in cov.items()}
    best_euclid = "vfm" if means["vfm"] >= means["cfm"] else "cfm"
    other_euclid = "cfm" if best_euclid == "vfm" else "vfm"
    kw = {"margin": config.min_margin, "confidence": config.confidence}
    vs_rfm = paired_part(cov["rgvfm"], cov["rfm"], "rfm", **kw)
    vs_euclid = paired_part(cov["rgvfm"], cov[best_euclid], best_euclid, **kw)
    secondary = {
        "vs_other_euclidean": dataclasses.asdict(paired_part(cov["rgvfm"], cov[other_euclid], "", **kw))
        | {"baseline": other_euclid},
        **m.secondary,
    }
    evidence = {
        "evaluated": True,
        "coverage_mean_pct": means,
        "part1_rgvfm_vs_rfm": dataclasses.asdict(vs_rfm),
        "part2_rgvfm_vs_best_euclidean": dataclasses.asdict(vs_euclid),
        "paper_coverage_pct": PAPER_SPHERE_COVERAGE,
        "seeds": len(cov["rgvfm"]),
        "protocol": {
            name: getattr(config, name)
            for name in ("steps", "batch_size", "lr", "checkpoint", "velocity_clip", "coverage_samples", "ema_decay")
        },
        "secondary": secondary,
        "thresholds": {name: threshold(config, name) for name in ("min_margin", "confidence")},
    }
    order = ", ".join(f"{_label(k)} {means[k]:.1f}" for k in cov)
    measurement = (
        f"S² checkerboard coverage % (mean of {len(cov['rgvfm'])} seeds, {config.steps} steps x {config.batch_size}): "
        f"{order}; part 1: {_part_text('RFM', vs_rfm)}; part 2: "
        f"{_part_text(_label(best_euclid) + ' (better Euclidean)', vs_euclid)}; paper 84.21 vs 66.83 RFM, "
        "79.08 VFM, 64.97 CFM"
    )
    return Verdict.decide([], held=vs_rfm.passes and vs_euclid.passes, evidence=evidence, measurement=measurement)
