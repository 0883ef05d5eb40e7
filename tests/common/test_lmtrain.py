"""The LM trainer: schedules, token counting, accumulation invariance, learning, bit-identical resume."""

import math

import numpy as np
import pytest
import torch

from iclr26.common.lmtrain import (
    BatchPlan,
    CosineSchedule,
    TokenData,
    TrainConfig,
    TrainingDiverged,
    train_lm,
)
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from tests.conftest import torchrun

MODEL = TinyLMConfig(context_len=16, d_model=32, n_layers=1, n_heads=2, d_ff=64)


def periodic_data() -> TokenData:
    """A highly predictable byte stream ('abcd...' repeated with a period of 7) that a tiny LM learns fast."""
    stream = np.array([97 + (i % 7) for i in range(20_000)], dtype=np.uint8)
    return TokenData(stream[:18_000], stream[18_000:])


def test_cosine_schedule_by_hand():
    s = CosineSchedule(peak_lr=1.0, batch_size=4, total_tokens=1100, warmup_tokens=100, final_lr_frac=0.1)
    assert s(0, 49) == BatchPlan(0.5, 4)  # warmup: (49 + 1) / 100
    assert s(3, 100).lr == pytest.approx(1.0)
    assert s(9, 600).lr == pytest.approx(0.1 + 0.9 * 0.5)  # half-way through the decay: cos(pi/2) = 0
    assert s(9, 1100).lr == pytest.approx(0.1) and s(9, 5000).lr == pytest.approx(0.1)
    with pytest.raises(ValueError, match="'warmup_tokens'"):
        CosineSchedule(peak_lr=1.0, batch_size=4, total_tokens=100, warmup_tokens=100)


def test_loss_decreases_and_tokens_are_counted():
    torch.manual_seed(0)
    model = TinyLM(MODEL)
    cfg = TrainConfig(total_tokens=16 * 8 * 40, context_len=16, eval_every_tokens=16 * 8 * 20, eval_tokens=256)
    history = train_lm(
        model, periodic_data(), CosineSchedule(peak_lr=1e-2, batch_size=8, total_tokens=cfg.total_tokens), cfg
    )
    assert history.steps_done == 40 and history.tokens[-1] == cfg.total_tokens
    assert history.eval_tokens == [0, 16 * 8 * 20, 16 * 8 * 40]
    assert history.val_loss[-1] < 0.5 * history.val_loss[0]  # the period-7 stream is almost deterministic
    assert history.flops == pytest.approx(model.flops_per_token(16) * cfg.total_tokens)


def test_last_batch_is_cut_at_the_token_budget():
    model = TinyLM(MODEL)
    cfg = TrainConfig(total_tokens=16 * 10, context_len=16, eval_tokens=64)
    history = train_lm(model, periodic_data(), lambda step, seen: BatchPlan(1e-3, 4), cfg)
    assert history.batch_size == [4, 4, 2] and history.tokens[-1] == 160


def test_accumulation_over_micro_batches_matches_one_big_batch():
    def final_params(micro):
        torch.manual_seed(0)
        model = TinyLM(MODEL).double()
        cfg = TrainConfig(total_tokens=16 * 8 * 3, context_len=16, micro_batch_size=micro, eval_tokens=64)
        train_lm(model, periodic_data(), lambda step, seen: BatchPlan(1e-2, 8), cfg)
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    torch.testing.assert_close(final_params(8), final_params(3), rtol=1e-9, atol=1e-11)


