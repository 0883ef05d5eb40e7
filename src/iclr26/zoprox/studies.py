"""The four studies of the reproduction, as functions from settings to structured results (no file output).

1. :func:`lasso_study` — the paper's §5.1: KL (k-NN estimator, pooled over windows of iterations as the authors'
   plotting script does) against exact samples of the Gaussian–Lasso mixture, for the sampler with N interacting
   particles, its N = 1 ablation (N independent chains) and the rejection-based proximal sampler (100 chains).
2. :func:`tori_study` — the paper's §5.2: share of particles in each torus along the run, sampler vs In-and-Out.
3. :func:`budget_study` — equal oracle-query budget on targets with ground truth: every sampler spends the budget
   that K iterations of the zeroth-order sampler cost; accuracy of the samples produced in the final part of the
   budget (pooled at the same budget points for every sampler), and curves of W2/MMD against queries and wall-clock.
4. :func:`speedup_study` — wall-clock of one iteration with one batched potential call per sub-step against one call
   per particle (the parallel-oracle advantage).

Shape glossary: ``N`` particles/chains, ``d`` dimension, ``S`` snapshots, ``P`` pooled samples.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from iclr26.zoprox.baselines import in_and_out, mala, proximal_rgo, random_walk_metropolis, ula
from iclr26.zoprox.metrics import gaussian_w2, knn_kl, mmd_rbf, mode_fractions, wasserstein2
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.sampler import sample
from iclr26.zoprox.targets import (
    Gaussian,
    GaussianLassoMixture,
    LogisticPosterior,
    TwoTori,
)
from iclr26.zoprox.trace import SampleResult

Progress = Callable[..., Iterable[Any]]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def queries(result: SampleResult) -> torch.Tensor:
    """``(S,)`` oracle queries (potential + gradient evaluations) spent up to each snapshot."""
    return result.snapshot_evals + result.snapshot_grads


# ----------------------------------------------------------------------------------------------------------------
# 1. Gaussian–Lasso mixture (§5.1)


@dataclass(frozen=True)
class KLCurve:
    """KL of pooled windows of snapshots against the reference.

    Attributes:
        iters: iteration (proximal step) at the end of each window.
        queries: oracle queries spent at the end of each window.
        kl: k-NN KL estimate of the window's pooled samples.
    """

    iters: list[int]
    queries: list[int]
    kl: list[float]

    def first_below(self, threshold: float) -> int | None:
        """The first window end with KL ≤ ``threshold`` (``None`` if never)."""
        return next((i for i, v in zip(self.iters, self.kl, strict=True) if v <= threshold), None)

    def mean_kl(self) -> float:
        """Mean KL over the windows (area under the curve per window)."""
        return float(np.mean(self.kl))


def pooled_kl_curve(result: SampleResult, reference: torch.Tensor, *, window: int, thin: int) -> KLCurve:
    """KL of consecutive windows of ``window`` snapshots taken every ``thin`` iterations (initial state excluded).

    The authors' script pools 10 consecutive outputs of the 100 particles (1000 samples) per KL estimate and, for the
    rejection-based sampler, keeps every 10th step of each chain; ``thin`` reproduces that thinning.
    """
    snaps = result.snapshots[1:][thin - 1 :: thin]  # (S', N, d)
    iters = result.snapshot_iters[1:][thin - 1 :: thin]
    spent = queries(result)[1:][thin - 1 :: thin]
    out_i, out_q, out_k = [], [], []
    for start in range(0, snaps.shape[0] - window + 1, window):
        pooled = snaps[start : start + window].reshape(-1, snaps.shape[-1])  # (P, d)
        out_i.append(int(iters[start + window - 1]))
        out_q.append(int(spent[start + window - 1]))
        out_k.append(knn_kl(pooled, reference))
    return KLCurve(iters=out_i, queries=out_q, kl=out_k)


@dataclass(frozen=True)
class LassoStudy:
    """Results of the Gaussian–Lasso mixture study.

    Attributes:
        kl_floor: k-NN KL of exact samples of the window size against the reference (estimator noise floor).
        curves: KL curve per sampler (``zod``, ``zod_independent``, ``rgo``).
        wall_s: wall-clock seconds per sampler.
        ess_mean: mean effective sample size of the weights (``zod``, ``zod_independent``).
        rgo_trials_mean: mean proposals per chain and iteration of the rejection step.
        rgo_failures: chains that exhausted their trials (kept their state).
        final_samples: the last iterate of each sampler, ``(N, d)``.
    """

    kl_floor: float
    curves: dict[str, KLCurve]
    wall_s: dict[str, float]
    ess_mean: dict[str, float]
    rgo_trials_mean: float
    rgo_failures: int
    final_samples: dict[str, torch.Tensor]


def lasso_study(
    target: GaussianLassoMixture,
    *,
    seed: int,
    n_particles: int,
    step_size: float,
    n_mc: int,
    n_diffusion_steps: int,
    n_iters: int,
    rgo_step: float,
    rgo_weak_convexity: float,
    rgo_iters: int,
    rgo_thin: int,
    window: int,
    reference_size: int,
    progress: Progress,
    dtype: torch.dtype = torch.float64,
) -> LassoStudy:
    """Run the three samplers of §5.1 from the same N(0, I) start and measure pooled KL against exact samples.

    ``dtype`` is the samplers' computation dtype (the start is drawn in float64 and cast, so float32 and float64 runs
    start from the same points); the metrics run in float64 on the returned samples.
    """
    d = target.dim
    reference = target.sample(reference_size, _gen(seed + 1))
    x0 = torch.randn(n_particles, d, dtype=torch.float64, generator=_gen(seed + 2))
    floor = float(
        np.mean([knn_kl(target.sample(window * n_particles, _gen(seed + 10 + i)), reference) for i in range(5)])
    )
    results = {}
    for name, interacting in (("zod", True), ("zod_independent", False)):
        results[name] = sample(
            target.potential,
            x0,
            n_iters,
            step_size,
            n_mc,
            n_diffusion_steps=n_diffusion_steps,
            interacting=interacting,
            generator=_gen(seed + 3),
            dtype=dtype,
            progress=lambda it, n=name: progress(it, desc=n),
        )
    results["rgo"] = proximal_rgo(
        PotentialOracle(target.potential, grad_fn=target.grad),
        x0,
        rgo_iters,
        rgo_step,
        weak_convexity=rgo_weak_convexity,
        generator=_gen(seed + 4),
        dtype=dtype,
        progress=lambda it: progress(it, desc="rgo"),
    )
    curves = {
        name: pooled_kl_curve(res, reference, window=window, thin=rgo_thin if name == "rgo" else 1)
        for name, res in results.items()
    }
    return LassoStudy(
        kl_floor=floor,
        curves=curves,
        wall_s={name: res.wall_time_s for name, res in results.items()},
        ess_mean={name: float(results[name].diagnostics["ess_mean"].mean()) for name in ("zod", "zod_independent")},
        rgo_trials_mean=float(results["rgo"].diagnostics["trials_mean"].mean()),
        rgo_failures=int(results["rgo"].diagnostics["failures"].sum()),
        final_samples={name: res.samples for name, res in results.items()},
    )


# ----------------------------------------------------------------------------------------------------------------
# 2. Two tori (§5.2)


@dataclass(frozen=True)
class ToriStudy:
    """Share of particles in each torus along the run.

    Attributes:
        iters: recorded iterations.
        fractions: per sampler (``zod``, ``in_and_out``), ``(fraction in T1, fraction in T2)`` per recorded iteration.
        queries_along: per sampler, potential evaluations spent up to each recorded iteration.
        t2_mass: π(T2), the share a perfect sampler would put in T2.
        queries: oracle queries per sampler.
        in_and_out_failures: backward steps that exhausted the trial cap.
        final_samples: last iterate per sampler, ``(N, 3)``.
    """

    iters: list[int]
    fractions: dict[str, list[tuple[float, float]]]
    queries_along: dict[str, list[int]]
    t2_mass: float
    queries: dict[str, int]
    in_and_out_failures: int
    final_samples: dict[str, torch.Tensor]


def tori_study(
    target: TwoTori,
    *,
    seed: int,
    n_particles: int,
    step_size: float,
    n_mc: int,
    n_diffusion_steps: int,
    sigma2_min: float,
    n_iters: int,
    max_trials: int,
    record_every: int,
    progress: Progress,
    dtype: torch.dtype = torch.float64,
) -> ToriStudy:
    """Both samplers from the same N(0, I) start (inside or next to T1), as in the authors' ``eval_torus.py``;
    ``dtype`` is their computation dtype (the start is drawn in float64 and cast)."""
    x0 = torch.randn(n_particles, 3, dtype=torch.float64, generator=_gen(seed + 20))
    zod = sample(
        target.potential,
        x0,
        n_iters,
        step_size,
        n_mc,
        n_diffusion_steps=n_diffusion_steps,
        sigma2_min=sigma2_min,
        generator=_gen(seed + 21),
        dtype=dtype,
        record_every=record_every,
        progress=lambda it: progress(it, desc="tori zod"),
    )
    io = in_and_out(
        target.potential,
        x0,
        n_iters,
        step_size,
        f_lower=0.0,
        max_trials=max_trials,
        generator=_gen(seed + 22),
        dtype=dtype,
        record_every=record_every,
        progress=lambda it: progress(it, desc="tori in-and-out"),
    )
    runs = {"zod": zod, "in_and_out": io}
    return ToriStudy(
        iters=zod.snapshot_iters.tolist(),
        fractions={name: [target.fractions(s) for s in res.snapshots] for name, res in runs.items()},
        queries_along={name: queries(res).tolist() for name, res in runs.items()},
        t2_mass=target.t2_mass,
        queries={"zod": zod.n_evals, "in_and_out": io.n_evals},
        in_and_out_failures=int(io.diagnostics["failures"].sum()),
        final_samples={"zod": zod.samples, "in_and_out": io.samples},
    )


# ----------------------------------------------------------------------------------------------------------------
# 3. Equal-budget comparison on targets with ground truth


@dataclass(frozen=True)
class BudgetTarget:
    """A target of the equal-budget study and the tuned step sizes of every sampler on it.

    Attributes:
        name: short name.
        target: the target (``potential``, ``grad``; ``sample`` unless ``reference`` is given).
        x0: ``(N, d)`` initial particles, shared by all samplers.
        zod_step: h of the zeroth-order sampler.
        smoothness: L, the largest curvature of f in the bulk; the rejection-based RGO uses M = L and η = 1/(L d)
            (Liang & Chen's choice η = 1/(L₁ d)).
        rwm_std: random-walk proposal standard deviation.
        langevin_step: ULA/MALA step size.
        modes: ``(K, d)`` mode centres for mode coverage, with ``mode_weights`` ``(K,)`` their true masses.
        reference: ``(m, d)`` reference samples when ``target`` cannot be sampled exactly.
    """

    name: str
    target: Any
    x0: torch.Tensor
    zod_step: float
    smoothness: float
    rwm_std: float
    langevin_step: float
    modes: torch.Tensor | None = None
    mode_weights: torch.Tensor | None = None
    reference: torch.Tensor | None = None


@dataclass(frozen=True)
class Curve:
    """A metric along one sampler run, at a subset of its snapshots (one iterate of N particles each)."""

    queries: list[int]
    wall_s: list[float]
    w2: list[float]
    mmd: list[float]


@dataclass(frozen=True)
class BudgetResult:
    """Equal-budget results on one target.

    Attributes:
        budget: oracle queries each sampler could spend.
        final: per sampler, metrics of the samples pooled at the final budget points: ``w2`` (exact OT), ``mmd``,
            ``gaussian_w2`` (Gaussian targets), ``mode_tv`` (total variation between mode shares and true weights).
        floor: the same metrics for exact samples of the same size (estimator floors).
        curves: per sampler, per-iterate W2/MMD against queries and wall-clock.
        spent: per sampler, queries actually spent.
        points: the budget points (queries) at which the final samples are pooled, largest first.
        pooled_queries: per sampler, the queries spent at the snapshot pooled for each budget point (equal to
            ``points`` for samplers with a fixed cost per iteration; at most ``points`` for the rejection sampler).
        pooled: per sampler, ``(P, d)`` pooled final samples.
    """

    budget: int
    final: dict[str, dict[str, float]]
    floor: dict[str, float]
    curves: dict[str, Curve]
    spent: dict[str, int]
    points: list[int]
    pooled_queries: dict[str, list[int]]
    pooled: dict[str, torch.Tensor] = field(repr=False)


class Pooled(NamedTuple):
    """Snapshots pooled at budget points.

    Attributes:
        samples: ``(P, d)`` the pooled particles, P = (number of points) × N.
        queries: queries spent at each pooled snapshot.
    """

    samples: torch.Tensor
    queries: list[int]


def pool_at_budget(result: SampleResult, points: list[int]) -> Pooled:
    """For each budget point, the last snapshot taken with at most that many queries spent, concatenated.

    Raises:
        ValueError: naming ``points`` if a point lies below the queries of the first snapshot.
    """
    spent = queries(result)
    if min(points) < int(spent[0]):
        raise ValueError(f"points: {min(points)} queries is below the {int(spent[0])} spent at the first snapshot")
    idx = [int((spent <= p).nonzero().max()) for p in points]
    return Pooled(
        samples=result.snapshots[idx].reshape(-1, result.snapshots.shape[-1]), queries=[int(spent[i]) for i in idx]
    )


def _metrics(samples: torch.Tensor, spec: BudgetTarget, reference: torch.Tensor, bandwidth: float) -> dict[str, float]:
    out = {"w2": wasserstein2(samples, reference), "mmd": mmd_rbf(samples, reference, bandwidth)}
    if isinstance(spec.target, Gaussian):
        cov = torch.cov(samples.T)
        out["gaussian_w2"] = gaussian_w2(samples.mean(0), cov, spec.target.mean, spec.target.cov)
    if spec.modes is not None and spec.mode_weights is not None:
        out["mode_tv"] = float(0.5 * (mode_fractions(samples, spec.modes) - spec.mode_weights).abs().sum())
    return out


def _curve(result: SampleResult, reference: torch.Tensor, bandwidth: float, n_points: int) -> Curve:
    idx = sorted(set(np.linspace(0, result.snapshots.shape[0] - 1, n_points).round().astype(int).tolist()))
    spent = queries(result)
    return Curve(
        queries=[int(spent[i]) for i in idx],
        wall_s=[float(result.snapshot_wall[i]) for i in idx],
        w2=[wasserstein2(result.snapshots[i], reference) for i in idx],
        mmd=[mmd_rbf(result.snapshots[i], reference, bandwidth) for i in idx],
    )


def budget_study(
    spec: BudgetTarget,
    *,
    seed: int,
    n_mc: int,
    n_diffusion_steps: int,
    zod_iters: int,
    pool_points: int,
    curve_points: int,
    progress: Progress,
) -> BudgetResult:
    """Run every sampler on ``spec`` for the query budget of ``zod_iters`` iterations of the zeroth-order sampler.

    The samples compared are pooled at the same ``pool_points`` budget points for every sampler — the budget spent
    after each of the last ``pool_points`` iterations of the zeroth-order sampler — so each pooled set has
    ``pool_points × N`` samples produced with the same share of the budget. The reference has the same size, and
    the exact-sample floor compares two such independent sets (for the logistic posterior, two disjoint subsets of
    the MALA reference, which must then hold at least ``2 × pool_points × N`` samples).
    """
    n, d = spec.x0.shape
    per_iter = n * n_mc * n_diffusion_steps  # queries per zeroth-order iteration
    budget = zod_iters * per_iter
    points = [budget - j * per_iter for j in range(pool_points)]
    gen = _gen(seed + 30)
    size = pool_points * n  # reference and exact-sample sets of the pooled size, so all floors match
    if spec.reference is not None:
        perm = torch.randperm(spec.reference.shape[0], generator=gen)
        reference, exact_pool = spec.reference[perm[:size]], spec.reference[perm[size : 2 * size]]
    else:
        reference, exact_pool = spec.target.sample(size, gen), spec.target.sample(size, gen)
    bandwidth = float(torch.cdist(reference, reference).median())

    def oracle() -> PotentialOracle:
        return PotentialOracle(spec.target.potential, grad_fn=spec.target.grad)

    def bar(name: str) -> Callable[[Iterable[int]], Iterable[Any]]:
        return lambda it: progress(it, desc=f"{spec.name} {name}")

    rgo_step = 1.0 / (spec.smoothness * d)
    runs: dict[str, SampleResult] = {
        name: sample(
            oracle(),
            spec.x0,
            zod_iters,
            spec.zod_step,
            n_mc,
            n_diffusion_steps=n_diffusion_steps,
            interacting=interacting,
            generator=_gen(seed + offset),
            progress=bar(label),
        )
        for name, interacting, offset, label in (("zod", True, 31, "zod"), ("zod_independent", False, 32, "zod N=1"))
    }
    # Random-walk Metropolis and MALA pay one initial evaluation per chain (two queries for MALA's value and
    # gradient), so they run one step less than budget / cost to spend exactly the budget; the recorder's grid is
    # aligned on the last step, so their snapshots fall exactly on the budget points.
    runs |= {
        "rgo": proximal_rgo(
            oracle(),
            spec.x0,
            budget // n,
            rgo_step,
            weak_convexity=spec.smoothness,
            max_queries=budget,
            generator=_gen(seed + 33),
            progress=bar("rgo"),
        ),
        "rwm": random_walk_metropolis(
            oracle(),
            spec.x0,
            budget // n - 1,
            spec.rwm_std,
            generator=_gen(seed + 34),
            record_every=max(1, per_iter // n),
            progress=bar("rwm"),
        ),
        "ula": ula(
            oracle(),
            spec.x0,
            budget // n,
            spec.langevin_step,
            generator=_gen(seed + 35),
            record_every=max(1, per_iter // n),
            progress=bar("ula"),
        ),
        "mala": mala(
            oracle(),
            spec.x0,
            budget // (2 * n) - 1,
            spec.langevin_step,
            generator=_gen(seed + 36),
            record_every=max(1, per_iter // (2 * n)),
            progress=bar("mala"),
        ),
    }
    pooled = {name: pool_at_budget(res, points) for name, res in runs.items()}
    return BudgetResult(
        budget=budget,
        final={name: _metrics(p.samples, spec, reference, bandwidth) for name, p in pooled.items()},
        floor=_metrics(exact_pool, spec, reference, bandwidth),
        curves={name: _curve(res, reference, bandwidth, curve_points) for name, res in runs.items()},
        spent={name: int(queries(res)[-1]) for name, res in runs.items()},
        points=points,
        pooled_queries={name: p.queries for name, p in pooled.items()},
        pooled={name: p.samples for name, p in pooled.items()},
    )


# ----------------------------------------------------------------------------------------------------------------
# 4. Batched against per-particle potential evaluation


@dataclass(frozen=True)
class SpeedupStudy:
    """Wall-clock seconds per iteration of the zeroth-order sampler with batched and per-particle oracle calls.

    Attributes:
        batched_s: one potential call per sub-step on all N·M points.
        per_particle_s: N calls of M points per sub-step.
        speedup: per_particle_s / batched_s.
        same_samples: whether both runs produced the same particles (they must: only the call pattern differs).
    """

    batched_s: float
    per_particle_s: float
    speedup: float
    same_samples: bool


def speedup_study(
    target: Any, x0: torch.Tensor, *, step_size: float, n_mc: int, n_diffusion_steps: int, n_iters: int, seed: int
) -> SpeedupStudy:
    """Time ``n_iters`` iterations twice from the same seed, changing only the oracle's chunk size."""
    times, outs = [], []
    for chunk in (None, n_mc):
        oracle = PotentialOracle(target.potential, chunk_size=chunk)
        t0 = time.perf_counter()
        res = sample(
            oracle, x0, n_iters, step_size, n_mc, n_diffusion_steps=n_diffusion_steps, generator=_gen(seed + 40)
        )
        times.append((time.perf_counter() - t0) / max(n_iters, 1))
        outs.append(res.samples)
    return SpeedupStudy(
        batched_s=times[0],
        per_particle_s=times[1],
        speedup=times[1] / times[0],
        same_samples=bool(torch.allclose(outs[0], outs[1], rtol=0, atol=1e-12)),
    )


# ----------------------------------------------------------------------------------------------------------------
# Logistic-regression posterior: data and reference


def logistic_target(
    features: np.ndarray, labels: np.ndarray, columns: tuple[int, ...], prior_var: float
) -> LogisticPosterior:
    """Standardise the chosen columns, add an intercept column, map labels {0, 1} to {−1, +1}."""
    a = features[:, list(columns)].astype(np.float64)
    a = (a - a.mean(0)) / a.std(0)
    a = np.concatenate([np.ones((a.shape[0], 1)), a], axis=1)
    return LogisticPosterior(
        features=torch.from_numpy(a),
        labels=torch.from_numpy(2.0 * labels.astype(np.float64) - 1.0),
        prior_var=prior_var,
    )


def logistic_smoothness(target: LogisticPosterior) -> float:
    """L = λ_max(AᵀA)/4 + 1/τ², a bound on the Hessian of f."""
    gram = target.features.T @ target.features
    return float(torch.linalg.eigvalsh(gram).max() / 4 + 1.0 / target.prior_var)


class MalaReference(NamedTuple):
    """Reference samples of a target without an exact sampler.

    Attributes:
        samples: ``(P, d)`` the kept MALA iterates, P = n_chains × (snapshots after the burn-in).
        acceptance: mean MALA acceptance rate of the run.
    """

    samples: torch.Tensor
    acceptance: float


def mala_reference(
    target: LogisticPosterior, *, n_chains: int, n_steps: int, burn_in: int, thin: int, seed: int, progress: Progress
) -> MalaReference:
    """Reference samples from a long MALA run started near the MAP (found by 500 gradient-descent steps of size 1/L).

    Returns:
        :class:`MalaReference`.
    """
    oracle = PotentialOracle(target.potential, grad_fn=target.grad)
    step = 0.5 / logistic_smoothness(target)
    theta = torch.zeros(1, target.dim, dtype=torch.float64)
    for _ in range(500):  # gradient descent to the MAP; step 1/L is stable for an L-smooth convex f
        theta = theta - 2 * step * target.grad(theta)
    x0 = theta + math.sqrt(step) * torch.randn(n_chains, target.dim, dtype=torch.float64, generator=_gen(seed + 50))
    res = mala(
        oracle,
        x0,
        n_steps,
        step,
        generator=_gen(seed + 51),
        record_every=thin,
        progress=lambda it: progress(it, desc="logreg reference (MALA)"),
    )
    keep = res.snapshot_iters > burn_in
    return MalaReference(
        samples=res.snapshots[keep].reshape(-1, target.dim), acceptance=float(res.diagnostics["acceptance"].mean())
    )
