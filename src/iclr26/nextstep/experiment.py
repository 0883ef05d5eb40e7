"""Reproduction of NextStep-1's central claim at CPU scale: the units of work and ``run``.

NextStep-1: Toward Autoregressive Image Generation with Continuous Tokens at Scale, ICLR 2026, arXiv 2508.10711. An
AR transformer with a flow-matching head on continuous tokens against a VQ tokenizer with a discrete head and a plain
regression head, each with and without guidance.

1. Data: class-labelled grey images (the bundled 8x8 digits by default, or ``--set data=PATH``), a fixed stratified
   split; prompts ``[<prompt>, <class>, <boi>]``.
2. Tokenizers (once): a continuous conv autoencoder (channel norm, latent noise regularisation) and a VQ one with the
   same architecture plus a codebook; a digit classifier on the real training images (the metrics' judge).
3. Per seed, arms with the same transformer, head network, steps, batch and learning rate (one shared batch order
   per seed, paired): ``fm`` (continuous tokens, flow-matching head: NextStep-1), ``reg`` (continuous tokens,
   regression head), ``vq`` (VQ tokens, discrete head) and ``fm_shuffled`` (the control: ``fm`` trained on prompts
   whose labels were permuted across images). Each trained with ``L = 0.01 CE_text + L_im`` and 10% prompt dropout
   (the null prompt), then sampled with guidance off (w = 1) and on (w = ``cfg_scale``) from the same noise.
4. Metrics per (arm, guidance): faithfulness (the judge's accuracy against the prompt), Fréchet distance of the
   judge's features to held-out real images, within-class pixel diversity; the verdict
   (:mod:`iclr26.nextstep.verdict`) on them.

Units of work (``iclr26 run nextstep --resume RUN_DIR``): ``tokenizer-continuous``, ``tokenizer-vq``,
``classifier``, and ``<arm>-seed<k>`` (training, sampling with and without guidance, metrics). With
``checkpoint_every > 0`` a unit's training also saves its state every that many steps, and a resumed run continues
an interrupted unit from its last checkpoint instead of from step 0.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, on_main, shard_range
from iclr26.common.experiment import UNITS_DIR, Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.nextstep.config import Arm, NextStepConfig
from iclr26.nextstep.data import Split, prompt_ids
from iclr26.nextstep.heads import DiscreteHead, FlowMatchingHead, RegressionHead, logit_normal_t
from iclr26.nextstep.metrics import (
    DigitClassifier,
    faithfulness,
    frechet_distance,
    train_classifier,
    within_class_diversity,
)
from iclr26.nextstep.model import ARTransformer, nextstep_loss
from iclr26.nextstep.sampler import generate
from iclr26.nextstep.tokenizer import Tokenizer, TokenizerSpec, train_tokenizer
from iclr26.nextstep.verdict import METRICS, SETTINGS, Measurements, comparisons, verdict


@dataclass(frozen=True)
class TrainedTokenizer:
    """The unit ``tokenizer-<kind>``: weights and reconstruction error on held-out images.

    Attributes:
        spec: architecture.
        state: ``state_dict`` as CPU tensors.
        test_mse: mean squared reconstruction error of held-out images (pixel scale [0, 1]).
    """

    spec: TokenizerSpec
    state: dict[str, Tensor]
    test_mse: float


@dataclass(frozen=True)
class TrainedClassifier:
    """The unit ``classifier``: the judge's weights and its accuracy on held-out real images."""

    state: dict[str, Tensor]
    test_accuracy: float


@dataclass(frozen=True)
class SampleMetrics:
    """Metrics of one arm's samples at one guidance setting.

    Attributes:
        faithfulness: classifier accuracy against the prompted class, in [0, 1].
        fd: Fréchet distance of classifier features to the held-out real images.
        diversity: mean within-class pairwise pixel distance.
    """

    faithfulness: float
    fd: float
    diversity: float


