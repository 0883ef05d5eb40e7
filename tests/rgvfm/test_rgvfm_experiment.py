"""The reproduction: config validation, the verdict rule, a user data file, and the smoke run through the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr26.cli import main as cli_main
from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.common.seeding import seed_everything
from iclr26.common.stats import paired_t
from iclr26.rgvfm import experiment
from iclr26.rgvfm.config import RGVFMConfig
from iclr26.rgvfm.experiment import run
from iclr26.rgvfm.verdict import Measurements, verdict
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


def test_verdict_not_evaluated_without_the_sphere_checkerboard():
    v = verdict(Measurements({}), RGVFMConfig())
    assert v.status == "not held" and not v.evidence["evaluated"] and "not evaluated" in v.measurement


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
        n_metric=30,
        curve_points=3,
        curve_eval=20,
        sample_steps=3,
        c2st_k=3,
        compile_network=False,
        data=tmp_path / "pts.npy",
    )
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    outcome = run(config, ctx)
    # one unit of work per (benchmark, seed, model, checkpoint): curve_points = 3 checkpoints of the 3 steps
    assert ctx.units == [f"sphere_file-seed0-{key}-step{k}" for key in ("rfm", "rgvfm") for k in (1, 2, 3)]
    file_results = outcome.metrics["results"]["sphere_file"]
    assert set(file_results) == {"rfm", "rgvfm"}
    assert all(math.isfinite(r["mmd2"]["mean"]) for r in file_results.values())
    assert outcome.claim_held == "not held" and "not evaluated" in outcome.measurement
    assert "samples_sphere_file.png" in ctx.plots


def test_smoke_run_through_the_cli(smoke):
    record = smoke("rgvfm")
    results = record["metrics"]["results"]
    assert set(results) == {"sphere_checkerboard", "hyperboloid_checkerboard"}
    for board in results.values():
        assert set(board) == {"cfm", "vfm", "rgvfm_ambient", "rfm", "rgvfm", "rgvfm_shuffled_t"}
        for key, model in board.items():
            assert 0 <= model["coverage"]["mean"] <= 100
            assert 0 <= model["c2st"]["mean"] <= 1
            if key in ("rfm", "rgvfm", "rgvfm_shuffled_t"):  # intrinsic samples lie on the manifold
                assert model["dist_to_manifold"]["mean"] < 1e-4
                assert "jacobi_gap" in model
    # the Jacobi gap has the sign of the curvature: |log μ - log x1|² ≥ d² on S², ≤ on H²
    assert results["sphere_checkerboard"]["rgvfm"]["jacobi_gap"]["mean"] >= 0
    assert results["hyperboloid_checkerboard"]["rgvfm"]["jacobi_gap"]["mean"] <= 0
    assert set(record["plots"]) == {
        "samples_sphere_checkerboard.png",
        "samples_hyperboloid_checkerboard.png",
        "coverage.png",
        "convergence.png",
    }
    assert record["claim_held"] in ("held", "not held") and record["evidence"]["evaluated"]
    # the parameters moved: every model's objective over the last tenth of its 24 steps is below the first tenth
    for board in results.values():
        for key, model in board.items():
            trace = model["loss_trace_seed0"]
            assert trace[-1] < trace[0], f"{key}: loss did not fall, {trace}"
    # both protocols' choices are recorded: judged coverage on raw extrinsic samples (default), the projected one beside
    # it, the last weights' coverage and, for endpoint models, the unclipped velocity's
    for board in results.values():
        for key, model in board.items():
            assert model["coverage"]["per_seed"] == model["coverage_raw"]["per_seed"], key
            assert 0 <= model["coverage_projected"]["mean"] <= 100
            endpoint = ("vfm", "rgvfm_ambient", "rgvfm", "rgvfm_shuffled_t")
            expected = {"last_weights", "unclipped"} if key in endpoint else {"last_weights"}
            assert set(model["alt_coverage"]) == expected, key
    # the convergence curve: the same checkpoints for every arm, one coverage per seed and checkpoint
    for board in results.values():
        assert {tuple(m["coverage_curve"]["steps"]) for m in board.values()} == {(12, 24)}
        assert all(len(c) == 2 for m in board.values() for c in m["coverage_curve"]["per_seed"])
    assert "convergence.png" in record["plots"]
    # the verdict is the measured rule, recomputed here from the per-seed coverages in the record (one seed: no
    # interval, so neither part can pass)
    sphere = results["sphere_checkerboard"]
    cov = {k: m["coverage"]["per_seed"] for k, m in sphere.items()}
    best = "vfm" if sphere["vfm"]["coverage"]["mean"] >= sphere["cfm"]["coverage"]["mean"] else "cfm"
    parts = []
    for base in ("rfm", best):
        t = paired_t(cov["rgvfm"], cov[base], confidence=0.95)
        parts.append(bool(t.mean > 1.0 and t.lower > 0))
    assert record["claim_held"] == ("held" if all(parts) else "not held")
    assert record["evidence"]["part2_rgvfm_vs_best_euclidean"]["baseline"] == best


def test_set_override_is_validated():
    """``--set t_end=1.0`` goes through the same parsing and validation as the CLI (no subprocess needed)."""
    with pytest.raises(ConfigError, match="config field 't_end'"):
        build_config("rgvfm", "smoke", None, ["t_end=1.0"])
    assert build_config("rgvfm", "smoke", None, ["integrator=rk4"]).integrator == "rk4"


def test_gpu_scale_asks_for_cuda():
    assert RGVFMConfig.preset("gpu").device == "cuda" and RGVFMConfig().device == "cpu"


@no_cuda
def test_unavailable_device_fails_before_any_data_or_training(monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("data or training started before the device was checked")

    monkeypatch.setattr(experiment, "benchmark_data", must_not_run)
    monkeypatch.setattr(experiment, "FlowTrainer", must_not_run)
    with pytest.raises(ConfigError, match="config field 'device'"):  # the runner's check, before the run folder
        build_config("rgvfm", "smoke", None, ["device=cuda"])


@no_cuda
def test_gpu_scale_on_a_machine_without_cuda_exits_with_the_device_error(cli, tmp_path):
    proc = cli("run", "rgvfm", "--scale", "gpu", "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 2 and "config field 'device'" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written, not even the run folder


@no_cuda
def test_explicit_cpu_and_auto_reproduce_the_default_smoke_metrics(tmp_path, monkeypatch):
    devices: list[set[torch.device]] = []
    trainer_cls = experiment.FlowTrainer

    def recording_trainer(flow, parameters, data, prior, **kwargs):
        parameters = list(parameters)
        devices.append({data.device, kwargs["generator"].device, *(p.device for p in parameters)})
        return trainer_cls(flow, parameters, data, prior, **kwargs)

    monkeypatch.setattr(experiment, "FlowTrainer", recording_trainer)
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
