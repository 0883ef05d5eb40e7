"""The synthetic 4D renderer and the user-data loader."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.common.cameras import intrinsics_matrix
from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.data import batch_tensors, load_sequence, load_sequences
from iclr26.page4d.geometry import absolute_trajectory_error, constant_pose_errors, line_fit_ate
from iclr26.page4d.scene import CameraMotion, Sphere, camera_path, generate_scene, relative_to_first, render_frame

EYE = np.concatenate([np.eye(3), np.zeros((3, 1))], axis=1)


def _sphere(center, velocity=(0.0, 0.0, 0.0), radius=0.5):
    return Sphere(np.array(center, float), np.array(velocity, float), radius, np.ones((3, 3)), np.zeros(3))


def test_wall_depth_and_sphere_depth_hand_values():
    k = intrinsics_matrix(5, 5)
    args = dict(room=4.0, wall_freq=np.ones((3, 3)), wall_phase=np.zeros(3), frame=0)
    # camera at the origin looking along +z; a 60° field of view only sees the wall z = 4: depth 4 everywhere
    rgb, depth, dyn = render_frame(EYE, k, 5, 5, spheres=[], **args)
    assert np.allclose(depth, 4.0) and not dyn.any() and rgb.shape == (3, 5, 5)
    # a static sphere of radius 0.5 at (0, 0, 2): the central ray (exactly the axis for 5 px) hits at z = 1.5
    _, depth, dyn = render_frame(EYE, k, 5, 5, spheres=[_sphere((0, 0, 2))], **args)
    assert depth[2, 2] == pytest.approx(1.5) and not dyn.any()
    # the same sphere moving: at frame 2 with velocity (0, 0, 0.5) its centre is at z = 3, surface at 2.5
    _, depth, dyn = render_frame(EYE, k, 5, 5, spheres=[_sphere((0, 0, 2), (0, 0, 0.5))], **{**args, "frame": 2})
    assert depth[2, 2] == pytest.approx(2.5) and dyn[2, 2] and not dyn[0, 0]
    with pytest.raises(ValueError, match="outside the room"):
        render_frame(np.concatenate([np.eye(3), [[0.0], [0.0], [-5.0]]], axis=1), k, 5, 5, spheres=[], **args)


def test_generated_cameras_are_consistent_with_rendered_depth():
    # Unproject frame 0's pixels with their depth, move them into frame 1 with the extrinsics and compare the
    # z-depth there with frame 1's rendered depth at the nearest pixel (walls only: every pixel is static).
    scene = generate_scene(np.random.default_rng(0), n_frames=3, height=48, width=48, n_moving=0, n_objects=0)
    assert np.allclose(scene.extrinsics[0], EYE)
    k = scene.intrinsics[0]
    v, u = np.meshgrid(np.arange(48) + 0.5, np.arange(48) + 0.5, indexing="ij")
    x0 = np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(k).T * scene.depth[0][..., None]  # camera 0 = world
    r, t = scene.extrinsics[1][:, :3], scene.extrinsics[1][:, 3]
    x1 = x0.reshape(-1, 3) @ r.T + t
    pix = x1 @ k.T
    uu, vv = pix[:, 0] / pix[:, 2], pix[:, 1] / pix[:, 2]
    inside = (uu > 2) & (uu < 46) & (vv > 2) & (vv < 46)
    assert inside.mean() > 0.5
    d1 = scene.depth[1][vv[inside].astype(int), uu[inside].astype(int)]
    rel = np.abs(d1 - x1[inside, 2]) / x1[inside, 2]
    assert np.median(rel) < 0.02
    # the wrong convention (inverse motion) is far off: the test can tell
    x1_wrong = (x0.reshape(-1, 3) - t) @ r
    assert np.median(np.abs(x1_wrong[inside, 2] - d1) / d1) > 2 * np.median(rel)


def test_static_scenes_have_no_motion_and_dynamic_scenes_do():
    rng = np.random.default_rng(1)
    static = generate_scene(rng, n_frames=4, height=16, width=16, n_moving=0)
    dynamic = generate_scene(rng, n_frames=4, height=16, width=16, n_moving=2)
    assert not static.dynamic_mask.any() and dynamic.dynamic_mask.any()
    assert static.images.dtype == np.float32 and static.images.min() >= 0 and static.images.max() <= 1
    with pytest.raises(ValueError, match="n_frames"):
        generate_scene(rng, n_frames=1, height=16, width=16, n_moving=0)
    with pytest.raises(ValueError, match="n_moving"):
        generate_scene(rng, n_frames=3, height=16, width=16, n_moving=4, n_objects=3)


def test_relative_to_first_makes_frame_zero_the_identity_and_keeps_relative_motion():
    scene = generate_scene(np.random.default_rng(2), n_frames=3, height=8, width=8, n_moving=0)
    moved = scene.extrinsics.copy()
    shift = np.concatenate([np.eye(3), [[1.0], [2.0], [3.0]]], axis=1)  # world moved: E_i ∘ (x − (1,2,3)) ...
    # any world change E_i -> E_i W (W a rigid motion) gives the same relative cameras
    w = np.vstack([shift, [0, 0, 0, 1]])
    moved = np.einsum("sij,jk->sik", np.concatenate([moved, np.tile([[[0, 0, 0, 1.0]]], (3, 1, 1))], 1), w)[:, :3]
    assert np.allclose(relative_to_first(moved), scene.extrinsics, atol=1e-12)


def _write(path, **over):
    rng = np.random.default_rng(0)
    arrays = {"images": (rng.random((3, 16, 16, 3)) * 255).astype(np.uint8),
              "depths": rng.random((3, 16, 16)).astype(np.float32) + 1.0,
              "extrinsics": np.tile(EYE, (3, 1, 1)), "intrinsics": np.tile(intrinsics_matrix(16, 16), (3, 1, 1)),
              "dynamic_mask": rng.random((3, 16, 16)) > 0.7}  # fmt: skip
    arrays.update(over)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)
    return path


def test_loader_reads_the_user_format_and_batches_it(tmp_path):
    scene = load_sequence(_write(tmp_path / "a.npz"), n_frames=3, img_size=(16, 16))
    assert scene.images.shape == (3, 3, 16, 16) and scene.images.max() <= 1.0
    _write(tmp_path / "b.npz", images=np.random.default_rng(1).random((3, 3, 16, 16)).astype(np.float32))
    scenes = load_sequences(tmp_path, n_frames=3, img_size=(16, 16))
    batch = batch_tensors(scenes)
    assert batch["images"].shape == (2, 3, 3, 16, 16) and batch["pose_enc"].shape == (2, 3, 7)
    assert np.allclose(batch["pose_enc"][0, 0].numpy(), [0, 0, 0, 0, 0, 0, 1])


@pytest.mark.parametrize(
    ("over", "n_frames", "message"),
    [
        ({"dynamic_mask": None}, 3, "missing keys"),
        ({}, 4, "frames"),
        ({"images": np.full((3, 16, 16, 3), np.nan, np.float32)}, 3, "NaN"),
        ({"depths": np.zeros((3, 16, 16), np.float32)}, 3, "no valid"),
        ({"extrinsics": np.zeros((3, 4, 4))}, 3, "extrinsics"),
    ],
)
def test_loader_errors_name_the_file_and_the_problem(tmp_path, over, n_frames, message):
    path = _write(tmp_path / "bad.npz", **over)
    with pytest.raises(ValueError, match=message) as err:
        load_sequence(path, n_frames=n_frames, img_size=(16, 16))
    assert "bad.npz" in str(err.value)
    with pytest.raises(ValueError, match="does not exist"):
        load_sequences(tmp_path / "nope", n_frames=3, img_size=(16, 16))


def test_a_straight_line_predictor_does_not_score_ate_near_zero_on_the_reproductions_paths():
    # On a straight path at constant speed every collinear, equally spaced prediction aligns onto the truth (ATE
    # ~1e-16) whatever it learned; the reproduction's paths curve, change speed and stop, so it cannot.
    config = Page4DConfig()
    line = lambda i: np.concatenate([np.eye(3), np.array([[-0.4 * i], [0.0], [0.1 * i]])], axis=1)  # noqa: E731
    pred = np.stack([line(i) for i in range(config.n_frames)])
    rng = np.random.default_rng(0)
    straight = [generate_scene(rng, n_frames=config.n_frames, height=8, width=8, n_moving=0) for _ in range(20)]
    curved = [generate_scene(rng, n_frames=config.n_frames, height=8, width=8, n_moving=0, motion=config.motion())
              for _ in range(20)]  # fmt: skip
    assert max(absolute_trajectory_error(pred, s.extrinsics) for s in straight) < 1e-9
    ate = [absolute_trajectory_error(pred, s.extrinsics) for s in curved]
    const = [constant_pose_errors(s.extrinsics)[0] for s in curved]
    assert np.mean(ate) > 0.05 and np.mean(ate) > config.line_gate_ratio * np.mean(const)
    assert all(a >= line_fit_ate(s.extrinsics) - 1e-9 for a, s in zip(ate, curved, strict=True))


def test_paths_stop_turn_both_ways_and_stay_in_the_room():
    motion = CameraMotion(step=0.5, speed_jitter=0.7, curve_deg=40.0, stop_prob=0.5, turn_deg=8.0, turn_jitter=0.5)
    rng = np.random.default_rng(1)
    steps, turns = [], []
    for _ in range(30):
        ext = camera_path(rng, 6, motion)
        c = -np.einsum("sji,sj->si", ext[:, :, :3], ext[:, :, 3])
        assert np.abs(c).max() < 3.0  # inside the room's inner part
        steps += list(np.linalg.norm(np.diff(c, axis=0), axis=1))
        rel = np.einsum("sij,skj->sik", ext[1:, :, :3], ext[:-1, :, :3])  # R_{i+1} R_iᵀ
        turns += list(np.sign(rel[:, 0, 2]))
    assert min(steps) == 0.0 and max(steps) > 0.5  # stops and faster frames
    assert 0.2 < np.mean(np.array(turns) > 0) < 0.8  # turns both ways


def test_moving_spheres_are_in_view_in_every_frame_without_occluders():
    rng = np.random.default_rng(2)
    motion = Page4DConfig().motion()
    for _ in range(10):
        scene = generate_scene(rng, n_frames=4, height=32, width=32, n_moving=1, n_objects=1, motion=motion)
        assert (scene.dynamic_mask.sum(axis=(1, 2)) > 0).all()
