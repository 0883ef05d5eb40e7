"""The RG-VFM verdict, over the per-seed checkerboard coverages of the S² benchmark.

The rule (fixed before the runs; thresholds are config fields with sources), two parts reported separately:

1. RG-VFM-M beats RFM;
2. RG-VFM-M beats the better Euclidean baseline (the one of CFM and VFM with the higher mean coverage, paired seed by
   seed with that arm; the one trained when only one is: the cpu scale trains VFM, the paper's stronger Euclidean
   baseline, 79.08 against CFM's 64.97 in its table).

Each part is a paired Student-t test over the seeds (:func:`paired_part`): it passes when the mean gap exceeds
``min_margin`` points and its one-sided ``confidence`` lower bound exceeds 0. A gate comes first:
``placebo_fails``, the negative control (RG-VFM-M trained on times shuffled across the batch, which cannot learn the
transport) must pass neither part; if it passes one, or was not trained, the test bed does not tell a working flow
from a broken one and the verdict is ``inconclusive``. Held when the gate and both parts pass.

The budget is fixed (``steps``); the same parts computed on the coverage curve at every checkpoint are reported as the
verdict's sensitivity to it (not judged).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Any

from iclr26.common.config import threshold
from iclr26.common.stats import paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.rgvfm.config import CONTROL, RGVFMConfig
from iclr26.rgvfm.flows import FLOW_SPECS

PAPER_SPHERE_COVERAGE = {"cfm": 64.97, "vfm": 79.08, "rgvfm_ambient": 83.10, "rfm": 66.83, "rgvfm": 84.21}
"""The paper's S² checkerboard coverage in % (from the notes' table; the notes tag it [unverified])."""
NEEDED = ("rgvfm", "rfm")
EUCLIDEAN = ("cfm", "vfm")


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured on the S² checkerboard.

    Attributes:
        coverage: model -> final coverage (%) per seed (seed order; paired across models); empty when the S²
            checkerboard was not run.
        curve_steps: the checkpoints of the coverage curve (the last is the fixed budget).
        curve: model -> per seed -> coverage (%) at each checkpoint (on fewer samples than the final coverage).
    """

    coverage: dict[str, list[float]]
    curve_steps: list[int] = dataclasses.field(default_factory=list)
    curve: dict[str, list[list[float]]] = dataclasses.field(default_factory=dict)


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


def part_evidence(part: PairedPart) -> dict[str, Any]:
    """A part as the evidence holds it (the per-seed coverages are in the record's metrics)."""
    low, high = part.ci95 if part.ci95 is not None else (None, None)
    return {
        "baseline": part.baseline,
        "mean": part.mean,
        "ci95_low": low,
        "ci95_high": high,
        "lower": part.lower,
        "wins": part.wins,
        "passes": part.passes,
    }


def _part_text(label: str, part: PairedPart) -> str:
    ci = "" if part.ci95 is None else f" [95% CI {part.ci95[0]:+.1f}, {part.ci95[1]:+.1f}]"
    outcome = "holds" if part.passes else "does not hold"
    return f"RG-VFM-M - {label} = {part.mean:+.1f}{ci}, ahead in {part.wins}/{len(part.diffs)} seeds: {outcome}"


def _label(key: str) -> str:
    return FLOW_SPECS[key].label.replace("^D", "3")


def evaluable(cov: dict[str, list[float]]) -> bool:
    """Whether the coverages hold RG-VFM-M, RFM and a Euclidean baseline (CFM or VFM)."""
    return set(NEEDED) <= set(cov) and any(k in cov for k in EUCLIDEAN)


def both_parts(cov: dict[str, list[float]], method: str, config: RGVFMConfig) -> tuple[PairedPart, PairedPart]:
    """The two parts for arm ``method``: against RFM and against the better Euclidean baseline (by mean)."""
    best_euclid = max((k for k in ("vfm", "cfm") if k in cov), key=lambda k: statistics.fmean(cov[k]))
    kw = {"margin": config.min_margin, "confidence": config.confidence}
    return paired_part(cov[method], cov["rfm"], "rfm", **kw), paired_part(
        cov[method], cov[best_euclid], best_euclid, **kw
    )


