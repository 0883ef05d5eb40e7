"""Noisy linear regression, the paper's theory setting (Thm 1 and its normalised-SGD extension).

Model: ``y = ⟨x, w*⟩ + ε`` with ``x ~ N(0, H)``, ``ε ~ N(0, σ²)``; minibatch SGD from ``w₀ = 0`` on the square
loss ``½ (⟨x, w⟩ - y)²``. Work in the eigenbasis of ``H = diag(λ)``; ``e = w - w*``.

Exact expected dynamics (no Monte-Carlo noise). With ``M = E[e eᵀ]`` and the Gaussian fourth moment
``E[x xᵀ A x xᵀ] = 2 H A H + tr(H A) H``, one SGD step with LR η and batch B gives

    M' = (I - ηH) M (I - ηH) + (η²/B) (H M H + tr(H M) H + σ² H),

whose diagonal ``m_i = M_ii`` closes on itself:

    m_i' = (1 - ηλ_i)² m_i + (η²/B) (λ_i² m_i + λ_i Σ_j λ_j m_j + σ² λ_i).

The excess risk is ``R = ½ Σ_i λ_i m_i``. Normalised SGD (the paper's proxy for Adam) divides the step by
``√E‖g‖²`` with ``E‖g‖² = (1 + 1/B) Σ λ_i² m_i + (tr H Σ λ_j m_j + σ² tr H) / B``, i.e. it is SGD with
``η_eff = η / √E‖g‖²``.

A Monte-Carlo simulator (:func:`simulate`) runs SGD or Adam on sampled data for many seeds at once, to check the
exact recursion and to test Adam itself.

Glossary: ``D`` dimension, ``S`` seeds, ``B`` batch, ``K`` phases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import torch

from iclr26.seesaw.schedule import Seesaw

# A run counts as diverged once its risk exceeds this multiple of the starting risk.
_DIVERGED = 1e6


@dataclass(frozen=True)
class LinRegProblem:
    """A noisy linear-regression task in the eigenbasis of its covariance.

    Attributes:
        lam: ``(D,)`` eigenvalues of ``H`` (positive).
        m0: ``(D,)`` initial second moments ``E[(w₀ - w*)_i²]`` (``w*_i²`` averaged over the draw of ``w*``).
        noise_var: σ², the label-noise variance.
    """

    lam: np.ndarray
    m0: np.ndarray
    noise_var: float

    def __post_init__(self) -> None:
        if self.lam.ndim != 1 or self.lam.shape != self.m0.shape:
            raise ValueError(f"lam and m0 must be (D,) arrays of one shape, got {self.lam.shape}, {self.m0.shape}")
        if not np.all(self.lam > 0):
            raise ValueError("lam must be positive (eigenvalues of a covariance)")
        if not np.all(self.m0 >= 0):
            raise ValueError("m0 must be non-negative (second moments)")
        if not self.noise_var >= 0:
            raise ValueError(f"noise_var must be non-negative, got {self.noise_var}")

    @classmethod
    def power_law(
        cls, dim: int, *, exponent: float = 1.5, noise_var: float = 1.0, signal: float = 1.0
    ) -> LinRegProblem:
        """``λ_i ∝ i^{-exponent}`` normalised to ``tr H = 1``; ``w*`` isotropic with ``E‖w*‖² = signal · D``."""
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        lam = np.arange(1, dim + 1, dtype=np.float64) ** -exponent
        return cls(lam / lam.sum(), np.full(dim, float(signal)), float(noise_var))

    def risk(self, m: np.ndarray) -> float:
        """Excess risk ``½ Σ λ_i m_i``."""
        return 0.5 * float(self.lam @ m)


class PhasePlan(NamedTuple):
    """A phase-indexed schedule: phase k runs ``steps[k]`` steps of LR ``lr[k]`` and batch ``batch[k]``.

    Attributes:
        lr: ``(K,)`` learning rates.
        batch: ``(K,)`` batch sizes (real numbers are allowed by the exact recursion).
        steps: ``(K,)`` step counts.
    """

    lr: np.ndarray
    batch: np.ndarray
    steps: np.ndarray


def phase_plan(
    *, eta0: float, batch0: float, lr_decay: float, batch_growth: float, n_phases: int, samples_per_phase: int
) -> PhasePlan:
    """Thm 1's schedule ``(η_k, B_k) = (η₀ a^{-k}, B₀ β^k)``, each phase spending ``samples_per_phase`` samples.

    Steps per phase are ``round(samples_per_phase / B_k)``.

    Raises:
        ValueError: naming the argument, for a non-positive or non-finite ``eta0``, ``batch0``, ``lr_decay`` or
            ``batch_growth``, ``n_phases < 1``, or a phase that would have no step.
    """
    for name, value in (("eta0", eta0), ("batch0", batch0), ("lr_decay", lr_decay), ("batch_growth", batch_growth)):
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"phase_plan {name} must be positive and finite, got {value}")
    if n_phases < 1:
        raise ValueError(f"phase_plan n_phases must be >= 1, got {n_phases}")
    k = np.arange(n_phases, dtype=np.float64)
    # Thm 1's phase-indexed schedule: η_k = η₀ a^{-k}, B_k = B₀ β^k
    lr = eta0 * lr_decay**-k
    batch = batch0 * batch_growth**k
    # equal samples per phase, so a grown batch takes fewer serial steps (the saving Seesaw reports)
    steps = np.rint(samples_per_phase / batch).astype(np.int64)
    if np.any(steps < 1):
        raise ValueError(f"samples_per_phase={samples_per_phase} is below the largest batch {batch.max():.6g}")
    return PhasePlan(lr, batch, steps)


def plan_from_seesaw(schedule: Seesaw) -> PhasePlan:
    """The phases of a :class:`~iclr26.seesaw.Seesaw` schedule (no warmup) as a :class:`PhasePlan`.

    Raises:
        ValueError: if the schedule has a warmup, or a phase's length is not a whole number of its batches.
    """
    if schedule.warmup_tokens:
        raise ValueError("plan_from_seesaw needs a schedule without warmup (the theory has none)")
    phases = schedule.phases()
    ends = [p.start_tokens for p in phases[1:]] + [float(schedule.total_tokens)]
    lr, batch, steps = [], [], []
    for phase, end in zip(phases, ends, strict=True):
        samples = (end - phase.start_tokens) / schedule.tokens_per_sample
        n = samples / phase.batch_size
        if abs(n - round(n)) > 1e-6 * max(1.0, n):
            raise ValueError(
                f"phase {phase.index} spans {samples:.6g} samples, not a whole number of batches of {phase.batch_size}"
            )
        lr.append(phase.lr)
        batch.append(phase.batch_size)
        steps.append(round(n))
    return PhasePlan(np.asarray(lr), np.asarray(batch, dtype=np.float64), np.asarray(steps, dtype=np.int64))


class RiskCurve(NamedTuple):
    """Excess risk along a run.

    Attributes:
        samples: ``(n,)`` samples seen after each recorded step (step 0 = the start).
        risk: ``(n,)`` excess risk there.
        phase_end_risk: ``(K,)`` excess risk at the end of each phase.
        steps: serial optimizer steps.
        diverged: whether the risk became non-finite or exceeded ``1e6`` × its start.
    """

    samples: np.ndarray
    risk: np.ndarray
    phase_end_risk: np.ndarray
    steps: int
    diverged: bool


def expected_sq_grad_norm(problem: LinRegProblem, m: np.ndarray, batch: float) -> float:
    """``E‖g‖²`` of a batch-B minibatch gradient when ``E[e eᵀ]`` has diagonal ``m`` (module docstring)."""
    lam = problem.lam
    # E‖g‖² = tr(E[g gᵀ]) = (1 + 1/B) Σ λ_i² m_i + (tr H · Σ λ_j m_j + σ² tr H) / B
    return (1.0 + 1.0 / batch) * float(lam**2 @ m) + (
        lam.sum() * float(lam @ m) + problem.noise_var * lam.sum()
    ) / batch


def sgd_moment_step(problem: LinRegProblem, m: np.ndarray, eta: float, batch: float) -> np.ndarray:
    """One exact SGD step of the second moments ``m`` (module docstring)."""
    lam = problem.lam
    # m_i' = (1 - ηλ_i)² m_i + (η²/B)(λ_i² m_i + λ_i Σ_j λ_j m_j + σ² λ_i)
    return (1.0 - eta * lam) ** 2 * m + (eta**2 / batch) * (lam**2 * m + lam * float(lam @ m) + problem.noise_var * lam)


def _trace(
    plan: PhasePlan, step: Callable[[float, float], None], risk: Callable[[], float], *, record_every: int = 1
) -> RiskCurve:
    """Drive ``step(η, B)`` through the phases of ``plan``, recording ``risk()`` (shared by both simulators).

    The risk is recorded every ``record_every`` steps and at each phase end; the run stops, flagged as diverged, at
    the first non-finite risk or one above ``_DIVERGED`` × the starting risk (the remaining phase ends are ∞).
    """
    r0 = risk()
    samples, risks, phase_end = [0.0], [r0], []
    seen, diverged = 0.0, False
    for eta, batch, steps in zip(plan.lr, plan.batch, plan.steps, strict=True):
        for i in range(int(steps)):
            step(eta, batch)
            seen += batch
            if (i + 1) % record_every == 0 or i + 1 == steps:
                r = risk()
                samples.append(seen)
                risks.append(r)
                if not math.isfinite(r) or r > _DIVERGED * r0:
                    diverged = True
                    break
        phase_end.append(math.inf if diverged else risks[-1])
        if diverged:
            break
    phase_end += [math.inf] * (len(plan.lr) - len(phase_end))
    return RiskCurve(np.asarray(samples), np.asarray(risks), np.asarray(phase_end), int(plan.steps.sum()), diverged)


def exact_risk(problem: LinRegProblem, plan: PhasePlan, *, normalized: bool = False) -> RiskCurve:
    """Iterate the exact second-moment recursion of SGD (or normalised SGD) through ``plan``.

    Args:
        problem: the regression task.
        plan: the phase schedule.
        normalized: divide each step's LR by ``√E‖g‖²`` (normalised SGD, the paper's Adam proxy).

    Returns:
        The :class:`RiskCurve`, recorded after every step.
    """
    m = problem.m0.astype(np.float64).copy()

    def step(eta: float, batch: float) -> None:
        nonlocal m
        # NSGD: η_eff = η / √E‖g‖² (module docstring)
        step_eta = eta / math.sqrt(expected_sq_grad_norm(problem, m, batch)) if normalized else eta
        m = sgd_moment_step(problem, m, step_eta, batch)

    return _trace(plan, step, lambda: problem.risk(m))


def simulate(
    problem: LinRegProblem,
    plan: PhasePlan,
    *,
    optimizer: Literal["sgd", "adam"],
    n_seeds: int,
    generator: torch.Generator,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    record_every: int = 1,
) -> RiskCurve:
    """Monte-Carlo run of ``optimizer`` on sampled data, ``n_seeds`` independent runs at once (float64).

    Each seed draws its own ``w* ~ N(0, diag(m0))``; the curve is the seed-mean excess risk. Adam is the standard
    bias-corrected update applied per coordinate, so the seeds stay independent.

    Args:
        problem: the regression task.
        plan: the phase schedule (integer batch sizes).
        optimizer: ``"sgd"`` or ``"adam"``.
        n_seeds: independent runs averaged (>= 1).
        generator: source of all randomness; the simulation runs on its device.
        betas: Adam's (β1, β2), each in [0, 1).
        eps: Adam's ε.
        record_every: record the risk every this many steps (and at every phase end; >= 1).

    Returns:
        The seed-mean :class:`RiskCurve`.

    Raises:
        ValueError: naming the argument, for a fractional batch size, an unknown optimizer, ``n_seeds`` or
            ``record_every`` below 1, or betas outside [0, 1).
    """
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    if np.any(plan.batch != np.rint(plan.batch)):
        raise ValueError(f"simulate needs whole batch sizes in plan.batch, got {plan.batch}")
    if n_seeds < 1:
        raise ValueError(f"simulate n_seeds must be >= 1, got {n_seeds}")
    if record_every < 1:
        raise ValueError(f"simulate record_every must be >= 1, got {record_every}")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"simulate betas must lie in [0, 1), got {betas}")
    device = generator.device  # every draw and the state on the generator's device (a GPU runs the seeds at once)
    lam = torch.as_tensor(problem.lam, dtype=torch.float64, device=device)
    sqrt_lam = lam.sqrt()
    D = lam.numel()
    m0 = torch.as_tensor(problem.m0, device=device)
    w_star = torch.randn(n_seeds, D, generator=generator, dtype=torch.float64, device=device) * m0.sqrt()
    w = torch.zeros(n_seeds, D, dtype=torch.float64, device=device)
    m1, m2 = torch.zeros_like(w), torch.zeros_like(w)
    sigma = math.sqrt(problem.noise_var)
    t = 0

    def step(eta: float, batch_f: float) -> None:
        nonlocal t
        batch = int(batch_f)
        x = (
            torch.randn(n_seeds, batch, D, generator=generator, dtype=torch.float64, device=device) * sqrt_lam
        )  # (S, B, D)
        noise = sigma * torch.randn(n_seeds, batch, generator=generator, dtype=torch.float64, device=device)  # (S, B)
        resid = torch.einsum("sbd,sd->sb", x, w - w_star) - noise  # ⟨x, w⟩ - y
        g = torch.einsum("sbd,sb->sd", x, resid) / batch  # (S, D) minibatch gradient
        t += 1
        if optimizer == "sgd":
            w.sub_(eta * g)
            return
        # bias-corrected Adam, the optimizer the paper's normalised-SGD analysis is a proxy for
        m1.mul_(betas[0]).add_(g, alpha=1 - betas[0])
        m2.mul_(betas[1]).addcmul_(g, g, value=1 - betas[1])
        m_hat = m1 / (1 - betas[0] ** t)
        v_hat = m2 / (1 - betas[1] ** t)
        w.sub_(eta * m_hat / (v_hat.sqrt() + eps))

    def risk() -> float:
        # R = ½ Σ λ_i e_i², averaged over seeds
        return 0.5 * float((((w - w_star) ** 2) @ lam).mean())

    return _trace(plan, step, risk, record_every=record_every)


def max_relative_gap(curve: RiskCurve, reference: RiskCurve) -> float:
    """``max_k |R_k - R_k^ref| / R_k^ref`` over phase ends (∞ if either diverged)."""
    a, b = curve.phase_end_risk, reference.phase_end_risk
    if a.shape != b.shape:
        raise ValueError(f"curves have {a.size} and {b.size} phases; compare schedules with equal phases")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.inf
    return float(np.max(np.abs(a - b) / b))
