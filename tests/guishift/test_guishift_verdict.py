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


def _measured(transition=None, **gains):
    """Per-seed accuracies: every arm at ``none`` + its gain (default: GUI-Shift +10 points, the others +1, the
    shuffled control −5); held-out transition accuracy: ``none`` 0.16, GUI-Shift +14 points (or ``transition``)."""
    base = {"guishift": 0.10, "nofilter": 0.01, "sft": 0.01, "k1": 0.01, "shuffled": -0.05}
    base.update(gains)
    moved = {"none": 0.0, "guishift": 0.14, "nofilter": 0.10, "sft": 0.12, "k1": 0.10, "shuffled": 0.0}
    moved.update(transition or {})
    trans = {a: [0.16 + moved[a] + j for j in JITTER] for a in ("none", *ARMS)}
    return Measurements(automation={"none": NONE, **{a: _arm(base[a]) for a in ARMS}}, transition=trans,
                        eval_items=400)  # fmt: skip


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
    assert set(v.evidence["thresholds"]) == {
        "pretrain_margin", "sft_margin", "filter_margin", "confidence", "transition_margin"
    }  # fmt: skip
    assert v.evidence["gates"]["pretraining_task_learned"]["passed"]


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


def test_an_arm_that_did_not_learn_the_transition_task_gives_inconclusive():
    # GUI-Shift's downstream gain stands, but its held-out transition accuracy is no better than the base's: the
    # pretraining task was not learned, so whether it transfers cannot be judged
    v = verdict(_measured(transition={"guishift": 0.0}), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("pretraining_task_learned",)


def test_a_guishift_arm_trained_on_shuffled_labels_fails():
    # an arm trained on pairs whose labels were shuffled learns no transition (held-out transition accuracy at the
    # base's, or below) and reads downstream like the shuffled control: never "held"
    v = verdict(_measured(guishift=-0.05, transition={"guishift": -0.02}), CONFIG)
    assert v.status != "held"
    # even if such an arm's downstream accuracy rose by chance, the gate keeps it from counting
    assert verdict(_measured(transition={"guishift": -0.02}), CONFIG).status == "inconclusive"


def test_removing_the_control_changes_the_verdict():
    # the same numbers with the control arm behaving like the method: held becomes not held
    assert verdict(_measured(), CONFIG).status == "held"
    assert verdict(_measured(shuffled=0.10, transition={"shuffled": 0.14}), CONFIG).status == "not held"
