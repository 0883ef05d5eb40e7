"""Reproduction of MAGREF's ablation claims in a synthetic sprite world: the units of work and ``run``.

MAGREF: Masked Guidance for Any-Reference Video Generation with Subject Disentanglement, ICLR 2026, arXiv
2505.23742. One run:

1. Train the sprite-identity classifier on clean sprites (unit ``classifier``).
2. Train the image-to-video base model once (first frame in the I2V channels; the paper fine-tunes one released
   base) — unit ``base-i2v``.
3. Per seed k, fine-tune each arm for the same number of steps and batch (equal compute), then generate the seed's
   evaluation clips (one-subject prompts and two-subject prompts whose subjects share two of three attributes) and
   score them (units ``<arm>-seed<k>``; :data:`ARM_SPECS` says what each arm changes). Score the true clips and the
   copy-paste baseline (the reference canvas pasted into every frame) on the same prompts.
4. The verdict (:mod:`iclr26.magref.verdict`) on the per-seed means.

With ``data=PATH`` (an official prompt file), the seed-0 ``magref`` model also generates a clip per line from the
user's references and prompt, shown in ``user_clips.png``; the verdict stays on the synthetic world.

Data parallel under torchrun: the base models and the arms train on each rank's shard of the global batch
(``batch_size``, :func:`~iclr26.magref.training.train` with ``ctx.world``); the classifier, generation and scoring
run alike on every rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.magref.config import ARMS, MAGREFConfig
from iclr26.magref.data import ROLES, VOCAB, prompt_tokens, representable
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.masking import composite_canvas, downsample_mask, mask_channels, masked_guidance
from iclr26.magref.metrics import ClipScores, IdentityClassifier, score_clips, train_classifier
from iclr26.magref.model import TinyVideoDiT
from iclr26.magref.training import (
    MAX_SUBJECTS,
    Batch,
    Layout,
    TrainSpec,
    build_batch,
    copy_paste_clips,
    draw_items,
    generate,
    ground_truth,
    permute_regions,
    subject_token_mask,
    train,
)
from iclr26.magref.verdict import Measurements, paired_tests, verdict


@dataclass(frozen=True)
class ArmSpec:
    """What one arm changes relative to the others.

    Every arm is fine-tuned from the one I2V base.

    Attributes:
        layout: the conditioning layout (``canvas``: MAGREF's masked guidance; ``temporal``: references as frames).
        disentangle: whether the subject values are injected (alpha = ``config.alpha``, else 0).
        placebo: inject each subject's value into a randomly chosen subject's region (training and evaluation).
    """

    layout: Layout
    disentangle: bool
    placebo: bool


ARM_SPECS = {
    "magref": ArmSpec("canvas", True, False),
    "vanilla": ArmSpec("temporal", False, False),
    "nodisent": ArmSpec("canvas", False, False),
    "placebo": ArmSpec("canvas", True, True),
}
#: The reference clips scored on every seed's prompts: the truth (the ceiling) and the copy-paste baseline.
REFERENCES = ("ground_truth", "copy_paste")
SCORES = ("id_sim", "id_at_place", "swapped", "copy_paste", "placed")


def train_spec(config: MAGREFConfig, arm: str) -> TrainSpec:
    """How ``arm`` is fine-tuned: its layout, alpha (``config.alpha`` only where it disentangles) and placebo."""
    s = ARM_SPECS[arm]
    alpha = config.alpha if s.disentangle else 0.0
    return TrainSpec(s.layout, alpha, s.placebo, config.finetune_steps, config.batch_size, config.lr)


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
class Judge:
    """The unit ``classifier``: the identity classifier's weights, accuracy and identity prototypes (CPU)."""

    state: dict[str, torch.Tensor]
    accuracy: float
    prototypes: torch.Tensor


@dataclass(frozen=True)
class ArmRun:
    """One arm on one seed.

    Attributes:
        id_sim: per evaluation item, the ID similarity.
        swapped: per two-subject item, 1.0 if its subjects were swapped.
        copy_paste: per item, the copy-paste share.
        placed: per item, the share of subject-frames whose prompted window shows that subject.
        id_at_place: per item, the ID similarity at the prompted windows.
        losses: fine-tuning losses per step.
        examples: ``(2, C, F-1, H, W)`` the first two two-subject clips, for the plot.
        state: the fine-tuned weights (kept only for seed 0's magref arm when ``data`` is set, else None).
    """

    id_sim: list[float]
    swapped: list[float]
    copy_paste: list[float]
    placed: list[float]
    id_at_place: list[float]
    losses: list[float]
    examples: np.ndarray
    state: dict[str, torch.Tensor] | None


def cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights as CPU tensors (what a unit stores)."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def train_judge(config: MAGREFConfig) -> Judge:
    """Train the identity classifier on clean sprites (the metrics' judge)."""
    clf, acc, protos = train_classifier(
        sprite_size=config.sprite,
        size=config.size,
        steps=config.clf_steps,
        batch_size=128,
        gen=torch_generator(derive_seed(config.seed, "classifier")),
    )
    return Judge(cpu_state(clf), acc, protos)


def train_base(config: MAGREFConfig, layout: Literal["i2v", "t2v"], ctx: RunContext) -> BaseRun:
    """Train the ``layout`` base model (every arm starts from the ``i2v`` one)."""
    gen = torch_generator(derive_seed(config.seed, "base", layout))
    torch.manual_seed(derive_seed(config.seed, "base-init", layout))
    model = build_model(config).to(ctx.device)
    spec = TrainSpec(layout, 0.0, False, config.base_steps, config.batch_size, config.lr)
    losses = train(model, spec, CausalPatchify(), config.sprite_world(), gen, world=ctx.world, device=ctx.device)
    return BaseRun(cpu_state(model), losses)


def eval_items(config: MAGREFConfig, seed: int) -> list:
    """The seed's evaluation prompts: one-subject ones, then two-subject confusable ones (same for every arm)."""
    gen = torch_generator(derive_seed(seed, "eval-items"))
    w = config.sprite_world()
    return draw_items(config.n_eval_single, w, gen, multi=False) + draw_items(
        config.n_eval_multi, w, gen, multi=True, confusable=True
    )


def prompted_positions(items: list) -> torch.Tensor:
    """``(B, N, F-1, 2)`` the subjects' prompted positions on the generated frames (zeros for empty slots)."""
    out = []
    for it in items:
        p = it.positions[:, 1:]
        out.append(torch.cat([p, torch.zeros(MAX_SUBJECTS - p.shape[0], *p.shape[1:])]))
    return torch.stack(out)


def score(config: MAGREFConfig, judge: Judge, clips: torch.Tensor, items: list, ref_pos: torch.Tensor) -> ClipScores:
    """The metrics of ``clips`` generated for ``items`` (:func:`~iclr26.magref.metrics.score_clips`)."""
    model = IdentityClassifier(sprite_size=config.sprite)
    model.load_state_dict(judge.state)
    return score_clips(
        model, judge.prototypes, clips, [it.identities for it in items], prompted_positions(items), ref_pos
    )


def run_arm(
    config: MAGREFConfig, arm: str, base: BaseRun, judge: Judge, seed: int, keep: bool, ctx: RunContext
) -> ArmRun:
    """Fine-tune ``arm`` from ``base`` for ``seed``, generate the seed's evaluation clips and score them."""
    spec = train_spec(config, arm)
    gen = torch_generator(derive_seed(seed, "finetune", arm))
    model = build_model(config)
    model.load_state_dict(base.state)
    model.to(ctx.device)
    codec, sprites = CausalPatchify(), config.sprite_world()
    losses = train(model, spec, codec, sprites, gen, world=ctx.world, device=ctx.device)
    items = eval_items(config, seed)
    egen = torch_generator(derive_seed(seed, "eval-noise"))  # the same draws for every arm
    batch = build_batch(items, spec.layout, codec, sprites, torch_generator(derive_seed(seed, "eval-canvas")))
    # the placebo arm is evaluated as it was trained: values into randomly chosen regions
    reg = permute_regions(batch.regions, torch_generator(derive_seed(seed, "eval-placebo"))) if spec.placebo else None
    clips = generate(
        model, batch, codec, alpha=spec.alpha, steps=config.sample_steps, shift=config.shift, gen=egen, regions=reg
    )
    if not torch.isfinite(clips).all():
        raise RuntimeError(f"{arm}, seed {seed}: the generated clips are not finite (the training diverged)")
    sc = score(config, judge, clips, items, batch.ref_pos)
    multi = [i for i, it in enumerate(items) if len(it.identities) == 2]
    return ArmRun(
        sc.id_sim,
        [float(sc.swapped[i]) for i in multi],
        sc.copy_paste,
        sc.placed,
        sc.id_at_place,
        losses,
        clips[multi[:2]].numpy(),
        cpu_state(model) if keep else None,
    )


def reference_scores(config: MAGREFConfig, judge: Judge, seed: int) -> dict[str, dict[str, float]]:
    """The metrics of the true clips (the ceiling) and of the copy-paste baseline on the seed's prompts."""
    items = eval_items(config, seed)
    codec = CausalPatchify()
    gen = torch_generator(derive_seed(seed, "eval-canvas"))  # the canvases the arms are evaluated on
    batch = build_batch(items, "canvas", codec, config.sprite_world(), gen)
    clips = {"ground_truth": ground_truth(items), "copy_paste": copy_paste_clips(batch, codec, config.n_frames)}
    out = {}
    for name, c in clips.items():
        sc = score(config, judge, c, items, batch.ref_pos)
        out[name] = {key: float(np.mean([v for v in getattr(sc, key) if v is not None])) for key in SCORES}
    return out


def user_batch(config: MAGREFConfig, items: list, gen: torch.Generator) -> Batch:
    """The canvas layout of the user's prompt lines (references fitted into the blocks, as the official code)."""
    codec, hw = CausalPatchify(), config.size
    t = (config.n_frames - 1) // 4 + 1
    ys, regs = [], []
    for it in items:
        cv = composite_canvas(list(it.images), None, height=hw, width=hw, fit=True, generator=gen)
        cond = torch.cat([cv.image[None, :, None], torch.zeros(1, 3, config.n_frames - 1, hw, hw)], dim=2)
        mask = mask_channels(downsample_mask(cv.mask, codec.p), config.n_frames, codec.s)
        ys.append(masked_guidance(mask, codec.encode(cond)[0]))
        reg = torch.zeros(MAX_SUBJECTS, t, hw // codec.p, hw // codec.p)
        reg[: len(it.images), 0] = downsample_mask(cv.region_masks, codec.p)
        regs.append(reg)
    tokens = torch.stack([prompt_tokens(it.prompt) for it in items])
    y = torch.stack(ys)
    z0 = torch.zeros(len(items), codec.latent_channels, *y.shape[2:])
    subject_tokens = torch.stack([subject_token_mask(t) for t in tokens])
    return Batch(z0, y, tokens, subject_tokens, torch.stack(regs), torch.zeros(len(items), 2, 2), 1)


def user_clips(config: MAGREFConfig, ctx: RunContext, state: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Generate a clip per line of the user's prompt file with the seed-0 magref model; plot them.

    A prompt with none of the sprite world's words is not generated (the model cannot represent it) and is reported
    in ``skipped``; a line with more references than the layout holds used its first ones (``references_dropped``).

    Raises:
        RuntimeError: if a generated clip is not finite (nothing is plotted then).
    """
    items = config.user_prompts()
    ok = [it for it in items if representable(prompt_tokens(it.prompt))]
    report: dict[str, Any] = {
        "n_items": len(items),
        "keys": [it.key for it in ok],
        "known_words_per_prompt": [int((prompt_tokens(it.prompt) != 0).sum()) for it in ok],
        "skipped": {it.key: "no word of the sprite world's vocabulary" for it in items if it not in ok},
        "references_dropped": {it.key: len(it.dropped) for it in items if it.dropped},
    }
    for key in report["skipped"]:
        ctx.log(f"user prompt {key!r}: none of the sprite world's words; not generated")
    if not ok:
        return report
    model = build_model(config)
    model.load_state_dict(state)
    model.to(ctx.device)
    codec = CausalPatchify()
    gen = torch_generator(derive_seed(config.seed, "user"))
    batch = user_batch(config, ok, gen)
    clips = generate(model, batch, codec, alpha=config.alpha, steps=config.sample_steps, shift=config.shift, gen=gen)
    bad = [it.key for it, c in zip(ok, clips, strict=True) if not torch.isfinite(c).all()]
    if bad:
        raise RuntimeError(f"the clips of user prompts {bad} are not finite; nothing was plotted")
    fig, axes = figure(clips.shape[2] + 1, len(ok), width=1.2, height=1.2)
    for i, it in enumerate(ok):
        row = axes[i]
        row[0].imshow(((canvas_image(codec, batch.y[i]).clamp(-1, 1) + 1) / 2).numpy())
        row[0].set_title(it.key[:12], fontsize=6)
        for f in range(clips.shape[2]):
            row[f + 1].imshow(((clips[i, :, f].clamp(-1, 1) + 1) / 2).permute(1, 2, 0).numpy())
        for ax in row:
            ax.axis("off")
    ctx.save_plot(fig, "user_clips.png")
    return report


def canvas_image(codec: CausalPatchify, y: torch.Tensor) -> torch.Tensor:
    """The canvas ``(H, W, C)`` a condition ``y`` (s + K, T, h, w) holds on its first latent frame."""
    return codec.decode(y[None, codec.s :, :1])[0, :, 0].permute(1, 2, 0)


def run(config: MAGREFConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    start = time.perf_counter()
    if ctx.device.type == "cuda":  # TF32 matmuls on the GPU only: CPU results stay bit-identical
        torch.backends.cuda.matmul.allow_tf32 = True
    judge = ctx.unit("classifier", lambda: train_judge(config))
    ctx.log(f"identity classifier accuracy {judge.accuracy:.3f}")
    base = ctx.unit("base-i2v", lambda: train_base(config, "i2v", ctx))
    runs: dict[str, list[ArmRun]] = {a: [] for a in ARMS}
    refs: list[dict[str, dict[str, float]]] = []
    for k in range(config.n_seeds):
        seed = derive_seed(config.seed, "seed", k)
        for arm in ctx.progress(ARMS, desc=f"seed {k}"):
            keep = config.data is not None and k == 0 and arm == "magref"
            res = ctx.unit(
                f"{arm}-seed{k}",
                lambda arm=arm, seed=seed, keep=keep: run_arm(config, arm, base, judge, seed, keep, ctx),
            )
            runs[arm].append(res)
            ctx.log(f"seed {k} {arm}: placed {np.mean(res.placed):.3f}, swaps {np.mean(res.swapped):.3f}")
        refs.append(reference_scores(config, judge, seed))
    user = user_clips(config, ctx, runs["magref"][0].state) if config.data is not None else None
    measured = measurements(runs, refs, judge)
    metrics = collect_metrics(config, runs, refs, base, measured)
    if user is not None:
        metrics["user_data"] = user
    plot(ctx, config, runs, metrics, base)
    return Outcome.of(verdict(measured, config), metrics=metrics, timings={"wall_s": time.perf_counter() - start})


def per_seed(runs: list[ArmRun], key: str) -> list[float]:
    """The per-seed means of ``key`` over the evaluation items."""
    return [float(np.mean(getattr(r, key))) for r in runs]


def measurements(runs: dict[str, list[ArmRun]], refs: list[dict[str, dict[str, float]]], judge: Judge) -> Measurements:
    """The verdict's inputs: per arm (and the copy-paste baseline) the per-seed means."""
    cp = [r["copy_paste"] for r in refs]
    return Measurements(
        id_at_place={a: per_seed(runs[a], "id_at_place") for a in ARMS}
        | {"copy_paste": [c["id_at_place"] for c in cp]},
        swap_rate={a: per_seed(runs[a], "swapped") for a in ARMS} | {"copy_paste": [c["swapped"] for c in cp]},
        placed={a: per_seed(runs[a], "placed") for a in ARMS} | {"copy_paste": [c["placed"] for c in cp]},
        classifier_accuracy=judge.accuracy,
    )


def collect_metrics(
    config: MAGREFConfig,
    runs: dict[str, list[ArmRun]],
    refs: list[dict[str, dict[str, float]]],
    base: BaseRun,
    measured: Measurements,
) -> dict[str, Any]:
    """The record's metrics: per arm, the ground truth and the copy-paste baseline, the paired tests, the base."""
    arms = {
        arm: {key: float(np.mean(per_seed(runs[arm], key))) for key in SCORES}
        | {
            "per_seed_id_at_place": per_seed(runs[arm], "id_at_place"),
            "per_seed_swap_rate": per_seed(runs[arm], "swapped"),
            "per_seed_placed": per_seed(runs[arm], "placed"),
            "final_loss": float(np.mean([np.mean(r.losses[-20:]) for r in runs[arm]])),
        }
        for arm in ARMS
    }
    return {
        "arms": arms,
        **{name: {key: float(np.mean([r[name][key] for r in refs])) for key in SCORES} for name in REFERENCES},
        "tests": {k: v.record() for k, v in paired_tests(measured, config).items()},
        "base_final_loss": float(np.mean(base.losses[-20:])) if base.losses else None,
    }


def smooth(values: list[float], mode: str = "valid") -> np.ndarray | list[float]:
    """A 10-step moving average (the values themselves when fewer than 10)."""
    return np.convolve(values, np.ones(10) / 10, mode=mode) if len(values) >= 10 else values


def plot(ctx: RunContext, config: MAGREFConfig, runs, metrics: dict[str, Any], base: BaseRun) -> None:  # noqa: ANN001
    """Metrics per arm (with the truth and the copy-paste baseline), loss curves, two two-subject clips per arm."""
    arms, truth, cp = metrics["arms"], metrics["ground_truth"], metrics["copy_paste"]
    fig, axes = figure(3, 1, width=3.6)
    panels = (("id_at_place", "ID similarity at the prompted place"), ("swapped", "swap rate (confusable pairs)"))
    panels += (("placed", "subjects placed"),)
    for ax, (key, title) in zip(axes[0], panels, strict=True):
        ax.bar(range(len(ARMS)), [arms[a][key] for a in ARMS], color="tab:blue")
        ax.axhline(truth[key], color="grey", ls="--", lw=0.8, label="ground truth")
        ax.axhline(cp[key], color="tab:red", ls=":", lw=0.8, label="copy-paste")
        ax.set_xticks(range(len(ARMS)), ARMS, rotation=30, fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0][0].legend(fontsize=7)
    ctx.save_plot(fig, "metrics_by_arm.png")

    fig, ax = figure(1, 1, width=5.0)
    ax.plot(smooth(base.losses), label="base i2v", lw=1)
    for arm in ARMS:
        ls = runs[arm][0].losses
        ax.plot(np.arange(len(ls)) + config.base_steps, smooth(ls, "same"), label=arm, lw=1)
    ax.set(xlabel="step (fine-tuning after the base, seed 0)", ylabel="flow-matching loss")
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
