"""The ST-HHOL verdict on synthetic per-seed MAEs: each gate, the drift comparison, its control, level one."""

from __future__ import annotations

import dataclasses

from iclr26.sthhol.config import STHHOLConfig
from iclr26.sthhol.verdict import Measurements, verdict

CONFIG = STHHOLConfig()
NOISE = [0.004, -0.003, 0.002, -0.004, 0.001]


def _scaled(base: float, factor: float) -> list[float]:
    return [base * factor * (1 + e) for e in NOISE]


def _held() -> Measurements:
    """Online 15% below offline after the drift on the main city, 3% on the control; level one worth 8% on the main
    city and nothing on the control; the drift leaves the warm-up model room."""
    return Measurements(
        drift_known=True,
        main_offline=_scaled(1.5, 1.0),
        main_online=_scaled(1.5, 0.85),
        control_offline=_scaled(1.0, 1.0),
        control_online=_scaled(1.0, 0.97),
        main_full={"sthhol": _scaled(1.3, 1.0), "nolevel1": _scaled(1.3, 1.08), "randllm": _scaled(1.3, 1.01)},
        control_full={"sthhol": _scaled(0.9, 1.0), "nolevel1": _scaled(0.9, 1.0)},
        excess_pre=_scaled(0.1, 1.0),
        excess_post=_scaled(0.4, 1.0),
        frozen_mlp_intact=True,
    )


def test_held_when_the_drift_effect_and_level_one_pass():
    v = verdict(_held(), CONFIG)
    assert v.status == "held", v.measurement
    assert v.evidence["drift_effect"]["passes"] is True
    assert set(v.evidence["gates"]) == {"drift_leaves_room", "frozen_mlp_intact"}
    assert set(v.evidence["thresholds"]) == {"drift_effect_margin", "context_margin", "confidence"}
    assert "post-drift" in v.measurement


def test_control_city_gaining_as_much_makes_it_not_held():
    # online also gains 13% without drift: the main city's 15% is mostly more data, not drift adaptation
    m = dataclasses.replace(_held(), control_online=_scaled(1.0, 0.87))
    v = verdict(m, CONFIG)
    assert v.status == "not held"
    assert v.evidence["online_vs_offline_main"]["passes"] is True
    assert v.evidence["drift_effect"]["passes"] is False


def test_control_losing_does_not_rescue_a_main_city_without_gain():
    # main city +1% only; control -5%: the difference passes, the main city's gain does not
    m = dataclasses.replace(_held(), main_online=_scaled(1.5, 0.99), control_online=_scaled(1.0, 1.05))
    v = verdict(m, CONFIG)
    assert v.evidence["drift_effect"]["passes"] is True
    assert v.status == "not held"


def test_level_one_control_passing_or_main_failing_makes_it_not_held():
    control_gains = dataclasses.replace(_held(), control_full={"sthhol": _scaled(0.9, 1.0),
                                                               "nolevel1": _scaled(0.9, 1.08)})  # fmt: skip
    assert verdict(control_gains, CONFIG).status == "not held"
    main = dict(_held().main_full, nolevel1=_scaled(1.3, 1.0))
    assert verdict(dataclasses.replace(_held(), main_full=main), CONFIG).status == "not held"


def test_a_failed_gate_gives_inconclusive():
    no_room = dataclasses.replace(_held(), excess_post=_scaled(0.1, 1.0))
    v = verdict(no_room, CONFIG)
    assert v.status == "inconclusive"
    assert v.failed_gates == ("drift_leaves_room",)
    assert "gate failed: drift_leaves_room" in v.measurement
    broken = verdict(dataclasses.replace(_held(), frozen_mlp_intact=False), CONFIG)
    assert broken.status == "inconclusive" and broken.failed_gates == ("frozen_mlp_intact",)


def test_user_data_without_a_drift_point_says_so_and_skips_level_one():
    m = dataclasses.replace(_held(), drift_known=False, excess_pre=None, excess_post=None,
                            main_full={"sthhol": _scaled(1.3, 1.0), "randllm": _scaled(1.3, 1.01)})  # fmt: skip
    v = verdict(m, CONFIG)
    assert "post-drift" not in v.measurement
    assert "no known drift point" in v.measurement
    assert "level one not testable" in v.measurement
    assert set(v.evidence["gates"]) == {"frozen_mlp_intact"}
    assert v.status == "held"


def test_one_seed_decides_nothing():
    one = Measurements(**{f.name: _one(getattr(_held(), f.name)) for f in dataclasses.fields(Measurements)})
    v = verdict(one, CONFIG)
    assert v.status == "inconclusive"  # the room gate needs two seeds for its bound
    assert "one seed" in v.measurement


def _one(value):
    if isinstance(value, list):
        return value[:1]
    if isinstance(value, dict):
        return {k: v[:1] for k, v in value.items()}
    return value
