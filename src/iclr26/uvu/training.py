"""One training loop for every uncertainty learner here (UVU, ensembles, RND): minimise ``model.loss(batch)``.

Given a multi-process ``world`` (the run's ``ctx.world`` under ``torchrun``, :mod:`iclr26.common.distributed`),
:func:`fit` and :func:`iclr26.uvu.offline.train_cql_dqn` are data parallel with DistributedDataParallel and the
batch stays the global batch (:func:`shard_loss`): every rank draws the same global minibatch from the shared
generator (or takes the whole data set, full-batch), keeps its contiguous shard of the rows, weights its mean loss by
``world_size ×`` its share of the batch, and DDP averages the gradients, so every rank takes the global batch's step;
the recorded loss is summed over the ranks. N ranks follow the single-process trajectory up to float summation order.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, shard_range
from iclr26.uvu.data import Transitions

#: Steps between read-backs of the losses from a GPU (one host sync per this many steps); on the CPU every step is
#: checked at once, where reading a value costs nothing.
CHECK_EVERY = 100


class LossLog:
    """The loss of every step, read back from the device in blocks, raising on the first non-finite one.

    Args:
        device: where the losses live; on the CPU each loss is checked as it comes.
        what: the loss's name in the error message.
        lr: the learning rate, named in the error message.
    """

    def __init__(self, device: torch.device, *, what: str, lr: float) -> None:
        self.every = 1 if device.type == "cpu" else CHECK_EVERY
        self.what, self.lr = what, lr
        self.values: list[float] = []
        self._pending: list[Tensor] = []

    def add(self, loss: Tensor | float) -> None:
        """Log one step's loss (a scalar tensor, or a float already on the host)."""
        value = torch.tensor(loss, dtype=torch.float64) if isinstance(loss, float) else loss.detach()
        self._pending.append(value)
        if len(self._pending) >= self.every:
            self.flush()

    def flush(self) -> list[float]:
        """Read the pending losses back; returns every loss so far.

        Raises:
            FloatingPointError: naming the first step whose loss is NaN or infinite.
        """
        if self._pending:
            start = len(self.values)
            host = torch.stack(self._pending).tolist()
            self._pending = []
            for i, value in enumerate(host):
                if not math.isfinite(value):
                    raise FloatingPointError(
                        f"{self.what} is {value} at step {start + i} (lr={self.lr}); lower lr or check the data"
                    )
            self.values += host
        return self.values


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
    world: World = SINGLE,
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
        world: the processes training together (the run's ``ctx.world``); with more than one, each rank trains on
            its shard of every global batch (:func:`shard_loss`) and DDP averages the gradients.

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
    log = LossLog(params[0].device, what="loss", lr=lr)
    net = data_parallel_loss(model, model.loss, world) if world.is_distributed else None
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in iterator:
        batch = data if batch_size is None else data.sample(batch_size, generator)
        if net is not None:  # torchrun: this rank's shard of the global batch (see shard_loss)
            loss, value = shard_loss(net, batch, world)
            log.add(value)
        else:
            loss = model.loss(batch)
            log.add(loss)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    losses = log.flush()
    return FitResult(losses=losses, wall_time_s=time.perf_counter() - start, cpu_time_s=time.process_time() - start_cpu)


class _LossOf(nn.Module):
    """A module whose forward is ``loss(batch)``, so that DistributedDataParallel can wrap a learner's loss."""

    def __init__(self, model: nn.Module, loss: Callable[[Transitions], Tensor]) -> None:
        super().__init__()
        self.model = model  # registers the trained parameters (frozen ones, requires_grad=False, are not synced)
        self._loss = loss

    def forward(self, batch: Transitions) -> Tensor:
        return self._loss(batch)


def data_parallel_loss(model: nn.Module, loss: Callable[[Transitions], Tensor], world: World) -> nn.Module:
    """``loss`` (a function of a batch, training ``model``'s parameters) as a module its ranks train together
    (:func:`iclr26.common.distributed.data_parallel`: DistributedDataParallel in a multi-process ``world``).

    Raises:
        TypeError: if ``model`` is not an ``nn.Module`` (DDP needs its parameters).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"data-parallel training needs an nn.Module model, got {type(model).__name__}")
    return data_parallel(_LossOf(model, loss), world, device=next(model.parameters()).device)


def shard_loss(net: nn.Module, batch: Transitions, world: World) -> tuple[Tensor, float]:
    """This rank's loss on its shard of the global ``batch``, scaled for DDP, and the batch's mean loss.

    Rank r keeps the contiguous rows :func:`~iclr26.common.distributed.shard_range` gives it; its mean loss is
    weighted by ``world_size ×`` its share of the batch, so DDP's gradient average is the global batch's mean-loss
    gradient.

    Returns:
        (the loss to backpropagate, the global batch's mean loss: the shards' weighted losses summed over the ranks,
        the same on every rank, so a non-finite loss stops every rank alike).

    Raises:
        ValueError: if the batch has fewer rows than there are ranks.
    """
    n = len(batch)
    if n < world.size:
        raise ValueError(f"a batch of {n} transitions is smaller than the {world.size} ranks; raise the batch size")
    shard = shard_range(n, world.rank, world.size)
    rows = torch.arange(shard.start, shard.stop, device=batch.states.device)
    loss = net(batch.index(rows))
    share = len(shard) / n
    (value,) = all_reduce_sum([loss.detach().item() * share], device=loss.device)
    return loss * (share * world.size), value
