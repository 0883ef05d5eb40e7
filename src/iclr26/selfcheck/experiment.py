"""Built-in check of the foundation: `iclr26 run selfcheck`.

It exercises the whole path a paper's reproduction takes — config presets and ``--set``, the corpus, the tiny
transformer LM and its trainer, progress bars, a plot and the run record — in seconds. Claim checked: after a short
training run, the validation cross-entropy is below ``ln 256`` (the loss of a uniform guess over bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from iclr26.common.config import ExperimentConfig, require
from iclr26.common.corpus import check_text_data, load_corpus
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.lmtrain import CosineSchedule, TokenData, TrainConfig, TrainHistory, train_lm
from iclr26.common.plots import figure
from iclr26.common.tinylm import TinyLM, TinyLMConfig


@dataclass(frozen=True)
class SelfCheckConfig(ExperimentConfig):
    """A tiny LM run; defaults are the `cpu` scale (not in any paper: chosen to take well under a minute)."""

    data: str | None = field(
        default=None, metadata={"help": "UTF-8 text file or folder of them; default: the Python stdlib"}
    )
    context_len: int = field(default=64, metadata={"help": "tokens per sequence"})
    d_model: int = field(default=64, metadata={"help": "model width"})
    n_layers: int = field(default=2, metadata={"help": "transformer blocks"})
    batch_size: int = field(default=16, metadata={"help": "sequences per step"})
    total_tokens: int = field(default=64 * 16 * 200, metadata={"help": "training budget in tokens"})
    lr: float = field(default=3e-3, metadata={"help": "peak AdamW learning rate"})

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"total_tokens": 64 * 16 * 20},
        "gpu": {
            "d_model": 256,
            "n_layers": 4,
            "context_len": 256,
            "batch_size": 64,
            "total_tokens": 256 * 64 * 2000,
        },
    }
    ALIASES: ClassVar[dict[str, str]] = {"corpus": "data"}

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("context_len", "d_model", "n_layers", "batch_size", "total_tokens"):
            require(getattr(self, name) > 0, name, f"must be positive, got {getattr(self, name)}")
        require(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check_text_data(self.data, field="data", min_tokens=self.context_len + 2)


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

    final, uniform = history.final_val_loss, math.log(256)
    return Outcome(
        metrics={
            "val_loss": history.val_loss,
            "eval_tokens": history.eval_tokens,
            "steps": history.steps_done,
            "params_changed": trained.params_changed,
            "n_params": trained.n_params,
            "flops": history.flops,
        },
        claim_held=final < uniform,
        evidence={
            "final_val_loss": final,
            "uniform_loss": uniform,
            "thresholds": {"uniform_loss": {"value": uniform, "source": "cross-entropy of a uniform guess, ln 256"}},
        },
        timings={"train_wall_time_s": history.wall_time_s},
        measurement=f"val loss {final:.3f} nats after {history.steps_done} steps (ln 256 = {uniform:.3f})",
    )


EXPERIMENT = Experiment(config_cls=SelfCheckConfig, run=run)
