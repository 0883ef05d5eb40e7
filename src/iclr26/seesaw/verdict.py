"""The Seesaw verdict, over plain numbers: the regression study's risk gaps and the LM study's per-seed losses.

The rule (fixed before the runs; thresholds are config fields with sources):

- **gates** (the LM test bed can show the effect): ``lm_learned``, every cosine seed ends below the loss of a uniform
  guess over bytes (ln 256); ``naive_ramp_separated``, the naive ramp (batch ×2 at each halving, LR kept), the wrong
  rule for Adam, ends more than the match tolerance above cosine (seed means, each at its best LR): if the wrong rule
  also "matches" cosine, the LM cannot tell the right rule from the wrong one and the verdict is ``inconclusive``;
- **theory** (noisy linear regression): SGD's ramp and mixed schedules and NSGD's Seesaw stay within ``gap_tolerance``
  (largest relative risk gap at the phase ends) of LR decay while NSGD's naive ramp does not (Thm 1 and its NSGD
  extension); the same for Adam at every β₂ inside the claim's regime (at least one); β₂ outside it are reported;
- **LM**: each schedule at its own best peak LR (lowest seed mean); the tolerance is ``tolerance_sigmas`` × cosine's
  pooled seed standard deviation (from the cosine runs alone); Seesaw's seed-mean gap to cosine must lie within it.

Held when the gates pass and both parts hold; not held when the gates pass and a part fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import PairedT, paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.seesaw.config import SeesawConfig

LM_ARMS = ("cosine", "seesaw", "naive")
UNIFORM_LOSS = math.log(256)
"""Cross-entropy (nats) of a uniform guess over the 256 byte values."""
THEORY_GAPS = ("sgd_ramp", "sgd_mixed", "nsgd_seesaw", "nsgd_naive")


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured.

    Attributes:
        theory_gaps: largest relative risk gap to LR decay at the phase ends, by name: ``sgd_ramp`` (SGD, batch ×2),
            ``sgd_mixed`` (SGD, LR ÷√2 and batch ×√2), ``nsgd_seesaw`` and ``nsgd_naive`` (normalised SGD).
        adam_gaps: Adam's β₂ -> ``{"seesaw", "naive", "pure"}`` -> largest relative risk gap to LR decay.
        adam_in_regime: Adam's β₂ -> whether it lies in the regime the claim covers.
        lm_final: LM schedule (``cosine``, ``seesaw``, ``naive``) -> peak LR -> final validation loss per seed
            (paired: seed i shares the initialisation and data order across schedules).
        lm_n_params: the LM's non-embedding parameters (for the report line).
    """

    theory_gaps: dict[str, float]
    adam_gaps: dict[float, dict[str, float]]
    adam_in_regime: dict[float, bool]
    lm_final: dict[str, dict[float, list[float]]]
    lm_n_params: int = 0


def pooled_seed_std(finals_by_lr: dict[float, list[float]]) -> float:
    """Pooled within-LR seed standard deviation: ``√(Σ_lr Σ_seed (x − x̄_lr)² / (L (S − 1)))``.

    Pools the seed spread of one schedule over the LRs of its sweep (``L (S − 1)`` degrees of freedom instead of
    ``S − 1``), assuming the spread does not depend on the LR.

    Raises:
        ValueError: with fewer than 2 seeds at some LR.
    """
    if any(len(v) < 2 for v in finals_by_lr.values()) or not finals_by_lr:
        raise ValueError("pooled_seed_std needs at least 2 seeds at every LR")
    ss = sum(float(np.sum((np.asarray(v) - np.mean(v)) ** 2)) for v in finals_by_lr.values())
    dof = sum(len(v) - 1 for v in finals_by_lr.values())
    return math.sqrt(ss / dof)


def best_lr(finals_by_lr: dict[float, list[float]]) -> float:
    """The peak LR with the lowest seed-mean final loss (the first of equal ones)."""
    return min(finals_by_lr, key=lambda lr: float(np.mean(finals_by_lr[lr])))


def theory_holds(m: Measurements, tol: float) -> bool:
    """The regression part: SGD's ramp and mixed schedules and NSGD's Seesaw within ``tol`` of LR decay while NSGD's
    naive ramp is not, and the same for Adam at every β₂ of the claim's regime (at least one)."""
    g = m.theory_gaps
    covered = [b2 for b2, inside in m.adam_in_regime.items() if inside]
    return bool(
        g["sgd_ramp"] <= tol
        and g["sgd_mixed"] <= tol
        and g["nsgd_seesaw"] <= tol < g["nsgd_naive"]
        and covered
        and all(m.adam_gaps[b2]["seesaw"] <= tol < m.adam_gaps[b2]["naive"] for b2 in covered)
    )


def paired_summary(t: PairedT) -> dict[str, float]:
    """A paired-t result as the record holds it."""
    return {"mean": t.mean, "ci_low": t.ci_low, "ci_high": t.ci_high, "p_two_sided": t.p_two_sided, "n": t.n}


