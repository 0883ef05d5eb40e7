"""The verdict through the public ``verdict()`` on synthetic per-seed accuracies: each part can flip it."""

from __future__ import annotations

import pytest

from iclr26.guishift.config import GUIShiftConfig
from iclr26.guishift.verdict import ARMS, Measurements, compare, verdict

CONFIG = GUIShiftConfig()  # pretrain_margin 0.03, sft_margin 0, filter_margin 0, confidence 0.95
NONE = [0.20, 0.22, 0.21, 0.19, 0.23]
JITTER = [0.000, 0.004, -0.003, 0.002, -0.001]


def _arm(gain):
    return [b + gain + j for b, j in zip(NONE, JITTER, strict=True)]


def _measured(**gains):
    """Per-seed accuracies: every arm at ``none`` + its gain (default: GUI-Shift +10 points, the others +1, the
    shuffled control −5)."""
    base = {"guishift": 0.10, "nofilter": 0.01, "sft": 0.01, "k1": 0.01, "shuffled": -0.05}
    base.update(gains)
    return Measurements(automation={"none": NONE, **{a: _arm(base[a]) for a in ARMS}}, eval_items=400)


def test_compare_needs_the_margin_and_a_positive_lower_bound():
    assert compare([0.10, 0.12, 0.11], margin=0.03, confidence=0.95).passes
    assert not compare([0.02, 0.025, 0.021], margin=0.03, confidence=0.95).passes  # below the margin
    assert not compare([0.5, -0.4, 0.1], margin=0.0, confidence=0.95).passes  # the interval includes 0
    # d = (0.1, 0.2): mean 0.15, sd 0.0707, se 0.05, t_{0.95, 1} = 6.314 -> lower 0.15 - 0.3157 < 0
    two = compare([0.1, 0.2], margin=0.0, confidence=0.95)
    assert two.lower == pytest.approx(0.15 - 6.3138 * 0.05, abs=1e-3) and not two.passes
    single = compare([0.5], margin=0.0, confidence=0.95)
    assert single.lower is None and not single.passes


def test_holds_when_guishift_wins_every_comparison_and_the_control_fails():
    v = verdict(_measured(), CONFIG)
    assert v.status == "held"
    assert v.evidence["guishift_vs_none"]["passes"] and not v.evidence["shuffled_vs_none"]["passes"]
    assert set(v.evidence["thresholds"]) == {"pretrain_margin", "sft_margin", "filter_margin", "confidence"}


@pytest.mark.parametrize(
    ("gains", "failed"),
    [({"guishift": 0.02}, "guishift_vs_none"),  # +2 points: under the 3-point margin
     ({"sft": 0.10}, "guishift_vs_sft"),  # SFT as good as GUI-Shift
     ({"nofilter": 0.10}, "guishift_vs_nofilter")],  # the filter does not help
)  # fmt: skip
def test_each_comparison_can_fail_the_claim(gains, failed):
    v = verdict(_measured(**gains), CONFIG)
    assert v.status == "not held" and not v.evidence[failed]["passes"]


def test_a_control_that_gains_as_much_as_the_method_fails_the_claim():
    # shuffled transitions raising accuracy as much as GUI-Shift: the test bed credits any GRPO, not the K-step task
    v = verdict(_measured(shuffled=0.10), CONFIG)
    assert v.status == "not held" and v.evidence["shuffled_vs_none"]["passes"]


def test_k1_is_reported_not_judged():
    assert verdict(_measured(k1=0.20), CONFIG).status == "held"
