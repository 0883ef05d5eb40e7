"""The official protocol as the default, the best-loss checkpoint, EMA, resumable training, fused Adam, the
official clip of the sampling velocity, coverage on raw extrinsic samples, and the two-part paired verdict."""

from __future__ import annotations

import dataclasses
import math
import shutil

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.experiment import UNITS_DIR, RunContext
from iclr26.rgvfm import EndpointFlow, Euclidean, Lorentz, Sphere, TimeMLP, VelocityFlow, build_flow, make_prior
from iclr26.rgvfm.config import RGVFMConfig
from iclr26.rgvfm.experiment import checkpoint_steps, run
from iclr26.rgvfm.flows import DEFAULT_NOISE_SCALE, FlowMatcher
from iclr26.rgvfm.metrics import checkerboard_coverage, official_unwrap
from iclr26.rgvfm.training import FlowTrainer, default_fused, train_flow
from iclr26.rgvfm.verdict import Measurements, verdict

F64 = torch.float64

# --- the official protocol is the default; the package's old one stays as options ----------------------------------


def test_defaults_are_the_official_protocol_and_the_old_one_is_an_option():
    c = RGVFMConfig()
    # official scripts/main_sphere.py: batch 1024, lr 1e-3, best-epoch model, 10,000 samples from p0, noise 0.1
    assert (c.batch_size, c.lr, c.checkpoint, c.n_eval, c.noise_scale) == (1024, 1e-3, "best_loss", 10_000, 0.1)
    assert (c.velocity_clip, c.coverage_samples, c.ema_decay) == ("official", "raw", 0.0)
    assert c.seeds >= 5 and set(c.models) == {"vfm", "rfm", "rgvfm", "rgvfm_shuffled_t"}
    gpu = RGVFMConfig.preset("gpu")
    assert (gpu.steps, gpu.batch_size, gpu.lr, gpu.n_eval) == (30_000, 1024, 1e-3, 10_000)
    assert len(gpu.models) == 6 and gpu.seeds >= 5  # the paper's five and the control
    old = dataclasses.replace(c, **RGVFMConfig.PACKAGE_PROTOCOL)  # a valid config
    assert (old.steps, old.batch_size, old.lr, old.checkpoint) == (5000, 256, 3e-3, "last")
    assert (old.velocity_clip, old.coverage_samples, old.n_eval) == ("none", "projected", 2000)


def test_convergence_checkpoints_are_at_least_four_equal_intervals():
    c = RGVFMConfig()
    steps = checkpoint_steps(c)
    assert len(steps) >= 4 and steps[-1] == c.steps
    assert steps == [c.steps * (i + 1) // c.curve_points for i in range(c.curve_points)]
    assert checkpoint_steps(dataclasses.replace(c, steps=10, curve_points=3)) == [3, 7, 10]  # round(10/3), round(20/3)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"checkpoint": "best"}, "checkpoint"),
        ({"velocity_clip": "10"}, "velocity_clip"),
        ({"coverage_samples": "both"}, "coverage_samples"),
        ({"ema_decay": 1.0}, "ema_decay"),
        ({"epoch_steps": -1}, "epoch_steps"),
        ({"curve_points": 0}, "curve_points"),
        ({"n_metric": 20_000}, "n_metric"),
        ({"confidence": 0.4}, "confidence"),
    ],
)
def test_protocol_config_errors_name_the_field(changes, field):
    with pytest.raises(ConfigError, match=f"config field '{field}'"):
        RGVFMConfig(**changes)


# --- drop-in defaults equal the reproduction's ------------------------------------------------------------------------


