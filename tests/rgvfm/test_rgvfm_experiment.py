"""The reproduction: config validation, the verdict rule, a user data file, and the smoke run through the CLI."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr26.cli import main as cli_main
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
    assert (
        evidence["thresholds"]["min_margin"]["value"] == 1.0
        and "binomial" in evidence["thresholds"]["min_margin"]["source"]
    )
    assert evidence["thresholds"]["se_factor"]["value"] == 2.0
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
    np.save(tmp_path / "pts.npy", points / np.linalg.norm(points, axis=1, keepdims=True))
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
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    outcome = run(config, ctx)
    # one unit of work per (benchmark, seed, model)
    assert ctx.units == ["sphere_file-seed0-rfm", "sphere_file-seed0-rgvfm"]
    file_results = outcome.metrics["results"]["sphere_file"]
    assert set(file_results) == {"rfm", "rgvfm"}
    assert all(math.isfinite(r["mmd2"]["mean"]) for r in file_results.values())
    assert not outcome.claim_held and "not evaluated" in outcome.measurement
    assert "samples_sphere_file.png" in ctx.plots


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
    with pytest.raises(ConfigError, match="config field 'device'"):  # the runner's check, before the run folder
        build_config("rgvfm", "smoke", None, ["device=cuda"])
    config = dataclasses.replace(RGVFMConfig.preset("smoke"), device="cuda")  # and run's own, for the Python API
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    with pytest.raises(ConfigError, match="config field 'device'"):
        run(config, ctx)
    assert ctx.plots == [] and list(tmp_path.iterdir()) == []


@no_cuda
def test_gpu_scale_on_a_machine_without_cuda_exits_with_the_device_error(cli, tmp_path):
    proc = cli("run", "rgvfm", "--scale", "gpu", "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 2 and "config field 'device'" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written, not even the run folder


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
        metrics[device] = outcome.metrics
    # bit-identical: the same draws on the same device, compared with ==, not a tolerance (the wall times are
    # in the outcome's timings, not in its metrics)
    assert metrics["cpu"] == metrics["default"] and metrics["auto"] == metrics["default"]


def test_verdict_margin_scales_with_se_factor():
    """The margin is max(min_margin, se_factor x s.e.): with se_factor = 4 the RFM margin above becomes 4/√3 = 2.31."""
    coverages = {"rgvfm": [84, 85, 83], "rfm": [66, 68, 67], "cfm": [65, 64, 66], "vfm": [79, 78, 80]}
    evidence = verdict(RGVFMConfig(seeds=3, se_factor=4.0), fake_results(coverages)).evidence
    assert math.isclose(evidence["rgvfm_minus_rfm_margin"], 4 / math.sqrt(3))
    # RG-VFM-M - best Euclidean = 5 with s.e. 2/√3: margin 8/√3 = 4.62 < 5, still held; se_factor 5 -> 5.77 > 5
    assert verdict(RGVFMConfig(seeds=3, se_factor=4.0), fake_results(coverages)).held
    assert not verdict(RGVFMConfig(seeds=3, se_factor=5.0), fake_results(coverages)).held


# --- the data key: read and checked when the config is built; a rejected file leaves no run folder ----------------


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 3))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def bad_data_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Case name -> (file, a phrase the message must hold)."""
    (folder := tmp_path / "folder").mkdir()
    (empty := tmp_path / "empty.csv").write_bytes(b"")
    # 4 KiB of random bytes: not UTF-8 text, and not an .npy header
    noise = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    (binary_csv := tmp_path / "noise.csv").write_bytes(noise)
    (binary_npy := tmp_path / "noise.npy").write_bytes(noise)
    np.save(pickled := tmp_path / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (words := tmp_path / "words.csv").write_text("lat,lon\nnorth,east\n")
    (comments := tmp_path / "comments.txt").write_text("# only a comment\n")
    np.save(four := tmp_path / "four.npy", np.ones((100, 4)))
    np.save(flat := tmp_path / "flat.npy", unit_rows(100).ravel())
    nan_rows = unit_rows(100)
    nan_rows[7, 1] = np.nan
    np.save(nan_file := tmp_path / "nan.npy", nan_rows)
    (inf_text := tmp_path / "inf.txt").write_text("\n".join(["0 0 1"] * 99 + ["inf 0 0"]))
    np.save(off := tmp_path / "radius2.npy", 2 * unit_rows(100))  # points on the sphere of radius 2, not S²
    (latlon := tmp_path / "latlon.csv").write_text("\n".join(["95,10"] + ["10,20"] * 99))
    np.save(few := tmp_path / "few.npy", unit_rows(59))  # smoke c2st_k = 11 needs max(20, 5 x 12) = 60
    return {
        "missing": (tmp_path / "missing.csv", "no such file"),
        "folder": (folder, "is a folder; pass one file"),
        "empty": (empty, "is empty"),
        "binary text": (binary_csv, "is not UTF-8 text"),
        "binary npy": (binary_npy, "is not a readable .npy array"),
        "pickled npy": (pickled, "is not a readable .npy array"),
        "not numbers": (words, "does not parse as rows of numbers"),
        "no points": (comments, "holds no points"),
        "four columns": (four, "got shape (100, 4)"),
        "one axis": (flat, "got shape (300,)"),
        "nan": (nan_file, "row 7 holds a non-finite value"),
        "inf": (inf_text, "row 99 holds a non-finite value"),
        "off the sphere": (off, "100 of 100 rows are not on the unit sphere"),
        "latitude": (latlon, "latitude must lie in [-90, 90]"),
        "too few for the split": (few, "holds 59 points; the 80%/20% split needs at least 60"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "folder",
        "empty",
        "binary text",
        "binary npy",
        "pickled npy",
        "not numbers",
        "no points",
        "four columns",
        "one axis",
        "nan",
        "inf",
        "off the sphere",
        "latitude",
        "too few for the split",
    ],
)
def test_bad_data_file_exits_2_naming_the_field_and_writes_no_run_folder(case, tmp_path, capsys):
    path, phrase = bad_data_files(tmp_path)[case]
    out = tmp_path / "out"
    assert cli_main(["run", "rgvfm", "--scale", "smoke", "--set", f"data={path}", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "config field 'data'" in err and phrase in err, err
    assert not (out / "rgvfm").exists()


def test_unreadable_data_file_names_the_field(tmp_path, monkeypatch):
    """A file the process may not read (simulated: the tests may run as root, who reads everything)."""
    path = tmp_path / "secret.npy"
    np.save(path, unit_rows(100))
    real_read_bytes = Path.read_bytes

    def read_bytes(self):
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.raises(ConfigError, match=r"config field 'data': .*cannot be read \(Permission denied\)"):
        RGVFMConfig(data=path)


def test_a_valid_data_file_is_accepted_and_the_old_rules_hold(tmp_path):
    # rows within 1e-3 of unit norm (4 decimals) are accepted and renormalised
    rows = np.round(unit_rows(60), 4)
    np.savetxt(path := tmp_path / "four_decimals.csv", rows, delimiter=",", header="x,y,z")
    config = build_config("rgvfm", "smoke", None, [f"data={path}"])
    assert config.data == path
    # the same points with c2st_k = 13 need 5 x 14 = 70 points
    with pytest.raises(ConfigError, match="needs at least 70"):
        build_config("rgvfm", "smoke", None, [f"data={path}", "c2st_k=13"])