def test_resume_from_checkpoint_is_bit_identical(tmp_path):
    def fresh():
        torch.manual_seed(1)
        return TinyLM(MODEL)

    schedule = CosineSchedule(peak_lr=5e-3, batch_size=4, total_tokens=16 * 4 * 12)
    base = dict(total_tokens=16 * 4 * 12, context_len=16, eval_every_tokens=16 * 4 * 4, eval_tokens=128, seed=3)
    straight = fresh()
    h_straight = train_lm(straight, periodic_data(), schedule, TrainConfig(**base))

    ckpt = tmp_path / "lm.ckpt"
    cfg = TrainConfig(**base, checkpoint_path=str(ckpt), checkpoint_every_steps=5)
    train_lm(fresh(), periodic_data(), schedule, cfg, max_steps=7)  # "killed" after 7 steps (checkpoint at 5, 7)
    resumed = fresh()  # a new process would start from a fresh model and load the checkpoint
    h_resumed = train_lm(resumed, periodic_data(), schedule, cfg)
    for a, b in zip(straight.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
    assert h_resumed.train_loss == h_straight.train_loss and h_resumed.val_loss == h_straight.val_loss


def test_bad_schedules_and_divergence_raise():
    model = TinyLM(MODEL)
    cfg = TrainConfig(total_tokens=16 * 40, context_len=16, eval_tokens=64)
    with pytest.raises(ValueError, match="batch_size=0 at step 0"):
        train_lm(model, periodic_data(), lambda step, seen: BatchPlan(1e-3, 0), cfg)
    with pytest.raises(ValueError, match="lr=nan"):
        train_lm(model, periodic_data(), lambda step, seen: BatchPlan(math.nan, 2), cfg)
    with torch.no_grad():
        model.head.weight.fill_(math.inf)
    with pytest.raises(TrainingDiverged, match="at step 0"):
        train_lm(model, periodic_data(), lambda step, seen: BatchPlan(1e-3, 2), cfg)


class ScaledDecay:
    """A constant schedule with a weight-decay multiplier (the optional part of the Schedule protocol)."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, step: int, tokens_seen: int) -> BatchPlan:
        return BatchPlan(1e-2, 4)

    def weight_decay_multiplier(self, tokens_seen: int) -> float:
        return self.factor


def test_schedule_weight_decay_multiplier_scales_the_configured_decay():
    # AdamW's decoupled decay θ ← θ − η λ θ: λ = 0.1 × 2 must equal λ = 0.2 bit for bit, and × 0 must equal λ = 0.
    def final_params(weight_decay: float, schedule) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = TinyLM(MODEL)
        cfg = TrainConfig(total_tokens=16 * 4 * 6, context_len=16, weight_decay=weight_decay, eval_tokens=64)
        train_lm(model, periodic_data(), schedule, cfg)
        return [p.detach().clone() for p in model.parameters()]

    plain = lambda step, seen: BatchPlan(1e-2, 4)  # noqa: E731
    for got, want in ((final_params(0.1, ScaledDecay(2.0)), final_params(0.2, plain)),
                      (final_params(0.1, ScaledDecay(0.0)), final_params(0.0, plain))):  # fmt: skip
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(final_params(0.1, plain), final_params(0.0, plain), strict=True))
    with pytest.raises(ValueError, match="weight_decay_multiplier=-1.0 at step 0"):
        final_params(0.1, ScaledDecay(-1.0))


# -- data parallel (torchrun, gloo): 2 ranks vs 1 rank with 2 accumulation steps -----------------------------------

# Trains the float64 TinyLM of DDP_RUN under torchrun and saves rank 0's history, final parameters and the rows every
# rank trained on. The run is split at step 3 and resumed from rank 0's checkpoint by a fresh model.
DDP_SCRIPT = r"""
import json, sys
from dataclasses import asdict

import torch
import torch.distributed as dist

sys.path[:0] = [sys.argv[1], sys.argv[1] + "/../.."]  # this folder, and the checkout for `tests`
from test_lmtrain import ddp_run

from iclr26.common import distributed as D

world = D.world_from_env()
D.init_process_group(world, timeout=60)
history, params, rows = ddp_run(micro=2, checkpoint=sys.argv[2] + "/lm.ckpt")
everyone = [None] * world.size
dist.all_gather_object(everyone, rows)
if world.is_main:
    torch.save({"history": asdict(history), "params": params, "rows": everyone}, sys.argv[2] + "/out.pt")
D.destroy_process_group(synchronise=True)
"""


def ddp_run(*, micro: int, checkpoint: str | None = None):
    """The run compared in the test: batches of 8 (shards 4 + 4), 3 (2 + 1) and a cut last batch of 1 (1 + 0),
    7 validation windows (4 + 3); random bytes, so that every training window is distinct.

    Returns the history, the final parameters (flat) and the training rows this process fed to the model, per step.
    """
    rng = np.random.default_rng(5)
    stream = rng.integers(0, 256, 30_000).astype(np.uint8)
    data = TokenData(stream[:25_000], stream[25_000:])
    total = 16 * (8 * 3 + 3 * 3 + 1)  # 3 steps of 8, 3 of 3, then 1 sequence left

    def schedule(step, seen):
        return BatchPlan(3e-3, 8 if step < 3 else 3)

    def fresh(seed):
        torch.manual_seed(seed)
        return TinyLM(MODEL).double()

    rows: list[list[bytes]] = []

    def record(module, args):
        if module.training:
            rows.append([r.numpy().tobytes() for r in args[0]])

    base = dict(total_tokens=total, context_len=16, micro_batch_size=micro, eval_every_tokens=16 * 8, eval_tokens=112)
    model = fresh(0)
    if checkpoint is not None:  # stopped after 3 steps, resumed by a fresh model (other init) from the checkpoint
        cfg = TrainConfig(**base, checkpoint_path=checkpoint, checkpoint_every_steps=1)
        model.register_forward_pre_hook(record)
        train_lm(model, data, schedule, cfg, max_steps=3)
        model = fresh(99)
    else:
        cfg = TrainConfig(**base)
    model.register_forward_pre_hook(record)
    history = train_lm(model, data, schedule, cfg)
    return history, torch.cat([p.detach().flatten() for p in model.parameters()]), rows


def test_two_ranks_follow_one_rank_with_two_accumulation_steps(tmp_path):
    """torchrun --nproc_per_node=2 (gloo) vs one process: same global batches, so the same trajectory.

    Tolerance: float64, where the two differ only in the order of summing gradients (DDP's all-reduce of two
    halves vs accumulation of micro-batches) and losses; 1e-9 is far above float64 rounding after 8 steps and far
    below any real difference (one changed batch row moves the loss by ~1e-3).
    """
    from pathlib import Path

    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    proc = torchrun(str(script), str(Path(__file__).parent), str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr
    two = torch.load(tmp_path / "out.pt", weights_only=False)
    history, params, rows = ddp_run(micro=2)  # one process: micro-batches of 2, i.e. 2 or 4 accumulation steps

    assert two["history"]["batch_size"] == history.batch_size == [8, 8, 8, 3, 3, 3, 1]
    assert two["history"]["tokens"] == history.tokens and two["history"]["eval_tokens"] == history.eval_tokens
    np.testing.assert_allclose(two["history"]["train_loss"], history.train_loss, rtol=0, atol=1e-9)
    np.testing.assert_allclose(two["history"]["val_loss"], history.val_loss, rtol=0, atol=1e-9)
    torch.testing.assert_close(two["params"], params, rtol=0, atol=1e-9)

    # Disjoint shards: the rows rank 0 and rank 1 trained on never overlap, and together they are the one-process
    # batches (34 distinct windows: 3 x 8 + 3 x 3 + 1). The one exception is the last step, whose single sequence
    # goes to rank 0: rank 1 then joins the gradient all-reduce with a zero-weight forward of that same row.
    rank0, rank1 = ([row for call in fed for row in call] for fed in two["rows"])
    one = [row for call in rows for row in call]
    assert len(one) == len(set(one)) == 34
    assert set(rank0) & set(rank1) == {one[-1]} and rank1.count(one[-1]) == 1
    assert sorted(rank0 + rank1) == sorted([*one, one[-1]])
    assert len(rank0) == 4 * 3 + 2 * 3 + 1 and len(rank1) == 4 * 3 + 1 * 3 + 1  # shards 4 + 4, 2 + 1, 1 + 0
