"""Source distributions and the training loop shared by all five models (only the flow's objective differs).

Source distributions p0 (official ``initialize_p0`` in ``scripts/main_sphere.py`` and
``main_hyperboloid.py``, read through the code search, default ``--p0_distribution gaussian``):
intrinsic models start from the wrapped normal exp_o(ε), ε ~ N(0, σ² I_n) at the base point o (north
pole of S², origin of H²), or optionally from the uniform distribution on Sⁿ; extrinsic models start
from N(c, σ² I_D) in R^D with c = 0 for the sphere and c = o = (1, 0, 0) for the hyperboloid.

One training step (:func:`train_flow`): draw a minibatch x1 of the training data (with replacement),
x0 ~ p0 and t ~ U(0, 1); take an Adam step on the flow's objective. Shapes: ``N`` data points,
``B`` batch, ``D`` ambient dimension.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from iclr26.rgvfm.flows import FlowMatcher
from iclr26.rgvfm.manifolds import Lorentz, Manifold, Sphere

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


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_flow` measured.

    Attributes:
        final_loss: mean objective over the last 10 % of the steps.
        loss_trace: mean objective over each tenth of the run (10 numbers, or fewer for < 10 steps).
        seconds: wall time of the loop.
    """

    final_loss: float
    loss_trace: list[float]
    seconds: float


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
    progress: Callable[[Iterable[int]], Iterable[int]] = iter,
) -> TrainResult:
    """Train ``flow`` with Adam on its objective.

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
        progress: wraps ``range(steps)`` (e.g. a progress bar).

    Returns:
        :class:`TrainResult`.

    Raises:
        ValueError: for non-positive steps/batch size/lr, a ``generator`` on another device type than ``data``,
            or a non-finite loss (with the step).
    """
    if steps < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"steps, batch_size and lr must be positive, got {steps}, {batch_size}, {lr}")
    device = data.device
    if generator.device.type != device.type:
        raise ValueError(
            f"generator is on {generator.device} but data on {device}; create the generator on the data's device"
        )
    optimizer = torch.optim.Adam(parameters, lr=lr)
    losses = torch.empty(steps, device=device)
    start = time.perf_counter()
    for step in progress(range(steps)):
        x1 = data[torch.randint(data.shape[0], (batch_size,), generator=generator, device=device)]
        x0 = prior(batch_size, generator)
        t = torch.rand(batch_size, 1, generator=generator, device=device)
        loss = flow.training_loss(x0, x1, t, generator=generator)
        if not torch.isfinite(loss):
            raise ValueError(f"non-finite training loss {float(loss)} at step {step}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    seconds = time.perf_counter() - start
    chunks = losses.tensor_split(min(10, steps))
    return TrainResult(
        final_loss=float(chunks[-1].mean()), loss_trace=[float(c.mean()) for c in chunks], seconds=seconds
    )
