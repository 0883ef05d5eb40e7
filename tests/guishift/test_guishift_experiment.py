"""The verdict's rule, the arms' data, the config's checks, and a smoke run through the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.common.config import ConfigError
from iclr26.guishift.experiment import FilterResult, GUIShiftConfig, arm_data, build_data, compare, derangement


def test_compare_needs_the_margin_and_a_positive_lower_bound():
    assert compare([0.10, 0.12, 0.11], margin=0.03, confidence=0.95).passes
    assert not compare([0.02, 0.025, 0.021], margin=0.03, confidence=0.95).passes  # below the margin
    assert not compare([0.5, -0.4, 0.1], margin=0.0, confidence=0.95).passes  # the interval includes 0
    # d = (0.1, 0.2): mean 0.15, sd 0.0707, se 0.05, t_{0.95, 1} = 6.314 -> lower 0.15 - 0.3157 < 0
    two = compare([0.1, 0.2], margin=0.0, confidence=0.95)
    assert two.lower == pytest.approx(0.15 - 6.3138 * 0.05, abs=1e-3) and not two.passes
    single = compare([0.5], margin=0.0, confidence=0.95)
    assert single.lower is None and not single.passes


@pytest.mark.parametrize(
    ("override", "name"),
    [({"ks": (2, 3)}, "ks"), ({"ks": (1, 1)}, "ks"), ({"size": 30}, "size"), ({"n_apps": 13}, "n_apps"),
     ({"group_size": 1}, "group_size"), ({"clip_eps": 1.0}, "clip_eps"), ({"pretrain_margin": -0.1}, "pretrain_margin"),
     ({"ks": (1, 20)}, "ks"), ({"n_train": 1, "ks": (1, 2)}, "n_train")],
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
    assert set(evidence["thresholds"]) == {"pretrain_margin", "sft_margin", "filter_margin", "confidence"}
    assert all(t["source"] for t in evidence["thresholds"].values())
    arms = record["metrics"]["arms"]
    assert set(arms) == {"none", "guishift", "nofilter", "sft", "k1", "shuffled"}
    assert all(0.0 <= m["automation_accuracy"] <= 1.0 for m in arms.values())
    assert arms["guishift"]["train_pairs"] == arms["nofilter"]["train_pairs"] == arms["sft"]["train_pairs"] > 0
    assert record["claim_held"] is False  # one seed: no interval, no comparison passes
    assert "accuracy_by_arm.png" in record["plots"]
