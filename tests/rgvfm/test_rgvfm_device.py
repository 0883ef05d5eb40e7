"""Placement on the configured device, the compiled network against the eager one, and a user's file of points in
the layout the help describes (text, comments, latitude/longitude in degrees)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.common.distributed import World
from iclr26.common.experiment import RunContext
from iclr26.rgvfm import TimeMLP
from iclr26.rgvfm import experiment as rgvfm_experiment
from iclr26.rgvfm.config import RGVFMConfig, read_data
from iclr26.rgvfm.experiment import make_flow, run, train_segment


def small(**changes) -> RGVFMConfig:
    base = dict(
        models=("rgvfm",), seeds=1, steps=4, batch_size=16, n_train=64, n_eval=40, n_metric=40, curve_points=1,
        curve_eval=20, sample_steps=3, c2st_k=3, compile_network=False,
    )  # fmt: skip
    return RGVFMConfig(**{**base, **changes})


def test_models_data_and_generators_land_on_the_device_the_runner_resolved(monkeypatch, tmp_path):
    seen = []
    real = rgvfm_experiment.FlowTrainer

    def recording(flow, parameters, data, prior, **kwargs):
        parameters = list(parameters)
        seen.append({data.device, kwargs["generator"].device, *(p.device for p in parameters)})
        seen.append(kwargs["world"])
        return real(flow, parameters, data, prior, **kwargs)

    monkeypatch.setattr(rgvfm_experiment, "FlowTrainer", recording)
    world = World(rank=0, size=1, local_rank=0)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True, world=world, device=torch.device("cpu"))
    config = small()
    train, held_out = rgvfm_experiment.split_data(config, "sphere_checkerboard", 0)
    segment = train_segment(config, "sphere_checkerboard", "rgvfm", train, held_out, 0, 0, None, ctx)
    assert seen == [{ctx.device}, world] and segment.final is not None
    network, _, _ = make_flow(config, "sphere_checkerboard", "rgvfm", 0, ctx.device)
    assert {p.device for p in network.parameters()} == {ctx.device}


def test_the_compiled_network_computes_the_eager_function():
    # float32 MLP of widths 4-64-128-128-64-3: fusion reorders sums of at most 128 products of values ~1, so outputs
    # agree to a few ulp (~1e-6 absolute); a wrong weight or activation would differ by ~1e-1.
    config = small(compile_network=True)
    network, flow, _ = make_flow(config, "sphere_checkerboard", "rgvfm", 0, torch.device("cpu"))
    assert flow.network is not network and list(flow.network.parameters()) == list(network.parameters())
    x, t = torch.randn(50, 3), torch.rand(50, 1)
    with torch.no_grad():
        eager, compiled = network(x, t), flow.network(x, t)
    assert eager.abs().max() > 0.05
    torch.testing.assert_close(compiled, eager, rtol=0, atol=1e-5)


def test_a_text_file_of_latitudes_and_longitudes_with_comments_trains(tmp_path):
    rng = np.random.default_rng(0)
    lat = rng.uniform(-60, 60, 150)
    lon = rng.uniform(-180, 180, 150)
    path = tmp_path / "earthquakes.csv"
    rows = "\n".join(f"{a:.4f},{b:.4f}" for a, b in zip(lat, lon, strict=True))
    path.write_text(f"# latitude, longitude (degrees)\n{rows}\n")
    points = read_data(path)
    assert points.shape == (150, 3) and torch.allclose(points.norm(dim=1), torch.ones(150, dtype=points.dtype))
    # latitude φ, longitude λ -> (cos φ cos λ, cos φ sin λ, sin φ)
    assert float(points[0, 2]) == pytest.approx(math.sin(math.radians(lat[0])), abs=1e-4)
    config = small(benchmarks=(), models=("rfm", "rgvfm"), data=path)
    outcome = run(config, RunContext(out_dir=tmp_path / "run", seed=0, quiet=True))
    assert set(outcome.metrics["results"]["sphere_file"]) == {"rfm", "rgvfm"}
    assert outcome.claim_held == "not held" and not outcome.evidence["evaluated"]


def test_gpu_preset_and_slice_share_network_batch_and_protocol():
    import dataclasses

    gpu = RGVFMConfig.preset("gpu")
    sliced = dataclasses.replace(gpu, **RGVFMConfig.GPU_SLICE)
    assert (sliced.hidden_dim, sliced.batch_size, sliced.n_eval) == (gpu.hidden_dim, gpu.batch_size, gpu.n_eval)
    assert gpu.work() / sliced.work() > 100
    assert isinstance(TimeMLP(3), torch.nn.Module)
