"""PAGE-4D's verdict through the public ``verdict()`` on synthetic per-seed numbers: each part can flip it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.verdict import Measurements, relative_reduction, verdict

CONFIG = Page4DConfig.from_dict(Page4DConfig.preset_values("smoke"))  # ate_margin 0.05, depth_tolerance 0.05
# six seeds with a small spread, so a 20% reduction is established and a 0% one is not
NOISE = [0.00, 0.01, -0.01, 0.02, -0.02, 0.005]


def _arms(base: float, page4d_factor: float) -> dict[str, list[float]]:
    frozen = [base * (1 + e) for e in NOISE]
    return {"frozen": frozen, "naive": list(frozen), "full": list(frozen),
            "page4d": [x * page4d_factor * (1 + e / 3) for x, e in zip(frozen, NOISE, strict=True)]}  # fmt: skip


def _measured(**over) -> Measurements:
    values = {
        "ate_dynamic": _arms(0.3, 0.8),  # page4d 20% better on dynamic scenes
        "ate_static": _arms(0.2, 1.0),  # and no better on static scenes: the control fails
        "absrel_dynamic": _arms(0.5, 1.0),  # depth on dynamic pixels unchanged
        # the static model learned pose: half the ATE of its predictions on the wrong scene, a third of the constant
        # predictor's rotation error; a straight line cannot match the paths
        "rpe_rot_static": _arms(3.0, 1.0),
        "ate_shuffled_static": _arms(0.4, 1.0),
        "ate_constant_static": [0.45 * (1 + e) for e in NOISE],
        "rpe_rot_constant_static": [8.0 * (1 + e) for e in NOISE],
        "ate_line": [0.12 * (1 + e) for e in NOISE],
        "frozen_unchanged": True,
        "trained_changed": True,
    }
    return Measurements(**{**values, **over})


def test_relative_reduction_hand_values():
    assert relative_reduction([2.0, 4.0], [1.0, 5.0]) == [0.5, -0.25]


def test_held_when_the_method_wins_depth_holds_and_the_control_fails():
    v = verdict(_measured(), CONFIG)
    assert v.status == "held", v.measurement
    assert v.evidence["control_static_ate_vs_naive"]["passes"] is False
    assert set(v.evidence["thresholds"]) == {"ate_margin", "depth_tolerance", "confidence", "pose_gate_margin",
                                             "line_gate_ratio"}  # fmt: skip


def test_a_passing_control_makes_it_not_held():
    # the same gain on static scenes (nothing to mask) says the gain is not the mask's
    v = verdict(_measured(ate_static=_arms(0.2, 0.8)), CONFIG)
    assert v.status == "not held"
    assert v.evidence["control_static_ate_vs_naive"]["passes"] is True


@pytest.mark.parametrize(
    ("over", "failing"),
    [
        ({"ate_dynamic": {**_arms(0.3, 0.8), "naive": _arms(0.3, 0.8)["page4d"]}}, "ate_vs_naive"),
        ({"ate_dynamic": {**_arms(0.3, 0.8), "frozen": _arms(0.3, 0.8)["page4d"]}}, "ate_vs_frozen"),
        ({"ate_dynamic": _arms(0.3, 0.97)}, "ate_vs_frozen"),  # 3%: below the 5% margin
        ({"absrel_dynamic": _arms(0.5, 1.2)}, "depth_dyn_vs_naive"),  # depth 20% worse on dynamic pixels
    ],
)
def test_each_comparison_can_make_it_not_held(over, failing):
    v = verdict(_measured(**over), CONFIG)
    assert v.status == "not held"
    assert v.evidence[failing]["passes"] is False


@pytest.mark.parametrize(
    ("over", "gate"),
    [
        # a static model that ignores its input: its ATE on its own scene is that on another scene
        (
            {"ate_shuffled_static": {**_arms(0.4, 1.0), "frozen": _arms(0.2, 1.0)["frozen"]}},
            "static_model_learned_pose",
        ),
        # a static model that predicts no rotation: RPE rotation equal to the true turn per frame
        ({"rpe_rot_static": _arms(8.0, 1.0)}, "static_model_learned_pose"),
        # straight paths at constant speed: any line scores ATE ~0
        ({"ate_line": [1e-16] * 6}, "metric_tells_a_line_from_the_path"),
    ],
)
def test_a_test_bed_that_cannot_show_the_effect_is_inconclusive(over, gate):
    for measured in (_measured(**over), _measured(ate_static=_arms(0.2, 0.8), **over)):
        v = verdict(measured, CONFIG)
        assert v.status == "inconclusive" and v.failed_gates == (gate,)


@pytest.mark.parametrize("gate", ["frozen_unchanged", "trained_changed"])
def test_a_failed_gate_makes_it_inconclusive_whatever_the_comparison(gate):
    for measured in (_measured(), _measured(ate_static=_arms(0.2, 0.8))):
        v = verdict(replace(measured, **{gate: False}), CONFIG)
        assert v.status == "inconclusive"
        assert len(v.failed_gates) == 1


def test_a_larger_margin_flips_a_held_verdict():
    assert verdict(_measured(), replace(CONFIG, ate_margin=0.25)).status == "not held"
