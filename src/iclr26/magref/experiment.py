"""Reproduction of MAGREF's ablation claims in a synthetic sprite world.

MAGREF: Masked Guidance for Any-Reference Video Generation with Subject Disentanglement, ICLR 2026, arXiv
2505.23742. One run:

1. Train the sprite-identity classifier on clean sprites (unit ``classifier``).
2. Train the two base models once (the paper fine-tunes one released base): an image-to-video model (first frame in
   the I2V channels) and a text-to-video model (those channels empty) — units ``base-i2v``, ``base-t2v``.
3. Per seed k, fine-tune each arm for the same number of steps and batch (equal compute), then generate the seed's
   evaluation clips (one-subject prompts and two-subject prompts whose subjects share two of three attributes) and
   score them (units ``<arm>-seed<k>``):
   ``magref`` (I2V start, region-aware canvas + disentanglement), ``vanilla`` (I2V start, references as extra
   frames), ``nodisent`` (``magref`` without disentanglement), ``t2v`` (``magref`` from the T2V start) and
   ``placebo`` (``magref`` with each subject's text value injected into a randomly chosen subject's region).
4. Verdict (rules fixed before the first run), paired over seeds with the one-sided ``confidence`` lower bound:
   (A) ID similarity of ``magref`` minus ``vanilla`` has mean > ``id_margin`` and lower bound > 0; (B) the swap
   rate of ``nodisent`` minus ``magref`` has mean > ``swap_margin`` and lower bound > 0; (C, the control that must
   fail) the swap rate of ``nodisent`` minus ``placebo`` does *not* pass rule B. The claim holds when A and B pass
   and C fails. ``t2v`` vs ``magref`` and the copy-paste scores are reported with intervals, outside the verdict.

With ``data=PATH`` (an official prompt file), the seed-0 ``magref`` model also generates a clip per line from the
user's references and prompt (references fitted to the canvas blocks as in the official code), shown in
``user_clips.png``; the verdict stays on the synthetic world.

Data parallel under torchrun: the base models and the arms train DistributedDataParallel on each rank's shard of the
global batch (``batch_size``, :func:`~iclr26.magref.training.train`); the classifier, generation and scoring run
alike on every rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from iclr26.common.config import ConfigError, ExperimentConfig, require, threshold
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.stats import MarginTest, margin_test
from iclr26.magref.data import ROLES, VOCAB, load_prompt_file, prompt_tokens
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.masking import composite_canvas, downsample_mask, mask_channels, masked_guidance
from iclr26.magref.metrics import IdentityClassifier, score_clips, train_classifier
from iclr26.magref.model import TinyVideoDiT
from iclr26.magref.training import (
    MAX_SUBJECTS,
    Batch,
    TrainSpec,
    World,
    build_batch,
    draw_items,
    generate,
    subject_token_mask,
    train,
)


def _opt(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class MAGREFConfig(ExperimentConfig):
    """MAGREF in a sprite world; defaults are the ``cpu`` scale."""

    n_seeds: int = _opt(4, "fine-tuning seeds for the paired tests (issue 30: paired over seeds)")
    size: int = _opt(16, "frame height = width in pixels (paper: 480x832; sized for one CPU thread)")
    sprite: int = _opt(6, "sprite size in pixels (not in the paper)")
    n_frames: int = _opt(5, "clip frames F = 4(T-1)+1 (paper/Wan: 81; here 2 latent frames)")
    p_multi: float = _opt(0.5, "share of two-subject training clips (not in the paper)")
    p_confusable: float = _opt(0.5, "share of two-subject training clips with confusable subjects (not in the paper)")
    fit: bool = _opt(
        False,
        "resize references to their canvas block as the official code; off: pad only (a 6-px "
        "sprite rescaled by a non-integer factor loses its texture)",
    )
    dim: int = _opt(48, "DiT width (Wan-14B: 5120; sized for one CPU thread)")
    depth: int = _opt(2, "DiT blocks (Wan-14B: 40)")
    heads: int = _opt(4, "attention heads (Wan-14B: 40)")
    batch_size: int = _opt(8, "clips per step, every arm (not in the paper; sized for one CPU thread)")
    lr: float = _opt(2e-3, "AdamW learning rate, every arm and the bases (not in the paper; usual for tiny DiTs)")
    base_steps: int = _opt(600, "steps of each base model (I2V and T2V; not in the paper)")
    finetune_steps: int = _opt(150, "fine-tuning steps of every arm (equal compute; not in the paper)")
    alpha: float = _opt(1.0, "disentanglement strength alpha (the paper's value was not available; 1 = unit injection)")
    sample_steps: int = _opt(8, "Euler steps of the sampler (official: 40-50 UniPC/DPM++ steps)")
    shift: float = _opt(3.0, "timestep shift of the sampler (official: 3-5)")
    n_eval_single: int = _opt(24, "one-subject evaluation prompts per seed (paper benchmark: 60 single-ID)")
    n_eval_multi: int = _opt(48, "two-subject confusable evaluation prompts per seed (paper benchmark: 60 multi)")
    clf_steps: int = _opt(300, "Adam steps of the identity classifier (not in the paper)")
    confidence: float = _opt(0.95, "one-sided confidence of the paired lower bounds (fixed before the first run)")
    id_margin: float = _opt(
        0.0,
        "ID-similarity gain of magref over vanilla the seed mean must exceed (the paper reports only Total per "
        "ablation row, +0.029 region vs vanilla mask [unverified]; any gain with a positive lower bound counts; "
        "fixed before the first run)",
    )
    swap_margin: float = _opt(
        0.0,
        "swap-rate reduction by disentanglement the seed mean must exceed (the paper gives no swap rate; any "
        "reduction with a positive lower bound counts; fixed before the first run)",
    )
    data: Path | None = _opt(
        None,
        "official MAGREF prompt file (key@@prompt@@image1@@image2 per line, as assets/multi_id.txt) with at "
        "most 2 references per line; its clips are generated by the seed-0 magref model (not part of the verdict)",
    )

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {
            "n_seeds": 1,
            "dim": 16,
            "depth": 1,
            "batch_size": 4,
            "base_steps": 2,
            "finetune_steps": 2,
            "sample_steps": 2,
            "n_eval_single": 2,
            "n_eval_multi": 2,
            "clf_steps": 2,
        },
        "gpu": {
            "n_seeds": 10,
            "dim": 96,
            "depth": 4,
            "base_steps": 3000,
            "finetune_steps": 1500,
            "n_eval_single": 60,
            "n_eval_multi": 60,
            "sample_steps": 20,
            "clf_steps": 600,
        },
    }
    CPU_BOUND: ClassVar[str | None] = (
        "a 16x16-pixel world and a DiT of ~100k parameters: the Python-side data pipeline, not the model, sets the "
        "pace, so a GPU would idle; the gpu preset is a longer, wider run on the CPU"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("n_seeds", "dim", "depth", "heads", "batch_size", "sample_steps", "clf_steps"):
            require(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        for name in ("base_steps", "finetune_steps", "n_eval_single", "alpha", "swap_margin"):
            require(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")
        require(self.n_eval_multi >= 1, "n_eval_multi", f"the swap rate needs >= 1 prompt, got {self.n_eval_multi}")
        require(self.dim % self.heads == 0, "dim", f"{self.dim} is not a multiple of heads={self.heads}")
        require(self.sprite >= 4, "sprite", f"must be >= 4 (the classifier's receptive field), got {self.sprite}")
        require(
            self.n_frames >= 5 and (self.n_frames - 1) % 4 == 0,
            "n_frames",
            f"need 4(T-1)+1 frames with T >= 2 (Wan's causal stride 4), got {self.n_frames}",
        )
        require(self.size % 2 == 0, "size", f"must be even (spatial stride 2), got {self.size}")
        require(
            self.size >= self.sprite + self.n_frames + 1,
            "size",
            f"{self.size} px cannot hold a {self.sprite} px sprite moving {self.n_frames - 1} px",
        )
        require(
            2 * self.sprite <= self.size, "sprite", f"two {self.sprite} px sprites must fit the {self.size} px canvas"
        )
        for name in ("p_multi", "p_confusable"):
            require(0 <= getattr(self, name) <= 1, name, f"must lie in [0, 1], got {getattr(self, name)}")
        require(self.lr > 0, "lr", f"must be > 0, got {self.lr}")
        require(self.shift > 0, "shift", f"must be > 0, got {self.shift}")
        require(0.5 < self.confidence < 1, "confidence", f"must lie in (0.5, 1), got {self.confidence}")
        require(self.id_margin >= 0, "id_margin", f"must be >= 0, got {self.id_margin}")
        if self.data is not None:
            try:
                items = load_prompt_file(self.data, max_references=MAX_SUBJECTS)
            except (OSError, ValueError) as err:
                raise ConfigError(
                    f"config field 'data': {err}; pass an official MAGREF prompt file (key@@prompt@@image1@@image2 "
                    f"per line, at most {MAX_SUBJECTS} references: the model has {MAX_SUBJECTS} subject slots)"
                ) from None
            require(len(items) <= 64, "data", f"at most 64 prompt lines are generated, got {len(items)}")

    def world(self) -> World:
        """The world of this config."""
        return World(self.size, self.sprite, self.n_frames, self.p_multi, self.p_confusable, self.fit)


ARMS = ("magref", "vanilla", "nodisent", "t2v", "placebo")
#: arm -> (base, layout, disentanglement on, placebo)
ARM_SPECS = {
    "magref": ("i2v", "canvas", True, False),
    "vanilla": ("i2v", "temporal", False, False),
    "nodisent": ("i2v", "canvas", False, False),
    "t2v": ("t2v", "canvas", True, False),
    "placebo": ("i2v", "canvas", True, True),
}


def build_model(config: MAGREFConfig) -> TinyVideoDiT:
    """The generator for ``config``: input K + 4 + K channels, room for the temporal layout's extra frames."""
    codec = CausalPatchify()
    k = codec.latent_channels
    t = (config.n_frames - 1) // 4 + 1
    return TinyVideoDiT(
        in_channels=2 * k + codec.s,
        out_channels=k,
        max_frames=MAX_SUBJECTS + t - 1,
        height=config.size // codec.p,
        width=config.size // codec.p,
        dim=config.dim,
        depth=config.depth,
        heads=config.heads,
        vocab=len(VOCAB),
        max_subjects=MAX_SUBJECTS,
        roles=ROLES,
    )


