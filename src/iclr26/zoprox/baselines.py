"""The samplers the paper compares against, on the same counted potential oracle as the zeroth-order sampler.

* :func:`proximal_rgo` — the proximal sampler whose backward step (the restricted Gaussian oracle, RGO) is drawn by
  approximate rejection sampling, Liang & Chen (2023, TMLR, "A Proximal Algorithm for Sampling"), Algorithm 2 with
  α = 1; the paper's baseline on the Gaussian–Lasso mixture (h = 1/(L₁ d) = 1/135 there). First order.
* :func:`in_and_out` — the proximal sampler whose backward step is exact rejection from N(y, hI) with acceptance
  exp(−(f − f_lower)); with a membership potential (f = 0 inside, large outside) and ``f_lower = 0`` it is
  In-and-Out (Kook, Vempala & Zhang, 2024), the paper's baseline on the tori. Zeroth order.
* :func:`random_walk_metropolis` (zeroth order), :func:`ula` and :func:`mala` (first order, reference).

All are batched over independent chains, one chain per row of ``x0``, and return
:class:`~iclr26.zoprox.trace.SampleResult`. Rejection samplers have a random cost per iteration; ``max_queries`` stops
them once a budget of oracle queries (potential + gradient evaluations) is spent (the iteration that crosses it is
completed).

One iteration of the two proximal samplers (step size h, chains x):

1. forward: y = x + √h ξ;
2. backward: draw x' from π_{X|Y=y} ∝ exp(−f(x) − ‖x − y‖² / 2h) by rejection, at most ``max_trials`` proposals per
   chain; a chain whose proposals are all rejected keeps its x (counted in the ``failures`` diagnostic).

Shape glossary: ``N`` chains, ``d`` dimension, ``P`` chains still waiting for an acceptance.

Deviations: Liang & Chen find the proximal point w with L-BFGS-B (the authors' baseline code does the same); we run
``inner_steps`` batched gradient steps of size h/2 from a warm start, which makes the cost per iteration
deterministic up to the rejections. The authors' In-and-Out drops a chain that exceeds its trial cap; we keep its
previous state so that every sampler returns N particles.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.trace import Progress, SampleResult, check_count, check_positive, iterations, start_run

LogAccept = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _randn(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.randn(like.shape, dtype=like.dtype, device=like.device, generator=generator)


def _log_uniform(n: int, like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.rand(n, dtype=like.dtype, device=like.device, generator=generator).log()


def _rejection(
    oracle: PotentialOracle,
    mean: torch.Tensor,
    std: float,
    log_accept: LogAccept,
    *,
    max_trials: int,
    generator: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batched rejection sampling from N(mean_i, std² I) with acceptance exp(log_accept), per chain.

    Args:
        oracle: the potential (one evaluation per proposal).
        mean: ``(N, d)`` proposal means.
        std: proposal standard deviation.
        log_accept: ``(idx (P,), proposals (P, d), f (P,)) -> (P,)`` log acceptance probabilities (clamped at 0).
        max_trials: proposals per chain before giving up.
        generator: torch random generator.

    Returns:
        ``(samples (N, d), accepted (N,) bool, trials (N,))``; rows not accepted hold zeros.
    """
    n = mean.shape[0]
    out = torch.zeros_like(mean)
    accepted = torch.zeros(n, dtype=torch.bool, device=mean.device)
    trials = torch.zeros(n, dtype=torch.long, device=mean.device)
    for _ in range(max_trials):
        idx = (~accepted).nonzero().squeeze(1)  # (P,)
        if idx.numel() == 0:
            break
        prop = mean[idx] + std * _randn(mean[idx], generator)  # (P, d)
        f = oracle(prop)
        trials[idx] += 1
        # accept w.p. min(1, e^{log α}); the trial count per chain is random, unlike the diffusive sampler's fixed cost
        ok = _log_uniform(idx.numel(), mean, generator) <= log_accept(idx, prop, f).clamp(max=0.0)
        out[idx[ok]] = prop[ok]
        accepted[idx[ok]] = True
    return out, accepted, trials


