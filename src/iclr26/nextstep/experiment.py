"""Reproduction of NextStep-1's central claim at CPU scale: an AR transformer with a flow-matching head on continuous
tokens against a VQ tokenizer with a discrete head and a plain regression head, each with and without guidance.

NextStep-1: Toward Autoregressive Image Generation with Continuous Tokens at Scale, ICLR 2026, arXiv 2508.10711.

1. Data: class-labelled grey images (the bundled 8x8 digits by default, or ``--set data=PATH``), a fixed stratified
   split; prompts ``[<prompt>, <class>, <boi>]``.
2. Tokenizers (once): a continuous conv autoencoder (channel norm, latent noise regularisation) and a VQ one with the
   same architecture plus a codebook; a digit classifier on the real training images (the metrics' judge).
3. Per seed, arms with the same transformer, head network, steps, batch and learning rate (one shared batch order
   per seed, paired):
   - ``fm``: continuous tokens, flow-matching head (NextStep-1);
   - ``reg``: continuous tokens, regression (MSE) head;
   - ``vq``: VQ tokens, discrete head (cross-entropy over codes);
   - ``fm_shuffled`` (control): ``fm`` trained on prompts whose labels were permuted across images.
   Each trained with ``L = 0.01 CE_text + L_im`` and 10% prompt dropout (the null prompt), then sampled with guidance
   off (w = 1) and on (w = ``cfg_scale``) from the same noise.
4. Metrics per (arm, guidance): faithfulness (classifier accuracy against the prompt), Fréchet distance of classifier
   features to held-out real images, within-class pixel diversity.
5. Verdict (fixed before the run): with guidance on, FM beats regression and VQ on the Fréchet distance and on
   faithfulness (each paired over seeds, the 95% Student-t interval of the mean difference above 0); guidance raises
   FM's faithfulness (same test); FM's guided faithfulness reaches ``min_faithfulness``; and the control
   ``fm_shuffled`` stays below ``min_faithfulness`` (it must fail the bar that the claim needs FM to pass).

Units of work (``iclr26 run nextstep --resume RUN_DIR``): ``tokenizer-continuous``, ``tokenizer-vq``,
``classifier``, and ``<arm>-seed<k>`` (training, sampling with and without guidance, metrics). With
``checkpoint_every > 0`` (the gpu preset) a unit's training also saves its state every that many steps, and a resumed
run continues an interrupted unit from its last checkpoint instead of from step 0.

Deviations (see the README): 8x8 digits and class prompts instead of web-scale text-image data; a tiny f2
autoencoder instead of the FLUX-derived f8 VAE; a 2-layer transformer trained from scratch instead of a 14B LLM;
metrics from a small classifier instead of GenEval/FID; no staged training, annealing, SFT or DPO.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import Tensor, nn

from iclr26.common.config import ConfigError, ExperimentConfig, require, threshold
from iclr26.common.device import resolve_device
from iclr26.common.distributed import all_reduce_sum, current_world, on_main, shard_range
from iclr26.common.experiment import UNITS_DIR, Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.stats import paired_t
from iclr26.nextstep.data import Split, load_digits_set, load_user_images, prompt_ids, split_set
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

Arm = Literal["fm", "reg", "vq", "fm_shuffled"]
ALL_ARMS: tuple[Arm, ...] = ("fm", "reg", "vq", "fm_shuffled")
BASELINES: tuple[Arm, ...] = ("reg", "vq")


def _opt(default: Any, help_text: str) -> Any:
    """A config field with its help text (the source of the default is in parentheses)."""
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class NextStepConfig(ExperimentConfig):
    """The NextStep-1 comparison on labelled small images; defaults are the ``cpu`` scale."""

    data: Path | None = _opt(
        None,
        "your images: a folder with one sub-folder per class of .png or .npy images, or an .npz with 'images' "
        "(M, S, S) and integer 'labels' (M,); default: scikit-learn's bundled 8x8 digits",
    )
    image_side: int = _opt(8, "images are resized to this side, divisible by 2*patch (digits: 8, native)")
    test_fraction: float = _opt(0.2, "held-out share per class, the Fréchet reference (not in the paper; usual 80/20)")
    data_seed: int = _opt(0, "seed of the split, fixed across --seed (not in the paper)")
    arms: tuple[Arm, ...] = _opt(
        ALL_ARMS, "arms from fm, reg, vq, fm_shuffled (the control); fm must run, the verdict needs all four"
    )
    n_seeds: int = _opt(5, "seeds per arm, paired (not in the paper; 5 fit the 10-minute cpu budget, 4 dof)")
    latent_channels: int = _opt(4, "C, tokenizer latent channels (official 16 at f8; CPU-sized at f2)")
    patch: int = _opt(2, "p, latent patch side per token (official latent_patch_size 2)")
    tokenizer_width: int = _opt(16, "conv width of the tokenizer (not in the paper; CPU-sized)")
    tokenizer_steps: int = _opt(
        400, "tokenizer Adam steps (not in the paper; held-out MSE < 1e-2 vs pixel variance 0.17)"
    )
    noise_strength: float = _opt(
        0.2, "latent noise s ~ U(0, noise_strength) in tokenizer training (official config key; value ours)"
    )
    num_codes: int = _opt(64, "K, VQ codebook size (not in the paper; the quantization baseline)")
    d_model: int = _opt(64, "transformer width D (official 14B Qwen2.5; CPU-sized)")
    n_layers: int = _opt(2, "transformer blocks (not in the paper; CPU-sized)")
    n_heads: int = _opt(4, "attention heads (not in the paper)")
    head_dim: int = _opt(64, "image head width (official fm_head_dim 1536)")
    head_layers: int = _opt(3, "image head residual blocks (official fm_head_layers 12)")
    batch_mul: int = _opt(4, "repeats of each token in the FM loss with fresh (t, eps) (official fm_head_batch_mul 4)")
    lm_weight: float = _opt(0.01, "weight of the text cross-entropy (official lm_loss_weight 0.01)")
    im_weight: float = _opt(1.0, "weight of the image loss (official im_loss_weight 1.0)")
    steps: int = _opt(500, "AR training steps per arm, equal for all arms (not in the paper; CPU budget)")
    batch_size: int = _opt(64, "images per AR step (not in the paper)")
    lr: float = _opt(2e-3, "Adam learning rate with cosine decay, same for all arms (not in the paper; untuned)")
    cond_dropout: float = _opt(
        0.1, "share of prompts replaced by the null prompt in training, for guidance (usual 10%)"
    )
    cfg_scale: float = _opt(
        3.0, "guidance scale w of the guided samples (official example: 7.5; ours fixed before runs)"
    )
    sample_steps: int = _opt(20, "flow sampler grid points (official num_sampling_steps default 20)")
    last_step: float = _opt(0.04, "final deterministic step of the flow sampler (official last_step_size 0.04)")
    timestep_shift: float = _opt(1.0, "flow sampler time shift (official default 1.0)")
    sde: bool = _opt(True, "Euler-Maruyama on the SDE (official sampler); False: Euler ODE")
    samples_per_class: int = _opt(50, "samples per class and guidance setting (not in the paper; metric noise)")
    classifier_steps: int = _opt(1500, "judge classifier Adam steps (not in the paper; converges on digits)")
    min_faithfulness: float = _opt(
        0.5,
        "faithfulness bar FM must reach and the shuffled-label control must not (not in the paper; fixed before any "
        "run at 5x the 10-class chance level)",
    )
    ci_level: float = _opt(0.95, "level of the paired Student-t intervals of the verdict (usual 95%, fixed in advance)")
    device: str = _opt("cpu", "torch device of training and sampling: cpu, cuda, cuda:N or auto (gpu scale: cuda)")
    checkpoint_every: int = _opt(
        0,
        "save the training state of an (arm, seed) every this many steps; --resume continues from it. 0 = off: at "
        "cpu scale a unit is a minute, at gpu scale (1000) it is hours (not in the paper)",
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "n_seeds": 1, "arms": ("fm", "reg"), "tokenizer_steps": 20, "steps": 10, "samples_per_class": 3,
            "classifier_steps": 20, "sample_steps": 4, "d_model": 32, "head_dim": 32, "head_layers": 1,
            "num_codes": 8,
        },
        "gpu": {
            "image_side": 16, "n_seeds": 10, "latent_channels": 8, "tokenizer_width": 64, "tokenizer_steps": 5000,
            "d_model": 256, "n_layers": 6, "n_heads": 8, "head_dim": 256, "head_layers": 6, "steps": 20_000,
            "batch_size": 256, "lr": 5e-4, "samples_per_class": 200, "num_codes": 512, "device": "cuda",
            "checkpoint_every": 1000,
        },
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        require(len(set(self.arms)) == len(self.arms), "arms", f"arms must be distinct, got {self.arms}")
        require("fm" in self.arms, "arms", f"must include fm (the method), got {self.arms}")
        require(self.n_seeds >= 1, "n_seeds", f"must be >= 1, got {self.n_seeds}")
        require(self.patch >= 1, "patch", f"must be >= 1, got {self.patch}")
        require(
            self.image_side >= 2 * self.patch and self.image_side % (2 * self.patch) == 0,
            "image_side",
            f"must be a positive multiple of 2*patch = {2 * self.patch} (f2 tokenizer, then patches), got "
            f"{self.image_side}",
        )
        require(0.0 < self.test_fraction < 1.0, "test_fraction", f"must lie in (0, 1), got {self.test_fraction}")
        for name in (
            "latent_channels", "tokenizer_width", "tokenizer_steps", "d_model", "n_layers", "n_heads", "head_dim",
            "head_layers", "batch_mul", "steps", "classifier_steps", "samples_per_class",
        ):  # fmt: skip
            require(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        require(self.d_model % self.n_heads == 0, "n_heads", f"must divide d_model={self.d_model}")
        require((self.d_model // self.n_heads) % 2 == 0, "n_heads", "d_model/n_heads must be even (RoPE)")
        require(self.num_codes >= 2, "num_codes", f"must be >= 2, got {self.num_codes}")
        require(self.batch_size >= 2, "batch_size", f"must be >= 2, got {self.batch_size}")
        require(self.noise_strength >= 0, "noise_strength", f"must be >= 0, got {self.noise_strength}")
        require(self.lr > 0, "lr", f"must be > 0, got {self.lr}")
        for name in ("lm_weight", "im_weight"):
            require(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")
        require(0.0 <= self.cond_dropout < 1.0, "cond_dropout", f"must lie in [0, 1), got {self.cond_dropout}")
        require(self.cfg_scale > 1.0, "cfg_scale", f"must be > 1 (guided arm), got {self.cfg_scale}")
        require(self.sample_steps >= 2, "sample_steps", f"must be >= 2, got {self.sample_steps}")
        require(0.0 < self.last_step < 1.0, "last_step", f"must lie in (0, 1), got {self.last_step}")
        require(self.timestep_shift > 0, "timestep_shift", f"must be > 0, got {self.timestep_shift}")
        require(
            0.0 < self.min_faithfulness < 1.0, "min_faithfulness", f"must lie in (0, 1), got {self.min_faithfulness}"
        )
        require(0.5 <= self.ci_level < 1.0, "ci_level", f"must lie in [0.5, 1), got {self.ci_level}")
        require(self.checkpoint_every >= 0, "checkpoint_every", f"must be >= 0 (0 = off), got {self.checkpoint_every}")
        if self.data is not None:
            self.load_data()

    def load_data(self) -> Split:
        """The configured images, split.

        Raises:
            ConfigError: naming ``data`` (or ``test_fraction``) when the user's data cannot be used.
        """
        if self.data is None:
            images = load_digits_set(side=self.image_side)
        else:
            try:
                images = load_user_images(self.data, side=self.image_side)
            except ValueError as err:
                raise ConfigError(f"config field 'data': {err}") from None
        try:
            return split_set(images, test_fraction=self.test_fraction, seed=self.data_seed)
        except ValueError as err:
            raise ConfigError(f"config field 'data': {err} (or lower test_fraction)") from None


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


def _restore(module: nn.Module, state: dict[str, Tensor], device: torch.device) -> nn.Module:
    module.load_state_dict(state)
    return module.to(device).eval()


def _tokenizer_unit(config: NextStepConfig, split: Split, kind: Literal["continuous", "vq"]) -> TrainedTokenizer:
    spec = TokenizerSpec(
        kind=kind, latent_channels=config.latent_channels, patch=config.patch, width=config.tokenizer_width,
        num_codes=config.num_codes if kind == "vq" else 0,
    )  # fmt: skip
    gen = torch_generator(derive_seed(config.data_seed, "tokenizer", kind))
    torch.manual_seed(derive_seed(config.data_seed, "tokenizer-init", kind))
    tok = train_tokenizer(
        split.train.images, spec, steps=config.tokenizer_steps, noise_strength=config.noise_strength, generator=gen
    )
    mse = float(((tok.reconstruct(split.test.images) - split.test.images) ** 2).mean())
    return TrainedTokenizer(
        spec=spec, state={k: v.detach().cpu().clone() for k, v in tok.state_dict().items()}, test_mse=mse
    )


def _classifier_unit(config: NextStepConfig, split: Split) -> TrainedClassifier:
    torch.manual_seed(derive_seed(config.data_seed, "classifier-init"))
    gen = torch_generator(derive_seed(config.data_seed, "classifier"))
    clf = train_classifier(
        split.train.images, split.train.labels, split.train.num_classes, steps=config.classifier_steps, generator=gen
    )
    acc = faithfulness(clf, split.test.images, split.test.labels)
    return TrainedClassifier(
        state={k: v.detach().cpu().clone() for k, v in clf.state_dict().items()}, test_accuracy=acc
    )


def make_head(config: NextStepConfig, arm: Arm, token_dim: int) -> nn.Module:
    """The image head of ``arm``: the same AdaLN network, read as velocity (fm), regression (reg) or logits (vq)."""
    kw = {"dim": config.head_dim, "layers": config.head_layers}
    if arm in ("fm", "fm_shuffled"):
        return FlowMatchingHead(token_dim, config.d_model, batch_mul=config.batch_mul, **kw)
    if arm == "reg":
        return RegressionHead(token_dim, config.d_model, **kw)
    return DiscreteHead(config.num_codes, config.d_model, token_dim=token_dim, **kw)


def _sample_metrics(images: Tensor, prompted: Tensor, clf: DigitClassifier, real_features: np.ndarray) -> SampleMetrics:
    with torch.no_grad():
        feats = clf.features(images).cpu().numpy()
    return SampleMetrics(
        faithfulness=faithfulness(clf, images, prompted),
        fd=frechet_distance(feats, real_features),
        diversity=within_class_diversity(images.cpu(), prompted.cpu()),
    )


def train_arm(
    config: NextStepConfig,
    arm: Arm,
    seed: int,
    split: Split,
    tokenizer: Tokenizer,
    clf: DigitClassifier,
    device: torch.device,
    *,
    checkpoint: Path | None = None,
) -> ArmResult:
    """Train one arm for ``seed``, sample with and without guidance, and measure the samples.

    Every arm of a seed sees the same batch order, prompt dropout and sampling prompts (paired comparison).

    Args:
        checkpoint: where the training state (model, head, optimiser, schedule, both generators, losses, step) is
            saved every ``config.checkpoint_every`` steps; if the file exists, training continues from it and ends
            exactly where an uninterrupted run would. None: no checkpoints.
    """
    K = split.train.num_classes
    x_train = split.train.images.to(device)
    tokens, codes = tokenizer.tokens(x_train)  # (M, N, d), (M, N) or None
    N, d = tokens.shape[1], tokens.shape[2]
    labels = split.train.labels.clone()
    if arm == "fm_shuffled":  # the control: prompts carry no information about the image
        labels = labels[torch.randperm(len(labels), generator=torch_generator(derive_seed(seed, "shuffle")))]
    labels = labels.to(device)
    torch.manual_seed(derive_seed(seed, "init"))
    model = ARTransformer(
        vocab_size=K + 3, token_dim=d, d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
        context_len=3 + N,
    ).to(device)  # fmt: skip
    head = make_head(config, arm, d).to(device)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=config.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, config.steps)
    order = torch_generator(derive_seed(seed, "order"))
    loss_gen = torch_generator(derive_seed(seed, "loss", arm), device)
    M = x_train.shape[0]
    losses: list[float] = []
    start = 0
    world = current_world()
    state = _read_checkpoint(checkpoint, device)
    if state is not None:
        model.load_state_dict(state["model"])
        head.load_state_dict(state["head"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        order.set_state(state["order"])
        loss_gen.set_state(state["loss_gen"])
        losses, start = state["losses"], state["step"]
    net = None
    if world.is_distributed:  # model + head as one module whose forward is the loss; DDP averages its gradients
        net = nn.parallel.DistributedDataParallel(
            _LossModule(model, head, config), device_ids=[device.index] if device.type == "cuda" else None
        )
    for step in range(start, config.steps):
        idx = torch.randint(0, M, (min(config.batch_size, M),), generator=order)
        drop = torch.rand(len(idx), generator=order) < config.cond_dropout
        prompts = prompt_ids(labels[idx.to(device)], K)
        prompts[drop.to(device), 1] = K  # the null prompt
        if net is not None:
            loss = _sharded_step(net, head, prompts, tokens, codes, idx, loss_gen, world, opt)
            sched.step()
            losses.append(loss)
            if checkpoint is not None and config.checkpoint_every and (step + 1) % config.checkpoint_every == 0:
                if world.is_main:
                    _save_atomic(_train_state(model, head, opt, sched, order, loss_gen, losses, step), checkpoint)
            continue
        parts = nextstep_loss(
            model, head, prompts, tokens[idx.to(device)],
            image_targets=codes[idx.to(device)] if codes is not None else None,
            lm_weight=config.lm_weight, im_weight=config.im_weight, generator=loss_gen,
        )  # fmt: skip
        opt.zero_grad()
        parts.total.backward()
        opt.step()
        sched.step()
        losses.append(float(parts.total.detach()))
        if checkpoint is not None and config.checkpoint_every and (step + 1) % config.checkpoint_every == 0:
            state = {
                "model": model.state_dict(), "head": head.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict(), "order": order.get_state(), "loss_gen": loss_gen.get_state(),
                "losses": losses, "step": step + 1,
            }  # fmt: skip
            _save_atomic(state, checkpoint)
    model.eval()
    head.eval()
    prompted = torch.arange(K, device=device).repeat_interleave(config.samples_per_class)
    real_features = clf.features(split.test.images.to(device)).detach().cpu().numpy()
    codebook = tokenizer.vq.codebook.detach() if tokenizer.vq is not None else None
    out = {}
    for name, w in (("no_cfg", 1.0), ("cfg", config.cfg_scale)):
        gen = torch_generator(derive_seed(seed, "sample"), device)  # the same noise for both settings
        sampled = generate(
            model, head, prompt_ids(prompted, K), num_tokens=N, null_prompts=prompt_ids(prompted, K, null=True),
            cfg_scale=w, steps=config.sample_steps, last_step=config.last_step, shift=config.timestep_shift,
            sde=config.sde, codebook=codebook, generator=gen,
        )  # fmt: skip
        with torch.no_grad():
            images = tokenizer.ae.decode(sampled).clamp(0.0, 1.0)
        out[name] = (_sample_metrics(images, prompted, clf, real_features), images)
    guided = out["cfg"][1].reshape(K, config.samples_per_class, *out["cfg"][1].shape[-2:])
    tail = max(1, config.steps // 10)
    return ArmResult(
        no_cfg=out["no_cfg"][0],
        cfg=out["cfg"][0],
        final_loss=float(np.mean(losses[-tail:])),
        head_params=sum(p.numel() for p in head.parameters()),
        grid=guided[:, :8].cpu().numpy(),
    )


class _LossModule(nn.Module):
    """The transformer and the image head as one module whose forward is the training loss (what DDP wraps)."""

    def __init__(self, model: nn.Module, head: nn.Module, config: NextStepConfig) -> None:
        super().__init__()
        self.model, self.head = model, head
        self.lm_weight, self.im_weight = config.lm_weight, config.im_weight

    def forward(self, prompts: Tensor, image: Tensor, targets: Tensor | None, noise) -> Tensor:
        return nextstep_loss(
            self.model, self.head, prompts, image, image_targets=targets, lm_weight=self.lm_weight,
            im_weight=self.im_weight, noise=noise,
        ).total  # fmt: skip


def _sharded_step(net, head, prompts, tokens, codes, idx, loss_gen, world, opt) -> float:
    """One data-parallel training step on this rank's contiguous shard of the global batch ``idx``.

    The flow-matching noise ``(t, eps)`` is drawn for the *whole* batch from ``loss_gen`` exactly as one process
    draws it (:func:`~iclr26.nextstep.heads.flow_matching_loss`: ``t`` then ``eps`` for the ``B·N·batch_mul``
    repeated rows) and each rank takes its rows, so the ranks' losses are the one-process loss's terms. The shard's
    mean loss is weighted by ``world size × B_r / B`` (text CE and image loss are means over rows proportional to
    ``B``), DDP averages the gradients: the one-process step up to float summation order. Returns the global loss.
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
    local = net(
        prompts[shard.start : shard.stop], tokens[rows], codes[rows] if codes is not None else None, noise
    )  # the shard's mean loss
    share = local * (len(shard) / B)
    opt.zero_grad()
    (share * world.size).backward()
    opt.step()
    (loss,) = all_reduce_sum([float(share.detach())])
    return loss


