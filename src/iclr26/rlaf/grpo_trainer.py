"""Training the RLAF policy with GRPO, the solver's decision count as the only reward.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053), the training method, and the official ``train_rlaf.py`` and
``src/training/grpo.py`` (read for the facts, not copied). The GRPO core (advantage, clipped surrogate, loss) is
:mod:`iclr26.common.grpo` (Shao et al. 2024, DeepSeekMath §4.1).

One iteration (:meth:`GRPOTrainer.iteration`):

1. Take a batch of ``B`` training formulas; the current policy, frozen as ``π_old``, gives ``(ρ, μ)`` per variable.
2. Sample ``M`` parameterisations ``W_1..W_M`` per formula (paper: ``M = 40``) and store ``log π_old(W_j | F)``.
3. Run the guided solver on all ``B·M`` (formula, ``W``) pairs in parallel processes; the cost is the number of
   decisions, and a run that hits the conflict budget gets the largest cost among the batch's completed runs
   (official code; ``fill_rule="batch_max"`` keeps this package's earlier rule, the largest of all runs).
4. Advantages per formula: ``Â_j = (r_j − mean(r)) / std(r)`` with ``r = −cost`` (group = the ``M`` samples).
5. ``steps`` Adam steps on ``−[mean_j min(ρ_j Â_j, clip(ρ_j, 1 ± ε) Â_j) − β·mean_F KL(π_θ ‖ π_old)]``, where
   ``ρ_j = π_θ(W_j | F) / π_old(W_j | F)`` is a ratio of whole-formula probabilities, ``ε = 0.2``, and the KL is the
   closed form of the policy's Bernoulli/log-normal distributions; gradient norm clipped at 1; learning rate
   warmed up linearly over the first iterations.

Deviations: the KL reference is ``π_old``, the policy that sampled the iteration's data, as in the official code
(DeepSeekMath's reference is the initial policy); steps use the whole batch rather than minibatches of 20 formulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from iclr26.common.grpo import group_relative_advantages, grpo_loss
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.graph import build_graph
from iclr26.rlaf.policy import RLAFPolicy, policy_kl, policy_log_prob, sample_parameterisations, split_guidance
from iclr26.rlaf.solvers import INJECTION_SUPPORT, SolverPool, SolveTask

__all__ = ["GRPOSettings", "GRPOTrainer", "IterationStats", "costs_of"]


@dataclass(frozen=True)
class GRPOSettings:
    """Hyperparameters of RLAF's GRPO (paper values in brackets).

    Attributes:
        samples_per_formula: ``M``, parameterisations sampled per formula [40].
        steps: gradient steps per iteration [50].
        clip_eps: ratio clip ``ε`` [0.2].
        kl_coef: ``β`` of the KL penalty [0.1 for 3-SAT, 1.1 for colouring].
        lr: Adam learning rate [1e-4 for 3-SAT, 5e-5 for colouring].
        warmup_iterations: linear warm-up of the learning rate, in iterations [5].
        grad_clip: gradient-norm clip [1.0].
        solver: the solver whose decisions are the cost [Glucose with the full mechanism; here ``"cdcl"``].
        max_conflicts: conflict budget per solver call; ``None`` for none [60 s CPU limit in the paper].
        fill_rule: the cost of a budget-out run (:func:`costs_of`) ["completed_max", the official code].
    """

    samples_per_formula: int = 40
    steps: int = 50
    clip_eps: float = 0.2
    kl_coef: float = 0.1
    lr: float = 1e-4
    warmup_iterations: int = 5
    grad_clip: float = 1.0
    solver: str = "cdcl"
    max_conflicts: int | None = None
    fill_rule: Literal["completed_max", "batch_max"] = "completed_max"

    def __post_init__(self) -> None:
        if self.fill_rule not in ("completed_max", "batch_max"):
            raise ValueError(f"fill_rule must be 'completed_max' or 'batch_max', got {self.fill_rule!r}")
        if self.samples_per_formula < 2:
            raise ValueError(
                f"samples_per_formula must be >= 2 (a group needs a spread), got {self.samples_per_formula}"
            )
        checks = (
            ("steps", self.steps >= 1, ">= 1"),
            ("warmup_iterations", self.warmup_iterations >= 0, ">= 0"),
            ("clip_eps", 0 < self.clip_eps < 1, "in (0, 1)"),
            ("kl_coef", self.kl_coef >= 0, ">= 0"),
            ("lr", self.lr > 0, "> 0"),
            ("grad_clip", self.grad_clip > 0, "> 0"),
            ("max_conflicts", self.max_conflicts is None or self.max_conflicts >= 1, ">= 1 or None"),
        )
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name} must be {rule}, got {getattr(self, name)!r}")
        if self.solver not in INJECTION_SUPPORT:
            raise ValueError(f"solver must be one of {', '.join(sorted(INJECTION_SUPPORT))}, got {self.solver!r}")


@dataclass(frozen=True)
class IterationStats:
    """What one GRPO iteration measured.

    Attributes:
        mean_cost: mean decisions over the ``B·M`` sampled runs.
        unknown_fraction: fraction of runs that hit the conflict budget.
        loss: the GRPO loss at the last step.
        kl: mean KL to ``π_old`` at the last step.
        ratio_mean: mean probability ratio at the last step.
        clip_fraction: fraction of samples on the clipped branch at the last step.
        lr: the learning rate used.
    """

    mean_cost: float
    unknown_fraction: float
    loss: float
    kl: float
    ratio_mean: float
    clip_fraction: float
    lr: float


def costs_of(
    results: Sequence,
    *,
    fill: float | None = None,
    rule: Literal["completed_max", "batch_max"] = "completed_max",
) -> np.ndarray:
    """Decisions of each result; budget-limited (``UNKNOWN``) runs get a fill cost.

    Example: decisions [100, 300, 900 (budget-out)] cost [100, 300, 300] under ``completed_max`` and [100, 300, 900]
    under ``batch_max``.

    Args:
        results: :class:`~iclr26.rlaf.result.SolveResult` objects.
        fill: the cost given to ``UNKNOWN`` runs; None: by ``rule``.
        rule: ``"completed_max"`` (the official code): the largest decision count among the runs that finished (if
            none finished, the largest of all); ``"batch_max"``: the largest of all runs, the budget-outs' own
            counts included (this package's earlier rule).
    """
    cost = np.array([r.decisions for r in results], dtype=np.float64)
    unknown = np.array([r.status == "UNKNOWN" for r in results])
    if unknown.any():
        if fill is None:
            finished = cost[~unknown]
            # a budget-out run costs at least as much as the worst completed run, so timeouts are never rewarded
            fill = finished.max() if rule == "completed_max" and finished.size else cost.max()
        cost[unknown] = fill
    return cost


class GRPOTrainer:
    """Runs GRPO iterations on an :class:`RLAFPolicy`.

    Args:
        policy: the policy to train (updated in place).
        settings: GRPO hyperparameters.
        pool: where the solver calls run.
        seed: seed of the sampling generator.
    """

    def __init__(self, policy: RLAFPolicy, settings: GRPOSettings, *, pool: SolverPool, seed: int) -> None:
        self.policy = policy
        self.settings = settings
        self.pool = pool
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=settings.lr)
        warmup = settings.warmup_iterations
        # linear learning-rate warm-up over the first ``warmup_iterations`` iterations (official code)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda it: min(1.0, (it + 1) / warmup) if warmup > 0 else 1.0
        )

    def iteration(self, cnfs: Sequence[CNF]) -> IterationStats:
        """One GRPO iteration on the formulas ``cnfs`` (steps 1-5 of the module docstring)."""
        s = self.settings
        m = s.samples_per_formula
        graph = build_graph(cnfs)
        b = graph.num_formulas
        # step 1: π_old
        self.policy.eval()
        with torch.no_grad():
            y_old = self.policy(graph)  # (V, 2)
        # step 2: M samples per formula and their log-probs under π_old
        samples = sample_parameterisations(y_old, m, sigma=self.policy.sigma, generator=self.generator)
        logp_old = policy_log_prob(
            y_old, samples.polarity, samples.weight, graph.var_batch, b, sigma=self.policy.sigma
        ).T  # (B, M)
        # step 3: solver runs, cost = decisions
        guidance = split_guidance(samples, graph.num_vars)
        tasks = [
            SolveTask(cnf, guidance[i][j], solver=s.solver, max_conflicts=s.max_conflicts)
            for i, cnf in enumerate(cnfs)
            for j in range(m)
        ]
        results = self.pool.map(tasks)
        cost = costs_of(results, rule=s.fill_rule)
        # step 4: Â = group-normalised −cost, one group per formula
        rewards = -torch.as_tensor(cost, dtype=torch.float64).view(b, m)
        advantages = group_relative_advantages(rewards).to(logp_old.dtype)  # (B, M)
        # step 5: clipped-surrogate steps with the KL penalty to π_old
        self.policy.train()
        lr = self.optimizer.param_groups[0]["lr"]
        for _ in range(s.steps):
            y = self.policy(graph)
            logp = policy_log_prob(
                y, samples.polarity, samples.weight, graph.var_batch, b, sigma=self.policy.sigma
            ).T  # (B, M)
            kl = policy_kl(y, y_old, graph.var_batch, b, sigma=self.policy.sigma)  # (B,)
            out = grpo_loss(
                logp.reshape(-1),
                logp_old.reshape(-1),
                advantages.reshape(-1),
                kl=kl.repeat_interleave(m),  # the formula's KL is shared by its M samples (mean over formulas)
                beta=s.kl_coef,
                clip_eps=s.clip_eps,
            )
            self.optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), s.grad_clip)  # official: norm clipped at 1
            self.optimizer.step()
        self.scheduler.step()
        return IterationStats(
            mean_cost=float(cost.mean()),
            unknown_fraction=float(np.mean([r.status == "UNKNOWN" for r in results])),
            loss=float(out.loss.detach()),
            kl=float(out.kl.detach()),
            ratio_mean=float(out.ratio_mean),
            clip_fraction=float(out.clip_fraction),
            lr=lr,
        )
