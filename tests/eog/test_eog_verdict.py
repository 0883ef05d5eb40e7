"""The verdict through its public function, on synthetic per-seed numbers: each part and the control can flip it."""

from __future__ import annotations

import dataclasses

from iclr26.eog.config import EogConfig
from iclr26.eog.verdict import Measurements, verdict

CONFIG = dataclasses.replace(EogConfig(), n_seeds=5, smollm2_check=False)
NOISE = [0.01, -0.01, 0.0, 0.02, -0.02]


def seeds(level: float, shift: int = 0) -> list[float]:
    return [level + e for e in NOISE[shift:] + NOISE[:shift]]


def numbers(**change: float) -> Measurements:
    """EoG wins on OOD Hits@1 and faithfulness at equal F1; the placebo raises faithfulness a little over GRPO(F1)
    (it still rewards citing in the format) but stays far below EoG; RL raised F1 over the SFT start."""
    hits = {"sft": 0.15, "imitation": 0.17, "grpo_f1": 0.35, "eog": 0.35, "placebo": 0.33}
    faith = {"sft": 0.5, "imitation": 0.5, "grpo_f1": 0.1, "eog": 0.7, "placebo": 0.2}
    f1 = {"sft": 0.3, "imitation": 0.3, "grpo_f1": 0.6, "eog": 0.6, "placebo": 0.6}
    valid = {arm: 0.99 for arm in hits}
    for key, value in change.items():
        table, arm = key.split("__")
        {"hits": hits, "faith": faith, "f1": f1, "valid": valid}[table][arm] = value
    arms = list(hits)
    return Measurements(
        ood_hits={a: seeds(hits[a], i) for i, a in enumerate(arms)},
        faithfulness={a: seeds(faith[a], i + 1) for i, a in enumerate(arms)},
        f1={a: seeds(f1[a], i + 2) for i, a in enumerate(arms)},
        off_path={a: seeds(1.0) for a in arms},
        valid={a: [valid[a]] * 5 for a in arms},
    )


def test_holds_when_every_part_passes_and_the_placebo_falls_short_of_eog():
    v = verdict(numbers(), CONFIG)
    assert v.status == "held", v.evidence["parts"]
    assert v.evidence["gates"]["sft_outputs_parse"]["passed"] and v.evidence["gates"]["rl_raises_f1"]["passed"]


def test_each_part_flips_it():
    assert verdict(numbers(hits__eog=0.15), CONFIG).status == "not held"  # (a) and (b): no OOD gain
    assert verdict(numbers(hits__imitation=0.35), CONFIG).status == "not held"  # (b) imitation as good
    assert verdict(numbers(faith__grpo_f1=0.7), CONFIG).status == "not held"  # (c) no faithfulness gain over F1
    assert verdict(numbers(f1__eog=0.45), CONFIG).status == "not held"  # (d) F1 lowered by 15 points


def test_a_placebo_that_raises_faithfulness_as_much_makes_it_not_held():
    # the control: random off-path triples scored as the path reward lift faithfulness as much as the gold path
    v = verdict(numbers(faith__placebo=0.7), CONFIG)
    assert v.status == "not held" and v.evidence["parts"]["e_eog_beats_placebo_faithfulness"] is False


def test_failed_gates_make_it_inconclusive():
    v = verdict(numbers(valid__sft=0.2), CONFIG)  # the SFT start does not answer in the format
    assert v.status == "inconclusive" and v.failed_gates == ("sft_outputs_parse",)
    v = verdict(numbers(f1__grpo_f1=0.3), CONFIG)  # RL did not raise its own reward over the SFT start
    assert v.status == "inconclusive" and "rl_raises_f1" in v.failed_gates
