"""The KERN verdict through its public function, on synthetic per-seed numbers: each part can flip it.

The numbers are chosen so that the paired differences are known by hand: with KERN − Softmax = (d, d + 0.01,
d − 0.01) on three seeds, the mean is d, the sample sd is 0.01 and the 95% paired-t half-width is
t_{0.975, 2} · 0.01 / √3 = 4.3027 · 0.005774 = 0.02484.
"""

from __future__ import annotations

import dataclasses

import pytest

from iclr26.kern.config import KernConfig
from iclr26.kern.verdict import UNIFORM_LOSS, Measurements, verdict

CONFIG = KernConfig.preset("smoke")  # loss_tolerance 0.01, confidence 0.95, cost_tolerance 0
HALF_WIDTH = 4.302652729911275 * 0.01 / 3**0.5
SOFTMAX = [2.30, 2.32, 2.28]
FLOPS = {"softmax": 46, "softmax_renorm": 50, "kern": 41}  # gate_cost at E = 8, K = 2 (6E - 2, + 2K, 5E + 1)


def measured(kern_gap: float, *, renorm_gap: float = 0.05, flops: dict[str, int] | None = None) -> Measurements:
    """KERN = Softmax + (gap, gap + 0.01, gap - 0.01); the renormalised Softmax sits ``renorm_gap`` above Softmax."""
    kern = [s + kern_gap + e for s, e in zip(SOFTMAX, (0.0, 0.01, -0.01), strict=True)]
    renorm = [s + renorm_gap for s in SOFTMAX]
    return Measurements(
        final_val_loss={"softmax": SOFTMAX, "softmax_renorm": renorm, "kern": kern, "dense": [2.4, 2.41, 2.39]},
        gate_flops=dict(FLOPS if flops is None else flops),
    )


def test_held_when_the_upper_bound_is_below_the_tolerance_at_no_extra_cost():
    # gap -0.05: upper bound -0.05 + 0.0248 = -0.025 < 0.01.
    v = verdict(measured(-0.05), CONFIG)
    assert v.status == "held"
    assert v.evidence["stronger_softmax"] == "softmax"
    assert v.evidence["loss_gap"] == pytest.approx(-0.05)
    assert v.evidence["loss_gap_ci"][1] == pytest.approx(-0.05 + HALF_WIDTH, abs=1e-9)
    assert v.evidence["gate_flops_ratio"] == pytest.approx(41 / 46)
    assert v.evidence["ranking_by_val_loss"][0] == "kern"


def test_a_negative_mean_gap_whose_interval_reaches_the_tolerance_is_not_held():
    # gap -0.02: upper bound -0.02 + 0.0248 = +0.0048 < 0.01, held; gap -0.01: upper bound +0.0148 >= 0.01, so
    # "matches or beats" is not shown by three seeds although the mean favours KERN.
    assert verdict(measured(-0.02), CONFIG).status == "held"
    v = verdict(measured(-0.01), CONFIG)
    assert v.status == "not held" and not v.evidence["loss_within_tolerance"]


def test_the_stronger_softmax_is_the_comparison_and_removing_it_changes_the_verdict():
    # The renormalised Softmax 0.05 below plain Softmax is the stronger one: KERN at Softmax - 0.03 is then 0.02
    # above it (not held); without the renormalised variant KERN is judged against plain Softmax (held).
    both = measured(-0.03, renorm_gap=-0.05)
    v = verdict(both, CONFIG)
    assert v.evidence["stronger_softmax"] == "softmax_renorm" and v.status == "not held"
    losses = {k: x for k, x in both.final_val_loss.items() if k != "softmax_renorm"}
    flops = {k: x for k, x in both.gate_flops.items() if k != "softmax_renorm"}
    assert verdict(Measurements(losses, flops), CONFIG).status == "held"


def test_extra_gate_cost_gives_not_held():
    v = verdict(measured(-0.05, flops={"softmax": 46, "softmax_renorm": 50, "kern": 47}), CONFIG)
    assert v.status == "not held" and not v.evidence["cost_within_tolerance"]
    assert v.evidence["cheaper_softmax"] == "softmax"
    relaxed = dataclasses.replace(CONFIG, cost_tolerance=0.05)  # 47 / 46 = 1.022 <= 1.05
    assert verdict(measured(-0.05, flops={"softmax": 46, "softmax_renorm": 50, "kern": 47}), relaxed).status == "held"


def test_models_that_learned_nothing_give_inconclusive():
    untrained = measured(-0.05)
    losses = {k: [x + UNIFORM_LOSS for x in v] for k, v in untrained.final_val_loss.items()}
    v = verdict(Measurements(losses, untrained.gate_flops), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("compared_models_learned",)
    assert "gate failed: compared_models_learned" in v.measurement
    # One untrained seed of one compared model is enough; the dense model is not compared.
    one = dict(untrained.final_val_loss, kern=[*untrained.final_val_loss["kern"][:2], UNIFORM_LOSS + 0.1])
    assert verdict(Measurements(one, untrained.gate_flops), CONFIG).status == "inconclusive"
    dense = dict(untrained.final_val_loss, dense=[UNIFORM_LOSS + 1] * 3)
    assert verdict(Measurements(dense, untrained.gate_flops), CONFIG).status == "held"


def test_the_thresholds_come_from_the_config_with_their_sources():
    v = verdict(measured(-0.05), CONFIG)
    assert set(v.evidence["thresholds"]) == {"loss_tolerance", "confidence", "cost_tolerance"}
    assert "zero additional cost" in v.evidence["thresholds"]["cost_tolerance"]["source"]
    # confidence 0.999: t_{0.9995, 2} = 31.60, half-width 0.1824, upper bound +0.13 > 0.01: not held.
    assert verdict(measured(-0.05), dataclasses.replace(CONFIG, confidence=0.999)).status == "not held"
    # loss_tolerance 0: the upper bound -0.025 is still below it.
    assert verdict(measured(-0.05), dataclasses.replace(CONFIG, loss_tolerance=0.0)).status == "held"
