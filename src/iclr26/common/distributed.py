"""Data parallelism under ``torchrun``: the world from the environment, the process group, seeds, shards, reductions.

``torchrun --nproc_per_node=N -m iclr26 run M ...`` starts N copies of the command; each reads its place in the
world from the environment torchrun sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``). The CLI then

1. checks that module ``M`` supports data parallelism (:attr:`iclr26.common.experiment.Experiment.data_parallel`),
   before any work;
2. joins the process group (:func:`init_process_group`): NCCL for CUDA tensors, each rank on ``cuda:LOCAL_RANK``;
   gloo for CPU tensors. Every collective has a timeout, so a rank that died or hangs ends the run
   with an error naming the timeout instead of a hang;
3. runs the reproduction on every rank: rank 0 creates the run folder and broadcasts it (:func:`broadcast_object`),
   every rank computes every unit of work (a unit may be collective), only rank 0 writes files.

Inside a trainer, every helper takes the :class:`World` it acts in explicitly (a reproduction gets it as
``ctx.world`` and hands it down): per-rank seeds for rank-local randomness such as dropout (:func:`rank_seed`), each
rank's shard of a batch or data set (:func:`shard_range`, :func:`shard`: the contiguous split
:class:`torch.utils.data.DistributedSampler` makes without padding), gradients averaged by
:func:`data_parallel` (the one place that wraps a module in
:class:`torch.nn.parallel.DistributedDataParallel`), and values gathered or reduced across ranks
(:func:`all_gather_object`, :func:`all_reduce_sum`). This module is the only one that calls ``torch.distributed``;
in a one-process world every helper is the identity, so single-process code paths are unchanged.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from iclr26.common.seeding import derive_seed

if TYPE_CHECKING:
    import torch

T = TypeVar("T")

#: Seconds a collective waits for the other ranks before the run fails (``$ICLR26_DIST_TIMEOUT_S`` overrides it).
DEFAULT_TIMEOUT_S = 600.0
TIMEOUT_ENV = "ICLR26_DIST_TIMEOUT_S"
#: ``1``: ranks share the GPUs round-robin (rank r on ``cuda:r % count``) instead of one GPU each; for checking the
#: NCCL path on a one-GPU machine, where NCCL allows it.
SHARE_GPU_ENV = "ICLR26_SHARE_GPU"


class DistributedError(ValueError):
    """A data-parallel launch that cannot run: a malformed torchrun environment or a module without support."""


@dataclass(frozen=True)
class World:
    """This process's place among the processes of one run.

    Attributes:
        rank: global rank, 0 .. size - 1 (rank 0 writes the run's files).
        size: number of processes (``WORLD_SIZE``).
        local_rank: rank on this machine; the CUDA device index of a GPU run.
    """

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Whether this process is rank 0, the one that writes files."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        """Whether the run has more than one process."""
        return self.size > 1


SINGLE = World()


def world_from_env(environ: Mapping[str, str] | None = None) -> World:
    """The world torchrun describes in ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (a one-process world without them).

    Raises:
        DistributedError: naming the variable, if one is not a non-negative integer or the ranks lie outside the
            world.
    """
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env:
        return SINGLE
    values = {}
    for name, default in (("WORLD_SIZE", None), ("RANK", None), ("LOCAL_RANK", "0")):
        text = env.get(name, default)
        if text is None or not text.strip().isdigit():
            raise DistributedError(
                f"environment variable {name} must be a non-negative integer under torchrun, got {text!r}"
            )
        values[name] = int(text)
    size, rank, local = values["WORLD_SIZE"], values["RANK"], values["LOCAL_RANK"]
    if size < 1 or rank >= size:
        raise DistributedError(f"environment variables RANK={rank}, WORLD_SIZE={size}: need 0 <= RANK < WORLD_SIZE")
    return World(rank=rank, size=size, local_rank=local)


def timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """The collective timeout: ``$ICLR26_DIST_TIMEOUT_S`` or :data:`DEFAULT_TIMEOUT_S`.

    Raises:
        DistributedError: naming the variable, for a value that is not a positive number.
    """
    env = os.environ if environ is None else environ
    text = env.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise DistributedError(f"environment variable {TIMEOUT_ENV} must be a positive number of seconds, got {text!r}")
    return value


def init_process_group(world: World, *, timeout: float | None = None) -> torch.device | None:
    """Join the run's process group (``env://`` rendezvous, as torchrun sets it up).

    With CUDA this rank takes ``cuda:LOCAL_RANK`` (so a config's ``device=cuda`` means this rank's GPU) and the group
    has two backends, NCCL for CUDA tensors and gloo for CPU tensors; without CUDA it is gloo alone. A config that
    trains on the CPU therefore runs on gloo on any machine, and the group can be joined before the config is known
    (a resumed run reads its config from rank 0's ``run.json``).

    Args:
        world: this process's place (:func:`world_from_env`).
        timeout: seconds a collective waits for the other ranks (default: :func:`timeout_s`).

    Returns:
        This rank's CUDA device, or None without CUDA.

    Raises:
        DistributedError: if the machine has fewer visible GPUs than ``LOCAL_RANK + 1``.
    """
    import torch
    import torch.distributed as dist

    device = None
    backend = "gloo"
    share = os.environ.get(SHARE_GPU_ENV, "") == "1"
    if torch.cuda.is_available():
        if world.local_rank >= torch.cuda.device_count() and not share:
            raise DistributedError(
                f"LOCAL_RANK={world.local_rank} but this machine shows {torch.cuda.device_count()} CUDA device(s); "
                "start at most one process per GPU (torchrun --nproc_per_node)"
            )
        index = world.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        device, backend = torch.device("cuda", index), "cpu:gloo,cuda:nccl"
    if not dist.is_initialized():
        seconds = timeout_s() if timeout is None else timeout
        dist.init_process_group(
            backend=backend, rank=world.rank, world_size=world.size, timeout=timedelta(seconds=seconds)
        )
    return device


def destroy_process_group(*, synchronise: bool = False) -> None:
    """Leave the process group (no-op without one).

    Args:
        synchronise: first wait for every rank at a barrier and free unreachable objects (a DDP reducer's pending
            work), so no rank tears its gloo threads down while a peer still communicates. Only on a path every
            rank takes: after an error the peers may never arrive, and the barrier would wait out the timeout.
    """
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    if synchronise:
        gc.collect()
        dist.barrier()
    dist.destroy_process_group()


def current_world() -> World:
    """The world of the initialised process group (rank, size, ``LOCAL_RANK``), or a one-process world."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return SINGLE
    local = os.environ.get("LOCAL_RANK", "0")
    return World(rank=dist.get_rank(), size=dist.get_world_size(), local_rank=int(local) if local.isdigit() else 0)


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank-local randomness (dropout, noise): derived from the master ``seed`` and ``rank``.

    Data order is not rank-local: every rank draws the same global batch from the master seed and keeps its shard
    (:func:`shard_range`), as :class:`~torch.utils.data.DistributedSampler` permutes with one seed on every rank.
    """
    return derive_seed(seed, "rank", rank) % 2**63


def shard_range(n: int, rank: int, size: int) -> range:
    """The indices of rank ``rank``'s shard of ``n`` items: contiguous, sizes differing by at most one.

    The shards of ranks 0 .. size - 1 are disjoint and cover ``range(n)`` in order, so concatenating them gives the
    unsharded batch (which is what makes a 2-rank step equal a 1-rank step with 2 accumulation steps).

    Raises:
        ValueError: for ``n < 0`` or a rank outside ``[0, size)``.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if not 0 <= rank < size:
        raise ValueError(f"rank must lie in [0, size={size}), got {rank}")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return range(start, start + base + (1 if rank < extra else 0))


def shard(items: Sequence[T], world: World) -> Sequence[T]:
    """This rank's contiguous shard of ``items`` (:func:`shard_range`); all of ``items`` in a one-process world."""
    r = shard_range(len(items), world.rank, world.size)
    return items[r.start : r.stop]


def data_parallel(
    module: torch.nn.Module,
    world: World,
    *,
    device: torch.device | None = None,
    find_unused_parameters: bool = False,
    sync_buffers: bool = True,
) -> torch.nn.Module:
    """``module`` as its ranks train it: wrapped in DistributedDataParallel in a multi-process world, else itself.

    The wrapper averages the gradients of the ranks' backward passes, so a step over each rank's shard of the
    global batch equals the one-process step on the whole batch (with each shard's loss weighted by its share).

    Args:
        module: the model (or a module whose forward is a shard's loss), already on ``device``.
        world: the run's world (``ctx.world``).
        device: the rank's device; a CUDA device becomes DDP's ``device_ids``.
        find_unused_parameters: for models whose forward leaves some parameters out (DDP's option of that name).
        sync_buffers: whether rank 0's buffers are copied to every rank at each forward; False for buffers that are
            rank-local statistics (they are still synced once, when the wrapper is built).

    Returns:
        The wrapper, or ``module`` itself when ``world`` has one process.
    """
    import torch

    if not world.is_distributed:
        return module
    ids = [device.index if device.index is not None else world.local_rank] if device and device.type == "cuda" else None
    ddp = torch.nn.parallel.DistributedDataParallel(
        module, device_ids=ids, find_unused_parameters=find_unused_parameters
    )
    # torch >= 2.13 names the per-forward sync forward_sync_buffers (broadcast_buffers before); set after building
    # so that the buffers are synced at init in either version
    setattr(ddp, "forward_sync_buffers" if hasattr(ddp, "forward_sync_buffers") else "broadcast_buffers", sync_buffers)
    return ddp


def all_gather_object(value: T, world: World) -> list[T]:
    """Every rank's ``value`` (any picklable object), in rank order; ``[value]`` in a one-process world."""
    import torch.distributed as dist

    if not world.is_distributed:
        return [value]
    parts: list[Any] = [None] * world.size
    dist.all_gather_object(parts, value)
    return parts


def all_reduce_sum(values: Sequence[float] | torch.Tensor, *, device: torch.device | str = "cpu") -> list[float]:
    """Sum ``values`` elementwise over all ranks (float64); the values themselves without a process group.

    Args:
        values: this rank's numbers (e.g. ``[loss_sum, token_count]``).
        device: where the reduction runs (the rank's CUDA device under NCCL).

    Returns:
        The sums, the same on every rank.
    """
    import torch
    import torch.distributed as dist

    tensor = torch.as_tensor(values, dtype=torch.float64).reshape(-1).to(device)
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.cpu().tolist()


def broadcast_object(value: T | None, *, src: int = 0) -> T:
    """Rank ``src``'s ``value`` on every rank (any picklable object; the other ranks' ``value`` is ignored)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return value  # type: ignore[return-value]
    box = [value]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def on_main(compute: Callable[[], T]) -> T:
    """Run ``compute`` on rank 0 only and return its result on every rank; its exception is raised on every rank.

    For work that touches shared files once (creating the run folder, reading ``run.json``): the other ranks wait
    in the broadcast and then fail with the same error, so a refused run exits alike on all ranks.
    """
    world = current_world()
    if not world.is_distributed:
        return compute()
    outcome: tuple[bool, Any] | None = None
    if world.is_main:
        try:
            outcome = (True, compute())
        except Exception as err:  # noqa: BLE001 - re-raised on every rank below
            outcome = (False, err)
    ok, payload = broadcast_object(outcome)
    if not ok:
        raise payload
    return payload


def barrier() -> None:
    """Wait for every rank (no-op without a process group)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "SINGLE",
    "TIMEOUT_ENV",
    "DistributedError",
    "World",
    "all_reduce_sum",
    "barrier",
    "all_gather_object",
    "broadcast_object",
    "current_world",
    "data_parallel",
    "destroy_process_group",
    "init_process_group",
    "on_main",
    "rank_seed",
    "shard",
    "shard_range",
    "timeout_s",
    "world_from_env",
]
