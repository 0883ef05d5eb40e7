"""Reproduction of UniSplat's claims on a synthetic driving world.

UniSplat: Unified Spatio-Temporal Fusion via 3D Latent Scaffolds for Dynamic Driving Scene Reconstruction, ICLR 2026,
arXiv 2511.04595. Per seed k:

1. Draw training streets and held-out test streets (:mod:`iclr26.unisplat.world`): façades, parked cars, moving cars,
   an ego vehicle driving forward with a 3-camera rig of little overlap; foundation-model depth is played by the true
   depth with an unknown per-camera scale and per-pixel noise. Test drives also come as a **control** with the ego
   standing still (nothing outside the current coverage is ever observed).
2. Train four models with the same budget, data order and initial weights' draw (:func:`train_model`): the
   single-frame model (no fusion), UniSplat (fusion, dual branch), point branch only and voxel branch only (both with
   fusion), on the loss of :mod:`iclr26.unisplat.training`.
3. Evaluate on the test drives (:func:`evaluate`), streaming every frame and rendering novel views at the last one:
   arms *single* (single-frame model, no memory), *fusion* (UniSplat model, no memory), *unisplat* (with static
   memory), *point* and *voxel* (ablations, with memory), and *unisplat_nofilter* (memory without the dynamic filter:
   ghosting). Metrics: PSNR/SSIM on novel views inside and outside the current coverage, PSNR in dynamic regions
   (pixels that any moving car covers during the drive).
4. The verdict (:mod:`iclr26.unisplat.verdict`) over the per-seed means.

Units of work (``--resume``): ``seed<k>-train-<model>`` (the trained weights and loss curve) for model in
{single, dual, point, voxel}, and ``seed<k>-eval`` (all metrics of the seed).

Data parallel under torchrun: the four models train DistributedDataParallel, each rank on its shard of the global
batch's (drive, novel view) items (:func:`~iclr26.unisplat.training.batch_loss`); evaluation runs alike on every rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, shard_range
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.unisplat.config import UniSplatConfig
from iclr26.unisplat.metrics import psnr, ssim
from iclr26.unisplat.model import Gaussians, StaticMemory, UniSplat
from iclr26.unisplat.training import BatchLoss, LossWeights, frames_of
from iclr26.unisplat.verdict import Measurements, verdict
from iclr26.unisplat.world import SKY, DrivingSequence, draw_street, make_sequence

__all__ = [
    "ARMS",
    "CONTROL_ARMS",
    "EXPERIMENT",
    "MODELS",
    "TrainResult",
    "ViewScores",
    "build_model",
    "draw_sequence",
    "evaluate",
    "filter_counts",
    "loss_weights",
    "run",
    "seed_eval",
    "summary",
    "train_model",
]

MODELS = ("single", "dual", "point", "voxel")
#: Evaluated arm -> (trained model, static memory on, dynamic filter on).
ARMS = {
    "single": ("single", False, True),
    "fusion": ("dual", False, True),
    "unisplat": ("dual", True, True),
    "point": ("point", True, True),
    "voxel": ("voxel", True, True),
    "unisplat_nofilter": ("dual", True, False),
}
CONTROL_ARMS = ("single", "unisplat")


def build_model(config: UniSplatConfig, name: str, generator: torch.Generator | None = None,
                device: torch.device | str | None = None) -> UniSplat:  # fmt: skip
    """The model ``name`` in :data:`MODELS` (single = dual branch without fusion), its parameters on ``device``
    (torch's default device if None)."""
    branches = {"single": "dual", "dual": "dual", "point": "point", "voxel": "voxel"}[name]
    with torch.device(device if device is not None else torch.get_default_device()):
        return UniSplat(config.grid(), dim=config.dim, patch=config.patch, voxel_gs=config.voxel_gs,
                        branches=branches, fusion=name != "single", history_quantile=config.history_quantile,
                        generator=generator)  # fmt: skip


def draw_sequence(config: UniSplatConfig, rng: np.random.Generator, n_frames: int, *, stationary: bool = False,
                  street_seed: int | None = None) -> DrivingSequence:  # fmt: skip
    """One drive of the config's world (``stationary``: the same street drawn from ``street_seed`` with the ego
    standing still, the control)."""
    srng = rng if street_seed is None else numpy_rng(street_seed)
    street = draw_street(srng, ego_speed=config.ego_speed, n_moving=config.n_moving, n_parked=config.n_parked)
    if stationary:
        street = replace(street, ego_speed=0.0)
    return make_sequence(street, rng, n_frames=n_frames, height=config.height, width=config.width,
                         rig_yaws=config.rig_yaws, fov_deg=config.fov_deg,
                         inside_views=tuple((y, config.inside_shift * (1.0 if y >= 0 else -1.0))
                                            for y in config.inside_yaws),
                         outside_yaws=config.outside_yaws, scale_range=config.scale_range,
                         depth_noise=config.depth_noise)  # fmt: skip


def loss_weights(config: UniSplatConfig) -> LossWeights:
    """The loss weights of ``config``."""
    return LossWeights(config.w_rgb, config.w_dyn, config.w_scale, config.dyn_pos_weight_cap)


@dataclass(frozen=True)
class TrainResult:
    """One trained model.

    Attributes:
        state: its ``state_dict`` (CPU tensors).
        losses: total loss per step.
        changed: whether training changed any parameter (False with no steps).
    """

    state: dict[str, torch.Tensor]
    losses: list[float]
    changed: bool = True


def train_model(config: UniSplatConfig, name: str, seqs: list[DrivingSequence], seed: int, *,
                world: World = SINGLE, device: torch.device | str | None = None) -> TrainResult:  # fmt: skip
    """Train model ``name`` on ``seqs`` (module docstring, step 2); the data order depends on ``seed`` only, so every
    model of a seed sees the same drives and views in the same order. A step's loss is the mean over its
    ``batch_size`` drives, each with one inside and one outside novel view.

    Under torchrun every rank draws the same global batch and trains through DistributedDataParallel on its
    contiguous shard of the batch's (drive, view) items (:func:`~iclr26.unisplat.training.batch_loss`): its mean
    loss times ``world_size ×`` its share, so DDP's gradient average is the global batch's gradient; the recorded
    loss is summed over the ranks. On CUDA the optimizer is fused and the losses are read back once, after the
    last step.
    """
    model = build_model(config, name, torch_generator(derive_seed(seed, "init")), device)
    device = next(model.parameters()).device
    cuda = {"fused": True} if device.type == "cuda" else {}
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, **cuda)
    rng = numpy_rng(derive_seed(seed, "order"))
    bg = torch.as_tensor(SKY, dtype=torch.float32, device=device)
    n_in, n_out = len(config.inside_yaws), len(config.outside_yaws)
    n_items = 2 * config.batch_size  # two supervised views per drive
    if n_items < world.size:
        raise ValueError(f"batch_size={config.batch_size} drives give {n_items} (drive, view) items, fewer than "
                         f"the {world.size} ranks; raise batch_size")  # fmt: skip
    items = shard_range(n_items, world.rank, world.size)
    share = len(items) / n_items
    # find_unused_parameters: parameters a model variant leaves out of the loss, alike on every rank
    net = data_parallel(BatchLoss(model, bg, loss_weights(config)), world, find_unused_parameters=True)
    before = [p.detach().clone() for p in model.parameters()]
    losses: list[float | torch.Tensor] = []
    for _ in range(config.steps):
        draws = [(seqs[int(rng.integers(len(seqs)))], (int(rng.integers(n_in)), n_in + int(rng.integers(n_out))))
                 for _ in range(config.batch_size)]  # fmt: skip
        loss = net(draws, items)
        opt.zero_grad()
        (loss if world.size == 1 else loss * (share * world.size)).backward()  # DDP averages the ranks' gradients
        opt.step()
        if world.size > 1:
            losses.append(all_reduce_sum([float(loss.detach()) * share], device=device)[0])
        else:  # a tensor on CUDA: no host sync per step
            losses.append(loss.detach() if device.type == "cuda" else float(loss.detach()))
    changed = any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return TrainResult(state, [float(x) for x in losses], changed)


