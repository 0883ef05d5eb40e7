"""The LAMIR reproduction through the real CLI, and its config validation."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel")

from iclr26 import cli  # noqa: E402
from iclr26.common.config import ConfigError  # noqa: E402
from iclr26.lamir.config import LamirConfig  # noqa: E402


def test_smoke_run_writes_a_complete_record(smoke):
    record = smoke("lamir")
    metrics = record["metrics"]
    assert set(record["plots"]) == {"exploitability_vs_capacity.png", "training_curves.png"}
    assert len(metrics["replicates"]) == 2  # smoke: 2 replicates (an interval needs 2)
    for rep in metrics["replicates"]:
        assert {"exact", "L1"} == set(rep["models"])
        for model in rep["models"].values():
            assert 0.0 <= model["exploitability"] <= 1.0
            assert 0.0 <= model["true_tree_learned_values_exploitability"] <= 1.0
            assert model["match_vs_base"]["games"] == 20
        # true-model search is exact machinery: near-Nash even at smoke scale
        assert rep["true_model_full_exploitability"] < 0.02
        # the base policy is a second-half checkpoint (40 steps, checkpoints 0, 20, 39) with its curve's value
        curve = dict(map(tuple, rep["base_exploitability_curve"]))
        assert rep["base_step"] in (20, 39) and rep["base_exploitability"] == curve[rep["base_step"]]
        assert rep["last_iterate_exploitability"] == curve[39]
        # training moved the base policy (its exploitability at the first and last checkpoints differ)
        assert curve[0] != curve[39]
    # the replicates differ (own initial weights and episodes)
    a, b = (r["base_exploitability_curve"] for r in metrics["replicates"])
    assert a != b
    assert metrics["kuhn_true_model_exploitability"] < 0.02
    assert 0.0 <= metrics["leduc_true_model_exploitability"] <= 1.0  # 30 CFR+ iterations on a 9457-node game
    assert record["claim_held"] in ("held", "not held", "inconclusive")
    evidence = record["evidence"]
    assert evidence["one_to_one_size"] == metrics["game"]["max_infosets_per_public_state"]
    assert len(evidence["claim1"]["per_seed"]) == len(evidence["claim2"]["per_seed"]) == 2
    assert (record["claim_held"] == "held") == (
        not record["failed_gates"]
        and evidence["claim1"]["held"]
        and evidence["claim2"]["held"]
        and not evidence["untrained_control"]["passes"]
    )
    # Units of work: per replicate, 40 smoke steps in pieces of unit_steps=20 and the evaluations; poker once.
    per_seed = ["train-0-20", "train-20-40", "eval-true-model", "eval-exact", "eval-L1", "eval-untrained"]
    assert record["units"] == [f"seed{j}-{u}" for j in (0, 1) for u in per_seed] + ["eval-poker"]
    # CPU times are timings, never metrics or evidence; every verdict threshold carries its source.
    assert set(record["timings"]) == {"train_cpu_s", "total_cpu_s"}
    assert not any("cpu" in key for key in [*metrics, *evidence, *metrics["replicates"][0]])
    thresholds = evidence["thresholds"]
    assert {k: v["value"] for k, v in thresholds.items()} == {
        "interval_level": 0.95,
        "min_score_vs_base": 0.5,
        "max_solver_exploitability": 0.01,
    }
    # the control: the same search on an untrained model of the limited capacity, in every replicate
    for rep in metrics["replicates"]:
        control = rep["untrained_control"]
        assert control["capacity"] == 1 and 0.0 <= control["exploitability"] <= 1.0
        # it differs from the trained L1 model only in the training: same capacity and kappa, other predictions
        trained = rep["models"]["L1"]
        assert control["kappa"] == trained["kappa"] and control["accuracy"] != trained["accuracy"]
    assert set(evidence["gates"]) == {
        "search_machinery_exact",
        "lookahead_improves_base",
        "models_learned",
        "capacities_as_designed",
    }
    assert record["claim_held"] != "inconclusive" or record["failed_gates"]
    assert "50%" in thresholds["min_score_vs_base"]["source"]
    assert "None" not in record["measurement"]


def test_help_config_says_the_reproduction_is_cpu_bound(capsys):
    assert cli.main(["run", "lamir", "--help-config"]) == 0
    out = capsys.readouterr().out
    assert "runs on the CPU at every scale: tabulated games" in out
    assert "unit_steps" in out and "min_score_vs_base" in out


def test_bad_override_names_the_field_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "lamir", "--scale", "smoke", "--set", "limited_capacity=3", "--out", str(out)]) == 2
    assert "limited_capacity" in capsys.readouterr().err
    assert not (out / "lamir").exists()


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
        ({"seeds": 1}, "seeds"),
        ({"interval_level": 1.0}, "interval_level"),
    ],
)
def test_config_validation_names_the_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        LamirConfig(**changes)
