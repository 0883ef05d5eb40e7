"""The reproduction through the real CLI (smoke scale) and its config validation."""

from __future__ import annotations

import pytest

from iclr26.common.config import ConfigError
from iclr26.zoprox.experiment import ZOProxConfig


def test_smoke_run_writes_a_record_with_every_study(smoke):
    record = smoke("zoprox")
    metrics = record["metrics"]
    assert set(metrics) == {"lasso", "tori", "budget", "budget_verdict", "speedup"}
    assert set(metrics["lasso"]["curves"]) == {"zod", "zod_independent", "rgo"}
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
    # one unit of work per study (the equal-budget study one per target); wall-clock only under timings
    assert record["units"] == [
        "lasso",
        "tori",
        "budget-gaussian",
        "budget-mixture",
        "budget-double_well",
        "budget-logistic",
        "speedup",
    ]
    assert set(record["timings"]) == {"lasso_wall_s", "budget_curves_wall_s", "speedup"}
    assert record["timings"]["speedup"]["speedup"] > 0
    assert "wall_s" not in metrics["lasso"] and "batched_speedup" not in record["evidence"]
    assert all("wall_s" not in c for t in metrics["budget"].values() for c in t["curves"].values())
    # the smoke summary prints no missing values and no wall-clock figure
    assert "None" not in record["measurement"] and "faster" not in record["measurement"]
    assert set(record["plots"]) == {
        "lasso_kl.png",
        "tori.png",
        "budget_w2_vs_queries.png",
        "budget_w2_vs_wallclock.png",
        "mixture_scatter.png",
    }
    assert isinstance(record["claim_held"], bool)
    assert record["evidence"]["kl_threshold"] == record["config"]["kl_threshold"]
    thresholds = record["evidence"]["thresholds"]
    assert set(thresholds) == {"kl_threshold", "min_iteration_ratio", "t2_min_fraction", "accuracy_tolerance"}
    assert thresholds["min_iteration_ratio"] == {
        "value": 10.0,
        "source": ZOProxConfig.__dataclass_fields__["min_iteration_ratio"].metadata["help"],
    }


def test_the_reproduction_is_cpu_bound_by_design():
    assert ZOProxConfig.CPU_BOUND and "GPU" in ZOProxConfig.CPU_BOUND
    assert not hasattr(ZOProxConfig(), "device")  # so --scale gpu runs it on the CPU, as --help-config says


def test_bad_config_is_rejected_by_the_cli(cli):
    proc = cli("run", "zoprox", "--scale", "smoke", "--set", "lasso_step=0")
    assert proc.returncode != 0
    assert "lasso_step" in proc.stderr


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"rgo_step": 0.05}, "rgo_step"),
        ({"budget_targets": ("gaussian", "banana")}, "budget_targets"),
        ({"mixture_dim": 11}, "mixture_dim"),
        ({"tori_sigma2_min": 1.0}, "tori_sigma2_min"),
        ({"pool_points": 100}, "pool_points"),
    ],
)
def test_config_validation_names_the_field(changes, name):
    with pytest.raises(ConfigError, match=name):
        ZOProxConfig(**changes)