@dataclass(frozen=True)
class ViewScores:
    """Scores of one arm on one drive.

    Attributes:
        psnr_in: mean PSNR of the novel views inside the coverage.
        psnr_out: mean PSNR of the views outside it.
        ssim_in: mean SSIM inside.
        ssim_out: mean SSIM outside.
        dyn_sse: summed squared error over dynamic-region pixels (all novel views, all channels).
        dyn_count: number of such pixel-channel values.
        filter_moving: decoded Gaussians of the streamed frames whose dynamic target is >= 0.5 (moving).
        filter_static: supervised decoded Gaussians whose target is below 0.5.
        filter_removed_moving: moving Gaussians whose dynamic probability is >= 0.5 (what the memory's filter
            drops).
        filter_removed_static: static Gaussians the filter drops.
    """

    psnr_in: float
    psnr_out: float
    ssim_in: float
    ssim_out: float
    dyn_sse: float
    dyn_count: int
    filter_moving: int = 0
    filter_static: int = 0
    filter_removed_moving: int = 0
    filter_removed_static: int = 0


def filter_counts(g: Gaussians) -> tuple[int, int, int, int]:
    """``(moving, static, removed moving, removed static)`` among the supervised Gaussians of ``g``: moving means a
    dynamic target >= 0.5, removed a dynamic probability >= 0.5 (the memory's filter)."""
    sup = g.dynamic_target >= 0
    moving = (g.dynamic_target >= 0.5) & sup
    static = sup & ~moving
    removed = torch.sigmoid(g.dynamic_logits) >= 0.5
    return int(moving.sum()), int(static.sum()), int((removed & moving).sum()), int((removed & static).sum())


