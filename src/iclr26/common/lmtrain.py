"""Training loop for :class:`iclr26.common.tinylm.TinyLM`: token-counted, schedule-driven, resumable.

One step of :func:`train_lm`:

1. ask the schedule for ``BatchPlan(lr, batch_size)`` at ``(step, tokens_seen)``; the last step's batch is cut so
   that the run ends at exactly (at most one sequence past) ``total_tokens``;
2. set every AdamW parameter group's learning rate to ``lr`` (and, if the schedule has a
   ``weight_decay_multiplier(tokens_seen)`` method, its weight decay to the configured one times that factor);
3. draw ``batch_size`` random windows of ``context_len + 1`` tokens from the training split;
4. accumulate gradients over micro-batches of at most ``micro_batch_size`` sequences, each micro-batch's loss
   weighted by its share of the batch, so the gradient equals the full batch's mean-loss gradient;
5. clip the gradient norm, take the optimizer step, count tokens (``batch_size · context_len``) and FLOPs;
6. evaluate on the validation split each time ``tokens_seen`` crosses a multiple of ``eval_every_tokens``;
   checkpoint every ``checkpoint_every_steps`` steps.

Resuming from the checkpoint (model, optimizer, sampling generator, counters, history) continues bit-identically on
the CPU.

On CUDA the loop reads nothing back to the host inside a step: the training loss is accumulated on the device and
the per-step losses are fetched (and checked for divergence) at each evaluation, checkpoint and at the end, so the
GPU never waits on Python; AdamW is the fused kernel, and ``TrainConfig.autocast`` runs the forward pass under bf16
autocast. On the CPU every step is computed exactly as before (the losses as Python floats, the foreach AdamW), so the
CPU results do not depend on these options.

In a data-parallel world (``world``, the run's :class:`~iclr26.common.distributed.World`, ``ctx.world``) the same loop
averages the gradients through :func:`~iclr26.common.distributed.data_parallel`, and the config's batch stays the
global batch:

- every rank draws the same global batch from the shared sampling generator (seeded with ``seed`` on every rank, as
  ``DistributedSampler`` seeds its permutation) and keeps its contiguous shard of ``B / world_size`` sequences
  (:func:`~iclr26.common.distributed.shard_range`); so per-rank batch = global batch / (world size × accumulation
  steps), the accumulation steps being the rank's micro-batches of at most ``micro_batch_size``;
- each micro-batch loss is weighted by ``world_size ×`` its share of the global batch and DDP averages the gradients
  over the ranks in the last micro-batch's backward (``no_sync`` before it), so the gradient is again the global
  batch's mean-loss gradient: a 2-rank step equals a 1-rank step with 2 accumulation steps up to float summation
  order (tests/test_distributed.py states the tolerance);
- the logged training loss and every validation loss are summed over the ranks (validation windows sharded by rank);
- rank-local randomness (dropout) draws from a per-rank seed (:func:`~iclr26.common.distributed.rank_seed`), and the
  global generators are restored after training, so code after :func:`train_lm` runs alike on every rank;
- only rank 0 writes the checkpoint; on a resume rank 0 reads it and broadcasts it.

Module buffers are not synchronised after the start (``forward_sync_buffers=False``): TinyLM's are constant
tables or statistics, such as an MoE layer's assignment counts, which then count the rank's own shard.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import Tensor, nn

from iclr26.common.config import require
from iclr26.common.corpus import Corpus
from iclr26.common.distributed import (
    World,
    all_reduce_sum,
    broadcast_object,
    current_world,
    data_parallel,
    rank_seed,
    shard_range,
)


class BatchPlan(NamedTuple):
    """The learning rate and batch size (in sequences) of one optimizer step."""

    lr: float
    batch_size: int


class Schedule(Protocol):
    """Anything that maps ``(step, tokens_seen)`` to a :class:`BatchPlan`.

    A schedule may also define ``weight_decay_multiplier(tokens_seen) -> float`` (e.g.
    :class:`iclr26.seesaw.Seesaw`): :func:`train_lm` then multiplies each group's configured weight decay by it
    at every step.
    """

    def __call__(self, step: int, tokens_seen: int) -> BatchPlan: ...


@dataclass(frozen=True)
class CosineSchedule:
    """Constant batch size; linear warmup then cosine decay of the LR, measured in tokens.

    ``lr(n) = peak · n / n_w`` for ``n < n_w``; afterwards, with ``p = (n - n_w) / (N - n_w)`` clipped to [0, 1],
    ``lr(n) = peak · (f + (1 - f) · (1 + cos(π p)) / 2)``, where ``f`` = ``final_lr_frac`` and ``N`` = ``total_tokens``.
    """

    peak_lr: float
    batch_size: int
    total_tokens: int
    warmup_tokens: int = 0
    final_lr_frac: float = 0.1

    def __post_init__(self) -> None:
        require(
            self.peak_lr > 0 and math.isfinite(self.peak_lr),
            "peak_lr",
            f"must be positive, got {self.peak_lr}",
        )
        require(self.batch_size > 0, "batch_size", f"must be positive, got {self.batch_size}")
        require(self.total_tokens > 0, "total_tokens", f"must be positive, got {self.total_tokens}")
        require(0 <= self.warmup_tokens < self.total_tokens, "warmup_tokens", "must lie in [0, total_tokens)")
        require(0.0 <= self.final_lr_frac <= 1.0, "final_lr_frac", f"must lie in [0, 1], got {self.final_lr_frac}")

    def lr_at(self, tokens_seen: int) -> float:
        """The learning rate after ``tokens_seen`` tokens."""
        if tokens_seen < self.warmup_tokens:
            return self.peak_lr * (tokens_seen + 1) / self.warmup_tokens
        p = min(1.0, (tokens_seen - self.warmup_tokens) / (self.total_tokens - self.warmup_tokens))
        f = self.final_lr_frac
        return self.peak_lr * (f + (1.0 - f) * 0.5 * (1.0 + math.cos(math.pi * p)))

    def __call__(self, step: int, tokens_seen: int) -> BatchPlan:
        return BatchPlan(self.lr_at(tokens_seen), self.batch_size)


@dataclass(frozen=True)
class TokenData:
    """Training and validation token arrays (any integer dtype, ids < the model's vocabulary)."""

    train: np.ndarray
    val: np.ndarray

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> TokenData:
        return cls(corpus.train, corpus.val)

    def sample(self, batch_size: int, context_len: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``batch_size`` random training windows: inputs ``(B, T)`` and next-token targets ``(B, T)``."""
        n = len(self.train) - context_len - 1
        if n <= 0:
            raise ValueError(f"training split has {len(self.train)} tokens, fewer than context_len + 2")
        starts = torch.randint(0, n + 1, (batch_size,), generator=generator)
        offsets = torch.arange(context_len + 1)
        windows = torch.from_numpy(np.asarray(self.train)[(starts[:, None] + offsets).numpy()].astype(np.int64))
        return windows[:, :-1], windows[:, 1:]

    def eval_windows(self, context_len: int, n_tokens: int) -> Tensor:
        """Evenly spaced validation windows ``(N, T + 1)`` covering about ``n_tokens`` target tokens."""
        n_windows = max(1, n_tokens // context_len)
        last = len(self.val) - context_len - 1
        if last < 0:
            raise ValueError(f"validation split has {len(self.val)} tokens, fewer than context_len + 1")
        starts = np.linspace(0, last, n_windows).astype(np.int64)
        idx = starts[:, None] + np.arange(context_len + 1)[None, :]
        return torch.from_numpy(np.asarray(self.val)[idx].astype(np.int64))


@dataclass(frozen=True)
class TrainConfig:
    """Settings of :func:`train_lm` (the model and schedule are passed separately).

    Attributes:
        total_tokens: training budget in target tokens; the run stops once it is reached.
        context_len: tokens per training sequence T.
        micro_batch_size: most sequences per forward pass; larger batches accumulate gradients.
        weight_decay: AdamW decoupled weight decay on matrices (not on biases, norms or gains).
        betas: AdamW (β1, β2).
        eps: AdamW ε.
        grad_clip: max global gradient norm (None: no clipping).
        eval_every_tokens: validation cadence in tokens (0: only at the start and the end).
        eval_tokens: validation target tokens per evaluation.
        checkpoint_path: where to save/resume; None for no checkpoints.
        checkpoint_every_steps: checkpoint cadence (0: only at the end, if a path is set).
        seed: seed of the batch-sampling generator.
        autocast: run the forward passes under ``torch.autocast(dtype=torch.bfloat16)`` when the model is on CUDA
            (ignored on the CPU, whose runs stay in float32).
    """

    total_tokens: int
    context_len: int = 128
    micro_batch_size: int = 32
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    grad_clip: float | None = 1.0
    eval_every_tokens: int = 0
    eval_tokens: int = 16_384
    checkpoint_path: str | None = None
    checkpoint_every_steps: int = 0
    seed: int = 0
    autocast: bool = False

    def __post_init__(self) -> None:
        for name in ("total_tokens", "context_len", "micro_batch_size", "eval_tokens"):
            require(getattr(self, name) > 0, name, f"must be positive, got {getattr(self, name)}")
        require(self.weight_decay >= 0, "weight_decay", "must be non-negative")
        require(all(0.0 <= b < 1.0 for b in self.betas), "betas", f"must lie in [0, 1), got {self.betas}")
        require(self.eps > 0, "eps", "must be positive")
        require(self.grad_clip is None or self.grad_clip > 0, "grad_clip", "must be positive or None")
        require(self.eval_every_tokens >= 0, "eval_every_tokens", "must be non-negative")
        require(self.checkpoint_every_steps >= 0, "checkpoint_every_steps", "must be non-negative")


@dataclass
class TrainHistory:
    """What a training run measured, step by step.

    Attributes:
        step, tokens, lr, batch_size, train_loss: one entry per optimizer step (``tokens`` after the step).
        eval_step, eval_tokens, val_loss: one entry per evaluation (the first at 0 tokens).
        flops: training FLOPs so far (``model.flops_per_token`` × tokens).
        wall_time_s: seconds spent training (summed over resumed segments).
    """

    step: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    batch_size: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    eval_tokens: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    flops: float = 0.0
    wall_time_s: float = 0.0

    @property
    def steps_done(self) -> int:
        return len(self.step)

    @property
    def tokens_seen(self) -> int:
        return self.tokens[-1] if self.tokens else 0

    @property
    def final_val_loss(self) -> float:
        if not self.val_loss:
            raise ValueError("no evaluation was run")
        return self.val_loss[-1]


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite."""


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: TokenData,
    context_len: int,
    n_tokens: int,
    micro_batch_size: int,
    *,
    world: World | None = None,
    autocast: bool = False,
) -> float:
    """Mean next-token cross-entropy (nats) over the fixed validation windows (model put back in its mode).

    In a data-parallel ``world`` (default: the initialised process group's) every rank evaluates its shard of the
    windows and the sums are reduced over the ranks (every rank must call it), giving the mean over all windows. On
    CUDA the sum stays on the device until the end (one host read per evaluation).
    """
    world = current_world() if world is None else world
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    windows = data.eval_windows(context_len, n_tokens)  # (N, T + 1)
    if world.is_distributed:
        rows = shard_range(len(windows), world.rank, world.size)
        windows = windows[rows.start : rows.stop]
    windows = windows.to(device)
    on_gpu = device.type == "cuda"
    total: float | Tensor = torch.zeros((), dtype=torch.float64, device=device) if on_gpu else 0.0
    count = 0
    for chunk in windows.split(micro_batch_size):
        with _autocast(device, autocast):
            out = model(chunk[:, :-1], chunk[:, 1:])
        loss = out.loss.detach().double() if on_gpu else out.loss.item()
        total += loss * chunk[:, 1:].numel()
        count += chunk[:, 1:].numel()
    total = float(total)
    model.train(was_training)
    if world.is_distributed:
        total, count = all_reduce_sum([total, count])
    return total / count


def _autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA when ``enabled``; nothing otherwise (the CPU runs stay in float32)."""
    if enabled and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on parameters of dimension ≥ 2 only (matrices and embeddings); the fused kernel on
    CUDA (one launch per step), torch's default implementation elsewhere."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    fused = next(model.parameters()).device.type == "cuda"
    return torch.optim.AdamW(groups, lr=0.0, betas=config.betas, eps=config.eps, **({"fused": True} if fused else {}))


def _save_checkpoint(path: Path, model, optimizer, generator, history: TrainHistory) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "generator": generator.get_state(),
        "history": asdict(history),
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_lm(
    model: nn.Module,
    data: TokenData,
    schedule: Schedule,
    config: TrainConfig,
    *,
    progress: Any | None = None,
    max_steps: int | None = None,
    world: World | None = None,
) -> TrainHistory:
    """Train ``model`` on ``data`` until ``config.total_tokens`` (or ``max_steps`` more steps) — see module doc.

    Args:
        model: a :class:`~iclr26.common.tinylm.TinyLM` (or any module with the same forward contract), on the device
            the run trains on (batches follow it).
        data: training and validation tokens.
        schedule: ``(step, tokens_seen) -> BatchPlan``.
        config: budget, optimizer and cadence settings.
        progress: optional tqdm-like bar (``update(n_tokens)``, ``set_postfix``) with ``total=total_tokens``.
        max_steps: stop after this many steps in this call (e.g. to split a run; the checkpoint allows resuming).
        world: the run's processes (``ctx.world``); default the initialised process group's, or one process.

    Returns:
        The :class:`TrainHistory` (including the part before a resume).

    Raises:
        TrainingDiverged: if the training loss becomes NaN or infinite.
        ValueError: if the schedule returns a non-positive batch size or a negative / non-finite LR.
    """
    world = current_world() if world is None else world
    if not world.is_distributed:
        return _Trainer(model, data, schedule, config, world).run(progress, max_steps)
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(rank_seed(config.seed, world.rank))  # rank-local randomness (dropout) differs by rank
        return _Trainer(model, data, schedule, config, world).run(progress, max_steps)


class _Trainer:
    """The state of one :func:`train_lm` call: model, optimizer, sampling generator, history, pending losses."""

    def __init__(self, model: nn.Module, data: TokenData, schedule: Schedule, config: TrainConfig, world: World):
        self.model, self.data, self.schedule, self.config, self.world = model, data, schedule, config, world
        self.generator = torch.Generator().manual_seed(config.seed)  # the same on every rank: one global batch
        self.optimizer = make_optimizer(model, config)
        self.base_weight_decay = [g["weight_decay"] for g in self.optimizer.param_groups]  # before a resume
        self.weight_decay_multiplier = getattr(schedule, "weight_decay_multiplier", None)
        self.history = TrainHistory()
        self.ckpt = Path(config.checkpoint_path) if config.checkpoint_path else None
        self.device = next(model.parameters()).device  # batches follow the model (a GPU run moves the model first)
        # On one GPU the step's loss stays on the device until the next flush (no host read inside a step).
        self.deferred = self.device.type == "cuda" and not world.is_distributed
        self.pending: list[Tensor] = []
        self._resume()
        self.flops_per_token = model.flops_per_token(config.context_len) if hasattr(model, "flops_per_token") else 0.0
        # Gradients averaged over the ranks (rank 0's initial weights broadcast to all); the identity on one process.
        # Buffers are rank-local statistics (an MoE layer's counts): no sync per forward.
        self.net = data_parallel(model, world, device=self.device, find_unused_parameters=True, sync_buffers=False)

    def _resume(self) -> None:
        """Load the checkpoint if there is one (rank 0 reads it and sends it to the others)."""
        resume = self.ckpt is not None and self.world.is_main and self.ckpt.is_file()
        if self.world.is_distributed:
            resume = broadcast_object(resume)
        if not resume:
            return
        state = torch.load(self.ckpt, weights_only=False, map_location="cpu") if self.world.is_main else None
        if self.world.is_distributed:
            state = broadcast_object(state)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.history = TrainHistory(**state["history"])

    def evaluate(self) -> float:
        c = self.config
        return evaluate(
            self.model, self.data, c.context_len, c.eval_tokens, c.micro_batch_size, world=self.world,
            autocast=c.autocast,
        )  # fmt: skip

    def run(self, progress: Any | None, max_steps: int | None) -> TrainHistory:
        config, history = self.config, self.history
        self.model.train()
        if progress is not None and history.tokens_seen:
            progress.update(history.tokens_seen)
        if not history.eval_tokens:
            history.eval_step.append(0)
            history.eval_tokens.append(0)
            history.val_loss.append(self.evaluate())
        steps_this_call = 0
        t_start = time.perf_counter()
        while history.tokens_seen < config.total_tokens and (max_steps is None or steps_this_call < max_steps):
            step, seen = history.steps_done, history.tokens_seen
            batch, lr = self._step(step, seen)
            seen += batch * config.context_len
            steps_this_call += 1
            if progress is not None:
                progress.update(batch * config.context_len)
                if not self.deferred:
                    progress.set_postfix(
                        loss=f"{history.train_loss[-1]:.3f}", lr=f"{lr:.2e}", batch=batch, refresh=False
                    )
            if len(self.pending) >= _FLUSH_EVERY:
                self._flush()
            # Step 6: evaluation at each crossing of eval_every_tokens, and at the end.
            every = config.eval_every_tokens
            crossed = every and seen // every > (seen - batch * config.context_len) // every
            if crossed or seen >= config.total_tokens:
                self._flush()
                history.eval_step.append(step + 1)
                history.eval_tokens.append(seen)
                history.val_loss.append(self.evaluate())
            if (
                self.ckpt is not None
                and config.checkpoint_every_steps
                and (step + 1) % config.checkpoint_every_steps == 0
            ):
                self._flush()
                history.wall_time_s += time.perf_counter() - t_start
                t_start = time.perf_counter()
                if self.world.is_main:
                    _save_checkpoint(self.ckpt, self.model, self.optimizer, self.generator, history)
        self._flush()
        history.wall_time_s += time.perf_counter() - t_start
        if self.ckpt is not None and self.world.is_main:
            _save_checkpoint(self.ckpt, self.model, self.optimizer, self.generator, history)
        return history

    def _plan(self, step: int, seen: int) -> tuple[int, float, float]:
        """Steps 1-2: the batch (cut at the budget), the LR and the weight-decay factor of this step."""
        plan = self.schedule(step, seen)
        if plan.batch_size <= 0:
            raise ValueError(f"schedule returned batch_size={plan.batch_size} at step {step}; it must be positive")
        if not (math.isfinite(plan.lr) and plan.lr >= 0):
            raise ValueError(f"schedule returned lr={plan.lr} at step {step}; it must be finite and non-negative")
        # Step 1: cut the last batch so that the run ends at the token budget.
        batch = min(plan.batch_size, math.ceil((self.config.total_tokens - seen) / self.config.context_len))
        wd_scale = 1.0 if self.weight_decay_multiplier is None else float(self.weight_decay_multiplier(seen))
        if not (math.isfinite(wd_scale) and wd_scale >= 0):
            raise ValueError(
                f"schedule returned weight_decay_multiplier={wd_scale} at step {step}; it must be finite and >= 0"
            )
        return batch, plan.lr, wd_scale

    def _step(self, step: int, seen: int) -> tuple[int, float]:
        """One optimizer step (module docstring, steps 1-5); returns its batch and LR."""
        config, world, history = self.config, self.world, self.history
        T = config.context_len
        batch, lr, wd_scale = self._plan(step, seen)
        for group, wd in zip(self.optimizer.param_groups, self.base_weight_decay, strict=True):  # Step 2
            group["lr"] = lr
            group["weight_decay"] = wd * wd_scale
        x, y = self.data.sample(batch, T, self.generator)  # Step 3: (B, T) each, drawn on the CPU for reproducibility
        empty_shard = False
        if world.is_distributed:  # this rank's contiguous shard of the global batch
            rows = shard_range(batch, world.rank, world.size)
            empty_shard = len(rows) == 0  # a cut last batch smaller than the world: join the all-reduce with 0
            cut = slice(rows.start, rows.stop) if not empty_shard else slice(0, 1)
            x, y = x[cut], y[cut]
        x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum: float | Tensor = torch.zeros((), dtype=torch.float64, device=self.device) if self.deferred else 0.0
        micro = list(zip(x.split(config.micro_batch_size), y.split(config.micro_batch_size), strict=True))
        for i, (xs, ys) in enumerate(micro):
            # Step 4: micro-batch loss weighted by its share of the batch (times the world size: DDP averages).
            weight = 0.0 if empty_shard else xs.shape[0] / batch
            sync = self.net is self.model or i == len(micro) - 1
            with contextlib.nullcontext() if sync else self.net.no_sync():
                with _autocast(self.device, config.autocast):
                    out = self.net(xs, ys)
                    loss = (out.loss + out.aux_loss) * (weight * world.size)
                loss.backward()
            if self.deferred:
                loss_sum += out.loss.detach().double() * xs.shape[0] / batch  # the same float64 sum, on the GPU
            else:
                loss_sum += 0.0 if empty_shard else out.loss.item() * xs.shape[0] / batch  # as one process sums it
        if world.is_distributed:
            (loss_sum,) = all_reduce_sum([loss_sum])
        if not self.deferred and not math.isfinite(loss_sum):
            raise TrainingDiverged(f"training loss is {loss_sum} at step {step} (lr={lr}, batch={batch})")
        if config.grad_clip is not None:  # Step 5
            nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.optimizer.step()
        history.step.append(step)
        history.tokens.append(seen + batch * T)
        history.lr.append(lr)
        history.batch_size.append(batch)
        if self.deferred:
            self.pending.append(loss_sum)
        else:
            history.train_loss.append(loss_sum)
        history.flops += self.flops_per_token * batch * T
        return batch, lr

    def _flush(self) -> None:
        """Move the losses kept on the GPU into the history (one host read) and check them for divergence."""
        if not self.pending:
            return
        values = torch.stack(self.pending).tolist()
        first = len(self.history.train_loss)
        self.pending = []
        for i, value in enumerate(values):
            if not math.isfinite(value):
                step = first + i
                raise TrainingDiverged(
                    f"training loss is {value} at step {step} (lr={self.history.lr[step]}, "
                    f"batch={self.history.batch_size[step]})"
                )
        self.history.train_loss.extend(values)


#: Steps whose losses a GPU run keeps on the device before reading them back (and checking them) at once.
_FLUSH_EVERY = 64
