"""Zeroth-Order Diffusive Proximal Sampler (ZOD-PS), Algorithm 1 of "Alternating Diffusion for Proximal Sampling
with Zeroth Order Queries" (Hirohane Takagi, Atsushi Nitanda; ICLR 2026; arXiv 2603.19633; OpenReview NjjRuJuMTd).

The proximal sampler alternates a forward heat flow and its time reversal. The forward step is exact (add Gaussian
noise); the backward step, classically a restricted Gaussian oracle implemented by rejection sampling, is here a
direct Euler–Maruyama simulation of the reverse heat-flow SDE (Eq. 5) whose score is replaced by the Monte Carlo
score of a particle surrogate (Eqs. 9–13, :mod:`iclr26.zoprox.estimator`). Only values of f are queried, the number
of queries per iteration is fixed (N·M·T), and any step size h > 0 is allowed.

One iteration k (N interacting particles X_k = {x_i}):

1. Forward: y_j = x_j + √h ξ_j, j = 1..N (the mixture q̂_{k+½} of Eq. 10).
2. Inverse weights log w_j = −log q̂_{k+½}(y_j | X_k) (Eq. 9).
3. Backward start: z_T = x_i + √h ξ'_i with fresh noise (an exact draw of q̂_{k+½} around each particle).
4. For t = T, …, 1 with σ_t² on ``linspace(σ²_min, h, T+1)``:
   a. draw M samples x₀ ~ g_N(· | z) per particle (Eq. 13), evaluate f at all N·M of them in one batched call;
   b. ŝ_t(z) = Σ_l softmax(−f)_l (x₀⁽ˡ⁾ − z) / σ_t² (Eq. 11);
   c. z ← z + (σ_t² − σ_{t−1}²) ŝ_t(z) + √(σ_t² − σ_{t−1}²) ε (Euler–Maruyama on Eq. 5).
5. x_{k+1, i} = z_0.

``interacting=False`` is the paper's ablation "N = 1 run as N independent chains": particle i's surrogate uses only
its own y_i (the mixture has one component, so there are no weights and no interaction).

Shape glossary: ``N`` particles, ``M`` Monte Carlo samples per particle, ``d`` dimension, ``T`` sub-steps, ``K``
iterations.

Deviations: none in the algorithm. Choices the paper leaves open follow the authors' code (github.com/htkg/zod-ps,
``zod_ps.py``): the equally spaced variance schedule, fresh noise for z_T, sampling the mixture component per
Monte Carlo sample. We work in float64 (the authors use float32).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from iclr26.zoprox.estimator import (
    draw_own_posterior,
    draw_posterior,
    log_inverse_weights,
    mc_score,
    sigma2_schedule,
)
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.trace import Progress, SampleResult, check_count, check_positive, iterations, start_run


class BackwardStep(NamedTuple):
    """The outcome of one backward step.

    Attributes:
        x: ``(N, d)`` the new particles X_{k+1} = z_0.
        ess: ``(T, N)`` effective sample size of the self-normalised weights at each sub-step (index 0 is t = T).
    """

    x: torch.Tensor
    ess: torch.Tensor


def backward_step(
    oracle: PotentialOracle,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    step_size: float,
    schedule: torch.Tensor,
    n_mc: int,
    interacting: bool = True,
    generator: torch.Generator | None = None,
) -> BackwardStep:
    """Steps 2–5 of Algorithm 1: simulate the reverse heat flow from around ``x`` with the surrogate score.

    Args:
        oracle: the potential f.
        x: ``(N, d)`` particles X_k.
        y: ``(N, d)`` forward samples Y_{k+½}.
        step_size: h > 0.
        schedule: ``(T + 1,)`` noise levels from :func:`~iclr26.zoprox.estimator.sigma2_schedule`.
        n_mc: M Monte Carlo samples per particle and sub-step.
        interacting: use all N components (the method) or only the particle's own (the N = 1 ablation).
        generator: torch random generator.

    Returns:
        :class:`BackwardStep` with the new particles and the effective sample sizes of the weights.
    """
    n, d = x.shape
    h = step_size
    # Step 2, Eq. (9): log w_j = −log q̂_{k+½}(y_j | X_k)
    log_w = log_inverse_weights(y, x, h) if interacting else None
    # Step 3: z_T = x_i + √h ξ'_i
    z = x + math.sqrt(h) * torch.randn(x.shape, dtype=x.dtype, device=x.device, generator=generator)
    ess = []
    for t in range(schedule.shape[0] - 1, 0, -1):
        s2, s2_prev = float(schedule[t]), float(schedule[t - 1])
        if interacting:
            # Step 4a, Eq. (13): x₀ ~ Σ_j π_j(z) N(m_j(z), σ̄² I)
            x0 = draw_posterior(z, y, log_w, h, s2, n_mc, generator)  # (N, M, d)
        else:
            # Step 4a with one component (the N = 1 ablation): x₀ ~ N(m_i(z_i), σ̄² I)
            x0 = draw_own_posterior(z, y, h, s2, n_mc, generator)  # (N, M, d)
        f0 = oracle(x0.reshape(n * n_mc, d)).reshape(n, n_mc)
        # Step 4b, Eq. (11)
        est = mc_score(z, x0, f0, s2)
        dt = s2 - s2_prev
        # Step 4c, Euler–Maruyama on Eq. (5): z ← z + Δσ² ŝ + √Δσ² ε
        eps = torch.randn(z.shape, dtype=z.dtype, device=z.device, generator=generator)
        z = z + dt * est.score + math.sqrt(dt) * eps
        ess.append(est.ess)
    # after the T sub-steps (σ_T² = h down to σ_0²) z_0 is the new particle x_{k+1,i}
    return BackwardStep(x=z, ess=torch.stack(ess))


def sample(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    n_iters: int,
    step_size: float,
    n_mc: int,
    *,
    n_diffusion_steps: int = 10,
    sigma2_min: float = 0.0,
    interacting: bool = True,
    generator: torch.Generator | None = None,
    dtype: torch.dtype | None = torch.float64,
    record_every: int = 1,
    progress: Progress | None = None,
) -> SampleResult:
    """Run the zeroth-order diffusive proximal sampler (Algorithm 1) on N particles.

    Example::

        f = lambda x: 0.5 * (x ** 2).sum(-1)                    # standard Gaussian
        out = sample(f, torch.randn(100, 2), n_iters=50, step_size=0.5, n_mc=200)
        out.samples, out.n_evals                                 # (100, 2), 50 * 10 * 100 * 200

    Args:
        potential: f as a :class:`~iclr26.zoprox.oracle.PotentialOracle` or a vectorised torch callable
            ``(n, d) -> (n,)`` (wrap a NumPy function with ``PotentialOracle(fn, backend="numpy")``).
        x0: ``(N, d)`` initial particles.
        n_iters: K outer iterations.
        step_size: h > 0, the proximal step (paper: 1/10 on the Gaussian–Lasso mixture, 1 on the tori).
        n_mc: M Monte Carlo samples per particle and sub-step (paper: 4000 and 300).
        n_diffusion_steps: T Euler–Maruyama sub-steps per backward step (paper: 10).
        sigma2_min: σ²_min, the last noise level, in [0, h) (paper's code: 0 and 0.01).
        interacting: ``False`` runs the N = 1 ablation on every particle independently.
        generator: torch random generator (``None``: torch's global generator).
        dtype: computation dtype (default float64; ``None`` keeps ``x0``'s).
        record_every: snapshot the particles every this many iterations, counted back from the last one.
        progress: optional wrapper of the iteration range, e.g. ``tqdm``, to stream progress.

    Returns:
        :class:`~iclr26.zoprox.trace.SampleResult`; ``diagnostics`` holds per-iteration ``ess_mean`` and
        ``ess_min`` of the self-normalised weights (over particles and sub-steps).

    Raises:
        ValueError: naming the argument for η ≤ 0, counts < 1, σ²_min outside [0, h), bad ``x0``, or a potential
            that returns the wrong shape, NaN or inf.
    """
    oracle, x, rec = start_run(potential, x0, n_iters=n_iters, dtype=dtype, record_every=record_every)
    check_positive("step_size", step_size)
    check_count("n_mc", n_mc)
    check_count("n_diffusion_steps", n_diffusion_steps)
    schedule = sigma2_schedule(step_size, n_diffusion_steps, sigma2_min, dtype=x.dtype, device=x.device)
    rec.record(0, x)
    for k in iterations(n_iters, progress):
        # Step 1: forward heat flow y_j = x_j + √h ξ_j
        y = x + math.sqrt(step_size) * torch.randn(x.shape, dtype=x.dtype, device=x.device, generator=generator)
        x, ess = backward_step(
            oracle,
            x,
            y,
            step_size=step_size,
            schedule=schedule,
            n_mc=n_mc,
            interacting=interacting,
            generator=generator,
        )
        rec.add(ess_mean=ess.mean(), ess_min=ess.min())
        rec.record(k, x)
    return rec.result(x, n_iters)