def test_build_flow_and_flow_matcher_default_to_the_reproduced_method():
    s, h = Sphere(2), Lorentz(2)
    assert DEFAULT_NOISE_SCALE == RGVFMConfig().noise_scale == 0.1
    for key in ("cfm", "vfm", "rgvfm_ambient", "rfm", "rgvfm"):
        assert build_flow(key, s, TimeMLP(3)).noise_scale == 0.1
    assert EndpointFlow(TimeMLP(3), path=s).noise_scale == 0.1 and VelocityFlow(TimeMLP(3), path=s).noise_scale == 0.1
    assert FlowMatcher.__init__.__kwdefaults__["noise_scale"] == 0.1
    # the official clips of 1/(1 - t): 10 on S² (VelocityInferenceSphere), 5 on H², 20 in R³ (VelocityInference)
    assert build_flow("rgvfm", s, TimeMLP(3)).time_clip == 10.0
    assert build_flow("rgvfm", h, TimeMLP(3)).time_clip == 5.0
    assert build_flow("vfm", s, TimeMLP(3)).time_clip == 20.0
    assert build_flow("rgvfm_ambient", s, TimeMLP(3)).time_clip == 20.0
    assert build_flow("rgvfm", s, TimeMLP(3), time_clip=None).time_clip is None
    with pytest.raises(ValueError, match="time_clip must be >= 1"):
        EndpointFlow(TimeMLP(3), path=s, time_clip=0.5)


@pytest.mark.parametrize(("t", "factor"), [(0.5, 2.0), (0.9, 10.0), (0.95, 10.0), (0.98, 10.0)])
def test_clipped_sphere_velocity_hand_computed(t, factor):
    """v = log_x(μ) · min(1/(1 - t), 10) on S²: 1/(1 - t) = 2, 10, 20, 50 is clipped to 2, 10, 10, 10."""
    s = Sphere(2)
    p = s.base_point(dtype=F64)
    x = s.from_chart(torch.tensor([[0.3, -0.2], [1.0, 0.5]], dtype=F64))
    tt = torch.full((2, 1), t, dtype=F64)
    flow = EndpointFlow(lambda x, t: p.expand_as(x), path=s)
    torch.testing.assert_close(flow.velocity(x, tt), factor * s.log(x, p.expand_as(x)))
    unclipped = EndpointFlow(lambda x, t: p.expand_as(x), path=s, time_clip=None)
    torch.testing.assert_close(unclipped.velocity(x, tt), s.log(x, p.expand_as(x)) / (1 - t))


def test_clipped_extrinsic_velocity_hand_computed():
    """Extrinsic VFM: v = (μ - x) · min(1/(1 - t), 20); at t = 0.97 1/(1 - t) = 33.3 is clipped to 20."""
    mu = torch.tensor([0.0, 0.0, 1.0], dtype=F64)
    flow = build_flow("vfm", Sphere(2), lambda x, t: mu.expand_as(x))
    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=F64)
    torch.testing.assert_close(flow.velocity(x, torch.tensor([[0.97]], dtype=F64)), 20 * (mu - x))
    torch.testing.assert_close(flow.velocity(x, torch.tensor([[0.9]], dtype=F64)), 10 * (mu - x))
    assert isinstance(flow.path, Euclidean)


# --- coverage on raw extrinsic samples (official unwrap) ------------------------------------------------------------


def test_official_unwrap_hand_computed_and_equal_to_the_chart_on_the_manifold():
    s, h = Sphere(2), Lorentz(2)
    # sphere, x = (0.6, 0, 0.6) off S² (|x| = 0.85): θ = acos 0.6, sin θ = 0.8, chart = 0.6 θ / 0.8
    torch.testing.assert_close(
        official_unwrap(s, torch.tensor([[0.6, 0.0, 0.6]], dtype=F64)),
        torch.tensor([[0.6 * math.acos(0.6) / 0.8, 0.0]], dtype=F64),
    )
    # hyperboloid, x = (2, 1, 0) off H² (on H² x0 would be √2): r = acosh 2, sinh r = √3, chart = r / √3
    torch.testing.assert_close(
        official_unwrap(h, torch.tensor([[2.0, 1.0, 0.0]], dtype=F64)),
        torch.tensor([[math.acosh(2.0) / math.sqrt(3.0), 0.0]], dtype=F64),
    )
    for m in (s, h):
        x = m.wrapped_normal(50, scale=0.7, generator=torch.Generator().manual_seed(1), dtype=F64)
        torch.testing.assert_close(official_unwrap(m, x), m.to_chart(x))
    with pytest.raises(ValueError, match="S² and H²"):
        official_unwrap(Euclidean(3), torch.zeros(2, 3))


