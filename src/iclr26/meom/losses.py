"""MEOM distillation losses: TWD (the baseline), TMPD ("many eyes") and TPD ("one mind"), as pure functions.

Many Eyes, One Mind: Temporal Multi-Perspective and Progressive Distillation for Spiking Neural Networks.
Kai Sun, Peibo Duan, Yongsheng Huang, Nanxu Gong, Levin Kuhlmann. ICLR 2026, OpenReview NbdEDRRsCI.

Given per-timestep student logits z^S_t (t = 1..T) of an SNN and a frozen ANN teacher split into features f^A and a
classifier head W_c (z^A = W_c(f^A)), one training step's loss is

1. L_CE   = (1/T) sum_t CE(z^S_t, y)                                                 (per-timestep hard loss)
2. TMPD, "many eyes": a random static mask m_t per timestep gives the teacher's view
   f~_t = f^A * m_t, z~_t = W_c(f~_t), z^_t = (1 - lambda) z^A + lambda z~_t, and
   L_TMPD = (1/T) sum_t tau^2 KL(softmax(z^_t / tau) || softmax(z^S_t / tau))
3. TPD, "one mind": cumulative averages zbar_<=t = (1/t) sum_{k<=t} z^S_k, p_<=t = softmax(zbar_<=t / tau),
   L_TPD = 1/(T-1) sum_{t=1}^{T-1} tau^2 CE(p_<=t+1 -> p_<=t)   (the later, more complete average is the target)
4. L = w_ce L_CE + w_tmpd L_TMPD + w_tpd L_TPD, with (w_ce, w_tmpd, w_tpd) = (1, 0.5, 0.3).

The TWD baseline (temporal-wise distillation, Yu et al., ICML 2025) is L_CE + w_kd (1/T) sum_t tau^2
KL(softmax(z^A / tau) || softmax(z^S_t / tau)): TMPD with lambda = 0 (or all-ones masks) is exactly this KD term.

Sources: L_CE and the KD term (temperature 3, tau^2 scaling, KL summed over classes and averaged over the batch)
follow the TWD repository (Intelli-Chip-Lab/snn_temporal_decoupling_distillation, ``model/layer.py``: ``cal_loss``,
``kd_loss``). The MEOM code could not be read: steps 2-4 follow a third-party summary of the paper and its
OpenReview reviews (unverified against the PDF).

Shapes: T timesteps, B batch, C classes, ``F`` the teacher feature shape without the batch axis (e.g. D, H, W).

Deviations and choices (the paper leaves them open; each is an argument):
- tau^2 on TMPD and TPD, as on the TWD KD term, so that TMPD reduces exactly to TWD's KD term (the summary
  writes TMPD and TPD without tau^2).
- the TPD target p_<=t+1 is detached by default (``detach_target``); the summary does not say.
- masks are Bernoulli(keep_prob) over the teacher's feature elements, one per timestep, shared by the batch, drawn
  once from ``mask_seed`` and static across training ("random static masks") unless ``mask_mode="resample"``;
  not rescaled by 1/keep_prob by default (f~_t = f^A * m_t as written), ``rescale_masks=True`` divides the kept
  elements by keep_prob (dropout style, E[m_t / keep] = 1); callers may pass their own masks.
- the teacher is frozen: its logits and masked-view logits are computed without gradient.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor


def _check_finite(name: str, x: Tensor) -> None:
    """Raise a ValueError naming ``name`` if the tensor ``x`` holds NaN or inf."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.is_floating_point() and not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"{name}: holds {bad} non-finite value(s) (NaN or inf); the loss is undefined there")


def _check_logits_per_t(name: str, logits: Tensor) -> tuple[int, int, int]:
    _check_finite(name, logits)
    if logits.dim() != 3:
        raise ValueError(f"{name}: expected per-timestep logits of shape (T, B, C), got {tuple(logits.shape)}")
    return tuple(logits.shape)  # type: ignore[return-value]


def _check_targets(targets: Tensor, batch: int, num_classes: int) -> None:
    """Class indices: integers of shape (B,) in [0, C)."""
    if not isinstance(targets, Tensor):
        raise TypeError(f"targets: expected a torch.Tensor of class indices, got {type(targets).__name__}")
    if targets.shape != (batch,):
        raise ValueError(f"targets: expected class indices of shape ({batch},), got {tuple(targets.shape)}")
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        raise ValueError(f"targets: expected integer class indices, got dtype {targets.dtype}")
    if batch and (int(targets.min()) < 0 or int(targets.max()) >= num_classes):
        raise ValueError(
            f"targets: class indices must lie in [0, {num_classes}) (C = {num_classes} logits), got range "
            f"[{int(targets.min())}, {int(targets.max())}]"
        )


