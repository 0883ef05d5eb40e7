"""Camera and depth evaluation: Umeyama Sim(3) alignment, ATE, RPE, AbsRel, δ<1.25, mask IoU, pose encodings.

Paper-agnostic (imports only NumPy). The protocols follow PAGE-4D's evaluation code (kaichen-z/PAGE4D
``eval/eval/relpose/evo_utils.py``: evo's APE/RPE with ``align=True, correct_scale=True``, RMSE statistics, RPE over
consecutive frames; ``eval/eval/video_depth``: median scale alignment before AbsRel and δ<1.25). Beside them, the
errors of two trivial predictors that a learned pose must beat (:func:`constant_pose_errors`, :func:`line_fit_ate`).

Dimension letters: ``S`` frames (poses), ``N`` points, ``...`` any leading shape.

Conventions: cameras are camera-from-world ``[R | t]`` (S, 3, 4) (OpenCV axes); the camera centre is ``C = −Rᵀt``.
A quaternion is ``(x, y, z, w)`` with ``w >= 0`` (scalar last, as VGGT's ``absT_quaR`` encoding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "DepthMetrics",
    "Sim3",
    "absolute_trajectory_error",
    "constant_pose_errors",
    "depth_metrics",
    "extrinsics_to_pose_encoding",
    "line_fit_ate",
    "mask_iou",
    "matrix_to_quaternion",
    "pose_encoding_to_extrinsics",
    "quaternion_to_matrix",
    "relative_pose_error",
    "umeyama",
]


@dataclass(frozen=True)
class Sim3:
    """A similarity transform ``x ↦ s R x + t``.

    Attributes:
        scale: s > 0 (1 when fitted without scale).
        rotation: (3, 3) R.
        translation: (3,) t.
    """

    scale: float
    rotation: np.ndarray
    translation: np.ndarray

    def apply(self, points: np.ndarray) -> np.ndarray:
        """``s R x + t`` for points (N, 3) -> (N, 3)."""
        return self.scale * points @ self.rotation.T + self.translation


def umeyama(src: np.ndarray, dst: np.ndarray, *, with_scale: bool = True) -> Sim3:
    """The least-squares similarity ``dst ≈ s R src + t`` (Umeyama 1991, Eqs. 40–42).

    With centred points ``X = src − μ_s``, ``Y = dst − μ_d``, ``Σ = Yᵀ X / N = U D Vᵀ`` and ``S = diag(1, 1, det U
    det V)``: ``R = U S Vᵀ``, ``s = tr(D S) / σ²_s`` (σ²_s the mean squared norm of ``X``), ``t = μ_d − s R μ_s``.

    Args:
        src: (N, 3) points to align.
        dst: (N, 3) target points.
        with_scale: fit ``s`` (Sim(3)); else ``s = 1`` (SE(3)).

    Returns:
        :class:`Sim3`.

    Raises:
        ValueError: if the shapes differ, are not (N, 3) with N >= 2, contain NaN/inf, or ``src`` is a single
            repeated point (the scale is undefined).
    """
    src, dst = np.asarray(src, dtype=np.float64), np.asarray(dst, dtype=np.float64)
    if src.shape != dst.shape or src.ndim != 2 or src.shape[1] != 3:
        raise ValueError(f"src and dst must both be (N, 3), got {src.shape} and {dst.shape}")
    if src.shape[0] < 2:
        raise ValueError(f"need at least 2 points (frames) to align, got {src.shape[0]}")
    if not (np.all(np.isfinite(src)) and np.all(np.isfinite(dst))):
        raise ValueError("src and dst must be finite")
    mu_s, mu_d = src.mean(0), dst.mean(0)
    x, y = src - mu_s, dst - mu_d
    var_s = float((x**2).sum(1).mean())
    if var_s < 1e-20:
        raise ValueError("src points all coincide; the alignment is undefined")
    sigma = y.T @ x / src.shape[0]  # (3, 3)
    u, d, vt = np.linalg.svd(sigma)
    sign = np.ones(3)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[2] = -1.0  # a reflection: flip the least significant axis
    # Umeyama (1991) Eq. 40: R = U S Vᵀ
    rot = u @ np.diag(sign) @ vt
    # Eq. 42: s = tr(D S) / σ²_s
    scale = float((d * sign).sum() / var_s) if with_scale else 1.0
    # Eq. 41: t = μ_d − s R μ_s
    return Sim3(scale=scale, rotation=rot, translation=mu_d - scale * rot @ mu_s)


def _centers(extrinsics: np.ndarray, name: str) -> np.ndarray:
    e = np.asarray(extrinsics, dtype=np.float64)
    if e.ndim != 3 or e.shape[1:] != (3, 4):
        raise ValueError(f"{name} must be (S, 3, 4) camera-from-world matrices, got {e.shape}")
    return -np.einsum("sji,sj->si", e[:, :, :3], e[:, :, 3])


def _check_pair(pred: np.ndarray, gt: np.ndarray) -> None:
    if pred.shape[0] != gt.shape[0]:
        raise ValueError(f"pred and gt have different frame counts: {pred.shape[0]} vs {gt.shape[0]}")


def absolute_trajectory_error(pred: np.ndarray, gt: np.ndarray) -> float:
    """ATE: RMSE of camera centres after Sim(3) Umeyama alignment of the predicted centres to the true ones.

    ``ATE = sqrt(mean_i ||s R C_i^pred + t − C_i^gt||²)`` (evo APE, translation part, align + correct_scale).

    Args:
        pred: (S, 3, 4) predicted camera-from-world.
        gt: (S, 3, 4) true camera-from-world.

    Raises:
        ValueError: for mismatched frame counts or malformed matrices (see :func:`umeyama`).
    """
    cp, cg = _centers(pred, "pred"), _centers(gt, "gt")
    _check_pair(cp, cg)
    sim = umeyama(cp, cg)
    return float(np.sqrt(((sim.apply(cp) - cg) ** 2).sum(1).mean()))


def _to_4x4(e: np.ndarray) -> np.ndarray:
    out = np.zeros((e.shape[0], 4, 4))
    out[:, :3, :] = e
    out[:, 3, 3] = 1.0
    return out


def relative_pose_error(pred: np.ndarray, gt: np.ndarray) -> tuple[float, float]:
    """RPE over consecutive frames after Sim(3) alignment (evo RPE, ``delta=1`` frame, align + correct_scale).

    With world-from-camera poses ``P_i`` (the prediction's mapped by the Sim(3) fitted on the centres, its
    translation scaled by ``s``), the relative motions ``Q_i = P_i⁻¹ P_{i+1}`` and the error ``E_i = (Q_i^gt)⁻¹
    Q_i^pred``: ``RPE_trans = sqrt(mean ||trans(E_i)||²)``, ``RPE_rot = sqrt(mean angle(E_i)²)`` in degrees.

    Args:
        pred: (S, 3, 4) predicted camera-from-world, S >= 2.
        gt: (S, 3, 4) true camera-from-world.

    Returns:
        ``(rpe_trans, rpe_rot_deg)``.

    Raises:
        ValueError: for mismatched frame counts or malformed matrices.
    """
    cp, cg = _centers(pred, "pred"), _centers(gt, "gt")
    _check_pair(cp, cg)
    sim = umeyama(cp, cg)
    # world-from-camera poses; the aligned prediction is (s R_a) ∘ P: rotation R_a R_wc, centre s R_a C + t_a
    wp, wg = np.linalg.inv(_to_4x4(np.asarray(pred, float))), np.linalg.inv(_to_4x4(np.asarray(gt, float)))
    wp[:, :3, :3] = sim.rotation @ wp[:, :3, :3]
    wp[:, :3, 3] = sim.apply(cp)
    qp = np.linalg.inv(wp[:-1]) @ wp[1:]
    qg = np.linalg.inv(wg[:-1]) @ wg[1:]
    # E_i = (Q_i^gt)⁻¹ Q_i^pred: the error of each relative motion, which RPE averages
    err = np.linalg.inv(qg) @ qp
    trans = np.sqrt((np.linalg.norm(err[:, :3, 3], axis=1) ** 2).mean())
    cos = np.clip((np.trace(err[:, :3, :3], axis1=1, axis2=2) - 1) / 2, -1.0, 1.0)  # clamp before acos
    rot = np.sqrt((np.degrees(np.arccos(cos)) ** 2).mean())
    return float(trans), float(rot)


def constant_pose_errors(gt: np.ndarray) -> tuple[float, float, float]:
    """ATE, RPE translation and RPE rotation (degrees) of the constant-pose predictor: every frame at the same pose.

    Its Sim(3)-aligned ATE is the limit of :func:`absolute_trajectory_error` for predicted centres collapsing to one
    point (the fitted scale goes to 0, every centre lands on the true centroid): ``sqrt(mean_i ||C_i − C̄||²)``.
    Its relative motions are the identity, so the RPE error of each step is the true relative motion:
    ``RPE_trans = sqrt(mean ||t(Q_i)||²)``, ``RPE_rot = sqrt(mean angle(Q_i)²)``.

    Args:
        gt: (S, 3, 4) true camera-from-world, S >= 2.

    Returns:
        ``(ate, rpe_trans, rpe_rot_deg)``.
    """
    cg = _centers(gt, "gt")
    ate = float(np.sqrt(((cg - cg.mean(0)) ** 2).sum(1).mean()))
    wg = np.linalg.inv(_to_4x4(np.asarray(gt, float)))
    q = np.linalg.inv(wg[:-1]) @ wg[1:]
    trans = float(np.sqrt((np.linalg.norm(q[:, :3, 3], axis=1) ** 2).mean()))
    cos = np.clip((np.trace(q[:, :3, :3], axis1=1, axis2=2) - 1) / 2, -1.0, 1.0)  # clamp before acos
    return ate, trans, float(np.sqrt((np.degrees(np.arccos(cos)) ** 2).mean()))


def line_fit_ate(gt: np.ndarray) -> float:
    """The smallest Sim(3)-aligned ATE any straight-line, constant-speed prediction can reach: predicted centres
    ``a + i·b`` map under a similarity to ``a' + i·b'`` (any ``a', b'``), so the best is the least-squares line
    through the true centres over the frame index, and its ATE the RMS residual. 0 on a straight path at constant
    speed (the metric cannot tell such a prediction from the truth there).

    Args:
        gt: (S, 3, 4) true camera-from-world, S >= 2.
    """
    cg = _centers(gt, "gt")
    i = np.stack([np.ones(len(cg)), np.arange(len(cg), dtype=np.float64)], axis=1)  # (S, 2)
    coef, *_ = np.linalg.lstsq(i, cg, rcond=None)
    return float(np.sqrt(((cg - i @ coef) ** 2).sum(1).mean()))


@dataclass(frozen=True)
class DepthMetrics:
    """Depth accuracy on a set of pixels after median scale alignment.

    Attributes:
        abs_rel: mean ``|d̂ − d| / d``.
        delta1: share of pixels with ``max(d̂/d, d/d̂) < 1.25``.
        n_pixels: pixels evaluated (0: both metrics are NaN).
    """

    abs_rel: float
    delta1: float
    n_pixels: int


def depth_metrics(pred: np.ndarray, gt: np.ndarray, *, region: np.ndarray | None = None,
                  align: np.ndarray | None = None) -> DepthMetrics:  # fmt: skip
    """AbsRel and δ<1.25 of ``pred`` against ``gt`` on ``region``, after median scale alignment.

    The scale ``s = median(gt) / median(pred)`` is computed over ``align`` (default: all valid pixels) — one scale
    per sequence, as video-depth evaluation does — and the metrics over ``region`` (default: all valid pixels), so
    static and dynamic regions are scored under the same alignment.

    Args:
        pred: (...) predicted depth.
        gt: (...) true depth; pixels with ``gt <= 0`` are invalid.
        region: (...) bool, the pixels to score.
        align: (...) bool, the pixels that set the scale.

    Returns:
        :class:`DepthMetrics` (NaN metrics when ``region`` holds no valid pixel).

    Raises:
        ValueError: for mismatched shapes, NaN/inf in ``pred``, or non-positive predicted depth.
    """
    pred, gt = np.asarray(pred, dtype=np.float64), np.asarray(gt, dtype=np.float64)
    if pred.shape != gt.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred.shape} and {gt.shape}")
    if not np.all(np.isfinite(pred)):
        raise ValueError("pred contains NaN or inf values")
    if np.any(pred <= 0):
        raise ValueError("pred depth must be > 0")
    valid = gt > 0
    for name, m in (("region", region), ("align", align)):
        if m is not None and np.shape(m) != gt.shape:
            raise ValueError(f"{name} must have the shape of gt {gt.shape}, got {np.shape(m)}")
    sel_align = valid if align is None else valid & np.asarray(align, bool)
    sel = valid if region is None else valid & np.asarray(region, bool)
    if not sel.any() or not sel_align.any():
        return DepthMetrics(float("nan"), float("nan"), 0)
    scaled = pred * (np.median(gt[sel_align]) / np.median(pred[sel_align]))
    p, g = scaled[sel], gt[sel]
    abs_rel = float((np.abs(p - g) / g).mean())
    delta1 = float((np.maximum(p / g, g / p) < 1.25).mean())
    return DepthMetrics(abs_rel, delta1, int(sel.sum()))


def mask_iou(pred: np.ndarray, gt: np.ndarray) -> float:
    """Intersection over union of two boolean masks of the same shape; 1.0 when both are empty."""
    p, g = np.asarray(pred, bool), np.asarray(gt, bool)
    if p.shape != g.shape:
        raise ValueError(f"pred and gt masks must have the same shape, got {p.shape} and {g.shape}")
    union = (p | g).sum()
    return 1.0 if union == 0 else float((p & g).sum() / union)


def matrix_to_quaternion(rot: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) -> unit quaternions (..., 4) ``(x, y, z, w)`` with ``w >= 0``."""
    r = np.asarray(rot, dtype=np.float64)
    m = r.reshape(-1, 3, 3)
    out = np.empty((m.shape[0], 4))
    for i, a in enumerate(m):
        # Shepperd's method: pivot on the largest of (w, x, y, z)² for stability
        tr = np.trace(a)
        cands = np.array([tr, a[0, 0], a[1, 1], a[2, 2]])
        k = int(np.argmax(cands))
        if k == 0:
            w = np.sqrt(max(1.0 + tr, 0.0)) / 2
            q = np.array([a[2, 1] - a[1, 2], a[0, 2] - a[2, 0], a[1, 0] - a[0, 1], 4 * w * w]) / (4 * w)
        else:
            i0, j, m2 = k - 1, k % 3, (k + 1) % 3  # the pivot axis and the two others, cyclic
            v = np.sqrt(max(1.0 + 2 * a[i0, i0] - tr, 0.0)) / 2
            q = np.zeros(4)
            q[i0] = v
            q[j] = (a[j, i0] + a[i0, j]) / (4 * v)
            q[m2] = (a[m2, i0] + a[i0, m2]) / (4 * v)
            q[3] = (a[m2, j] - a[j, m2]) / (4 * v)
        q = q / np.linalg.norm(q)
        out[i] = -q if q[3] < 0 else q
    return out.reshape(*r.shape[:-2], 4)


def quaternion_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) ``(x, y, z, w)`` (normalised here; need not be unit) -> rotations (..., 3, 3).

    Raises:
        ValueError: for a zero quaternion.
    """
    q = np.asarray(quat, dtype=np.float64)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-12):
        raise ValueError("zero quaternion")
    x, y, z, w = np.moveaxis(q / n, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)  # fmt: skip


def extrinsics_to_pose_encoding(extrinsics: np.ndarray) -> np.ndarray:
    """VGGT's ``absT_quaR`` encoding without the field of view: ``[t (3), q (4)]`` per camera.

    (..., 3, 4) -> (..., 7).
    """
    e = np.asarray(extrinsics, dtype=np.float64)
    return np.concatenate([e[..., :, 3], matrix_to_quaternion(e[..., :, :3])], axis=-1)


def pose_encoding_to_extrinsics(enc: np.ndarray) -> np.ndarray:
    """Inverse of :func:`extrinsics_to_pose_encoding` (the quaternion is normalised): (..., 7) -> (..., 3, 4)."""
    e = np.asarray(enc, dtype=np.float64)
    return np.concatenate([quaternion_to_matrix(e[..., 3:7]), e[..., :3, None]], axis=-1)
