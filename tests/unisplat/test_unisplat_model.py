"""The decoder, memory rule and streaming step: Gaussian counts per branch, fusion on/off, the static-memory
selection by hand, recall outside the rig's view, rigid transforms, and bad poses."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.unisplat.model import Frame, Gaussians, StaticMemory, UniSplat, select_history, select_static
from iclr26.unisplat.scaffold import VoxelGrid
from iclr26.unisplat.splat import covariance_from_scale_rotation
from iclr26.unisplat.world import camera_extrinsic

GRID = VoxelGrid((-4.0, -6.0, -0.5), (12, 12, 3), 1.0)
K = torch.tensor([[12.0, 0.0, 6.0], [0.0, 12.0, 4.0], [0.0, 0.0, 1.0]])


def _g(n: int, **kw) -> Gaussians:
    gen = torch.Generator().manual_seed(n)
    base = dict(means=torch.randn(n, 3, generator=gen), scales=torch.rand(n, 3, generator=gen) + 0.1,
                quats=torch.randn(n, 4, generator=gen), opacities=torch.rand(n, generator=gen),
                colors=torch.rand(n, 3, generator=gen), dynamic_logits=torch.full((n,), -5.0))  # fmt: skip
    return Gaussians(**{**base, **kw})


def _frame(x: float = 0.0, depth: float = 4.0) -> Frame:
    rig = torch.as_tensor(camera_extrinsic(0.0, pitch_deg=0.0), dtype=torch.float32)[None]
    pose = torch.eye(4)
    pose[0, 3] = x
    rel = torch.full((1, 8, 12), depth)
    rel[0, 0, 0] = 0.0  # one invalid (sky) pixel
    return Frame(torch.rand(1, 3, 8, 12, generator=torch.Generator().manual_seed(3)), rel, torch.zeros(1, 8, 12),
                 rig, K, pose)  # fmt: skip


def _model(**kw) -> UniSplat:
    return UniSplat(GRID, dim=4, patch=2, generator=torch.Generator().manual_seed(0), **kw)


def test_select_static_by_hand():
    g = _g(3, dynamic_logits=torch.tensor([-5.0, 5.0, 0.1]), opacities=torch.tensor([0.9, 0.99, 0.1]))
    # σ(−5) ≈ 0.007 < ½ kept; σ(5) ≈ 0.993 and σ(0.1) ≈ 0.525 dropped
    assert select_static(g).opacities.tolist() == pytest.approx([0.9])
    assert len(select_static(g, dynamic_threshold=2.0)) == 3  # the filter off


def test_select_history_by_hand():
    opacity = torch.tensor([0.9, 0.2, 0.5, 0.7, 0.1, 0.8])
    inside = torch.tensor([True, True, True, True, False, False])
    # inside: top round(0.5 · 4) = 2 by opacity → 0.9, 0.7; outside: top round(0.5 · 2) = 1 → 0.8
    keep = select_history(opacity, inside, quantile=0.5, cap_inside=10, cap_outside=10)
    assert keep.tolist() == [True, False, False, True, False, True]
    # a cap of 1 inside keeps only 0.9
    keep = select_history(opacity, inside, quantile=0.5, cap_inside=1, cap_outside=10)
    assert keep.tolist() == [True, False, False, False, False, True]


def test_rigid_transform_moves_means_and_rotates_covariances():
    g = _g(4)
    m = torch.eye(4)
    c, s = math.cos(0.7), math.sin(0.7)
    m[:3, :3] = torch.tensor([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    m[:3, 3] = torch.tensor([1.0, -2.0, 0.5])
    t = g.transform(m)
    assert torch.allclose(t.means, g.means @ m[:3, :3].T + m[:3, 3], atol=1e-6)
    # Σ' = R Σ Rᵀ
    cov = covariance_from_scale_rotation(g.scales, g.quats)
    assert torch.allclose(covariance_from_scale_rotation(t.scales, t.quats), m[:3, :3] @ cov @ m[:3, :3].T, atol=1e-5)
    back = t.transform(torch.linalg.inv(m))
    assert torch.allclose(back.means, g.means, atol=1e-5)


def test_memory_recalls_only_what_the_rig_does_not_see():
    mem = StaticMemory()
    pose = torch.eye(4)
    pose[0, 3] = 10.0
    # world points: one 5 m ahead of the ego at x = 10 (in the front camera's view), one 5 m behind it
    g = _g(2, means=torch.tensor([[15.0, 0.0, 1.6], [5.0, 0.0, 1.6]]), opacities=torch.tensor([0.5, 0.6]))
    mem.gaussians = g
    rig = torch.as_tensor(camera_extrinsic(0.0, pitch_deg=0.0), dtype=torch.float32)[None]
    recalled = mem.recall(pose, rig, K, 8, 12)
    assert len(recalled) == 1
    assert torch.allclose(recalled.means, torch.tensor([[-5.0, 0.0, 1.6]]))  # in ego coordinates
    # update: this frame's static Gaussians (ego frame) join the recalled ones, stored in world coordinates
    mem.update(_g(3, means=torch.zeros(3, 3)), recalled, pose)
    assert len(mem.gaussians) == 4
    assert torch.allclose(mem.gaussians.means[:3], torch.tensor([10.0, 0.0, 0.0]).expand(3, 3))
    with pytest.raises(ValueError, match="history_quantile"):
        _model(history_quantile=0.0)


def test_step_counts_gaussians_per_branch():
    f = _frame()
    point = _model(branches="point").step(f, None)
    # 4x6 patches of 2x2 pixels, all with at least one valid pixel
    assert len(point.gaussians) == 24
    voxel = _model(branches="voxel").step(f, None)
    # without history every valid voxel is occupied now; round(0.6 · n) of them are kept as history
    n_vox = len(voxel.gaussians) // 2
    assert n_vox > 0 and int(voxel.valid.sum()) == round(0.6 * n_vox)
    dual = _model(branches="dual").step(f, None)
    assert len(dual.gaussians) == 24 + 2 * n_vox
    assert torch.isfinite(dual.gaussians.means).all() and bool((dual.gaussians.scales > 0).all())
    # the untrained scale head gives γ = 1: the lifted points (depth 4 along the ego x axis) lie at x = 4, up to the
    # bounded offset (point_offset = 0.3)
    assert torch.allclose(point.log_scale, torch.zeros(1))
    assert float((point.gaussians.means[:, 0].detach() - 4.0).abs().max()) <= 0.3 + 1e-6


def test_fusion_uses_the_warped_history_and_single_frame_ignores_it():
    first, second = _frame(0.0), _frame(1.0)
    fused = _model(branches="voxel")
    o1 = fused.step(first, None)
    history = (o1.scaffold, o1.valid, first.ego_pose)
    with_h, without = fused.step(second, history), fused.step(second, None)
    assert int(with_h.valid.sum()) > int(without.valid.sum())  # remembered voxels behind the new ones
    single = _model(branches="voxel", fusion=False)
    o1 = single.step(first, None)
    a, b = single.step(second, (o1.scaffold, o1.valid, first.ego_pose)), single.step(second, None)
    assert torch.equal(a.scaffold, b.scaffold)


def test_step_rejects_nan_poses():
    f = _frame()
    bad = Frame(f.images, f.rel_depth, f.dynamic, f.rig, f.intrinsic, f.ego_pose * float("nan"))
    with pytest.raises(ValueError, match="ego_pose"):
        _model().step(bad, None)
    with pytest.raises(ValueError, match="branches"):
        _model(branches="both")
