"""Source distributions and the training loop shared by all five models (only the flow's objective differs).

Source distributions p0 (official ``initialize_p0`` in ``scripts/main_sphere.py`` and
``main_hyperboloid.py``, read through the code search, default ``--p0_distribution gaussian``):
intrinsic models start from the wrapped normal exp_o(ε), ε ~ N(0, σ² I_n) at the base point o (north
pole of S², origin of H²), or optionally from the uniform distribution on Sⁿ; extrinsic models start
from N(c, σ² I_D) in R^D with c = 0 for the sphere and c = o = (1, 0, 0) for the hyperboloid.

One training step (:class:`FlowTrainer`, :func:`train_flow`): draw a minibatch x1 of the training data (with
replacement), x0 ~ p0 and t ~ U(0, 1); take an Adam step on the flow's objective; optionally update an exponential
moving average (EMA) of the weights, w̄ ← d w̄ + (1 - d) w.

Which weights training returns (``checkpoint``):
- ``best_loss`` (official ``train_flow`` in ``scripts/main_sphere.py``): the weights at the end of the "epoch" with
  the lowest mean training loss, an epoch being ``epoch_steps`` consecutive steps (default ⌈N / B⌉, the official
  loader's batches per pass over the N training points); only complete epochs count;
- ``last``: the weights after the last step (the package's earlier protocol).
With EMA on, the averaged weights are the ones checkpointed and returned.

The whole state (weights, Adam moments, EMA, best snapshot, generator, losses) can be saved and restored
(:meth:`FlowTrainer.state` / :meth:`FlowTrainer.load`) as plain CPU tensors, so a run can stop after any step and
continue bit for bit. Shapes: ``N`` data points, ``B`` batch, ``D`` ambient dimension.

In a data-parallel world (the trainer's ``world``, a run's ``ctx.world``) the same step averages the gradients over the
ranks through :func:`iclr26.common.distributed.data_parallel`, ``B`` staying the global batch: each rank computes the
objective on its shard of the batch that every rank draws alike (:meth:`FlowTrainer.run`).

On CUDA a step reads nothing back to the host: the loss is checked for NaN/inf when the segment ends (naming the first
bad step), the best-loss snapshot is selected on the device, and the on-manifold checks of the objective are off
(:func:`~iclr26.rgvfm.manifolds.point_checks`; its points are on M by construction). On the CPU every step is checked
as it happens, with the same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, shard_range
from iclr26.rgvfm.flows import FlowMatcher
from iclr26.rgvfm.manifolds import Lorentz, Manifold, Sphere, point_checks

Prior = Callable[[int, torch.Generator], Tensor]
"""p0 sampler: (n, generator) → (n, D) source points on the flow's path manifold."""


