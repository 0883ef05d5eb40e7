"""Reproduction of "Alternating Diffusion for Proximal Sampling with Zeroth Order Queries" (ICLR 2026, arXiv
2603.19633): ``iclr26 run zoprox --scale smoke|cpu|gpu``.

What runs (see :mod:`iclr26.zoprox.studies`):

1. §5.1 Gaussian–Lasso mixture, d = 5: the sampler (N = 100 interacting particles, h = 1/10, T = 10), its N = 1
   ablation and the rejection-based proximal sampler (100 chains, h = 1/135); pooled k-NN KL against exact samples.
2. §5.2 two solid tori in R³: share of particles in the far torus T2, sampler vs In-and-Out.
3. Equal query budget on an anisotropic Gaussian, a ring Gaussian mixture, a double well and a Bayesian logistic
   regression posterior (breast-cancer data bundled with scikit-learn): W2 (exact OT), MMD, Gaussian W2 and mode
   coverage of every sampler's samples.
4. Batched vs per-particle potential evaluation: wall-clock per iteration (a timing, in the record's ``timings``).

Verdict: the catalog claim holds when (a) the sampler reaches the KL threshold in at least ``min_iteration_ratio``
times fewer proximal steps than the rejection-based sampler and (c) the interacting particles have a lower mean KL
than the N = 1 chains. Both are counted costs and seeded measurements; no wall-clock enters a verdict. The tori and
equal-budget (oracle queries) results are reported alongside with their own verdicts.

Units of work (``iclr26 run zoprox --resume RUN_DIR``): ``lasso``, ``tori``, ``budget-<target>`` per equal-budget
target (the logistic target's MALA reference is drawn inside its unit), and ``speedup``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch

from iclr26.common.config import ExperimentConfig, require, threshold
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.zoprox.figures import plot_budget, plot_lasso, plot_scatter, plot_tori
from iclr26.zoprox.studies import (
    BudgetResult,
    BudgetTarget,
    LassoStudy,
    SpeedupStudy,
    ToriStudy,
    budget_study,
    lasso_study,
    logistic_smoothness,
    logistic_target,
    mala_reference,
    speedup_study,
    tori_study,
)
from iclr26.zoprox.targets import DoubleWell, TwoTori, anisotropic_gaussian, gaussian_lasso_mixture, ring_mixture

BUDGET_TARGETS = ("gaussian", "mixture", "double_well", "logistic")


def _f(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class ZOProxConfig(ExperimentConfig):
    """Settings of the four studies; defaults are the ``cpu`` scale."""

    CPU_BOUND: ClassVar[str | None] = (
        "zeroth-order samplers on small analytic float64 targets, with SciPy k-NN and POT optimal-transport metrics: "
        "the work is many small sequential oracle calls that a GPU would not speed up"
    )

    # §5.1 Gaussian–Lasso mixture
    lasso_particles: int = _f(100, "N interacting particles / RGO chains (source: §5.1, authors' zodps.py)")
    lasso_step: float = _f(0.1, "proximal step h of the sampler (source: §5.1, h = 1/10)")
    lasso_n_mc: int = _f(
        2000,
        "Monte Carlo samples M per particle and sub-step (source: authors' code uses 4000; "
        "halved to fit one CPU thread, fixed before the run that set kl_threshold from the paper's figure)",
    )
    diffusion_steps: int = _f(10, "Euler-Maruyama sub-steps T per backward step (source: §5.1/§5.2, T = 10)")
    lasso_iters: int = _f(100, "sampler iterations (source: paper runs 1000; ~100 suffice for its claim)")
    rgo_step: float = _f(1 / 135, "step of the rejection-based proximal sampler (source: §5.1, 1/(L1 d) = 1/135)")
    rgo_weak_convexity: float = _f(27.0, "M of Liang & Chen's RGO lower bound (source: their §6, L1 = 27)")
    rgo_iters: int = _f(
        10000,
        "RGO proximal steps (source: the paper runs 10000, plotted as 1000 iterations thinned by 10; an RGO that "
        "never reaches the threshold gives a lower bound on the ratio)",
    )
    rgo_thin: int = _f(10, "RGO thinning before pooling (source: authors' rgo_rs_loop.py keeps every 10th step)")
    kl_window: int = _f(10, "iterates pooled per KL estimate (source: authors' plot_kl.py pools 10 x 100 samples)")
    kl_threshold: float = _f(
        0.05,
        "KL level of 'comparable KL' (source: read off the authors' figures/kl_divergence_comparison.pdf, the "
        "paper's Gaussian-Lasso plot: the ZOD-PS mean KL at its iteration 100, where the paper's '~100' sits, is "
        "0.053; ZOD-PS first reaches <= 0.05 at iteration 110, RGO at plotted iteration 750 = 7500 RGO steps)",
    )
    reference_size: int = _f(
        5000,
        "exact reference samples for KL/W2 (not in the paper, which uses 1000 from a "
        "long RGO run; exact sampling is available here)",
    )
    min_iteration_ratio: float = _f(
        68.0,
        "claim (a) holds if RGO needs at least this many times more proximal steps to reach kl_threshold (source: "
        "the authors' figures/kl_divergence_comparison.pdf at KL 0.05: RGO 7500 steps (plotted 750, thinning 10) "
        "vs ZOD-PS 110 iterations, ratio 68; the text's '~100 vs ~950' thinned iterations is ~95)",
    )
    # §5.2 two tori
    tori_particles: int = _f(400, "particles (source: paper uses 1000; reduced for CPU)")
    tori_n_mc: int = _f(50, "Monte Carlo samples M (source: paper uses 300; reduced for CPU)")
    tori_iters: int = _f(200, "iterations (source: Figure 4 reports k = 200)")
    tori_step: float = _f(1.0, "proximal step h for both samplers (source: authors' eval_torus.py)")
    tori_sigma2_min: float = _f(0.01, "last noise level of the schedule (source: authors' eval_torus.py)")
    tori_max_trials: int = _f(
        300, "In-and-Out proposals per chain and step (source: authors use 10000; a chain that fails keeps its state)"
    )
    t2_min_fraction: float = _f(
        0.037,
        "claim (b): the sampler's mean share in the far torus T2 over the last quarter of the run must reach this, "
        "In-and-Out's share must stay below it (source: the authors' figures/num_in_torus_comparison.pdf, 'Ours in "
        "T2' averages 37 of 1000 particles over k = 150..200; the true mass pi(T2) = 3/13 = 0.23 is reported beside)",
    )
    # equal-budget study
    budget_targets: tuple[str, ...] = _f(
        BUDGET_TARGETS,
        "targets with ground truth for the equal-budget study (source: the issue; comma-separated subset)",
    )
    budget_particles: int = _f(100, "particles / chains of every sampler (not in the paper; as in §5.1)")
    budget_n_mc: int = _f(50, "M of the sampler in the budget study (not in the paper; chosen for CPU)")
    budget_iters: int = _f(40, "sampler iterations that define the budget N*M*T*K (not in the paper)")
    pool_points: int = _f(10, "budget points whose iterates are pooled for the final metrics (as kl_window)")
    curve_points: int = _f(12, "snapshots per sampler on the metric-vs-budget curves")
    gaussian_dim: int = _f(5, "dimension of the anisotropic Gaussian (not in the paper)")
    gaussian_condition: float = _f(10.0, "condition number of its covariance (not in the paper)")
    mixture_dim: int = _f(2, "dimension of the ring mixture, 2-10 (source: the issue)")
    mixture_modes: int = _f(4, "modes on the ring (not in the paper)")
    mixture_radius: float = _f(4.0, "ring radius; adjacent modes 5.7 apart, i.e. 11 standard deviations")
    mixture_std: float = _f(0.5, "standard deviation of each mode")
    well_barrier: float = _f(4.0, "double-well barrier height a in f = a (x1^2 - 1)^2 + |x2|^2 / 2")
    logreg_columns: tuple[int, ...] = _f((0, 1, 4, 7, 9), "breast-cancer feature columns (plus an intercept)")
    logreg_rows: int = _f(
        200,
        "data points drawn (by the seed) from the 569 (not in the paper; every potential "
        "evaluation costs one pass over them)",
    )
    logreg_prior_var: float = _f(1.0, "Gaussian prior variance tau^2 (not in the paper)")
    logreg_ref_steps: int = _f(4000, "steps of the long MALA run that gives the logistic reference")
    accuracy_tolerance: float = _f(
        0.1,
        "claim (d): sampler W2 <= (1 + tol) x the baseline's W2 counts as at least as accurate (not in the paper; "
        "a round 10% margin without a derivation, see the README's Deviations)",
    )
    speedup_iters: int = _f(2, "iterations timed for the batched vs per-particle speed-up")
    dtype: Literal["float64", "float32"] = _f(
        "float64",
        "computation dtype of the Gaussian-Lasso and tori samplers (source: authors' code float32; float64 default "
        "on the CPU, the gpu scale uses float32); metrics always run in float64",
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "lasso_particles": 20,
            "lasso_n_mc": 16,
            "diffusion_steps": 3,
            "lasso_iters": 6,
            "rgo_iters": 40,
            "rgo_thin": 2,
            "kl_window": 3,
            "reference_size": 300,
            "tori_particles": 20,
            "tori_n_mc": 8,
            "tori_iters": 4,
            "tori_max_trials": 20,
            "budget_particles": 12,
            "budget_n_mc": 8,
            "budget_iters": 4,
            "logreg_rows": 60,
            "pool_points": 2,
            "curve_points": 3,
            "logreg_ref_steps": 60,
            "speedup_iters": 1,
        },
        "gpu": {
            "lasso_n_mc": 4000,
            "lasso_iters": 1000,
            "rgo_iters": 10000,
            "tori_particles": 1000,
            "tori_n_mc": 300,
            "tori_iters": 1000,
            "budget_n_mc": 400,
            "budget_iters": 200,
            "logreg_rows": 569,
            "dtype": "float32",
        },
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "lasso_particles",
            "lasso_n_mc",
            "diffusion_steps",
            "lasso_iters",
            "rgo_iters",
            "rgo_thin",
            "kl_window",
            "tori_particles",
            "tori_n_mc",
            "tori_iters",
            "tori_max_trials",
            "budget_particles",
            "budget_n_mc",
            "budget_iters",
            "pool_points",
            "curve_points",
            "gaussian_dim",
            "mixture_modes",
            "logreg_rows",
            "logreg_ref_steps",
            "speedup_iters",
        ):
            require(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        for name in (
            "lasso_step",
            "rgo_step",
            "tori_step",
            "kl_threshold",
            "mixture_radius",
            "mixture_std",
            "well_barrier",
            "logreg_prior_var",
            "gaussian_condition",
        ):
            require(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        product = self.rgo_step * self.rgo_weak_convexity
        require(
            product < 1, "rgo_step", f"Liang & Chen's RGO needs rgo_step * rgo_weak_convexity < 1, got {product:.3g}"
        )
        require(self.rgo_weak_convexity >= 0, "rgo_weak_convexity", "must be >= 0")
        require(0 <= self.tori_sigma2_min < self.tori_step, "tori_sigma2_min", "must lie in [0, tori_step)")
        require(self.lasso_iters >= self.kl_window, "lasso_iters", "must be >= kl_window (one KL window at least)")
        require(self.rgo_iters >= self.kl_window * self.rgo_thin, "rgo_iters", "must be >= kl_window * rgo_thin")
        require(self.reference_size >= 2 * self.kl_window, "reference_size", "too small for the k-NN estimator")
        require(self.pool_points <= self.budget_iters, "pool_points", "must be <= budget_iters")
        require(self.min_iteration_ratio >= 1, "min_iteration_ratio", "must be >= 1")
        require(0 < self.t2_min_fraction < 1, "t2_min_fraction", "must lie in (0, 1)")
        require(self.dtype in ("float64", "float32"), "dtype", f"must be float64 or float32, got {self.dtype!r}")
        require(self.accuracy_tolerance >= 0, "accuracy_tolerance", "must be >= 0")
        require(self.gaussian_condition >= 1, "gaussian_condition", "must be >= 1")
        require(2 <= self.mixture_dim <= 10, "mixture_dim", f"must lie in 2..10, got {self.mixture_dim}")
        require(self.mixture_modes >= 2, "mixture_modes", "must be >= 2")
        require(self.logreg_rows <= 569, "logreg_rows", "the breast-cancer data has 569 rows")
        unknown = sorted(set(self.budget_targets) - set(BUDGET_TARGETS))
        require(not unknown, "budget_targets", f"unknown {unknown}; choose from {', '.join(BUDGET_TARGETS)}")
        require(
            len(self.logreg_columns) >= 1 and all(0 <= c < 30 for c in self.logreg_columns),
            "logreg_columns",
            "need column indices in 0..29 of the breast-cancer features",
        )


# ----------------------------------------------------------------------------------------------------------------


def _budget_spec(name: str, config: ZOProxConfig, gen: torch.Generator, ctx: RunContext) -> BudgetTarget:
    """One target of the equal-budget study with every sampler's step sizes (not in the paper).

    The targets draw from one generator ``gen`` in the order of :data:`BUDGET_TARGETS` (the logistic target, the
    only expensive one because of its MALA reference, last).

    Step-size rules, the same on every target: the zeroth-order sampler uses h = ½ × the target's mean marginal
    variance (estimated from 2000 reference samples); random-walk Metropolis 2.38/√d × the local standard deviation
    (of one mode on multimodal targets); ULA/MALA 1/(2L) or less with L the largest curvature; the rejection-based
    RGO η = 1/(L d) with M = L (Liang & Chen's choice).
    """
    n = config.budget_particles

    def noise(d: int) -> torch.Tensor:
        return torch.randn(n, d, dtype=torch.float64, generator=gen)

    def half_mean_variance(samples: torch.Tensor) -> float:
        return 0.5 * float(samples.var(0).mean())

    if name == "gaussian":
        d = config.gaussian_dim
        tgt = anisotropic_gaussian(d, config.gaussian_condition, gen)
        # RWM: 2.38/sqrt(d) x 0.6, a middle standard deviation (they range from 1 to 0.32)
        return BudgetTarget(
            "gaussian",
            tgt,
            noise(d),
            zod_step=half_mean_variance(tgt.sample(2000, gen)),
            smoothness=config.gaussian_condition,
            rwm_std=2.38 / math.sqrt(d) * 0.6,
            langevin_step=0.5 / config.gaussian_condition,
        )
    if name == "mixture":
        d, s = config.mixture_dim, config.mixture_std
        tgt = ring_mixture(d, config.mixture_modes, config.mixture_radius, s)
        # all particles start in mode 0 (h then comes out near radius^2 / 4, enough to reach the neighbours)
        return BudgetTarget(
            "mixture",
            tgt,
            tgt.means[0] + s * noise(d),
            zod_step=half_mean_variance(tgt.sample(2000, gen)),
            smoothness=1 / s**2,
            rwm_std=2.38 / math.sqrt(d) * s,
            langevin_step=0.2 * s**2,
            modes=tgt.means,
            mode_weights=tgt.weights,
        )
    if name == "double_well":
        a = config.well_barrier
        tgt = DoubleWell(2, a)
        start = torch.tensor([-1.0, 0.0], dtype=torch.float64)
        modes = torch.tensor([[-1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
        # all particles start in the left well; curvature 8a at the wells
        return BudgetTarget(
            "double_well",
            tgt,
            start + 0.2 * noise(2),
            zod_step=half_mean_variance(tgt.sample(2000, gen)),
            smoothness=8 * a,
            rwm_std=2.38 / math.sqrt(2) / math.sqrt(8 * a),
            langevin_step=0.25 / (8 * a),
            modes=modes,
            mode_weights=torch.tensor([0.5, 0.5], dtype=torch.float64),
        )
    if name == "logistic":
        from sklearn.datasets import load_breast_cancer  # bundled with scikit-learn, no download

        data = load_breast_cancer()
        rows = torch.randperm(data.data.shape[0], generator=gen)[: config.logreg_rows].numpy()
        tgt = logistic_target(data.data[rows], data.target[rows], config.logreg_columns, config.logreg_prior_var)
        # keep enough post-burn-in snapshots of 100 chains for a reference and a disjoint exact-sample set
        burn_in = config.logreg_ref_steps // 2
        n_keep = math.ceil(2 * config.pool_points * n / 100) + 1
        mala_ref = mala_reference(
            tgt,
            n_chains=100,
            n_steps=config.logreg_ref_steps,
            burn_in=burn_in,
            thin=max(1, (config.logreg_ref_steps - burn_in) // n_keep),
            seed=config.seed,
            progress=ctx.progress,
        )
        ctx.log(f"logistic reference: {mala_ref.samples.shape[0]} MALA samples, acceptance {mala_ref.acceptance:.2f}")
        ref = mala_ref.samples
        std = float(ref.std(0).mean())
        lip = logistic_smoothness(tgt)
        return BudgetTarget(
            "logistic",
            tgt,
            noise(tgt.dim),
            zod_step=half_mean_variance(ref),
            smoothness=lip,
            rwm_std=2.38 / math.sqrt(tgt.dim) * std,
            langevin_step=0.5 / lip,
            reference=ref,
        )
    raise ValueError(f"name: unknown budget target {name!r}; choose from {', '.join(BUDGET_TARGETS)}")


def _queries_at(curve: Any, iteration: int | None) -> int | None:
    """Oracle queries spent at the KL window that ends at ``iteration`` (``None`` for ``None``)."""
    return None if iteration is None else curve.queries[curve.iters.index(iteration)]


def _lasso_verdict(study: LassoStudy, config: ZOProxConfig) -> dict[str, Any]:
    """Claim (a) in proximal steps, the paper's unit, with the oracle queries spent to the same KL level beside it
    (the paper claims iterations only; the queries are reported, not judged), and claim (c)."""
    zod, rgo = study.curves["zod"], study.curves["rgo"]
    it_zod = zod.first_below(config.kl_threshold)
    it_rgo = rgo.first_below(config.kl_threshold)
    rgo_steps = it_rgo if it_rgo is not None else config.rgo_iters
    ratio = rgo_steps / it_zod if it_zod else None  # undefined when the sampler never reached the threshold
    q_zod = _queries_at(zod, it_zod)
    # RGO that never reached the level: the queries of its whole run are a lower bound
    q_rgo = _queries_at(rgo, it_rgo) if it_rgo is not None else rgo.queries[-1]
    mean_int = zod.mean_kl()
    mean_ind = study.curves["zod_independent"].mean_kl()
    return {
        "zod_iters_to_threshold": it_zod,
        "rgo_iters_to_threshold": it_rgo,
        "rgo_reached_threshold": it_rgo is not None,
        "iteration_ratio": ratio,
        "iteration_ratio_is_lower_bound": it_rgo is None,
        "zod_queries_to_threshold": q_zod,
        "rgo_queries_to_threshold": q_rgo if it_rgo is not None else None,
        "rgo_queries_run": rgo.queries[-1],
        # RGO queries / ZOD-PS queries to the level: < 1 means ZOD-PS spent more oracle queries
        "query_ratio": q_rgo / q_zod if q_zod else None,
        "query_ratio_is_lower_bound": it_rgo is None,
        "zod_rounds_to_threshold": it_zod * config.diffusion_steps if it_zod is not None else None,
        "held_fewer_iterations": ratio is not None and ratio >= config.min_iteration_ratio,
        "mean_kl_interacting": mean_int,
        "mean_kl_independent": mean_ind,
        "held_interaction": mean_int < mean_ind,
    }


def _tori_verdict(study: ToriStudy, config: ZOProxConfig) -> dict[str, Any]:
    # the sampler's T2 share fluctuates from iteration to iteration: average it over the last quarter of the run
    late = [f[1] for it, f in zip(study.iters, study.fractions["zod"], strict=True) if it >= 0.75 * study.iters[-1]]
    zod_t2 = float(sum(late) / len(late))
    io_t2 = max(f[1] for f in study.fractions["in_and_out"])
    return {
        "zod_t2_last_quarter": zod_t2,
        "zod_t2_final": study.fractions["zod"][-1][1],
        "zod_t1_final": study.fractions["zod"][-1][0],
        "in_and_out_t2_max": io_t2,
        "in_and_out_t1_final": study.fractions["in_and_out"][-1][0],
        "t2_mass": study.t2_mass,
        # how much of the far torus's true mass pi(T2) = 3/13 the sampler recovers (1 = exact)
        "zod_t2_share_of_true_mass": zod_t2 / study.t2_mass,
        "held_reaches_both": zod_t2 >= config.t2_min_fraction and io_t2 < config.t2_min_fraction,
    }


def _budget_verdict(results: dict[str, BudgetResult], tol: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for target, res in results.items():
        zod = res.final["zod"]["w2"]
        out[target] = {
            "zod_w2": zod,
            **{f"{b}_w2": res.final[b]["w2"] for b in ("rgo", "rwm", "zod_independent")},
            "vs_rgo": zod <= (1 + tol) * res.final["rgo"]["w2"],
            "vs_rwm": zod <= (1 + tol) * res.final["rwm"]["w2"],
        }
    out["held_all"] = all(v["vs_rgo"] and v["vs_rwm"] for v in out.values() if isinstance(v, dict))
    return out


def _budget_metrics(res: BudgetResult) -> dict[str, Any]:
    return {
        "budget_queries": res.budget,
        "spent": res.spent,
        "budget_points": res.points,
        "pooled_queries": res.pooled_queries,
        "final": res.final,
        "exact_sample_floor": res.floor,
        "curves": {name: {"queries": c.queries, "w2": c.w2, "mmd": c.mmd} for name, c in res.curves.items()},
    }


def _lasso_unit(config: ZOProxConfig, ctx: RunContext) -> LassoStudy:
    return lasso_study(
        gaussian_lasso_mixture(torch.Generator().manual_seed(config.seed)),
        seed=config.seed,
        n_particles=config.lasso_particles,
        step_size=config.lasso_step,
        n_mc=config.lasso_n_mc,
        n_diffusion_steps=config.diffusion_steps,
        n_iters=config.lasso_iters,
        rgo_step=config.rgo_step,
        rgo_weak_convexity=config.rgo_weak_convexity,
        rgo_iters=config.rgo_iters,
        rgo_thin=config.rgo_thin,
        window=config.kl_window,
        reference_size=config.reference_size,
        progress=ctx.progress,
        dtype=getattr(torch, config.dtype),
    )


def _tori_unit(config: ZOProxConfig, ctx: RunContext) -> ToriStudy:
    return tori_study(
        TwoTori(),
        seed=config.seed,
        n_particles=config.tori_particles,
        step_size=config.tori_step,
        n_mc=config.tori_n_mc,
        n_diffusion_steps=config.diffusion_steps,
        sigma2_min=config.tori_sigma2_min,
        n_iters=config.tori_iters,
        max_trials=config.tori_max_trials,
        record_every=max(1, config.tori_iters // 50),
        progress=ctx.progress,
        dtype=getattr(torch, config.dtype),
    )


def _budget_unit(
    spec: BudgetTarget | Callable[[], BudgetTarget], config: ZOProxConfig, ctx: RunContext
) -> BudgetResult:
    return budget_study(
        spec() if callable(spec) else spec,
        seed=config.seed,
        n_mc=config.budget_n_mc,
        n_diffusion_steps=config.diffusion_steps,
        zod_iters=config.budget_iters,
        pool_points=config.pool_points,
        curve_points=config.curve_points,
        progress=ctx.progress,
    )


def _speedup_unit(config: ZOProxConfig) -> SpeedupStudy:
    lasso_target = gaussian_lasso_mixture(torch.Generator().manual_seed(config.seed))
    x0 = torch.randn(
        config.lasso_particles,
        lasso_target.dim,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(config.seed + 70),
    )
    return speedup_study(
        lasso_target,
        x0,
        step_size=config.lasso_step,
        n_mc=config.lasso_n_mc,
        n_diffusion_steps=config.diffusion_steps,
        n_iters=config.speedup_iters,
        seed=config.seed,
    )


THRESHOLDS = ("kl_threshold", "min_iteration_ratio", "t2_min_fraction", "accuracy_tolerance")
"""The config fields the verdicts compare against (listed with their sources in ``evidence["thresholds"]``)."""


def _lasso_summary(v: dict[str, Any], config: ZOProxConfig) -> str:
    """The Gaussian–Lasso part of the measurement line, with "not reached" instead of missing numbers."""
    zod_it, rgo_it = v["zod_iters_to_threshold"], v["rgo_iters_to_threshold"]
    zod = (
        f"after {zod_it} ZOD-PS iterations"
        if zod_it is not None
        else f"not reached in {config.lasso_iters} ZOD-PS iterations"
    )
    rgo = f"{rgo_it} RGO steps" if rgo_it is not None else f"not reached in {config.rgo_iters} RGO steps"
    if v["iteration_ratio"] is None:
        ratio = "ratio undefined"
    elif v["iteration_ratio_is_lower_bound"]:
        ratio = f"ratio at least {v['iteration_ratio']:.1f}"
    else:
        ratio = f"ratio {v['iteration_ratio']:.1f}"
    if v["query_ratio"] is None:
        queries = "queries: ZOD-PS never reached the level"
    else:
        bound = "at least " if v["query_ratio_is_lower_bound"] else ""
        rgo_q = v["rgo_queries_to_threshold"] or v["rgo_queries_run"]
        queries = (
            f"queries {v['zod_queries_to_threshold']:.2e} ZOD-PS vs {bound}{rgo_q:.2e} RGO"
            f" (RGO/ZOD-PS {bound}{v['query_ratio']:.2f})"
        )
    return f"Gaussian-Lasso: KL<={config.kl_threshold} {zod} vs {rgo} ({ratio}; {queries})"


def run(config: ZOProxConfig, ctx: RunContext) -> Outcome:
    """Run the four studies (one unit of work each, the equal-budget study one per target), register the plots and
    judge the claims."""
    ctx.log("§5.1 Gaussian–Lasso mixture")
    lasso = ctx.unit("lasso", lambda: _lasso_unit(config, ctx))
    ctx.save_plot(plot_lasso(lasso, config.kl_threshold), "lasso_kl.png")

    ctx.log("§5.2 two tori")
    tori = ctx.unit("tori", lambda: _tori_unit(config, ctx))
    ctx.save_plot(plot_tori(tori), "tori.png")

    ctx.log("equal-budget comparison")
    # every target's spec draws from this one generator in the order of BUDGET_TARGETS; the cheap ones are built
    # here, the logistic one (a MALA reference run) inside its unit, after all others, so that skipping it on
    # resume changes no draw of the others
    gen = torch.Generator().manual_seed(config.seed + 60)
    budget: dict[str, BudgetResult] = {}
    modes = None
    for name in (t for t in BUDGET_TARGETS if t in config.budget_targets):
        if name == "logistic":
            spec: BudgetTarget | Callable[[], BudgetTarget] = functools.partial(
                _budget_spec, "logistic", config, gen, ctx
            )
        else:
            spec = _budget_spec(name, config, gen, ctx)
            modes = spec.modes if name == "mixture" else modes
        budget[name] = ctx.unit(f"budget-{name}", lambda spec=spec: _budget_unit(spec, config, ctx))
    if budget:
        ctx.save_plot(plot_budget(budget, "queries"), "budget_w2_vs_queries.png")
        ctx.save_plot(plot_budget(budget, "wall"), "budget_w2_vs_wallclock.png")
    if "mixture" in budget and modes is not None:
        ctx.save_plot(plot_scatter(budget["mixture"], modes), "mixture_scatter.png")

    ctx.log("batched vs per-particle evaluation")
    speed = ctx.unit("speedup", lambda: _speedup_unit(config))

    v_lasso = _lasso_verdict(lasso, config)
    v_tori = _tori_verdict(tori, config)
    v_budget = _budget_verdict(budget, config.accuracy_tolerance)
    held = bool(v_lasso["held_fewer_iterations"] and v_lasso["held_interaction"])
    n_targets = len(budget)
    wins_rgo = sum(bool(v["vs_rgo"]) for v in v_budget.values() if isinstance(v, dict))
    wins_rwm = sum(bool(v["vs_rwm"]) for v in v_budget.values() if isinstance(v, dict))
    measurement = (
        f"{_lasso_summary(v_lasso, config)}; mean KL interacting {v_lasso['mean_kl_interacting']:.3f} vs N=1 "
        f"{v_lasso['mean_kl_independent']:.3f}; tori T2 share {v_tori['zod_t2_last_quarter']:.3f} (true mass "
        f"{v_tori['t2_mass']:.3f}, {100 * v_tori['zod_t2_share_of_true_mass']:.0f}% of it) vs In-and-Out "
        f"{v_tori['in_and_out_t2_max']:.3f}; equal query budget W2 at least as good as RGO on {wins_rgo}/{n_targets}, "
        f"RWM on {wins_rwm}/{n_targets} targets"
    )
    metrics = {
        "lasso": {
            "kl_floor": lasso.kl_floor,
            "curves": {name: {"iters": c.iters, "queries": c.queries, "kl": c.kl} for name, c in lasso.curves.items()},
            "ess_mean": lasso.ess_mean,
            "rgo_trials_mean": lasso.rgo_trials_mean,
            "rgo_failures": lasso.rgo_failures,
            **v_lasso,
        },
        "tori": {
            "iters": tori.iters,
            "fractions": tori.fractions,
            "queries_along": tori.queries_along,
            "queries": tori.queries,
            "in_and_out_failures": tori.in_and_out_failures,
            **v_tori,
        },
        "budget": {name: _budget_metrics(res) for name, res in budget.items()},
        "budget_verdict": v_budget,
        "speedup": {"same_samples": speed.same_samples, "iters_timed": config.speedup_iters},
    }
    evidence = {
        "kl_threshold": config.kl_threshold,
        "kl_floor": lasso.kl_floor,
        "zod_iters_to_threshold": v_lasso["zod_iters_to_threshold"],
        "rgo_iters_to_threshold": v_lasso["rgo_iters_to_threshold"],
        "rgo_iters_run": config.rgo_iters,
        "iteration_ratio": v_lasso["iteration_ratio"],
        "iteration_ratio_is_lower_bound": v_lasso["iteration_ratio_is_lower_bound"],
        "min_iteration_ratio": config.min_iteration_ratio,
        # the same KL level counted in oracle queries, beside the iterations (reported, not judged: the paper
        # claims iterations only)
        "zod_queries_to_threshold": v_lasso["zod_queries_to_threshold"],
        "rgo_queries_to_threshold": v_lasso["rgo_queries_to_threshold"],
        "rgo_queries_run": v_lasso["rgo_queries_run"],
        "query_ratio_rgo_over_zod": v_lasso["query_ratio"],
        "query_ratio_is_lower_bound": v_lasso["query_ratio_is_lower_bound"],
        "zod_rounds_to_threshold": v_lasso["zod_rounds_to_threshold"],
        "mean_kl_interacting": v_lasso["mean_kl_interacting"],
        "mean_kl_independent": v_lasso["mean_kl_independent"],
        "tori_zod_t2_last_quarter": v_tori["zod_t2_last_quarter"],
        "tori_in_and_out_t2_max": v_tori["in_and_out_t2_max"],
        "tori_t2_true_mass": v_tori["t2_mass"],
        "tori_zod_t2_share_of_true_mass": v_tori["zod_t2_share_of_true_mass"],
        "tori_held": v_tori["held_reaches_both"],
        "equal_budget_held_all": v_budget["held_all"],
        "equal_budget_wins_vs_rgo": f"{wins_rgo}/{n_targets}",
        "equal_budget_wins_vs_rwm": f"{wins_rwm}/{n_targets}",
        "thresholds": {name: threshold(config, name) for name in THRESHOLDS},
    }
    notes = (
        "claim_held = (a) fewer iterations (proximal steps) than RGO to the KL level and (c) interacting beats N=1, "
        "the form in which the paper states its claim: it claims iterations, not queries. Queries to the same KL "
        "level and the equal-query-budget study are reported beside it in the evidence, not judged; tori and "
        "speed-up have their own verdicts. M is "
        f"{config.lasso_n_mc} (paper 4000); RGO runs {config.rgo_iters} steps (paper 10000); dtype {config.dtype}."
    )
    timings = {
        "lasso_wall_s": lasso.wall_s,
        "budget_curves_wall_s": {
            name: {sampler: c.wall_s for sampler, c in res.curves.items()} for name, res in budget.items()
        },
        "speedup": {
            "batched_s_per_iter": speed.batched_s,
            "per_particle_s_per_iter": speed.per_particle_s,
            "speedup": speed.speedup,
        },
    }
    return Outcome(
        metrics=metrics, claim_held=held, evidence=evidence, measurement=measurement, notes=notes, timings=timings
    )


EXPERIMENT = Experiment(config_cls=ZOProxConfig, run=run)
