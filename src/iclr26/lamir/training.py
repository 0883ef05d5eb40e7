"""The training loop: the base agent and one learned abstract model per capacity, from sampled episodes.

Each step (the paper's two-step update, notes §2.4):

1. sample three batches: the base agent's policy mixed with ε_pg uniform exploration (for the policy step); the
   model data's behaviour (ε_model; 1.0 = uniformly random episodes) for the abstraction and dynamics; and, for
   the value targets, episodes of random play up to a random step after which both players follow a random pair
   of transformed policies ``π^χ`` — see the README's Deviations for the last two;
2. step (a): the base agent's NeuRD/RNaD update on the first batch;
3. step (b): τ_θ fitted to the policy change; every model learner's ``L^A + L^S + L^M`` on the second batch and
   ``L^V`` on the third, with the clustering softness γ annealed from ``gamma_start`` to ``gamma_end``.

All models see the same batches, so a capacity sweep compares abstractions of one base agent on one data stream.

Training can stop after any step and continue later: :meth:`TrainingResult.state` captures every learner's
parameters and optimiser moments, the episode generator's state and the curves as plain data (a
:class:`TrainingState`), and ``train_lamir(..., start=state)`` continues from it. No step draws from torch's global
generator (only the networks' initialisation does, before the first step), so training in pieces gives bit-for-bit
the parameters of one uninterrupted call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from iclr26.lamir.features import GameFeatures
from iclr26.lamir.games import GameTree
from iclr26.lamir.learners import (
    AbstractModelLearner,
    BaseAgentLearner,
    BaseAgentSettings,
    ModelSettings,
    annealed_gamma,
)
from iclr26.lamir.trajectories import Trajectories, behaviour_tables, sample_trajectories


@dataclass(frozen=True)
class TrainingState:
    """Training stopped after ``step`` steps, as plain data (CPU tensors, numbers, dicts: picklable).

    Attributes:
        step: steps done so far.
        base: :meth:`BaseAgentLearner.state_dict` of the base agent.
        models: :meth:`AbstractModelLearner.state_dict` of every model learner, in the order given.
        rng: the episode generator's ``bit_generator.state``.
        curves: the curves logged so far, ``{name: [(step, value), ...]}``.
    """

    step: int
    base: dict[str, Any]
    models: tuple[dict[str, Any], ...]
    rng: dict[str, Any]
    curves: dict[str, list[tuple[int, float]]]


@dataclass
class TrainingResult:
    """The trained learners and their curves.

    Attributes:
        base: the base agent (π_θ, critic, τ_θ).
        models: one model learner per capacity, in the order given.
        curves: ``{name: [(step, value), ...]}`` losses (and whatever ``on_checkpoint`` adds).
        step: steps done (``steps`` unless training was stopped early with ``stop``).
        rng: the generator that draws the episodes.
    """

    base: BaseAgentLearner
    models: list[AbstractModelLearner]
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    step: int = 0
    rng: np.random.Generator | None = None

    def state(self) -> TrainingState:
        """Everything needed to continue training from here (copies: later steps do not change it)."""
        if self.rng is None:
            raise ValueError("this result has no episode generator; only train_lamir's results can be continued")
        return TrainingState(
            step=self.step,
            base=self.base.state_dict(),
            models=tuple(m.state_dict() for m in self.models),
            rng=copy.deepcopy(self.rng.bit_generator.state),
            curves={k: list(v) for k, v in self.curves.items()},
        )


def train_lamir(
    tree: GameTree,
    features: GameFeatures,
    *,
    base_settings: BaseAgentSettings,
    model_settings: Sequence[ModelSettings],
    steps: int,
    batch: int,
    epsilon_pg: float,
    epsilon_model: float,
    rng: np.random.Generator,
    log_every: int = 100,
    progress: Callable[[Iterable[int]], Iterable[int]] = lambda it: it,
    on_checkpoint: Callable[[int, TrainingResult], None] | None = None,
    start: TrainingState | None = None,
    stop: int | None = None,
) -> TrainingResult:
    """Train the base agent and the abstract models jointly (steps 1-3 of the module docstring).

    Args:
        tree: the game (no chance nodes).
        features: its tensors.
        base_settings: hyperparameters of the base agent and τ_θ.
        model_settings: one entry per abstract model (typically differing in capacity).
        steps: training steps.
        batch: episodes per batch.
        epsilon_pg: exploration mixed into the base agent's own episodes.
        epsilon_model: exploration of the episodes the models learn from.
        rng: draws every episode; with ``start``, its state is first set to the one saved there.
        log_every: record losses every this many steps.
        progress: wraps the step range (e.g. a progress bar).
        on_checkpoint: called as ``on_checkpoint(step, result)`` at every logged step.
        start: continue from this state (of a call with the same game and settings) instead of from scratch.
        stop: stop after this many steps in all (default ``steps``); the annealing of γ still runs over ``steps``.

    Returns:
        The learners after ``stop`` steps; :meth:`TrainingResult.state` continues them later.

    Raises:
        ValueError: if ``steps`` or ``batch`` is not positive, ``stop`` is not in ``[start.step, steps]``, or
            ``start`` holds a different number of models.
    """
    if steps < 1 or batch < 1:
        raise ValueError(f"steps and batch must be positive, got {steps}, {batch}")
    first = start.step if start is not None else 0
    stop = steps if stop is None else stop
    if not first <= stop <= steps:
        raise ValueError(f"stop must be in [{first}, steps={steps}] (start.step = {first}), got {stop}")
    base = BaseAgentLearner(features, base_settings)
    bound = float(np.abs(tree.reward).max())
    models = [
        AbstractModelLearner(features, s, num_transformations=base_settings.num_transformations, value_bound=bound)
        for s in model_settings
    ]
    result = TrainingResult(base=base, models=models, step=first, rng=rng)
    if start is not None:
        if len(start.models) != len(models):
            raise ValueError(f"start holds {len(start.models)} models but model_settings gives {len(models)}")
        base.load_state_dict(start.base)
        for learner, state in zip(models, start.models, strict=True):
            learner.load_state_dict(state)
        rng.bit_generator.state = copy.deepcopy(start.rng)
        result.curves = {k: list(v) for k, v in start.curves.items()}

    def log(step: int, name: str, value: float) -> None:
        result.curves.setdefault(name, []).append((step, value))

    for step in progress(range(first, stop)):
        policy = tuple(t.double().numpy() for t in base.policy_tables())
        pg_batch = sample_trajectories(tree, behaviour_tables(tree, policy, epsilon=epsilon_pg), batch=batch, rng=rng)
        model_batch = sample_trajectories(
            tree, behaviour_tables(tree, policy, epsilon=epsilon_model), batch=batch, rng=rng
        )
        base_losses = base.update(pg_batch)
        policy_t = base.policy_tables()
        transformed = base.transformed_tables()
        value_batch = _transformed_pair_episodes(tree, transformed, batch, rng)
        model_losses = []
        for learner in models:
            s = learner.settings
            gamma = annealed_gamma(step / steps, start=s.gamma_start, end=s.gamma_end)
            parts = learner.losses(model_batch, value_batch, policy_t, transformed, tree.node_public, gamma=gamma)
            model_losses.append(learner.update(parts))
        result.step = step + 1
        if step % log_every == 0 or step == steps - 1:
            for name, value in base_losses.items():
                log(step, name, value)
            for learner, losses in zip(models, model_losses, strict=True):
                for name, value in losses.items():
                    log(step, f"L{learner.settings.capacity}-{learner.settings.kappa}/{name}", value)
            if on_checkpoint is not None:
                on_checkpoint(step, result)
    return result


def _transformed_pair_episodes(
    tree: GameTree, transformed: tuple[torch.Tensor, torch.Tensor], batch: int, rng: np.random.Generator
) -> Trajectories:
    """Value-data episodes: uniformly random play up to a uniformly drawn step, then both players follow a
    uniformly drawn pair of transformed policies ``(π^{χ_j0}, π^{χ_j1})`` to the end (stack index ``T`` = random)."""
    stacks = []
    for p in (0, 1):
        table = transformed[p].double().numpy().transpose(1, 0, 2)  # (T, K_p, A)
        legal = tree.infoset_legal[p][None].astype(np.float64)
        stacks.append(np.concatenate([table, legal / legal.sum(-1, keepdims=True)], 0))
    t = stacks[0].shape[0] - 1
    pair = rng.integers(0, t, size=(batch, 2))
    switch = rng.integers(0, tree.max_steps, size=batch)
    steps = np.arange(tree.max_steps)[:, None, None]
    assignment = np.where(steps >= switch[None, :, None], pair[None], t)  # (H, B, 2)
    return sample_trajectories(tree, (stacks[0], stacks[1]), batch=batch, rng=rng, assignment=assignment)
