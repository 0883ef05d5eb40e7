"""The RLAF verdict through its public function, on synthetic decision counts: each part can flip it.

Two sets, three seeds, eight formulas. The unguided solver needs ``U = (100, 120, ..., 240)`` decisions (mean 170);
each guided method needs ``round(f · U)`` (the same factor on every formula and seed, so the seed-mean ratio of
means is ``f`` up to the rounding, and every paired log-gain is ``log((1 + U) / (1 + f · U))``, nearly constant,
so its lower bound is positive exactly when ``f`` is below the baseline's factor).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from iclr26.rlaf.config import RLAFConfig
from iclr26.rlaf.verdict import Measurements, paired_gain, verdict

CONFIG = RLAFConfig.preset("smoke")  # margin 0.05 (bound 0.95), confidence 0.95, gates 20 decisions and 0.5
UNGUIDED = [100 + 20 * i for i in range(8)]
SETS = ("3sat/50", "3sat/100")
FACTORS = {"unguided": 1.0, "degree": 0.85, "supervised": 0.8, "rlaf": 0.7, "shuffled": 1.02}


def measured(scale: float = 1.0, subfolders=None, **factors: float | dict[str, float]) -> Measurements:
    """Every method at its factor of the unguided counts (a dict gives one factor per set), three seeds."""
    merged = {**FACTORS, **factors}

    def runs(name: str, method: str) -> list[list[int]]:
        f = merged[method][name] if isinstance(merged[method], dict) else merged[method]
        return [[round(f * scale * u) for u in UNGUIDED] for _ in range(3)]

    return Measurements(
        decisions={name: {m: runs(name, m) for m in FACTORS} for name in SETS}, subfolders=subfolders or {}
    )


def test_held_when_rlaf_cuts_decisions_beats_the_degree_rule_and_the_shuffled_control_fails():
    v = verdict(measured(), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    assert v.evidence["rlaf_over_unguided_cdcl"]["3sat/50"] == pytest.approx(0.7, abs=2e-3)
    assert v.evidence["shuffled_over_unguided_cdcl"]["3sat/100"] == pytest.approx(1.02, abs=2e-3)
    assert v.evidence["ratio_part_held"] and v.evidence["degree_part_held"] and v.evidence["control_failed"]
    test = v.evidence["paired_over_formulas_cdcl"]["3sat/50"]["rlaf_vs_degree"]
    assert test["beats"] and test["geomean_factor"] == pytest.approx(0.85 / 0.7, rel=0.02)


def test_a_shuffled_control_that_passes_the_bound_makes_it_not_held():
    # The shuffled guidance at 0.9 (below the 0.95 bound): the bound cannot tell learned guidance from a shuffle.
    v = verdict(measured(shuffled=0.9), CONFIG)
    assert v.status == "not held" and not v.evidence["control_failed"]
    assert v.evidence["ratio_part_held"] and v.evidence["degree_part_held"]
    # The control must fail on every set: passing on one of them is enough to withhold the claim.
    one = verdict(measured(shuffled={"3sat/50": 1.02, "3sat/100": 0.9}), CONFIG)
    assert one.status == "not held"
    # Back above the bound everywhere: held again.
    assert verdict(measured(shuffled=0.96), CONFIG).status == "held"


def test_a_ratio_above_the_bound_is_not_held():
    v = verdict(measured(rlaf={"3sat/50": 0.7, "3sat/100": 0.97}, degree=1.0, shuffled=1.1), CONFIG)
    assert v.status == "not held" and not v.evidence["ratio_part_held"]
    assert v.evidence["degree_part_held"]  # 0.97 still beats the degree rule at 1.0


def test_rlaf_no_better_than_the_degree_rule_is_not_held():
    # The laziest guidance that could pass: the one-line degree rule itself in RLAF's place.
    v = verdict(measured(rlaf=0.85), CONFIG)
    assert v.status == "not held"
    assert v.evidence["ratio_part_held"] and not v.evidence["degree_part_held"]


def test_trivially_solved_sets_give_inconclusive():
    # scale 0.1: the unguided solver needs 10-24 decisions, mean 17 < 20
    v = verdict(measured(scale=0.1), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("instances_not_trivial",)
    assert v.evidence["gates"]["instances_not_trivial"]["unguided_mean_decisions"]["3sat/50"] == pytest.approx(17.0)
    assert "gate failed: instances_not_trivial" in v.measurement
    assert verdict(measured(scale=0.1), dataclasses.replace(CONFIG, min_unguided_decisions=15.0)).status == "held"


def test_guidance_that_never_changes_the_search_gives_inconclusive_not_not_held():
    # RLAF's mode equal to the unguided search (the zero-initialised policy): no comparison can mean anything.
    v = verdict(measured(rlaf=1.0, shuffled=1.0), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("guidance_acts",)
    assert v.evidence["gates"]["guidance_acts"]["fraction_changed_by_rlaf"] == {"3sat/50": 0.0, "3sat/100": 0.0}
    # One seed of three acting on every formula is a third of the pairs, below the majority asked.
    m = measured()
    runs = {name: dict(by_method, rlaf=[by_method["unguided"][0]] * 2 + [by_method["rlaf"][0]]) for name, by_method
            in m.decisions.items()}  # fmt: skip
    partial = verdict(Measurements(decisions=runs), CONFIG)
    assert partial.status == "inconclusive"
    assert partial.evidence["gates"]["guidance_acts"]["fraction_changed_by_rlaf"]["3sat/50"] == pytest.approx(1 / 3)


def test_sub_folders_are_reported_beside_the_pooled_ratio_and_decide_nothing():
    # sub-folder "a": formulas 0-3, U = 100..160 (sum 520); RLAF at 0.5 there and 0.7 elsewhere
    m = measured(subfolders={"3sat/50": {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7]}})
    rlaf = [[round((0.5 if i < 4 else 0.7) * u) for i, u in enumerate(UNGUIDED)] for _ in range(3)]
    m = Measurements(decisions={**m.decisions, "3sat/50": {**m.decisions["3sat/50"], "rlaf": rlaf}},
                     subfolders=m.subfolders)  # fmt: skip
    v = verdict(m, CONFIG)
    groups = v.evidence["over_unguided_cdcl_by_subfolder"]["3sat/50"]
    assert groups["a"]["rlaf"] == pytest.approx(260 / 520)
    assert groups["b"]["rlaf"] == pytest.approx(sum(round(0.7 * u) for u in UNGUIDED[4:]) / sum(UNGUIDED[4:]))
    assert groups["b"]["shuffled"] == pytest.approx(1.02, abs=2e-3)
    pooled = (260 + sum(round(0.7 * u) for u in UNGUIDED[4:])) / sum(UNGUIDED)
    assert v.evidence["rlaf_over_unguided_cdcl"]["3sat/50"] == pytest.approx(pooled)
    assert "3sat/50 by sub-folder: a 0.50, b 0.70" in v.measurement
    assert v.status == "held"


def test_the_thresholds_come_from_the_config_with_their_sources():
    v = verdict(measured(), CONFIG)
    assert set(v.evidence["thresholds"]) == {
        "margin",
        "confidence",
        "degree_scale",
        "min_unguided_decisions",
        "min_acting_fraction",
    }
    assert "not in the paper" in v.evidence["thresholds"]["margin"]["source"]
    # margin 0.35: the bound 0.65 is below RLAF's 0.7
    assert verdict(measured(), dataclasses.replace(CONFIG, margin=0.35)).status == "not held"


def test_paired_gain_by_hand():
    # log(1 + decisions): baseline (3, 7) -> (log 4, log 8), method (1, 3) -> (log 2, log 4): gain log 2 on both
    # formulas, zero spread, so the lower bound is log 2 > 0 and the method needs 2x fewer decisions (geomean)
    test = paired_gain([[1, 3]], [[3, 7]], confidence=0.95)
    assert test["mean_log_gain"] == pytest.approx(math.log(2)) and test["lower_bound"] == pytest.approx(math.log(2))
    assert test["beats"] and test["geomean_factor"] == pytest.approx(2.0)


def test_measurements_without_the_control_are_refused_by_name():
    # The control cannot be dropped silently: a set without the shuffled arm (or any arm) is an error naming it.
    m = measured()
    runs = {name: {k: v for k, v in by_method.items() if k != "shuffled"} for name, by_method in m.decisions.items()}
    with pytest.raises(ValueError, match=r"decisions\['3sat/50'\] lacks the methods \['shuffled'\]"):
        Measurements(decisions=runs)
    uneven = {name: dict(by_method, rlaf=by_method["rlaf"][:2]) for name, by_method in m.decisions.items()}
    with pytest.raises(ValueError, match="the same non-empty seeds x formulas"):
        Measurements(decisions=uneven)
