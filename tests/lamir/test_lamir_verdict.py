"""Issue 17: the base policy is chosen by a rule fixed in advance, and both claims are judged over replicates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from iclr26.lamir.experiment import LamirConfig, judge, select_base_checkpoint  # noqa: E402


def test_base_checkpoint_is_the_lower_median_of_the_second_half():
    # 3000 steps, checkpoints every 250 and at 2999: the second half is 1500 .. 2999 (7 checkpoints). Sorted by
    # exploitability: 0.05 (2250), 0.07 (1500), 0.09 (2750), 0.10 (2000), 0.11 (1750), 0.12 (2500), 0.135 (2999)
    # -> the median (index 3) is step 2000 with 0.10. The first half (0.01 at step 250) is never considered, and
    # the last iterate (0.135, the most exploitable: the seed-0 trap of issue 17) is not chosen.
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


def _replicate(seed: int, base: float, true_d1: float, exact: float, limited: float, score: float, ok: bool = True):
    def model(expl: float, s: float) -> dict:
        return {
            "exploitability": expl,
            "exact_score_vs_base": s,
            "match_vs_base": {"score": s, "ci95": 0.01},
            "accuracy": {"exact_abstraction": ok, "dynamics_exact": True},
        }

    return {
        "seed": seed,
        "base_exploitability": base,
        "last_iterate_exploitability": base + 0.01,
        "true_model_depth1_exploitability": true_d1,
        "models": {"exact": model(exact, 0.5), "L8": model(limited, score)},
    }


def test_judge_over_replicates_by_hand():
    # claim 1 margins b - e: 0.10-0.05, 0.08-0.06, 0.12-0.05 = 0.05, 0.02, 0.07 -> mean 0.046667,
    # sd = sqrt(((0.003333)² + (0.026667)² + (0.023333)²) / 2) = 0.025166, se = 0.014530, t_{0.975,2} = 4.302653
    # -> interval [-0.015850, 0.109183]: contains 0, so claim 1 is not held although every seed holds.
    reps = [
        _replicate(0, 0.10, 0.02, 0.05, 0.07, 0.52),
        _replicate(1, 0.08, 0.03, 0.06, 0.05, 0.53),
        _replicate(2, 0.12, 0.01, 0.05, 0.09, 0.51),
    ]
    config = LamirConfig()
    ev = judge(config, reps, one_to_one_size=12)
    c1 = ev["claim1"]
    assert c1["mean"] == pytest.approx(0.14 / 3)
    sd = np.std([0.05, 0.02, 0.07], ddof=1)
    assert c1["ci_low"] == pytest.approx(0.14 / 3 - 4.302653 * sd / np.sqrt(3), abs=1e-6)
    assert [s["held"] for s in c1["per_seed"]] == [True, True, True]
    assert c1["per_seed"][0]["tolerance_base_gap_to_true_model"] == pytest.approx(0.08)  # b - t, derived per seed
    assert c1["per_seed"][0]["gap_to_true_model"] == pytest.approx(0.03)
    assert c1["held"] is False
    # claim 2 margins b - l: 0.03, 0.03, 0.03 (zero spread: interval collapses to 0.03 > 0); scores 0.52, 0.53, 0.51
    # -> mean 0.52, sd 0.01, interval 0.52 ± 4.302653 · 0.01 / sqrt(3) = [0.49516, 0.54484]: contains 0.5 -> not held
    c2 = ev["claim2"]
    assert c2["mean"] == pytest.approx(0.03) and c2["ci_low"] == pytest.approx(0.03)
    assert c2["score_mean"] == pytest.approx(0.52)
    assert c2["score_ci_low"] == pytest.approx(0.52 - 4.302653 * 0.01 / np.sqrt(3), abs=1e-6)
    assert c2["held"] is False
    # at the 50% level the interval shrinks (t_{0.75,2} = 0.816497): score [0.51529, 0.52471] > 0.5 -> held; claim 1
    # [0.046667 - 0.011864, ...] > 0 -> held
    loose = judge(dataclasses.replace(config, interval_level=0.5), reps, one_to_one_size=12)
    assert loose["claim2"]["held"] is True and loose["claim1"]["held"] is True
    assert loose["thresholds"]["interval_level"]["value"] == 0.5
    # one replicate whose abstraction is not one-to-one fails claim 1 whatever the margins
    broken = [*reps[:2], _replicate(2, 0.12, 0.01, 0.05, 0.09, 0.51, ok=False)]
    assert judge(dataclasses.replace(config, interval_level=0.5), broken, one_to_one_size=12)["claim1"]["held"] is False
    # a capacity below the one-to-one size cannot check claim 1; a limited capacity at it cannot check claim 2
    assert judge(dataclasses.replace(config, interval_level=0.5), reps, one_to_one_size=30)["claim1"]["held"] is False
    assert judge(dataclasses.replace(config, interval_level=0.5), reps, one_to_one_size=8)["claim2"]["held"] is False


def test_claim2_is_judged_against_the_selected_base_not_the_last_iterate():
    # the search (0.09) beats each seed's last iterate (base + 0.01 = 0.095 .. ) in seed 0 only by the last
    # iterate's margin; against the selected base (0.085) it is worse in every seed: per seed not held
    reps = [_replicate(j, 0.085, 0.02, 0.05, 0.09, 0.55) for j in range(3)]
    ev = judge(LamirConfig(), reps, one_to_one_size=12)
    assert [s["held"] for s in ev["claim2"]["per_seed"]] == [False] * 3
    assert ev["claim2"]["per_seed"][0]["last_iterate_exploitability"] == pytest.approx(0.095)
    assert ev["claim2"]["held"] is False
