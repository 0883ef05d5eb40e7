"""The verdict through its public function on synthetic per-seed numbers, and the arms' wiring."""

from __future__ import annotations

import pytest
import torch

from iclr26.nextstep.config import NextStepConfig
from iclr26.nextstep.experiment import make_head
from iclr26.nextstep.heads import DiscreteHead, FlowMatchingHead, RegressionHead
from iclr26.nextstep.verdict import Measurements, verdict

CONFIG = NextStepConfig()
JITTER = [0.0, 0.01, -0.01, 0.02, -0.02]


def arm(faith_cfg, faith_no, fd, diversity=1.0):
    """Five seeds of one arm: faithfulness with and without guidance, Fréchet distance, diversity."""
    return {
        "cfg": {
            "faithfulness": [faith_cfg + j for j in JITTER],
            "fd": [fd + j for j in JITTER],
            "diversity": [diversity] * 5,
        },
        "no_cfg": {
            "faithfulness": [faith_no + j / 2 for j in JITTER],
            "fd": [fd + 5] * 5,
            "diversity": [diversity] * 5,
        },
    }


def measurements(control_faith=0.1, judge=0.97, ceilings=None, **changes):
    """FM wins on FD and diversity, is as faithful as the (collapsed) regression head and beats VQ."""
    samples = {
        "fm": arm(0.8, 0.6, 10),
        "reg": arm(0.8, 0.7, 20, diversity=0.0),
        "vq": arm(0.5, 0.4, 30),
        "fm_shuffled": arm(control_faith, 0.1, 50),
    }
    samples.update(changes)
    return Measurements(
        samples={k: v for k, v in samples.items() if v is not None},
        judge_accuracy=judge,
        ceilings={"continuous": 0.95, "vq": 0.9} if ceilings is None else ceilings,
    )


def test_held_when_fm_wins_the_gates_pass_and_the_control_fails():
    v = verdict(measurements(), CONFIG)
    assert v.status == "held", v.evidence
    assert v.evidence["comparisons_cfg_on"]["fd_reg_minus_fm"]["mean"] == 10.0
    assert set(v.evidence["thresholds"]) >= {"min_faithfulness", "faith_noninferiority_margin", "min_judge_accuracy"}
    assert set(v.evidence["gates"]) == {
        "all_arms_ran", "judge_accuracy", "control_fails_faithfulness_bar", "tokenizer_ceiling_continuous",
        "tokenizer_ceiling_vq",
    }  # fmt: skip


def test_the_control_passing_or_missing_makes_it_inconclusive():
    passing = verdict(measurements(control_faith=0.7), CONFIG)
    assert passing.status == "inconclusive" and passing.failed_gates == ("control_fails_faithfulness_bar",)
    missing = verdict(measurements(fm_shuffled=None), CONFIG)
    assert missing.status == "inconclusive" and "all_arms_ran" in missing.failed_gates


@pytest.mark.parametrize(
    ("change", "gate"),
    [
        ({"judge": 0.8}, "judge_accuracy"),
        ({"ceilings": {"continuous": 0.95, "vq": 0.3}}, "tokenizer_ceiling_vq"),
        ({"ceilings": {"vq": 0.9}}, "tokenizer_ceiling_continuous"),
    ],
)
def test_a_failed_gate_gives_inconclusive(change, gate):
    v = verdict(measurements(**change), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == (gate,)


def test_faithfulness_against_reg_is_non_inferiority_within_delta():
    # FM 0.03 below the collapsed regression head: within delta = 0.05, still held
    assert verdict(measurements(reg=arm(0.83, 0.7, 20, diversity=0.0)), CONFIG).status == "held"
    # 0.1 below: the interval's lower end is under -delta
    v = verdict(measurements(reg=arm(0.9, 0.7, 20, diversity=0.0)), CONFIG)
    assert v.status == "not held" and v.evidence["checks"]["faith_fm_minus_reg"] is False


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ({"vq": arm(0.85, 0.4, 30)}, "faith_fm_minus_vq"),
        ({"vq": arm(0.5, 0.4, 5)}, "fd_vq_minus_fm"),
        ({"reg": arm(0.8, 0.7, 20, diversity=1.5)}, "div_fm_minus_reg"),
        ({"fm": arm(0.6, 0.6, 10)}, "faith_fm_cfg_minus_no_cfg"),
    ],
)
def test_each_check_failing_gives_not_held(change, check):
    v = verdict(measurements(**change), CONFIG)
    assert v.status == "not held" and v.evidence["checks"][check] is False


def test_the_heads_differ_in_what_the_paper_changes():
    # fm and its control share the flow-matching head; reg and vq get the same network read as a regression or logits
    heads = {a: make_head(CONFIG, a, 16) for a in ("fm", "fm_shuffled", "reg", "vq")}
    assert type(heads["fm"]) is FlowMatchingHead and type(heads["fm_shuffled"]) is FlowMatchingHead
    assert type(heads["reg"]) is RegressionHead and type(heads["vq"]) is DiscreteHead
    assert heads["fm"].batch_mul == CONFIG.batch_mul
    n = {a: sum(p.numel() for p in h.parameters()) for a, h in heads.items()}
    assert n["reg"] == n["fm"] + 16  # the same network plus the learned constant input x0
    # the flow-matching head reads the noisy token x_t; the regression head's input is its constant x0
    c, t = torch.randn(3, CONFIG.d_model), torch.full((3,), 0.5)
    fm = heads["fm"]
    torch.nn.init.normal_(fm.net.out.weight)
    assert not torch.allclose(fm.velocity(torch.randn(3, 16), t, c), fm.velocity(torch.randn(3, 16), t, c))
