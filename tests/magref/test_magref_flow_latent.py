"""The flow-matching loss and sampler on known cases, and the lossless causal patchify."""

from __future__ import annotations

import pytest
import torch

from iclr26.magref.flow import euler_sample, flow_matching_loss, interpolate, shifted_sigmas
from iclr26.magref.latent import CausalPatchify


def test_interpolation_and_loss_hand_values():
    z0, eps = torch.full((2, 3), 1.0), torch.zeros(2, 3)
    # z_t = (1 - t) z0 + t eps = 0.75 at t = 0.25
    assert torch.allclose(interpolate(z0, eps, torch.tensor([0.25, 0.25])), torch.full((2, 3), 0.75))
    # target u = eps - z0 = -1; v = 0 -> loss 1; v = -1 -> loss 0; v = 1 -> loss 4
    assert flow_matching_loss(torch.zeros(2, 3), z0, eps).item() == pytest.approx(1.0)
    assert flow_matching_loss(-torch.ones(2, 3), z0, eps).item() == pytest.approx(0.0)
    assert flow_matching_loss(torch.ones(2, 3), z0, eps).item() == pytest.approx(4.0)
    # weighted: errors 4 (weight 1) and 0 (weight 3) -> 4/4 = 1
    v = torch.tensor([[1.0, -1.0, -1.0, -1.0]])
    w = torch.tensor([[1.0, 1.0, 1.0, 1.0]])
    assert flow_matching_loss(v, torch.ones(1, 4), torch.zeros(1, 4), w).item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="must match"):
        flow_matching_loss(torch.zeros(2, 2), z0, eps)


def test_shifted_schedule():
    assert torch.allclose(shifted_sigmas(4, 1.0), torch.tensor([1.0, 0.75, 0.5, 0.25, 0.0]))
    # shift 3 at s = 0.5: 1.5 / (1 + 2 * 0.5) = 0.75
    assert shifted_sigmas(2, 3.0)[1].item() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="steps"):
        shifted_sigmas(0, 1.0)
    with pytest.raises(ValueError, match="shift"):
        shifted_sigmas(2, 0.0)


def test_euler_recovers_the_data_under_the_exact_velocity():
    z0 = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    eps = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
    # the straight path has constant velocity eps - z0, so Euler is exact for any schedule
    out = euler_sample(lambda z, t: eps - z0, eps, steps=3, shift=3.0)
    assert torch.allclose(out, z0, atol=1e-6)


def test_patchify_is_lossless_and_groups_frames_causally():
    codec = CausalPatchify()
    video = torch.randn(2, 3, 9, 4, 6)
    lat = codec.encode(video)
    assert lat.shape == (2, 48, 3, 2, 3)  # 9 frames -> 1 + 2 latent frames; 3*4*2*2 = 48 channels
    assert torch.equal(codec.decode(lat), video)
    # latent frame 1 holds pixel frames 1..4 only: changing frame 5 leaves it unchanged
    v2 = video.clone()
    v2[:, :, 5] += 1
    lat2 = codec.encode(v2)
    assert torch.equal(lat2[:, :, :2], lat[:, :, :2]) and not torch.equal(lat2[:, :, 2], lat[:, :, 2])
    # latent frame 0 holds frame 0 in all four temporal slots
    assert torch.equal(codec.encode(video[:, :, :1]), lat[:, :, :1])


def test_patchify_rejects_bad_shapes():
    codec = CausalPatchify()
    with pytest.raises(ValueError, match="channels"):
        codec.encode(torch.zeros(1, 1, 5, 4, 4))
    with pytest.raises(ValueError, match="n_frames"):
        codec.encode(torch.zeros(1, 3, 6, 4, 4))
    with pytest.raises(ValueError, match="spatial stride"):
        codec.encode(torch.zeros(1, 3, 5, 3, 4))
    with pytest.raises(ValueError, match="latent"):
        codec.decode(torch.zeros(1, 16, 2, 2, 2))