def _train_state(model, head, opt, sched, order, loss_gen, losses, step) -> dict[str, Any]:
    return {
        "model": model.state_dict(), "head": head.state_dict(), "opt": opt.state_dict(),
        "sched": sched.state_dict(), "order": order.get_state(), "loss_gen": loss_gen.get_state(),
        "losses": losses, "step": step + 1,
    }  # fmt: skip


def _read_checkpoint(checkpoint: Path | None, device: torch.device) -> dict[str, Any] | None:
    """The training state saved at ``checkpoint``, or None; under torchrun rank 0 reads it and sends it to all."""
    if not current_world().is_distributed:
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


def _save_atomic(state: dict[str, Any], path: Path) -> None:
    """``torch.save`` via a temporary file and a rename: a killed run never leaves half a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def paired(a: np.ndarray, b: np.ndarray, *, level: float) -> dict[str, Any]:
    """Seed-paired difference ``d = a - b`` with a Student-t interval.

    Returns:
        ``mean``, ``se`` = sd / sqrt(n) (ddof 1), ``ci_low``/``ci_high`` = mean -/+ t_{(1+level)/2, n-1} se,
        ``wins`` (seeds with d > 0), ``n`` and ``above_zero`` (ci_low > 0; never with one seed), ``p`` (two-sided
        paired t-test; None with one seed or zero spread).
    """
    t = paired_t(a, b, level=level)  # the record's keys, from :func:`iclr26.common.stats.paired_t`
    if t.n < 2:
        return {"mean": t.mean, "se": None, "ci_low": None, "ci_high": None, "wins": t.wins, "n": t.n,
                "above_zero": False, "p": None}  # fmt: skip
    return {"mean": t.mean, "se": t.se, "ci_low": t.ci_low, "ci_high": t.ci_high, "wins": t.wins, "n": t.n,
            "above_zero": t.ci_low > 0, "p": t.p_two_sided if t.se > 0 else None}  # fmt: skip


def run(config: NextStepConfig, ctx: RunContext) -> Outcome:
    """Train tokenizers, judge and every (arm, seed); compare FM with its baselines, guidance on and off.

    Raises:
        ConfigError: naming ``device`` when that device is unavailable, before any work.
    """
    device = resolve_device(config.device)
    wall = time.perf_counter()
    split = config.load_data()
    K = split.train.num_classes
    ctx.log(f"images: {len(split.train.labels)} train / {len(split.test.labels)} test, {K} classes, device {device}")
    toks = {
        kind: ctx.unit(f"tokenizer-{kind}", lambda kind=kind: _tokenizer_unit(config, split, kind))
        for kind in (("continuous", "vq") if "vq" in config.arms else ("continuous",))
    }
    judge = ctx.unit("classifier", lambda: _classifier_unit(config, split))
    clf = _restore(DigitClassifier(split.train.side, K), judge.state, device)
    tokenizers = {k: _restore(Tokenizer(t.spec), t.state, device) for k, t in toks.items()}
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
                        config, arm, seed, split, tok, clf, device, checkpoint=ckpt
                    ),
                )
                results[arm].append(res)
                bar.update(1)
    return _outcome(config, ctx, results, toks, judge, time.perf_counter() - wall)


def _series(results: list[ArmResult], setting: str, metric: str) -> np.ndarray:
    return np.array([getattr(getattr(r, setting), metric) for r in results])


def _outcome(
    config: NextStepConfig,
    ctx: RunContext,
    results: dict[str, list[ArmResult]],
    toks: dict[str, TrainedTokenizer],
    judge: TrainedClassifier,
    wall_s: float,
) -> Outcome:
    level = config.ci_level
    arms_metrics = {
        arm: {
            setting: {
                m: {"mean": float(_series(rs, setting, m).mean()), "per_seed": _series(rs, setting, m).tolist()}
                for m in ("faithfulness", "fd", "diversity")
            }
            for setting in ("no_cfg", "cfg")
        }
        | {"final_loss": [r.final_loss for r in rs], "head_params": rs[0].head_params}
        for arm, rs in results.items()
    }
    fm = results["fm"]
    comparisons: dict[str, Any] = {}
    for other in (a for a in BASELINES if a in results):
        # positive = FM better: lower FD, higher faithfulness
        comparisons[f"fd_{other}_minus_fm"] = paired(
            _series(results[other], "cfg", "fd"), _series(fm, "cfg", "fd"), level=level
        )
        comparisons[f"faith_fm_minus_{other}"] = paired(
            _series(fm, "cfg", "faithfulness"), _series(results[other], "cfg", "faithfulness"), level=level
        )
    secondary = {}  # the same comparisons without guidance: reported, not part of the verdict
    for other in (a for a in BASELINES if a in results):
        secondary[f"fd_{other}_minus_fm"] = paired(
            _series(results[other], "no_cfg", "fd"), _series(fm, "no_cfg", "fd"), level=level
        )
        secondary[f"faith_fm_minus_{other}"] = paired(
            _series(fm, "no_cfg", "faithfulness"), _series(results[other], "no_cfg", "faithfulness"), level=level
        )
    comparisons["faith_fm_cfg_minus_no_cfg"] = paired(
        _series(fm, "cfg", "faithfulness"), _series(fm, "no_cfg", "faithfulness"), level=level
    )
    fm_faith = arms_metrics["fm"]["cfg"]["faithfulness"]["mean"]
    checks = {name: bool(c["above_zero"]) for name, c in comparisons.items()}
    checks["fm_reaches_min_faithfulness"] = fm_faith >= config.min_faithfulness
    missing = [a for a in ("reg", "vq", "fm_shuffled") if a not in results]
    control_faith = arms_metrics["fm_shuffled"]["cfg"]["faithfulness"]["mean"] if "fm_shuffled" in results else None
    control_fails = control_faith is not None and control_faith < config.min_faithfulness
    held = bool(not missing and all(checks.values()) and control_fails)
    evidence = {
        "comparisons_cfg_on": comparisons,
        "checks": checks,
        "fm_faithfulness_cfg": fm_faith,
        "control_fm_shuffled_faithfulness_cfg": control_faith,
        "control_fails_bar": control_fails,
        "arms_missing": missing,
        "n_seeds": config.n_seeds,
        "test": f"paired Student-t over seeds, {level:.0%} interval of the mean difference must lie above 0",
        "thresholds": {
            "min_faithfulness": threshold(config, "min_faithfulness"),
            "ci_level": threshold(config, "ci_level"),
            "cfg_scale": threshold(config, "cfg_scale"),
        },
    }
    metrics = {
        "arms": arms_metrics,
        "comparisons_no_cfg": secondary,
        "tokenizer_test_mse": {k: t.test_mse for k, t in toks.items()},
        "classifier_test_accuracy": judge.test_accuracy,
    }
    _plot(config, ctx, results, arms_metrics)
    parts = []
    for arm in results:
        m = arms_metrics[arm]
        parts.append(
            f"{arm}: faith {m['no_cfg']['faithfulness']['mean']:.2f}->{m['cfg']['faithfulness']['mean']:.2f}, "
            f"FD {m['cfg']['fd']['mean']:.1f}"
        )
    n = config.n_seeds
    measurement = f"{n} seed{'s' if n > 1 else ''}, guided w={config.cfg_scale:g}: " + "; ".join(parts)
    notes = f"Judge accuracy on held-out real images {judge.test_accuracy:.3f}. "
    if n == 1:
        notes += "One seed: the paired intervals are not defined, so no comparison can pass. "
    if missing:
        notes += f"Arms {missing} not run: the verdict needs them. "
    failed = [name for name, ok in checks.items() if not ok]
    if failed and n > 1:
        notes += "Failed checks: " + ", ".join(failed) + ". "
    if control_faith is not None and not control_fails:
        notes += "The shuffled-label control passed the faithfulness bar: the judge cannot tell prompts apart. "
    return Outcome(
        metrics=metrics, claim_held=held, evidence=evidence, measurement=measurement, notes=notes.strip(),
        timings={"wall_s": wall_s},
    )  # fmt: skip


def _plot(
    config: NextStepConfig, ctx: RunContext, results: dict[str, list[ArmResult]], arms_metrics: dict[str, Any]
) -> None:
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
        for j, setting in enumerate(("no_cfg", "cfg")):
            vals = [arms_metrics[a][setting][metric]["per_seed"] for a in arms]
            means = [np.mean(v) for v in vals]
            sds = [np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in vals]
            ax.bar(x + 0.4 * j - 0.2, means, width=0.4, yerr=sds, capsize=3, label=setting)
        ax.set_xticks(x, arms)
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    if "fm_shuffled" in arms or "fm" in arms:
        axes[0][0].axhline(config.min_faithfulness, color="grey", lw=0.8, ls="--")
    fig.suptitle(f"mean ± sd over {config.n_seeds} seed(s)")
    ctx.save_plot(fig, "metrics.png")


EXPERIMENT = Experiment(config_cls=NextStepConfig, run=run, data_parallel=True)
