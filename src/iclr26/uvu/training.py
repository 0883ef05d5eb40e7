"""One training loop for every uncertainty learner here (UVU, ensembles, RND): minimise ``model.loss(batch)``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
from torch import Tensor, nn

from iclr26.uvu.data import Transitions


class LossModel(Protocol):
    """Anything with a scalar ``loss(batch)`` and the parameters it trains."""

    def loss(self, batch: Transitions) -> Tensor: ...

    def parameters(self) -> Iterable[nn.Parameter]: ...


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit` did.

    Attributes:
        losses: the loss at every step.
        wall_time_s: seconds spent in the loop (forward, backward and update).
        cpu_time_s: CPU seconds this process spent in the loop (``time.process_time``, all its threads). On a
            shared machine it depends far less on other jobs than ``wall_time_s``; it does not see GPU work.
    """

    losses: list[float]
    wall_time_s: float
    cpu_time_s: float


def fit(
    model: LossModel,
    data: Transitions,
    *,
    steps: int,
    lr: float,
    generator: torch.Generator,
    batch_size: int | None = None,
    optimizer: Literal["adam", "sgd"] = "adam",
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
) -> FitResult:
    """Train the parameters of ``model`` that require gradients on ``data``.

    Args:
        model: e.g. :class:`~iclr26.uvu.uvu.UVU`, :class:`~iclr26.uvu.ensemble.ValueEnsemble`, :class:`RND`.
        data: the offline transitions (``next_actions`` = the evaluated policy's ``a'``).
        steps: gradient steps.
        lr: learning rate.
        generator: minibatch sampling RNG.
        batch_size: transitions per step; ``None`` = the full data set every step (full-batch gradient descent).
        optimizer: ``"adam"`` or plain ``"sgd"`` (gradient descent, as in the NTK analysis).
        progress: optional wrapper of the step iterator (a progress bar).

    Returns:
        :class:`FitResult`.

    Raises:
        ValueError: for non-positive ``steps``/``lr`` or an unknown optimizer.
        FloatingPointError: if the loss becomes NaN or infinite (the step is named; lower ``lr``).
    """
    if steps <= 0:
        raise ValueError(f"steps must be positive, got {steps}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=lr)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    else:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    iterator: Iterable[int] = range(steps) if progress is None else progress(range(steps))
    losses: list[float] = []
    start, start_cpu = time.perf_counter(), time.process_time()
    for step in iterator:
        batch = data if batch_size is None else data.sample(batch_size, generator)
        loss = model.loss(batch)
        value = loss.detach().item()
        if not math.isfinite(value):
            raise FloatingPointError(f"loss is {value} at step {step} (lr={lr}); lower lr or check the data")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(value)
    return FitResult(losses=losses, wall_time_s=time.perf_counter() - start, cpu_time_s=time.process_time() - start_cpu)
