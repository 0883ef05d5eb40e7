"""UniSplat's verdict through the public ``verdict()`` on synthetic per-seed numbers: each part can flip it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr26.unisplat.config import UniSplatConfig
from iclr26.unisplat.verdict import Measurements, filter_rates, paired_difference, verdict

CONFIG = UniSplatConfig.from_dict(UniSplatConfig.preset_values("smoke"))  # out_margin 1 dB, branch_margin 0.1 dB
NOISE = [0.0, 0.1, -0.1, 0.2, -0.2]  # five seeds


def _arm(psnr_in: float, psnr_out: float) -> dict[str, list[float | None]]:
    values = {"psnr_in": [psnr_in + e for e in NOISE], "psnr_out": [psnr_out + e / 2 for e in NOISE]}
    values["psnr_all"] = [0.5 * (a + b) for a, b in zip(values["psnr_in"], values["psnr_out"], strict=True)]
    values["psnr_dynamic"] = [15.0 + e for e in NOISE]
    # the filter removes 80 of 100 moving Gaussians per seed and 20 of 3000 static ones (recall 0.8, precision 0.8)
    values.update(filter_moving=[100.0] * 5, filter_static=[3000.0] * 5, filter_removed_moving=[80.0] * 5,
                  filter_removed_static=[20.0] * 5)  # fmt: skip
    return values


def _measured(*, out_gain: float = 3.0, control_gain: float = -0.5, point: float = 0.5, voxel: float = 1.0,
              filter_removed: tuple[float, float] = (80.0, 20.0), trained: bool = True) -> Measurements:  # fmt: skip
    main = {
        "single": _arm(20.0, 14.0),
        "fusion": _arm(20.0, 14.0 + out_gain / 2),
        "unisplat": _arm(20.0, 14.0 + out_gain),
        "point": _arm(20.0 - point, 14.0 + out_gain - point),
        "voxel": _arm(20.0 - voxel, 14.0 + out_gain - voxel),
        "unisplat_nofilter": _arm(20.0, 14.0 + out_gain),
    }
    hit, miss = filter_removed
    main["unisplat"].update(filter_removed_moving=[hit] * 5, filter_removed_static=[miss] * 5)
    control = {"single": _arm(20.0, 14.0), "unisplat": _arm(20.0, 14.0 + control_gain)}
    return Measurements(main=main, control=control, models_trained=trained)


def test_paired_difference_skips_seeds_without_a_value():
    table = {"a": {"m": [3.0, None, 5.0]}, "b": {"m": [1.0, 2.0, None]}}
    assert paired_difference(table, "a", "b", "m") == [2.0]


def test_held_when_memory_wins_outside_the_dual_branch_wins_and_the_control_fails():
    v = verdict(_measured(), CONFIG)
    assert v.status == "held", v.measurement
    assert v.evidence["out_of_coverage_control"]["passes"] is False


def test_a_passing_control_makes_it_not_held():
    # the same gain with the ego standing still: nothing outside the coverage was ever seen, so the gain is not
    # the memory's
    v = verdict(_measured(control_gain=3.0), CONFIG)
    assert v.status == "not held"
    assert v.evidence["out_of_coverage_control"]["passes"] is True


def test_each_comparison_can_make_it_not_held():
    assert verdict(_measured(out_gain=0.5), CONFIG).status == "not held"  # below the 1 dB margin
    assert verdict(_measured(point=-0.2), CONFIG).status == "not held"  # the point branch alone is better
    assert verdict(_measured(voxel=0.05), CONFIG).status == "not held"  # below the 0.1 dB branch margin
    assert verdict(_measured(), replace(CONFIG, out_margin=5.0)).status == "not held"


@pytest.mark.parametrize(
    ("over", "gate"),
    [
        ({"filter_removed": (0.0, 0.0)}, "dynamic_filter_fires"),  # the filter never fires
        ({"filter_removed": (30.0, 5.0)}, "dynamic_filter_fires"),  # it misses most moving Gaussians (recall 0.3)
        ({"filter_removed": (90.0, 900.0)}, "dynamic_filter_fires"),  # it removes static ones (precision 0.09)
        ({"trained": False}, "models_trained"),  # steps=0: nothing trained
    ],
)
def test_a_test_bed_that_cannot_show_the_effect_is_inconclusive(over, gate):
    for measured in (_measured(**over), _measured(control_gain=3.0, **over)):
        v = verdict(measured, CONFIG)
        assert v.status == "inconclusive" and v.failed_gates == (gate,)


def test_filter_rates_pool_over_seeds():
    assert filter_rates(_measured()) == (pytest.approx(0.8), pytest.approx(0.8))
    assert filter_rates(_measured(filter_removed=(0.0, 0.0))) == (0.0, 0.0)
