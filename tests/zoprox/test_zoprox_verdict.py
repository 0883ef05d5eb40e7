"""The zoprox verdict through its public function, on synthetic per-seed numbers: each gate, the comparison and the
control that must fail can flip it."""

from __future__ import annotations

import dataclasses
import math

import pytest

from iclr26.zoprox.config import ZOProxConfig
from iclr26.zoprox.verdict import Measurements, budget_summary, log_ratios, query_ratios, tori_summary, verdict

CONFIG = ZOProxConfig()


def measured(**changes) -> Measurements:
    """Three seeds where the claim holds: RGO needs ~100x the steps, N = 1 chains have twice the mean KL."""
    base = Measurements(
        seeds=[0, 1000, 2000],
        zod_iters=[70, 80, 60],
        rgo_steps=[8000, 7600, None],
        rgo_steps_run=10_000,
        zod_queries=[140_000_000, 160_000_000, 120_000_000],
        rgo_queries=[12_000_000, 11_000_000, 14_000_000],
        kl_floor=[0.009, 0.010, 0.008],
        first_kl={"zod": [0.5, 0.6, 0.45], "rgo": [0.77, 0.8, 0.75]},
        mean_kl_interacting=[0.17, 0.19, 0.16],
        mean_kl_independent=[0.41, 0.43, 0.40],
        tori={"zod_t2_last_quarter": 0.06, "in_and_out_t2_max": 0.0, "t2_mass": 3 / 13},
        budget_w2={"gaussian": {"zod": 1.0, "rgo": 2.0, "rwm": 1.05, "zod_independent": 1.5}},
    )
    return dataclasses.replace(base, **changes)


def test_held_when_the_sampler_wins_and_the_control_fails():
    v = verdict(measured(), CONFIG)
    assert v.status == "held" and not v.failed_gates
    ratio = v.evidence["iteration_ratio"]
    # seed 2000: RGO never reached the level, its whole run (10000 steps) counts: 10000 / 60
    assert ratio["iteration_ratio_per_seed"] == pytest.approx([8000 / 70, 7600 / 80, 10_000 / 60])
    assert v.evidence["rgo_missed_level_per_seed"] == [False, False, True]
    geomean = math.exp(sum(map(math.log, ratio["iteration_ratio_per_seed"])) / 3)
    assert ratio["iteration_ratio_geomean"] == pytest.approx(geomean)
    low, high = ratio["iteration_ratio_ci95"]
    assert low < geomean < high
    assert set(v.evidence["gates"]) == {"kl_estimator_resolves_threshold", "samplers_start_above_threshold"}
    assert "3 seeds" in v.measurement


