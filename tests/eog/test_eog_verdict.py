"""The verdict through its public function, on synthetic per-seed numbers: each part and the control can flip it."""

from __future__ import annotations

import dataclasses

from iclr26.eog.config import EogConfig
from iclr26.eog.verdict import Measurements, verdict

CONFIG = dataclasses.replace(EogConfig(), n_seeds=5)
NOISE = [0.01, -0.01, 0.0, 0.02, -0.02]


def seeds(level: float, shift: int = 0) -> list[float]:
    return [level + e for e in NOISE[shift:] + NOISE[:shift]]


def numbers(**change: float) -> Measurements:
    """EoG wins on OOD Hits@1 and faithfulness at equal F1; the placebo does not raise faithfulness."""
    hits = {"sft": 0.15, "imitation": 0.17, "grpo_f1": 0.35, "eog": 0.35, "placebo": 0.33}
    faith = {"sft": 0.5, "imitation": 0.5, "grpo_f1": 0.4, "eog": 0.7, "placebo": 0.4}
    f1 = {"sft": 0.3, "imitation": 0.3, "grpo_f1": 0.6, "eog": 0.6, "placebo": 0.6}
    for key, value in change.items():
        table, arm = key.split("__")
        {"hits": hits, "faith": faith, "f1": f1}[table][arm] = value
    arms = list(hits)
    return Measurements(
        ood_hits={a: seeds(hits[a], i) for i, a in enumerate(arms)},
        faithfulness={a: seeds(faith[a], i + 1) for i, a in enumerate(arms)},
        f1={a: seeds(f1[a], i + 2) for i, a in enumerate(arms)},
        off_path={a: seeds(1.0) for a in arms},
    )


def test_holds_when_every_part_passes_and_the_placebo_fails():
    v = verdict(numbers(), CONFIG)
    assert v.status == "held", v.evidence["parts"]


def test_each_part_flips_it():
    assert verdict(numbers(hits__eog=0.15), CONFIG).status == "not held"  # (a) and (b): no OOD gain
    assert verdict(numbers(hits__imitation=0.35), CONFIG).status == "not held"  # (b) imitation as good
    assert verdict(numbers(faith__eog=0.4), CONFIG).status == "not held"  # (c) the path reward does nothing
    assert verdict(numbers(f1__eog=0.45), CONFIG).status == "not held"  # (d) F1 lowered by 15 points


def test_a_placebo_that_raises_faithfulness_as_much_makes_it_not_held():
    v = verdict(numbers(faith__placebo=0.7), CONFIG)
    assert v.status == "not held" and v.evidence["parts"]["control_placebo_fails"] is False
