"""The reproduction: config checks, the paired test against hand values, the two-phase rules, the smoke run."""

from __future__ import annotations

import math

import pytest

from iclr26.common.config import ConfigError
from iclr26.hicra.config import HicraConfig
from iclr26.hicra.verdict import paired_test, two_phase


def test_paired_t_test_by_hand():
    # diffs 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1/√3 = 0.05774; t_0.95(2) = 2.91999 → lower 0.2 − 0.16859
    test = paired_test([0.6, 0.7, 0.8], [0.5, 0.5, 0.5], confidence=0.95, min_gain=0.0)
    assert test.mean == pytest.approx(0.2)
    assert test.lower == pytest.approx(0.2 - 2.919986 * 0.1 / math.sqrt(3), rel=1e-5)
    assert test.exceeds
    # a gain in one seed only is not significant
    assert not paired_test([0.9, 0.5, 0.5], [0.5, 0.5, 0.6], confidence=0.95, min_gain=0.0).exceeds
    # one seed: no interval, never "exceeds"
    one = paired_test([0.9], [0.1], confidence=0.95, min_gain=0.0)
    assert one.lower == -math.inf and not one.exceeds and one.summary()["lower_bound"] is None


def test_two_phase_rules():
    phases = two_phase([[1.0] * 5 + [0.5] * 15], [[0.2] * 10 + [0.6] * 10], drop=0.1)
    assert phases["phase1_observed"] is False  # the first quarter (5 steps) is flat at 1.0
    assert phases["phase2_observed"] is True
    phases = two_phase([[1.0] * 3 + [0.5] * 17], [[0.6] * 10 + [0.2] * 10], drop=0.1)
    assert phases["phase1_observed"] is True and phases["phase2_observed"] is False


@pytest.mark.parametrize(
    ("key", "value"),
    [("alpha", -0.1), ("group_size", 1), ("n_seeds", 0), ("confidence", 1.0), ("n_min", 6), ("held_out_frac", 0.0)],
)
def test_config_errors_name_the_field(key, value):
    with pytest.raises(ConfigError, match=key):
        HicraConfig(**{key: value})


def test_smoke_run_through_the_cli(smoke):
    record = smoke("hicra")
    assert record["units"] == ["sft", "rl-grpo-seed0", "rl-hicra-seed0", "rl-placebo-seed0", "rl-entropy-seed0"]
    per_arm = record["metrics"]["per_arm"]
    assert set(per_arm) == {"grpo", "hicra", "placebo", "entropy"}
    # equal steps and samples: every arm sampled from the same prompts; hicra amplifies, grpo does not
    assert per_arm["grpo"]["amplified_coverage_mean"] == 0.0
    assert per_arm["hicra"]["amplified_coverage_mean"] == per_arm["hicra"]["planning_coverage_mean"] > 0
    assert {"confidence", "min_gain", "entropy_drop"} <= set(record["evidence"]["thresholds"])
    assert "None" not in record["measurement"] and "n/a (one seed)" in record["measurement"]
    assert sorted(record["plots"]) == ["entropy_dynamics.png", "held_out_accuracy.png"]


def test_gpu_preset_is_the_pretrained_backend():
    values = HicraConfig.preset_values("gpu")
    assert values["backend"] == "smollm2" and values["device"] == "cuda"
