"""The reproduction through the real CLI (smoke scale) and its config validation."""

from __future__ import annotations

import pytest

from iclr26.common.config import ConfigError
from iclr26.zoprox.config import ZOProxConfig


def test_smoke_run_writes_a_record_with_every_study(smoke):
    record = smoke("zoprox")
    metrics = record["metrics"]
    assert set(metrics) == {"lasso", "tori", "budget", "speedup"}
    # one Gaussian-Lasso study per seed (smoke: 2 seeds), each with the three samplers
    assert list(metrics["lasso"]) == ["0", "1000"]
    for study in metrics["lasso"].values():
        assert set(study["curves"]) == {"zod", "zod_independent", "rgo"}
    assert set(metrics["budget"]) == {"gaussian", "mixture", "double_well", "logistic"}
    for target in metrics["budget"].values():
        assert set(target["final"]) == {"zod", "zod_independent", "rgo", "rwm", "ula", "mala"}
        # fixed-cost samplers spend exactly the budget and are pooled exactly at the budget points; the rejection
        # sampler stops within one iteration past the budget and is pooled at or before each point
        for name in ("zod", "zod_independent", "rwm", "ula", "mala"):
            assert target["spent"][name] == target["budget_queries"], name
            assert target["pooled_queries"][name] == target["budget_points"], name
        assert all(q <= p for q, p in zip(target["pooled_queries"]["rgo"], target["budget_points"], strict=True))
    tori = metrics["tori"]
    assert len(tori["queries_along"]["zod"]) == len(tori["iters"]) == len(tori["fractions"]["in_and_out"])
    assert metrics["speedup"] == {"same_samples": True, "iters_timed": 1}
    # one unit of work per seed, per study (the equal-budget study one per target); wall-clock only under timings
    assert record["units"] == [
        "lasso-0",
        "lasso-1000",
        "tori",
        "budget-gaussian",
        "budget-mixture",
        "budget-double_well",
        "budget-logistic",
        "speedup",
    ]
    assert set(record["timings"]) == {"lasso_wall_s", "budget_curves_wall_s", "speedup"}
    assert record["timings"]["speedup"]["speedup"] > 0
    assert all("wall_s" not in s for s in metrics["lasso"].values())
    assert all("wall_s" not in c for t in metrics["budget"].values() for c in t["curves"].values())
    # the smoke summary prints no missing values and no wall-clock figure
    assert "None" not in record["measurement"] and "faster" not in record["measurement"]
    assert set(record["plots"]) == {
        "lasso_kl_seed0.png",
        "lasso_kl_seed1000.png",
        "tori.png",
        "budget_w2_vs_queries.png",
        "budget_w2_vs_wallclock.png",
        "mixture_scatter.png",
    }
    ev = record["evidence"]
    assert set(ev["gates"]) == {"kl_estimator_resolves_threshold", "samplers_start_above_threshold"}
    # the recorded status follows from the recorded gates, comparison and control (the rule of verdict.py)
    if not all(gate["passed"] for gate in ev["gates"].values()):
        assert record["claim_held"] == "inconclusive"
    else:
        assert record["claim_held"] == ("held" if ev["fewer_iterations"] and ev["control_n1_fails"] else "not held")
    thresholds = ev["thresholds"]
    assert set(thresholds) == {
        "kl_threshold",
        "min_iteration_ratio",
        "confidence",
        "t2_min_fraction",
        "accuracy_tolerance",
    }
    assert thresholds["min_iteration_ratio"] == {
        "value": 68.0,
        "source": ZOProxConfig.__dataclass_fields__["min_iteration_ratio"].metadata["help"],
    }
    # the levels come from the paper's figures, fixed before the runs
    assert thresholds["kl_threshold"]["value"] == 0.05
    assert "kl_divergence_comparison.pdf" in thresholds["kl_threshold"]["source"]
    assert "num_in_torus_comparison.pdf" in thresholds["t2_min_fraction"]["source"]
    # iterations and oracle queries side by side, per seed: smoke N = 20, M = 16, T = 3 -> 960 queries per iteration
    assert len(ev["query_ratio_per_seed"]) == len(ev["seeds"]) == 2
    for it, q in zip(ev["zod_iters_to_threshold"], ev["zod_queries_to_threshold"], strict=True):
        assert q == (None if it is None else 960 * it)
    # the far torus is reported against its true mass 3/13
    assert ev["tori"]["t2_mass"] == pytest.approx(3 / 13)
    assert ev["tori"]["zod_t2_share_of_true_mass"] == pytest.approx(ev["tori"]["zod_t2_last_quarter"] / (3 / 13))
    assert "true mass" in record["measurement"] and "queries" in record["notes"]


def test_the_reproduction_is_cpu_bound_by_design():
    assert ZOProxConfig.CPU_BOUND and "GPU" in ZOProxConfig.CPU_BOUND
    assert not hasattr(ZOProxConfig(), "device")  # so --scale gpu runs it on the CPU, as --help-config says


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("lasso_step=0", "lasso_step"),
        # a size no run can honour is refused by the config, naming the field and its bound, before any work
        ("lasso_particles=1e12", "'lasso_particles': must be <= 100000"),
        # an empty target list would silently drop a study
        ("budget_targets=", "'budget_targets': empty"),
    ],
)
def test_bad_config_is_rejected_by_the_cli(cli, tmp_path, setting, message):
    proc = cli("run", "zoprox", "--scale", "smoke", "--out", str(tmp_path / "out"), "--set", setting)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"rgo_step": 0.05}, "rgo_step"),
        ({"budget_targets": ("gaussian", "banana")}, "budget_targets"),
        ({"mixture_dim": 11}, "mixture_dim"),
        ({"tori_sigma2_min": 1.0}, "tori_sigma2_min"),
        ({"pool_points": 100}, "pool_points"),
        ({"dtype": "float16"}, "dtype"),
        ({"lasso_particles": 10**12}, "lasso_particles"),
        ({"budget_targets": ()}, "budget_targets"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"confidence": 1.0}, "confidence"),
    ],
)
def test_config_validation_names_the_field(changes, name):
    with pytest.raises(ConfigError, match=name):
        ZOProxConfig(**changes)
