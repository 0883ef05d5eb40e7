"""The scaffold: unprojection and scatter-mean lifting of a known depth map, exact warping on grid-aligned shifts."""

from __future__ import annotations

import pytest
import torch

from iclr26.unisplat.scaffold import VoxelGrid, lift_to_scaffold, unproject, warp_scaffold

EYE = torch.cat([torch.eye(3), torch.zeros(3, 1)], dim=1)
# f = 1, principal point (1, 1): the 2x2 image's pixel centres (0.5, 1.5) map to x/z, y/z = ∓0.5
K = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])


def test_unproject_known_depth_map():
    # depth 2 everywhere: pixel (u, v) centre → (2 (u + ½ − 1), 2 (v + ½ − 1), 2)
    pts = unproject(torch.full((2, 2), 2.0), K, EYE)
    expected = torch.tensor([[[-1.0, -1.0, 2.0], [1.0, -1.0, 2.0]], [[-1.0, 1.0, 2.0], [1.0, 1.0, 2.0]]])
    assert torch.allclose(pts, expected)
    # a camera shifted by t = (0, 0, −1) (camera-from-ego X_c = X_e + t): ego points are 1 further along z
    shifted = torch.cat([torch.eye(3), torch.tensor([[0.0], [0.0], [-1.0]])], dim=1)
    assert torch.allclose(unproject(torch.full((2, 2), 2.0), K, shifted)[..., 2], torch.full((2, 2), 3.0))


def test_lifting_known_depth_map_into_voxels():
    pts = unproject(torch.full((2, 2), 2.0), K, EYE).reshape(-1, 3)  # (±1, ±1, 2)
    feats = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    # voxels of 2 m from (−2, −2, 0): x = −1 → 0, x = 1 → 1, same for y; z = 2 → 1: one pixel per voxel
    grid = VoxelGrid((-2.0, -2.0, 0.0), (2, 2, 2), 2.0)
    scaffold, count = lift_to_scaffold(pts, feats, grid)
    assert scaffold.shape == (1, 2, 2, 2) and count.sum() == 4
    assert scaffold[0, 1].tolist() == [[1.0, 2.0], [3.0, 4.0]]  # (z = 1, y, x)
    assert scaffold[0, 0].abs().sum() == 0 and count[0].sum() == 0
    # one 4 m voxel holds all four points: the mean feature (1 + 2 + 3 + 4) / 4 = 2.5
    big, n = lift_to_scaffold(pts, feats, VoxelGrid((-2.0, -2.0, 0.0), (1, 1, 1), 4.0))
    assert big.item() == 2.5 and n.item() == 4
    # points outside the grid are dropped
    small, n = lift_to_scaffold(pts, feats, VoxelGrid((0.0, 0.0, 0.0), (1, 1, 1), 4.0))
    assert n.item() == 1 and small.item() == 4.0


def test_lifting_rejects_bad_points():
    grid = VoxelGrid((0.0, 0.0, 0.0), (1, 1, 1), 1.0)
    with pytest.raises(ValueError, match="points"):
        lift_to_scaffold(torch.tensor([[float("nan"), 0.0, 0.0]]), torch.ones(1, 1), grid)
    with pytest.raises(ValueError, match="points"):
        lift_to_scaffold(torch.ones(3, 2), torch.ones(3, 1), grid)
    with pytest.raises(ValueError, match="voxel size"):
        VoxelGrid((0.0, 0.0, 0.0), (1, 1, 1), 0.0)


def _translation(x: float, y: float = 0.0, z: float = 0.0) -> torch.Tensor:
    m = torch.eye(4)
    m[:3, 3] = torch.tensor([x, y, z])
    return m


def test_warp_is_exact_on_grid_aligned_shifts():
    grid = VoxelGrid((-4.0, -3.0, 0.0), (8, 6, 3), 1.0)
    # float64: an exact index shift up to rounding of the normalised coordinates (~1e-16)
    prev = torch.randn(2, 3, 6, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(warp_scaffold(prev, torch.eye(4), grid), prev, atol=1e-12)
    # the ego moved 1 voxel forward: the current voxel x sits at x + 1 in the previous frame
    fwd = warp_scaffold(prev, _translation(1.0), grid)
    assert torch.allclose(fwd[..., :-1], prev[..., 1:], atol=1e-12)
    assert fwd[..., -1].abs().max() < 1e-12  # beyond the previous grid: zeros
    # 2 voxels to the left (y) and 1 down (z)
    side = warp_scaffold(prev, _translation(0.0, -2.0, 1.0), grid)
    assert torch.allclose(side[:, :-1, 2:, :], prev[:, 1:, :-2, :], atol=1e-12)
    assert side[:, :, :2].abs().max() < 1e-12 and side[:, -1].abs().max() < 1e-12


def test_warp_interpolates_half_voxel_shifts_linearly():
    grid = VoxelGrid((0.0, 0.0, 0.0), (4, 1, 1), 1.0)
    prev = torch.tensor([0.0, 2.0, 4.0, 6.0]).reshape(1, 1, 1, 4)
    # centre x + 0.5 lies halfway between voxels i and i + 1: the mean of their values; the last is halfway to 0
    out = warp_scaffold(prev, _translation(0.5), grid)
    assert torch.allclose(out.reshape(-1), torch.tensor([1.0, 3.0, 5.0, 3.0]))


def test_warp_rejects_nan_pose():
    grid = VoxelGrid((0.0, 0.0, 0.0), (2, 2, 2), 1.0)
    bad = torch.eye(4)
    bad[0, 3] = float("nan")
    with pytest.raises(ValueError, match="prev_from_cur"):
        warp_scaffold(torch.zeros(1, 2, 2, 2), bad, grid)
    with pytest.raises(ValueError, match="finite"):
        unproject(torch.ones(2, 2), K, EYE * float("nan"))
