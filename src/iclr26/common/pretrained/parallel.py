"""Data parallelism of the training steps: :func:`distribute`, and the few operations through which a step sees it.

A training step (:mod:`iclr26.common.pretrained.training`) is written once. Parallelism enters it only through the
functions here, each of which is the identity (or the plain one-process operation) until :func:`distribute` has
put ``lm`` in a world of several ranks:

- :func:`training_model`: the module a step runs its forward through (the DDP wrapper or the FSDP2-sharded model);
- :func:`global_sums` / :func:`global_mean`: counts and reported numbers over the ranks' shards (all-reduce);
- :func:`backward_scale`: the world size, by which each micro-batch's loss (weighted by its share of the *global*
  batch) is multiplied, since DDP and FSDP average the ranks' gradients;
- :func:`require_full_shard`: every rank must hold work in each of its micro-batches (each backward pass is a
  collective);
- :func:`clip_gradients`: the gradient norm, of sharded (FSDP2 ``DTensor``) gradients as well.

With these, a step on ``world`` ranks each passing its shard of a batch equals the one-process step on the whole
batch up to float summation order (``tests/common/test_pretrained_distributed.py``), and a one-process step is
unchanged by them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import Tensor, nn

from iclr26.common.pretrained.model import PretrainedLM

__all__ = [
    "PARALLEL_MODES",
    "backward_scale",
    "clip_gradients",
    "distribute",
    "global_mean",
    "global_sums",
    "parallel_world",
    "require_full_shard",
    "training_model",
]

PARALLEL_MODES = ("ddp", "fsdp")


def parallel_world(lm: PretrainedLM) -> Any:
    """The :class:`~iclr26.common.distributed.World` whose ranks ``lm``'s training steps span: the one given to
    :func:`distribute` (with more than one rank), else a one-process world."""
    from iclr26.common.distributed import SINGLE

    return lm.world if lm.parallel else SINGLE


def distribute(lm: PretrainedLM, *, mode: Literal["ddp", "fsdp"] = "ddp", world: Any = None) -> PretrainedLM:
    """Make ``lm``'s training steps data parallel over the ranks of ``world`` (``torchrun``), in place.

    Call it on every rank after :func:`~iclr26.common.pretrained.add_lora` (or ``load_adapter``) and before creating
    the optimizer. In a one-process world it does nothing, so a one-process run is unchanged.

    - ``"ddp"``: :func:`iclr26.common.distributed.data_parallel` (DistributedDataParallel) around ``lm.model``;
      its forward is used by the training steps, while generation and scoring without gradient use ``lm.model``
      itself. Every rank holds the whole model; the trainable parameters' gradients (the LoRA adapters' only: the
      base weights are frozen) are averaged over the ranks.
    - ``"fsdp"``: FSDP2 (``torch.distributed.fsdp.fully_shard``) on every decoder layer and on the whole model, in
      place. Every parameter, frozen base weights and LoRA adapters alike, is sharded (dim 0, one shard per rank),
      so each rank stores ``1/world`` of the weights, of the adapters' gradients and of the optimizer's moments; a
      layer's full weights are all-gathered for its forward and backward and freed again, and the adapters'
      gradients are reduce-scattered (averaged). With LoRA the trainable part is small, so FSDP saves the frozen
      base weights and the activations' peak; it is meant for a base model that does not fit one device.
      Generation and scoring run through the same sharded modules (each forward gathers the layers it needs).

    What a step equals: every rank passes its shard of the global batch (for GRPO, whole prompt groups; for DPO,
    whole pairs) to the step; the step all-reduces the global token and sample counts, weights each micro-batch's
    loss by ``world size ×`` its share of the *global* batch, and sums the reported loss terms over the ranks. So
    the update equals the one-process step on the concatenated batch up to float summation order, and the reported
    loss is the global one. Every rank needs at least one completion token in each of its micro-batches. Under
    ``"fsdp"`` every forward pass is collective, so every rank must make the same calls: the same number of prompts
    per rank (for :func:`~iclr26.common.pretrained.sample_rollout` with ``prompt_seeds``, one generation call per
    prompt) and of micro-batches; generation then runs with ``synced_gpus=True``.

    Args:
        lm: a model with trainable parameters (usually LoRA adapters), on this rank's device.
        mode: ``"ddp"`` or ``"fsdp"``.
        world: the run's :class:`~iclr26.common.distributed.World` (``RunContext.world``); ``None`` reads the
            initialised process group's.

    Returns:
        ``lm``, with ``lm.parallel`` set to ``mode`` (``None`` in a one-process world).

    Raises:
        ValueError: for another ``mode``, a model without trainable parameters, or a model already distributed.
    """
    from iclr26.common.distributed import current_world, data_parallel

    if mode not in PARALLEL_MODES:
        raise ValueError(f"mode must be one of {PARALLEL_MODES}, got {mode!r}")
    if lm.parallel:
        raise ValueError(f"lm is already distributed ({lm.parallel}); distribute it once")
    lm.trainable_parameters()
    world = current_world() if world is None else world
    if not world.is_distributed:
        return lm
    if mode == "ddp":
        lm.train_model = data_parallel(lm.model, world, device=lm.device)
    else:
        from torch.distributed.fsdp import fully_shard

        # the root is the transformers model inside peft's wrappers: both training forwards and generate() call it
        root = lm.model.get_base_model() if lm.has_lora else lm.model
        layers = [m for m in root.modules() if type(m).__name__.endswith("DecoderLayer")]
        if not layers:
            raise ValueError("fsdp: found no *DecoderLayer module to shard in lm.model")
        for layer in layers:
            fully_shard(layer)
        fully_shard(root)
        lm.train_model = lm.model
    lm.parallel, lm.world = mode, world
    return lm


def training_model(lm: PretrainedLM) -> nn.Module:
    """The module a training step runs its forward through: the data-parallel one after :func:`distribute`."""
    return lm.train_model if lm.parallel else lm.model


def backward_scale(lm: PretrainedLM) -> int:
    """The factor on a micro-batch's loss weighted by its share of the global batch: the world size (DDP and FSDP
    average the ranks' gradients, so the average is the global batch's gradient); 1 in one process."""
    return parallel_world(lm).size


def global_sums(lm: PretrainedLM, values: Sequence[float]) -> list[float]:
    """``values`` summed over the ranks (all-reduce); in one process the values themselves, unchanged."""
    from iclr26.common.distributed import all_reduce_sum

    if not parallel_world(lm).is_distributed:
        return list(values)
    device = lm.device
    return all_reduce_sum(values, device=device if device.type == "cuda" else "cpu")


def global_mean(lm: PretrainedLM, values: Tensor) -> float:
    """The mean of ``values`` over every rank's entries; in one process ``float(values.mean())``."""
    if not parallel_world(lm).is_distributed:
        return float(values.mean())
    total, count = global_sums(lm, [float(values.double().sum()), float(values.numel())])
    return total / count


def require_full_shard(lm: PretrainedLM, work: Sequence[float]) -> None:
    """Under data parallelism, refuse a shard with no micro-batch or one whose micro-batch holds no work (``work``:
    completion tokens or pairs per micro-batch); every rank's backward passes are collectives."""
    world = parallel_world(lm)
    if world.is_distributed and (not work or min(work) == 0):
        raise ValueError(
            f"rank {world.rank}: every rank needs a non-empty shard whose micro-batches hold completion tokens"
        )


def clip_gradients(params: Sequence[nn.Parameter], max_grad_norm: float | None) -> float:
    """The gradient norm of ``params`` before clipping, clipped to ``max_grad_norm`` (``None``: not clipped).

    Sharded (FSDP2 ``DTensor``) gradients go through ``clip_grad_norm_``, whose norm is the global one.
    """
    grads = [p for p in params if p.grad is not None]
    sharded = any(hasattr(p.grad, "full_tensor") for p in grads)
    if max_grad_norm is None and not sharded:
        return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in grads])))
    norm = torch.nn.utils.clip_grad_norm_(grads, math.inf if max_grad_norm is None else max_grad_norm)
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