def placebo_gate(cov: dict[str, list[float]], config: RGVFMConfig) -> Gate:
    """``placebo_fails``: the negative control passes neither part (and was trained)."""
    if CONTROL not in cov:
        return Gate("placebo_fails", False, {"control": CONTROL, "trained": False})
    vs_rfm, vs_euclid = both_parts(cov, CONTROL, config)
    detail = {"control": CONTROL, "trained": True, "vs_rfm_mean": vs_rfm.mean, "vs_rfm_passes": vs_rfm.passes,
              "vs_best_euclidean_mean": vs_euclid.mean, "vs_best_euclidean_passes": vs_euclid.passes}  # fmt: skip
    return Gate("placebo_fails", not (vs_rfm.passes or vs_euclid.passes), detail)


def budget_sensitivity(m: Measurements, config: RGVFMConfig) -> list[dict[str, Any]]:
    """The parts and the gate at every checkpoint of the coverage curve (the last is the fixed budget)."""
    out = []
    for i, step in enumerate(m.curve_steps):
        cov = {k: [seed[i] for seed in per_seed] for k, per_seed in m.curve.items()}
        if not evaluable(cov) or any(math.isnan(v) for vs in cov.values() for v in vs):
            continue
        vs_rfm, vs_euclid = both_parts(cov, "rgvfm", config)
        gate = placebo_gate(cov, config)
        held = vs_rfm.passes and vs_euclid.passes
        out.append(
            {
                "step": step,
                "part1_mean": vs_rfm.mean,
                "part1_passes": vs_rfm.passes,
                "part2_baseline": vs_euclid.baseline,
                "part2_mean": vs_euclid.mean,
                "part2_passes": vs_euclid.passes,
                "placebo_fails": gate.passed,
                "verdict": "inconclusive" if not gate.passed else ("held" if held else "not held"),
            }
        )
    return out


def verdict(m: Measurements, config: RGVFMConfig) -> Verdict:
    """Claim check on the S² checkerboard (module docstring).

    Args:
        m: the per-seed coverages and their curves over the checkpoints.
        config: ``min_margin``, ``confidence`` and the protocol (for the evidence and the report line).

    Returns:
        The :class:`~iclr26.common.verdict.Verdict` (the two parts, the gate, the verdict at every checkpoint in
        ``evidence["budget_sensitivity"]``); not held (with ``evidence["evaluated"]`` False) when the S²
        checkerboard, RG-VFM-M, RFM or both Euclidean arms were not run.
    """
    if not evaluable(m.coverage):
        return Verdict.decide(
            [], held=False, evidence={"evaluated": False},
            measurement="claim not evaluated: needs sphere_checkerboard and rgvfm, rfm and cfm or vfm",
        )  # fmt: skip
    cov = m.coverage
    means = {k: statistics.fmean(v) for k, v in cov.items()}
    vs_rfm, vs_euclid = both_parts(cov, "rgvfm", config)
    best_euclid = vs_euclid.baseline
    gate = placebo_gate(cov, config)
    evidence = {
        "evaluated": True,
        "coverage_mean_pct": means,
        "part1_rgvfm_vs_rfm": part_evidence(vs_rfm),
        "part2_rgvfm_vs_best_euclidean": part_evidence(vs_euclid),
        "budget_sensitivity": {
            str(row["step"]): f"{row['verdict']}: part 1 {row['part1_mean']:+.1f}, part 2 {row['part2_mean']:+.1f}"
            for row in budget_sensitivity(m, config)
        },
        "seeds": len(cov["rgvfm"]),
        "thresholds": {name: threshold(config, name) for name in ("min_margin", "confidence")},
    }
    order = ", ".join(f"{_label(k)} {means[k]:.1f}" for k in cov)
    measurement = (
        f"S² checkerboard coverage % (mean of {len(cov['rgvfm'])} seeds, {config.steps} steps x {config.batch_size}): "
        f"{order}; part 1: {_part_text('RFM', vs_rfm)}; part 2: "
        f"{_part_text(_label(best_euclid) + ' (better Euclidean)', vs_euclid)}; control (shuffled t) passes "
        f"{'neither part' if gate.passed else 'a part'}; paper 84.21 vs 66.83 RFM, 79.08 VFM, 64.97 CFM"
    )
    return Verdict.decide([gate], held=vs_rfm.passes and vs_euclid.passes, evidence=evidence, measurement=measurement)
