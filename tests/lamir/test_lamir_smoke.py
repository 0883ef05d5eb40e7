"""The LAMIR reproduction through the real CLI, and its config validation."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel")

from iclr26.common.config import ConfigError  # noqa: E402
from iclr26.lamir.experiment import LamirConfig  # noqa: E402


def test_smoke_run_writes_a_complete_record(smoke):
    record = smoke("lamir")
    metrics = record["metrics"]
    assert set(record["plots"]) == {"exploitability_vs_capacity.png", "training_curves.png"}
    assert {"exact", "L1"} == set(metrics["models"])
    for model in metrics["models"].values():
        assert 0.0 <= model["exploitability"] <= 1.0
        assert 0.0 <= model["true_tree_learned_values_exploitability"] <= 1.0
        assert model["match_vs_base"]["games"] == 20
    # The Kuhn check and the true-model search are exact machinery: near-Nash even at smoke scale.
    assert metrics["kuhn_true_model_exploitability"] < 0.02
    assert 0.0 <= metrics["leduc_true_model_exploitability"] <= 1.0  # 30 CFR+ iterations on a 9457-node game
    assert metrics["true_model_full_exploitability"] < 0.02
    # Training moved the base policy (its exploitability at the first and last checkpoints differ).
    curve = metrics["base_exploitability_curve"]
    assert len(curve) >= 2 and curve[0][1] != curve[-1][1]
    assert isinstance(record["claim_held"], bool)
    assert record["evidence"]["one_to_one_size"] == metrics["game"]["max_infosets_per_public_state"]


def test_bad_override_names_the_field(cli):
    proc = cli("run", "lamir", "--scale", "smoke", "--set", "limited_capacity=3")
    assert proc.returncode != 0
    assert "limited_capacity" in proc.stderr


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_cards": 6}, "num_cards"),
        ({"epsilon_model": 1.5}, "epsilon_model"),
        ({"sweep_capacities": ()}, "sweep_capacities"),
        ({"gamma_start": 100.0}, "gamma_start"),
        ({"exact_kappa": "cards"}, "exact_kappa"),
        ({"sweep_capacities": (2, 2), "limited_capacity": 2}, "sweep_capacities"),
        ({"latent_dim": 0}, "latent_dim"),
    ],
)
def test_config_validation_names_the_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        LamirConfig(**changes)
