"""The verdict on synthetic numbers: each gate, each part and each control can flip it; costs are counted, not timed.

The held case (``_held()``), by hand, with ``confidence`` 0.95 over 3 replicates (t_{0.95, 2} = 2.919986):

- NTK: gaps 0.8, 0.5, 0.4, 0.25 at widths 16..1024, noise mean 0.2, quantile 0.3; the width^-1/2 bounds are
  0.3 + 0.6 * sqrt(16 / w) = 0.9, 0.6, 0.45, 0.375: every gap within, and 0.25 <= 0.3 < 0.8. RND's gap 0.6 > 0.3:
  the control fails the test, as it must.
- rejection: UVU - ensemble per replicate +0.02, 0, -0.01 -> mean 0.00333, sd 0.01528, lower bound
  0.00333 - 2.92 * 0.01528 / sqrt(3) = -0.0224 >= -0.03; RND - ensemble -0.07, -0.10, -0.05 -> lower bound -0.115
  < -0.03: the control fails; ensemble - base success 0.18, 0.24, 0.18 -> lower bound 0.142 > 0.03: the gate passes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from iclr26.uvu.config import UVUConfig
from iclr26.uvu.verdict import Measurements, ntk_rate_check, verdict

REF = "ensemble-3"  # the smoke preset's largest ensemble
T_95_2 = 2.919986  # one-sided 95% Student-t quantile with 2 degrees of freedom


def _held(**changes) -> Measurements:
    m = Measurements(
        ntk_widths=[16, 64, 256, 1024],
        ntk_gap=[0.8, 0.5, 0.4, 0.25],
        ntk_noise_mean=0.2,
        ntk_noise_quantile=0.3,
        ntk_rnd_gap=0.6,
        ntk_value_error=1e-4,
        ntk_value_scale=0.5,
        auc={"UVU": [0.45, 0.62, 0.47], REF: [0.43, 0.62, 0.48], "RND": [0.36, 0.52, 0.43]},
        base_success=[0.25, 0.38, 0.30],
        reference=REF,
        params={"UVU": 200, REF: 1000},
        update_macs={"UVU": 400, REF: 1000},
        query_macs={"UVU": 100, REF: 300},
    )
    return dataclasses.replace(m, **changes)


def _config(**changes) -> UVUConfig:
    return dataclasses.replace(UVUConfig.preset("smoke"), **changes)


def test_held_when_both_parts_hold_and_both_controls_fail():
    v = verdict(_held(), _config())
    assert v.status == "held" and v.failed_gates == ()
    ev = v.evidence
    assert ev["ntk_held"] and ev["rejection_held"] and ev["controls_fail"]
    assert not ev["ntk_rnd_matches"] and not ev["rejection_rnd_matches"]
    assert ev["ntk_rate_bound"] == pytest.approx([0.9, 0.6, 0.45, 0.375])
    diff = ev["auc_uvu_minus_largest_ensemble"]
    assert diff["per_seed"] == pytest.approx([0.02, 0.0, -0.01])
    sd = np.std([0.02, 0.0, -0.01], ddof=1)
    assert diff["lower_bound"] == pytest.approx(0.02 / 6 - T_95_2 * sd / np.sqrt(3), abs=1e-6)
    gate = ev["gates"]["reference_beats_random_rejection"]
    assert gate["auc_reference_minus_base_success"]["per_seed"] == pytest.approx([0.18, 0.24, 0.18])
    assert set(ev["thresholds"]) == {
        "ntk_noise_quantile",
        "ntk_width_exponent",
        "ntk_value_tolerance",
        "auc_tolerance",
        "confidence",
        "max_compute_fraction",
    }
    assert "RND control 0.60" in v.measurement and "0.40x training multiply-adds" in v.measurement


@pytest.mark.parametrize(
    ("changes", "flag"),
    [
        ({"ntk_rnd_gap": 0.28}, "ntk_rnd_matches"),  # RND's γ = 0 error within the noise of the ensemble variance
        (
            {"auc": {"UVU": [0.45, 0.62, 0.47], REF: [0.43, 0.62, 0.48], "RND": [0.44, 0.61, 0.49]}},
            "rejection_rnd_matches",
        ),
    ],
    ids=["ntk-control", "rejection-control"],
)
def test_a_control_that_passes_makes_the_claim_not_held(changes, flag):
    """If the myopic RND passes the test UVU passes, the test cannot tell UVU's propagated uncertainty apart."""
    v = verdict(_held(**changes), _config())
    assert v.status == "not held" and v.evidence[flag] is True and v.evidence["controls_fail"] is False
    assert v.evidence["ntk_held"] and v.evidence["rejection_held"]  # only the control changed


