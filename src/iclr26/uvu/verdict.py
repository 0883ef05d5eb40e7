"""The UVU verdict: UVU's error tracks the ensemble variance as width grows, and one UVU model ranks tasks for rejection
as well as the largest ensemble at a fraction of its compute, while the myopic RND control fails both tests.

The rule (fixed before the runs; thresholds are config fields with sources):

- **gate** ``ntk_ensemble_learned_values``: at the largest width, the ensemble's mean on the MDP points whose whole
  future is in the data is within ``ntk_value_tolerance`` of ``Q^π`` (relative to the mean ``|Q^π|`` there); else
  the TD training of the NTK study did not learn the values whose uncertainty it compares;
- **gate** ``reference_beats_random_rejection``: the one-sided ``confidence`` bound over replicates of
  AUC(largest ensemble) − base success (the expected AUC of a random ranking) exceeds ``auc_tolerance``; else a
  random ranking would "match" the reference, and matching it would mean nothing (this also fails when the shared
  policy solved every test task or none);
- **NTK part**: the gap between ``½ mean ε²`` and the ensemble variance at the largest width is within the
  ``ntk_noise_quantile`` quantile of the gap that exact agreement shows with the same number of samples, smaller
  than at the smallest width, and every width within the ``width^-ntk_width_exponent`` trend
  (:func:`ntk_rate_check`);
- **NTK control** (must fail): RND's ``½ err²`` (the γ = 0 regression onto the same target) at the largest width
  is *not* within that noise quantile of the ensemble variance;
- **rejection part**: the one-sided ``confidence`` bound of AUC(UVU) − AUC(largest ensemble) is at least
  ``-auc_tolerance``, and UVU's parameters and counted training multiply-adds per transition are at most
  ``max_compute_fraction`` of the ensemble's;
- **rejection control** (must fail): the same bound for RND is below ``-auc_tolerance``.

Held when both gates pass, both parts hold and both controls fail; not held when the gates pass and anything else
does not come out so; inconclusive when a gate fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.config import threshold
from iclr26.common.stats import PairedT, paired_t
from iclr26.common.verdict import Gate, Verdict
from iclr26.uvu.config import UVUConfig

THRESHOLDS = (
    "ntk_noise_quantile",
    "ntk_width_exponent",
    "ntk_value_tolerance",
    "auc_tolerance",
    "confidence",
    "max_compute_fraction",
)


@dataclass(frozen=True)
class Measurements:
    """What the reproduction measured, as plain numbers.

    Attributes:
        ntk_widths: the NTK study's hidden widths, increasing.
        ntk_gap: per width, the relative L1 gap between UVU's ``½ mean ε²`` and the ensemble variance.
        ntk_noise_mean: mean gap of exact agreement with the study's number of samples (simulated from the limit).
        ntk_noise_quantile: its ``config.ntk_noise_quantile`` quantile.
        ntk_rnd_gap: the same gap for RND's ``½ err²`` at the largest width (the control).
        ntk_value_error: mean ``|ensemble mean − Q^π|`` over the points whose future is in the data, at the largest
            width; None when there is no such point.
        ntk_value_scale: mean ``|Q^π|`` over those points; None when there is none.
        auc: method name -> rejection AUC per replicate; holds ``"UVU"``, ``"RND"`` and ``reference``.
        base_success: per replicate, the shared policy's success rate (the expected AUC of a random ranking).
        reference: the largest ensemble's name, e.g. ``"ensemble-10"``.
        params: ``"UVU"`` and ``reference`` -> all parameters (fixed targets included).
        update_macs: the same two -> counted multiply-adds per training transition.
        query_macs: the same two -> counted multiply-adds per query.
    """

    ntk_widths: list[int]
    ntk_gap: list[float]
    ntk_noise_mean: float
    ntk_noise_quantile: float
    ntk_rnd_gap: float
    ntk_value_error: float | None
    ntk_value_scale: float | None
    auc: dict[str, list[float]]
    base_success: list[float]
    reference: str
    params: dict[str, int]
    update_macs: dict[str, int]
    query_macs: dict[str, int]


def ntk_rate_check(
    widths: list[int], gaps: list[float], noise_mean: float, noise_quantile: float, *, exponent: float
) -> dict[str, Any]:
    """The width trend of the NTK gap against the rate the theory predicts.

    A finite network in NTK parameterisation deviates from its infinite-width training dynamics by
    ``O(width^(-1/2))`` (Lee et al. 2019, Thm 2.1). The measured gap is that deviation plus the sampling noise of a
    finite number of copies (mean ``noise_mean``, quantile ``noise_quantile``, both simulated from the limit). So
    from the smallest width ``w_0``, whose excess over the noise is ``e_0 = gap(w_0) − noise_mean``, the gap at a
    larger width ``w`` must satisfy ``gap(w) ≤ noise_quantile + max(e_0, 0) · (w_0 / w)^exponent``.

    Returns ``{"bound": [...], "within": bool, "slope": float | None}``: the bound per width (the first is the
    smallest width's own), whether every larger width is within it, and the least-squares slope of
    ``log(gap − noise_mean)`` against ``log(width)`` over the widths with a positive excess (``None`` with fewer
    than two such widths; reported, not judged: the theory's slope is ``−exponent``).
    """
    excess0 = max(gaps[0] - noise_mean, 0.0)
    bound = [noise_quantile + excess0 * (widths[0] / w) ** exponent for w in widths]
    within = all(g <= b for g, b in zip(gaps[1:], bound[1:], strict=True))
    pos = [(math.log(w), math.log(g - noise_mean)) for w, g in zip(widths, gaps, strict=True) if g > noise_mean]
    slope = None
    if len(pos) >= 2:
        xs, ys = np.array(pos).T
        slope = float(np.polyfit(xs, ys, 1)[0])
    return {"bound": bound, "within": bool(within), "slope": slope}


def bound_summary(t: PairedT, per_seed: list[float]) -> dict[str, Any]:
    """A paired-t result over replicates as the record holds it."""
    return {
        "mean": float(t.mean),
        "ci_low": float(t.ci_low),
        "ci_high": float(t.ci_high),
        "lower_bound": float(t.lower),
        "per_seed": per_seed,
    }


def _paired(x: list[float], y: list[float], config: UVUConfig) -> tuple[PairedT, dict[str, Any]]:
    t = paired_t(np.asarray(x), np.asarray(y), level=config.confidence, confidence=config.confidence)
    return t, bound_summary(t, [float(a - b) for a, b in zip(x, y, strict=True)])


def gates(m: Measurements, config: UVUConfig) -> list[Gate]:
    """The two gates of the module docstring."""
    value_ok = (
        m.ntk_value_error is not None
        and m.ntk_value_scale is not None
        and m.ntk_value_error <= config.ntk_value_tolerance * m.ntk_value_scale
    )
    ref_gain, ref_detail = _paired(m.auc[m.reference], m.base_success, config)
    return [
        Gate(
            "ntk_ensemble_learned_values",
            value_ok,
            {
                "mean_abs_error_on_covered_futures": m.ntk_value_error,
                "mean_abs_q_on_covered_futures": m.ntk_value_scale,
                "relative_tolerance": config.ntk_value_tolerance,
            },
        ),
        Gate(
            "reference_beats_random_rejection",
            float(ref_gain.lower) > config.auc_tolerance,
            {"auc_reference_minus_base_success": ref_detail, "must_exceed": config.auc_tolerance},
        ),
    ]


def _ntk_part(m: Measurements, config: UVUConfig) -> dict[str, Any]:
    rate = ntk_rate_check(
        m.ntk_widths, m.ntk_gap, m.ntk_noise_mean, m.ntk_noise_quantile, exponent=config.ntk_width_exponent
    )
    held = m.ntk_gap[-1] <= m.ntk_noise_quantile and m.ntk_gap[-1] < m.ntk_gap[0] and rate["within"]
    return {
        "ntk_gap_largest_width": m.ntk_gap[-1],
        "ntk_gap_smallest_width": m.ntk_gap[0],
        "ntk_sampling_gap_at_quantile": m.ntk_noise_quantile,
        "ntk_rate_bound": rate["bound"],
        "ntk_rate_within": rate["within"],
        "ntk_excess_log_slope": rate["slope"],
        "ntk_held": bool(held),
        "ntk_rnd_gap_largest_width": m.ntk_rnd_gap,
        # the control: the myopic γ = 0 estimator must not pass the test UVU passes
        "ntk_rnd_matches": bool(m.ntk_rnd_gap <= m.ntk_noise_quantile),
    }


def _rejection_part(m: Measurements, config: UVUConfig) -> dict[str, Any]:
    ref = m.reference
    diff, diff_detail = _paired(m.auc["UVU"], m.auc[ref], config)
    rnd, rnd_detail = _paired(m.auc["RND"], m.auc[ref], config)
    param_ratio = m.params["UVU"] / m.params[ref]
    # counted multiply-adds per training transition (iclr26.uvu.cost): a function of the network sizes only
    update_ratio = m.update_macs["UVU"] / m.update_macs[ref]
    matches = float(diff.lower) >= -config.auc_tolerance
    cheaper = param_ratio <= config.max_compute_fraction and update_ratio <= config.max_compute_fraction
    return {
        "rejection_seeds": len(m.base_success),
        "auc_uvu": float(np.mean(m.auc["UVU"])),
        f"auc_{ref.replace('-', '_')}": float(np.mean(m.auc[ref])),
        "auc_rnd": float(np.mean(m.auc["RND"])),
        "auc_shortfall_vs_largest_ensemble": float(-diff.mean),
        "auc_uvu_minus_largest_ensemble": diff_detail,
        "auc_rnd_minus_largest_ensemble": rnd_detail,
        "auc_per_seed": {"UVU": m.auc["UVU"], ref: m.auc[ref], "RND": m.auc["RND"]},
        "param_ratio_uvu_over_ensemble": param_ratio,
        "update_macs_uvu": m.update_macs["UVU"],
        f"update_macs_{ref.replace('-', '_')}": m.update_macs[ref],
        "update_macs_ratio_uvu_over_ensemble": update_ratio,
        "query_macs_ratio_uvu_over_ensemble": m.query_macs["UVU"] / m.query_macs[ref],
        "rejection_held": bool(matches and cheaper),
        # the control: the myopic RND must not match the reference under the same bound
        "rejection_rnd_matches": bool(float(rnd.lower) >= -config.auc_tolerance),
    }


def verdict(m: Measurements, config: UVUConfig) -> Verdict:
    """The claim check (module docstring).

    Args:
        m: the NTK gaps, the rejection AUCs per replicate and the counted costs.
        config: the thresholds (``ntk_noise_quantile``, ``ntk_width_exponent``, ``ntk_value_tolerance``,
            ``auc_tolerance``, ``confidence``, ``max_compute_fraction``).

    Returns:
        The :class:`~iclr26.common.verdict.Verdict`; its evidence holds both parts, both controls and the
        thresholds with their sources.
    """
    ntk, rej = _ntk_part(m, config), _rejection_part(m, config)
    controls_fail = not ntk["ntk_rnd_matches"] and not rej["rejection_rnd_matches"]
    evidence = {**ntk, **rej, "controls_fail": controls_fail}
    evidence["thresholds"] = {name: threshold(config, name) for name in THRESHOLDS}
    diff = rej["auc_uvu_minus_largest_ensemble"]
    measurement = (
        f"NTK gap UVU-vs-ensemble {m.ntk_gap[0]:.2f}→{m.ntk_gap[-1]:.2f} (width {m.ntk_widths[0]}→"
        f"{m.ntk_widths[-1]}; sampling-noise {100 * config.ntk_noise_quantile:g}th pct {m.ntk_noise_quantile:.2f}; "
        f"width^-{config.ntk_width_exponent:g} bound {'met' if ntk['ntk_rate_within'] else 'missed'}; RND control "
        f"{m.ntk_rnd_gap:.2f}); GoToDoor rejection AUC over {rej['rejection_seeds']} seeds UVU {rej['auc_uvu']:.3f} "
        f"vs {m.reference} {np.mean(m.auc[m.reference]):.3f} vs RND {rej['auc_rnd']:.3f} (UVU - ensemble "
        f"{diff['mean']:+.3f}, {100 * config.confidence:g}% interval [{diff['ci_low']:+.3f}, {diff['ci_high']:+.3f}]; "
        f"RND bound {rej['auc_rnd_minus_largest_ensemble']['lower_bound']:+.3f}) at "
        f"{rej['param_ratio_uvu_over_ensemble']:.2f}x params, {rej['update_macs_ratio_uvu_over_ensemble']:.2f}x "
        "training multiply-adds per transition"
    )
    held = ntk["ntk_held"] and rej["rejection_held"] and controls_fail
    return Verdict.decide(gates(m, config), held=held, evidence=evidence, measurement=measurement, notes=_notes(config))


def _notes(config: UVUConfig) -> str:
    return (
        f"Part 1: one seed ({config.ntk_copies} copies per width). Part 2: {config.rejection_seeds} replicates, each "
        "with its own tasks, data and shared offline policy, so AUC differences within a replicate are uncertainty "
        f"quality only; the verdict reads one-sided {100 * config.confidence:g}% Student-t bounds over replicates. "
        "RND (myopic) is the control that must fail both tests. Compute is counted (multiply-adds from the network "
        "sizes); training times are in the record's timings and decide nothing."
    )