def in_and_out(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    step_size: float,
    *,
    f_lower: float = 0.0,
    max_trials: int = 1000,
    max_queries: int | None = None,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Proximal sampler with the exact zeroth-order rejection RGO (In-and-Out for membership potentials).

    Backward step: propose x' ~ N(y, hI), accept with probability exp(−(f(x') − f_lower)); the accepted x' is an
    exact draw of π_{X|Y=y} when f ≥ f_lower everywhere.

    Args:
        potential: f (oracle or vectorised torch callable).
        x0: ``(N, d)`` initial chains.
        n_iters: iterations (an upper bound when ``max_queries`` is set).
        step_size: h > 0.
        f_lower: a lower bound of f (0 for a membership potential).
        max_trials: proposals per chain and iteration before the chain keeps its state.
        max_queries: stop after the iteration in which the queries (potential + gradient evaluations) reach this.
        generator: torch random generator.
        dtype: computation dtype (default float64).
        record_every: snapshot every this many iterations, counted back from the last one.
        progress: optional iteration wrapper (tqdm).

    Returns:
        :class:`SampleResult` with diagnostics ``trials_mean``, ``trials_max``, ``failures``.

    Raises:
        ValueError: for bad arguments, or if f < f_lower at a proposal (``f_lower`` is not a lower bound).
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("step_size", step_size)
    check_count("max_trials", max_trials)
    if not math.isfinite(f_lower):
        raise ValueError(f"f_lower: must be a finite lower bound of the potential, got {f_lower}")
    sd = math.sqrt(step_size)

    def log_accept(idx: torch.Tensor, prop: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        if (f < f_lower - 1e-9 * max(1.0, abs(f_lower))).any():
            raise ValueError(f"f_lower: {f_lower} is not a lower bound of the potential (found f = {f.min().item()})")
        # exact zeroth-order RGO: x' ~ N(y, hI) kept w.p. exp(−(f(x') − f_lower)) is an exact draw of π_{X|Y=y}
        return -(f - f_lower)

    rec.record(0, x)
    k = 0
    for k in iterations(n_iters, progress):
        y = x + sd * _randn(x, generator)
        new, ok, trials = _rejection(oracle, y, sd, log_accept, max_trials=max_trials, generator=generator)
        x = torch.where(ok[:, None], new, x)
        rec.add(trials_mean=trials.double().mean(), trials_max=trials.max(), failures=(~ok).sum())
        rec.record(k, x)
        if max_queries is not None and sum(rec.counts()[:2]) >= max_queries:
            break
    return rec.result(x, k)


def proximal_rgo(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    step_size: float,
    *,
    weak_convexity: float,
    inner_steps: int = 10,
    max_trials: int = 1000,
    max_queries: int | None = None,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Proximal sampler with Liang & Chen's rejection-sampling RGO (Algorithm 2, α = 1, δ term zero).

    Backward step for each chain, with η = h and M = ``weak_convexity``:

    1. w ≈ argmin_x f(x) + ‖x − y‖²/(2η) by ``inner_steps`` gradient steps of size η/2 (warm-started);
    2. g = ∇f(w); proposal N(μ, η/(1 − ηM) I), μ = (y − η (g + M w)) / (1 − ηM), the normalised exp(−h₁);
    3. accept X with probability exp(−f(X) + f(w) + ⟨g, X − w⟩ − (M/2)‖X − w‖²) (= exp(−f_η^y(X) + h₁(X)),
       clamped at 1 where the lower bound h₁ ≤ f_η^y fails — the "approximate" rejection of Liang & Chen).

    Args:
        potential: f with gradients (oracle or torch callable; autograd is used without ``grad_fn``).
        x0: ``(N, d)`` initial chains.
        n_iters: iterations (an upper bound when ``max_queries`` is set).
        step_size: η > 0 with η·M < 1 (paper: 1/135 = 1/(L₁ d), L₁ = 27, d = 5).
        weak_convexity: M ≥ 0, the semi-smoothness constant of the lower bound (paper: 27).
        inner_steps: gradient steps for the proximal point (each a gradient query per chain).
        max_trials: proposals per chain and iteration before the chain keeps its state.
        max_queries: stop after the iteration in which the queries (potential + gradient evaluations) reach this.
        generator: torch random generator.
        dtype: computation dtype (default float64).
        record_every: snapshot every this many iterations, counted back from the last one.
        progress: optional iteration wrapper (tqdm).

    Returns:
        :class:`SampleResult` with diagnostics ``trials_mean``, ``trials_max``, ``failures``.

    Raises:
        ValueError: naming the argument for η ≤ 0, M < 0, η·M ≥ 1 or bad counts.
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("step_size", step_size)
    check_count("inner_steps", inner_steps, 0)
    check_count("max_trials", max_trials)
    eta, m = step_size, weak_convexity
    if not (m >= 0 and math.isfinite(m)):
        raise ValueError(f"weak_convexity: must be a finite number >= 0, got {m}")
    if eta * m >= 1:
        raise ValueError(f"step_size: Liang & Chen's RGO needs step_size * weak_convexity < 1, got {eta * m:.3g}")
    std = math.sqrt(eta / (1 - eta * m))
    rec.record(0, x)
    w = None
    k = 0
    for k in iterations(n_iters, progress):
        y = x + math.sqrt(eta) * _randn(x, generator)
        # step 1: proximal point of f + ‖· − y‖²/(2η), warm-started at the previous w
        w = y.clone() if w is None else w
        for _ in range(inner_steps):
            w = w - 0.5 * eta * (oracle.grad(w) + (w - y) / eta)
        f_w, g = oracle.value_and_grad(w)
        # step 2: proposal mean μ = (y − η (g + M w)) / (1 − ηM)
        mu = (y - eta * (g + m * w)) / (1 - eta * m)

        log_accept = liang_chen_log_accept(w, f_w, g, m)
        new, ok, trials = _rejection(oracle, mu, std, log_accept, max_trials=max_trials, generator=generator)
        x = torch.where(ok[:, None], new, x)
        rec.add(trials_mean=trials.double().mean(), trials_max=trials.max(), failures=(~ok).sum())
        rec.record(k, x)
        if max_queries is not None and sum(rec.counts()[:2]) >= max_queries:
            break
    return rec.result(x, k)


def liang_chen_log_accept(w: torch.Tensor, f_w: torch.Tensor, g: torch.Tensor, m: float) -> LogAccept:
    """Step 3 of Liang & Chen's RGO for chains ``idx``: log acceptance −f(X) + f(w) + ⟨g, X − w⟩ − (M/2)‖X − w‖²."""

    def log_accept(idx: torch.Tensor, prop: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        dx = prop - w[idx]  # (P, d)
        return -f + f_w[idx] + (g[idx] * dx).sum(-1) - 0.5 * m * dx.square().sum(-1)

    return log_accept


def random_walk_metropolis(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    proposal_std: float,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Random-walk Metropolis: x' = x + s ξ, accepted with probability min(1, exp(f(x) − f(x'))).

    Args:
        potential: f (oracle or vectorised torch callable); one evaluation per chain and step.
        x0: ``(N, d)`` initial chains.
        n_iters: steps.
        proposal_std: s > 0.
        generator: torch random generator.
        dtype: computation dtype (default float64).
        record_every: snapshot every this many steps, counted back from the last one.
        progress: optional iteration wrapper (tqdm).

    Returns:
        :class:`SampleResult` with the diagnostic ``acceptance`` (fraction of chains accepting per step).
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("proposal_std", proposal_std)
    f = oracle(x)
    rec.record(0, x)
    for k in iterations(n_iters, progress):
        prop = x + proposal_std * _randn(x, generator)
        f_prop = oracle(prop)
        # Metropolis: log α = f(x) − f(x')
        ok = _log_uniform(x.shape[0], x, generator) <= f - f_prop
        x = torch.where(ok[:, None], prop, x)
        f = torch.where(ok, f_prop, f)
        rec.add(acceptance=ok.double().mean())
        rec.record(k, x)
    return rec.result(x, n_iters)


def ula(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    step_size: float,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Unadjusted Langevin algorithm: x ← x − η ∇f(x) + √(2η) ξ (one gradient query per chain and step).

    Args:
        potential: f with gradients (oracle or torch callable).
        x0: ``(N, d)`` initial chains.
        n_iters: steps.
        step_size: η > 0.
        generator: torch random generator.
        dtype: computation dtype (default float64).
        record_every: snapshot every this many steps, counted back from the last one.
        progress: optional iteration wrapper (tqdm).

    Returns:
        :class:`SampleResult` (no diagnostics).
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("step_size", step_size)
    rec.record(0, x)
    for k in iterations(n_iters, progress):
        # ULA: Euler–Maruyama step of the Langevin diffusion; no Metropolis correction, so biased at fixed η
        x = x - step_size * oracle.grad(x) + math.sqrt(2 * step_size) * _randn(x, generator)
        rec.record(k, x)
    return rec.result(x, n_iters)


def mala(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    step_size: float,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Metropolis-adjusted Langevin: the ULA proposal with a Metropolis–Hastings correction.

    x' = x − η∇f(x) + √(2η) ξ, accepted with probability min(1, exp(−f(x') + f(x) − ‖x − x' + η∇f(x')‖²/4η
    + ‖x' − x + η∇f(x)‖²/4η)); one first-order query per chain and step.

    Args:
        potential: f with gradients (oracle or torch callable).
        x0: ``(N, d)`` initial chains.
        n_iters: steps.
        step_size: η > 0.
        generator: torch random generator.
        dtype: computation dtype (default float64).
        record_every: snapshot every this many steps, counted back from the last one.
        progress: optional iteration wrapper (tqdm).

    Returns:
        :class:`SampleResult` with the diagnostic ``acceptance``.
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("step_size", step_size)
    f, g = oracle.value_and_grad(x)
    rec.record(0, x)
    for k in iterations(n_iters, progress):
        prop = x - step_size * g + math.sqrt(2 * step_size) * _randn(x, generator)
        f_prop, g_prop = oracle.value_and_grad(prop)
        # log q(x | x') − log q(x' | x) for the Langevin proposal q(b | a) = N(b; a − η∇f(a), 2η I)
        log_q_back = -(x - prop + step_size * g_prop).square().sum(-1) / (4 * step_size)
        log_q_fwd = -(prop - x + step_size * g).square().sum(-1) / (4 * step_size)
        ok = _log_uniform(x.shape[0], x, generator) <= f - f_prop + log_q_back - log_q_fwd
        x = torch.where(ok[:, None], prop, x)
        f = torch.where(ok, f_prop, f)
        g = torch.where(ok[:, None], g_prop, g)
        rec.add(acceptance=ok.double().mean())
        rec.record(k, x)
    return rec.result(x, n_iters)
