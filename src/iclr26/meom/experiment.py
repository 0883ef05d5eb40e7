"""Reproduction of MEOM's ablation on corrupted digits: CE, TWD, TWD+TMPD, TWD+TPD and MEOM, over several seeds.

Many Eyes, One Mind (MEOM), ICLR 2026, OpenReview NbdEDRRsCI. The paper's ablation (CIFAR-10/100, ResNet-19,
T = 4) and truncated-inference study (train at T = 6, evaluate at t = 1..T) are repeated at CPU scale:

1. Data: scikit-learn's bundled 8x8 digits with a blanked square and Gaussian noise, a fixed stratified split; the
   teacher trains on the whole training split, the students on a fixed stratified draw of ``n_student_train`` of it
   (a teacher that knows more than the student: the regime where distillation helps).
2. Per seed: train an ANN teacher (:class:`ConvTeacher`), then from one shared SNN initialisation train one student
   (:class:`SpikingConvNet`, T timesteps, direct input) per arm with the same batch order and static masks
   (paired comparison):
   - ``ce``: L_CE only;  ``twd``: L_CE + 0.2 KD (TWD's own KD weight);  ``twd-w0.5``: L_CE + 0.5 KD (MEOM's weight);
   - ``twd-soft``: L_CE + 0.5 KD to the teacher logits divided by s, the softening matched to the masks' (control);
   - ``twd+tmpd``: L_CE + 0.5 L_TMPD;  ``twd+tpd``: L_CE + 0.5 KD + 0.3 L_TPD;  ``meom``: L_CE + 0.5 L_TMPD + 0.3 L_TPD.
3. Evaluate on the test split: truncated accuracy at every t = 1..T and three temporal-variance candidates for
   Var@T.
4. Verdict (:func:`iclr26.meom.verdict.verdict`): gated on TWD beating CE; MEOM must beat the stronger TWD at every
   t and TWD+TMPD the softened-teacher TWD at full length. The metrics hold every paired difference and the
   secondary checks (reported, not judged): TPD raises early-timestep accuracy (t = 1), TMPD lowers the temporal
   variance (both against ``twd-w0.5``, the same KD weight).

Units of work (a killed run resumes with ``iclr26 run meom --resume RUN_DIR``): ``teacher-seed<k>`` (the trained
teacher's weights and test accuracy) and ``student-<arm>-seed<k>`` (one student trained and evaluated) per seed k.

Device: ``device`` (cpu, cuda, cuda:N or auto; the ``gpu`` scale asks for cuda) holds the models, the data, the
masks and the evaluation. Every random draw (initialisations, batch orders, masks) comes from a CPU generator and
is then moved, so a run draws the same numbers on any device; metrics leave the device as CPU tensors.

Data parallel under torchrun (:mod:`iclr26.common.distributed`): the students train with DistributedDataParallel;
``batch_size`` is the global batch, every rank keeps its contiguous shard of it, split into ``accumulation_steps``
micro-batches (:func:`split_step`), so N ranks equal one process with N accumulation steps (BatchNorm normalises each
micro-batch). The teacher trains whole on every rank (it is small next to the students, and then equals the
one-process teacher exactly).

Deviations (see the README): digits instead of CIFAR/ImageNet; a 3-conv net instead of ResNet-19; a student that
sees a tenth of the teacher's images; Adam with a cosine schedule for a few dozen epochs instead of SGD for 300
epochs; unspecified MEOM hyperparameters (lambda, mask keep ratio, static vs resampled masks, 1/keep rescaling, TPD
target detaching) are config fields with our defaults.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, data_parallel, shard_range
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.stats import paired_t
from iclr26.meom.config import Arm, MEOMConfig
from iclr26.meom.data import DigitsSplit, load_corrupted_digits, training_subset
from iclr26.meom.lif import LIF
from iclr26.meom.losses import (
    matched_softening,
    meom_loss,
    multi_perspective_teacher_logits,
    sample_temporal_masks,
    static_temporal_masks,
)
from iclr26.meom.metrics import (
    accuracy_temporal_variance,
    logit_temporal_variance,
    per_timestep_accuracy,
    prediction_disagreement,
    truncated_accuracy,
)
from iclr26.meom.model import ConvTeacher, SpikingConvNet, predict_logits
from iclr26.meom.verdict import Measurements, verdict


@dataclass(frozen=True)
class ArmLoss:
    """How an arm weights the MEOM terms: lambda (0 turns TMPD into TWD's KD), w_tmpd (the KD/TMPD weight), w_tpd,
    and whether the teacher logits are softened by the factor matched to the masks (:func:`matched_softening`)."""

    lam: float
    w_tmpd: float
    w_tpd: float
    soften: bool = False


def arm_loss(arm: Arm, config: MEOMConfig) -> ArmLoss:
    """The loss weights of ``arm`` under ``config`` (w_ce is shared by all arms).

    ``twd`` uses TWD's own KD weight (``twd_kd_weight``, 0.2); every other teacher arm uses MEOM's ``w_tmpd``
    (0.5), so ``twd-w0.5``, ``twd-soft``, ``twd+tmpd``, ``twd+tpd`` and ``meom`` differ only in their targets and TPD.
    """
    uses_masks = arm in ("twd+tmpd", "meom")
    uses_tpd = arm in ("twd+tpd", "meom")
    w_kd = 0.0 if arm == "ce" else config.twd_kd_weight if arm == "twd" else config.w_tmpd
    return ArmLoss(
        lam=config.lam if uses_masks else 0.0,
        w_tmpd=w_kd,
        w_tpd=config.w_tpd if uses_tpd else 0.0,
        soften=arm == "twd-soft",
    )


@dataclass(frozen=True)
class ArmResult:
    """One trained student evaluated on the test split.

    Attributes:
        truncated_acc: accuracy of the t-step cumulative average, t = 1..T, in [0, 1].
        per_step_acc: accuracy of each timestep's own logits, t = 1..T.
        var_logits: mean over test samples and classes of Var_t(z_t).
        var_acc: Var_t(100 * truncated_acc_t), percent^2.
        disagreement: share of (sample, t) whose own argmax differs from the full-length prediction, in [0, 1].
        final_loss: training loss of the last epoch (mean over its steps).
        softening: the factor s the teacher logits were divided by (``twd-soft``; 1 for the other arms).
    """

    truncated_acc: np.ndarray
    per_step_acc: np.ndarray
    var_logits: float
    var_acc: float
    disagreement: float
    final_loss: float
    softening: float = 1.0


def _cosine_lr(optimizer: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1.0 + math.cos(math.pi * s / total_steps)))


def _batches(n: int, batch_size: int, gen: torch.Generator) -> list[Tensor]:
    """A shuffled epoch of CPU index batches from ``gen``; a last batch of 1 is merged (BatchNorm needs 2)."""
    perm = torch.randperm(n, generator=gen)
    chunks = list(perm.split(batch_size))
    if len(chunks) > 1 and len(chunks[-1]) < 2:
        chunks[-2] = torch.cat([chunks[-2], chunks.pop()])
    return chunks


def train_teacher(config: MEOMConfig, data: DigitsSplit, seed: int) -> ConvTeacher:
    """Train the ANN teacher with cross-entropy (Adam, cosine schedule) on the device that holds ``data``."""
    device = data.x_train.device
    torch.manual_seed(derive_seed(seed, "teacher-init"))
    # initialised on the CPU from the seed, then moved: the same initial weights on every device
    teacher = ConvTeacher(1, data.num_classes, widths=config.teacher_widths).to(device)
    opt = torch.optim.Adam(teacher.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    gen = torch_generator(derive_seed(seed, "teacher-order"))
    steps_per_epoch = len(_batches(len(data.y_train), config.batch_size, torch_generator(0)))
    sched = _cosine_lr(opt, config.teacher_epochs * steps_per_epoch)
    teacher.train()
    for _ in range(config.teacher_epochs):
        for idx in _batches(len(data.y_train), config.batch_size, gen):
            idx = idx.to(device)
            loss = torch.nn.functional.cross_entropy(teacher(data.x_train[idx]), data.y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


@dataclass(frozen=True)
class TrainedTeacher:
    """The unit ``teacher-seed<k>``: a trained teacher as plain data.

    Attributes:
        state: its ``state_dict`` (parameters and BatchNorm buffers) as CPU tensors.
        accuracy: its test accuracy, in [0, 1].
    """

    state: dict[str, Tensor]
    accuracy: float


def _teacher_unit(config: MEOMConfig, data: DigitsSplit, seed: int) -> TrainedTeacher:
    """Train the teacher of ``seed`` and evaluate it on the test split."""
    teacher = train_teacher(config, data, seed)
    t_logits = predict_logits(teacher, data.x_test)
    return TrainedTeacher(
        state={n: v.detach().cpu().clone() for n, v in teacher.state_dict().items()},
        accuracy=float((t_logits.argmax(-1) == data.y_test).double().mean()),
    )


def load_teacher(config: MEOMConfig, state: dict[str, Tensor], num_classes: int, device: torch.device) -> ConvTeacher:
    """A frozen teacher in eval mode with the weights ``state`` of a :class:`TrainedTeacher`, on ``device``."""
    teacher = ConvTeacher(1, num_classes, widths=config.teacher_widths)
    teacher.load_state_dict(state)
    teacher.to(device).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


def make_student(config: MEOMConfig, num_classes: int) -> SpikingConvNet:
    """A fresh SNN student with the config's LIF settings (hard reset to 0, as in the TWD code)."""
    return SpikingConvNet(
        1, num_classes, timesteps=config.timesteps, widths=config.student_widths,
        make_lif=lambda: LIF(decay=config.decay, v_threshold=config.v_threshold, alpha=config.surrogate_alpha),
    )  # fmt: skip


def train_student(
    config: MEOMConfig,
    arm: Arm,
    data: DigitsSplit,
    teacher: ConvTeacher,
    init_state: dict[str, Tensor],
    seed: int,
    progress: Any,
    *,
    world: World = SINGLE,
) -> ArmResult:
    """Train one student of ``arm`` from ``init_state`` and evaluate it on the test split.

    Under torchrun (``world``, the run's ``ctx.world``) every rank trains on its shard of each batch through
    DistributedDataParallel, whose forward broadcasts rank 0's BatchNorm running statistics, so all ranks evaluate
    the same model.

    The batch order and the masks depend only on ``seed`` (not on the arm), so arms are paired. The student
    trains on the device that holds ``data`` (and ``teacher``); batch orders and masks are drawn on the CPU and
    moved there.
    """
    device = data.x_train.device
    weights = arm_loss(arm, config)
    student = make_student(config, data.num_classes)
    student.load_state_dict(init_state)
    student.to(device)
    opt = torch.optim.Adam(student.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    order_gen = torch_generator(derive_seed(seed, "student-order"))
    mask_seed = derive_seed(seed, "masks")
    # the masks: static ones are meom_loss's default (drawn once from mask_seed on the CPU, then moved: the same
    # masks on every device); per_step redraws them at every step from a CPU generator
    mask_kw: dict[str, Any] = {"keep_prob": config.keep_prob, "rescale_masks": config.rescale_masks}
    if config.mask_mode == "fixed":
        mask_kw["mask_seed"] = mask_seed
    else:
        mask_gen = torch_generator(mask_seed)
    with torch.no_grad():
        # the frozen teacher (eval mode: per-sample BatchNorm) computes every training image's features once
        train_feats = teacher.features(data.x_train)  # (N, D, H, W)
    softening = softening_factor(config, data, teacher, mask_seed) if weights.soften else 1.0
    head = _SoftenedHead(teacher.head, softening) if weights.soften else teacher.head
    steps_per_epoch = len(_batches(len(data.y_train), config.batch_size, torch_generator(0)))
    sched = _cosine_lr(opt, config.student_epochs * steps_per_epoch)
    student.train()
    split = world.is_distributed or config.accumulation_steps > 1
    net = data_parallel(student, world, device=device)
    epoch_loss = float("nan")
    for _ in range(config.student_epochs):
        losses = []
        for idx in _batches(len(data.y_train), config.batch_size, order_gen):
            idx = idx.to(device)
            x, y = data.x_train[idx], data.y_train[idx]
            feats = train_feats[idx]  # (B, D, H, W)
            if config.mask_mode == "per_step":
                # m_t ~ Bernoulli(keep_prob) from the CPU generator at every step, then moved
                mask_kw["masks"] = sample_temporal_masks(
                    config.timesteps, tuple(feats.shape[1:]), keep_prob=config.keep_prob, generator=mask_gen,
                    rescale=config.rescale_masks,
                ).to(device)  # fmt: skip

            def step_loss(rows: slice, x: Tensor = x, y: Tensor = y, feats: Tensor = feats) -> Tensor:
                return meom_loss(
                    net(x[rows]), feats[rows], head, y[rows], lam=weights.lam, tau=config.tau,
                    w_ce=config.w_ce, w_tmpd=weights.w_tmpd, w_tpd=weights.w_tpd,
                    tpd_divergence=config.tpd_divergence, detach_tpd_target=config.detach_tpd_target, **mask_kw,
                ).total  # fmt: skip

            opt.zero_grad()
            if split:  # data parallel and/or accumulated: micro-batches of this rank's shard (see split_step)
                losses.append(split_step(step_loss, net, len(idx), config.accumulation_steps, world))
            else:
                total = step_loss(slice(None))
                total.backward()
                losses.append(total.item())
            opt.step()
            sched.step()
            progress.update(1)
        epoch_loss = float(np.mean(losses))
    return evaluate_student(student, data, final_loss=epoch_loss, softening=softening)


def evaluate_student(student: SpikingConvNet, data: DigitsSplit, *, final_loss: float, softening: float) -> ArmResult:
    """The :class:`ArmResult` of a trained ``student`` on the test split of ``data``."""
    logits = predict_logits(student, data.x_test)  # (T, N, C), on the device
    trunc = truncated_accuracy(logits, data.y_test)
    return ArmResult(
        truncated_acc=trunc.cpu().numpy(),
        per_step_acc=per_timestep_accuracy(logits, data.y_test).cpu().numpy(),
        var_logits=logit_temporal_variance(logits),
        var_acc=accuracy_temporal_variance(trunc),
        disagreement=prediction_disagreement(logits),
        final_loss=final_loss,
        softening=softening,
    )


def split_step(
    step_loss: Callable[[slice], Tensor], net: torch.nn.Module, batch: int, accumulation: int, world: World
) -> float:
    """Gradients of one student step over micro-batches; returns the batch's mean loss (summed over the ranks).

    The batch of ``batch`` images is the global batch: rank r keeps its contiguous shard (``shard_range``) and splits
    it into ``accumulation`` contiguous micro-batches. Each micro-batch loss (a mean over its images) is weighted by
    ``world_size ×`` its share of the batch; DistributedDataParallel averages the gradients over the ranks in the
    last micro-batch's backward (``no_sync`` before it), so the gradient is the mean-loss gradient of the batch with
    BatchNorm statistics per micro-batch: N ranks with 1 accumulation step give the micro-batches of one process
    with N accumulation steps, up to float summation order.
    """
    shard = shard_range(batch, world.rank, world.size)
    pieces = [shard_range(len(shard), i, accumulation) for i in range(accumulation)]
    if min(len(p) for p in pieces) < 2:
        raise ValueError(
            f"a micro-batch of the {batch}-image batch has fewer than 2 images on {world.size} rank(s) with "
            f"accumulation_steps={accumulation} (BatchNorm needs 2): raise batch_size"
        )
    value = 0.0
    for i, piece in enumerate(pieces):
        rows = slice(shard.start + piece.start, shard.start + piece.stop)
        sync = not world.is_distributed or i == len(pieces) - 1
        with contextlib.nullcontext() if sync else net.no_sync():
            loss = step_loss(rows)
            (loss * (len(piece) / batch * world.size)).backward()
        value += loss.item() * len(piece) / batch
    if world.is_distributed:
        (value,) = all_reduce_sum([value])
    return value


class _SoftenedHead(torch.nn.Module):
    """The teacher's head with its logits divided by s: the targets of the ``twd-soft`` control."""

    def __init__(self, head: torch.nn.Module, factor: float) -> None:
        super().__init__()
        self.head, self.factor = head, factor

    def forward(self, feats: Tensor) -> Tensor:
        return self.head(feats) / self.factor


def softening_factor(config: MEOMConfig, data: DigitsSplit, teacher: ConvTeacher, mask_seed: int) -> float:
    """s of the ``twd-soft`` control: the teacher logits divided by s have the mean entropy (at temperature tau) of
    the TMPD targets that the seed's static masks and lambda give, over the training images (:func:`matched_softening`).
    """
    with torch.no_grad():
        feats = teacher.features(data.x_train)
        masks = static_temporal_masks(
            config.timesteps, tuple(feats.shape[1:]), keep_prob=config.keep_prob, mask_seed=mask_seed,
            rescale=config.rescale_masks, dtype=feats.dtype, device=feats.device,
        )  # fmt: skip
        z = teacher.head(feats)
        views = multi_perspective_teacher_logits(feats, teacher.head, masks, lam=config.lam, teacher_logits=z)
    return matched_softening(z, views, tau=config.tau)


def _sd(a: np.ndarray) -> np.ndarray:
    """Sample standard deviation over the seed axis 0 (ddof 1); zeros for a single seed."""
    return a.std(axis=0, ddof=1) if a.shape[0] > 1 else np.zeros_like(a[0])


def paired_difference(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Seed-paired difference d = a - b over arrays of shape (seeds, ...), with a paired Student-t test.

    Returns:
        ``mean``, ``std`` (ddof 1), ``se`` = std / sqrt(n), ``ci95`` = t_{0.975, n-1} * se (the half-width of the
        95% confidence interval of the mean; 0 for a single seed), ``wins`` (seeds with d > 0) and
        ``significant`` (|mean| > ci95, i.e. a two-sided paired t-test rejects "no difference" at the 5% level;
        never with a single seed).
    """
    # t quantile with n - 1 degrees of freedom (2.776 for 5 seeds), not the normal 1.96 or a rule-of-thumb 2
    t = paired_t(a - b, level=0.95)  # :func:`iclr26.common.stats.paired_t`, element-wise over (...)
    if t.n < 2:  # this record's convention for one seed: zero spread and interval, never significant
        zero = np.zeros_like(a[0] - b[0])
        std, se, ci95 = zero, zero, zero
    else:
        std, se, ci95 = t.sd, t.se, t.half_width
    return {
        "mean": t.mean,
        "std": std,
        "se": se,
        "ci95": ci95,
        "wins": t.wins,
        "significant": (np.abs(t.mean) > ci95) & (t.n > 1),
    }


def run(config: MEOMConfig, ctx: RunContext) -> Outcome:
    """Train teacher and students for every seed and arm; compare MEOM with TWD at every truncation point.

    Runs on ``ctx.device`` (``config.device``, resolved by the runner before any work), with one CPU thread: the
    tensors are tiny (one thread is fastest), and the numbers then do not depend on the machine's core count.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(config, ctx, ctx.device)
    finally:
        torch.set_num_threads(threads)


def _run(config: MEOMConfig, ctx: RunContext, device: torch.device) -> Outcome:
    data = load_corrupted_digits(
        n_test=config.n_test, occlusion=config.occlusion, noise_std=config.noise_std, data_seed=config.data_seed
    ).to(device)
    # the students see a fixed stratified draw of the teacher's training images (the same for every --seed)
    students_data = training_subset(data, config.n_student_train, derive_seed(config.data_seed, "student-subset"))
    ctx.log(
        f"digits: {len(data.y_train)} teacher / {len(students_data.y_train)} student training images, "
        f"{len(data.y_test)} test, T={config.timesteps}, device {device}"
    )
    steps = len(_batches(len(students_data.y_train), config.batch_size, torch_generator(0))) * config.student_epochs
    results: dict[str, list[ArmResult]] = {arm: [] for arm in config.arms}
    teacher_acc = []
    with ctx.progress(total=config.n_seeds * len(config.arms) * steps, desc="students") as bar:
        for k in range(config.n_seeds):
            seed = derive_seed(config.seed, "seed", k)
            trained = ctx.unit(f"teacher-seed{k}", lambda seed=seed: _teacher_unit(config, data, seed))
            # read back from its weights whether trained now or in an interrupted run: one path for both
            teacher = load_teacher(config, trained.state, data.num_classes, device)
            teacher_acc.append(trained.accuracy)
            torch.manual_seed(derive_seed(seed, "student-init"))
            init_state = {n: v.clone() for n, v in make_student(config, data.num_classes).state_dict().items()}
            for arm in config.arms:
                res = ctx.unit(
                    f"student-{arm}-seed{k}",
                    lambda arm=arm, seed=seed, teacher=teacher, init_state=init_state: train_student(
                        config, arm, students_data, teacher, init_state, seed, bar, world=ctx.world
                    ),
                )
                results[arm].append(res)
                ctx.log(
                    f"seed {k} {arm:9s} acc@t=1..T "
                    + " ".join(f"{100 * a:.1f}" for a in res.truncated_acc)
                    + f"  var_logits {res.var_logits:.3f}"
                )
    return _outcome(config, ctx, results, teacher_acc)


def _outcome(
    config: MEOMConfig, ctx: RunContext, results: dict[str, list[ArmResult]], teacher_acc: list[float]
) -> Outcome:
    """Aggregate over seeds, plot, and judge the claim with :func:`iclr26.meom.verdict.verdict`.

    Args:
        config: the run's config.
        ctx: the run context (for the plots).
        results: per arm, one :class:`ArmResult` per seed.
        teacher_acc: the teacher's test accuracy per seed, in [0, 1].
    """
    trunc = {arm: 100 * np.stack([r.truncated_acc for r in rs]) for arm, rs in results.items()}  # (seeds, T)
    measured = Measurements(
        truncated_acc={arm: acc.tolist() for arm, acc in trunc.items()},
        teacher_acc=[100 * a for a in teacher_acc],
    )
    metrics = {
        "teacher_acc_mean": 100 * np.mean(teacher_acc),
        "teacher_acc_per_seed": 100 * np.array(teacher_acc),
        "arms": {arm: _arm_metrics(rs) for arm, rs in results.items()},
        **comparisons(results),
    }
    judged = verdict(measured, config)
    twd = judged.evidence["twd_arm"]  # the stronger TWD, the one the claim is judged against
    _plot(config, ctx, trunc, twd, paired_difference(trunc["meom"], trunc[twd]))
    return Outcome.of(judged, metrics=metrics)


def _arm_metrics(rs: list[ArmResult]) -> dict[str, Any]:
    """One arm's accuracies (percent) and temporal-variance candidates, mean and sd over the seeds."""
    trunc = 100 * np.stack([r.truncated_acc for r in rs])  # (seeds, T)
    var_logits = np.array([r.var_logits for r in rs])
    return {
        "acc_full_T_mean": trunc[:, -1].mean(),
        "acc_full_T_std": _sd(trunc[:, -1]),
        "truncated_acc_mean": trunc.mean(axis=0),
        "truncated_acc_std": _sd(trunc),
        "per_step_acc_mean": (100 * np.stack([r.per_step_acc for r in rs])).mean(axis=0),
        "var_logits_mean": var_logits.mean(),
        "var_logits_std": _sd(var_logits),
        "var_acc_mean": np.array([r.var_acc for r in rs]).mean(),
        "disagreement_mean": np.array([r.disagreement for r in rs]).mean(),
        "final_train_loss_mean": float(np.mean([r.final_loss for r in rs])),
        "truncated_acc_per_seed": trunc,
    }


def comparisons(results: dict[str, list[ArmResult]]) -> dict[str, Any]:
    """Seed-paired differences in pp at every t (:func:`paired_difference`): every arm against TWD and against the
    ablation base (TWD at MEOM's KD weight, when run), the softened-teacher control, and the secondary checks
    (reported, not judged). ``results`` holds at least the arms of :data:`~iclr26.meom.config.VERDICT_ARMS`."""
    trunc = {arm: 100 * np.stack([r.truncated_acc for r in rs]) for arm, rs in results.items()}  # (seeds, T)
    vs_twd = {arm: paired_difference(trunc[arm], trunc["twd"]) for arm in results if arm != "twd"}
    # the ablation's base at MEOM's own KD weight (same weight as every other teacher arm), when it was run
    base = "twd-w0.5" if "twd-w0.5" in results else "twd"
    vs_base = {arm: paired_difference(trunc[arm], trunc[base]) for arm in results if arm != base}
    # is TMPD's gain more than plain target softening? (same KD weight, same temperature)
    controls: dict[str, Any] = {"softening_factor_per_seed": np.array([r.softening for r in results["twd-soft"]])}
    for arm in ("twd+tmpd", "meom"):
        d = paired_difference(trunc[arm], trunc["twd-soft"])
        controls[f"{arm}_minus_twd-soft"] = d
        controls[f"{arm}_beats_twd-soft_by_t"] = d["mean"] - d["ci95"] > 0  # ci95 >= 0: the mean is above 0 too
    controls["twd-soft_minus_twd"] = vs_twd["twd-soft"]
    secondary: dict[str, Any] = {"ablation_base": base}
    if "twd+tpd" in results:
        # "TPD raises early-timestep accuracy": the paired gain of TWD+TPD over TWD (same KD weight) at t = 1
        tpd_gain = vs_base["twd+tpd"]
        secondary["tpd_raises_t1"] = bool(tpd_gain["mean"][0] > 0)
        secondary["tpd_raises_t1_significant"] = bool(tpd_gain["significant"][0] and tpd_gain["mean"][0] > 0)
    # "TMPD lowers temporal variance": paired change TWD+TMPD - TWD (same KD weight) of each Var@T candidate
    for name in ("var_logits", "disagreement", "var_acc"):
        values = {arm: np.array([getattr(r, name) for r in results[arm]]) for arm in ("twd+tmpd", base)}
        dv = paired_difference(values["twd+tmpd"], values[base])
        secondary[f"tmpd_{name}_change"] = dv["mean"]
        secondary[f"tmpd_{name}_change_ci95"] = dv["ci95"]
        secondary[f"tmpd_lowers_{name}"] = bool(dv["mean"] < 0)
        secondary[f"tmpd_lowers_{name}_significant"] = bool(dv["significant"] and dv["mean"] < 0)
    return {"gain_vs_twd_pp": vs_twd, "gain_vs_ablation_base_pp": vs_base, "controls": controls, "secondary": secondary}


def _plot(config: MEOMConfig, ctx: RunContext, trunc: dict[str, np.ndarray], twd: str, gain: dict[str, Any]) -> None:
    ts = np.arange(1, config.timesteps + 1)
    fig, ax = figure()
    for arm, acc in trunc.items():
        mean = acc.mean(axis=0)
        sd = _sd(acc)
        ax.plot(ts, mean, marker="o", label=arm)
        ax.fill_between(ts, mean - sd, mean + sd, alpha=0.15)
    ax.set_xlabel("inference timesteps t (truncated)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"Truncated-inference accuracy, mean ± sd over {config.n_seeds} seeds")
    ax.legend()
    ctx.save_plot(fig, "accuracy_vs_timestep.png")

    fig, ax = figure()
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.errorbar(ts, gain["mean"], yerr=gain["ci95"], marker="o", capsize=3)
    ax.set_xlabel("inference timesteps t (truncated)")
    ax.set_ylabel(f"MEOM − {twd} accuracy (pp)")
    ax.set_title(f"Seed-paired gain, 95% confidence interval (t, {config.n_seeds - 1} dof)")
    ctx.save_plot(fig, "meom_minus_twd.png")


EXPERIMENT = Experiment(config_cls=MEOMConfig, run=run, data_parallel=True)
