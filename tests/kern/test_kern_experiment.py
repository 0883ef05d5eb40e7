"""Tests of the KERN reproduction: the smoke run through the CLI, config validation, and the measurement helpers."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.kern import Router
from iclr26.kern.analysis import coefficient_of_variation, time_routers
from iclr26.kern.experiment import KernConfig, build_model


def test_smoke_run_through_cli(smoke):
    record = smoke("kern")
    metrics = record["metrics"]
    per = metrics["per_router"]
    assert set(per) == {"softmax", "kern", "dense"}
    for name, entry in per.items():
        curve = entry["val_loss_curves"][0]
        assert curve[-1] < curve[0], f"{name}: validation loss did not decrease ({curve})"
        assert math.isfinite(entry["final_val_loss_mean"])
    assert per["kern"]["gamma_final"][0][0] != 1.0  # γ was trained
    assert metrics["router_time_ratio_kern_over_softmax"] > 0
    assert 0 <= per["kern"]["val_load_cv_mean"]
    evidence = record["evidence"]
    expected = (
        evidence["loss_gap"] <= evidence["loss_tolerance"]
        and evidence["router_time_ratio"] <= 1 + evidence["time_tolerance"]
    )
    assert record["claim_held"] == expected
    assert set(record["plots"]) == {"val_loss.png", "expert_load.png"}


def test_bad_config_value_names_the_field_through_cli(cli):
    proc = cli("run", "kern", "--scale", "smoke", "--set", "top_k=9")
    assert proc.returncode != 0 and "top_k" in proc.stderr


def test_config_validation_in_process():
    with pytest.raises(ConfigError, match="'routers'.*unknown router 'kernel'"):
        KernConfig(routers=("softmax", "kernel"))
    with pytest.raises(ConfigError, match="'routers'.*must include 'softmax' and 'kern'"):
        KernConfig(routers=("sigmoid", "kern"))
    with pytest.raises(ConfigError, match="'d_ff'"):
        KernConfig(d_ff=255)
    with pytest.raises(ConfigError, match="'scale_experts'"):
        KernConfig(scale_experts=(12, 256))


def test_moe_and_dense_models_have_equal_active_parameters_up_to_router():
    cfg = KernConfig.preset("smoke")
    dense, moe = build_model(cfg, "dense"), build_model(cfg, "kern")
    router = cfg.n_layers * ((cfg.d_model + 1) * cfg.num_experts + 1)
    extra_bias = cfg.n_layers * (cfg.top_k - 1) * cfg.d_model
    assert moe.num_params(active=True) == dense.num_params(active=True) + router + extra_bias


def test_coefficient_of_variation_hand_computed():
    # counts (2, 4, 6): mean 4, population std √(8/3), CV = √(8/3) / 4.
    assert coefficient_of_variation(torch.tensor([2, 4, 6])) == pytest.approx(math.sqrt(8 / 3) / 4)
    assert coefficient_of_variation(torch.tensor([5, 5, 5, 5])) == 0.0
    with pytest.raises(ValueError, match="positive sum"):
        coefficient_of_variation(torch.zeros(3))


def test_time_routers_reports_every_router_and_rejects_bad_arguments():
    routers = {name: Router(16, 4, 2, name) for name in ("softmax", "kern")}
    timings = time_routers(routers, torch.randn(32, 16), repeats=2, warmup=1)
    assert set(timings) == {"softmax", "kern"}
    assert all(0 < t.min_ms <= t.median_ms and t.repeats == 2 for t in timings.values())
    with pytest.raises(ValueError, match="repeats >= 1"):
        time_routers(routers, torch.randn(4, 16), repeats=0)
