"""Reproduction of RG-VFM (ICLR 2026, arXiv 2502.12981): five flow models on the S² and H² checkerboards.

What ``iclr26 run rgvfm`` does (defaults: the official protocol of ``scripts/main_sphere.py``):

1. for each benchmark (the checkerboard wrapped onto S², optionally onto H², mixtures of vMF / wrapped normals and
   the user's own S² data) and each seed, draws a training set and a held-out set;
2. trains the models (default the four arms of the verdict, CFM, VFM, RFM, RG-VFM-M; all five of the paper's table
   at the gpu scale; :mod:`.flows`) with the same network initialisation, minibatch stream, step count, batch size
   (1024) and learning rate (1e-3): only the objective differs; the evaluated weights are those of the epoch with the
   lowest mean training loss (official; ``checkpoint=last`` for the final ones), optionally an EMA of the weights;
3. at ``curve_points`` equal step intervals, samples the model the protocol would return at that step
   (``curve_eval`` points) for the convergence curve; after the last, samples ``n_eval`` = 10,000 points with the
   same integrator (100 geodesic-Euler steps to t = 0.99, endpoint velocities with 1/(1 - t) clipped at 10 on S² /
   5 on H² / 20 in R³, as the official scripts do) and measures checkerboard coverage (the paper's metric; extrinsic
   samples raw, through the official unwrap, and also projected), the total variation of the mass per black cell,
   geodesic MMD² and k-NN C2ST (on ``n_metric`` points), and for extrinsic models the distance of the raw samples
   to M; the package's old choices (last weights, unclipped velocity) are measured beside them;
4. for the two intrinsic models, measures on held-out (x_t, x1) pairs how much of the tangent-space
   error |log μ - log x1|² is curvature (the Jacobi-field gap between the RFM and RG-VFM objectives);
5. verdict (sphere checkerboard), two parts reported separately: RG-VFM-M beats RFM, and RG-VFM-M beats the better
   Euclidean baseline (CFM or VFM, the higher mean); each part a paired Student-t test over the seeds, passing when
   the mean gap exceeds ``min_margin`` and its one-sided ``confidence`` lower bound exceeds 0.

Units of work (``iclr26 run rgvfm --resume RUN_DIR``): one per (benchmark, seed, model, checkpoint), keyed
``<benchmark>-seed<s>-<model>-step<k>``: the training from the previous checkpoint to step k, whose result holds the
trainer's full state (weights, Adam moments, EMA, best snapshot, generator state, losses) for the next unit, and the
coverage at k; the last also evaluates the final model. A killed run loses at most one segment. Drawing the data is
cheap and seeded, so it is redone outside the units. Training wall time goes to the record's ``timings``, never into
the verdict, which rests on the seeded coverages only.

Data parallel under torchrun: :class:`~iclr26.rgvfm.training.FlowTrainer` trains with DistributedDataParallel
on each rank's shard of the global batch (``batch_size``); every rank then evaluates the same weights alike.

Device: the data are drawn on the CPU (the same points on every device) and the initial weights are made
there, then both move to ``config.device``; the training and sampling draws (minibatches, x0, t, input
noise, the C2ST split) come from generators created on that device from the same seeds, so on the CPU
nothing differs from a run without the option, and on CUDA those draws differ (another generator).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np
import torch
from matplotlib.patches import Circle

from iclr26.common.config import ConfigError, ExperimentConfig, require, threshold
from iclr26.common.device import resolve_device
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.stats import paired_t
from iclr26.rgvfm.benchmarks import (
    NUM_SQUARES,
    checkerboard,
    load_sphere_points,
    vmf_mixture,
    wrapped_normal_mixture,
)
from iclr26.rgvfm.flows import FLOW_SPECS, EndpointFlow, FlowMatcher, build_flow, official_time_clip
from iclr26.rgvfm.manifolds import Lorentz, Manifold, Sphere
from iclr26.rgvfm.metrics import cell_mass_tv, checkerboard_coverage, geodesic_mmd2, knn_c2st
from iclr26.rgvfm.network import TimeMLP
from iclr26.rgvfm.objectives import curvature_gap
from iclr26.rgvfm.training import FlowTrainer, TrainState, make_prior, summarise_losses

BENCHMARKS = ("sphere_checkerboard", "hyperboloid_checkerboard", "sphere_vmf_mixture", "hyperboloid_wrapped_mixture")
FILE_BENCHMARK = "sphere_file"
OFFICIAL_SAMPLES = 30_000 * 1024
"""Training samples seen per model in the official S² runs (3000 epochs of 10,000 points, batch 1024)."""
HELD_OUT_FRACTION = 0.2
"""Share of the points of a ``data`` file held out for the metrics (not in the paper; the usual 80/20 split)."""
STEPS_CPU = 3000
"""Steps per model at the cpu scale: 4 arms x 5 seeds at batch 1024 fit in about 30 minutes of one thread (README,
"Runtime"; measured per arm over 300 steps and extrapolated)."""
PAPER_SPHERE_COVERAGE = {"cfm": 64.97, "vfm": 79.08, "rgvfm_ambient": 83.10, "rfm": 66.83, "rgvfm": 84.21}
"""The paper's S² checkerboard coverage in % (from the notes' table; the notes tag it [unverified])."""


@dataclass(frozen=True)
class RGVFMConfig(ExperimentConfig):
    """Settings of the RG-VFM reproduction; defaults are the ``cpu`` scale."""

    benchmarks: tuple[str, ...] = field(
        default=("sphere_checkerboard",),
        metadata={
            "help": f"synthetic benchmarks, any of {', '.join(BENCHMARKS)} (the paper's synthetic suite is "
            "the S² and H² checkerboards; the verdict is on S²; cpu runs S² only, to afford 5 seeds of the four "
            "arms; the mixtures are the issue's addition)"
        },
    )
    models: tuple[str, ...] = field(
        default=("cfm", "vfm", "rfm", "rgvfm"),
        metadata={
            "help": "models to train, any of cfm, vfm, rgvfm_ambient, rfm, rgvfm (the paper's five; cpu trains the "
            "four arms of the verdict, gpu all five)"
        },
    )
    seeds: int = field(
        default=5, metadata={"help": "seeds per model (not in the paper; at least 5 for the paired verdict)"}
    )
    steps: int = field(
        default=STEPS_CPU,
        metadata={
            "help": "optimiser steps per model, the same for every arm (official: 3000 epochs x 10 batches = 30k; "
            "cpu: the most that 4 arms x 5 seeds fit in 30 minutes of one thread, measured)"
        },
    )
    batch_size: int = field(
        default=1024, metadata={"help": "minibatch size (official 1024 on S², 2048 on H²; package's old 256)"}
    )
    lr: float = field(default=1e-3, metadata={"help": "Adam learning rate (official 1e-3; package's old 3e-3)"})
    checkpoint: Literal["best_loss", "last"] = field(
        default="best_loss",
        metadata={
            "help": "weights evaluated: best_loss = those of the epoch with the lowest mean training loss (official "
            "train_flow); last = the final weights (package's old protocol)"
        },
    )
    epoch_steps: int = field(
        default=0,
        metadata={"help": "steps per epoch of the best_loss rule; 0 = ceil(n_train / batch_size) (official loader)"},
    )
    velocity_clip: Literal["official", "none"] = field(
        default="official",
        metadata={
            "help": "sampling velocity of endpoint models: official = 1/(1-t) clipped at 10 (S²) / 5 (H²) "
            "intrinsic and 20 extrinsic (official VelocityInference*); none = unclipped (package's old protocol)"
        },
    )
    coverage_samples: Literal["raw", "projected"] = field(
        default="raw",
        metadata={
            "help": "extrinsic samples for coverage: raw = as generated, through the official unwrap (official "
            "compute_checkerboard_coverage); projected = onto M first (package's old protocol); both are recorded"
        },
    )
    ema_decay: float = field(
        default=0.0,
        metadata={
            "help": "decay of an EMA of the weights, evaluated in their place; 0 = off (not in the official code)"
        },
    )
    fused_adam: bool = field(
        default=True,
        metadata={
            "help": "torch.optim.Adam(fused=True): the same weights to float32 rounding, 1.2x faster per step "
            "(benchmarks/rgvfm_step.py)"
        },
    )
    hidden_dim: int = field(default=128, metadata={"help": "MLP width (official hidden_dim 128)"})
    n_train: int = field(default=10_000, metadata={"help": "training points per benchmark (official 10,000)"})
    n_eval: int = field(
        default=10_000,
        metadata={"help": "generated and held-out points for coverage (official: 10,000 samples from p0)"},
    )
    n_metric: int = field(
        default=2000,
        metadata={"help": "points of the n_eval for MMD² and k-NN C2ST (secondary metrics; O(n²) distances, so fewer)"},
    )
    curve_points: int = field(
        default=4,
        metadata={
            "help": "checkpoints of the convergence curve, at equal step intervals (the last is the final model); "
            "each is a resumable unit"
        },
    )
    curve_eval: int = field(
        default=2000,
        metadata={
            "help": "samples for the coverage at intermediate checkpoints and for the alternative-protocol "
            "coverages (binomial s.e. about 0.9 points)"
        },
    )
    noise_scale: float = field(
        default=0.1, metadata={"help": "sigma of the input noise on x_t (official noise_scale 0.1)"}
    )
    prior_scale: float = field(
        default=1.0, metadata={"help": "std of the (wrapped) normal source (official: standard normal)"}
    )
    sphere_prior: Literal["wrapped_normal", "uniform"] = field(
        default="wrapped_normal",
        metadata={"help": "source of intrinsic models on S² (official default gaussian = wrapped normal)"},
    )
    sample_steps: int = field(
        default=100, metadata={"help": "integrator steps for sampling (official: linspace(0, 0.99, 101))"}
    )
    t_end: float = field(default=0.99, metadata={"help": "final time of sampling (official 0.99; must be < 1)"})
    integrator: Literal["euler", "rk4"] = field(
        default="euler", metadata={"help": "euler = geodesic Euler (official: Euler); rk4 = RK4 with re-projection"}
    )
    c2st_k: int = field(default=11, metadata={"help": "neighbours of the k-NN C2ST (not in the paper; odd)"})
    min_margin: float = field(
        default=1.0,
        metadata={
            "help": "smallest mean coverage gap in percentage points that counts as 'better' (not in the paper; "
            "about twice the binomial standard error of one coverage on 10,000 samples, sqrt(0.8 x 0.2 / 10^4) = "
            "0.4 points)"
        },
    )
    confidence: float = field(
        default=0.95,
        metadata={
            "help": "one-sided confidence of the paired Student-t lower bound that must exceed 0 (not in the paper; "
            "the conventional 95 %, fixed before the first run)"
        },
    )
    device: str = field(
        default="cpu",
        metadata={
            "help": "torch device of training, sampling and metrics: cpu, cuda, cuda:N or auto (gpu scale: cuda)"
        },
    )
    data: Path | None = field(
        default=None,
        metadata={
            "help": "your own S² data: .npy, or text (.csv/.txt, comma or space separated, # comments) holding "
            "(N,3) unit vectors (|x| within 1e-3 of 1) or (N,2) latitude/longitude in degrees; adds the benchmark "
            "sphere_file, 80/20 train/held-out split, at least max(20, 5 (c2st_k + 1)) points; read and checked "
            "when the config is built"
        },
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "benchmarks": ("sphere_checkerboard", "hyperboloid_checkerboard"),
            "models": tuple(FLOW_SPECS),
            "seeds": 1,
            "steps": 24,
            "batch_size": 64,
            "n_train": 500,
            "n_eval": 200,
            "n_metric": 200,
            "curve_points": 2,
            "curve_eval": 100,
            "sample_steps": 10,
        },
        "gpu": {
            "benchmarks": BENCHMARKS,
            "models": tuple(FLOW_SPECS),
            "steps": 30_000,
            "device": "cuda",
        },
    }

    PACKAGE_PROTOCOL: ClassVar[dict[str, Any]] = {
        "steps": 5000,
        "batch_size": 256,
        "lr": 3e-3,
        "checkpoint": "last",
        "velocity_clip": "none",
        "coverage_samples": "projected",
        "n_eval": 2000,
    }
    """The package's earlier protocol (before issue 17), as ``--set`` overrides of the defaults."""

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [b for b in self.benchmarks if b not in BENCHMARKS]
        require(not unknown, "benchmarks", f"unknown {unknown}; choose from {', '.join(BENCHMARKS)}")
        require(len(set(self.benchmarks)) == len(self.benchmarks), "benchmarks", "must not repeat a name")
        require(bool(self.benchmarks) or self.data is not None, "benchmarks", "is empty and no data file is given")
        bad = [m for m in self.models if m not in FLOW_SPECS]
        require(not bad and bool(self.models), "models", f"unknown {bad}; choose from {', '.join(FLOW_SPECS)}")
        require(len(set(self.models)) == len(self.models), "models", "must not repeat a name")
        require(self.seeds >= 1, "seeds", f"must be >= 1, got {self.seeds}")
        require(self.steps >= 1, "steps", f"must be >= 1, got {self.steps}")
        require(self.batch_size >= 2, "batch_size", f"must be >= 2, got {self.batch_size}")
        require(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        require(self.hidden_dim >= 1, "hidden_dim", f"must be >= 1, got {self.hidden_dim}")
        require(self.n_train >= 2, "n_train", f"must be >= 2, got {self.n_train}")
        require(self.n_eval >= 2 * self.c2st_k, "n_eval", f"must be >= 2 * c2st_k = {2 * self.c2st_k}")
        require(
            self.checkpoint in ("best_loss", "last"), "checkpoint", f"must be best_loss or last, got {self.checkpoint}"
        )
        require(
            self.velocity_clip in ("official", "none"),
            "velocity_clip",
            f"must be official or none, got {self.velocity_clip}",
        )
        require(
            self.coverage_samples in ("raw", "projected"),
            "coverage_samples",
            f"must be raw or projected, got {self.coverage_samples}",
        )
        require(self.noise_scale >= 0, "noise_scale", f"must be >= 0, got {self.noise_scale}")
        require(self.prior_scale > 0, "prior_scale", f"must be positive, got {self.prior_scale}")
        require(self.sample_steps >= 1, "sample_steps", f"must be >= 1, got {self.sample_steps}")
        require(0 < self.t_end < 1, "t_end", f"must lie in (0, 1) (endpoint velocities diverge at 1), got {self.t_end}")
        require(
            self.c2st_k >= 1 and self.c2st_k % 2 == 1, "c2st_k", f"must be a positive odd integer, got {self.c2st_k}"
        )
        require(self.min_margin >= 0, "min_margin", f"must be >= 0, got {self.min_margin}")
        require(0.5 < self.confidence < 1, "confidence", f"must lie in (0.5, 1), got {self.confidence}")
        require(
            self.epoch_steps >= 0, "epoch_steps", f"must be >= 0 (0 = one pass over n_train), got {self.epoch_steps}"
        )
        require(0 <= self.ema_decay < 1, "ema_decay", f"must lie in [0, 1) (0 = off), got {self.ema_decay}")
        require(
            1 <= self.curve_points <= self.steps,
            "curve_points",
            f"must lie in [1, steps = {self.steps}], got {self.curve_points}",
        )
        require(self.curve_eval >= 2, "curve_eval", f"must be >= 2, got {self.curve_eval}")
        require(
            2 * self.c2st_k <= self.n_metric <= self.n_eval,
            "n_metric",
            f"must lie in [2 * c2st_k = {2 * self.c2st_k}, n_eval = {self.n_eval}], got {self.n_metric}",
        )
        if self.data is not None:
            n = len(read_data(self.data))
            need = min_data_points(self.c2st_k)
            require(
                n >= need,
                "data",
                f"{self.data} holds {n} points; the {1 - HELD_OUT_FRACTION:.0%}/{HELD_OUT_FRACTION:.0%} split needs "
                f"at least {need} (max(20, 5 (c2st_k + 1)), so that the held-out part exceeds c2st_k = "
                f"{self.c2st_k}): add points or lower c2st_k",
            )


def min_data_points(c2st_k: int) -> int:
    """Fewest points a ``data`` file may hold: 20, and enough that the held-out 20 % exceeds ``c2st_k`` (the k-NN
    C2ST pools the held-out points with as many samples and trains on half of them)."""
    return max(20, math.ceil((c2st_k + 1) / HELD_OUT_FRACTION))


def read_data(path: Path) -> torch.Tensor:
    """The points of the ``data`` file, (N, 3) on S².

    Raises:
        ConfigError: naming the field ``data`` and the fix when the file cannot be used (see
            :func:`~iclr26.rgvfm.benchmarks.load_sphere_points`).
    """
    try:
        return load_sphere_points(path)
    except ValueError as err:
        raise ConfigError(f"config field 'data': {err}") from None


def manifold_of(benchmark: str) -> Manifold:
    """S² for the sphere benchmarks, H² (Lorentz) for the hyperboloid ones."""
    return Sphere(2) if benchmark.startswith("sphere") else Lorentz(2)


def benchmark_data(benchmark: str, n: int, generator: torch.Generator) -> torch.Tensor:
    """n fresh samples of a synthetic benchmark, (n, 3)."""
    manifold = manifold_of(benchmark)
    if benchmark.endswith("checkerboard"):
        return checkerboard(manifold, n, generator=generator)
    if benchmark == "sphere_vmf_mixture":
        return vmf_mixture(manifold, n, generator=generator)
    return wrapped_normal_mixture(manifold, n, generator=generator)


@dataclass(frozen=True)
class ModelRun:
    """One trained and evaluated model (one benchmark, one seed).

    Attributes:
        samples: generated points projected onto M, (n_eval, 3), on the CPU (for the plots).
        metrics: the seeded measurements of this run (no timings).
        train_seconds: wall time of the training loop (a timing: kept out of ``metrics``).
    """

    samples: torch.Tensor
    metrics: dict[str, Any]
    train_seconds: float


@dataclass(frozen=True)
class Segment:
    """The result of one unit: training up to checkpoint ``step`` and the coverage of the protocol's model there.

    Attributes:
        step: optimiser steps taken so far.
        coverage: coverage (%) of the weights the protocol returns at ``step``, on ``curve_eval`` samples
            (checkerboards; NaN otherwise).
        state: the trainer's full state, for the next unit (None after the last checkpoint).
        final: the full evaluation after the last checkpoint (None before).
        seconds: wall time of this unit's training steps (a timing).
    """

    step: int
    coverage: float
    state: TrainState | None
    final: ModelRun | None
    seconds: float


def checkpoint_steps(config: RGVFMConfig) -> list[int]:
    """The steps of the convergence checkpoints: ``curve_points`` equal intervals ending at ``steps``."""
    return [round(config.steps * (i + 1) / config.curve_points) for i in range(config.curve_points)]


def make_flow(config: RGVFMConfig, benchmark: str, key: str, seed: int, device: torch.device) -> tuple:
    """(network, flow, prior) of model ``key``, with the seed's initial weights (drawn on the CPU, the same for every
    model of the seed)."""
    manifold = manifold_of(benchmark)
    spec = FLOW_SPECS[key]
    torch.manual_seed(derive_seed(seed, "init"))  # identical initial weights for every model of this seed
    network = TimeMLP(manifold.ambient_dim, hidden_dim=config.hidden_dim).to(device)
    flow = build_flow(
        key,
        manifold,
        network,
        noise_scale=config.noise_scale,
        time_clip="official" if config.velocity_clip == "official" else None,
    )
    prior = make_prior(
        manifold,
        intrinsic=spec.intrinsic,
        kind=config.sphere_prior if isinstance(manifold, Sphere) and spec.intrinsic else "wrapped_normal",
        scale=config.prior_scale,
    )
    return network, flow, prior


@contextlib.contextmanager
def weights(network: torch.nn.Module, values: list[torch.Tensor]):
    """Temporarily load ``values`` into the network's parameters (restored on exit)."""
    params = list(network.parameters())
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        for p, w in zip(params, values, strict=True):
            p.copy_(w)
    try:
        yield
    finally:
        with torch.no_grad():
            for p, w in zip(params, saved, strict=True):
                p.copy_(w)


def sample_coverage(
    flow: FlowMatcher, manifold: Manifold, prior, n: int, gen: torch.Generator, config: RGVFMConfig, *, raw: bool
) -> float:
    """Coverage (%) of n samples of ``flow`` from a fresh draw of p0 (raw or projected extrinsic samples)."""
    x = flow.sample(prior(n, gen), steps=config.sample_steps, t_end=config.t_end, method=config.integrator)
    return coverage_pct(manifold, x, raw=raw)


def coverage_pct(manifold: Manifold, x: torch.Tensor, *, raw: bool) -> float:
    """Coverage (%) of samples x: through the official unwrap of the raw points, or of their projection onto M."""
    if not bool(torch.isfinite(x).all()):
        return math.nan
    return 100 * checkerboard_coverage(manifold, x if raw else manifold.proj(x), raw=raw).coverage


def train_segment(
    config: RGVFMConfig,
    benchmark: str,
    key: str,
    train: torch.Tensor,
    held_out: torch.Tensor,
    seed: int,
    index: int,
    previous: TrainState | None,
) -> Segment:
    """Train model ``key`` from ``previous`` (None: from the seed's initialisation) to checkpoint ``index`` and
    evaluate it there (module steps 2-4; the full evaluation after the last checkpoint).

    Everything runs on the device of ``train`` and ``held_out``; the initial weights are drawn on the CPU.
    """
    device = train.device
    manifold = manifold_of(benchmark)
    network, flow, prior = make_flow(config, benchmark, key, seed, device)
    trainer = FlowTrainer(
        flow, network.parameters(), train, prior, batch_size=config.batch_size, lr=config.lr,
        generator=torch_generator(derive_seed(seed, "batches"), device), checkpoint=config.checkpoint,
        epoch_steps=config.epoch_steps or None, ema_decay=config.ema_decay, fused=config.fused_adam,
    )  # fmt: skip
    if previous is not None:
        trainer.load(previous)
    steps = checkpoint_steps(config)
    trainer.run(steps[index] - trainer.step)
    checker = benchmark.endswith("checkerboard")
    raw = config.coverage_samples == "raw" and not FLOW_SPECS[key].intrinsic
    curve_gen = torch_generator(derive_seed(seed, "curve"), device)  # the same x0 at every checkpoint
    with weights(network, trainer.selected()):  # the protocol's model at this checkpoint; training state untouched
        curve = (
            sample_coverage(flow, manifold, prior, config.curve_eval, curve_gen, config, raw=raw)
            if checker
            else math.nan
        )
        final = evaluate(config, benchmark, key, flow, prior, held_out, seed) if index == len(steps) - 1 else None
    if final is None:
        return Segment(trainer.step, curve, trainer.state(), None, trainer.seconds)
    alt: dict[str, float] = {}
    if checker:  # the package's old protocol choices, on the curve's sample size (recorded beside the verdict)
        if config.checkpoint == "best_loss":
            with weights(network, trainer.tracked()):
                alt["last_weights"] = sample_coverage(
                    flow, manifold, prior, config.curve_eval, torch_generator(derive_seed(seed, "alt"), device),
                    config, raw=raw,
                )  # fmt: skip
        if isinstance(flow, EndpointFlow):  # the other clip setting, same weights and x0
            flow.time_clip = None if flow.time_clip is not None else official_time_clip(flow.path)
            with weights(network, trainer.selected()):
                alt["unclipped" if flow.time_clip is None else "clipped"] = sample_coverage(
                    flow, manifold, prior, config.curve_eval, torch_generator(derive_seed(seed, "alt"), device),
                    config, raw=raw,
                )  # fmt: skip
    metrics = {
        **final.metrics,
        "best_step": trainer.best_step if trainer.best is not None else trainer.step,
        "alt_coverage": alt,
    }
    final_loss, trace = summarise_losses(trainer.losses_tensor())
    metrics.update(train_loss=final_loss, loss_trace=trace)
    return Segment(trainer.step, curve, None, ModelRun(final.samples, metrics, trainer.seconds), trainer.seconds)


def evaluate(
    config: RGVFMConfig,
    benchmark: str,
    key: str,
    flow: FlowMatcher,
    prior,
    held_out: torch.Tensor,
    seed: int,
) -> ModelRun:
    """The full evaluation of the trained model on ``n_eval`` samples (module step 3-4)."""
    manifold = manifold_of(benchmark)
    spec = FLOW_SPECS[key]
    device = held_out.device
    eval_gen = torch_generator(derive_seed(seed, "sample"), device)
    x0 = prior(held_out.shape[0], eval_gen)
    raw = flow.sample(x0, steps=config.sample_steps, t_end=config.t_end, method=config.integrator)
    if not bool(torch.isfinite(raw).all()):
        raise RuntimeError(f"{key} on {benchmark}: non-finite samples")
    samples = manifold.proj(raw)
    m = min(config.n_metric, held_out.shape[0])
    metrics: dict[str, Any] = {
        "dist_to_manifold": float(manifold.distance_to_manifold(raw).mean()),
        "mmd2": geodesic_mmd2(manifold, samples[:m], held_out[:m]),
        "c2st": knn_c2st(manifold, held_out[:m], samples[:m], k=config.c2st_k, generator=eval_gen),
    }
    if benchmark.endswith("checkerboard"):
        on_raw = config.coverage_samples == "raw" and not spec.intrinsic
        cov = checkerboard_coverage(manifold, raw if on_raw else samples, raw=on_raw)
        metrics.update(
            coverage=100 * cov.coverage,
            coverage_raw=coverage_pct(manifold, raw, raw=True) if not spec.intrinsic else 100 * cov.coverage,
            coverage_projected=coverage_pct(manifold, raw, raw=False),
            modes_covered=cov.modes_covered,
            cell_mass_tv=cell_mass_tv(cov, checkerboard_coverage(manifold, held_out)),
        )
    if spec.intrinsic:
        metrics.update(jacobi_gap(flow, manifold, prior(held_out.shape[0], eval_gen), held_out, eval_gen))
    return ModelRun(samples=samples.cpu(), metrics=metrics, train_seconds=0.0)


def jacobi_gap(
    flow: FlowMatcher, manifold: Manifold, x0: torch.Tensor, x1: torch.Tensor, generator: torch.Generator
) -> dict[str, float]:
    """Mean curvature gap |log μ - log x1|² - d(μ, x1)² of a trained intrinsic model on held-out pairs.

    μ is the model's (predicted or implied) endpoint at x_t; the gap is what the RFM objective (on the
    endpoint scale) measures beyond the RG-VFM objective. Returned with the mean d(μ, x1)².
    """
    t = torch.rand(x0.shape[0], 1, generator=generator, device=x0.device)
    with torch.no_grad():
        x_t = manifold.geodesic(x0, x1, t)
        mu = flow.endpoint(x_t, t)
        gap = curvature_gap(manifold, x_t, manifold.log(x_t, mu), manifold.log(x_t, x1))
        d2 = manifold.dist(mu, x1).pow(2)
    return {"jacobi_gap": float(gap.mean()), "endpoint_d2": float(d2.mean())}


def _stats(values: list[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "per_seed": values,
    }


def summarise(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and standard deviation across seeds of every scalar metric (and of each entry of a dict of scalars, such
    as ``alt_coverage``), plus the per-seed values."""
    out: dict[str, Any] = {}
    for name, value in per_seed[0].items():
        if isinstance(value, list):
            continue
        if isinstance(value, dict):
            out[name] = {k: _stats([float(m[name][k]) for m in per_seed]) for k in value}
            continue
        out[name] = _stats([float(m[name]) for m in per_seed])
    return out


@dataclass(frozen=True)
class PairedPart:
    """One part of the verdict: the seed-paired coverage gap of RG-VFM-M over one baseline.

    Attributes:
        baseline: the baseline arm.
        diffs: per-seed gaps (percentage points).
        mean: their mean (the effect).
        ci95: two-sided 95 % Student-t interval of the mean (None with one seed).
        lower: one-sided ``confidence`` lower bound (None with one seed).
        p_greater: one-sided p-value of "mean gap > 0".
        wins: seeds where RG-VFM-M is ahead.
        passes: mean > min_margin and lower > 0.
    """

    baseline: str
    diffs: list[float]
    mean: float
    ci95: tuple[float, float] | None
    lower: float | None
    p_greater: float
    wins: int
    passes: bool


def paired_part(
    method: list[float], baseline: list[float], name: str, *, margin: float, confidence: float
) -> PairedPart:
    """The paired Student-t test of ``method - baseline`` over seeds (:func:`iclr26.common.stats.paired_t`): passes when
    the mean gap exceeds ``margin`` and its one-sided ``confidence`` lower bound exceeds 0."""
    diffs = [x - y for x, y in zip(method, baseline, strict=True)]
    t = paired_t(diffs, level=0.95, confidence=confidence, moments="exact")
    if t.n < 2:
        return PairedPart(name, diffs, t.mean, None, None, 1.0, int(t.wins), False)
    return PairedPart(
        name,
        diffs,
        t.mean,
        (t.ci_low, t.ci_high),
        t.lower,
        t.p_greater,
        int(t.wins),
        bool(t.mean > margin and t.lower > 0),
    )


class Verdict(NamedTuple):
    """The claim check.

    Attributes:
        held: whether the claim held.
        evidence: the numbers it rests on.
        measurement: one line for the report.
    """

    held: bool
    evidence: dict[str, Any]
    measurement: str


def _part_text(label: str, part: PairedPart) -> str:
    ci = "" if part.ci95 is None else f" [95% CI {part.ci95[0]:+.1f}, {part.ci95[1]:+.1f}]"
    outcome = "holds" if part.passes else "does not hold"
    return f"RG-VFM-M - {label} = {part.mean:+.1f}{ci}, ahead in {part.wins}/{len(part.diffs)} seeds: {outcome}"


def verdict(config: RGVFMConfig, results: dict[str, dict[str, Any]]) -> Verdict:
    """Claim check on the sphere checkerboard (module step 5), in two parts reported separately.

    Part 1: RG-VFM-M beats RFM. Part 2: RG-VFM-M beats the better Euclidean baseline (the one of CFM and VFM with the
    higher mean coverage, paired seed by seed with that arm). Each part is a paired Student-t test over the seeds
    (:func:`paired_part`); the claim holds when both pass.

    Args:
        config: the run's config (``min_margin``, ``confidence``).
        results: per benchmark and model, the metrics as summarised by :func:`summarise`.

    Returns:
        :class:`Verdict`; not held (and ``evidence["evaluated"]`` False) when the S² checkerboard or one of
        RG-VFM-M, RFM, CFM, VFM was not run.
    """
    needed = {"rgvfm", "rfm", "cfm", "vfm"}
    sphere = results.get("sphere_checkerboard")
    if sphere is None or not needed <= set(sphere):
        return Verdict(
            False, {"evaluated": False}, "claim not evaluated: needs sphere_checkerboard and rgvfm, rfm, cfm, vfm"
        )
    cov = {k: v["coverage"]["per_seed"] for k, v in sphere.items()}
    means = {k: sphere[k]["coverage"]["mean"] for k in sphere}
    best_euclid = "vfm" if means["vfm"] >= means["cfm"] else "cfm"
    kw = {"margin": config.min_margin, "confidence": config.confidence}
    vs_rfm = paired_part(cov["rgvfm"], cov["rfm"], "rfm", **kw)
    vs_euclid = paired_part(cov["rgvfm"], cov[best_euclid], best_euclid, **kw)
    held = vs_rfm.passes and vs_euclid.passes
    secondary: dict[str, Any] = {
        "vs_other_euclidean": dataclasses.asdict(
            paired_part(cov["rgvfm"], cov["cfm" if best_euclid == "vfm" else "vfm"], "", **kw)
        )
        | {"baseline": "cfm" if best_euclid == "vfm" else "vfm"},
        "dist_to_manifold_extrinsic": {
            k: sphere[k]["dist_to_manifold"]["mean"] for k in sphere if not FLOW_SPECS[k].intrinsic
        },
        "coverage_projected_mean_pct": {k: sphere[k]["coverage_projected"]["mean"] for k in sphere},
        "alt_coverage_mean_pct": {k: {n: v["mean"] for n, v in sphere[k]["alt_coverage"].items()} for k in sphere},
    }
    if "rgvfm_ambient" in sphere:
        secondary["rgvfm_ambient_minus_vfm_pct"] = statistics.fmean(
            [a - b for a, b in zip(cov["rgvfm_ambient"], cov["vfm"], strict=True)]
        )
    if "hyperboloid_checkerboard" in results:
        secondary["h2_coverage_mean_pct"] = {
            k: v["coverage"]["mean"] for k, v in results["hyperboloid_checkerboard"].items()
        }
    evidence = {
        "evaluated": True,
        "coverage_mean_pct": means,
        "part1_rgvfm_vs_rfm": dataclasses.asdict(vs_rfm),
        "part2_rgvfm_vs_best_euclidean": dataclasses.asdict(vs_euclid),
        "paper_coverage_pct": PAPER_SPHERE_COVERAGE,
        "seeds": len(cov["rgvfm"]),
        "protocol": {
            name: getattr(config, name)
            for name in ("steps", "batch_size", "lr", "checkpoint", "velocity_clip", "coverage_samples", "ema_decay")
        },
        "secondary": secondary,
        "thresholds": {name: threshold(config, name) for name in ("min_margin", "confidence")},
    }
    order = ", ".join(f"{FLOW_SPECS[k].label.replace('^D', '3')} {means[k]:.1f}" for k in sphere)
    measurement = (
        f"S² checkerboard coverage % (mean of {len(cov['rgvfm'])} seeds, {config.steps} steps x {config.batch_size}): "
        f"{order}; part 1: {_part_text('RFM', vs_rfm)}; part 2: "
        f"{_part_text(FLOW_SPECS[best_euclid].label + ' (better Euclidean)', vs_euclid)}; paper 84.21 vs 66.83 RFM, "
        "79.08 VFM, 64.97 CFM"
    )
    return Verdict(held, evidence, measurement)


def _board_lines(manifold: Manifold) -> list[np.ndarray]:
    """The checkerboard's cell boundaries, mapped to the plot plane (chart for S², Poincaré disk for H²)."""
    s = torch.linspace(-1, 1, 100)
    lines = []
    for c in torch.linspace(-1, 1, NUM_SQUARES + 1):
        for pts in (torch.stack([s, c.expand(100)], -1), torch.stack([c.expand(100), s], -1)):
            lines.append(plane(manifold, manifold.from_chart(pts), checker=True))
    return lines


def plane(manifold: Manifold, x: torch.Tensor, *, checker: bool) -> np.ndarray:
    """2-D plot coordinates: S² checkerboard in the azimuthal chart, other S² data as (lon, lat) in degrees,
    H² in the Poincaré disk."""
    if isinstance(manifold, Lorentz):
        return Lorentz.to_poincare(x).numpy()
    if checker:
        return manifold.to_chart(x).numpy()
    lon = torch.rad2deg(torch.atan2(x[:, 1], x[:, 0]))
    lat = torch.rad2deg(torch.asin(x[:, 2].clamp(-1, 1)))
    return torch.stack([lon, lat], -1).numpy()


def plot_samples(ctx: RunContext, benchmark: str, held_out: torch.Tensor, samples: dict[str, torch.Tensor]) -> None:
    """Scatter of the held-out data and each model's samples (seed 0) for one benchmark."""
    manifold = manifold_of(benchmark)
    checker = benchmark.endswith("checkerboard")
    panels = {"data": held_out, **samples}
    fig, axes = figure(len(panels), width=3.0, height=3.0)
    axes = np.atleast_1d(axes).ravel()
    lines = _board_lines(manifold) if checker else []
    for ax, (name, x) in zip(axes, panels.items(), strict=True):
        xy = plane(manifold, x, checker=checker)
        for line in lines:
            ax.plot(line[:, 0], line[:, 1], color="0.6", lw=0.5)
        ax.scatter(xy[:, 0], xy[:, 1], s=0.5, alpha=0.5, color="C3" if name != "data" else "k")
        if isinstance(manifold, Lorentz):
            ax.add_patch(Circle((0, 0), 1, fill=False, lw=0.8))
            ax.set_xlim(-1.02, 1.02)
            ax.set_ylim(-1.02, 1.02)
        elif checker:
            ax.set_xlim(-1.6, 1.6)
            ax.set_ylim(-1.6, 1.6)
        else:  # longitude / latitude in degrees
            ax.set_xlim(-180, 180)
            ax.set_ylim(-90, 90)
        ax.set_aspect("equal" if checker or isinstance(manifold, Lorentz) else "auto")
        ax.set_title(name if name == "data" else FLOW_SPECS[name].label.replace("^D", "3"), fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"{benchmark} ({'Poincaré disk' if isinstance(manifold, Lorentz) else 'projected'})", fontsize=10)
    ctx.save_plot(fig, f"samples_{benchmark}.png")


def plot_coverage(ctx: RunContext, results: dict[str, dict[str, Any]]) -> None:
    """Coverage per model (mean ± std over seeds) on each checkerboard, with the paper's S² values."""
    boards = [b for b in results if b.endswith("checkerboard")]
    fig, ax = figure(width=6.0, height=3.4)
    keys = [k for k in FLOW_SPECS if any(k in results[b] for b in boards)]
    width = 0.8 / max(len(boards), 1)
    for i, board in enumerate(boards):
        xs = [j + (i - (len(boards) - 1) / 2) * width for j in range(len(keys))]
        means = [results[board][k]["coverage"]["mean"] if k in results[board] else np.nan for k in keys]
        stds = [results[board][k]["coverage"]["std"] if k in results[board] else 0.0 for k in keys]
        ax.bar(xs, means, width, yerr=stds, label=board.replace("_checkerboard", ""), capsize=2)
    ax.scatter(
        range(len(keys)),
        [PAPER_SPHERE_COVERAGE[k] for k in keys],
        marker="_",
        s=300,
        color="k",
        label="paper (sphere)",
        zorder=3,
    )
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([FLOW_SPECS[k].label.replace("^D", "3") for k in keys], fontsize=8)
    ax.set_ylabel("coverage (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, loc="lower right")
    ctx.save_plot(fig, "coverage.png")


def plot_convergence(ctx: RunContext, config: RGVFMConfig, curves: dict[str, dict[str, list[list[float]]]]) -> None:
    """Coverage of every arm against training steps (mean ± std over seeds) on each checkerboard, with the paper's S²
    values as dashes at the right edge."""
    boards = [b for b in curves if b.endswith("checkerboard")]
    if not boards:
        return
    fig, axes = figure(len(boards), width=4.2, height=3.4)
    axes = np.atleast_1d(axes).ravel()
    steps = checkpoint_steps(config)
    for ax, board in zip(axes, boards, strict=True):
        for i, (key, per_seed) in enumerate(curves[board].items()):
            values = np.array(per_seed)  # (seeds, checkpoints)
            mean, std = values.mean(0), values.std(0)
            label = FLOW_SPECS[key].label.replace("^D", "3")
            ax.plot(steps, mean, marker="o", ms=3, color=f"C{i}", label=label)
            ax.fill_between(steps, mean - std, mean + std, color=f"C{i}", alpha=0.15)
            if board == "sphere_checkerboard":
                ax.axhline(PAPER_SPHERE_COVERAGE[key], color=f"C{i}", ls="--", lw=0.7)
        ax.set_xlabel(f"training step (batch {config.batch_size})")
        ax.set_ylabel("coverage (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{board} (dashed: paper)" if board == "sphere_checkerboard" else board, fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    ctx.save_plot(fig, "convergence.png")


def run(config: RGVFMConfig, ctx: RunContext) -> Outcome:
    """Train and evaluate the models on every benchmark and seed; check the coverage claim.

    Units of work: one per (benchmark, seed, model, checkpoint), keyed ``<benchmark>-seed<s>-<model>-step<k>``: the
    training from the previous checkpoint (whose unit result holds the full trainer state) to step k and the coverage
    there; the last one also evaluates the final model. The data of a (benchmark, seed) are drawn (or split) outside
    the units, from their own seeds.
    """
    device = resolve_device(config.device)  # an unavailable device fails here, before any data or training
    jobs = list(config.benchmarks)
    file_points = None
    if config.data is not None:
        file_points = read_data(config.data)  # checked when the config was built
        jobs.append(FILE_BENCHMARK)
    results: dict[str, dict[str, Any]] = {}
    curves: dict[str, dict[str, list[list[float]]]] = {}
    train_seconds: dict[str, dict[str, list[float]]] = {}
    steps = checkpoint_steps(config)
    bar = ctx.progress(total=len(jobs) * config.seeds * len(config.models) * len(steps), desc="rgvfm train")
    for benchmark in jobs:
        per_model: dict[str, list[dict[str, Any]]] = {k: [] for k in config.models}
        curves[benchmark] = {k: [] for k in config.models}
        train_seconds[benchmark] = {k: [] for k in config.models}
        for s in range(config.seeds):
            seed = derive_seed(config.seed, benchmark, s)
            if file_points is not None and benchmark == FILE_BENCHMARK:
                perm = torch.randperm(file_points.shape[0], generator=torch_generator(seed))
                cut = int((1 - HELD_OUT_FRACTION) * len(perm))
                train, held_out = file_points[perm[:cut]], file_points[perm[cut:]]
            else:
                train = benchmark_data(benchmark, config.n_train, torch_generator(derive_seed(seed, "train")))
                held_out = benchmark_data(benchmark, config.n_eval, torch_generator(derive_seed(seed, "held_out")))
            samples = {}
            train_dev, held_out_dev = train.to(device), held_out.to(device)
            for key in config.models:
                state, curve, seconds = None, [], 0.0
                for index, step in enumerate(steps):
                    segment = ctx.unit(
                        f"{benchmark}-seed{s}-{key}-step{step}",
                        functools.partial(
                            train_segment, config, benchmark, key, train_dev, held_out_dev, seed, index, state
                        ),
                    )
                    state = segment.state
                    curve.append(segment.coverage)
                    seconds += segment.seconds
                    bar.update(1)
                model_run = segment.final
                assert model_run is not None  # the last checkpoint's unit evaluates the final model
                per_model[key].append(model_run.metrics)
                curves[benchmark][key].append(curve)
                train_seconds[benchmark][key].append(seconds)
                samples[key] = model_run.samples
                ctx.log(
                    f"{benchmark} seed {s} {key}: "
                    + ", ".join(f"{n}={v:.4g}" for n, v in model_run.metrics.items() if isinstance(v, int | float))
                )
            if s == 0:
                plot_samples(ctx, benchmark, held_out, samples)
        results[benchmark] = {k: summarise(v) for k, v in per_model.items()}
        for key, runs in per_model.items():
            results[benchmark][key]["loss_trace_seed0"] = runs[0]["loss_trace"]
            if benchmark.endswith("checkerboard"):
                results[benchmark][key]["coverage_curve"] = {"steps": steps, "per_seed": curves[benchmark][key]}
    bar.close()
    if any(b.endswith("checkerboard") for b in results):
        plot_coverage(ctx, results)
        plot_convergence(ctx, config, {b: c for b, c in curves.items() if b in results})
    check = verdict(config, results)
    notes = (
        f"Protocol: {config.steps} steps x batch {config.batch_size}, lr {config.lr:g}, checkpoint "
        f"{config.checkpoint}, velocity clip {config.velocity_clip}, coverage on {config.coverage_samples} extrinsic "
        "samples; training "
        f"compute per model is {config.steps * config.batch_size / OFFICIAL_SAMPLES:.3g} x the official (30k x 1024), "
        "the same for every arm. Coverage is the official precision-style metric (fraction of samples in the 8 black "
        "cells). Paper numbers are from the notes [unverified]."
    )
    return Outcome(
        metrics={"results": results, "paper_sphere_coverage_pct": PAPER_SPHERE_COVERAGE},
        claim_held=check.held,
        evidence=check.evidence,
        measurement=check.measurement,
        notes=notes,
        timings={
            "train_seconds": train_seconds,
            "train_seconds_total": sum(sum(v) for board in train_seconds.values() for v in board.values()),
        },
    )


EXPERIMENT = Experiment(config_cls=RGVFMConfig, run=run, data_parallel=True)
