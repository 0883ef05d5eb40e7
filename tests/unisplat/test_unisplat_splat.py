"""The pure-PyTorch splatting renderer: brute-force reference (values and gradients), hand-computed projection and
compositing, culling, and errors for degenerate input."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.unisplat.splat import (
    DILATION,
    covariance_from_scale_rotation,
    project_gaussians,
    render_gaussians,
    render_reference,
)

EYE = torch.cat([torch.eye(3), torch.zeros(3, 1)], dim=1).double()
K = torch.tensor([[10.0, 0.0, 6.0], [0.0, 10.0, 4.0], [0.0, 0.0, 1.0]]).double()


def _gaussians(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(n, 3, generator=g, dtype=torch.float64) * 0.5 + torch.tensor([0.0, 0.0, 4.0]).double()
    scales = torch.rand(n, 3, generator=g, dtype=torch.float64) * 0.3 + 0.05
    quats = torch.randn(n, 4, generator=g, dtype=torch.float64)
    opac = torch.rand(n, generator=g, dtype=torch.float64) * 0.9 + 0.05
    colors = torch.rand(n, 4, generator=g, dtype=torch.float64)
    return means, scales, quats, opac, colors


def test_matches_brute_force_reference_values_and_gradients():
    args = [t.requires_grad_() for t in _gaussians(6)]
    bg = torch.tensor([0.2, 0.4, 0.6, 0.0], dtype=torch.float64)
    fast = render_gaussians(*args, EYE, K, 8, 12, background=bg).image
    slow = render_reference(*args, EYE, K, 8, 12, background=bg)
    assert fast.shape == slow.shape == (4, 8, 12)
    assert torch.allclose(fast, slow, atol=1e-12)  # float64: the same sums in another order
    w = torch.rand(fast.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    g_fast = torch.autograd.grad((fast * w).sum(), args)
    g_slow = torch.autograd.grad((slow * w).sum(), args)
    for a, b in zip(g_fast, g_slow, strict=True):
        assert torch.allclose(a, b, atol=1e-10)
    assert any(float(g.abs().max()) > 1e-6 for g in g_fast)  # gradients are not trivially zero


def test_projection_of_a_known_gaussian():
    # isotropic σ = 0.2 at camera (1, −0.5, 4): μ' = (f x/z + cx, f y/z + cy) = (10·0.25 + 6, 10·(−0.125) + 4)
    # J = [[f/z, 0, −f x/z²], [0, f/z, −f y/z²]] = [[2.5, 0, −0.625], [0, 2.5, 0.3125]]; Σ' = σ² J Jᵀ + 0.3 I
    sigma = 0.2
    means = torch.tensor([[1.0, -0.5, 4.0]], dtype=torch.float64)
    covs = (sigma**2 * torch.eye(3, dtype=torch.float64))[None]
    p = project_gaussians(means, covs, EYE, K)
    assert torch.allclose(p.mean2d[0], torch.tensor([8.5, 2.75], dtype=torch.float64))
    jac = torch.tensor([[2.5, 0.0, -0.625], [0.0, 2.5, 0.3125]], dtype=torch.float64)
    expected = sigma**2 * jac @ jac.T + DILATION * torch.eye(2, dtype=torch.float64)
    assert torch.allclose(p.cov2d[0], expected)
    assert p.depth.item() == 4.0 and bool(p.valid.item())


def test_covariance_from_scale_and_rotation():
    # a 90° rotation about z, q = (cos 45°, 0, 0, sin 45°), swaps the x and y variances
    q = torch.tensor([[math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]], dtype=torch.float64)
    cov = covariance_from_scale_rotation(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64), q)[0]
    assert torch.allclose(cov, torch.diag(torch.tensor([4.0, 1.0, 9.0], dtype=torch.float64)), atol=1e-12)


def test_front_to_back_compositing_by_hand():
    # two Gaussians centred on pixel (2, 1) (centre (2.5, 1.5)): there d = 0, so α_i = o_i exactly.
    # front (z = 2) o = 0.5 colour 1, back (z = 3) o = 0.5 colour 0.2, background 0.4:
    # C = 0.5·1 + 0.5·0.5·0.2 + 0.25·0.4 = 0.65, whatever the input order
    k = torch.tensor([[10.0, 0.0, 2.5], [0.0, 10.0, 1.5], [0.0, 0.0, 1.0]], dtype=torch.float64)
    means = torch.tensor([[0.0, 0.0, 3.0], [0.0, 0.0, 2.0]], dtype=torch.float64)
    scales = torch.full((2, 3), 0.01, dtype=torch.float64)
    quats = torch.tensor([[1.0, 0, 0, 0], [1.0, 0, 0, 0]], dtype=torch.float64)
    opac = torch.tensor([0.5, 0.5], dtype=torch.float64)
    colors = torch.tensor([[0.2], [1.0]], dtype=torch.float64)
    bg = torch.tensor([0.4], dtype=torch.float64)
    out = render_gaussians(means, scales, quats, opac, colors, EYE, k, 3, 5, background=bg)
    assert out.image[0, 1, 2].item() == pytest.approx(0.65)
    assert out.alpha[1, 2].item() == pytest.approx(0.75)
    swapped = render_gaussians(means.flip(0), scales, quats, opac.flip(0), colors.flip(0), EYE, k, 3, 5, background=bg)
    assert torch.allclose(out.image, swapped.image)


def test_opacity_is_capped_at_0_99():
    k = torch.tensor([[10.0, 0.0, 0.5], [0.0, 10.0, 0.5], [0.0, 0.0, 1.0]], dtype=torch.float64)
    one = render_gaussians(torch.tensor([[0.0, 0.0, 2.0]], dtype=torch.float64), torch.full((1, 3), 0.01).double(),
                           torch.tensor([[1.0, 0, 0, 0]]).double(), torch.ones(1).double(), torch.ones(1, 1).double(),
                           EYE, k, 1, 1)  # fmt: skip
    assert one.alpha.item() == pytest.approx(0.99)


def test_gaussians_behind_the_camera_or_off_screen_contribute_nothing():
    means, scales, quats, opac, colors = _gaussians(4)
    base = render_gaussians(means, scales, quats, opac, colors, EYE, K, 8, 12).image
    extra = torch.tensor([[0.0, 0.0, -2.0], [0.0, 0.0, 0.01], [500.0, 0.0, 4.0]], dtype=torch.float64)
    more = render_gaussians(torch.cat([means, extra]), torch.cat([scales, torch.full((3, 3), 0.3).double()]),
                            torch.cat([quats, torch.tensor([[1.0, 0, 0, 0]] * 3).double()]),
                            torch.cat([opac, torch.ones(3).double() * 0.9]),
                            torch.cat([colors, torch.ones(3, 4).double()]), EYE, K, 8, 12).image  # fmt: skip
    assert torch.equal(base, more)
    # behind: z = −2 < near; too close: z = 0.01 < near = 0.05; far off screen: u ≈ 1256 px
    p = project_gaussians(extra, torch.eye(3).double().expand(3, 3, 3) * 0.09, EYE, K)
    assert p.valid.tolist() == [False, False, True]


def test_flat_gaussian_renders_finite():
    means, scales, quats, opac, colors = _gaussians(3)
    scales = scales.clone()
    scales[:, 2] = 1e-9  # rank-deficient 3D covariance: the ε dilation keeps Σ' positive definite
    out = render_gaussians(means, scales, quats, opac, colors, EYE, K, 8, 12)
    assert torch.isfinite(out.image).all()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: {**a, "scales": -a["scales"]}, "scales"),
        (lambda a: {**a, "scales": a["scales"] * float("nan")}, "scales"),
        (lambda a: {**a, "quats": torch.zeros_like(a["quats"])}, "quats"),
        (lambda a: {**a, "opacities": a["opacities"] + 1.0}, "opacities"),
        (lambda a: {**a, "colors": a["colors"][:-1]}, "colors"),
        (lambda a: {**a, "extrinsic": EYE * float("nan")}, "extrinsic"),
        (lambda a: {**a, "extrinsic": EYE[:, :3]}, "extrinsic"),
        (lambda a: {**a, "intrinsic": K * float("inf")}, "intrinsic"),
        (lambda a: {**a, "means": a["means"] * float("nan")}, "means"),
    ],
)
def test_bad_input_raises_naming_the_argument(change, message):
    means, scales, quats, opac, colors = _gaussians(3)
    args = {"means": means, "scales": scales, "quats": quats, "opacities": opac, "colors": colors,
            "extrinsic": EYE, "intrinsic": K}  # fmt: skip
    with pytest.raises(ValueError, match=message):
        render_gaussians(**change(args), height=8, width=12)


def test_gsplat_backend_needs_gsplat_and_cuda():
    try:
        import gsplat  # noqa: F401

        expected = "CUDA"
    except ImportError:
        expected = "gsplat"
    with pytest.raises(RuntimeError, match=expected):
        render_gaussians(*_gaussians(2), EYE, K, 8, 12, backend="gsplat")