@pytest.mark.parametrize(
    ("changes", "gate"),
    [
        ({"ntk_value_error": 0.1}, "ntk_ensemble_learned_values"),  # 0.1 > 0.05 * 0.5
        ({"ntk_value_error": None, "ntk_value_scale": None}, "ntk_ensemble_learned_values"),  # no covered future
        ({"base_success": [0.42, 0.60, 0.47]}, "reference_beats_random_rejection"),  # ensemble ~ random ranking
        (
            {"base_success": [0.0, 0.0, 0.0], "auc": {"UVU": [0.0] * 3, REF: [0.0] * 3, "RND": [0.0] * 3}},
            "reference_beats_random_rejection",
        ),  # the policy solved no test task: nothing to rank
    ],  # fmt: skip
    ids=["values-not-learned", "no-covered-future", "reference-at-random", "policy-solved-nothing"],
)
def test_a_failed_gate_gives_inconclusive_naming_it(changes, gate):
    v = verdict(_held(**changes), _config())
    assert v.status == "inconclusive" and v.failed_gates == (gate,)
    assert f"gate failed: {gate}" in v.measurement


def test_a_random_ranking_cannot_pass():
    """The laziest estimator, a constant uncertainty, ranks tasks at random: its AUC is the base success rate."""
    lazy = _held(auc={"UVU": [0.25, 0.38, 0.30], REF: [0.43, 0.62, 0.48], "RND": [0.36, 0.52, 0.43]})
    v = verdict(lazy, _config())
    assert v.status == "not held" and v.evidence["rejection_held"] is False


@pytest.mark.parametrize(
    ("uvu_macs", "held"),
    [
        (400, "held"),  # 0.4x the multiply-adds
        (600, "not held"),  # 0.6x > max_compute_fraction 0.5
        (500, "held"),  # exactly 0.5: held (at most)
    ],
)
def test_verdict_rests_on_counted_cost(uvu_macs, held):
    v = verdict(_held(update_macs={"UVU": uvu_macs, REF: 1000}), _config())
    assert v.status == held
    assert v.evidence["update_macs_ratio_uvu_over_ensemble"] == pytest.approx(uvu_macs / 1000)
    assert not any("time" in key for key in v.evidence)


def test_more_parameters_than_the_fraction_is_not_held():
    v = verdict(_held(params={"UVU": 600, REF: 1000}), _config())
    assert v.status == "not held" and v.evidence["param_ratio_uvu_over_ensemble"] == pytest.approx(0.6)


def test_verdict_uses_the_configured_tolerances():
    strict = verdict(_held(), _config(auc_tolerance=0.005))  # lower bound -0.0224 < -0.005
    assert strict.status == "not held" and strict.evidence["rejection_held"] is False
    assert strict.evidence["thresholds"]["auc_tolerance"]["value"] == 0.005
    # a noise quantile of 0.1 fails part 1: the gap 0.25 at the largest width exceeds it
    assert verdict(_held(ntk_noise_quantile=0.1, ntk_rnd_gap=0.6), _config()).status == "not held"


