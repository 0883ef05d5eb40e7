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

Under ``torchrun`` (an initialised process group, :mod:`iclr26.common.distributed`) the same loop is data parallel
with DistributedDataParallel, and the config's batch stays the global batch:

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
import inspect
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
from iclr26.common.distributed import all_reduce_sum, broadcast_object, current_world, rank_seed, shard_range


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
def evaluate(model: nn.Module, data: TokenData, context_len: int, n_tokens: int, micro_batch_size: int) -> float:
    """Mean next-token cross-entropy (nats) over the fixed validation windows (model put back in its mode).

    Under torchrun every rank evaluates its shard of the windows and the sums are reduced over the ranks (every rank
    must call it), giving the mean over all windows.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    windows = data.eval_windows(context_len, n_tokens)  # (N, T + 1)
    world = current_world()
    if world.is_distributed:
        shard = shard_range(len(windows), world.rank, world.size)
        windows = windows[shard.start : shard.stop]
    windows = windows.to(device)
    total, count = 0.0, 0
    for chunk in windows.split(micro_batch_size):
        out = model(chunk[:, :-1], chunk[:, 1:])
        total += out.loss.item() * chunk[:, 1:].numel()
        count += chunk[:, 1:].numel()
    model.train(was_training)
    if world.is_distributed:
        total, count = all_reduce_sum([total, count])
    return total / count


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on parameters of dimension ≥ 2 only (matrices and embeddings)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=0.0, betas=config.betas, eps=config.eps)


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
) -> TrainHistory:
    """Train ``model`` on ``data`` until ``config.total_tokens`` (or ``max_steps`` more steps) — see module doc.

    Args:
        model: a :class:`~iclr26.common.tinylm.TinyLM` (or any module with the same forward contract).
        data: training and validation tokens.
        schedule: ``(step, tokens_seen) -> BatchPlan``.
        config: budget, optimizer and cadence settings.
        progress: optional tqdm-like bar (``update(n_tokens)``, ``set_postfix``) with ``total=total_tokens``.
        max_steps: stop after this many steps in this call (e.g. to split a run; the checkpoint allows resuming).

    Returns:
        The :class:`TrainHistory` (including the part before a resume).

    Raises:
        TrainingDiverged: if the training loss becomes NaN or infinite.
        ValueError: if the schedule returns a non-positive batch size or a negative / non-finite LR.
    """
    world = current_world()
    if not world.is_distributed:
        return _train(model, data, schedule, config, progress=progress, max_steps=max_steps)
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(rank_seed(config.seed, world.rank))  # rank-local randomness (dropout) differs by rank
        return _train(model, data, schedule, config, progress=progress, max_steps=max_steps)


def _train(
    model: nn.Module,
    data: TokenData,
    schedule: Schedule,
    config: TrainConfig,
    *,
    progress: Any | None,
    max_steps: int | None,
) -> TrainHistory:
    world = current_world()
    generator = torch.Generator().manual_seed(config.seed)  # the same on every rank: one global batch, sharded
    optimizer = make_optimizer(model, config)
    base_weight_decay = [group["weight_decay"] for group in optimizer.param_groups]  # before a resume overwrites them
    weight_decay_multiplier = getattr(schedule, "weight_decay_multiplier", None)
    history = TrainHistory()
    ckpt = Path(config.checkpoint_path) if config.checkpoint_path else None
    resume = ckpt is not None and world.is_main and ckpt.is_file()
    if world.is_distributed:
        resume = broadcast_object(resume)  # rank 0 reads the checkpoint and sends it to the others
    if resume:
        state = torch.load(ckpt, weights_only=False, map_location="cpu") if world.is_main else None
        if world.is_distributed:
            state = broadcast_object(state)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        history = TrainHistory(**state["history"])
    flops_per_token = model.flops_per_token(config.context_len) if hasattr(model, "flops_per_token") else 0.0
    T = config.context_len
    device = next(model.parameters()).device  # batches follow the model (a GPU run moves the model first)
    net = model
    if world.is_distributed:  # gradients averaged over the ranks; rank 0's initial weights broadcast to all
        ddp = nn.parallel.DistributedDataParallel
        no_buffer_sync = (  # newer torch renames the option
            {"forward_sync_buffers": False}
            if "forward_sync_buffers" in inspect.signature(ddp.__init__).parameters
            else {"broadcast_buffers": False}
        )
        net = ddp(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            find_unused_parameters=True,  # an MoE expert may receive no token in a step
            **no_buffer_sync,
        )
    model.train()
    if progress is not None and history.tokens_seen:
        progress.update(history.tokens_seen)
    if not history.eval_tokens:
        history.eval_step.append(0)
        history.eval_tokens.append(0)
        history.val_loss.append(evaluate(model, data, T, config.eval_tokens, config.micro_batch_size))

    steps_this_call = 0
    t_start = time.perf_counter()
    while history.tokens_seen < config.total_tokens and (max_steps is None or steps_this_call < max_steps):
        step, seen = history.steps_done, history.tokens_seen
        plan = schedule(step, seen)
        if plan.batch_size <= 0:
            raise ValueError(f"schedule returned batch_size={plan.batch_size} at step {step}; it must be positive")
        if not (math.isfinite(plan.lr) and plan.lr >= 0):
            raise ValueError(f"schedule returned lr={plan.lr} at step {step}; it must be finite and non-negative")
        # Step 1: cut the last batch so that the run ends at the token budget.
        batch = min(plan.batch_size, math.ceil((config.total_tokens - seen) / T))
        wd_scale = 1.0 if weight_decay_multiplier is None else float(weight_decay_multiplier(seen))
        if not (math.isfinite(wd_scale) and wd_scale >= 0):
            raise ValueError(
                f"schedule returned weight_decay_multiplier={wd_scale} at step {step}; it must be finite and >= 0"
            )
        for group, wd in zip(optimizer.param_groups, base_weight_decay, strict=True):  # Step 2
            group["lr"] = plan.lr
            group["weight_decay"] = wd * wd_scale
        x, y = data.sample(batch, T, generator)  # Step 3: (B, T) each, drawn on the CPU for reproducibility
        empty_shard = False
        if world.is_distributed:  # this rank's contiguous shard of the global batch
            shard = shard_range(batch, world.rank, world.size)
            empty_shard = len(shard) == 0  # a cut last batch smaller than the world: join the all-reduce with 0
            rows = slice(shard.start, shard.stop) if not empty_shard else slice(0, 1)
            x, y = x[rows], y[rows]
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        micro = list(zip(x.split(config.micro_batch_size), y.split(config.micro_batch_size), strict=True))
        for i, (xs, ys) in enumerate(micro):
            # Step 4: micro-batch loss weighted by its share of the batch (times the world size: DDP averages).
            weight = 0.0 if empty_shard else xs.shape[0] / batch
            sync = net is model or i == len(micro) - 1
            with contextlib.nullcontext() if sync else net.no_sync():
                out = net(xs, ys)
                loss = (out.loss + out.aux_loss) * (weight * world.size)
                loss.backward()
            loss_sum += 0.0 if empty_shard else out.loss.item() * xs.shape[0] / batch  # as one process sums it
        if world.is_distributed:
            (loss_sum,) = all_reduce_sum([loss_sum])
        if not math.isfinite(loss_sum):
            raise TrainingDiverged(f"training loss is {loss_sum} at step {step} (lr={plan.lr}, batch={batch})")
        if config.grad_clip is not None:  # Step 5
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        seen += batch * T
        history.step.append(step)
        history.tokens.append(seen)
        history.lr.append(plan.lr)
        history.batch_size.append(batch)
        history.train_loss.append(loss_sum)
        history.flops += flops_per_token * batch * T
        steps_this_call += 1
        if progress is not None:
            progress.update(batch * T)
            progress.set_postfix(loss=f"{loss_sum:.3f}", lr=f"{plan.lr:.2e}", batch=batch, refresh=False)
        # Step 6: evaluation at each crossing of eval_every_tokens, and at the end.
        crossed = (
            config.eval_every_tokens
            and seen // config.eval_every_tokens > (seen - batch * T) // config.eval_every_tokens
        )
        if crossed or seen >= config.total_tokens:
            history.eval_step.append(step + 1)
            history.eval_tokens.append(seen)
            history.val_loss.append(evaluate(model, data, T, config.eval_tokens, config.micro_batch_size))
        if ckpt is not None and config.checkpoint_every_steps and (step + 1) % config.checkpoint_every_steps == 0:
            history.wall_time_s += time.perf_counter() - t_start
            t_start = time.perf_counter()
            if world.is_main:
                _save_checkpoint(ckpt, model, optimizer, generator, history)
    history.wall_time_s += time.perf_counter() - t_start
    if ckpt is not None and world.is_main:
        _save_checkpoint(ckpt, model, optimizer, generator, history)
    return history