def _check_tau(tau: float) -> None:
    if not tau > 0:
        raise ValueError(f"tau: the distillation temperature must be positive, got {tau}")


def per_timestep_ce(student_logits_per_t: Tensor, targets: Tensor) -> Tensor:
    """L_CE = (1/T) sum_t CE(z^S_t, y), the TWD code's ``cal_loss``.

    Args:
        student_logits_per_t: z^S, shape (T, B, C).
        targets: y, class indices of shape (B,).

    Returns:
        A scalar tensor.

    Raises:
        ValueError: for logits that are not (T, B, C) or hold NaN/inf, or targets that are not (B,) integer class
            indices in [0, C).
    """
    t, b, c = _check_logits_per_t("student_logits_per_t", student_logits_per_t)
    _check_targets(targets, b, c)
    # (1/T) sum_t mean_b CE(z^S_t[b], y[b]) = mean over all (t, b) pairs, as every timestep has B samples
    return F.cross_entropy(student_logits_per_t.reshape(t * b, c), targets.repeat(t))


def kd_kl(student_logits: Tensor, teacher_logits: Tensor, *, tau: float = 3.0) -> Tensor:
    """tau^2 KL(softmax(z_T / tau) || softmax(z_S / tau)), summed over classes, averaged over all other axes.

    The TWD code's ``kd_loss`` applied elementwise over leading axes: for (T, B, C) inputs this is
    (1/T) sum_t kd_loss(z^S_t, z^T_t).

    Args:
        student_logits: (..., C).
        teacher_logits: broadcastable to ``student_logits``; treated as a fixed target (no gradient is blocked
            here; detach it if it must not receive one).
        tau: temperature > 0.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: if the class counts (last axes) differ or ``teacher_logits`` does not broadcast to
            ``student_logits``, either holds NaN/inf, or ``tau`` is not positive.
    """
    _check_tau(tau)
    _check_finite("student_logits", student_logits)
    _check_finite("teacher_logits", teacher_logits)
    if teacher_logits.shape[-1:] != student_logits.shape[-1:]:
        raise ValueError(
            f"teacher_logits: class count {tuple(teacher_logits.shape)[-1:]} differs from the student's "
            f"{tuple(student_logits.shape)[-1:]} (last axis); teacher and student must share the classes"
        )
    try:
        broadcast = torch.broadcast_shapes(teacher_logits.shape, student_logits.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != student_logits.shape:
        raise ValueError(
            f"teacher_logits: shape {tuple(teacher_logits.shape)} does not broadcast to the student's "
            f"{tuple(student_logits.shape)}"
        )
    log_p_s = F.log_softmax(student_logits / tau, dim=-1)
    log_p_t = F.log_softmax(teacher_logits / tau, dim=-1)
    # KL(p_T || p_S) = sum_c p_T (log p_T - log p_S), per sample
    kl = (log_p_t.exp() * (log_p_t - log_p_s)).sum(dim=-1)
    # tau^2 keeps the soft-target gradient scale independent of tau, as in the TWD code's kd_loss
    return tau**2 * kl.mean()


def temporal_kd_loss(student_logits_per_t: Tensor, teacher_logits: Tensor, *, tau: float = 3.0) -> Tensor:
    """TWD's KD term: (1/T) sum_t tau^2 KL(softmax(z^A / tau) || softmax(z^S_t / tau)).

    Args:
        student_logits_per_t: z^S, shape (T, B, C).
        teacher_logits: z^A of shape (B, C) (the same target at every timestep) or (T, B, C) (one per timestep).
        tau: temperature > 0.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: for mismatched batch sizes, class counts or timestep counts.
    """
    t, b, c = _check_logits_per_t("student_logits_per_t", student_logits_per_t)
    if teacher_logits.shape not in ((b, c), (t, b, c)):
        raise ValueError(
            f"teacher_logits: expected shape ({b}, {c}) or ({t}, {b}, {c}) to match the student's (T, B, C) = "
            f"{(t, b, c)}, got {tuple(teacher_logits.shape)} (class counts must agree)"
        )
    return kd_kl(student_logits_per_t, teacher_logits, tau=tau)


def sample_temporal_masks(
    timesteps: int,
    feature_shape: tuple[int, ...],
    *,
    keep_prob: float,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    rescale: bool = False,
) -> Tensor:
    """m_t, t = 1..T: one Bernoulli(keep_prob) mask over the teacher's feature elements per timestep.

    Args:
        timesteps: T >= 1.
        feature_shape: F, the teacher feature shape without the batch axis, e.g. (D, H, W).
        keep_prob: probability that a feature element is kept, in (0, 1].
        generator: the random source (a seeded ``torch.Generator`` for reproducible masks).
        dtype: mask dtype.
        device: mask device (the generator must live there too).
        rescale: divide the kept elements by ``keep_prob`` (dropout's 1/keep rescaling, E[m] = 1); the drawn 0/1
            pattern is the same either way.

    Returns:
        0/1 masks (0 / (1/keep_prob) with ``rescale``) of shape (T, *F).

    Raises:
        ValueError: if ``timesteps`` < 1 or ``keep_prob`` is outside (0, 1].
    """
    if timesteps < 1:
        raise ValueError(f"timesteps: need at least 1 timestep, got {timesteps}")
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"keep_prob: must lie in (0, 1], got {keep_prob}")
    u = torch.rand((timesteps, *feature_shape), generator=generator, dtype=dtype, device=device)
    # m_t ~ Bernoulli(keep_prob) per feature element: each timestep's "eye" sees a different subset of f^A
    masks = (u < keep_prob).to(dtype)
    return masks / keep_prob if rescale else masks


