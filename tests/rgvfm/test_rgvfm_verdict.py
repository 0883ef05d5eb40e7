"""The RG-VFM verdict through its public function on synthetic coverages: the negative control gates it, each part
can flip it, and the budget sensitivity is computed from the curve; and the wiring of the arms it compares."""

from __future__ import annotations

import pytest
import torch

from iclr26.rgvfm import FLOW_SPECS, EndpointFlow, Sphere, TimeMLP, VelocityFlow, build_flow
from iclr26.rgvfm.config import CONTROL, RGVFMConfig
from iclr26.rgvfm.verdict import Measurements, verdict

CONFIG = RGVFMConfig()  # min_margin 1 point, confidence 0.95
GOOD = {
    "rgvfm": [84.0, 85.0, 83.0, 86.0, 84.0],
    "rfm": [66.0, 68.0, 67.0, 65.0, 66.0],
    "vfm": [79.0, 78.0, 80.0, 81.0, 83.0],
    CONTROL: [40.0, 42.0, 38.0, 41.0, 39.0],
}


def test_held_when_both_parts_pass_and_the_control_fails():
    v = verdict(Measurements(GOOD), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    gate = v.evidence["gates"]["placebo_fails"]
    assert gate["passed"] and not gate["vs_rfm_passes"] and gate["vs_rfm_mean"] == pytest.approx(-26.4)
    assert v.evidence["part2_rgvfm_vs_best_euclidean"]["baseline"] == "vfm"  # the one Euclidean arm trained


def test_a_control_that_beats_rfm_makes_the_test_bed_inconclusive():
    # A model that cannot know where on the path it is scores as well as RG-VFM-M: the metric cannot tell a
    # working flow from a broken one, so neither can the comparison.
    v = verdict(Measurements(GOOD | {CONTROL: GOOD["rgvfm"]}), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("placebo_fails",)
    assert "gate failed: placebo_fails" in v.measurement


def test_removing_the_control_makes_the_verdict_inconclusive():
    without = {k: v for k, v in GOOD.items() if k != CONTROL}
    v = verdict(Measurements(without), CONFIG)
    assert v.status == "inconclusive" and v.evidence["gates"]["placebo_fails"]["trained"] is False


def test_each_part_can_flip_the_verdict():
    rfm_close = GOOD | {"rfm": [x - 0.5 for x in GOOD["rgvfm"]]}  # +0.5 points in every seed: below min_margin
    assert verdict(Measurements(rfm_close), CONFIG).status == "not held"
    vfm_ahead = GOOD | {"vfm": [x + 2 for x in GOOD["rgvfm"]]}
    v = verdict(Measurements(vfm_ahead), CONFIG)
    assert v.status == "not held" and not v.evidence["part2_rgvfm_vs_best_euclidean"]["passes"]
    # With CFM trained too, part 2 is against the better of the two (by mean).
    both = GOOD | {"cfm": [90.0] * 5}
    assert verdict(Measurements(both), CONFIG).evidence["part2_rgvfm_vs_best_euclidean"]["baseline"] == "cfm"


def test_budget_sensitivity_is_the_verdict_at_every_checkpoint_of_the_curve():
    # Two checkpoints: at the first RG-VFM-M has not yet passed RFM by the margin, at the second (the budget) it has.
    curve = {
        k: [[v - (20.0 if k == "rgvfm" else 0.0), v] for v in values] for k, values in GOOD.items()
    }  # per seed: (first checkpoint, last)
    v = verdict(Measurements(GOOD, curve_steps=[1200, 2400], curve=curve), CONFIG)
    sensitivity = v.evidence["budget_sensitivity"]
    assert list(sensitivity) == ["1200", "2400"]
    assert sensitivity["1200"].startswith("not held: part 1 -2.0,")
    assert sensitivity["2400"].startswith("held: part 1 +18.0,") and v.status == "held"


def test_not_evaluated_without_rfm_or_a_euclidean_arm():
    assert not verdict(Measurements({"rgvfm": [80.0], "rfm": [60.0]}), CONFIG).evidence["evaluated"]


def test_the_control_is_rgvfm_with_the_networks_time_shuffled_and_nothing_else():
    s = Sphere(2)
    net = TimeMLP(3, hidden_dim=8)
    method, control = build_flow("rgvfm", s, net), build_flow(CONTROL, s, net)
    assert isinstance(control, EndpointFlow) and control.shuffle_time and not method.shuffle_time
    spec, ref = FLOW_SPECS[CONTROL], FLOW_SPECS["rgvfm"]
    assert (spec.intrinsic, spec.predicts, spec.geodesic_loss) == (ref.intrinsic, ref.predicts, ref.geodesic_loss)
    assert control.time_clip == method.time_clip and control.endpoint_manifold is control.path
    # The same batch: the network sees the batch's times permuted (so the loss differs), the targets do not move.
    seen = []

    def recording(x, t):
        seen.append(t.clone())
        return net(x, t)

    g = torch.Generator().manual_seed(0)
    x0, x1 = s.wrapped_normal(16, generator=g), s.wrapped_normal(16, scale=0.3, generator=g)
    t = torch.rand(16, 1, generator=g)
    for flow in (method, control):
        flow.network = recording
        flow.training_loss(x0, x1, t, generator=torch.Generator().manual_seed(1))
    assert torch.equal(seen[0], t) and not torch.equal(seen[1], t)
    assert torch.equal(seen[1].sort(0).values, t.sort(0).values)  # a permutation of the same times


def test_rgvfm_and_rfm_differ_in_the_objective_only():
    s = Sphere(2)
    net = TimeMLP(3, hidden_dim=8)
    rg, rfm = build_flow("rgvfm", s, net), build_flow("rfm", s, net)
    assert isinstance(rg, EndpointFlow) and isinstance(rfm, VelocityFlow)
    assert rg.path is s and rfm.path is s and rg.network is rfm.network and rg.noise_scale == rfm.noise_scale
