"""The reproduction: config validation, the verdict rule, a user data file, and the smoke run through the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.common.seeding import seed_everything
from iclr26.rgvfm import experiment
from iclr26.rgvfm.experiment import RGVFMConfig, run, verdict
from iclr26.runner import build_config

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour on a machine without CUDA")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"benchmarks": ("moon",)}, "benchmarks"),
        ({"models": ("rgvfm", "rgvfm")}, "models"),
        ({"t_end": 1.0}, "t_end"),
        ({"c2st_k": 4}, "c2st_k"),
        ({"steps": 0}, "steps"),
        ({"n_eval": 10}, "n_eval"),
        ({"data": Path("/nonexistent/file.csv")}, "data"),
    ],
)
def test_config_errors_name_the_field(changes, field):
    with pytest.raises(ConfigError, match=f"config field '{field}'"):
        RGVFMConfig(**changes)


def fake_results(coverages: dict[str, list[float]]) -> dict:
    def summary(values):
        mean = sum(values) / len(values)
        return {
            "coverage": {"mean": mean, "std": 0.0, "per_seed": values},
            "dist_to_manifold": {"mean": 0.01, "std": 0.0, "per_seed": [0.01] * len(values)},
        }

    return {"sphere_checkerboard": {k: summary(v) for k, v in coverages.items()}}


def test_verdict_requires_a_gap_beyond_the_seed_spread():
    config = RGVFMConfig(seeds=3)
    clear = {"rgvfm": [84, 85, 83], "rfm": [66, 68, 67], "cfm": [65, 64, 66], "vfm": [79, 78, 80]}
    held, evidence, measurement = verdict(config, fake_results(clear))
    # RG-VFM-M - RFM per seed = (18, 17, 16): mean 17, sample s.d. 1, s.e. 1/√3, margin max(1, 2/√3) = 1.155;
    # RG-VFM-M - max(CFM, VFM) per seed = (5, 7, 3): mean 5, s.d. 2, s.e. 2/√3, margin max(1, 4/√3) = 2.309
    assert held and math.isclose(evidence["rgvfm_minus_rfm_pct"], 17.0)
    assert math.isclose(evidence["rgvfm_minus_rfm_margin"], 2 / math.sqrt(3))
    assert math.isclose(evidence["rgvfm_minus_best_euclidean_pct"], 5.0)
    assert math.isclose(evidence["rgvfm_minus_best_euclidean_margin"], 4 / math.sqrt(3))
    # the Euclidean baseline is the better of CFM and VFM per seed: CFM 82 > VFM 80 in seed 3 gives gaps (5, 7, 1)
    cfm_ahead = {**clear, "cfm": [65, 64, 82]}
    assert math.isclose(verdict(config, fake_results(cfm_ahead)).evidence["rgvfm_minus_best_euclidean_pct"], 13 / 3)
    # with tiny spread the fixed floor min_margin = 1 applies: a gap of 0.9 in every seed does not count
    tied = {"rgvfm": [80.9, 81.9, 79.9], "rfm": [60, 61, 59], "cfm": [60, 60, 60], "vfm": [80, 81, 79]}
    tied_verdict = verdict(config, fake_results(tied))
    assert not tied_verdict.held and math.isclose(tied_verdict.evidence["rgvfm_minus_best_euclidean_margin"], 1.0)
    assert "RG-VFM-M - RFM = +17.0" in measurement and "best of CFM/VFM = +5.0" in measurement
    noisy = {"rgvfm": [90, 70, 80], "rfm": [70, 80, 78], "cfm": [60, 60, 60], "vfm": [60, 60, 60]}
    # mean gap +4 but paired differences (20, -10, 2) have s.e. 8.7: not significant
    assert not verdict(config, fake_results(noisy))[0]
    worse_than_vfm = {"rgvfm": [84, 85, 83], "rfm": [66, 68, 67], "cfm": [65, 64, 66], "vfm": [84, 86, 83]}
    assert not verdict(config, fake_results(worse_than_vfm))[0]


def test_verdict_not_evaluated_without_the_sphere_checkerboard():
    held, evidence, measurement = verdict(RGVFMConfig(), {"hyperboloid_checkerboard": {}})
    assert not held and evidence == {"evaluated": False} and "not evaluated" in measurement


def test_run_on_a_user_data_file(tmp_path):
    rng = np.random.default_rng(0)
    points = rng.normal(size=(120, 3)) + np.array([0.0, 0.0, 3.0])
    np.save(tmp_path / "pts.npy", points)
    config = RGVFMConfig(
        benchmarks=(),
        models=("rfm", "rgvfm"),
        seeds=1,
        steps=3,
        batch_size=16,
        n_eval=30,
        sample_steps=3,
        c2st_k=3,
        data=tmp_path / "pts.npy",
    )
    outcome = run(config, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    file_results = outcome.metrics["results"]["sphere_file"]
    assert set(file_results) == {"rfm", "rgvfm"}
    assert all(math.isfinite(r["mmd2"]["mean"]) for r in file_results.values())
    assert not outcome.claim_held and "not evaluated" in outcome.measurement
    assert (tmp_path / "samples_sphere_file.png").stat().st_size > 0


def test_smoke_run_through_the_cli(smoke):
    record = smoke("rgvfm")
    results = record["metrics"]["results"]
    assert set(results) == {"sphere_checkerboard", "hyperboloid_checkerboard"}
    for board in results.values():
        assert set(board) == {"cfm", "vfm", "rgvfm_ambient", "rfm", "rgvfm"}
        for key, model in board.items():
            assert 0 <= model["coverage"]["mean"] <= 100
            assert 0 <= model["c2st"]["mean"] <= 1
            if key in ("rfm", "rgvfm"):  # intrinsic samples lie on the manifold
                assert model["dist_to_manifold"]["mean"] < 1e-4
                assert "jacobi_gap" in model
    # the Jacobi gap has the sign of the curvature: |log μ - log x1|² ≥ d² on S², ≤ on H²
    assert results["sphere_checkerboard"]["rgvfm"]["jacobi_gap"]["mean"] >= 0
    assert results["hyperboloid_checkerboard"]["rgvfm"]["jacobi_gap"]["mean"] <= 0
    assert set(record["plots"]) == {
        "samples_sphere_checkerboard.png",
        "samples_hyperboloid_checkerboard.png",
        "coverage.png",
    }
    assert isinstance(record["claim_held"], bool) and record["evidence"]["evaluated"]
    # the parameters moved: every model's objective over the last tenth of its 30 steps is below the first tenth
    for board in results.values():
        for key, model in board.items():
            trace = model["loss_trace_seed0"]
            assert trace[-1] < trace[0], f"{key}: loss did not fall, {trace}"
    # the verdict is the measured rule, recomputed here from the per-seed coverages in the record
    cov = {k: m["coverage"]["per_seed"][0] for k, m in results["sphere_checkerboard"].items()}
    gaps = (cov["rgvfm"] - cov["rfm"], cov["rgvfm"] - max(cov["cfm"], cov["vfm"]))
    assert record["claim_held"] == all(gap > 1.0 for gap in gaps)  # one seed: s.e. 0, margin min_margin = 1


def test_set_override_is_validated():
    """``--set t_end=1.0`` goes through the same parsing and validation as the CLI (no subprocess needed)."""
    with pytest.raises(ConfigError, match="config field 't_end'"):
        build_config("rgvfm", "smoke", None, ["t_end=1.0"])
    assert build_config("rgvfm", "smoke", None, ["integrator=rk4"]).integrator == "rk4"


def test_gpu_scale_asks_for_cuda():
    assert RGVFMConfig.preset("gpu").device == "cuda" and RGVFMConfig().device == "cpu"


@no_cuda
def test_unavailable_device_fails_before_any_data_or_training(tmp_path, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("data or training started before the device was checked")

    monkeypatch.setattr(experiment, "benchmark_data", must_not_run)
    monkeypatch.setattr(experiment, "train_flow", must_not_run)
    config = build_config("rgvfm", "smoke", None, ["device=cuda"])
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    with pytest.raises(ConfigError, match="config field 'device'"):
        run(config, ctx)
    assert ctx.plots == [] and list(tmp_path.iterdir()) == []


@no_cuda
def test_gpu_scale_on_a_machine_without_cuda_exits_with_the_device_error(cli, tmp_path):
    proc = cli("run", "rgvfm", "--scale", "gpu", "--out", str(tmp_path), "--quiet")
    assert proc.returncode == 2 and "config field 'device'" in proc.stderr, proc.stderr
    assert list(tmp_path.rglob("result.json")) == []


def without_timings(value):
    """The metrics with the wall-time entries (``train_seconds``) removed, for exact comparison."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "train_seconds"}
    return value


@no_cuda
def test_explicit_cpu_and_auto_reproduce_the_default_smoke_metrics(tmp_path, monkeypatch):
    devices: list[set[torch.device]] = []
    train_flow = experiment.train_flow

    def recording_train_flow(flow, parameters, data, prior, **kwargs):
        parameters = list(parameters)
        devices.append({data.device, kwargs["generator"].device, *(p.device for p in parameters)})
        return train_flow(flow, parameters, data, prior, **kwargs)

    monkeypatch.setattr(experiment, "train_flow", recording_train_flow)
    metrics = {}
    for device in ("default", "cpu", "auto"):
        config = build_config("rgvfm", "smoke", None, [] if device == "default" else [f"device={device}"])
        seed_everything(config.seed)  # as the runner does
        devices.clear()
        (out := tmp_path / device).mkdir()
        outcome = run(config, RunContext(out_dir=out, seed=config.seed, quiet=True))
        assert devices and all(d == {torch.device("cpu")} for d in devices), f"{device}: trained on {devices}"
        metrics[device] = without_timings(outcome.metrics)
    # bit-identical: the same draws on the same device, compared with ==, not a tolerance
    assert metrics["cpu"] == metrics["default"] and metrics["auto"] == metrics["default"]
