"""The verdict through the public ``verdict()`` on scripted labels (no model): each part can flip it."""

import pytest

from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.verdict import PROMPTING, Measurements, analyse, verdict

N = 36
CATEGORIES = ["Gender_identity"] * 8 + ["Age"] * (N - 8)
CONFIG = BiasFreeConfig(n_boot=400)
GOOD, MIX = ["unknown"] * N, ["biased", "anti"] * (N // 2)
MOVED = ["anti", "biased"] * (N // 2)  # BFS 50 like MIX, but every answer changed from vanilla's


def _labels(prompt, train, placebo="biased", dpo=None):
    out = {"vanilla": MIX, "placebo": [placebo] * N if placebo != "mix" else MIX}
    out.update({m: prompt for m in PROMPTING})
    out.update({m: train for m in ("sft", "dpo", "dpo_gender", "task_vector")})
    if dpo is not None:
        out["dpo"] = dpo
    return out


def _verdict(labels):
    return verdict(Measurements(labels, CATEGORIES, "scripted"), CONFIG)


def test_claim_holds_when_prompting_is_clearly_better_and_the_control_shows_nothing():
    v = _verdict(_labels(GOOD, MOVED, placebo="mix"))
    assert v.status == "held" and v.evidence["prompting_beats_training"] and v.evidence["control_fails"]
    # prompting: BFS 100 on every item; training: (anti) / (anti + biased) = 50
    assert v.evidence["prompting_minus_training"]["estimate"] == pytest.approx(50.0)
    assert set(v.evidence["thresholds"]) >= {"prompting_margin", "dpo_sft_margin", "max_unclassified"}


def test_each_failed_part_fails_the_claim():
    # training as good as prompting: the headline fails
    assert _verdict(_labels(GOOD, GOOD, placebo="mix")).status == "not held"
    # DPO far below SFT: DPO >= SFT fails
    v = _verdict(_labels(GOOD, MOVED, placebo="mix", dpo=["biased"] * N))
    assert not v.evidence["dpo_not_worse_than_sft"] and v.status == "not held"
    # the judge could not classify most responses of one method
    labels = _labels(GOOD, MOVED, placebo="mix")
    labels["cot"] = ["unrelated"] * (N - 2) + ["unknown"] * 2
    v = _verdict(labels)
    assert not v.evidence["judged_enough"] and v.status == "not held"


def test_a_control_that_gains_like_a_debiasing_prompt_fails_the_claim():
    # the placebo prompt "gains" as much as a debiasing prompt: the test bed credits any change of prompt
    v = _verdict(_labels(GOOD, MOVED, placebo="unknown"))
    assert not v.evidence["control_fails"] and v.status == "not held"


def test_always_unknown_is_not_enough_when_training_does_it_too():
    # the laziest method, "unknown" for everything, scores BFS 100; used by prompts and training alike it cannot
    # make prompting beat training
    assert _verdict(_labels(GOOD, GOOD, placebo="mix")).status == "not held"


def test_intervals_are_drawn_in_a_fixed_order_from_the_seed():
    m = Measurements(_labels(GOOD, MOVED, placebo="mix"), CATEGORIES, "scripted")
    a, b = analyse(m, CONFIG), analyse(m, CONFIG)
    assert a == b and list(a.overall) == list(m.labels)
    assert a.findings["dpo_gender_vs_dpo_other_categories"]["n_items"] == N - 8  # the Age items only


@pytest.mark.parametrize("arm", ["sft", "dpo", "task_vector"])
def test_a_training_arm_that_did_not_change_the_answers_gives_inconclusive(arm):
    # the arm answers exactly as the base model did: it was not moved, so it says nothing about training
    labels = _labels(GOOD, MOVED, placebo="mix")
    labels[arm] = list(MIX)
    v = _verdict(labels)
    assert v.status == "inconclusive" and v.failed_gates == (f"{arm}_changed_answers",)
    assert v.evidence["gates"][f"{arm}_changed_answers"]["changed"] == 0


def test_the_gate_counts_changed_labels_against_its_threshold():
    # 4 of 36 answers changed (11%) passes the 10% gate; 3 (8%) does not
    for changed, status in ((4, "held"), (3, "inconclusive")):
        labels = _labels(GOOD, MOVED, placebo="mix")
        labels["task_vector"] = MOVED[:changed] + MIX[changed:]  # the first answers flipped, the rest vanilla's
        v = _verdict(labels)
        assert v.status == status and v.evidence["gates"]["task_vector_changed_answers"]["changed"] == changed