@dataclass(frozen=True)
class ArmResult:
    """The unit ``<arm>-seed<k>``.

    Attributes:
        no_cfg: metrics with guidance off (w = 1).
        cfg: metrics with guidance ``cfg_scale``.
        final_loss: mean total training loss over the last 10% of steps.
        head_params: parameters of the image head.
        grid: ``(K, 8, S, S)`` guided samples for the figure (8 per class).
    """

    no_cfg: SampleMetrics
    cfg: SampleMetrics
    final_loss: float
    head_params: int
    grid: np.ndarray


def cpu_state(module: nn.Module) -> dict[str, Tensor]:
    """The module's weights as CPU tensors (what a unit stores)."""
    return {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}


def restore(module: nn.Module, state: dict[str, Tensor], device: torch.device) -> nn.Module:
    """``module`` with the weights ``state``, on ``device``, in eval mode."""
    module.load_state_dict(state)
    return module.to(device).eval()


def train_tokenizer_unit(
    config: NextStepConfig, split: Split, kind: Literal["continuous", "vq"], device: torch.device
) -> TrainedTokenizer:
    """Train the ``kind`` tokenizer on the training images (on ``device``) and measure its held-out error."""
    spec = TokenizerSpec(
        kind=kind, latent_channels=config.latent_channels, patch=config.patch, width=config.tokenizer_width,
        num_codes=config.num_codes if kind == "vq" else 0,
    )  # fmt: skip
    gen = torch_generator(derive_seed(config.data_seed, "tokenizer", kind))
    torch.manual_seed(derive_seed(config.data_seed, "tokenizer-init", kind))
    tok = train_tokenizer(
        split.train.images.to(device), spec, steps=config.tokenizer_steps, noise_strength=config.noise_strength,
        generator=gen,
    )  # fmt: skip
    test = split.test.images.to(device)
    mse = float(((tok.reconstruct(test) - test) ** 2).mean())
    return TrainedTokenizer(spec=spec, state=cpu_state(tok), test_mse=mse)


def train_judge(config: NextStepConfig, split: Split, device: torch.device) -> TrainedClassifier:
    """Train the digit classifier on the real training images (on ``device``): the metrics' judge."""
    torch.manual_seed(derive_seed(config.data_seed, "classifier-init"))
    gen = torch_generator(derive_seed(config.data_seed, "classifier"))
    clf = train_classifier(
        split.train.images.to(device), split.train.labels.to(device), split.train.num_classes,
        steps=config.classifier_steps, generator=gen,
    )  # fmt: skip
    acc = faithfulness(clf, split.test.images.to(device), split.test.labels.to(device))
    return TrainedClassifier(state=cpu_state(clf), test_accuracy=acc)


def make_head(config: NextStepConfig, arm: Arm, token_dim: int) -> nn.Module:
    """The image head of ``arm``: the same AdaLN network, read as velocity (fm), regression (reg) or logits (vq)."""
    kw = {"dim": config.head_dim, "layers": config.head_layers}
    if arm in ("fm", "fm_shuffled"):
        return FlowMatchingHead(token_dim, config.d_model, batch_mul=config.batch_mul, **kw)
    if arm == "reg":
        return RegressionHead(token_dim, config.d_model, **kw)
    return DiscreteHead(config.num_codes, config.d_model, token_dim=token_dim, **kw)


def sample_metrics(images: Tensor, prompted: Tensor, clf: DigitClassifier, real_features: np.ndarray) -> SampleMetrics:
    """Faithfulness, Fréchet distance and within-class diversity of ``images`` sampled for ``prompted``."""
    with torch.no_grad():
        feats = clf.features(images).cpu().numpy()
    return SampleMetrics(
        faithfulness=faithfulness(clf, images, prompted),
        fd=frechet_distance(feats, real_features),
        diversity=within_class_diversity(images.cpu(), prompted.cpu()),
    )


class LossModule(nn.Module):
    """The transformer and the image head as one module whose forward is the training loss (what is wrapped for
    data parallelism)."""

    def __init__(self, model: nn.Module, head: nn.Module, config: NextStepConfig) -> None:
        super().__init__()
        self.model, self.head = model, head
        self.lm_weight, self.im_weight = config.lm_weight, config.im_weight

    def forward(self, prompts: Tensor, image: Tensor, targets: Tensor | None, noise) -> Tensor:  # noqa: ANN001
        """``L = lm_weight CE_text + im_weight L_im`` of a (shard of a) batch."""
        with torch.autocast(device_type=image.device.type, dtype=torch.bfloat16, enabled=image.device.type == "cuda"):
            return nextstep_loss(
                self.model, self.head, prompts, image, image_targets=targets, lm_weight=self.lm_weight,
                im_weight=self.im_weight, noise=noise,
            ).total  # fmt: skip


