"""Umeyama, ATE/RPE, depth metrics, mask IoU and the pose encoding against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.common.cameras import camera_centers, rotation_from_axis_angle
from iclr26.page4d.geometry import (
    absolute_trajectory_error,
    constant_pose_errors,
    depth_metrics,
    extrinsics_to_pose_encoding,
    line_fit_ate,
    mask_iou,
    matrix_to_quaternion,
    pose_encoding_to_extrinsics,
    quaternion_to_matrix,
    relative_pose_error,
    umeyama,
)


def _trajectory(n=6, seed=0):
    rng = np.random.default_rng(seed)
    ext = []
    for _ in range(n):
        r = rotation_from_axis_angle(rng.normal(size=3) * 0.3)
        c = rng.normal(size=3)
        ext.append(np.concatenate([r, (-r @ c)[:, None]], axis=1))
    return np.stack(ext)


def _similar(ext, s, r_a, t_a):
    """The same cameras in a world mapped by x -> s R_a x + t_a: centres move, orientations turn by R_a."""
    out = []
    for e in ext:
        r, c = e[:, :3], camera_centers(e[None])[0]
        r2, c2 = r @ r_a.T, s * r_a @ c + t_a
        out.append(np.concatenate([r2, (-r2 @ c2)[:, None]], axis=1))
    return np.stack(out)


def test_umeyama_recovers_a_known_similarity():
    rng = np.random.default_rng(1)
    src = rng.normal(size=(10, 3))
    r = rotation_from_axis_angle(np.array([0.3, -0.5, 0.8]))
    dst = 2.5 * src @ r.T + np.array([1.0, -2.0, 0.5])
    sim = umeyama(src, dst)
    assert sim.scale == pytest.approx(2.5, rel=1e-10)
    assert np.allclose(sim.rotation, r, atol=1e-10)
    assert np.allclose(sim.translation, [1.0, -2.0, 0.5], atol=1e-10)
    assert np.linalg.det(sim.rotation) == pytest.approx(1.0)
    assert umeyama(src, dst, with_scale=False).scale == 1.0


def test_umeyama_never_returns_a_reflection():
    src = np.random.default_rng(2).normal(size=(8, 3))
    dst = src * np.array([1.0, 1.0, -1.0])  # a mirror image: the best proper rotation, not the mirror
    assert np.linalg.det(umeyama(src, dst).rotation) == pytest.approx(1.0)


def test_umeyama_rejects_bad_input():
    with pytest.raises(ValueError, match="N, 3"):
        umeyama(np.zeros((4, 3)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="at least 2"):
        umeyama(np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="coincide"):
        umeyama(np.ones((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="finite"):
        umeyama(np.full((4, 3), np.nan), np.zeros((4, 3)))


def test_ate_and_rpe_are_zero_for_identical_and_similar_trajectories():
    gt = _trajectory()
    assert absolute_trajectory_error(gt, gt) == pytest.approx(0.0, abs=1e-9)
    assert relative_pose_error(gt, gt) == pytest.approx((0.0, 0.0), abs=1e-6)
    moved = _similar(gt, 0.3, rotation_from_axis_angle(np.array([0.1, 0.7, -0.2])), np.array([3.0, 1.0, -1.0]))
    # a prediction off by a similarity (scale, rotation, translation of the world) has no error after alignment
    assert absolute_trajectory_error(moved, gt) == pytest.approx(0.0, abs=1e-9)
    assert relative_pose_error(moved, gt) == pytest.approx((0.0, 0.0), abs=1e-5)


def test_ate_hand_value():
    eye = np.concatenate([np.eye(3), np.zeros((3, 1))], axis=1)
    # Two frames: any two distinct centres align exactly under Sim(3), so ATE = 0 whatever the prediction.
    gt = np.stack([eye, eye.copy()])
    gt[1, :, 3] = [-1.0, 0.0, 0.0]  # centre (1, 0, 0)
    pred = gt.copy()
    pred[1, :, 3] = [-5.0, -2.0, 0.0]  # centre (5, 2, 0)
    assert absolute_trajectory_error(pred, gt) == pytest.approx(0.0, abs=1e-9)
    # Three collinear centres on the x axis, true y = (0, 1, 2), predicted x = (0, 1, 3). Alignment reduces to the
    # 1-D least squares y ≈ s(x − x̄) + ȳ: x̄ = 4/3, ȳ = 1, cov = 1, var = 14/9, s = 9/14; residuals
    # (−1/7, 3/14, −1/14), squares summing to 14/196 = 1/14, so ATE = sqrt(1/42).
    gt3 = np.stack([eye.copy() for _ in range(3)])
    pred3 = np.stack([eye.copy() for _ in range(3)])
    for i, (x, y) in enumerate(zip((0.0, 1.0, 3.0), (0.0, 1.0, 2.0), strict=True)):
        gt3[i, 0, 3], pred3[i, 0, 3] = -y, -x  # centre = −t for R = I
    assert absolute_trajectory_error(pred3, gt3) == pytest.approx(np.sqrt(1 / 42), rel=1e-9)


def test_rpe_rotation_hand_value():
    # Identical centres; the prediction's last camera turned by 10° about its optical axis. Alignment of the
    # centres is the identity, so the last relative motion is off by exactly 10° and the others by 0:
    # RPE_rot = sqrt((0² + 0² + 10²) / 3).
    gt = _trajectory(4, seed=3)
    pred = gt.copy()
    turn = rotation_from_axis_angle(np.array([0.0, 0.0, np.deg2rad(10.0)]))
    c = camera_centers(gt[3:])[0]
    pred[3, :, :3] = turn @ gt[3, :, :3]
    pred[3, :, 3] = -pred[3, :, :3] @ c
    trans, rot = relative_pose_error(pred, gt)
    assert rot == pytest.approx(np.sqrt(100.0 / 3), rel=1e-6)
    assert trans == pytest.approx(0.0, abs=1e-9)


def test_trajectory_metrics_reject_wrong_frame_counts():
    gt = _trajectory(5)
    with pytest.raises(ValueError, match="frame counts"):
        absolute_trajectory_error(gt[:4], gt)
    with pytest.raises(ValueError, match="frame counts"):
        relative_pose_error(gt, gt[:3])
    with pytest.raises(ValueError, match="3, 4"):
        absolute_trajectory_error(gt[:, :, :3], gt[:, :, :3])


def test_depth_metrics_hand_values():
    gt = np.array([1.0, 2.0, 4.0, 8.0])
    # pred = 2·gt except the last pixel (2·10): median scale = median(gt)/median(pred) = 3/6 = 1/2,
    # scaled = (1, 2, 4, 10): AbsRel = (0 + 0 + 0 + 2/8)/4 = 1/16; δ: 10/8 = 1.25 is not < 1.25 -> 3/4
    pred = np.array([2.0, 4.0, 8.0, 20.0])
    m = depth_metrics(pred, gt)
    assert m.abs_rel == pytest.approx(1 / 16)
    assert m.delta1 == pytest.approx(0.75)
    assert m.n_pixels == 4
    # region: only the last pixel, same alignment over all pixels
    last = depth_metrics(pred, gt, region=np.array([False, False, False, True]))
    assert last.abs_rel == pytest.approx(0.25) and last.delta1 == 0.0 and last.n_pixels == 1
    empty = depth_metrics(pred, gt, region=np.zeros(4, bool))
    assert np.isnan(empty.abs_rel) and empty.n_pixels == 0
    with pytest.raises(ValueError, match="same shape"):
        depth_metrics(pred[:3], gt)
    with pytest.raises(ValueError, match="NaN"):
        depth_metrics(np.array([np.nan, 1.0, 1.0, 1.0]), gt)


def test_mask_iou_hand_value():
    a = np.array([[1, 1, 0], [0, 0, 0]], bool)
    b = np.array([[0, 1, 1], [0, 0, 0]], bool)
    assert mask_iou(a, b) == pytest.approx(1 / 3)  # intersection 1, union 3
    assert mask_iou(np.zeros((2, 2)), np.zeros((2, 2))) == 1.0
    with pytest.raises(ValueError, match="same shape"):
        mask_iou(a, b[:, :2])


def test_quaternion_round_trip_and_a_hand_value():
    rots = np.stack([rotation_from_axis_angle(v) for v in np.random.default_rng(4).normal(size=(20, 3)) * 1.5])
    q = matrix_to_quaternion(rots)
    assert np.all(q[:, 3] >= 0) and np.allclose(np.linalg.norm(q, axis=1), 1.0)
    assert np.allclose(quaternion_to_matrix(q), rots, atol=1e-10)
    # 90° about z: q = (0, 0, sin 45°, cos 45°)
    rz = rotation_from_axis_angle(np.array([0.0, 0.0, np.pi / 2]))
    assert np.allclose(matrix_to_quaternion(rz), [0, 0, np.sqrt(0.5), np.sqrt(0.5)])
    # 180° about x: the pivot is x, q = (1, 0, 0, 0)
    assert np.allclose(matrix_to_quaternion(np.diag([1.0, -1.0, -1.0])), [1, 0, 0, 0])
    ext = _trajectory(3)
    assert np.allclose(pose_encoding_to_extrinsics(extrinsics_to_pose_encoding(ext)), ext, atol=1e-10)


def _cameras(centres, yaw_deg=None):
    """Camera-from-world extrinsics (S, 3, 4) at ``centres`` (S, 3), turned about y by ``yaw_deg[i]`` degrees."""
    out = []
    for i, c in enumerate(np.asarray(centres, float)):
        r = rotation_from_axis_angle(np.array([0.0, np.deg2rad(yaw_deg[i]) if yaw_deg is not None else 0.0, 0.0]))
        out.append(np.concatenate([r, (-r @ c)[:, None]], axis=1))
    return np.stack(out)


def test_trivial_predictor_errors_hand_values():
    straight = _cameras([[i, 0.0, 0.0] for i in range(4)], yaw_deg=[0.0, 10.0, 20.0, 30.0])
    ate, trans, rot = constant_pose_errors(straight)
    assert ate == pytest.approx(np.sqrt(1.25))  # centres 0..3 about their mean 1.5: sqrt(mean (i - 1.5)^2)
    assert rot == pytest.approx(10.0)  # every step turns 10°, the constant predictor turns none
    assert trans == pytest.approx(1.0)  # each step moves 1
    assert line_fit_ate(straight) == pytest.approx(0.0, abs=1e-12)
    # a stop: x = 0, 1, 1, 2. Least squares over i: slope 0.6, fit 0.1, 0.7, 1.3, 1.9; residuals ±0.1, ±0.3
    stopped = _cameras([[0.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0]])
    assert line_fit_ate(stopped) == pytest.approx(np.sqrt(0.05))


def test_no_line_scores_below_the_line_fit_and_a_line_matches_a_straight_path():
    rng = np.random.default_rng(3)
    gt = _cameras(rng.normal(size=(5, 3)))
    for _ in range(5):  # collinear, equally spaced predictions in random directions
        a, b = rng.normal(size=3), rng.normal(size=3)
        pred = _cameras([a + i * b for i in range(5)])
        assert absolute_trajectory_error(pred, gt) >= line_fit_ate(gt) - 1e-9
    line = _cameras([[0.5 * i, 0.1 * i, -0.2 * i] for i in range(5)])
    pred = _cameras([[3.0 * i, 0.0, 0.0] for i in range(5)])
    assert absolute_trajectory_error(pred, line) < 1e-9