def test_raw_and_projected_coverage_differ_for_a_point_inside_the_sphere():
    """x = (0.38, 0, 0.38): raw chart 0.38 acos(0.38)/sin(acos 0.38) = 0.485 lies in column 2 (white cell (2, 2));
    its projection (1, 0, 1)/√2 charts to π/4 = 0.785, column 3 (black cell (3, 2))."""
    x = torch.tensor([[0.38, 0.0, 0.38]])
    s = Sphere(2)
    assert checkerboard_coverage(s, x, raw=True).coverage == 0.0
    assert checkerboard_coverage(s, s.proj(x)).coverage == 1.0
    with pytest.raises(ValueError, match="x"):  # without raw=True points must lie on the sphere
        checkerboard_coverage(s, x)


# --- training: best-loss checkpoint, EMA, resumable state, fused Adam ----------------------------------------------


class ScriptedFlow:
    """A stand-in flow: loss at step k = offset[k] + 1e-3 (w - 5)², one scalar weight w trained by Adam."""

    def __init__(self, offsets: list[float]) -> None:
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.offsets = offsets
        self.k = 0

    def training_loss(self, x0, x1, t, *, generator=None):
        loss = self.offsets[self.k] + 1e-3 * (self.w - 5) ** 2
        self.k += 1
        return loss


def scripted_trainer(offsets, **kwargs) -> tuple[ScriptedFlow, FlowTrainer]:
    flow = ScriptedFlow(offsets)
    data = torch.zeros(6, 1)
    prior = lambda n, g: torch.zeros(n, 1)  # noqa: E731
    kwargs.setdefault("lr", 0.1)
    trainer = FlowTrainer(flow, [flow.w], data, prior, batch_size=2, generator=torch.Generator(), **kwargs)
    return flow, trainer


def test_best_loss_checkpoint_keeps_the_epoch_with_the_lowest_mean_loss():
    # epochs of 3 steps (N = 6 points, batch 2: ⌈6/2⌉ = 3, the official loader's); epoch means ≈ 5, 1, 3, 2 (+ the
    # small quadratic term): the second epoch is best, so the weights after step 6 are kept
    offsets = [5.0] * 3 + [1.0] * 3 + [3.0] * 3 + [2.0] * 3 + [0.0] * 2  # the last 2 steps: an incomplete epoch
    flow, trainer = scripted_trainer(offsets)
    assert trainer.epoch_steps == 3
    history = []
    for _ in range(14):
        trainer.run(1)
        history.append(float(flow.w.detach()))
    assert trainer.best_step == 6 and float(trainer.selected()[0]) == history[5]
    # the epoch's mean loss, with the weights before each of steps 4-6
    before = [0.0, *history][3:6]
    assert math.isclose(trainer.best_loss, 1.0 + 1e-3 * sum((w - 5) ** 2 for w in before) / 3, rel_tol=1e-6)
    # the incomplete last epoch (loss 0) does not count; "last" returns the final weights
    _, last = scripted_trainer(offsets, checkpoint="last")
    last.run(14)
    assert float(last.selected()[0]) == history[-1] and last.best is None