def lm_comparison(m: Measurements, sigmas: float) -> dict[str, Any]:
    """The LM part: best LRs, the tolerance from cosine's seeds alone, the gaps of Seesaw and of the naive ramp
    (``seesaw_within``: |Seesaw − cosine| ≤ tolerance; ``naive_outside``: naive − cosine > tolerance)."""
    best = {arm: best_lr(m.lm_final[arm]) for arm in LM_ARMS}
    spread = pooled_seed_std(m.lm_final["cosine"])
    tolerance = sigmas * spread
    at_best = {arm: m.lm_final[arm][best[arm]] for arm in LM_ARMS}
    mean = {arm: float(np.mean(at_best[arm])) for arm in LM_ARMS}
    seesaw_gap, naive_gap = mean["seesaw"] - mean["cosine"], mean["naive"] - mean["cosine"]
    within, outside = abs(seesaw_gap) <= tolerance, naive_gap > tolerance
    return {
        "best_lr": best,
        "mean": mean,
        "cosine_pooled_seed_std": spread,
        "tolerance": tolerance,
        "seesaw_gap": seesaw_gap,
        "naive_gap": naive_gap,
        "seesaw_within": bool(within),
        "naive_outside": bool(outside),
        "paired_seesaw": paired_summary(paired_t(at_best["seesaw"], at_best["cosine"])),
        "paired_naive": paired_summary(paired_t(at_best["naive"], at_best["cosine"])),
    }


def amount(n: float) -> str:
    """A count in short form that stays readable at every scale: ``912``, ``4.1K``, ``100K``, ``2B``."""
    for suffix, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{suffix}"
    return f"{n:g}"


def gates(m: Measurements, lm: dict[str, Any]) -> list[Gate]:
    """``lm_learned`` and ``naive_ramp_separated`` (module docstring)."""
    cosine = [v for vs in m.lm_final["cosine"].values() for v in vs]
    return [
        Gate(
            "lm_learned",
            max(cosine) < UNIFORM_LOSS,
            {"worst_cosine_final_val_loss": max(cosine), "uniform_loss": UNIFORM_LOSS},
        ),  # fmt: skip
        Gate(
            "naive_ramp_separated",
            lm["naive_outside"],
            {"naive_minus_cosine": lm["naive_gap"], "tolerance": lm["tolerance"]},
        ),
    ]


def verdict(m: Measurements, config: SeesawConfig) -> Verdict:
    """The claim check (module docstring); the evidence holds both parts' numbers, the gates and the thresholds."""
    tol = config.gap_tolerance
    theory_held = theory_holds(m, tol)
    lm = lm_comparison(m, config.tolerance_sigmas)
    g = m.theory_gaps
    covered = [b2 for b2, inside in m.adam_in_regime.items() if inside]
    adam_text = ", ".join(
        f"b2={b2:g}{'*' if m.adam_in_regime[b2] else ''} {v['seesaw']:.3f}/{v['naive']:.3f}"
        for b2, v in m.adam_gaps.items()
    )
    evidence = {
        "lm_loss_gap": lm["seesaw_gap"],
        "lm_naive_gap": lm["naive_gap"],
        "lm_loss_tolerance": lm["tolerance"],
        "cosine_pooled_seed_std": lm["cosine_pooled_seed_std"],
        "lm_paired_seesaw_minus_cosine": lm["paired_seesaw"],
        "lm_paired_naive_minus_cosine": lm["paired_naive"],
        "lm_seesaw_within_tolerance": lm["seesaw_within"],
        "best_lr": lm["best_lr"],
        "theory_gaps": g,
        "adam_gaps_in_claim_regime": {repr(b2): m.adam_gaps[b2] for b2 in covered},
        "theory_held": theory_held,
        "thresholds": {
            name: threshold(config, name) for name in ("tolerance_sigmas", "gap_tolerance", "adam_horizon_fraction")
        },
    }
    mean = lm["mean"]
    measurement = (
        f"tiny LM ({amount(m.lm_n_params)} params, {amount(config.total_tokens)} tokens, {config.n_seeds} seeds, each "
        f"schedule at its best of {len(config.peak_lrs)} LRs): Seesaw {mean['seesaw']:.4f} vs cosine "
        f"{mean['cosine']:.4f} (gap {lm['seesaw_gap']:+.4f}) and naive ramp gap "
        f"{lm['naive_gap']:+.4f}, tol {lm['tolerance']:.4f} = {config.tolerance_sigmas:g} x cosine's pooled seed std "
        f"{lm['cosine_pooled_seed_std']:.4f}; lin-reg max gaps SGD {g['sgd_ramp']:.3f}, NSGD Seesaw "
        f"{g['nsgd_seesaw']:.3f} vs naive {g['nsgd_naive']:.3f}, Adam Seesaw/naive by beta2 (* = in the claim's "
        f"regime) {adam_text}"
    )
    held = lm["seesaw_within"] and theory_held
    return Verdict.decide(gates(m, lm), held=held, evidence=evidence, measurement=measurement)