@dataclass(frozen=True)
class BaseRun:
    """A trained base model: its weights (CPU tensors) and loss curve."""

    state: dict[str, torch.Tensor]
    losses: list[float]


@dataclass(frozen=True)
class ArmRun:
    """One arm on one seed.

    Attributes:
        id_sim: per evaluation item, the ID similarity.
        swapped: per two-subject item, 1.0 if its subjects were swapped.
        copy_paste: per item, the copy-paste share.
        placed: per item, the share of subject-frames whose prompted window shows that subject.
        losses: fine-tuning losses per step.
        examples: ``(2, C, F-1, H, W)`` the first two two-subject clips, for the plot.
        state: the fine-tuned weights (kept only for seed 0's magref arm when ``data`` is set, else None).
    """

    id_sim: list[float]
    swapped: list[float]
    copy_paste: list[float]
    placed: list[float]
    losses: list[float]
    examples: np.ndarray
    state: dict[str, torch.Tensor] | None


def _cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _train_base(config: MAGREFConfig, layout: str, seed: int) -> BaseRun:
    gen = torch_generator(derive_seed(seed, "base", layout))
    torch.manual_seed(derive_seed(seed, "base-init", layout))
    model = build_model(config)
    spec = TrainSpec(layout, 0.0, False, config.base_steps, config.batch_size, config.lr)  # type: ignore[arg-type]
    losses = train(model, spec, CausalPatchify(), config.world(), gen)
    return BaseRun(_cpu_state(model), losses)


