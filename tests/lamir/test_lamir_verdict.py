"""The base policy is chosen by a rule fixed in advance, and the LAMIR verdict (its public function, on synthetic
per-replicate numbers) judges both claims over replicates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from iclr26.lamir.config import LamirConfig
from iclr26.lamir.experiment import select_base_checkpoint
from iclr26.lamir.verdict import Measurements, verdict

CONFIG = LamirConfig()  # exact_capacity 24, limited_capacity 8, interval_level 0.95, min_score_vs_base 0.5
T_975_2 = 4.302652729911275  # t_{0.975, 2}: the 95% two-sided quantile with 3 replicates


def test_base_checkpoint_is_the_lower_median_of_the_second_half():
    # 3000 steps, checkpoints every 250 and at 2999: the second half is 1500 .. 2999 (7 checkpoints). Sorted by
    # exploitability: 0.05 (2250), 0.07 (1500), 0.09 (2750), 0.10 (2000), 0.11 (1750), 0.12 (2500), 0.135 (2999)
    # -> the median (index 3) is step 2000 with 0.10. The first half (0.01 at step 250) is never considered, and
    # the last iterate (0.135, the most exploitable) is not chosen.
    curve = [(0, 0.5), (250, 0.01), (500, 0.3), (750, 0.2), (1000, 0.15), (1250, 0.12)]
    curve += [(1500, 0.07), (1750, 0.11), (2000, 0.10), (2250, 0.05), (2500, 0.12), (2750, 0.09), (2999, 0.135)]
    assert select_base_checkpoint(curve, 3000) == (2000, 0.10)
    # an even count takes the lower median (the less exploitable middle one): drop step 2999 -> 6 checkpoints,
    # sorted 0.05, 0.07, 0.09, 0.10, 0.11, 0.12 -> index (6 - 1) // 2 = 2: step 2750 with 0.09
    assert select_base_checkpoint(curve[:-1], 3000) == (2750, 0.09)
    # ties go to the earlier step
    assert select_base_checkpoint([(10, 0.2), (20, 0.2), (30, 0.2)], 20) == (20, 0.2)
    with pytest.raises(ValueError, match="no checkpoint at or after step 50"):
        select_base_checkpoint([(0, 0.1), (40, 0.2)], 100)


def measured(**changes) -> Measurements:
    """Three replicates where every gate passes, both claims hold on the interval and the untrained control fails
    (each change replaces one field).

    Claim 1 margins b - e: 0.10-0.05, 0.08-0.04, 0.12-0.06 = 0.05, 0.04, 0.06 -> mean 0.05, sd 0.01, interval
    0.05 ± 4.3027 · 0.01 / √3 = [0.0252, 0.0748] > 0. Claim 2 margins b - l: 0.03 each (zero spread: the interval
    collapses to 0.03 > 0); scores 0.55, 0.56, 0.54 -> [0.5252, 0.5748] > 0.5. The untrained model's search is
    0.35-0.38 more exploitable than the base policy and scores 0.35 against it.
    """
    values = {
        "seeds": [0, 1, 2],
        "one_to_one_size": 12,
        "base": [0.10, 0.08, 0.12],
        "last_iterate": [0.11, 0.09, 0.13],
        "true_depth1": [0.02, 0.03, 0.01],
        "exact_search": [0.05, 0.04, 0.06],
        "exact_abstraction": [True] * 3,
        "exact_dynamics": [True] * 3,
        "limited_search": [0.07, 0.05, 0.09],
        "limited_score": [0.55, 0.56, 0.54],
        "limited_match_score": [0.55, 0.56, 0.54],
        "limited_match_ci95": [0.01] * 3,
        "true_full": [0.0004, 0.0005, 0.0003],
        "untrained_search": [0.45, 0.50, 0.40],
        "untrained_score": [0.35, 0.33, 0.37],
        "reward_mae": {"exact": [0.06] * 3, "limited": [0.10] * 3, "untrained": [0.70] * 3},
        "legal_accuracy": {"exact": [1.0] * 3, "limited": [0.9] * 3, "untrained": [0.2] * 3},
    }
    return Measurements(**{**values, **changes})


def test_held_when_both_claims_hold_on_the_interval():
    v = verdict(measured(), CONFIG)
    assert v.status == "held"
    c1, c2 = v.evidence["claim1"], v.evidence["claim2"]
    assert c1["mean"] == pytest.approx(0.05)
    assert c1["ci_low"] == pytest.approx(0.05 - T_975_2 * 0.01 / np.sqrt(3), abs=1e-9)
    assert c1["per_seed"][0]["tolerance_base_gap_to_true_model"] == pytest.approx(0.08)  # b - t, per replicate
    assert c1["per_seed"][0]["gap_to_true_model"] == pytest.approx(0.03)
    assert c2["mean"] == pytest.approx(0.03) and c2["ci_low"] == pytest.approx(0.03)
    assert c2["score_ci_low"] == pytest.approx(0.55 - T_975_2 * 0.01 / np.sqrt(3), abs=1e-9)
    assert set(v.evidence["thresholds"]) == {"interval_level", "min_score_vs_base", "max_solver_exploitability"}
    assert not v.evidence["untrained_control"]["passes"] and "fails, as it must" in v.measurement
    assert all(g["passed"] for g in v.evidence["gates"].values()) and len(v.evidence["gates"]) == 4
    assert "50%" in v.evidence["thresholds"]["min_score_vs_base"]["source"]


def test_claim1_fails_on_the_interval_although_every_replicate_holds():
    # margins 0.05, 0.02, 0.07: mean 0.04667, sd 0.02517 -> lower end 0.04667 - 4.3027 · 0.01453 = -0.0159 < 0
    v = verdict(measured(exact_search=[0.05, 0.06, 0.05]), CONFIG)
    assert [s["held"] for s in v.evidence["claim1"]["per_seed"]] == [True] * 3
    assert not v.evidence["claim1"]["held"] and v.status == "not held"
    # at the 50% level (t_{0.75, 2} = 0.8165) the lower end is 0.04667 - 0.01186 > 0: held
    assert verdict(measured(exact_search=[0.05, 0.06, 0.05]), dataclasses.replace(CONFIG, interval_level=0.5)).held


def test_claim1_needs_the_exact_structure_in_every_replicate():
    assert verdict(measured(exact_dynamics=[True, True, False]), CONFIG).status == "not held"
    assert verdict(measured(exact_abstraction=[False, True, True]), CONFIG).status == "not held"


def test_claim2_needs_both_the_exploitability_and_the_score():
    # the search is judged against the selected base, not the last iterate: it beats every replicate's last iterate
    # by 0.005 but is 0.005 worse than the selected base in every replicate
    v = verdict(measured(limited_search=[0.105, 0.085, 0.125]), CONFIG)
    assert [s["held"] for s in v.evidence["claim2"]["per_seed"]] == [False] * 3
    assert v.evidence["claim2"]["per_seed"][0]["last_iterate_exploitability"] == pytest.approx(0.11)
    assert v.status == "not held"
    # scores 0.52, 0.53, 0.51: interval [0.4952, 0.5448] reaches 0.5 -> not held
    assert verdict(measured(limited_score=[0.52, 0.53, 0.51]), CONFIG).status == "not held"


def test_measurements_need_one_entry_per_replicate():
    with pytest.raises(ValueError, match="limited_score"):
        measured(limited_score=[0.5, 0.5])
    with pytest.raises(ValueError, match="at least 2"):
        measured(**{k: v[:1] for k, v in dataclasses.asdict(measured()).items() if isinstance(v, list)})
    with pytest.raises(ValueError, match="reward_mae"):
        measured(reward_mae={"exact": [0.1] * 3, "limited": [0.1] * 3})


def test_a_control_that_passes_the_rule_makes_the_claim_not_held():
    # The untrained model's numbers replaced by the limited model's: the claim-2 rule passes for a model that
    # learned nothing, so it cannot tell a learned model from none.
    good = measured()
    v = verdict(measured(untrained_search=good.limited_search, untrained_score=good.limited_score), CONFIG)
    assert v.evidence["untrained_control"]["passes"] and v.status == "not held"
    assert "the rule cannot tell" in v.measurement
    # it takes both parts of the rule: an untrained search less exploitable than the base but scoring 0.35 fails it
    v = verdict(measured(untrained_search=good.limited_search), CONFIG)
    assert not v.evidence["untrained_control"]["passes"] and v.status == "held"


def test_without_the_control_the_claims_alone_would_hold():
    # Both claims hold in the same numbers whatever the control does: the control alone flips held to not held.
    good = measured()
    passing = verdict(measured(untrained_search=good.limited_search, untrained_score=good.limited_score), CONFIG)
    assert passing.evidence["claim1"]["held"] and passing.evidence["claim2"]["held"]
    assert passing.status == "not held" and verdict(good, CONFIG).status == "held"


@pytest.mark.parametrize(
    ("changes", "gate"),
    [
        # the true-model search at full depth 0.02 from Nash in one replicate: above max_solver_exploitability 0.01
        ({"true_full": [0.0004, 0.02, 0.0003]}, "search_machinery_exact"),
        # true-model depth-1 search no better than the base policy: b - t = 0, 0, 0
        ({"true_depth1": [0.10, 0.08, 0.12]}, "lookahead_improves_base"),
        # the limited model's rewards no closer than the untrained model's in one replicate
        ({"reward_mae": {"exact": [0.06] * 3, "limited": [0.1, 0.7, 0.1], "untrained": [0.7] * 3}}, "models_learned"),
        # the exact model's legal actions no better than the untrained model's in one replicate
        (
            {"legal_accuracy": {"exact": [1.0, 0.2, 1.0], "limited": [0.9] * 3, "untrained": [0.2] * 3}},
            "models_learned",
        ),
        # a one-to-one size of 30 (II-Goofspiel 5's largest public states need more): L = 24 cannot be one-to-one
        ({"one_to_one_size": 30}, "capacities_as_designed"),
        # a one-to-one size of 8: the limited capacity is not limited
        ({"one_to_one_size": 8}, "capacities_as_designed"),
    ],
)
def test_a_failed_gate_gives_inconclusive(changes, gate):
    v = verdict(measured(**changes), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == (gate,)
    assert f"gate failed: {gate}" in v.measurement


def test_the_solver_gate_threshold_comes_from_the_config():
    loose = dataclasses.replace(CONFIG, max_solver_exploitability=0.05)
    assert verdict(measured(true_full=[0.0004, 0.02, 0.0003]), loose).status == "held"
    assert "II-Goofspiel 4" in verdict(measured(), CONFIG).evidence["thresholds"]["max_solver_exploitability"]["source"]