def static_temporal_masks(
    timesteps: int,
    feature_shape: tuple[int, ...],
    *,
    keep_prob: float,
    mask_seed: int = 0,
    rescale: bool = False,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    """The random static masks m_t of TMPD: drawn once from ``mask_seed`` and the same on every call.

    They are drawn on the CPU from ``torch.Generator().manual_seed(mask_seed)`` (so every device gets the same
    masks) and then cast and moved; equal to ``sample_temporal_masks(..., generator=that generator)``.

    Args:
        timesteps: T >= 1.
        feature_shape: F, the teacher feature shape without the batch axis.
        keep_prob: keep probability in (0, 1].
        mask_seed: the seed that fixes the masks (one per training run: "drawn once per seed").
        rescale: dropout's 1/keep rescaling of the kept elements.
        dtype: mask dtype.
        device: mask device.

    Returns:
        masks of shape (T, *F).
    """
    key = (timesteps, tuple(feature_shape), float(keep_prob), int(mask_seed), bool(rescale))
    return _static_masks_cpu(*key).to(dtype=dtype, device=device, copy=True)  # a copy: the cache stays intact


@functools.lru_cache(maxsize=16)
def _static_masks_cpu(
    timesteps: int, feature_shape: tuple[int, ...], keep_prob: float, mask_seed: int, rescale: bool
) -> Tensor:
    gen = torch.Generator().manual_seed(mask_seed)
    masks = sample_temporal_masks(timesteps, feature_shape, keep_prob=keep_prob, generator=gen, rescale=rescale)
    # "random static masks": one seeded draw per run, reused at every step so each timestep keeps its own view
    return masks.requires_grad_(False)


def multi_perspective_teacher_logits(
    teacher_features: Tensor,
    teacher_head: Callable[[Tensor], Tensor],
    masks: Tensor,
    *,
    lam: float,
    teacher_logits: Tensor | None = None,
) -> Tensor:
    """The "many eyes" targets z^_t = (1 - lambda) z^A + lambda W_c(f^A * m_t), one per timestep.

    Args:
        teacher_features: f^A, shape (B, *F).
        teacher_head: W_c, maps (N, *F) features to (N, C) logits (the teacher's own classifier head).
        masks: m_t of shape (T, *F) (one mask per timestep, shared by the batch) or (T, B, *F) (per sample).
        lam: lambda in [0, 1], the weight of the masked view.
        teacher_logits: z^A = W_c(f^A), shape (B, C); computed from ``teacher_features`` when omitted.

    Returns:
        z^, shape (T, B, C).

    Raises:
        ValueError: for a mask shape that is neither (T, *F) nor (T, B, *F), ``lam`` outside [0, 1],
            ``teacher_logits`` whose batch size differs from the features', or NaN/inf in features or masks.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam: the mixing weight lambda must lie in [0, 1], got {lam}")
    _check_finite("teacher_features", teacher_features)
    _check_finite("masks", masks)
    b, feat = teacher_features.shape[0], tuple(teacher_features.shape[1:])
    if masks.dim() >= 1 and tuple(masks.shape[1:]) == feat:
        per_t = masks.unsqueeze(1)  # (T, 1, *F)
    elif masks.dim() >= 2 and tuple(masks.shape[1:]) == (b, *feat):
        per_t = masks  # (T, B, *F)
    else:
        raise ValueError(
            f"masks: expected shape (T, *F) = (T, {', '.join(map(str, feat))}) or (T, B, *F) with B={b} for "
            f"teacher_features of shape {tuple(teacher_features.shape)}, got {tuple(masks.shape)}"
        )
    t = masks.shape[0]
    if teacher_logits is None:
        teacher_logits = teacher_head(teacher_features)  # (B, C)
    if teacher_logits.dim() != 2 or teacher_logits.shape[0] != b:
        raise ValueError(f"teacher_logits: expected shape ({b}, C), got {tuple(teacher_logits.shape)}")
    # f~_t = f^A * m_t
    masked = (teacher_features.unsqueeze(0) * per_t).reshape(t * b, *feat)  # (T*B, *F)
    # z~_t = W_c f~_t
    z_masked = teacher_head(masked).reshape(t, b, -1)  # (T, B, C)
    # z^_t = (1 - lambda) z^A + lambda z~_t
    return (1.0 - lam) * teacher_logits.unsqueeze(0) + lam * z_masked


def tmpd_loss(student_logits_per_t: Tensor, perspective_logits: Tensor, *, tau: float = 3.0) -> Tensor:
    """L_TMPD = (1/T) sum_t tau^2 KL(softmax(z^_t / tau) || softmax(z^S_t / tau)).

    Args:
        student_logits_per_t: z^S, shape (T, B, C).
        perspective_logits: z^ from :func:`multi_perspective_teacher_logits`, shape (T, B, C).
        tau: temperature > 0.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: if the two shapes differ or either holds NaN/inf.
    """
    _check_logits_per_t("student_logits_per_t", student_logits_per_t)
    _check_finite("perspective_logits", perspective_logits)
    if perspective_logits.shape != student_logits_per_t.shape:
        raise ValueError(
            f"perspective_logits: expected the student's shape {tuple(student_logits_per_t.shape)} "
            f"(same T and class count), got {tuple(perspective_logits.shape)}"
        )
    # TMPD: each z^S_t is pulled to its own view z^_t (element-wise over T), where TWD uses one z^A for every t
    return kd_kl(student_logits_per_t, perspective_logits, tau=tau)


def mean_entropy(logits: Tensor, *, tau: float = 1.0) -> float:
    """Mean Shannon entropy (nats) of softmax(logits / tau) over all leading axes; logits (..., C)."""
    logp = F.log_softmax(logits.double() / tau, dim=-1)
    return float(-(logp.exp() * logp).sum(-1).mean())


def matched_softening(teacher_logits: Tensor, perspective_logits: Tensor, *, tau: float = 3.0) -> float:
    """The factor s >= 0 such that the teacher's softened targets softmax(z^A / (s tau)) have the same mean entropy as
    TMPD's targets softmax(z^_t / tau), averaged over timesteps and samples.

    This is the control "TWD with a softened teacher, temperature matched to the softening the masks cause".
    Masking drops feature elements (and, without 1/keep rescaling, shrinks the masked logits), so the
    multi-perspective targets are flatter than the teacher's; TWD with z^A / s has equally flat targets but no
    per-timestep diversity. Found by bisection on log s (the mean entropy grows monotonically with s).

    Args:
        teacher_logits: z^A, shape (B, C).
        perspective_logits: z^, shape (T, B, C) (e.g. :attr:`MEOMLoss.perspective_logits`).
        tau: the distillation temperature.

    Returns:
        s, to 1e-6 relative (s > 1: the perspectives are softer than the teacher; s = 1: as soft).

    Raises:
        ValueError: for mismatched shapes, NaN/inf, or a target entropy outside what a rescaled z^A can reach
            (between the entropy at s -> 0 and log C).
    """
    _check_tau(tau)
    _check_finite("teacher_logits", teacher_logits)
    _check_finite("perspective_logits", perspective_logits)
    if (
        teacher_logits.dim() != 2
        or perspective_logits.dim() != 3
        or perspective_logits.shape[1:] != teacher_logits.shape
    ):
        raise ValueError(
            f"perspective_logits: expected shape (T, *{tuple(teacher_logits.shape)}) for teacher_logits of shape "
            f"(B, C), got {tuple(perspective_logits.shape)} and {tuple(teacher_logits.shape)}"
        )
    target = mean_entropy(perspective_logits, tau=tau)
    lo, hi = math.log(1e-4), math.log(1e4)
    h_lo, h_hi = (
        mean_entropy(teacher_logits, tau=tau * math.exp(lo)),
        mean_entropy(teacher_logits, tau=tau * math.exp(hi)),
    )
    if not h_lo - 1e-9 <= target <= h_hi + 1e-9:
        raise ValueError(
            f"perspective_logits: mean entropy {target:.4f} is outside [{h_lo:.4f}, {h_hi:.4f}], the range of the "
            "rescaled teacher logits"
        )
    for _ in range(80):  # 80 halvings of an interval of width log(1e8) reach far below 1e-6 relative
        mid = 0.5 * (lo + hi)
        if mean_entropy(teacher_logits, tau=tau * math.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def cumulative_mean_logits(logits_per_t: Tensor) -> Tensor:
    """zbar_<=t = (1/t) sum_{k<=t} z_k: the truncated-inference output after t timesteps, shape (T, B, C)."""
    t = _check_logits_per_t("logits_per_t", logits_per_t)[0]
    counts = torch.arange(1, t + 1, dtype=logits_per_t.dtype, device=logits_per_t.device)
    # zbar_<=t = (1/t) sum_{k<=t} z_k: the prefix sums divided by t, all t at once
    return logits_per_t.cumsum(dim=0) / counts.view(t, 1, 1)


def tpd_loss(
    student_logits_per_t: Tensor,
    *,
    tau: float = 3.0,
    divergence: Literal["ce", "kl"] = "ce",
    detach_target: bool = True,
) -> Tensor:
    """L_TPD = 1/(T-1) sum_{t=1}^{T-1} tau^2 D(p_<=t+1 -> p_<=t), p_<=t = softmax(zbar_<=t / tau).

    ``divergence="ce"`` (the paper's choice, reported more stable than KL) uses
    D = -sum_c p_<=t+1 log p_<=t; ``"kl"`` subtracts the target's entropy, so it is zero when all timesteps agree.
    With a detached target both have the same gradient.

    Args:
        student_logits_per_t: z^S, shape (T, B, C) with T >= 2.
        tau: temperature > 0.
        divergence: ``"ce"`` or ``"kl"``.
        detach_target: stop the gradient through the target p_<=t+1.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: if T < 2 (no consecutive pair of truncations) or ``divergence`` is unknown.
    """
    t = _check_logits_per_t("student_logits_per_t", student_logits_per_t)[0]
    if t < 2:
        raise ValueError(
            f"student_logits_per_t: TPD compares consecutive truncations and needs T >= 2 timesteps, got T={t}; "
            "set the TPD weight to 0 for single-timestep students"
        )
    if divergence not in ("ce", "kl"):
        raise ValueError(f"divergence: expected 'ce' or 'kl', got {divergence!r}")
    _check_tau(tau)
    zbar = cumulative_mean_logits(student_logits_per_t)  # (T, B, C)
    log_pred = F.log_softmax(zbar[:-1] / tau, dim=-1)  # log p_<=t, t = 1..T-1
    log_target = F.log_softmax(zbar[1:] / tau, dim=-1)  # log p_<=t+1
    if detach_target:
        log_target = log_target.detach()
    # CE(p_<=t+1 -> p_<=t) = -sum_c p_<=t+1 log p_<=t
    per_pair = -(log_target.exp() * log_pred).sum(dim=-1)  # (T-1, B)
    if divergence == "kl":
        # KL = CE - H(p_<=t+1)
        per_pair = per_pair + (log_target.exp() * log_target).sum(dim=-1)
    return tau**2 * per_pair.mean()


@dataclass(frozen=True)
class TWDLoss:
    """The terms of :func:`twd_loss`.

    Attributes:
        total: L_CE + kd_weight * L_KD (scalar, differentiable).
        ce: L_CE.
        kd: L_KD, the per-timestep KD to the constant teacher output.
    """

    total: Tensor
    ce: Tensor
    kd: Tensor


def twd_loss(
    student_logits_per_t: Tensor,
    teacher_logits: Tensor,
    targets: Tensor,
    *,
    tau: float = 3.0,
    kd_weight: float = 0.5,
) -> TWDLoss:
    """Temporal-wise distillation: per-timestep CE plus tau^2 KL to the same teacher output at every timestep.

    Args:
        student_logits_per_t: z^S, shape (T, B, C).
        teacher_logits: z^A, shape (B, C); detached here (the teacher is frozen).
        targets: y, shape (B,).
        tau: temperature (TWD code: 3).
        kd_weight: weight of the KD term (TWD code's ``alpha``: 0.2 in its README commands; 0.5 here to match
            MEOM's TMPD weight, so that the TWD and +TMPD arms differ only in the target).

    Returns:
        :class:`TWDLoss`.

    Raises:
        ValueError: for mismatched shapes or class counts, or a negative ``kd_weight``.
    """
    if kd_weight < 0:
        raise ValueError(f"kd_weight: the KD weight must be non-negative, got {kd_weight}")
    ce = per_timestep_ce(student_logits_per_t, targets)
    kd = temporal_kd_loss(student_logits_per_t, teacher_logits.detach(), tau=tau)
    # TWD: L_CE + w_kd (1/T) sum_t tau^2 KL(p^A || p^S_t), one teacher target shared by all timesteps
    return TWDLoss(total=ce + kd_weight * kd, ce=ce, kd=kd)


@dataclass(frozen=True)
class MEOMLoss:
    """The terms of :func:`meom_loss` (each term is computed even when its weight is 0, for logging).

    Attributes:
        total: w_ce L_CE + w_tmpd L_TMPD + w_tpd L_TPD (scalar, differentiable).
        ce: L_CE.
        tmpd: L_TMPD (equals TWD's KD term when lambda = 0).
        tpd: L_TPD (``None`` when T = 1 and w_tpd = 0).
        perspective_logits: the per-timestep teacher targets z^, shape (T, B, C), detached.
    """

    total: Tensor
    ce: Tensor
    tmpd: Tensor
    tpd: Tensor | None
    perspective_logits: Tensor


def meom_loss(
    student_logits_per_t: Tensor,
    teacher_features: Tensor,
    teacher_head: Callable[[Tensor], Tensor],
    targets: Tensor,
    *,
    masks: Tensor | None = None,
    keep_prob: float = 0.7,
    mask_mode: Literal["static", "resample"] = "static",
    mask_seed: int = 0,
    rescale_masks: bool = False,
    generator: torch.Generator | None = None,
    lam: float = 0.5,
    tau: float = 3.0,
    w_ce: float = 1.0,
    w_tmpd: float = 0.5,
    w_tpd: float = 0.3,
    tpd_divergence: Literal["ce", "kl"] = "ce",
    detach_tpd_target: bool = True,
) -> MEOMLoss:
    """The MEOM objective L = w_ce L_CE + w_tmpd L_TMPD + w_tpd L_TPD for any SNN student and ANN teacher.

    Example::

        feats = teacher.features(x)                      # (B, D, H, W), teacher in eval mode
        out = meom_loss(snn(x), feats, teacher.head, y, mask_seed=seed)  # snn(x): (T, B, C)
        out.total.backward()

    By default the T masks are static: drawn once from ``mask_seed`` and the same at every call, as in the paper
    ("random static masks") and in ``iclr26 run meom``. ``mask_mode="resample"`` draws fresh masks from
    ``generator`` at every call instead.

    Args:
        student_logits_per_t: z^S, shape (T, B, C).
        teacher_features: f^A, the input of the teacher's classifier head, shape (B, *F).
        teacher_head: W_c, maps (N, *F) to (N, C); called without gradient (the teacher is frozen).
        targets: y, class indices of shape (B,).
        masks: m_t, shape (T, *F) or (T, B, *F), used as given; when omitted they are drawn as
            Bernoulli(``keep_prob``) according to ``mask_mode``.
        keep_prob: keep probability of drawn masks (not in the paper; 0.7 chosen here).
        mask_mode: ``"static"`` (default): :func:`static_temporal_masks` of ``mask_seed``, the same masks at every
            call; ``"resample"``: fresh masks from ``generator`` at every call.
        mask_seed: the seed of the static masks (use one per training run).
        rescale_masks: divide the kept elements of drawn masks by ``keep_prob`` (dropout style; off by default,
            as the paper writes f^A * m_t).
        generator: random source of resampled masks (``mask_mode="resample"`` only).
        lam: lambda, weight of the masked view in z^_t (not in the paper; 0.5 chosen here). 0 gives TWD's KD.
        tau: temperature (3, as the TWD code).
        w_ce: weight of L_CE (1 in the paper).
        w_tmpd: weight of L_TMPD (0.5 in the paper).
        w_tpd: weight of L_TPD (0.3 in the paper).
        tpd_divergence: ``"ce"`` (paper) or ``"kl"``.
        detach_tpd_target: stop the gradient through the later cumulative average (our default).

    Returns:
        :class:`MEOMLoss`.

    Raises:
        ValueError: for mismatched shapes or class counts, NaN/inf in the student logits, teacher features, masks
            or the teacher head's logits, targets outside [0, C), masks of the wrong shape, T < 2 with
            ``w_tpd`` > 0, or an out-of-range hyperparameter; each message names the argument.
        TypeError: for a tensor argument that is not a tensor.
    """
    t, b, c = _check_logits_per_t("student_logits_per_t", student_logits_per_t)
    _check_finite("teacher_features", teacher_features)
    if teacher_features.dim() < 2 or teacher_features.shape[0] != b:
        raise ValueError(
            f"teacher_features: expected shape (B, ...) with B={b} (the student's batch), "
            f"got {tuple(teacher_features.shape)}"
        )
    _check_targets(targets, b, c)
    for name, w in (("w_ce", w_ce), ("w_tmpd", w_tmpd), ("w_tpd", w_tpd)):
        if w < 0:
            raise ValueError(f"{name}: loss weights must be non-negative, got {w}")
    if t < 2 and w_tpd > 0:
        raise ValueError(
            f"student_logits_per_t: TPD needs T >= 2 timesteps, got T={t}; pass w_tpd=0 for a 1-step student"
        )
    if mask_mode not in ("static", "resample"):
        raise ValueError(f"mask_mode: must be 'static' or 'resample', got {mask_mode!r}")
    if generator is not None and (mask_mode != "resample" or masks is not None):
        raise ValueError(
            "generator: only used to redraw masks at every call (mask_mode='resample' without masks); static masks "
            "come from mask_seed"
        )
    if masks is None and mask_mode == "static":
        masks = static_temporal_masks(
            t, tuple(teacher_features.shape[1:]), keep_prob=keep_prob, mask_seed=mask_seed, rescale=rescale_masks,
            dtype=teacher_features.dtype, device=teacher_features.device,
        )  # fmt: skip
    elif masks is None:
        masks = sample_temporal_masks(
            t, tuple(teacher_features.shape[1:]), keep_prob=keep_prob, generator=generator,
            dtype=teacher_features.dtype, device=teacher_features.device, rescale=rescale_masks,
        )  # fmt: skip
    else:
        _check_finite("masks", masks)
        if masks.dim() < 2 or masks.shape[0] != t:
            raise ValueError(f"masks: expected one mask per timestep (T={t} along axis 0), got {tuple(masks.shape)}")
    with torch.no_grad():
        teacher_logits = teacher_head(teacher_features.detach())  # (B, C)
        if teacher_logits.shape != (b, c):
            raise ValueError(
                f"teacher_head: produced logits of shape {tuple(teacher_logits.shape)}, expected ({b}, {c}) "
                f"to match the student's class count C={c}"
            )
        if not torch.isfinite(teacher_logits).all():
            raise ValueError("teacher_head: produced NaN or inf logits from finite features; check the teacher")
        perspective = multi_perspective_teacher_logits(
            teacher_features.detach(), teacher_head, masks, lam=lam, teacher_logits=teacher_logits
        )  # (T, B, C)
    ce = per_timestep_ce(student_logits_per_t, targets)
    tmpd = tmpd_loss(student_logits_per_t, perspective, tau=tau)
    # L = 1 L_CE + 0.5 L_TMPD + 0.3 L_TPD (the paper's weights are the defaults)
    total = w_ce * ce + w_tmpd * tmpd
    tpd = None
    if t >= 2:
        tpd = tpd_loss(student_logits_per_t, tau=tau, divergence=tpd_divergence, detach_target=detach_tpd_target)
        total = total + w_tpd * tpd
    return MEOMLoss(total=total, ce=ce, tmpd=tmpd, tpd=tpd, perspective_logits=perspective)
