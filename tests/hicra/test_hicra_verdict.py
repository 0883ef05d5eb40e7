"""The verdict through its public function, on synthetic per-seed numbers: each part can flip it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from iclr26.hicra.config import HicraConfig
from iclr26.hicra.verdict import Measurements, binomial_sd, power, verdict

CONFIG = dataclasses.replace(HicraConfig(), n_seeds=5)
FLAT = [[1.0] * 20] * 5  # entropy curves for the reported two-phase rule (not part of the verdict)


def numbers(hicra_gain: float, placebo_gain: float, rl_gain: float = 0.08) -> Measurements:
    """Five seeds from one SFT start at 0.55; GRPO ends at 0.55 + rl_gain ± a little, each arm at GRPO + its gain."""
    noise = [0.01, -0.01, 0.0, 0.02, -0.02]
    grpo = [0.55 + rl_gain + e for e in noise]
    arms = {
        "grpo": grpo,
        "hicra": [g + hicra_gain + e / 2 for g, e in zip(grpo, noise[::-1], strict=True)],
        "placebo": [g + placebo_gain + e / 2 for g, e in zip(grpo, noise[1:] + noise[:1], strict=True)],
        "entropy": list(grpo),
    }
    return Measurements(
        start_acc={arm: [0.55] * 5 for arm in arms},
        final_acc=arms,
        auc={arm: [v - 0.05 for v in values] for arm, values in arms.items()},
        exec_entropy={arm: FLAT for arm in arms},
        semantic_entropy={arm: FLAT for arm in arms},
        n_held_out=449,
    )


def test_holds_when_hicra_wins_and_the_placebo_does_not():
    v = verdict(numbers(0.10, 0.0), CONFIG)
    assert v.status == "held"
    assert v.evidence["hicra_exceeds_grpo"] and not v.evidence["placebo_exceeds_grpo"]
    assert v.evidence["gates"]["rl_moves_grpo"]["passed"]


def test_a_placebo_that_wins_too_makes_it_not_held():
    # the control: random n-grams amplified as much help as much, so the gain is not the planning tokens'
    assert verdict(numbers(0.10, 0.10), CONFIG).status == "not held"


def test_no_gain_is_not_held():
    assert verdict(numbers(0.0, 0.0), CONFIG).status == "not held"
    assert verdict(numbers(-0.10, 0.0), CONFIG).status == "not held"


def test_rl_that_does_not_move_grpo_makes_it_inconclusive():
    v = verdict(numbers(0.10, 0.0, rl_gain=0.0), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("rl_moves_grpo",)
    assert verdict(numbers(0.10, 0.0, rl_gain=0.08), dataclasses.replace(CONFIG, min_rl_gain=0.2)).status == (
        "inconclusive"
    )


def test_the_margin_is_a_threshold():
    assert verdict(numbers(0.10, 0.0), dataclasses.replace(CONFIG, min_gain=0.2)).status == "not held"


def test_power_is_the_size_at_no_effect_and_matches_a_simulation():
    # at an effect equal to the margin the rejection rate is 1 - confidence (the test's size)
    assert power(0.0, 0.05, 5, confidence=0.95) == pytest.approx(0.05, abs=1e-9)
    # a simulation of the one-sided paired t-test: 5 seeds, differences N(0.03, 0.03²)
    rng = np.random.default_rng(0)
    d = rng.normal(0.03, 0.03, size=(40_000, 5))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(5))
    simulated = float((t > stats.t.ppf(0.95, 4)).mean())
    assert power(0.03, 0.03, 5, confidence=0.95) == pytest.approx(simulated, abs=0.01)
    assert power(0.03, 0.03, 10, confidence=0.95) > power(0.03, 0.03, 5, confidence=0.95)
    assert math.isnan(power(0.03, 0.03, 1, confidence=0.95))


def test_binomial_sd_by_hand():
    # p = 0.7, N = 58: √(2 · 0.21 / 58) = 0.0851
    assert binomial_sd(0.7, 58) == pytest.approx(math.sqrt(0.42 / 58))
    v = verdict(numbers(0.10, 0.0), CONFIG)
    report = v.evidence["power"]
    assert report["held_out_items"] == 449 and report["design_sd"] == pytest.approx(binomial_sd(0.63, 449))
