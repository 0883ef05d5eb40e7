"""The verdict through its public function, on synthetic per-seed numbers: each part can flip it."""

from __future__ import annotations

import dataclasses

from iclr26.hicra.config import HicraConfig
from iclr26.hicra.verdict import Measurements, verdict

CONFIG = dataclasses.replace(HicraConfig(), n_seeds=5)
FLAT = [[1.0] * 20] * 5  # entropy curves for the reported two-phase rule (not part of the verdict)


def numbers(hicra_gain: float, placebo_gain: float) -> Measurements:
    """Five seeds; GRPO at 0.60 ± a little, each arm GRPO + its gain + a little noise."""
    noise = [0.01, -0.01, 0.0, 0.02, -0.02]
    grpo = [0.60 + e for e in noise]
    arms = {
        "grpo": grpo,
        "hicra": [g + hicra_gain + e / 2 for g, e in zip(grpo, noise[::-1], strict=True)],
        "placebo": [g + placebo_gain + e / 2 for g, e in zip(grpo, noise[1:] + noise[:1], strict=True)],
        "entropy": list(grpo),
    }
    return Measurements(
        final_acc=arms,
        auc={arm: [v - 0.05 for v in values] for arm, values in arms.items()},
        exec_entropy={arm: FLAT for arm in arms},
        semantic_entropy={arm: FLAT for arm in arms},
    )


def test_holds_when_hicra_wins_and_the_placebo_does_not():
    v = verdict(numbers(0.10, 0.0), CONFIG)
    assert v.status == "held"
    assert v.evidence["hicra_exceeds_grpo"] and not v.evidence["placebo_exceeds_grpo"]


def test_a_placebo_that_wins_too_makes_it_not_held():
    # the control: random n-grams amplified as much help as much, so the gain is not the planning tokens'
    assert verdict(numbers(0.10, 0.10), CONFIG).status == "not held"


def test_no_gain_is_not_held():
    assert verdict(numbers(0.0, 0.0), CONFIG).status == "not held"
    assert verdict(numbers(-0.10, 0.0), CONFIG).status == "not held"


def test_the_margin_is_a_threshold():
    m = numbers(0.10, 0.0)
    assert verdict(m, dataclasses.replace(CONFIG, min_gain=0.2)).status == "not held"