@torch.no_grad()
def evaluate(model: UniSplat, seq: DrivingSequence, *, memory: bool, filter_dynamic: bool = True,
             return_images: bool = False) -> ViewScores | tuple[ViewScores, list[torch.Tensor]]:  # fmt: skip
    """Stream every frame of ``seq`` and score the novel views at the last frame (module docstring, step 3), on the
    model's device."""
    device = next(model.parameters()).device
    frames = frames_of(seq, device)
    mem = StaticMemory(filter_dynamic=filter_dynamic) if memory else None
    history = None
    counts = np.zeros(4, dtype=np.int64)
    for f in frames:
        out = model.step(f, history, mem)
        history = (out.scaffold, out.valid, f.ego_pose)
        counts += filter_counts(out.gaussians)
    bg = torch.as_tensor(SKY, dtype=torch.float32, device=device)
    h, w = seq.images.shape[-2:]
    p_in, p_out, s_in, s_out, images = [], [], [], [], []
    sse, cnt = 0.0, 0
    for q in range(seq.novel.shape[0]):
        img = out.render_set.render(torch.as_tensor(seq.novel[q], dtype=torch.float32, device=device),
                                    frames[-1].intrinsic, h, w, background=bg).image[:3].clamp(0, 1)  # fmt: skip
        gt = torch.as_tensor(seq.novel_images[q], device=device)
        images.append(img)
        (p_out if seq.novel_outside[q] else p_in).append(psnr(img, gt))
        (s_out if seq.novel_outside[q] else s_in).append(ssim(img, gt))
        m = torch.as_tensor(seq.novel_dynamic[q], device=device)
        sse += float(((img - gt) ** 2)[:, m].sum())
        cnt += int(m.sum()) * 3
    scores = ViewScores(float(np.mean(p_in)), float(np.mean(p_out)), float(np.mean(s_in)), float(np.mean(s_out)),
                        sse, cnt, *(int(c) for c in counts))  # fmt: skip
    return (scores, images) if return_images else scores


def seed_eval(config: UniSplatConfig, states: dict[str, TrainResult], seed: int, *,
              device: torch.device | str | None = None) -> dict[str, Any]:  # fmt: skip
    """All arms on the seed's test drives and the stationary controls (the ``seed<k>-eval`` unit)."""
    models = {}
    for name in MODELS:
        m = build_model(config, name, device=device)
        m.load_state_dict(states[name].state)
        m.eval()
        models[name] = m
    rng = numpy_rng(derive_seed(seed, "test"))
    res: dict[str, list[ViewScores]] = {a: [] for a in ARMS}
    ctrl: dict[str, list[ViewScores]] = {a: [] for a in CONTROL_ARMS}
    for j in range(config.n_test):
        street_seed = derive_seed(seed, "street", j)
        seq = draw_sequence(config, rng, config.eval_frames, street_seed=street_seed)
        still = draw_sequence(config, rng, config.eval_frames, stationary=True, street_seed=street_seed)
        for arm, (name, mem, filt) in ARMS.items():
            res[arm].append(evaluate(models[name], seq, memory=mem, filter_dynamic=filt))
        for arm in CONTROL_ARMS:
            name, mem, filt = ARMS[arm]
            ctrl[arm].append(evaluate(models[name], still, memory=mem, filter_dynamic=filt))
    return {"main": res, "control": ctrl}