def eval_items(config: MAGREFConfig, seed: int) -> list:
    """The seed's evaluation prompts: one-subject ones, then two-subject confusable ones (same for every arm)."""
    gen = torch_generator(derive_seed(seed, "eval-items"))
    w = config.world()
    return draw_items(config.n_eval_single, w, gen, multi=False) + draw_items(
        config.n_eval_multi, w, gen, multi=True, confusable=True
    )


def _positions(items: list) -> torch.Tensor:
    """``(B, N, F-1, 2)`` the subjects' prompted positions on the generated frames (zeros for empty slots)."""
    out = []
    for it in items:
        p = it.positions[:, 1:]
        out.append(torch.cat([p, torch.zeros(MAX_SUBJECTS - p.shape[0], *p.shape[1:])]))
    return torch.stack(out)


def _scorer(config: MAGREFConfig, clf: tuple[dict, torch.Tensor]):  # noqa: ANN202
    model = IdentityClassifier(sprite_size=config.sprite)
    model.load_state_dict(clf[0])
    return lambda clips, items, ref_pos: score_clips(
        model, clf[1], clips, [it.identities for it in items], _positions(items), ref_pos
    )


def _run_arm(config: MAGREFConfig, arm: str, base: BaseRun, clf: tuple, seed: int, keep: bool) -> ArmRun:
    base_name, layout, disent, placebo = ARM_SPECS[arm]
    gen = torch_generator(derive_seed(seed, "finetune", arm))
    model = build_model(config)
    model.load_state_dict(base.state)
    if base_name == "t2v":  # the I2V channels are new to a T2V model: zero-initialised, as when widening Wan's input
        with torch.no_grad():
            model.embed.weight[:, CausalPatchify().latent_channels :] = 0.0
    alpha = config.alpha if disent else 0.0
    codec, world = CausalPatchify(), config.world()
    spec = TrainSpec(layout, alpha, placebo, config.finetune_steps, config.batch_size, config.lr)  # type: ignore[arg-type]
    losses = train(model, spec, codec, world, gen)
    items = eval_items(config, seed)
    egen = torch_generator(derive_seed(seed, "eval-noise"))  # the same draws for every arm
    batch: Batch = build_batch(items, layout, codec, world, torch_generator(derive_seed(seed, "eval-canvas")))  # type: ignore[arg-type]
    reg = None
    if placebo:  # the placebo arm is evaluated as it was trained: values into randomly chosen regions
        from iclr26.magref.training import permute_regions

        reg = permute_regions(batch.regions, torch_generator(derive_seed(seed, "eval-placebo")))
    clips = generate(
        model, batch, codec, alpha=alpha, steps=config.sample_steps, shift=config.shift, gen=egen, regions=reg
    )
    sc = _scorer(config, clf)(clips, items, batch.ref_pos)
    multi = [i for i, it in enumerate(items) if len(it.identities) == 2]
    return ArmRun(
        sc.id_sim,
        [float(sc.swapped[i]) for i in multi],
        sc.copy_paste,
        sc.placed,
        losses,
        clips[multi[:2]].numpy(),
        _cpu_state(model) if keep else None,
    )