def test_train_flow_leaves_the_selected_weights_in_the_network():
    s = Sphere(2)
    data = s.wrapped_normal(256, scale=0.3, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    network = TimeMLP(3, hidden_dim=16)
    flow = build_flow("rgvfm", s, network)
    result = train_flow(
        flow, network.parameters(), data, make_prior(s, intrinsic=True), steps=20, batch_size=64, lr=1e-2,
        generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    torch.manual_seed(0)
    network2 = TimeMLP(3, hidden_dim=16)
    trainer = FlowTrainer(
        build_flow("rgvfm", s, network2), network2.parameters(), data, make_prior(s, intrinsic=True), batch_size=64,
        lr=1e-2, generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    trainer.run(20)
    assert trainer.epoch_steps == 4 and result.best_step == trainer.best_step  # ⌈256 / 64⌉ = 4
    for p, w in zip(network.parameters(), trainer.selected(), strict=True):
        assert torch.equal(p.detach(), w)


def test_ema_of_the_weights_hand_computed():
    """w̄_0 = w_0, w̄_k = d w̄_{k-1} + (1 - d) w_k with d = 0.5; with EMA on the checkpoint rule keeps the EMA."""
    flow, trainer = scripted_trainer([1.0] * 5, ema_decay=0.5, checkpoint="last")
    ema, expected = 0.0, []
    for _ in range(5):
        trainer.run(1)
        ema = 0.5 * ema + 0.5 * float(flow.w.detach())
        expected.append(ema)
    assert math.isclose(float(trainer.selected()[0]), expected[-1], rel_tol=1e-6)
    assert float(trainer.selected()[0]) != float(flow.w.detach())  # the EMA lags the live weight
    with pytest.raises(ValueError, match="ema_decay"):
        scripted_trainer([1.0], ema_decay=1.0)


@pytest.mark.parametrize("ema_decay", [0.0, 0.9])
def test_training_stopped_and_resumed_from_its_state_equals_an_uninterrupted_run(ema_decay):
    s = Sphere(2)
    data = s.wrapped_normal(300, scale=0.3, generator=torch.Generator().manual_seed(0))
    prior = make_prior(s, intrinsic=True)

    def trainer():
        torch.manual_seed(3)
        network = TimeMLP(3, hidden_dim=16)
        return FlowTrainer(
            build_flow("rgvfm", s, network), network.parameters(), data, prior, batch_size=32, lr=1e-2,
            generator=torch.Generator().manual_seed(4), ema_decay=ema_decay, epoch_steps=3,
        )  # fmt: skip

    whole = trainer()
    whole.run(13)
    first = trainer()
    first.run(5)
    state = first.state()
    resumed = trainer()  # fresh weights, fresh generator, fresh Adam: everything comes from the state
    resumed.load(state)
    resumed.run(8)
    assert resumed.step == whole.step == 13 and resumed.best_step == whole.best_step
    assert torch.equal(resumed.losses_tensor(), whole.losses_tensor())
    for a, b in zip(resumed.selected() + resumed.params, whole.selected() + whole.params, strict=True):
        assert torch.equal(a.detach(), b.detach())


def test_fused_adam_equals_the_loop_implementation():
    """Adam(fused=True) gives the loop implementation's weights to float32 rounding (measured: 4e-8 after 50 steps)."""
    s = Sphere(2)
    data = s.wrapped_normal(500, scale=0.4, generator=torch.Generator().manual_seed(0))
    weights, losses = {}, {}
    for fused in (True, False):
        torch.manual_seed(0)
        network = TimeMLP(3, hidden_dim=32)
        trainer = FlowTrainer(
            build_flow("rgvfm", s, network), network.parameters(), data, make_prior(s, intrinsic=True),
            batch_size=64, lr=1e-3, generator=torch.Generator().manual_seed(0), fused=fused,
        )  # fmt: skip
        assert isinstance(trainer.optimizer, torch.optim.Adam) and trainer.optimizer.defaults["fused"] is fused
        trainer.run(40)
        weights[fused] = torch.cat([p.detach().flatten() for p in network.parameters()])
        losses[fused] = trainer.losses_tensor()
    torch.testing.assert_close(weights[True], weights[False], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(losses[True], losses[False], rtol=1e-5, atol=1e-6)
    assert default_fused(torch.device("cpu")) and RGVFMConfig().fused_adam


# --- the verdict: two parts, each a paired Student-t test over seeds --------------------------------------------------


T95_4 = 2.131847  # Student t, 4 degrees of freedom: 0.95 quantile (one-sided bound)
T975_4 = 2.776445  # 0.975 quantile (two-sided 95 % interval)


def test_verdict_two_parts_hand_computed():
    clear = {
        "rgvfm": [84, 85, 83, 86, 84],
        "rfm": [66, 68, 67, 65, 66],
        "cfm": [65, 64, 66, 60, 60],
        "vfm": [79, 78, 80, 81, 83],
        "rgvfm_shuffled_t": [40, 42, 38, 41, 39],  # the negative control, far below RFM: the gate passes
    }
    v = verdict(Measurements(clear), RGVFMConfig())
    held, evidence, measurement = v.status == "held", v.evidence, v.measurement
    p1, p2 = evidence["part1_rgvfm_vs_rfm"], evidence["part2_rgvfm_vs_best_euclidean"]
    # part 1: diffs (18, 17, 16, 21, 18), mean 18, squared deviations 0+1+4+9+0 = 14, sd √3.5, se √3.5/√5
    se1 = math.sqrt(3.5 / 5)
    assert math.isclose(p1["mean"], 18.0)
    assert math.isclose(p1["lower"], 18 - T95_4 * se1, rel_tol=1e-6)
    assert math.isclose(p1["ci95_low"], 18 - T975_4 * se1, rel_tol=1e-6)
    assert p1["passes"] and p1["wins"] == 5
    # part 2: VFM has the higher mean (80.2 > 63), diffs (5, 7, 3, 5, 1), mean 4.2, squared deviations 20.8, sd √5.2
    se2 = math.sqrt(5.2 / 5)
    assert p2["baseline"] == "vfm" and math.isclose(p2["mean"], 4.2)
    assert math.isclose(p2["lower"], 4.2 - T95_4 * se2, rel_tol=1e-6) and p2["passes"]
    assert held and "part 1: RG-VFM-M - RFM = +18.0" in measurement and "part 2: RG-VFM-M - VFM" in measurement
    assert evidence["thresholds"]["confidence"]["value"] == 0.95 and evidence["thresholds"]["min_margin"]["value"] == 1


def test_verdict_parts_fail_separately():
    # part 1 holds; against VFM the gaps (5, -4, 6, -3, 1) average +1 with a lower bound far below 0: part 2 fails
    base = [84.0, 85.0, 83.0, 86.0, 84.0]
    cov = {
        "rgvfm": base,
        "rfm": [66, 68, 67, 65, 66],
        "cfm": [60] * 5,
        "vfm": [b - d for b, d in zip(base, [5, -4, 6, -3, 1], strict=True)],
    }
    v = verdict(Measurements(cov), RGVFMConfig())
    held, evidence, measurement = v.status == "held", v.evidence, v.measurement
    assert evidence["part1_rgvfm_vs_rfm"]["passes"] and not evidence["part2_rgvfm_vs_best_euclidean"]["passes"]
    assert not held and "does not hold" in measurement
    # CFM ahead on average makes CFM the Euclidean baseline of part 2
    cfm_ahead = {**cov, "cfm": [90] * 5}
    assert (
        verdict(Measurements(cfm_ahead), RGVFMConfig()).evidence["part2_rgvfm_vs_best_euclidean"]["baseline"] == "cfm"
    )
    # zero spread: the lower bound is the mean; a gap of 0.9 in every seed is below min_margin = 1
    tied = {"rgvfm": [80.9] * 5, "rfm": [60.0] * 5, "cfm": [60.0] * 5, "vfm": [80.0] * 5}
    part2 = verdict(Measurements(tied), RGVFMConfig()).evidence["part2_rgvfm_vs_best_euclidean"]
    assert math.isclose(part2["lower"], 0.9, rel_tol=1e-9) and not part2["passes"]
    # one seed: no interval, nothing passes
    one = {k: v[:1] for k, v in cov.items()}
    part1 = verdict(Measurements(one), RGVFMConfig(seeds=1)).evidence["part1_rgvfm_vs_rfm"]
    assert part1["ci95_low"] is None and not part1["passes"]


# --- units: one per (model, seed, checkpoint); a killed run loses at most one segment ---------------------------------


def tiny_config(**changes) -> RGVFMConfig:
    base = {
        "models": ("rgvfm",), "seeds": 1, "steps": 8, "batch_size": 32, "n_train": 200, "n_eval": 60, "n_metric": 60,
        "curve_points": 2, "curve_eval": 50, "sample_steps": 4, "c2st_k": 3, "compile_network": False,
    }  # fmt: skip
    return RGVFMConfig(**{**base, **changes})


def test_a_run_killed_after_one_checkpoint_resumes_to_the_same_record(tmp_path):
    config = tiny_config()
    whole = run(config, RunContext(out_dir=tmp_path / "whole", seed=0, quiet=True))
    ctx = RunContext(out_dir=tmp_path / "killed", seed=0, quiet=True)
    run(config, ctx)
    assert ctx.units == ["sphere_checkerboard-seed0-rgvfm-step4", "sphere_checkerboard-seed0-rgvfm-step8"]
    (tmp_path / "killed" / UNITS_DIR / "sphere_checkerboard-seed0-rgvfm-step8.pkl").unlink()  # killed in segment 2
    resumed_ctx = RunContext(out_dir=tmp_path / "killed", seed=0, quiet=True)
    resumed = run(config, resumed_ctx)
    assert resumed_ctx.resumed_units == ["sphere_checkerboard-seed0-rgvfm-step4"]
    assert resumed.metrics == whole.metrics
    curve = whole.metrics["results"]["sphere_checkerboard"]["rgvfm"]["coverage_curve"]
    assert curve["steps"] == [4, 8] and len(curve["per_seed"][0]) == 2
    shutil.rmtree(tmp_path / "whole")


def test_ema_option_changes_the_evaluated_weights(tmp_path):
    plain = run(tiny_config(), RunContext(out_dir=tmp_path / "a", seed=0, quiet=True))
    ema = run(tiny_config(ema_decay=0.9), RunContext(out_dir=tmp_path / "b", seed=0, quiet=True))
    a = plain.metrics["results"]["sphere_checkerboard"]["rgvfm"]
    b = ema.metrics["results"]["sphere_checkerboard"]["rgvfm"]
    assert a["train_loss"] == b["train_loss"]  # the same training trajectory
    assert a["endpoint_d2"] != b["endpoint_d2"]  # evaluated with other weights
    assert not ema.evidence["evaluated"] and not plain.evidence["evaluated"]


@pytest.mark.parametrize("ema_decay", [0.0, 0.9])
def test_evaluating_checkpoints_does_not_change_the_training(tmp_path, ema_decay):
    """Two checkpoints (evaluation after step 4, state handed to the next unit) train exactly as one does."""
    one = run(tiny_config(curve_points=1, ema_decay=ema_decay), RunContext(out_dir=tmp_path / "1", seed=0, quiet=True))
    two = run(tiny_config(curve_points=2, ema_decay=ema_decay), RunContext(out_dir=tmp_path / "2", seed=0, quiet=True))
    a = one.metrics["results"]["sphere_checkerboard"]["rgvfm"]
    b = two.metrics["results"]["sphere_checkerboard"]["rgvfm"]
    for name in ("train_loss", "coverage", "endpoint_d2", "mmd2", "best_step"):
        assert a[name] == b[name], name
    assert a["loss_trace_seed0"] == b["loss_trace_seed0"]
