"""Built-in check of the foundation: `iclr26 run selfcheck`.

It exercises the whole path a paper's reproduction takes — config presets and ``--set``, the corpus, the tiny
transformer LM and its trainer, progress bars, a plot and the run record — in seconds. Claim checked: after a short
training run, the validation cross-entropy is below ``ln 256`` (the loss of a uniform guess over bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from iclr26.common.corpus import load_corpus
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.lmtrain import CosineSchedule, TokenData, TrainConfig, TrainHistory, train_lm
from iclr26.common.plots import figure
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.selfcheck.config import SelfCheckConfig
from iclr26.selfcheck.verdict import Measurements, verdict


@dataclass(frozen=True)
class Trained:
    """The result of the training unit: the history and how many parameter tensors changed."""

    history: TrainHistory
    params_changed: int
    n_params: int


def train(config: SelfCheckConfig, ctx: RunContext) -> Trained:
    """Train the tiny LM (the run's one unit of work)."""
    data = TokenData.from_corpus(load_corpus(config.data))
    model = TinyLM(
        TinyLMConfig(
            context_len=config.context_len,
            d_model=config.d_model,
            n_layers=config.n_layers,
            n_heads=4,
            d_ff=4 * config.d_model,
        )
    )
    before = [p.detach().clone() for p in model.parameters()]
    train_cfg = TrainConfig(
        total_tokens=config.total_tokens,
        context_len=config.context_len,
        eval_every_tokens=config.total_tokens // 4,
        eval_tokens=4096,
        seed=config.seed,
    )
    schedule = CosineSchedule(
        peak_lr=config.lr,
        batch_size=config.batch_size,
        total_tokens=config.total_tokens,
        warmup_tokens=config.total_tokens // 10,
    )
    with ctx.progress(total=config.total_tokens, desc="selfcheck tokens") as bar:
        history = train_lm(model, data, schedule, train_cfg, progress=bar)
    changed = sum(int(not torch.equal(a, b)) for a, b in zip(before, model.parameters(), strict=True))
    return Trained(history, changed, model.num_params(embeddings=True))


def run(config: SelfCheckConfig, ctx: RunContext) -> Outcome:
    """Train the tiny LM and compare its validation loss with ln 256."""
    trained = ctx.unit("train", lambda: train(config, ctx))
    history = trained.history

    fig, ax = figure()
    ax.plot(history.tokens, history.train_loss, label="train")
    ax.plot(history.eval_tokens, history.val_loss, "o-", label="validation")
    ax.axhline(math.log(256), color="grey", ls="--", label="ln 256")
    ax.set(xlabel="tokens", ylabel="cross-entropy (nats)", title="selfcheck: tiny LM")
    ax.legend()
    ctx.save_plot(fig, "loss.png")

    measured = Measurements(history.final_val_loss, trained.params_changed, history.steps_done)
    return Outcome.of(
        verdict(measured),
        metrics={
            "val_loss": history.val_loss,
            "eval_tokens": history.eval_tokens,
            "steps": history.steps_done,
            "params_changed": trained.params_changed,
            "n_params": trained.n_params,
            "flops": history.flops,
        },
        timings={"train_wall_time_s": history.wall_time_s},
    )


EXPERIMENT = Experiment(config_cls=SelfCheckConfig, run=run)
