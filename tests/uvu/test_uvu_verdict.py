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
        experiment, "rejection_study", lambda config, ctx, replicate=0: _rejection(uvu_macs, uvu_time, ensemble_time)
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
    monkeypatch.setattr(experiment, "rejection_study", lambda config, ctx, replicate=0: _rejection(400, 1.0, 1.0))
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
    monkeypatch.setattr(experiment, "rejection_study", lambda config, ctx, replicate=0: failed)
    out = experiment.run(UVUConfig.preset("smoke"), RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert "rejection AUC not informative (the policy solved 0/4, 0/4 test tasks)" in out.measurement
    assert "UVU 0.440" not in out.measurement


def test_rejection_verdict_rests_on_the_bound_over_replicates(tmp_path, monkeypatch):
    """Issue 17: the rejection verdict reads the one-sided Student-t bound over replicates, not one seed.

    UVU - ensemble AUC per replicate: +0.01, -0.02, -0.05 -> mean -0.02, sd = sqrt((0.03² + 0 + 0.03²) / 2) = 0.03,
    se = 0.03 / sqrt(3) = 0.01732; t_{0.95, 2} = 2.919986 -> lower bound -0.02 - 0.050575 = -0.070575. The mean
    shortfall 0.02 is within auc_tolerance = 0.03, but the bound is not: not held. With tolerance 0.08: held."""
    shifts = {0: 0.01, 1: -0.02, 2: -0.05}

    def study(config, ctx, replicate=0):
        base = _rejection(400, 1.0, 1.0)
        methods = [dataclasses.replace(base.methods[0], auc=0.45 + shifts[replicate]), *base.methods[1:]]
        return dataclasses.replace(base, methods=methods)

    monkeypatch.setattr(experiment, "ntk_study", lambda config, ctx: _ntk())
    monkeypatch.setattr(experiment, "rejection_study", study)
    config = dataclasses.replace(UVUConfig.preset("smoke"), rejection_seeds=3)
    out = experiment.run(config, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    diff = out.evidence["auc_uvu_minus_largest_ensemble"]
    assert diff["per_seed"] == pytest.approx([0.01, -0.02, -0.05])
    assert diff["mean"] == pytest.approx(-0.02)
    assert diff["lower_bound"] == pytest.approx(-0.02 - 2.919986 * 0.03 / np.sqrt(3), abs=1e-6)
    assert out.evidence["auc_shortfall_vs_largest_ensemble"] == pytest.approx(0.02)
    assert out.evidence["rejection_held"] is False
    loose = dataclasses.replace(config, auc_tolerance=0.08)
    assert experiment.run(loose, RunContext(out_dir=tmp_path, seed=0, quiet=True)).evidence["rejection_held"] is True


def test_ntk_rate_check_by_hand():
    """Widths 16, 64, 256, 1024; noise mean 0.2, quantile 0.3; gap 0.8 at width 16 -> excess 0.6. With exponent 1/2
    the bound at width w is 0.3 + 0.6 * sqrt(16 / w): 0.9, 0.6, 0.45, 0.375."""
    widths = [16, 64, 256, 1024]
    good = experiment.ntk_rate_check(widths, [0.8, 0.5, 0.4, 0.25], 0.2, 0.3, exponent=0.5)
    assert good["bound"] == pytest.approx([0.9, 0.6, 0.45, 0.375])
    assert good["within"] is True
    # excesses 0.6, 0.3, 0.2, 0.05 over log widths: the least-squares slope of log excess
    x = np.log(widths)
    y = np.log([0.6, 0.3, 0.2, 0.05])
    assert good["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    # a gap that stalls above the predicted trend (0.5 at width 256 > 0.45) misses it
    stalled = experiment.ntk_rate_check(widths, [0.8, 0.5, 0.5, 0.25], 0.2, 0.3, exponent=0.5)
    assert stalled["within"] is False
    # a smallest width already at the noise level: the bound is the noise quantile itself
    flat = experiment.ntk_rate_check(widths, [0.1, 0.15, 0.31, 0.2], 0.2, 0.3, exponent=0.5)
    assert flat["bound"] == pytest.approx([0.3] * 4) and flat["within"] is False and flat["slope"] is None


def test_ntk_verdict_needs_the_width_rate(tmp_path, monkeypatch):
    """Widths 16, 64, 1024, gaps 0.8, 0.7, 0.2, noise mean 0.2 and quantile 0.3: the old rule holds (0.2 <= 0.3 and
    0.2 < 0.8), but at width 64 the width^-1/2 bound is 0.3 + 0.6 * sqrt(16/64) = 0.6 < 0.7, so part 1 fails. With a
    slower predicted rate (exponent 0.1: 0.3 + 0.6 * 4^-0.1 = 0.8223) the same gaps hold."""
    three = dataclasses.replace(
        _ntk(),
        widths=[16, 64, 1024],
        gap=[0.8, 0.7, 0.2],
        gap_uvu_theory=[0.2, 0.1, 0.1],
        gap_ensemble_theory=[0.9, 0.5, 0.1],
        mean_ratio=[0.5, 0.7, 0.9],
        spearman=[0.9, 0.9, 0.95],
        residual=[(1e-3, 1e-3)] * 3,
    )
    monkeypatch.setattr(experiment, "rejection_study", lambda config, ctx, replicate=0: _rejection(400, 1.0, 1.0))
    monkeypatch.setattr(experiment, "ntk_study", lambda config, ctx: three)
    out = experiment.run(UVUConfig.preset("smoke"), RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert out.evidence["ntk_rate_bound"][1] == pytest.approx(0.6)
    assert out.evidence["ntk_rate_within"] is False and out.evidence["ntk_held"] is False
    assert "width^-0.5 bound missed" in out.measurement
    slow = dataclasses.replace(UVUConfig.preset("smoke"), ntk_width_exponent=0.1)
    out = experiment.run(slow, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    assert out.evidence["ntk_rate_bound"][1] == pytest.approx(0.3 + 0.6 * 4**-0.1)
    assert out.evidence["ntk_held"] is True