def run(config: MAGREFConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    start = time.perf_counter()

    def classifier() -> tuple[dict[str, torch.Tensor], float, torch.Tensor]:
        clf, acc, protos = train_classifier(
            sprite_size=config.sprite,
            size=config.size,
            steps=config.clf_steps,
            batch_size=128,
            gen=torch_generator(derive_seed(config.seed, "classifier")),
        )
        return _cpu_state(clf), acc, protos

    clf_state, clf_acc, protos = ctx.unit("classifier", classifier)
    ctx.log(f"identity classifier accuracy {clf_acc:.3f}")
    bases = {
        name: ctx.unit(f"base-{name}", lambda name=name: _train_base(config, name, config.seed))
        for name in ("i2v", "t2v")
    }
    runs: dict[str, list[ArmRun]] = {a: [] for a in ARMS}
    gt: list[dict[str, float]] = []
    for k in range(config.n_seeds):
        seed = derive_seed(config.seed, "seed", k)
        for arm in ctx.progress(ARMS, desc=f"seed {k}"):
            keep = config.data is not None and k == 0 and arm == "magref"
            res = ctx.unit(
                f"{arm}-seed{k}",
                lambda arm=arm, seed=seed, keep=keep: _run_arm(
                    config, arm, bases[ARM_SPECS[arm][0]], (clf_state, protos), seed, keep
                ),
            )
            runs[arm].append(res)
            ctx.log(f"seed {k} {arm}: ID-sim {np.mean(res.id_sim):.3f}, swaps {np.mean(res.swapped):.3f}")
        gt.append(_ground_truth_scores(config, (clf_state, protos), seed))
    user = _user_clips(config, ctx, runs["magref"][0].state) if config.data is not None else None
    return _outcome(config, ctx, runs, gt, clf_acc, bases, user, time.perf_counter() - start)


def _ground_truth_scores(config: MAGREFConfig, clf: tuple, seed: int) -> dict[str, float]:
    """The metrics on the true clips: the ceiling of ID similarity and the chance level of copy-paste."""
    items = eval_items(config, seed)
    batch = build_batch(
        items, "canvas", CausalPatchify(), config.world(), torch_generator(derive_seed(seed, "eval-canvas"))
    )
    clips = torch.stack([it.video[:, 1:] for it in items])
    sc = _scorer(config, clf)(clips, items, batch.ref_pos)
    return {
        "id_sim": float(np.mean(sc.id_sim)),
        "copy_paste": float(np.mean(sc.copy_paste)),
        "swap_rate": float(np.mean([s for s in sc.swapped if s is not None])),
        "placed": float(np.mean(sc.placed)),
    }


def _user_clips(config: MAGREFConfig, ctx: RunContext, state: dict | None) -> dict[str, Any]:
    """Generate a clip per line of the user's prompt file with the seed-0 magref model; plot them."""
    assert config.data is not None and state is not None
    items = load_prompt_file(config.data, max_references=MAX_SUBJECTS)
    model = build_model(config)
    model.load_state_dict(state)
    codec = CausalPatchify()
    gen = torch_generator(derive_seed(config.seed, "user"))
    p, hw = codec.p, config.size
    ys, toks, regs = [], [], []
    for it in items:
        cv = composite_canvas(list(it.images), None, height=hw, width=hw, fit=True, generator=gen)
        cond = torch.cat([cv.image[None, :, None], torch.zeros(1, 3, config.n_frames - 1, hw, hw)], dim=2)
        ys.append(
            masked_guidance(mask_channels(downsample_mask(cv.mask, p), config.n_frames, codec.s), codec.encode(cond)[0])
        )
        t = (config.n_frames - 1) // 4 + 1
        reg = torch.zeros(MAX_SUBJECTS, t, hw // p, hw // p)
        reg[: len(it.images), 0] = downsample_mask(cv.region_masks, p)
        regs.append(reg)
        toks.append(prompt_tokens(it.prompt))
    tokens = torch.stack(toks)
    y = torch.stack(ys)
    batch = Batch(
        torch.zeros(len(items), codec.latent_channels, *y.shape[2:]),
        y,
        tokens,
        torch.stack([subject_token_mask(t) for t in tokens]),
        torch.stack(regs),
        torch.zeros(len(items), 2, 2),
        1,
    )
    clips = generate(model, batch, codec, alpha=config.alpha, steps=config.sample_steps, shift=config.shift, gen=gen)
    fig, axes = figure(clips.shape[2] + 1, len(items), width=1.2, height=1.2)
    for i, it in enumerate(items):
        row = axes[i]
        row[0].imshow(((cv_image(codec, y[i]).clamp(-1, 1) + 1) / 2).numpy())
        row[0].set_title(it.key[:12], fontsize=6)
        for f in range(clips.shape[2]):
            row[f + 1].imshow(((clips[i, :, f].clamp(-1, 1) + 1) / 2).permute(1, 2, 0).numpy())
        for ax in row:
            ax.axis("off")
    ctx.save_plot(fig, "user_clips.png")
    return {
        "n_items": len(items),
        "keys": [it.key for it in items],
        "known_words_per_prompt": [int((t != 0).sum()) for t in tokens],
    }


def cv_image(codec: CausalPatchify, y: torch.Tensor) -> torch.Tensor:
    """The canvas ``(H, W, C)`` a condition ``y`` (s + K, T, h, w) holds on its first latent frame."""
    return codec.decode(y[None, codec.s :, :1])[0, :, 0].permute(1, 2, 0)


def _outcome(config, ctx, runs, gt, clf_acc, bases, user, wall) -> Outcome:  # noqa: ANN001
    """Metrics, paired tests, plots and the verdict (module docstring, step 4)."""

    def per_seed(arm: str, key: str) -> list[float]:
        return [float(np.mean(getattr(r, key))) for r in runs[arm]]

    conf = config.confidence
    diff = lambda a, b: [x - y for x, y in zip(a, b, strict=True)]  # noqa: E731
    t = {
        "id_magref_vs_vanilla": margin_test(
            diff(per_seed("magref", "id_sim"), per_seed("vanilla", "id_sim")), margin=config.id_margin, confidence=conf
        ),
        "swap_reduction_disent": margin_test(
            diff(per_seed("nodisent", "swapped"), per_seed("magref", "swapped")),
            margin=config.swap_margin,
            confidence=conf,
        ),
        "swap_reduction_placebo": margin_test(
            diff(per_seed("nodisent", "swapped"), per_seed("placebo", "swapped")),
            margin=config.swap_margin,
            confidence=conf,
        ),
        "id_magref_vs_t2v": margin_test(
            diff(per_seed("magref", "id_sim"), per_seed("t2v", "id_sim")), margin=0.0, confidence=conf
        ),
        "swap_reduction_vs_t2v": margin_test(
            diff(per_seed("t2v", "swapped"), per_seed("magref", "swapped")), margin=0.0, confidence=conf
        ),
    }
    held = bool(
        t["id_magref_vs_vanilla"].passes
        and t["swap_reduction_disent"].passes
        and not t["swap_reduction_placebo"].passes
    )
    arms_metrics = {
        arm: {key: float(np.mean(per_seed(arm, key))) for key in ("id_sim", "swapped", "copy_paste", "placed")}
        | {
            "per_seed_id_sim": per_seed(arm, "id_sim"),
            "per_seed_swap_rate": per_seed(arm, "swapped"),
            "final_loss": float(np.mean([np.mean(r.losses[-20:]) if r.losses else float("nan") for r in runs[arm]])),
        }
        for arm in ARMS
    }
    truth = {key: float(np.mean([g[key] for g in gt])) for key in gt[0]}
    _plot(ctx, config, runs, arms_metrics, truth, bases)

    evidence = {
        **{name: x.record() for name, x in t.items()},
        "n_seeds": config.n_seeds,
        "n_eval_multi": config.n_eval_multi,
        "classifier_accuracy": clf_acc,
        "thresholds": {name: threshold(config, name) for name in ("id_margin", "swap_margin", "confidence")},
    }

    def fmt(x: MarginTest, pct: bool = False) -> str:
        f = (lambda v: f"{v:+.1%}") if pct else (lambda v: f"{v:+.3f}")
        ci = (
            f" ± {x.ci95_halfwidth:.1%}"
            if pct and x.ci95_halfwidth is not None
            else (f" ± {x.ci95_halfwidth:.3f}" if x.ci95_halfwidth is not None else " (one seed, no interval)")
        )
        return f"{f(x.mean)}{ci}"

    measurement = (
        f"{config.n_seeds} seed(s): ID-sim magref - vanilla {fmt(t['id_magref_vs_vanilla'])}; swap rate lowered by "
        f"disentanglement {fmt(t['swap_reduction_disent'], True)} (placebo control "
        f"{fmt(t['swap_reduction_placebo'], True)}); magref vs T2V start: ID-sim {fmt(t['id_magref_vs_t2v'])}, "
        f"swaps {fmt(t['swap_reduction_vs_t2v'], True)}"
    )
    notes = (
        "Differences are paired over seeds; ± is the 95% two-sided interval half-width. A part passes when the seed "
        f"mean exceeds its margin and the one-sided {conf:.0%} lower bound exceeds 0; the placebo must not pass. "
        f"Ground truth: ID-sim {truth['id_sim']:.3f}, copy-paste chance {truth['copy_paste']:.3f}."
    )
    metrics = {
        "arms": arms_metrics,
        "ground_truth": truth,
        "tests": {k: v.record() for k, v in t.items()},
        "base_final_loss": {k: float(np.mean(b.losses[-20:])) if b.losses else None for k, b in bases.items()},
    }
    if user is not None:
        metrics["user_data"] = user
    return Outcome(
        metrics=metrics,
        claim_held=held,
        evidence=evidence,
        measurement=measurement,
        notes=notes,
        timings={"wall_s": wall},
    )


def _plot(ctx: RunContext, config: MAGREFConfig, runs, arms_metrics, truth, bases) -> None:  # noqa: ANN001
    """Metrics per arm, loss curves, and two generated two-subject clips per arm."""
    fig, axes = figure(3, 1, width=3.6)
    for ax, key, title in zip(
        axes[0],
        ("id_sim", "swapped", "copy_paste"),
        ("ID similarity", "swap rate (confusable pairs)", "copy-paste score"),
        strict=True,
    ):
        vals = [arms_metrics[a][key] for a in ARMS]
        ax.bar(range(len(ARMS)), vals, color="tab:blue")
        ref = {"id_sim": truth["id_sim"], "swapped": truth["swap_rate"], "copy_paste": truth["copy_paste"]}[key]
        ax.axhline(ref, color="grey", ls="--", lw=0.8, label="ground truth")
        ax.set_xticks(range(len(ARMS)), ARMS, rotation=30, fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0][0].legend(fontsize=7)
    ctx.save_plot(fig, "metrics_by_arm.png")

    fig, ax = figure(1, 1, width=5.0)
    for name, b in bases.items():
        ax.plot(
            np.convolve(b.losses, np.ones(10) / 10, mode="valid") if len(b.losses) >= 10 else b.losses,
            label=f"base {name}",
            lw=1,
        )
    off = config.base_steps
    for arm in ARMS:
        ls = runs[arm][0].losses
        ax.plot(
            np.arange(len(ls)) + off,
            np.convolve(ls, np.ones(10) / 10, mode="same") if len(ls) >= 10 else ls,
            label=arm,
            lw=1,
        )
    ax.set_xlabel("step (fine-tuning after the base, seed 0)")
    ax.set_ylabel("flow-matching loss")
    ax.legend(fontsize=7)
    ctx.save_plot(fig, "losses.png")

    ex = {a: runs[a][0].examples for a in ARMS}
    n_ex = min(e.shape[0] for e in ex.values())
    if n_ex:
        f = ex["magref"].shape[2]
        fig, axes = figure(f, len(ARMS) * n_ex, width=1.0, height=1.0)
        for r, (arm, e) in enumerate((a, ex[a][j]) for j in range(n_ex) for a in ARMS):
            for c in range(f):
                axes[r][c].imshow(np.clip((e[:, c].transpose(1, 2, 0) + 1) / 2, 0, 1))
                axes[r][c].axis("off")
            axes[r][0].set_title(arm, fontsize=6, loc="left")
        ctx.save_plot(fig, "examples.png")


EXPERIMENT = Experiment(config_cls=MAGREFConfig, run=run, data_parallel=True)