def test_a_failed_gate_gives_inconclusive():
    # exact samples scoring above the level: no sampler could be seen reaching it
    v = verdict(measured(kl_floor=[0.009, 0.06, 0.008]), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("kl_estimator_resolves_threshold",)
    # a sampler already at the level in its first window: "steps to the level" counts nothing
    v = verdict(measured(first_kl={"zod": [0.5, 0.04, 0.45], "rgo": [0.77, 0.8, 0.75]}), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("samplers_start_above_threshold",)


def test_the_control_passing_or_missing_changes_the_verdict():
    # the N = 1 ablation as good as the interacting sampler: the interaction is not what works
    v = verdict(measured(mean_kl_independent=[0.16, 0.20, 0.15]), CONFIG)
    assert v.status == "not held" and not v.evidence["control_n1_fails"]
    # without the control's numbers there is no verdict
    with pytest.raises(ValueError, match="mean_kl_independent"):
        verdict(measured(mean_kl_independent=[]), CONFIG)


def test_the_comparison_flips_the_verdict():
    # a geometric-mean ratio below the paper's 68: not held
    v = verdict(measured(rgo_steps=[3000, 3200, 2800]), CONFIG)
    assert v.status == "not held" and not v.evidence["fewer_iterations"]
    # ZOD-PS missing the level on one seed fails the claim (no ratio, no NaN in the record)
    m = measured(zod_iters=[70, None, 60], zod_queries=[140_000_000, None, 120_000_000])
    assert log_ratios(m) is None
    v = verdict(m, CONFIG)
    assert v.status == "not held" and v.evidence["iteration_ratio"] == {"zod_reached_on_every_seed": False}
    assert query_ratios(m)[1] is None and "missed the level" in v.measurement
    # one seed decides nothing: the interval needs two
    one = measured(
        seeds=[0],
        zod_iters=[70],
        rgo_steps=[8000],
        zod_queries=[1],
        rgo_queries=[1],
        kl_floor=[0.01],
        first_kl={"zod": [0.5], "rgo": [0.7]},
        mean_kl_interacting=[0.1],
        mean_kl_independent=[0.4],
    )
    v = verdict(one, CONFIG)
    assert v.status == "not held" and v.evidence["iteration_ratio"]["iteration_ratio_ci95"] is None


def test_the_query_ratio_stays_beside_the_verdict():
    # RGO spends fewer oracle queries to the level than ZOD-PS: reported, not judged (the paper claims iterations)
    v = verdict(measured(), CONFIG)
    assert v.evidence["query_ratio_per_seed"] == pytest.approx([12 / 140, 11 / 160, 14 / 120])
    assert v.status == "held" and "queries" in v.measurement


def test_a_wide_seed_spread_fails_even_when_the_mean_ratio_passes():
    # ratios 2, 10000 and 5000: geometric mean ~3400 > 68, but the lower confidence bound of the mean log ratio is
    # below 0 (log ratios 0.7, 9.2, 8.5; t_0.95,2 x se ~ 8): the sign is not established over three seeds
    v = verdict(measured(rgo_steps=[140, 800_000, 300_000], rgo_steps_run=1_000_000), CONFIG)
    ratio = v.evidence["iteration_ratio"]
    assert ratio["iteration_ratio_geomean"] > CONFIG.min_iteration_ratio
    assert ratio["iteration_ratio_lower_bound"] < 1 and v.status == "not held"


def test_tori_and_budget_are_judged_beside_the_verdict():
    config = ZOProxConfig(t2_min_fraction=0.02)
    tori = tori_summary({"zod_t2_last_quarter": 0.03, "in_and_out_t2_max": 0.0, "t2_mass": 3 / 13}, config)
    assert tori["held_reaches_both"] and tori["zod_t2_share_of_true_mass"] == pytest.approx(0.03 * 13 / 3)
    # In-and-Out reaching T2 once fails the contrast; the figure's 0.037 is not reached by 0.03
    assert not tori_summary({**tori, "in_and_out_t2_max": 0.02}, config)["held_reaches_both"]
    assert not tori_summary({**tori}, CONFIG)["held_reaches_both"]
    # W2 1.1 against 1.0 is within a 10% tolerance; 1.2 against 1.0 is not
    w2 = {"a": {"zod": 1.1, "rgo": 1.0, "rwm": 2.0, "zod_independent": 1.0}}
    b = budget_summary({**w2, "b": {"zod": 0.5, "rgo": 1.0, "rwm": 1.0, "zod_independent": 1.0}}, CONFIG)
    assert b["held_all"] and b["wins_vs_rgo"] == "2/2"
    b = budget_summary({**w2, "b": {"zod": 1.2, "rgo": 2.0, "rwm": 1.0, "zod_independent": 1.0}}, CONFIG)
    assert b["b"]["vs_rgo"] and not b["b"]["vs_rwm"] and not b["held_all"] and b["wins_vs_rwm"] == "1/2"
    # neither enters claim_held
    v = verdict(measured(tori={**tori, "in_and_out_t2_max": 0.5}), CONFIG)
    assert v.status == "held" and not v.evidence["tori"]["held_reaches_both"]
