"""The verdict of the reproduction: decided by AUC, parameters and counted multiply-adds, never by a time."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pytest

from iclr26.common.experiment import RunContext
from iclr26.uvu import experiment
from iclr26.uvu.cost import CountedCost
from iclr26.uvu.experiment import UVUConfig
from iclr26.uvu.studies import MethodScore, NTKStudy, RejectionStudy


@pytest.fixture(autouse=True)
def _close_figures():
    """``run`` registers its figures with the context; without the runner nobody saves and closes them."""
    yield
    plt.close("all")


def _ntk() -> NTKStudy:
    """Gap 0.8 -> 0.2 under a sampling bound of 0.3: part 1 holds."""
    m = np.array([0.1, 0.2, 0.3])
    return NTKStudy(
        widths=[8, 32],
        gap=[0.8, 0.2],
        gap_uvu_theory=[0.2, 0.1],
        gap_ensemble_theory=[0.9, 0.1],
        mean_ratio=[0.5, 0.9],
        spearman=[0.9, 0.95],
        residual=[(1e-3, 1e-3), (1e-4, 1e-4)],
        noise_gap_mean=0.2,
        noise_gap_quantile=0.3,
        steps=10,
        theory=m,
        ensemble=m,
        uvu_half=m,
        rnd_half=m,
        categories=np.array([0, 1, 2]),
        q_true=m,
        ensemble_mean=m,
    )


def _method(name: str, auc: float, params: int, update_macs: int, time_s: float) -> MethodScore:
    return MethodScore(
        name=name,
        uncertainty=np.array([0.1, 0.2, 0.3, 0.4]),
        curve=np.array([0.5, 0.6]),
        auc=auc,
        spearman=0.5,
        trained_params=params,
        total_params=params,
        cost=CountedCost(update_macs=update_macs, query_macs=update_macs // 3),
        train_time_s=time_s,
        train_wall_time_s=time_s,
    )


def _rejection(uvu_macs: int, uvu_time: float, ensemble_time: float) -> RejectionStudy:
    methods = [
        _method("UVU", 0.44, 200, uvu_macs, uvu_time),
        _method("ensemble-2", 0.40, 200, 400, ensemble_time),
        _method("ensemble-3", 0.45, 1000, 1000, ensemble_time),
        _method("RND", 0.38, 200, 300, uvu_time),
    ]
    return RejectionStudy(
        fractions=np.array([0.0, 0.5]),
        methods=methods,
        oracle_curve=np.array([0.5, 1.0]),
        oracle_auc=0.7,
        base_success=0.5,
        group_names=["seen", "new"],
        groups=np.array([0, 0, 1, 1]),
        success=np.array([1.0, 0.0, 1.0, 0.0]),
        value_error=np.array([0.1, 0.2, 0.3, 0.4]),
        transitions=8,
        auc_difference_ci=(-0.02, 0.01),
        dqn_time_s=1.0,
        time_basis="process CPU time",
    )


@pytest.mark.parametrize(
    ("uvu_macs", "uvu_time", "ensemble_time", "held"),
    [
        (400, 9.0, 1.0, True),  # 0.4x the multiply-adds: held, although UVU's time was 9x the ensemble's
        (600, 0.1, 9.0, False),  # 0.6x the multiply-adds: not held, although UVU's time was 1/90 of it
        (500, 5.0, 1.0, True),  # exactly max_compute_fraction = 0.5: held (at most)
    ],
)
def test_verdict_rests_on_counted_cost_not_time(tmp_path, monkeypatch, uvu_macs, uvu_time, ensemble_time, held):
    config = UVUConfig.preset("smoke")
    monkeypatch.setattr(experiment, "ntk_study", lambda config, ctx: _ntk())
    monkeypatch.setattr(
        experiment, "rejection_study", lambda config, ctx: _rejection(uvu_macs, uvu_time, ensemble_time)
    )
    out = experiment.run(config, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    ev = out.evidence
    # AUC shortfall 0.45 - 0.44 = 0.01 <= 0.03 and params 200 / 1000 = 0.2 <= 0.5: only the MACs decide here
    assert ev["auc_shortfall_vs_largest_ensemble"] == pytest.approx(0.01)
    assert ev["param_ratio_uvu_over_ensemble"] == pytest.approx(0.2)
    assert ev["update_macs_ratio_uvu_over_ensemble"] == pytest.approx(uvu_macs / 1000)
    assert ev["ntk_held"] is True
    assert ev["rejection_held"] is held and out.claim_held is held
    assert out.timings["time_ratio_uvu_over_largest_ensemble"] == pytest.approx(uvu_time / ensemble_time)
    assert f"{uvu_macs / 1000:.2f}x training multiply-adds" in out.measurement


def test_verdict_uses_the_configured_tolerances(tmp_path, monkeypatch):
    monkeypatch.setattr(experiment, "ntk_study", lambda config, ctx: _ntk())
    monkeypatch.setattr(experiment, "rejection_study", lambda config, ctx: _rejection(400, 1.0, 1.0))
    strict = dataclasses.replace(UVUConfig.preset("smoke"), auc_tolerance=0.005)  # shortfall 0.01 > 0.005
    out = experiment.run(strict, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert out.evidence["rejection_held"] is False
    assert out.evidence["thresholds"]["auc_tolerance"]["value"] == 0.005
    # the NTK gap 0.2 must not exceed the sampling bound 0.3 and must fall: a bound of 0.1 fails part 1
    monkeypatch.setattr(
        experiment, "ntk_study", lambda config, ctx: dataclasses.replace(_ntk(), noise_gap_quantile=0.1)
    )
    out = experiment.run(UVUConfig.preset("smoke"), RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert out.evidence["ntk_held"] is False and out.claim_held is False


def test_measurement_says_when_the_rejection_auc_is_not_informative(tmp_path, monkeypatch):
    failed = dataclasses.replace(_rejection(400, 1.0, 1.0), success=np.zeros(4), base_success=0.0, oracle_auc=0.0)
    monkeypatch.setattr(experiment, "ntk_study", lambda config, ctx: _ntk())
    monkeypatch.setattr(experiment, "rejection_study", lambda config, ctx: failed)
    out = experiment.run(UVUConfig.preset("smoke"), RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert "rejection AUC not informative (the policy solved 0/4 test tasks)" in out.measurement
    assert "UVU 0.440" not in out.measurement
