"""Reproduction of PAGE-4D's claim on synthetic 4D scenes: a static-pretrained tiny VGGT fine-tuned to dynamics.

PAGE-4D: Disentangled Pose and Geometry Estimation for (VGGT-)4D Perception, ICLR 2026, arXiv 2510.17568. Steps:

1. Pre-train :class:`~iclr26.page4d.model.TinyVGGT` on **static** synthetic scenes only (mask off): it plays the
   pretrained VGGT. One unit, shared by all seeds (as one VGGT checkpoint is shared by all of the paper's runs).
2. Per seed k: draw a small dynamic fine-tuning set (1–``max_moving`` moving spheres per scene; or, with
   ``data=PATH``, the first half of the user's sequences) and test sets of dynamic and of static scenes.
3. Per seed, four arms from the same pretrained weights, each fine-tuned for the same number of steps on the same
   batches (equal fine-tuning compute in steps and data): ``frozen`` (no fine-tuning), ``naive`` (middle blocks,
   no mask), ``full`` (every parameter, no mask), ``page4d`` (middle blocks + mask head, dynamics-aware global
   attention with the mask schedule). Each is evaluated on both test sets: ATE, RPE, depth AbsRel/δ<1.25 split
   into static and dynamic pixels, and (PAGE-4D) the mask's IoU with the true motion mask.
4. The verdict (:mod:`iclr26.page4d.verdict`) over the per-seed means.

Units of work (``--resume``): ``pretrain``; ``seed<k>-<arm>`` for each arm (fine-tuning and evaluation).

Data parallel under torchrun: pre-training and fine-tuning run DistributedDataParallel on each rank's shard of the
global batch (``batch_size``, :func:`~iclr26.page4d.finetune.train_step`); evaluation runs alike on every rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr26.common.distributed import SINGLE, World, data_parallel
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng
from iclr26.page4d.aggregator import MaskSchedule
from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.data import batch_tensors, load_sequences
from iclr26.page4d.finetune import GroupSpec, apply_recipe, train_step, trainable_groups
from iclr26.page4d.geometry import (
    absolute_trajectory_error,
    constant_pose_errors,
    depth_metrics,
    line_fit_ate,
    mask_iou,
    pose_encoding_to_extrinsics,
    relative_pose_error,
)
from iclr26.page4d.model import TinyVGGT
from iclr26.page4d.scene import Scene4D, generate_scene
from iclr26.page4d.verdict import Measurements, comparisons, verdict

__all__ = [
    "ARMS",
    "EXPERIMENT",
    "ArmResult",
    "Baselines",
    "Pretrained",
    "arm_metrics",
    "baselines",
    "build_model",
    "eval_alpha",
    "evaluate",
    "measurements",
    "pooled_dynamic_absrel",
    "pretrain",
    "run",
    "run_arm",
    "scenes",
    "seed_mean",
    "train",
]

ARMS = ("frozen", "naive", "full", "page4d")
METRICS = ("ate", "rpe_trans", "rpe_rot", "absrel", "delta1", "absrel_static", "absrel_dynamic", "delta1_dynamic",
           "n_dynamic", "mask_iou", "ate_shuffled")  # fmt: skip


def build_model(config: Page4DConfig, device: torch.device | str | None = None) -> TinyVGGT:
    """The tiny VGGT of ``config``, built on ``device`` (torch's default device if None)."""
    with torch.device(device if device is not None else torch.get_default_device()):
        return TinyVGGT(img_size=(config.img_size, config.img_size), patch=config.patch, dim=config.dim,
                        depth=config.depth, heads=config.heads, middle=(config.middle_start, config.middle_stop),
                        mask_hidden=config.mask_hidden)  # fmt: skip


def scenes(config: Page4DConfig, seed: int, n: int, *, dynamic: bool) -> list[Scene4D]:
    """``n`` synthetic sequences of the config's world drawn from ``seed`` (1..max_moving moving spheres if
    ``dynamic``, none otherwise)."""
    rng = numpy_rng(seed)
    return [generate_scene(rng, n_frames=config.n_frames, height=config.img_size, width=config.img_size,
                           n_moving=int(rng.integers(1, config.max_moving + 1)) if dynamic else 0,
                           n_objects=config.n_objects, motion=config.motion(), object_speed=config.object_speed)
            for _ in range(n)]  # fmt: skip


@dataclass(frozen=True)
class Pretrained:
    """The ``pretrain`` unit: the static model's weights (CPU tensors) and its loss curve."""

    state: dict[str, torch.Tensor]
    losses: list[float]


def train(model: TinyVGGT, config: Page4DConfig, data: list[Scene4D], groups: list, *, steps: int, seed: int,
          schedule: MaskSchedule | None, world: World = SINGLE) -> list[float]:  # fmt: skip
    """``steps`` steps of :func:`~iclr26.page4d.finetune.train_step` on batches drawn from ``data`` (the order a
    function of ``seed`` only, so every arm of a seed sees the same batches); the losses per step."""
    device = next(model.parameters()).device
    opt = apply_recipe(model, groups)
    specs = [spec for _, spec in groups]
    rng = numpy_rng(derive_seed(seed, "batches"))
    # find_unused_parameters: the mask head takes part only while α > 0 (alike on every rank; a parameter no rank
    # used keeps grad None, as in one process, so AdamW skips it alike)
    net = data_parallel(model, world, device=device, find_unused_parameters=True)
    losses = []
    for step in range(steps):
        idx = rng.choice(len(data), size=min(config.batch_size, len(data)), replace=False)
        batch = batch_tensors([data[i] for i in idx], device)
        res = train_step(model, opt, specs, batch, step=step, total=steps, schedule=schedule,
                         camera_weight=config.camera_weight, world=world, net=net,
                         sync=device.type != "cuda")  # fmt: skip
        losses.append(res.loss)
    return [float(x) for x in losses]  # on a GPU the one read-back of the run


def pretrain(config: Page4DConfig, seed: int, *, world: World = SINGLE, device: torch.device | str | None = None
             ) -> Pretrained:  # fmt: skip
    """Step 1: train every parameter but the mask head on static scenes, mask off."""
    torch.manual_seed(derive_seed(seed, "init"))
    model = build_model(config, device)
    pool = scenes(config, derive_seed(seed, "pretrain-data"), config.pretrain_scenes, dynamic=False)
    spec = GroupSpec(lr=config.pretrain_lr, warmup=0.05, weight_decay=config.weight_decay)
    groups = trainable_groups(model, "full", blocks=spec, mask_head=spec)
    losses = train(model, config, pool, groups, steps=config.pretrain_steps, seed=seed, schedule=None, world=world)
    return Pretrained({k: v.detach().cpu().clone() for k, v in model.state_dict().items()}, losses)


@dataclass(frozen=True)
class ArmResult:
    """One ``seed<k>-<arm>`` unit.

    Attributes:
        dynamic: metric name -> per-test-scene values on the dynamic test set.
        static: the same on the static test set.
        losses: fine-tuning losses (empty for ``frozen``).
        frozen_unchanged: whether every frozen parameter is bit-identical to the pretrained weights.
        changed: whether any trained parameter changed.
    """

    dynamic: dict[str, list[float]]
    static: dict[str, list[float]]
    losses: list[float]
    frozen_unchanged: bool
    changed: bool


def _scene_metrics(out: dict[str, list[float]], sc: Scene4D, ext: np.ndarray, depth: np.ndarray,
                   mask: np.ndarray | None, patch: int) -> None:  # fmt: skip
    """Append one scene's metrics (see :func:`evaluate`) to ``out``."""
    out["ate"].append(absolute_trajectory_error(ext, sc.extrinsics))
    rt, rr = relative_pose_error(ext, sc.extrinsics)
    out["rpe_trans"].append(rt)
    out["rpe_rot"].append(rr)
    dyn = sc.dynamic_mask
    allm = depth_metrics(depth, sc.depth)
    out["absrel"].append(allm.abs_rel)
    out["delta1"].append(allm.delta1)
    out["absrel_static"].append(depth_metrics(depth, sc.depth, region=~dyn).abs_rel)
    dm = depth_metrics(depth, sc.depth, region=dyn)
    out["absrel_dynamic"].append(dm.abs_rel)
    out["delta1_dynamic"].append(dm.delta1)
    out["n_dynamic"].append(float(dm.n_pixels))
    if mask is not None:
        h, w = dyn.shape[1] // patch, dyn.shape[2] // patch
        cover = dyn.reshape(dyn.shape[0], h, patch, w, patch).mean(axis=(2, 4))
        out["mask_iou"].append(mask_iou(mask < 0, cover >= 0.5))
    else:
        out["mask_iou"].append(float("nan"))


@torch.no_grad()
def evaluate(model: TinyVGGT, data: list[Scene4D], *, alpha: float, batch_size: int = 16) -> dict[str, list[float]]:
    """Per-scene ATE, RPE (trans, rot), depth AbsRel/δ<1.25 on all, static and dynamic pixels (with the count of
    dynamic pixels, ``n_dynamic``), mask IoU, and ``ate_shuffled``: the ATE of scene i's predicted trajectory
    against the next scene's true one (a predictor that ignores its input scores the same there as on its own
    scene; NaN for a single scene).

    Depth is median-scaled per sequence over all pixels; the mask IoU compares patches with ``c < 0`` (attention
    suppressed for the pose pathway) to patches at least half covered by moving objects (NaN without a mask).
    """
    model.eval()
    model.alpha = alpha
    device = next(model.parameters()).device
    out: dict[str, list[float]] = {k: [] for k in METRICS if k != "ate_shuffled"}
    predicted = []
    for start in range(0, len(data), batch_size):
        chunk = data[start : start + batch_size]
        pred = model(batch_tensors(chunk, device)["images"])
        enc = pred.pose_enc.double().cpu().numpy()
        depth = pred.depth.double().cpu().numpy()
        masks = pred.mask.cpu().numpy() if pred.mask is not None else None
        for i, sc in enumerate(chunk):
            predicted.append(pose_encoding_to_extrinsics(enc[i]))
            _scene_metrics(out, sc, predicted[-1], depth[i], None if masks is None else masks[i], model.patch)
    n = len(data)
    out["ate_shuffled"] = [absolute_trajectory_error(predicted[i], data[(i + 1) % n].extrinsics) if n > 1
                           else float("nan") for i in range(n)]  # fmt: skip
    return out


def run_arm(config: Page4DConfig, arm: str, pre: Pretrained, seed: int, finetune: list[Scene4D],
            tests: dict[str, list[Scene4D]], *, world: World = SINGLE,
            device: torch.device | str | None = None) -> ArmResult:  # fmt: skip
    """Step 3 for one arm: fine-tune from the pretrained weights (not ``frozen``) and evaluate."""
    model = build_model(config, device)
    model.load_state_dict(pre.state)
    torch.manual_seed(derive_seed(seed, "mask-init"))  # a fresh mask head per seed, the same in every arm
    for m in model.mask_head.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.reset_parameters()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    losses: list[float] = []
    trained: set[str] = set()
    if arm != "frozen":
        blocks = GroupSpec(lr=config.lr, warmup=0.05, weight_decay=config.weight_decay)
        mask = GroupSpec(lr=config.lr * config.mask_lr_ratio, warmup=0.15, weight_decay=2 * config.weight_decay)
        groups = trainable_groups(model, arm, blocks=blocks, mask_head=mask)  # type: ignore[arg-type]
        ids = {id(p) for ps, _ in groups for p in ps}
        trained = {n for n, p in model.named_parameters() if id(p) in ids}
        schedule = config.schedule() if arm == "page4d" else None  # the mask acts in the page4d arm only
        losses = train(model, config, finetune, groups, steps=config.finetune_steps, seed=seed, schedule=schedule,
                       world=world)  # fmt: skip
    after = dict(model.named_parameters())
    frozen_ok = all(torch.equal(before[n], after[n]) for n in before if n not in trained)
    changed = any(not torch.equal(before[n], after[n]) for n in trained)
    return ArmResult(evaluate(model, tests["dynamic"], alpha=eval_alpha(config, arm)),
                     evaluate(model, tests["static"], alpha=eval_alpha(config, arm)), losses, frozen_ok,
                     changed)  # fmt: skip


def eval_alpha(config: Page4DConfig, arm: str) -> float:
    """The mask strength an arm is evaluated with: 0 for every arm but ``page4d`` (``mask_scale`` with
    ``eval_mask``, else the schedule's value at the end of fine-tuning)."""
    if arm != "page4d":
        return 0.0
    return config.mask_scale if config.eval_mask else config.schedule()(config.finetune_steps)


def seed_mean(res: ArmResult, split: str, metric: str) -> float:
    """The mean of one arm's metric over a seed's test scenes of ``split`` (NaN values left out)."""
    vals = [v for v in getattr(res, split)[metric] if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def pooled_dynamic_absrel(res: ArmResult) -> float:
    """The AbsRel over every dynamic pixel of a seed's dynamic test scenes (each scene weighted by its dynamic
    pixels, so that a scene whose moving object is small or hidden weighs little)."""
    n = np.asarray(res.dynamic["n_dynamic"])
    err = np.nan_to_num(np.asarray(res.dynamic["absrel_dynamic"])) * n
    return float(err.sum() / n.sum()) if n.sum() > 0 else float("nan")


@dataclass(frozen=True)
class Baselines:
    """Trajectory errors of trivial predictors on a seed's static test scenes (means over the scenes).

    Attributes:
        ate_constant: ATE of the constant-pose predictor.
        rpe_trans_constant: its RPE translation.
        rpe_rot_constant: its RPE rotation (degrees): the true rotation per frame.
        ate_line: ATE of the best straight-line, constant-speed trajectory.
    """

    ate_constant: float
    rpe_trans_constant: float
    rpe_rot_constant: float
    ate_line: float


def baselines(data: list[Scene4D]) -> Baselines:
    """:class:`Baselines` of the test scenes ``data``."""
    const = np.array([constant_pose_errors(sc.extrinsics) for sc in data]).mean(axis=0)
    line = float(np.mean([line_fit_ate(sc.extrinsics) for sc in data]))
    return Baselines(float(const[0]), float(const[1]), float(const[2]), line)


def measurements(results: dict[str, list[ArmResult]], base: list[Baselines]) -> Measurements:
    """The verdict's inputs: per-seed means of every arm, and the trivial predictors' errors per seed."""

    def per_seed(split: str, metric: str) -> dict[str, list[float]]:
        return {a: [seed_mean(r, split, metric) for r in results[a]] for a in ARMS}

    iou = [v for r in results["page4d"] for v in r.dynamic["mask_iou"] if not np.isnan(v)]
    return Measurements(
        ate_dynamic=per_seed("dynamic", "ate"),
        ate_static=per_seed("static", "ate"),
        absrel_dynamic={a: [pooled_dynamic_absrel(r) for r in results[a]] for a in ARMS},
        rpe_rot_static=per_seed("static", "rpe_rot"),
        ate_shuffled_static=per_seed("static", "ate_shuffled"),
        ate_constant_static=[b.ate_constant for b in base],
        rpe_rot_constant_static=[b.rpe_rot_constant for b in base],
        ate_line=[b.ate_line for b in base],
        frozen_unchanged=all(r.frozen_unchanged for rs in results.values() for r in rs),
        trained_changed=all(r.changed for a in ("naive", "full", "page4d") for r in results[a]),
        mask_iou=float(np.mean(iou)) if iou else None,
    )


def arm_metrics(results: dict[str, list[ArmResult]]) -> dict[str, dict[str, Any]]:
    """Every metric's mean over all seeds' test scenes per arm and split (None where it does not apply: no dynamic
    pixels in static scenes, no mask without PAGE-4D), and the mean final fine-tuning loss."""

    def arm_mean(a: str, s: str, m: str) -> float | None:
        vals = [v for r in results[a] for v in getattr(r, s)[m] if not np.isnan(v)]
        return float(np.mean(vals)) if vals else None

    out: dict[str, dict[str, Any]] = {
        a: {s: {m: arm_mean(a, s, m) for m in METRICS} for s in ("dynamic", "static")} for a in ARMS
    }
    for a in ARMS:
        out[a]["final_loss"] = float(np.mean([r.losses[-1] for r in results[a]])) if results[a][0].losses else None
    return out


def run(config: Page4DConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    start = time.perf_counter()
    if ctx.device.type == "cuda":  # TF32 matrix products on the GPU (the CPU path is float32 throughout)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    kw = {"world": ctx.world, "device": ctx.device}
    pre = ctx.unit("pretrain", lambda: pretrain(config, derive_seed(config.seed, "pretrain"), **kw))
    user = None
    if config.data is not None:
        user = load_sequences(config.data, n_frames=config.n_frames, img_size=(config.img_size, config.img_size))
    results: dict[str, list[ArmResult]] = {a: [] for a in ARMS}
    base: list[Baselines] = []
    for k in ctx.progress(range(config.n_seeds), desc="seeds"):
        seed = derive_seed(config.seed, "seed", k)
        if user is not None:
            finetune, dyn_test = user[: len(user) // 2], user[len(user) // 2 :]
        else:
            finetune = scenes(config, derive_seed(seed, "finetune"), config.finetune_scenes, dynamic=True)
            dyn_test = scenes(config, derive_seed(seed, "test-dynamic"), config.n_test, dynamic=True)
        tests = {"dynamic": dyn_test,
                 "static": scenes(config, derive_seed(seed, "test-static"), config.n_test, dynamic=False)}  # fmt: skip
        base.append(baselines(tests["static"]))
        for arm in ARMS:
            res = ctx.unit(
                f"seed{k}-{arm}",
                lambda arm=arm, seed=seed, ft=finetune, te=tests: run_arm(config, arm, pre, seed, ft, te, **kw),
            )
            results[arm].append(res)
            ctx.log(f"seed {k} {arm}: dynamic ATE {seed_mean(res, 'dynamic', 'ate'):.4f}")
    measured = measurements(results, base)
    _plot(ctx, measured, results, pre)
    metrics = {
        "arms": arm_metrics(results),
        "baselines_static": {f: [getattr(b, f) for b in base] for f in Baselines.__dataclass_fields__},
        "dynamic_pixel_share": float(np.mean([r.dynamic["n_dynamic"] for r in results["frozen"]]))
        / (config.n_frames * config.img_size**2),
        "tests": {k: v.record() for k, v in comparisons(measured, config).items()},
        "pretrain_final_loss": float(np.mean(pre.losses[-10:])),
    }
    return Outcome.of(verdict(measured, config), metrics=metrics, timings={"wall_s": time.perf_counter() - start})


def _plot(ctx: RunContext, m: Measurements, results: dict[str, list[ArmResult]], pre: Pretrained) -> None:
    """Per-seed ATE of every arm on dynamic and static test scenes, and the training losses."""
    fig, axes = figure(3, 1, width=4.2)
    for ax, split, ate in zip(axes[0][:2], ("dynamic", "static"), (m.ate_dynamic, m.ate_static), strict=True):
        for i, a in enumerate(ARMS):
            vals = ate[a]
            ax.scatter(np.full(len(vals), i) + np.linspace(-0.15, 0.15, len(vals)), vals, s=12)
            ax.bar(i, float(np.mean(vals)), alpha=0.3)
        ax.set_xticks(range(len(ARMS)), ARMS)
        ax.set_title(f"ATE on {split} test scenes (per seed)")
    ax = axes[0][2]
    ax.plot(pre.losses, label="pretrain (static)", lw=0.8)
    for a in ("naive", "full", "page4d"):
        if results[a][0].losses:
            ax.plot(np.arange(len(results[a][0].losses)) + len(pre.losses), results[a][0].losses, label=a, lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_title("training loss (seed 0)")
    ax.legend(fontsize=7)
    ctx.save_plot(fig, "ate_per_arm.png")


EXPERIMENT = Experiment(config_cls=Page4DConfig, run=run, data_parallel=True)
