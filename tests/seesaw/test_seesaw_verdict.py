"""The Seesaw verdict through its public function, on synthetic numbers: each gate, part and the control flip it.

The LM numbers: cosine's seeds at its two LRs are (1.00, 1.02, 0.98) and (1.10, 1.12, 1.08), sample sd 0.02 at
each, pooled sd 0.02, so the match tolerance is 2 × 0.02 = 0.04 and cosine's best LR is the first (mean 1.00).
"""

from __future__ import annotations

import dataclasses

import pytest

from iclr26.seesaw.config import SeesawConfig
from iclr26.seesaw.verdict import UNIFORM_LOSS, Measurements, verdict

CONFIG = SeesawConfig()  # gap_tolerance 0.1, tolerance_sigmas 2
COSINE = {3e-3: [1.00, 1.02, 0.98], 6e-3: [1.10, 1.12, 1.08]}
THEORY = {"sgd_ramp": 0.02, "sgd_mixed": 0.01, "nsgd_seesaw": 0.004, "nsgd_naive": 0.2}
ADAM = {0.95: {"seesaw": 0.03, "naive": 0.4, "pure": 0.3}, 0.999: {"seesaw": 0.4, "naive": 0.09, "pure": 0.9}}
REGIME = {0.95: True, 0.999: False}


def measured(seesaw: float, naive: float, **changes) -> Measurements:
    """Seesaw's and the naive ramp's seeds at their one LR: the given mean ± 0.01."""
    lm = {"cosine": COSINE, "seesaw": {3e-3: [seesaw, seesaw + 0.01, seesaw - 0.01]},
          "naive": {3e-3: [naive, naive + 0.01, naive - 0.01]}}  # fmt: skip
    return dataclasses.replace(Measurements(THEORY, ADAM, REGIME, lm, lm_n_params=25_000), **changes)


def test_held_when_seesaw_matches_and_the_naive_ramp_is_separated():
    v = verdict(measured(1.01, 1.08), CONFIG)
    assert v.status == "held" and v.failed_gates == ()
    assert v.evidence["lm_loss_tolerance"] == pytest.approx(0.04)
    assert v.evidence["lm_naive_gap"] == pytest.approx(0.08)
    assert v.evidence["adam_gaps_in_claim_regime"] == {"0.95": ADAM[0.95]}  # β2 = 0.999 reported, not judged


def test_a_naive_ramp_inside_the_tolerance_makes_the_lm_test_bed_inconclusive():
    # The wrong rule "matches" cosine as well as Seesaw does: the LM cannot tell them apart.
    v = verdict(measured(1.01, 1.02), CONFIG)
    assert v.status == "inconclusive" and v.failed_gates == ("naive_ramp_separated",)
    # A naive ramp better than cosine is no separation either (the control must lose).
    assert verdict(measured(1.01, 0.90), CONFIG).failed_gates == ("naive_ramp_separated",)


def test_seesaw_outside_the_tolerance_is_not_held():
    v = verdict(measured(1.06, 1.10), CONFIG)
    assert v.status == "not held" and not v.evidence["lm_seesaw_within_tolerance"]


def test_the_theory_part_and_its_naive_control_flip_the_verdict():
    # NSGD's naive ramp overlapping LR decay: Thm 1's NSGD extension says it must not.
    assert verdict(measured(1.01, 1.08, theory_gaps=THEORY | {"nsgd_naive": 0.05}), CONFIG).status == "not held"
    # Adam in the regime: Seesaw off LR decay, or the naive ramp on it.
    off = {0.95: {"seesaw": 0.2, "naive": 0.4, "pure": 0.3}, 0.999: ADAM[0.999]}
    assert verdict(measured(1.01, 1.08, adam_gaps=off), CONFIG).status == "not held"
    # No β2 in the claim's regime: the Adam part cannot be shown.
    none = {0.95: False, 0.999: False}
    assert verdict(measured(1.01, 1.08, adam_in_regime=none), CONFIG).status == "not held"
    # β2 outside the regime do not count, whatever they show.
    assert verdict(measured(1.01, 1.08, adam_gaps={**ADAM, 0.999: {"seesaw": 9.0, "naive": 0.0}}), CONFIG).status == (
        "held"
    )


def test_an_lm_that_learned_nothing_is_inconclusive():
    lm = {"cosine": {lr: [x + UNIFORM_LOSS for x in v] for lr, v in COSINE.items()}}
    m = measured(1.01, 1.08)
    v = verdict(dataclasses.replace(m, lm_final=m.lm_final | lm), CONFIG)
    assert "lm_learned" in v.failed_gates and v.status == "inconclusive"


def test_the_tolerance_comes_from_cosine_alone_with_its_source():
    v = verdict(measured(1.01, 1.08), dataclasses.replace(CONFIG, tolerance_sigmas=1.0))  # tolerance 0.02
    assert v.evidence["lm_loss_tolerance"] == pytest.approx(0.02) and v.status == "held"
    assert verdict(measured(1.03, 1.08), dataclasses.replace(CONFIG, tolerance_sigmas=1.0)).status == "not held"
    assert set(v.evidence["thresholds"]) == {"tolerance_sigmas", "gap_tolerance", "adam_horizon_fraction"}