def train_step(net, head, prompts, tokens, codes, idx, loss_gen, world: World, opt) -> Tensor:  # noqa: ANN001
    """One training step on this rank's contiguous shard of the global batch ``idx`` (the whole batch in one process).

    The flow-matching noise ``(t, eps)`` is drawn for the *whole* batch from ``loss_gen`` exactly as one process
    draws it (:func:`~iclr26.nextstep.heads.flow_matching_loss`: ``t`` then ``eps`` for the ``B·N·batch_mul``
    repeated rows) and each rank takes its rows, so the ranks' losses are the one-process loss's terms. The shard's
    mean loss is weighted by ``world size × B_r / B`` (text CE and image loss are means over rows proportional to
    ``B``) and the wrapper averages the gradients: the one-process step up to float summation order.

    Returns:
        This rank's weighted loss (detached); summed over the ranks it is the global batch's loss.
    """
    B, N, d = len(idx), tokens.shape[1], tokens.shape[2]
    shard = shard_range(B, world.rank, world.size)
    rows = idx[shard.start : shard.stop].to(tokens.device)
    noise = None
    if isinstance(head, FlowMatchingHead):
        total = B * N * head.batch_mul
        t = logit_normal_t(total, generator=loss_gen, device=tokens.device, dtype=tokens.dtype)
        eps = torch.randn((total, d), generator=loss_gen, device=tokens.device, dtype=tokens.dtype)
        keep = torch.cat(
            [torch.arange(m * B * N + shard.start * N, m * B * N + shard.stop * N) for m in range(head.batch_mul)]
        ).to(tokens.device)
        noise = (t[keep], eps[keep])
    local = net(prompts[shard.start : shard.stop], tokens[rows], codes[rows] if codes is not None else None, noise)
    share = local * (len(shard) / B)
    opt.zero_grad()
    (share * world.size).backward()
    opt.step()
    return share.detach()


@dataclass
class TrainState:
    """What an arm's training carries from step to step (and a checkpoint holds)."""

    model: ARTransformer
    head: nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LRScheduler
    order: torch.Generator
    loss_gen: torch.Generator
    losses: list[float]
    step: int = 0

    def state_dict(self) -> dict[str, Any]:
        """The checkpoint of this state."""
        return {
            "model": self.model.state_dict(), "head": self.head.state_dict(), "opt": self.opt.state_dict(),
            "sched": self.sched.state_dict(), "order": self.order.get_state(), "loss_gen": self.loss_gen.get_state(),
            "losses": self.losses, "step": self.step,
        }  # fmt: skip

    def load(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint."""
        self.model.load_state_dict(state["model"])
        self.head.load_state_dict(state["head"])
        self.opt.load_state_dict(state["opt"])
        self.sched.load_state_dict(state["sched"])
        self.order.set_state(state["order"])
        self.loss_gen.set_state(state["loss_gen"])
        self.losses, self.step = state["losses"], state["step"]


def new_train_state(
    config: NextStepConfig, arm: Arm, seed: int, K: int, N: int, d: int, device: torch.device
) -> TrainState:
    """The arm's freshly initialised transformer, head, optimiser, schedule and generators."""
    torch.manual_seed(derive_seed(seed, "init"))
    model = ARTransformer(
        vocab_size=K + 3, token_dim=d, d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
        context_len=3 + N,
    ).to(device)  # fmt: skip
    head = make_head(config, arm, d).to(device)
    fused = {"fused": True} if device.type == "cuda" else {}
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=config.lr, **fused)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, config.steps)
    order = torch_generator(derive_seed(seed, "order"))
    return TrainState(model, head, opt, sched, order, torch_generator(derive_seed(seed, "loss", arm), device), [])


