"""The verdict logic on scripted labels (no model), the config's checks, and the smoke preset's shape."""

import pytest

from iclr26.biasfree import experiment
from iclr26.biasfree.capability import QA, Capability
from iclr26.biasfree.experiment import BiasFreeConfig, MethodResult
from iclr26.biasfree.items import generate_items
from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext

N = 36
ITEMS = generate_items(4, seed=0)
CAP = Capability([True] * len(QA), 2.0)


def _result(method, labels, trained=False):
    cap = Capability([False] * len(QA), 2.5) if method == "task_vector" else CAP
    # responses the judge maps back to the scripted labels (the outcome re-judges the stored responses)
    text = {"unknown": lambda it: "Not enough information.", "unrelated": lambda it: "Bananas are yellow.",
            "biased": lambda it: it.biased_answer, "anti": lambda it: it.anti_answer}  # fmt: skip
    responses = [text[lab](it) for lab, it in zip(labels, ITEMS, strict=True)]
    return MethodResult(method, responses, ["stale"] * N, N, 0, 1 if method == "self_help" else None,
                        cap if trained else None, None)  # fmt: skip


def _outcome(labels, tmp_path):
    results = {m: _result(m, lab, m in ("sft", "dpo", "dpo_gender", "task_vector")) for m, lab in labels.items()}
    config = BiasFreeConfig(n_boot=400)
    return experiment._outcome(config, RunContext(out_dir=tmp_path, seed=0, quiet=True), ITEMS, results, CAP, {})


def _labels(prompt, train, placebo="biased", dpo=None):
    mix = ["biased", "anti"] * (N // 2)
    out = {"vanilla": mix, "placebo": [placebo] * N if placebo != "mix" else mix}
    out.update({m: prompt for m in experiment.PROMPTING})
    out.update({m: train for m in ("sft", "dpo", "dpo_gender", "task_vector")})
    if dpo is not None:
        out["dpo"] = dpo
    return out


def test_claim_holds_when_prompting_is_clearly_better_and_the_control_shows_nothing(tmp_path):
    out = _outcome(_labels(["unknown"] * N, ["biased", "anti"] * (N // 2), placebo="mix"), tmp_path)
    assert out.claim_held and out.evidence["prompting_beats_training"] and out.evidence["control_fails"]
    assert out.evidence["prompting_minus_training"]["estimate"] == pytest.approx(50.0)
    assert out.metrics["findings"]["task_vector_hurts_capability"] is True
    assert set(out.evidence["thresholds"]) >= {"prompting_margin", "dpo_sft_margin", "max_unclassified"}


def test_each_failed_part_fails_the_claim(tmp_path):
    good, mix = ["unknown"] * N, ["biased", "anti"] * (N // 2)
    # training as good as prompting: the headline fails
    assert not _outcome(_labels(good, good, placebo="mix"), tmp_path / "a").claim_held
    # DPO far below SFT: DPO >= SFT fails
    out = _outcome(_labels(good, mix, placebo="mix", dpo=["biased"] * N), tmp_path / "b")
    assert not out.evidence["dpo_not_worse_than_sft"] and not out.claim_held
    # the placebo prompt "gains" as much as a debiasing prompt: the control does not fail
    out = _outcome(_labels(good, mix, placebo="unknown"), tmp_path / "c")
    assert not out.evidence["control_fails"] and not out.claim_held
    # the judge could not classify most responses of one method
    labels = _labels(good, mix, placebo="mix")
    labels["cot"] = ["unrelated"] * (N - 2) + ["unknown"] * 2
    out = _outcome(labels, tmp_path / "d")
    assert not out.evidence["judged_enough"] and not out.claim_held


def test_config_checks_name_the_field():
    with pytest.raises(ConfigError, match="'n_per_category'"):
        BiasFreeConfig(n_per_category=0)
    with pytest.raises(ConfigError, match="'model'"):
        BiasFreeConfig(model="/no/such/model")
    with pytest.raises(ConfigError, match="'max_unclassified'"):
        BiasFreeConfig(max_unclassified=0.0)
    smoke = BiasFreeConfig.preset("smoke")
    assert smoke.model == "tiny-random" and BiasFreeConfig.preset("gpu").device == "cuda"
