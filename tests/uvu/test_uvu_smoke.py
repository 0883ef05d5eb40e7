"""The reproduction through the real CLI: a smoke run writes a complete record; bad configs fail naming the field."""

from __future__ import annotations

import math

import pytest

from iclr26.common.config import ConfigError, apply_overrides
from iclr26.uvu.experiment import UVUConfig


def test_smoke_run_writes_a_complete_record(smoke):
    record = smoke("uvu")
    assert set(record["plots"]) == {"ntk_gap_vs_width.png", "ntk_points.png", "rejection_curves.png", "compute.png"}
    ntk = record["metrics"]["ntk"]
    assert ntk["widths"] == [8, 32] and len(ntk["gap_uvu_vs_ensemble"]) == 2
    assert ntk["sampling_gap_p95"] > 0
    rejection = record["metrics"]["rejection"]
    assert set(rejection["methods"]) == {"UVU", "ensemble-2", "ensemble-3", "RND"}
    uvu, ens = rejection["methods"]["UVU"], rejection["methods"]["ensemble-3"]
    # UVU: online + fixed target of the same shape; ensemble-3: three members with one head each
    assert uvu["total_params"] == 2 * uvu["trained_params"]
    assert ens["total_params"] == ens["trained_params"]
    assert 0.0 <= uvu["auc"] <= 1.0 and len(uvu["curve"]) == len(rejection["rejection_fractions"])
    evidence = record["evidence"]
    assert math.isclose(evidence["param_ratio_uvu_over_ensemble"], uvu["total_params"] / ens["total_params"])
    assert isinstance(record["claim_held"], bool)
    assert record["claim_held"] == (evidence["ntk_held"] and evidence["rejection_held"])


def test_bad_config_values_name_the_field(cli):
    proc = cli("run", "uvu", "--scale", "smoke", "--set", "ntk_widths=64,16")
    assert proc.returncode == 2 and "ntk_widths" in proc.stderr
    for assignment, name in (
        ("ensemble_sizes=1,4", "ensemble_sizes"),
        ("truncated_tasks=1", "truncated_tasks"),
        ("gamma=1.0", "gamma"),
        ("ntk_copies=1", "ntk_copies"),
        ("device=tpu", "device"),
    ):
        with pytest.raises(ConfigError, match=name):
            apply_overrides(UVUConfig.preset("smoke"), [assignment])