def summary(scores: list[ViewScores]) -> dict[str, float | None]:
    """One arm's scores over a seed's drives: mean PSNR/SSIM inside and outside, their all-view mean, the PSNR
    over every dynamic-region pixel (None when no moving car was seen), and the filter's counts summed."""
    sse, cnt = sum(s.dyn_sse for s in scores), sum(s.dyn_count for s in scores)
    out = {k: float(np.mean([getattr(s, k) for s in scores])) for k in ("psnr_in", "psnr_out", "ssim_in", "ssim_out")}
    out["psnr_all"] = 0.5 * (out["psnr_in"] + out["psnr_out"])
    out["psnr_dynamic"] = float(10 * np.log10(1.0 / max(sse / cnt, 1e-10))) if cnt else None
    for k in ("filter_moving", "filter_static", "filter_removed_moving", "filter_removed_static"):
        out[k] = float(sum(getattr(s, k) for s in scores))
    return out


def _measurements(per_seed: list[dict[str, Any]], trained: bool) -> Measurements:
    """The verdict's inputs: per arm and metric, the per-seed values."""
    table = {city: {a: {m: [s[city][a][m] for s in per_seed] for m in per_seed[0][city][a]}
                    for a in per_seed[0][city]} for city in ("main", "control")}  # fmt: skip
    return Measurements(main=table["main"], control=table["control"], models_trained=trained)


def run(config: UniSplatConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    start = time.perf_counter()
    if ctx.device.type == "cuda":  # TF32 matrix products on the GPU (the CPU path is float32 throughout)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    per_seed: list[dict[str, Any]] = []
    losses: dict[str, list[list[float]]] = {m: [] for m in MODELS}
    trained = True
    for k in range(config.n_seeds):
        seed = derive_seed(config.seed, "seed", k)
        rng = numpy_rng(derive_seed(seed, "train-data"))
        seqs = [draw_sequence(config, rng, config.train_frames) for _ in range(config.train_sequences)]
        states = {}
        for name in MODELS:
            states[name] = ctx.unit(
                f"seed{k}-train-{name}",
                lambda name=name, seqs=seqs, seed=seed: train_model(
                    config, name, seqs, seed, world=ctx.world, device=ctx.device
                ),
            )
            losses[name].append(states[name].losses)
            trained = trained and states[name].changed
        ev = ctx.unit(
            f"seed{k}-eval", lambda states=states, seed=seed: seed_eval(config, states, seed, device=ctx.device)
        )
        summ = {c: {a: summary(v) for a, v in ev[c].items()} for c in ("main", "control")}
        per_seed.append(summ)
        m = summ["main"]
        ctx.log(f"seed {k}: out-of-coverage PSNR single {m['single']['psnr_out']:.2f} unisplat "
                f"{m['unisplat']['psnr_out']:.2f}; all-view PSNR point {m['point']['psnr_all']:.2f} voxel "
                f"{m['voxel']['psnr_all']:.2f} dual {m['unisplat']['psnr_all']:.2f}")  # fmt: skip
    measured = _measurements(per_seed, trained)
    arms = {city: {a: {m: _mean(v) for m, v in table.items()} for a, table in getattr(measured, city).items()}
            for city in ("main", "control")}  # fmt: skip
    _plot(ctx, arms, losses)
    metrics = {"arms": arms, "per_seed": per_seed,
               "final_loss": {m: [ls[-1] if ls else None for ls in v] for m, v in losses.items()}}  # fmt: skip
    return Outcome.of(verdict(measured, config), metrics=metrics, timings={"wall_s": time.perf_counter() - start})


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def _plot(ctx: RunContext, arms: dict[str, Any], losses: dict[str, list[list[float]]]) -> None:
    """PSNR per arm inside/outside the coverage, and the training losses."""
    fig, axes = figure(2, 1, width=4.5)
    ax = axes[0][0]
    names = list(arms["main"])
    x = np.arange(len(names))
    ax.bar(x - 0.2, [arms["main"][a]["psnr_in"] for a in names], 0.4, label="inside coverage")
    ax.bar(x + 0.2, [arms["main"][a]["psnr_out"] for a in names], 0.4, label="outside coverage")
    ax.set_xticks(x, names, rotation=30, fontsize=7)
    ax.set_ylabel("PSNR (dB), mean over seeds")
    ax.legend(fontsize=7)
    ax = axes[0][1]
    for m, ls in losses.items():
        if ls and ls[0]:
            ax.plot(np.mean(np.asarray(ls), axis=0), label=m, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean over seeds)")
    ax.legend(fontsize=7)
    ctx.save_plot(fig, "psnr_by_arm.png")


EXPERIMENT = Experiment(config_cls=UniSplatConfig, run=run, data_parallel=True)
