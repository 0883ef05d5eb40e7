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
        "value": 68.0,
        "source": ZOProxConfig.__dataclass_fields__["min_iteration_ratio"].metadata["help"],
    }
    # the levels come from the paper's figures, fixed before the runs
    assert thresholds["kl_threshold"]["value"] == 0.05
    assert "kl_divergence_comparison.pdf" in thresholds["kl_threshold"]["source"]
    assert "num_in_torus_comparison.pdf" in thresholds["t2_min_fraction"]["source"]
    # iterations and oracle queries side by side: smoke N = 20, M = 16, T = 3 -> 960 queries per ZOD-PS iteration
    ev = record["evidence"]
    for key in ("zod_queries_to_threshold", "rgo_queries_run", "query_ratio_rgo_over_zod", "zod_rounds_to_threshold"):
        assert key in ev, key
    if ev["zod_iters_to_threshold"] is not None:
        assert ev["zod_queries_to_threshold"] == 960 * ev["zod_iters_to_threshold"]
        assert ev["zod_rounds_to_threshold"] == 3 * ev["zod_iters_to_threshold"]
    # the far torus is reported against its true mass 3/13
    assert ev["tori_t2_true_mass"] == pytest.approx(3 / 13)
    assert ev["tori_zod_t2_share_of_true_mass"] == pytest.approx(ev["tori_zod_t2_last_quarter"] / (3 / 13))
    assert "true mass" in record["measurement"] and "queries" in record["notes"]


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
        ({"dtype": "float16"}, "dtype"),
    ],
)
def test_config_validation_names_the_field(changes, name):
    with pytest.raises(ConfigError, match=name):
        ZOProxConfig(**changes)


def _curve(iters, queries, kl):
    from iclr26.zoprox.studies import KLCurve

    return KLCurve(iters=iters, queries=queries, kl=kl)


def test_lasso_verdict_counts_iterations_and_queries_side_by_side():
    # ZOD-PS: KL 0.3, 0.04 at iterations 10, 20 (50,000 queries per iteration); RGO: first <= 0.05 at step 1500
    # (2.4 queries per chain and step on 100 chains: 360,000 queries there). Iteration ratio 1500 / 20 = 75 >= 68:
    # (a) holds; query ratio 360,000 / 1,000,000 = 0.36 < 1: ZOD-PS spent more queries to the same level.
    from iclr26.zoprox.experiment import _lasso_verdict
    from iclr26.zoprox.studies import LassoStudy

    config = ZOProxConfig()
    curves = {
        "zod": _curve([10, 20], [500_000, 1_000_000], [0.3, 0.04]),
        "zod_independent": _curve([10, 20], [500_000, 1_000_000], [0.5, 0.4]),
        "rgo": _curve([500, 1000, 1500, 2000], [120_000, 240_000, 360_000, 480_000], [0.3, 0.1, 0.05, 0.04]),
    }
    study = LassoStudy(
        kl_floor=0.01, curves=curves, wall_s={}, ess_mean={}, rgo_trials_mean=2.4, rgo_failures=0, final_samples={}
    )
    v = _lasso_verdict(study, config)
    assert (v["zod_iters_to_threshold"], v["rgo_iters_to_threshold"]) == (20, 1500)
    assert v["iteration_ratio"] == 75.0 and v["held_fewer_iterations"] and not v["iteration_ratio_is_lower_bound"]
    assert (v["zod_queries_to_threshold"], v["rgo_queries_to_threshold"]) == (1_000_000, 360_000)
    assert v["query_ratio"] == pytest.approx(0.36) and v["zod_rounds_to_threshold"] == 20 * config.diffusion_steps
    assert v["held_interaction"]
    # RGO never reaching the level: ratios become lower bounds from the whole run (10000 steps, 480,000 queries)
    study.curves["rgo"] = _curve([500, 1000], [120_000, 480_000], [0.3, 0.1])
    v = _lasso_verdict(study, config)
    assert v["iteration_ratio"] == config.rgo_iters / 20 and v["iteration_ratio_is_lower_bound"]
    assert v["rgo_queries_to_threshold"] is None and v["query_ratio"] == pytest.approx(0.48)
    # a ratio below the figure's 68 does not hold: RGO at step 1000 -> 50
    study.curves["rgo"] = _curve([500, 1000], [120_000, 240_000], [0.3, 0.05])
    assert not _lasso_verdict(study, config)["held_fewer_iterations"]