def fit_arm(
    config: NextStepConfig, arm: Arm, seed: int, split: Split, tokenizer: Tokenizer, device: torch.device,
    world: World, checkpoint: Path | None,
) -> TrainState:  # fmt: skip
    """Train one arm: every arm of a seed sees the same batch order and prompt dropout (paired comparison)."""
    K = split.train.num_classes
    tokens, codes = tokenizer.tokens(split.train.images.to(device))  # (M, N, d), (M, N) or None
    labels = split.train.labels.clone()
    if arm == "fm_shuffled":  # the control: prompts carry no information about the image
        labels = labels[torch.randperm(len(labels), generator=torch_generator(derive_seed(seed, "shuffle")))]
    labels = labels.to(device)
    st = new_train_state(config, arm, seed, K, tokens.shape[1], tokens.shape[2], device)
    saved = read_checkpoint(checkpoint, device, world)
    if saved is not None:
        st.load(saved)
    net = data_parallel(LossModule(st.model, st.head, config), world, device=device)
    pending: list[Tensor] = []  # per-step losses, read back at checkpoints and at the end (no per-step sync)
    M = tokens.shape[0]
    for step in range(st.step, config.steps):
        idx = torch.randint(0, M, (min(config.batch_size, M),), generator=st.order)
        drop = torch.rand(len(idx), generator=st.order) < config.cond_dropout
        prompts = prompt_ids(labels[idx.to(device)], K)
        prompts[drop.to(device), 1] = K  # the null prompt
        pending.append(train_step(net, st.head, prompts, tokens, codes, idx, st.loss_gen, world, st.opt))
        st.sched.step()
        st.step = step + 1
        if checkpoint is not None and config.checkpoint_every and st.step % config.checkpoint_every == 0:
            flush(st.losses, pending, world)
            if world.is_main:
                save_atomic(st.state_dict(), checkpoint)
    flush(st.losses, pending, world)
    return st


def flush(losses: list[float], pending: list[Tensor], world: World) -> None:
    """Append the pending per-step losses (summed over the ranks) to ``losses``."""
    values = [float(x) for x in pending]
    losses.extend(all_reduce_sum(values) if world.is_distributed else values)
    pending.clear()


