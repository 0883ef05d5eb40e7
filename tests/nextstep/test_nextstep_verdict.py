"""The verdict through its public function on synthetic per-seed numbers, and the arms' wiring."""

from __future__ import annotations

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


def measurements(control_faith=0.1, **changes):
    samples = {
        "fm": arm(0.8, 0.6, 10),
        "reg": arm(0.6, 0.5, 20),
        "vq": arm(0.5, 0.4, 30),
        "fm_shuffled": arm(control_faith, 0.1, 50),
    }
    samples.update(changes)
    return Measurements(samples={k: v for k, v in samples.items() if v is not None}, judge_accuracy=0.97)


def test_held_when_fm_wins_and_the_control_fails():
    v = verdict(measurements(), CONFIG)
    assert v.status == "held"
    assert v.evidence["comparisons_cfg_on"]["fd_reg_minus_fm"]["mean"] == 10.0
    assert set(v.evidence["thresholds"]) >= {"min_faithfulness", "ci_level", "cfg_scale"}


def test_the_control_passing_or_missing_changes_the_verdict():
    assert verdict(measurements(control_faith=0.7), CONFIG).status != "held"
    assert verdict(measurements(fm_shuffled=None), CONFIG).status != "held"


def test_a_baseline_beating_fm_gives_not_held():
    v = verdict(measurements(vq=arm(0.85, 0.4, 30)), CONFIG)
    assert v.status == "not held"
    assert v.evidence["checks"]["faith_fm_minus_vq"] is False and v.evidence["checks"]["fd_vq_minus_fm"] is True


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
