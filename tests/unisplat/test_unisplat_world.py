"""The synthetic driving world: exact ground depth, the foundation-depth stand-in, and the sequence layout."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.common.cameras import intrinsics_matrix
from iclr26.unisplat.world import Box, Street, camera_extrinsic, draw_street, foundation_depth, make_sequence, ray_cast


def _empty_street(**kw) -> Street:
    return Street(boxes=(), facade_colors=np.full((4, 3), 0.5), x0=0.0, ego_speed=1.0, texture_phase=np.zeros(4), **kw)


def test_ground_depth_by_hand():
    # a level camera 1.6 m up: the pixel row whose ray falls by a = (v + ½ − cy) / f per unit depth meets the
    # ground at z-depth 1.6 / a (façades far away: 1e3 m)
    k = intrinsics_matrix(16, 24, fov_x_deg=60.0)
    _, depth, sky, _ = ray_cast(_empty_street(facade_y=1e3), camera_extrinsic(0.0, pitch_deg=0.0), k, 16, 24, frame=0)
    a = (15 + 0.5 - k[1, 2]) / k[1, 1]
    assert depth[15, 12] == pytest.approx(1.6 / a)
    assert sky[0].all() and not sky[15].any()


def test_moving_box_is_dynamic_and_moves():
    street = _empty_street()
    lo = np.array([5.0, -1.0, 0.0])
    street = Street((Box(lo, lo + 2.0, 1.0, np.ones(3) * 0.2, np.ones(3)),), street.facade_colors, 0.0, 0.0,
                    np.zeros(4))  # fmt: skip
    k = intrinsics_matrix(16, 24, fov_x_deg=60.0)
    e = camera_extrinsic(0.0, pitch_deg=0.0)
    _, d0, _, dyn0 = ray_cast(street, e, k, 16, 24, frame=0)
    _, d1, _, _ = ray_cast(street, e, k, 16, 24, frame=0, object_frame=1)
    assert dyn0[8, 12] and d0[8, 12] == pytest.approx(5.0)  # the box face x = 5 straight ahead
    assert d1[8, 12] == pytest.approx(6.0)  # one frame later it is 1 m further


def test_foundation_depth_scale_and_sky():
    depth = np.array([[2.0, 4.0], [np.inf, 8.0]])
    sky = ~np.isfinite(depth)
    rel, s = foundation_depth(depth, sky, np.random.default_rng(0), scale_range=1.5, noise=0.0)
    assert 1 / 1.5 <= s <= 1.5
    assert rel[1, 0] == 0.0  # invalid on sky
    assert np.allclose(rel[~sky] * s, depth[~sky])  # noise 0: exactly the depth up to the unknown scale


def test_sequence_layout():
    rng = np.random.default_rng(0)
    street = draw_street(rng, ego_speed=2.0)
    seq = make_sequence(street, rng, n_frames=3, height=16, width=24, rig_yaws=(60.0, 0.0, -60.0), fov_deg=64.0,
                        inside_views=((30.0, 0.5),), outside_yaws=(130.0, -130.0), scale_range=1.2,
                        depth_noise=0.05)  # fmt: skip
    assert seq.images.shape == (3, 3, 3, 16, 24) and seq.rel_depth.shape == (3, 3, 16, 24)
    assert seq.novel.shape == (3, 3, 4) and seq.novel_outside.tolist() == [False, True, True]
    assert np.allclose(seq.ego_poses[:, 0, 3] - seq.ego_poses[0, 0, 3], [0.0, 2.0, 4.0])
    assert np.isfinite(seq.images).all() and (seq.images >= 0).all() and (seq.images <= 1).all()
    with pytest.raises(ValueError, match="n_frames"):
        make_sequence(street, rng, n_frames=0, height=16, width=24, rig_yaws=(0.0,), fov_deg=60.0, inside_views=(),
                      outside_yaws=(), scale_range=1.0, depth_noise=0.0)  # fmt: skip
