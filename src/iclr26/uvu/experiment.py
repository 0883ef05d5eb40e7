"""Reproduction of UVU (ICLR 2026, arXiv 2505.21119): `iclr26 run uvu --scale smoke|cpu|gpu`.

Two studies, each a sequence of units of work (:mod:`iclr26.uvu.studies`), then the pure verdict
(:func:`iclr26.uvu.verdict.verdict`):

1. **NTK claim.** On a random finite MDP with partial data, ``½ E[ε²]`` of wide UVU models approaches the variance
   of an ensemble of independently initialised TD value functions as the width grows (paper §4; the factor ½ is
   derived in :mod:`iclr26.uvu.ntk`); RND, trained on the same target with γ = 0, is the myopic control.
2. **Task rejection**, ``rejection_seeds`` replicates. Multi-task offline RL on minigrid GoToDoor: one shared
   offline UVFA per replicate; UVU, ensembles of several sizes and RND each estimate the uncertainty of its policy
   at every test task's start, and are scored by the area under the success-vs-rejection curve, parameters and
   counted training multiply-adds per transition (:mod:`iclr26.uvu.cost`). Training times (process CPU time and
   wall time) are recorded under the record's ``timings``; they decide nothing, since they move between identical
   runs.

Every network and batch lives on ``ctx.device``; the trainers take ``ctx.world`` (data parallel under torchrun).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.uvu.config import UVUConfig
from iclr26.uvu.figures import plot_compute, plot_ntk_gap, plot_ntk_points, plot_rejection
from iclr26.uvu.studies import (
    COVERED,
    MethodScore,
    NTKStudy,
    RejectionStudy,
    ntk_study,
    rejection_study,
    symmetric_gap,
)
from iclr26.uvu.verdict import Measurements, verdict


def ntk_metrics(study: NTKStudy) -> dict[str, Any]:
    cats = study.categories

    def by_category(values: np.ndarray) -> dict[str, float]:
        names = ("future_covered", "future_missing", "not_in_data")
        return {names[c]: float(values[cats == c].mean()) for c in range(3) if (cats == c).any()}

    return {
        "widths": study.widths,
        "gap_uvu_vs_ensemble": study.gap,
        "gap_uvu_vs_limit": study.gap_uvu_theory,
        "gap_ensemble_vs_limit": study.gap_ensemble_theory,
        "mean_ratio_uvu_half_over_ensemble": study.mean_ratio,
        "spearman_uvu_vs_ensemble": study.spearman,
        "max_td_residual_ensemble": [r[0] for r in study.residual],
        "max_td_residual_uvu": [r[1] for r in study.residual],
        "sampling_gap_mean": study.noise_gap_mean,
        "sampling_gap_at_quantile": study.noise_gap_quantile,
        "gd_steps": study.steps,
        "mean_uncertainty_by_category_largest_width": {
            "limit_variance": by_category(study.theory),
            "ensemble_variance": by_category(study.ensemble),
            "uvu_half_eps2": by_category(study.uvu_half),
            "rnd_half_err2": by_category(study.rnd_half),
        },
        "points_per_category": {
            n: int((cats == c).sum()) for c, n in enumerate(("future_covered", "future_missing", "not_in_data"))
        },
        # None (not 0) when no point has a covered future: there is nothing to compare
        "ensemble_mean_abs_error_on_covered_futures": float(
            np.abs(study.ensemble_mean - study.q_true)[cats == 0].mean()
        )
        if (cats == 0).any()
        else None,
    }


def rejection_metrics(study: RejectionStudy) -> dict[str, Any]:
    per_group_success = {
        name: float(study.success[study.groups == g].mean()) for g, name in enumerate(study.group_names)
    }
    # Undefined quantities are recorded as None, never as a number: the normalised AUC when the oracle cannot beat
    # random rejection (every test task succeeded, or every one failed), Spearman when a side is constant.
    headroom = study.oracle_auc - study.base_success
    methods = {}
    for m in study.methods:
        ranks = np.argsort(np.argsort(m.uncertainty, kind="stable"), kind="stable") / max(1, len(m.uncertainty) - 1)
        methods[m.name] = {
            "auc": m.auc,
            "normalised_auc": (m.auc - study.base_success) / headroom if headroom > 0 else None,
            "spearman_vs_value_error": m.spearman if np.isfinite(m.spearman) else None,
            "trained_params": m.trained_params,
            "total_params": m.total_params,
            "update_macs_per_transition": m.cost.update_macs,
            "query_macs": m.cost.query_macs,
            "mean_uncertainty_rank_by_group": {
                name: float(ranks[study.groups == g].mean()) for g, name in enumerate(study.group_names)
            },
            "curve": [float(v) for v in m.curve],
        }
    return {
        "transitions": study.transitions,
        "base_success": study.base_success,
        "success_by_group": per_group_success,
        "oracle_auc": study.oracle_auc,
        "mean_value_error": float(study.value_error.mean()),
        "rejection_fractions": [float(f) for f in study.fractions],
        "methods": methods,
        "auc_uvu_minus_largest_ensemble_ci90": list(study.auc_difference_ci),
    }


def timings_of(study: RejectionStudy, largest: MethodScore) -> dict[str, Any]:
    """Training times of the rejection study: measured and recorded, never part of the verdict."""
    uvu = study.methods[0]
    return {
        "train_time_basis": study.time_basis,
        "dqn_train_wall_time_s": study.dqn_time_s,
        "train_time_s": {m.name: m.train_time_s for m in study.methods},
        "train_wall_time_s": {m.name: m.train_wall_time_s for m in study.methods},
        "time_ratio_uvu_over_largest_ensemble": uvu.train_time_s / largest.train_time_s,
        "wall_time_ratio_uvu_over_largest_ensemble": uvu.train_wall_time_s / largest.train_wall_time_s,
    }


def measurements(config: UVUConfig, ntk: NTKStudy, studies: list[RejectionStudy]) -> Measurements:
    """The plain numbers the verdict reads, from the NTK study and the rejection replicates."""
    ref = config.reference
    covered = ntk.categories == COVERED
    picks = [{m.name: m for m in st.methods} for st in studies]
    first = picks[0]
    return Measurements(
        ntk_widths=list(ntk.widths),
        ntk_gap=list(ntk.gap),
        ntk_noise_mean=ntk.noise_gap_mean,
        ntk_noise_quantile=ntk.noise_gap_quantile,
        ntk_rnd_gap=symmetric_gap(ntk.rnd_half, ntk.ensemble),
        ntk_value_error=float(np.abs(ntk.ensemble_mean - ntk.q_true)[covered].mean()) if covered.any() else None,
        ntk_value_scale=float(np.abs(ntk.q_true)[covered].mean()) if covered.any() else None,
        auc={name: [p[name].auc for p in picks] for name in ("UVU", ref, "RND")},
        base_success=[st.base_success for st in studies],
        reference=ref,
        params={name: first[name].total_params for name in ("UVU", ref)},
        update_macs={name: first[name].cost.update_macs for name in ("UVU", ref)},
        query_macs={name: first[name].cost.query_macs for name in ("UVU", ref)},
    )


def run(config: UVUConfig, ctx: RunContext) -> Outcome:
    """Run both studies (the rejection study once per replicate), plot them and judge the claim."""
    ntk = ntk_study(config, ctx)
    ctx.save_plot(plot_ntk_gap(ntk, quantile=config.ntk_noise_quantile), "ntk_gap_vs_width.png")
    ctx.save_plot(plot_ntk_points(ntk), "ntk_points.png")
    studies = [rejection_study(config, ctx, replicate=j) for j in range(config.rejection_seeds)]
    ctx.save_plot(plot_rejection(studies[0]), "rejection_curves.png")
    ctx.save_plot(plot_compute(studies[0]), "compute.png")
    m = measurements(config, ntk, studies)
    metrics = {"ntk": ntk_metrics(ntk), "rejection": [rejection_metrics(st) for st in studies]}
    metrics["ntk"]["gap_rnd_vs_ensemble_largest_width"] = m.ntk_rnd_gap
    metrics["ntk"]["mean_abs_q_on_covered_futures"] = m.ntk_value_scale

    def reference(study: RejectionStudy) -> MethodScore:
        return next(s for s in study.methods if s.name == config.reference)

    timings = timings_of(studies[0], reference(studies[0]))
    timings["replicates"] = [timings_of(st, reference(st)) for st in studies[1:]]
    return Outcome.of(verdict(m, config), metrics=metrics, timings=timings)


EXPERIMENT = Experiment(config_cls=UVUConfig, run=run, data_parallel=True)