def test_rejection_verdict_rests_on_the_bound_over_replicates():
    """UVU - ensemble AUC per replicate +0.01, -0.02, -0.05 -> mean -0.02, sd 0.03, se 0.01732; lower bound
    -0.02 - 2.919986 * 0.01732 = -0.070575. The mean shortfall 0.02 is within auc_tolerance 0.03, the bound is
    not: not held. With tolerance 0.08: held (the gate's ensemble gain, lower bound 0.142, still exceeds 0.08)."""
    m = _held(auc={"UVU": [0.44, 0.60, 0.43], REF: [0.43, 0.62, 0.48], "RND": [0.30, 0.45, 0.33]})
    v = verdict(m, _config())
    diff = v.evidence["auc_uvu_minus_largest_ensemble"]
    assert diff["per_seed"] == pytest.approx([0.01, -0.02, -0.05])
    assert diff["mean"] == pytest.approx(-0.02)
    assert diff["lower_bound"] == pytest.approx(-0.02 - T_95_2 * 0.03 / np.sqrt(3), abs=1e-6)
    assert v.evidence["auc_shortfall_vs_largest_ensemble"] == pytest.approx(0.02)
    assert v.status == "not held" and v.evidence["rejection_held"] is False
    assert verdict(m, _config(auc_tolerance=0.08)).status == "held"


def test_ntk_rate_check_by_hand():
    """Widths 16, 64, 256, 1024; noise mean 0.2, quantile 0.3; gap 0.8 at width 16 -> excess 0.6. With exponent 1/2
    the bound at width w is 0.3 + 0.6 * sqrt(16 / w): 0.9, 0.6, 0.45, 0.375."""
    widths = [16, 64, 256, 1024]
    good = ntk_rate_check(widths, [0.8, 0.5, 0.4, 0.25], 0.2, 0.3, exponent=0.5)
    assert good["bound"] == pytest.approx([0.9, 0.6, 0.45, 0.375])
    assert good["within"] is True
    # excesses 0.6, 0.3, 0.2, 0.05 over log widths: the least-squares slope of log excess
    x = np.log(widths)
    y = np.log([0.6, 0.3, 0.2, 0.05])
    assert good["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    # a gap that stalls above the predicted trend (0.5 at width 256 > 0.45) misses it
    stalled = ntk_rate_check(widths, [0.8, 0.5, 0.5, 0.25], 0.2, 0.3, exponent=0.5)
    assert stalled["within"] is False
    # a smallest width already at the noise level: the bound is the noise quantile itself
    flat = ntk_rate_check(widths, [0.1, 0.15, 0.31, 0.2], 0.2, 0.3, exponent=0.5)
    assert flat["bound"] == pytest.approx([0.3] * 4) and flat["within"] is False and flat["slope"] is None


def test_ntk_verdict_needs_the_width_rate():
    """Widths 16, 64, 1024, gaps 0.8, 0.7, 0.2, noise mean 0.2 and quantile 0.3: 0.2 <= 0.3 and 0.2 < 0.8, but at
    width 64 the width^-1/2 bound is 0.3 + 0.6 * sqrt(16/64) = 0.6 < 0.7, so part 1 fails. With a slower predicted
    rate (exponent 0.1: 0.3 + 0.6 * 4^-0.1 = 0.8223) the same gaps hold."""
    three = _held(ntk_widths=[16, 64, 1024], ntk_gap=[0.8, 0.7, 0.2])
    v = verdict(three, _config())
    assert v.evidence["ntk_rate_bound"][1] == pytest.approx(0.6)
    assert v.evidence["ntk_rate_within"] is False and v.evidence["ntk_held"] is False and v.status == "not held"
    assert "width^-0.5 bound missed" in v.measurement
    slow = verdict(three, _config(ntk_width_exponent=0.1))
    assert slow.evidence["ntk_rate_bound"][1] == pytest.approx(0.3 + 0.6 * 4**-0.1)
    assert slow.evidence["ntk_held"] is True and slow.status == "held"