def sample_arm(
    config: NextStepConfig, st: TrainState, split: Split, tokenizer: Tokenizer, clf: DigitClassifier, seed: int,
    device: torch.device,
) -> ArmResult:  # fmt: skip
    """Sample the trained arm with guidance off and on (the same noise) and measure the samples."""
    K, N = split.train.num_classes, st.model.cfg.context_len - 3
    st.model.eval()
    st.head.eval()
    prompted = torch.arange(K, device=device).repeat_interleave(config.samples_per_class)
    real_features = clf.features(split.test.images.to(device)).detach().cpu().numpy()
    codebook = tokenizer.vq.codebook.detach() if tokenizer.vq is not None else None
    out = {}
    for name, w in (("no_cfg", 1.0), ("cfg", config.cfg_scale)):
        gen = torch_generator(derive_seed(seed, "sample"), device)  # the same noise for both settings
        sampled = generate(
            st.model, st.head, prompt_ids(prompted, K), num_tokens=N, null_prompts=prompt_ids(prompted, K, null=True),
            cfg_scale=w, steps=config.sample_steps, last_step=config.last_step, shift=config.timestep_shift,
            sde=config.sde, codebook=codebook, generator=gen,
        )  # fmt: skip
        with torch.no_grad():
            images = tokenizer.ae.decode(sampled).clamp(0.0, 1.0)
        out[name] = (sample_metrics(images, prompted, clf, real_features), images)
    guided = out["cfg"][1].reshape(K, config.samples_per_class, *out["cfg"][1].shape[-2:])
    tail = max(1, config.steps // 10)
    return ArmResult(
        no_cfg=out["no_cfg"][0],
        cfg=out["cfg"][0],
        final_loss=float(np.mean(st.losses[-tail:])),
        head_params=sum(p.numel() for p in st.head.parameters()),
        grid=guided[:, :8].cpu().numpy(),
    )


def train_arm(
    config: NextStepConfig, arm: Arm, seed: int, split: Split, tokenizer: Tokenizer, clf: DigitClassifier,
    device: torch.device, *, world: World = SINGLE, checkpoint: Path | None = None,
) -> ArmResult:  # fmt: skip
    """Train one arm for ``seed``, sample with and without guidance, and measure the samples.

    Args:
        world: the run's processes (``ctx.world``); each rank trains on its shard of every batch.
        checkpoint: where the training state (model, head, optimiser, schedule, both generators, losses, step) is
            saved every ``config.checkpoint_every`` steps; if the file exists, training continues from it and ends
            exactly where an uninterrupted run would. None: no checkpoints.
    """
    st = fit_arm(config, arm, seed, split, tokenizer, device, world, checkpoint)
    return sample_arm(config, st, split, tokenizer, clf, seed, device)


def read_checkpoint(checkpoint: Path | None, device: torch.device, world: World) -> dict[str, Any] | None:
    """The training state saved at ``checkpoint``, or None; under torchrun rank 0 reads it and sends it to all."""
    if not world.is_distributed:
        if checkpoint is not None and checkpoint.is_file():
            return torch.load(checkpoint, map_location=device, weights_only=False)
        return None
    return on_main(
        lambda: (
            torch.load(checkpoint, map_location="cpu", weights_only=False)
            if checkpoint is not None and checkpoint.is_file()
            else None
        )
    )


def save_atomic(state: dict[str, Any], path: Path) -> None:
    """``torch.save`` via a temporary file and a rename: a killed run never leaves half a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def run(config: NextStepConfig, ctx: RunContext) -> Outcome:
    """Train tokenizers, judge and every (arm, seed); compare FM with its baselines, guidance on and off."""
    device = ctx.device
    if device.type == "cuda":  # TF32 matmuls on the GPU only: CPU results stay bit-identical
        torch.backends.cuda.matmul.allow_tf32 = True
    wall = time.perf_counter()
    split = config.load_data()
    K = split.train.num_classes
    ctx.log(f"images: {len(split.train.labels)} train / {len(split.test.labels)} test, {K} classes, device {device}")
    kinds = ("continuous", "vq") if "vq" in config.arms else ("continuous",)
    toks = {k: ctx.unit(f"tokenizer-{k}", lambda k=k: train_tokenizer_unit(config, split, k, device)) for k in kinds}
    judge = ctx.unit("classifier", lambda: train_judge(config, split, device))
    clf = restore(DigitClassifier(split.train.side, K), judge.state, device)
    tokenizers = {k: restore(Tokenizer(t.spec), t.state, device) for k, t in toks.items()}
    results: dict[str, list[ArmResult]] = {arm: [] for arm in config.arms}
    with ctx.progress(total=config.n_seeds * len(config.arms), desc="arms x seeds") as bar:
        for k in range(config.n_seeds):
            seed = derive_seed(config.seed, "seed", k)
            for arm in config.arms:
                tok = tokenizers["vq" if arm == "vq" else "continuous"]
                key = f"{arm}-seed{k}"
                # in-unit checkpoints live beside the units and go with them once the record is written
                ckpt = ctx.out_dir / UNITS_DIR / f"{key}.ckpt.pt" if config.checkpoint_every else None
                res = ctx.unit(
                    key,
                    lambda arm=arm, seed=seed, tok=tok, ckpt=ckpt: train_arm(
                        config, arm, seed, split, tok, clf, device, world=ctx.world, checkpoint=ckpt
                    ),
                )
                results[arm].append(res)
                bar.update(1)
    ceilings = tokenizer_ceilings(tokenizers, clf, split, device)
    measured = measurements(results, judge, ceilings)
    metrics = collect_metrics(config, results, measured, toks, judge) | {"tokenizer_ceiling": ceilings}
    plot(config, ctx, results, metrics["arms"])
    return Outcome.of(verdict(measured, config), metrics=metrics, timings={"wall_s": time.perf_counter() - wall})


def tokenizer_ceilings(
    tokenizers: dict[str, Tokenizer], clf: DigitClassifier, split: Split, device: torch.device
) -> dict[str, dict[str, float]]:
    """Per tokenizer, the judge on its reconstructions of the held-out real images: the faithfulness (and Fréchet
    distance) an arm generating with that tokenizer could at best reach."""
    test, labels = split.test.images.to(device), split.test.labels.to(device)
    with torch.no_grad():
        real = clf.features(test).cpu().numpy()
        out = {}
        for kind, tok in tokenizers.items():
            rec = tok.reconstruct(test).clamp(0.0, 1.0)  # decoded and clamped as the samples are
            fd = frechet_distance(clf.features(rec).cpu().numpy(), real)
            out[kind] = {"faithfulness": faithfulness(clf, rec, labels), "fd": fd}
    return out


def measurements(
    results: dict[str, list[ArmResult]], judge: TrainedClassifier, ceilings: dict[str, dict[str, float]]
) -> Measurements:
    """The verdict's inputs: every arm's per-seed sample metrics, the judge's accuracy, the tokenizer ceilings."""
    samples = {
        arm: {s: {m: [getattr(getattr(r, s), m) for r in rs] for m in METRICS} for s in SETTINGS}
        for arm, rs in results.items()
    }
    return Measurements(
        samples=samples,
        judge_accuracy=judge.test_accuracy,
        ceilings={k: c["faithfulness"] for k, c in ceilings.items()},
    )


def collect_metrics(
    config: NextStepConfig,
    results: dict[str, list[ArmResult]],
    measured: Measurements,
    toks: dict[str, TrainedTokenizer],
    judge: TrainedClassifier,
) -> dict[str, Any]:
    """The record's metrics: per arm and setting, the unguided comparisons, tokenizer errors and judge accuracy."""
    arms = {
        arm: {
            s: {m: {"mean": measured.mean(arm, s, m), "per_seed": measured.series(arm, s, m).tolist()} for m in METRICS}
            for s in SETTINGS
        }
        | {"final_loss": [r.final_loss for r in rs], "head_params": rs[0].head_params}
        for arm, rs in results.items()
    }
    return {
        "arms": arms,
        "comparisons_no_cfg": comparisons(measured, "no_cfg", level=config.ci_level),
        "tokenizer_test_mse": {k: t.test_mse for k, t in toks.items()},
        "classifier_test_accuracy": judge.test_accuracy,
    }


def plot(
    config: NextStepConfig, ctx: RunContext, results: dict[str, list[ArmResult]], arms_metrics: dict[str, Any]
) -> None:
    """A sample grid per arm (seed 0, guided) and the metrics per arm and setting."""
    for arm, rs in results.items():
        grid = rs[0].grid  # (K, 8, S, S), seed 0
        K, m, S = grid.shape[0], grid.shape[1], grid.shape[-1]
        mosaic = grid.transpose(0, 2, 1, 3).reshape(K * S, m * S)
        fig, ax = figure(width=m * 0.6 + 1, height=K * 0.6 + 0.5)
        ax.imshow(mosaic, cmap="gray", vmin=0, vmax=1)
        ax.set_axis_off()
        ax.set_title(f"{arm}, guided w={config.cfg_scale:g}, seed 0 (one row per class)", fontsize=8)
        ctx.save_plot(fig, f"samples_{arm}.png")
    fig, axes = figure(ncols=2)
    arms = list(results)
    x = np.arange(len(arms))
    for ax, metric, label in ((axes[0][0], "faithfulness", "faithfulness"), (axes[0][1], "fd", "Fréchet distance")):
        for j, setting in enumerate(SETTINGS):
            vals = [arms_metrics[a][setting][metric]["per_seed"] for a in arms]
            sds = [np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in vals]
            ax.bar(x + 0.4 * j - 0.2, [np.mean(v) for v in vals], width=0.4, yerr=sds, capsize=3, label=setting)
        ax.set_xticks(x, arms)
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0][0].axhline(config.min_faithfulness, color="grey", lw=0.8, ls="--")
    fig.suptitle(f"mean ± sd over {config.n_seeds} seed(s)")
    ctx.save_plot(fig, "metrics.png")


EXPERIMENT = Experiment(config_cls=NextStepConfig, run=run, data_parallel=True)
