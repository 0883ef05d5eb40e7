"""The arms' data, the config's checks, and a smoke run through the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE
from iclr26.guishift.config import GUIShiftConfig
from iclr26.guishift.data import derangement
from iclr26.guishift.experiment import FilterResult, arm_data, build_data, run_filter, train_arm, train_base
from iclr26.guishift.policy import GUIPolicy
from iclr26.guishift.training import evaluate


@pytest.mark.parametrize(
    ("override", "name"),
    [({"ks": (2, 3)}, "ks"), ({"ks": (1, 1)}, "ks"), ({"size": 30}, "size"), ({"n_apps": 13}, "n_apps"),
     ({"group_size": 1}, "group_size"), ({"clip_eps": 1.0}, "clip_eps"), ({"pretrain_margin": -0.1}, "pretrain_margin"),
     ({"ks": (1, 20)}, "ks"), ({"n_train": 1, "ks": (1, 2)}, "n_train"), ({"steps": 10**18}, "steps"),
     ({"explore_worlds": 4096, "walks_per_world": 1024}, "explore_worlds"), ({"lr": 2.0}, "lr")],
)  # fmt: skip
def test_config_rejects_bad_values_naming_the_field(override, name):
    with pytest.raises(ConfigError, match=f"'{name}'"):
        GUIShiftConfig(**override)


def test_arm_data_counts_the_filter_and_the_shuffled_control():
    config = GUIShiftConfig.preset("smoke")
    data = build_data(config, seed=3)
    kept = {k: list(range(1, len(p), 2)) for k, p in data.pools.items()}  # every odd pair "partly right"
    filt = FilterResult(kept, {k: 0.5 for k in kept}, {k: 0.5 for k in kept})
    per_k = config.n_train // len(config.ks)
    gui = arm_data(config, "guishift", data, filt, seed=3)
    assert len(gui) == per_k * len(config.ks)
    assert gui.actions[0] == data.pools[1].actions[1]  # the first kept pair of K = 1
    nofilter = arm_data(config, "nofilter", data, filt, seed=3)
    assert nofilter.actions[0] == data.pools[1].actions[0] and len(nofilter) == len(gui)
    k1 = arm_data(config, "k1", data, filt, seed=3)
    assert set(k1.k.tolist()) == {1}
    sft = arm_data(config, "sft", data, filt, seed=3)
    assert sft.actions == gui.actions and np.array_equal(sft.after, gui.after)
    shuffled = arm_data(config, "shuffled", data, filt, seed=3)
    assert shuffled.actions == gui.actions and np.array_equal(shuffled.before, gui.before)
    assert sorted(a.tobytes() for a in shuffled.after) == sorted(a.tobytes() for a in gui.after)


def test_nofilter_gets_as_many_pairs_per_k_as_the_filter_kept():
    config = GUIShiftConfig.preset("smoke")
    data = build_data(config, seed=3)
    filt = FilterResult({1: [0, 2], 2: [1]}, {1: 0.5, 2: 0.5}, {1: 0.5, 2: 0.5})
    nofilter = arm_data(config, "nofilter", data, filt, seed=3)
    assert nofilter.k.tolist() == [1, 1, 2]
    assert len(arm_data(config, "k1", data, filt, seed=3)) == 2  # only two K = 1 pairs were kept


@pytest.mark.parametrize("n", [2, 3, 10])
def test_derangement_moves_every_item(n):
    perm = derangement(n, seed=n)
    assert sorted(perm.tolist()) == list(range(n)) and not (perm == np.arange(n)).any()


def test_smoke_run(smoke):
    record = smoke("guishift")
    assert len(record["units"]) >= 2
    assert record["units"][:3] == ["base-seed0", "filter-seed0", "none-seed0"]
    evidence = record["evidence"]
    assert set(evidence["thresholds"]) == {
        "pretrain_margin", "sft_margin", "filter_margin", "confidence", "transition_margin"
    }  # fmt: skip
    assert "pretraining_task_learned" in evidence["gates"]
    assert all(t["source"] for t in evidence["thresholds"].values())
    arms = record["metrics"]["arms"]
    assert set(arms) == {"none", "guishift", "nofilter", "sft", "k1", "shuffled"}
    assert all(0.0 <= m["automation_accuracy"] <= 1.0 for m in arms.values())
    assert arms["guishift"]["train_pairs"] == arms["nofilter"]["train_pairs"] == arms["sft"]["train_pairs"] > 0
    # one seed: no interval, so neither the gate nor any comparison passes
    assert record["claim_held"] == "inconclusive" and record["failed_gates"] == ["pretraining_task_learned"]
    assert "accuracy_by_arm.png" in record["plots"]


def test_the_kstep_pretraining_reaches_only_its_arm():
    # guishift trains on the filter-kept pairs of every K; none is the base policy untouched (no pairs, no steps)
    config = GUIShiftConfig.preset("smoke")
    data = build_data(config, seed=5)
    kept = {k: list(range(0, len(p), 2)) for k, p in data.pools.items()}
    filt = FilterResult(kept, {k: 0.5 for k in kept}, {k: 0.5 for k in kept})
    gui = arm_data(config, "guishift", data, filt, seed=5)
    assert sorted(set(gui.k.tolist())) == sorted(config.ks)
    for k in config.ks:  # each K's pairs are the kept ones, in exploration order
        per_k = [a for a, kk in zip(gui.actions, gui.k, strict=True) if kk == k]
        assert per_k == [data.pools[k].actions[i] for i in kept[k][: len(per_k)]]
    base = train_base(config, data, 5, SINGLE, torch.device("cpu"))
    none = train_arm(config, "none", data, base, filt, 5, SINGLE, torch.device("cpu"))
    assert none.n_pairs == 0 and none.rewards == []
    policy = GUIPolicy(size=config.size, n_apps=config.n_apps, n_text=config.n_text, channels=config.channels,
                       hidden=config.hidden)  # fmt: skip
    policy.load_state_dict(base)
    assert np.array_equal(none.automation, evaluate(policy, data.automation))  # the base policy's answers
    trained = train_arm(config, "guishift", data, base, filt, 5, SINGLE, torch.device("cpu"))
    assert trained.n_pairs == len(gui) and len(trained.rewards) == config.steps


DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.mark.parametrize("device", DEVICES)
def test_every_policy_and_batch_lands_on_the_configured_device(device, monkeypatch):
    # every forward pass of the base training, the filter, an arm's GRPO and SFT steps and the evaluations sees the
    # policy and its batch on config.device; the base policy's weights come back on the CPU (a unit's result)
    seen = []
    forward = GUIPolicy.forward

    def spy(self, x):
        seen.append((x.device.type, next(self.parameters()).device.type))
        return forward(self, x)

    monkeypatch.setattr(GUIPolicy, "forward", spy)
    config = GUIShiftConfig.from_dict({**GUIShiftConfig.preset_values("smoke"), "device": device})
    dev = torch.device(device)
    data = build_data(config, seed=2)
    base = train_base(config, data, 2, SINGLE, dev)
    assert all(t.device.type == "cpu" for t in base.values())
    filt = run_filter(config, data, base, 2, dev)
    for arm in ("guishift", "sft"):
        train_arm(config, arm, data, base, filt, 2, SINGLE, dev)
    assert len(seen) > 10 and set(seen) == {(device, device)}
