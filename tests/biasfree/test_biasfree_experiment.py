"""The config's checks, the arms' wiring (what each trained arm trains on) and the smoke preset through the CLI."""

import dataclasses

import numpy as np
import pytest
import torch

from iclr26.biasfree import experiment
from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.items import generate_items, generate_pairs
from iclr26.biasfree.prompts import option_order
from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE


def test_config_checks_name_the_field():
    with pytest.raises(ConfigError, match="'n_per_category'"):
        BiasFreeConfig(n_per_category=0)
    with pytest.raises(ConfigError, match="'model'"):
        BiasFreeConfig(model="/no/such/model")
    with pytest.raises(ConfigError, match="'max_unclassified'"):
        BiasFreeConfig(max_unclassified=0.0)
    for name in ("train_steps", "n_per_category", "n_boot", "max_new_tokens"):
        with pytest.raises(ConfigError, match=f"'{name}'"):
            BiasFreeConfig(**{name: 10**18})
    smoke = BiasFreeConfig.preset("smoke")
    assert smoke.model == "tiny-random" and BiasFreeConfig.preset("gpu").device == "cuda"


@pytest.mark.parametrize(
    ("arm", "method", "negated"), [("task_vector", "stereo_sft", True), ("sft", "sft", False), ("dpo", "dpo", False)]
)
def test_each_arm_trains_what_the_paper_says(monkeypatch, arm, method, negated):
    # the task vector is fine-tuned on the stereotyped continuations and then negated with tv_lambda; SFT and DPO
    # are not negated
    calls = {"train": [], "negate": []}
    train, negate = experiment.train_pairs, experiment.negate_task_vector

    def spy_train(lm, pairs, **kw):
        calls["train"].append(kw["method"])
        return train(lm, pairs, **kw)

    def spy_negate(ft, base, *, lam):
        calls["negate"].append(lam)
        return negate(ft, base, lam=lam)

    monkeypatch.setattr(experiment, "train_pairs", spy_train)
    monkeypatch.setattr(experiment, "negate_task_vector", spy_negate)
    config = dataclasses.replace(BiasFreeConfig.preset("smoke"), tv_lambda=0.7)
    items = generate_items(1, seed=0)[:2]
    orders = [option_order(it, np.random.default_rng(0)) for it in items]
    out = experiment.train_arm(config, arm, items, orders, generate_pairs()[:4], SINGLE, torch.device("cpu"))
    assert calls["train"] == [method] and calls["negate"] == ([0.7] if negated else [])
    assert out.train is not None and out.capability is not None and len(out.responses) == 2


def test_smoke_run(smoke):
    record = smoke("biasfree")
    assert record["claim_held"] in ("held", "not held", "inconclusive")
    metrics = record["metrics"]
    assert set(metrics["bfs"]) == {"vanilla", "placebo", "self_aware", "cot", "self_reflection", "self_help", "sft",
                                   "dpo", "dpo_gender", "task_vector"}  # fmt: skip
    assert set(metrics["train"]) == {"sft", "dpo", "dpo_gender", "task_vector"}
    assert record["units"][:2] == ["prompt-vanilla", "prompt-placebo"]
    assert "bfs.png" in record["plots"]


DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.mark.parametrize("device", DEVICES)
def test_every_model_answers_and_is_probed_on_the_configured_device(device, monkeypatch):
    # the base model's prompting, a trained arm's answers and its capability probe run on config.device
    from iclr26.common.pretrained import PretrainedLM

    seen = []
    generate, choice = PretrainedLM.generate, PretrainedLM.choice_logprobs

    def spy_generate(self, *args, **kw):
        seen.append(("generate", self.device.type, next(self.model.parameters()).device.type))
        return generate(self, *args, **kw)

    def spy_choice(self, *args, **kw):
        seen.append(("probe", self.device.type, next(self.model.parameters()).device.type))
        return choice(self, *args, **kw)

    monkeypatch.setattr(PretrainedLM, "generate", spy_generate)
    monkeypatch.setattr(PretrainedLM, "choice_logprobs", spy_choice)
    config = dataclasses.replace(BiasFreeConfig.preset("smoke"), device=device)
    dev = torch.device(device)
    items = generate_items(1, seed=0)[:2]
    orders = [option_order(it, np.random.default_rng(0)) for it in items]
    data = experiment.load_data(config)
    experiment.train_arm(config, "task_vector", items, orders, data.pairs[:4], SINGLE, dev)
    assert {s[0] for s in seen} == {"generate", "probe"} and {s[1:] for s in seen} == {(device, device)}


def test_the_gpu_slice_is_a_ninth_of_the_preset():
    gpu = BiasFreeConfig.preset("gpu")
    part = dataclasses.replace(gpu, **BiasFreeConfig.GPU_SLICE)
    assert gpu.work() / part.work() == pytest.approx(9, rel=0.02)