def make_prior(
    manifold: Manifold,
    *,
    intrinsic: bool,
    kind: Literal["wrapped_normal", "uniform"] = "wrapped_normal",
    scale: float = 1.0,
) -> Prior:
    """The source distribution of a model on ``manifold``.

    Args:
        manifold: M, the data manifold.
        intrinsic: True for models whose path lives on M, False for those in R^D.
        kind: ``wrapped_normal`` (official default; for extrinsic models the ambient normal) or ``uniform``
            (Sⁿ, intrinsic models only).
        scale: σ of the (wrapped) normal.

    Returns:
        A sampler (n, generator) → (n, D), drawing on the generator's device.

    Raises:
        ValueError: for an unknown ``kind``, ``uniform`` for an extrinsic model or on a manifold other than a
            sphere, or a non-positive ``scale``.
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if kind not in ("wrapped_normal", "uniform"):
        raise ValueError(f"kind must be 'wrapped_normal' or 'uniform', got {kind!r}")
    if kind == "uniform" and not intrinsic:
        raise ValueError(
            "kind='uniform' is a source on the manifold, for intrinsic models only; extrinsic models "
            "start from the ambient normal N(c, scale² I_D) (pass kind='wrapped_normal')"
        )
    if not intrinsic:
        center = manifold.base_point() if isinstance(manifold, Lorentz) else torch.zeros(manifold.ambient_dim)
        return lambda n, generator: (
            center.to(generator.device)
            + scale * torch.randn(n, manifold.ambient_dim, generator=generator, device=generator.device)
        )
    if kind == "uniform":
        if not isinstance(manifold, Sphere):
            raise ValueError(f"a uniform source exists only on the sphere, not on {manifold.name}")
        return lambda n, generator: manifold.random_uniform(n, generator=generator)
    return lambda n, generator: manifold.wrapped_normal(n, scale=scale, generator=generator)


Checkpoint = Literal["best_loss", "last"]
CHECKPOINTS = ("best_loss", "last")


def default_fused(device: torch.device) -> bool:
    """Whether :class:`FlowTrainer` uses ``torch.optim.Adam(fused=True)`` on ``device`` by default: on the CPU and
    CUDA, where the fused kernel exists and gives the same weights as the loop implementation to float32 rounding
    (test ``test_fused_adam_equals_the_loop_implementation``); faster per step on the CPU
    (``benchmarks/rgvfm_step.py``)."""
    return device.type in ("cpu", "cuda")


@dataclass(frozen=True)
class TrainState:
    """Everything :class:`FlowTrainer` needs to continue a run, as CPU tensors and numbers (picklable).

    Attributes:
        step: optimiser steps taken.
        params: the trained weights.
        optimizer: Adam's ``state_dict``.
        generator: the state of the training generator.
        losses: the objective at every step so far, (step,).
        ema: the EMA weights (None when EMA is off).
        best: the checkpointed weights (None before the first complete epoch, or with ``checkpoint="last"``).
        best_loss: the mean loss of the best epoch (inf before the first).
        best_step: the step after which ``best`` was taken (0 before the first).
    """

    step: int
    params: list[Tensor]
    optimizer: dict[str, Any]
    generator: Tensor
    losses: Tensor
    ema: list[Tensor] | None
    best: list[Tensor] | None
    best_loss: float
    best_step: int


def _cpu(value: Any) -> Any:
    """A copy of ``value`` with every tensor detached, cloned and on the CPU (recursively through dicts/lists)."""
    if isinstance(value, Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cpu(v) for v in value)
    return value


class FlowTrainer:
    """Adam training of a flow, resumable step by step, with the official best-loss checkpoint and optional EMA.

    Args:
        flow: the model (its network owns ``parameters``).
        parameters: the trainable parameters.
        data: training points on M, (N, D), on the network's device.
        prior: p0 sampler for the flow's path manifold.
        batch_size: B.
        lr: Adam learning rate.
        generator: torch generator for minibatches, x0, t and input noise, on the device of ``data``.
        checkpoint: ``best_loss`` (official) or ``last`` (see the module docstring).
        epoch_steps: steps per epoch of the best-loss rule (default ⌈N / B⌉).
        ema_decay: d of the weight EMA, in [0, 1); 0 turns EMA off.
        fused: use ``Adam(fused=True)`` (default :func:`default_fused` of the data's device).
        world: the processes training together (``ctx.world``); one process by default.

    Raises:
        ValueError: naming the argument for a non-positive batch size, lr or epoch_steps, an unknown checkpoint, an
            EMA decay outside [0, 1), or a ``generator`` on another device type than ``data``.
    """

    def __init__(
        self,
        flow: FlowMatcher,
        parameters: Iterable[nn.Parameter],
        data: Tensor,
        prior: Prior,
        *,
        batch_size: int,
        lr: float,
        generator: torch.Generator,
        checkpoint: Checkpoint = "best_loss",
        epoch_steps: int | None = None,
        ema_decay: float = 0.0,
        fused: bool | None = None,
        world: World = SINGLE,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if not lr > 0:
            raise ValueError(f"lr must be positive, got {lr}")
        if checkpoint not in CHECKPOINTS:
            raise ValueError(f"checkpoint must be one of {CHECKPOINTS}, got {checkpoint!r}")
        if epoch_steps is not None and epoch_steps < 1:
            raise ValueError(f"epoch_steps must be positive, got {epoch_steps}")
        if not 0 <= ema_decay < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {ema_decay}")
        device = data.device
        if generator.device.type != device.type:
            raise ValueError(
                f"generator is on {generator.device} but data on {device}; create the generator on the data's device"
            )
        self.flow, self.data, self.prior, self.generator, self.world = flow, data, prior, generator, world
        self.deferred = device.type == "cuda"  # no host read inside a step (module docstring)
        self.params = list(parameters)
        self.batch_size = batch_size
        self.checkpoint = checkpoint
        self.epoch_steps = epoch_steps if epoch_steps is not None else math.ceil(data.shape[0] / batch_size)
        self.ema_decay = ema_decay
        self.fused = default_fused(device) if fused is None else fused
        self.optimizer = torch.optim.Adam(self.params, lr=lr, fused=self.fused)
        self.step = 0
        self.losses: list[Tensor] = []
        self.ema = [p.detach().clone() for p in self.params] if ema_decay > 0 else None
        self.best: list[Tensor] | None = None
        self._best_loss: float | Tensor = math.inf  # a 0-dim tensor on the device when deferred
        self._best_step: int | Tensor = 0
        self.seconds = 0.0

    @property
    def best_loss(self) -> float:
        """The mean loss of the best epoch so far (inf before the first)."""
        return float(self._best_loss)

    @property
    def best_step(self) -> int:
        """The step after which :attr:`best` was taken (0 before the first epoch)."""
        return int(self._best_step)

    def tracked(self) -> list[Tensor]:
        """The weights that the checkpoint rule snapshots and returns: the EMA when on, else the live weights."""
        return self.ema if self.ema is not None else [p.detach() for p in self.params]

    def run(self, steps: int, progress: Callable[[Iterable[int]], Iterable[int]] = iter) -> None:
        """Take ``steps`` more optimiser steps (one step, whatever the world: module docstring).

        Each rank of a data-parallel world draws the same global batch (x1, x0, t and the input noise) from the shared
        generator and computes the objective on its contiguous shard of ``B / world_size`` rows; the shard's mean loss
        is weighted by ``world_size ×`` its share of the batch, and the wrapper averages the gradients, so every rank
        takes the global batch's step. The recorded loss is the global batch's mean, so the best-loss checkpoint and
        the EMA agree on every rank. A 2-rank step equals the 1-process step up to float summation order.

        Raises:
            ValueError: for ``steps`` < 0, a batch smaller than the world, or a non-finite loss (naming the step).
            TypeError: in a data-parallel world, for a network that is not an ``nn.Module``.
        """
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        world, device, data, generator, b = self.world, self.data.device, self.data, self.generator, self.batch_size
        rows, share, weight = None, 1.0, 1.0
        network = getattr(self.flow, "network", None)
        if world.is_distributed:
            if b < world.size:
                raise ValueError(f"batch_size={b} is smaller than the {world.size} ranks; every rank needs a shard")
            if not isinstance(network, nn.Module):
                raise TypeError(f"data-parallel training needs an nn.Module network, got {type(network).__name__}")
            mine = shard_range(b, world.rank, world.size)
            rows, share = slice(mine.start, mine.stop), len(mine) / b
            weight = share * world.size
            self.flow.network = data_parallel(network, world, device=device)  # averages the gradients
        shard = {} if rows is None else {"rows": rows}  # a rank's rows of the objective
        start, first = time.perf_counter(), self.step
        try:
            with point_checks(not self.deferred):
                for _ in progress(range(steps)):
                    x1 = data[torch.randint(data.shape[0], (b,), generator=generator, device=device)]
                    x0 = self.prior(b, generator)
                    t = torch.rand(b, 1, generator=generator, device=device)  # t ~ U[0, 1), one time per pair
                    loss = self.flow.training_loss(x0, x1, t, generator=generator, **shard)
                    recorded = self._recorded_loss(loss, share)
                    self.optimizer.zero_grad(set_to_none=True)
                    (loss if rows is None else loss * weight).backward()
                    self.optimizer.step()
                    self._after_step(recorded)
        finally:
            if world.is_distributed:
                self.flow.network = network
        if self.deferred:
            self._check_losses(first)
        self.seconds += time.perf_counter() - start

    def _recorded_loss(self, loss: Tensor, share: float) -> Tensor:
        """The step's loss as recorded: the global batch's mean (summed over the ranks), checked at once unless the
        check is deferred to the segment's end."""
        if self.world.is_distributed:
            (total,) = all_reduce_sum([float(loss.detach()) * share])  # this rank's share of the batch's mean
            if not math.isfinite(total):  # the same on every rank: all of them stop together
                raise ValueError(f"non-finite training loss {total} at step {self.step}")
            return torch.tensor(total, dtype=loss.dtype, device=loss.device)
        if not self.deferred and not torch.isfinite(loss):
            raise ValueError(f"non-finite training loss {float(loss)} at step {self.step}")
        return loss.detach()

    def _check_losses(self, first: int) -> None:
        """The deferred check of the steps from ``first`` on (one host read)."""
        recent = torch.stack(self.losses[first:]) if len(self.losses) > first else None
        if recent is None or bool(torch.isfinite(recent).all()):
            return
        bad = first + int((~torch.isfinite(recent)).nonzero()[0, 0])
        raise ValueError(f"non-finite training loss {float(self.losses[bad])} at step {bad}")

    def _after_step(self, loss: Tensor) -> None:
        """Record the step's loss, update the EMA and the best-loss checkpoint."""
        self.losses.append(loss)
        self.step += 1
        if self.ema is not None:
            with torch.no_grad():  # w̄ ← d w̄ + (1 - d) w
                torch._foreach_lerp_(self.ema, [p.detach() for p in self.params], 1 - self.ema_decay)
        if self.checkpoint != "best_loss" or self.step % self.epoch_steps != 0:
            return
        epoch_loss = torch.stack(self.losses[-self.epoch_steps :]).mean()
        if self.deferred:
            self._select_best_on_device(epoch_loss)
            return
        epoch_loss = float(epoch_loss)
        if epoch_loss < self._best_loss:  # official: strictly lower total loss of the epoch
            self._best_loss, self._best_step = epoch_loss, self.step
            self.best = [w.clone() for w in self.tracked()]

    @torch.no_grad()
    def _select_best_on_device(self, epoch_loss: Tensor) -> None:
        """The best-loss rule without a host read: the snapshot is overwritten where the epoch is strictly better."""
        if self.best is None:  # the first complete epoch (a NaN epoch is caught by the deferred check)
            self._best_loss = epoch_loss.clone()
            self._best_step = torch.tensor(self.step, device=epoch_loss.device)
            self.best = [w.clone() for w in self.tracked()]
            return
        better = epoch_loss < self._best_loss
        for b, w in zip(self.best, self.tracked(), strict=True):
            b.copy_(torch.where(better, w, b))
        self._best_loss = torch.where(better, epoch_loss, self._best_loss)
        self._best_step = torch.where(better, self.step, self._best_step)

    def selected(self) -> list[Tensor]:
        """The weights the protocol returns now: the best epoch's (``best_loss``, once an epoch is complete), else
        the last (EMA when on)."""
        if self.checkpoint == "best_loss" and self.best is not None:
            return self.best
        return self.tracked()

    @torch.no_grad()
    def load_selected(self) -> None:
        """Copy :meth:`selected` into the network's parameters (the trained model, as the official script returns
        it). Training should not continue afterwards: the Adam moments belong to the overwritten weights."""
        for p, w in zip(self.params, [w.clone() for w in self.selected()], strict=True):
            p.copy_(w)

    def losses_tensor(self) -> Tensor:
        """The objective at every step so far, (step,), on the CPU."""
        return torch.stack(self.losses).cpu() if self.losses else torch.empty(0)

    def state(self) -> TrainState:
        """The full state, on the CPU (see :class:`TrainState`)."""
        return TrainState(
            step=self.step,
            params=_cpu([p.detach() for p in self.params]),
            optimizer=_cpu(self.optimizer.state_dict()),
            generator=self.generator.get_state().clone(),
            losses=self.losses_tensor(),
            ema=_cpu(self.ema),
            best=_cpu(self.best),
            best_loss=self.best_loss,
            best_step=self.best_step,
        )

    @torch.no_grad()
    def load(self, state: TrainState) -> None:
        """Continue from ``state`` (written by :meth:`state` of a trainer with the same settings)."""
        device = self.data.device
        for p, w in zip(self.params, state.params, strict=True):
            p.copy_(w.to(device))
        self.optimizer.load_state_dict(state.optimizer)
        self.generator.set_state(state.generator)
        self.losses = list(state.losses.to(device).unbind()) if state.losses.numel() else []
        self.step = state.step
        self.ema = None if state.ema is None else [w.to(device).clone() for w in state.ema]
        self.best = None if state.best is None else [w.to(device).clone() for w in state.best]
        self._best_loss, self._best_step = state.best_loss, state.best_step
        if self.deferred and self.best is not None:
            self._best_loss = torch.tensor(state.best_loss, dtype=self.best[0].dtype, device=device)
            self._best_step = torch.tensor(state.best_step, device=device)


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_flow` measured.

    Attributes:
        final_loss: mean objective over the last 10 % of the steps.
        loss_trace: mean objective over each tenth of the run (10 numbers, or fewer for < 10 steps).
        seconds: wall time of the loop.
        best_step: the step after which the returned weights were taken (``steps`` for ``checkpoint="last"`` or
            when no epoch was complete).
    """

    final_loss: float
    loss_trace: list[float]
    seconds: float
    best_step: int


def summarise_losses(losses: Tensor) -> tuple[float, list[float]]:
    """(mean over the last tenth, means over each tenth) of a loss history; fewer chunks for < 10 steps."""
    chunks = losses.tensor_split(min(10, losses.numel()))
    return float(chunks[-1].mean()), [float(c.mean()) for c in chunks]


def train_flow(
    flow: FlowMatcher,
    parameters: Iterable[nn.Parameter],
    data: Tensor,
    prior: Prior,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    checkpoint: Checkpoint = "best_loss",
    epoch_steps: int | None = None,
    ema_decay: float = 0.0,
    fused: bool | None = None,
    progress: Callable[[Iterable[int]], Iterable[int]] = iter,
    world: World = SINGLE,
) -> TrainResult:
    """Train ``flow`` with Adam on its objective and leave the protocol's weights in the network.

    Args:
        flow: the model (its network owns ``parameters``).
        parameters: the trainable parameters.
        data: training points on M, (N, D), on the network's device.
        prior: p0 sampler for the flow's path manifold.
        steps: number of optimiser steps.
        batch_size: B.
        lr: Adam learning rate.
        generator: torch generator for minibatches, x0, t and input noise, on the device of ``data``
            (every draw is made there).
        checkpoint: ``best_loss`` (official, default: the weights of the epoch with the lowest mean loss) or
            ``last``.
        epoch_steps: steps per epoch of the best-loss rule (default ⌈N / B⌉, the official loader's).
        ema_decay: decay of an EMA of the weights (0 = off); when on, the EMA weights are checkpointed and returned.
        fused: ``Adam(fused=True)`` (default: on the CPU and CUDA, :func:`default_fused`).
        progress: wraps ``range(steps)`` (e.g. a progress bar).
        world: the processes training together (``ctx.world``); one process by default.

    Returns:
        :class:`TrainResult`; the network holds the returned weights.

    Raises:
        ValueError: for non-positive steps/batch size/lr, a bad checkpoint/epoch_steps/ema_decay, a ``generator``
            on another device type than ``data``, or a non-finite loss (with the step).
    """
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    trainer = FlowTrainer(
        flow, parameters, data, prior, batch_size=batch_size, lr=lr, generator=generator, checkpoint=checkpoint,
        epoch_steps=epoch_steps, ema_decay=ema_decay, fused=fused, world=world,
    )  # fmt: skip
    trainer.run(steps, progress)
    trainer.load_selected()
    final, trace = summarise_losses(trainer.losses_tensor())
    best_step = trainer.best_step if checkpoint == "best_loss" and trainer.best is not None else steps
    return TrainResult(final_loss=final, loss_trace=trace, seconds=trainer.seconds, best_step=best_step)
