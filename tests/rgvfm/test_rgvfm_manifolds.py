"""Manifolds: closed forms against geoopt, inverse/metric identities, and the numerical edge cases."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.rgvfm.manifolds import Euclidean, Lorentz, Sphere, point_tolerance

F64 = torch.float64


def sphere_points(n: int, seed: int = 0) -> torch.Tensor:
    return Sphere(2).random_uniform(n, generator=torch.Generator().manual_seed(seed), dtype=F64)


def hyper_points(n: int, seed: int = 0, scale: float = 1.5) -> torch.Tensor:
    return Lorentz(2).wrapped_normal(n, scale=scale, generator=torch.Generator().manual_seed(seed), dtype=F64)


def unit_tangent(manifold, x: torch.Tensor, seed: int = 1) -> torch.Tensor:
    """Random tangent vectors at x of unit Riemannian norm."""
    u = manifold.proj_tangent(x, torch.randn(x.shape, generator=torch.Generator().manual_seed(seed), dtype=x.dtype))
    return u / manifold.norm(x, u, keepdim=True)


POINTS = {"sphere": (Sphere(2), sphere_points), "lorentz": (Lorentz(2), hyper_points)}


# --- agreement with geoopt (float64, generic points; tolerance 1e-9 relative to the magnitudes) -----------------


def test_sphere_matches_geoopt():
    geoopt = pytest.importorskip("geoopt")
    gs, s = geoopt.Sphere(), Sphere(2)
    x, y = sphere_points(500, 0), sphere_points(500, 1)
    u = 2.0 * unit_tangent(s, x)
    torch.testing.assert_close(s.dist(x, y), gs.dist(x, y), rtol=0, atol=1e-12)
    torch.testing.assert_close(s.log(x, y), gs.logmap(x, y), rtol=0, atol=1e-11)
    torch.testing.assert_close(s.exp(x, u), gs.expmap(x, u), rtol=0, atol=1e-13)


def test_lorentz_matches_geoopt():
    geoopt = pytest.importorskip("geoopt")
    gl, h = geoopt.Lorentz(), Lorentz(2)
    x, y = hyper_points(500, 0, 0.8), hyper_points(500, 1, 0.8)
    u = 1.5 * unit_tangent(h, x)
    torch.testing.assert_close(h.dist(x, y), gl.dist(x, y), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(h.log(x, y), gl.logmap(x, y), rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(h.exp(x, u), gl.expmap(x, u), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(h.transport(x, y, u), gl.transp(x, y, u), rtol=1e-9, atol=1e-10)


# --- identities on random points ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_exp_and_log_are_inverses(name):
    manifold, points = POINTS[name]
    x, y = points(400, 0), points(400, 1)
    # log then exp returns y (tolerance: ambient coordinates on H² reach ~250 here, and so does the conditioning;
    # geoopt's own round trip errs by the same ~3e-9)
    torch.testing.assert_close(manifold.exp(x, manifold.log(x, y)), y, rtol=1e-8, atol=1e-8)
    # exp then log returns u, for |u| below the injectivity radius (π on the sphere)
    u = 2.5 * unit_tangent(manifold, x) * torch.rand(400, 1, generator=torch.Generator().manual_seed(3), dtype=F64)
    torch.testing.assert_close(manifold.log(x, manifold.exp(x, u)), u, rtol=1e-9, atol=1e-10)
    # |log_x y| = d(x, y)
    torch.testing.assert_close(manifold.norm(x, manifold.log(x, y)), manifold.dist(x, y), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_distance_is_a_metric(name):
    manifold, points = POINTS[name]
    x, y, z = points(1000, 0), points(1000, 1), points(1000, 2)
    torch.testing.assert_close(manifold.dist(x, y), manifold.dist(y, x), rtol=0, atol=1e-12)
    assert (manifold.dist(x, z) <= manifold.dist(x, y) + manifold.dist(y, z) + 1e-12).all()
    assert manifold.dist(x, x).abs().max() < 1e-9
    assert (manifold.dist(x, y) > 0).all()


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_geodesic_interpolant_stays_on_manifold_with_constant_speed(name):
    manifold, points = POINTS[name]
    x0, x1 = points(300, 0), points(300, 1)
    for t in (0.0, 0.1, 0.5, 0.9, 1.0):
        xt = manifold.geodesic(x0, x1, torch.full((300, 1), t, dtype=F64))
        assert manifold.distance_to_manifold(xt).max() < 1e-12
        # a minimising geodesic: d(x0, x_t) = t d(x0, x1) and d(x_t, x1) = (1 - t) d(x0, x1)
        d = manifold.dist(x0, x1)
        # (tolerance 1e-8: ambient coordinates on H² reach ~250 for these points)
        torch.testing.assert_close(manifold.dist(x0, xt), t * d, rtol=1e-8, atol=1e-8)
        torch.testing.assert_close(manifold.dist(xt, x1), (1 - t) * d, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_geodesic_velocity_equals_log_over_remaining_time_and_is_finite_at_one(name):
    manifold, points = POINTS[name]
    x0, x1 = points(200, 0), points(200, 1)
    t = torch.full((200, 1), 0.3, dtype=F64)
    xt = manifold.geodesic(x0, x1, t)
    torch.testing.assert_close(
        manifold.geodesic_velocity(x0, x1, t), manifold.log(xt, x1) / (1 - t), rtol=1e-8, atol=1e-9
    )
    # at t = 1 the velocity is the reversed log at the endpoint (log/(1 - t) would be 0/0)
    one = torch.ones(200, 1, dtype=F64)
    torch.testing.assert_close(manifold.geodesic_velocity(x0, x1, one), -manifold.log(x1, x0), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_parallel_transport_is_an_isometry_into_the_target_tangent_space(name):
    manifold, points = POINTS[name]
    x, y = points(300, 0), points(300, 1)
    u, v = unit_tangent(manifold, x, 4), 0.7 * unit_tangent(manifold, x, 5)
    pu, pv = manifold.transport(x, y, u), manifold.transport(x, y, v)
    # tangent at y: <y, Γv> = 0 (Euclidean on S², Minkowski on H²)
    torch.testing.assert_close(manifold.inner(y, y, pu), torch.zeros(300, dtype=F64), rtol=0, atol=1e-10)
    torch.testing.assert_close(manifold.inner(y, pu, pv), manifold.inner(x, u, v), rtol=1e-9, atol=1e-10)
    # the geodesic's own direction: Γ_{x→y}(log_x y) = -log_y x
    torch.testing.assert_close(manifold.transport(x, y, manifold.log(x, y)), -manifold.log(y, x), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_chart_round_trip(name):
    manifold, _ = POINTS[name]
    c = torch.rand(100, 2, generator=torch.Generator().manual_seed(0), dtype=F64) * 2 - 1
    torch.testing.assert_close(manifold.to_chart(manifold.from_chart(c)), c, rtol=0, atol=1e-12)
    # normal coordinates: the distance to the base point is the Euclidean norm of the coordinates
    o = manifold.base_point(dtype=F64)
    torch.testing.assert_close(manifold.dist(o.expand(100, -1), manifold.from_chart(c)), c.norm(dim=-1))


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_wrapped_normal_has_the_right_tangent_moments_at_its_mean(name):
    manifold, points = POINTS[name]
    mean = points(1, 7)[0]
    x = manifold.wrapped_normal(40_000, mean=mean, scale=0.3, generator=torch.Generator().manual_seed(1), dtype=F64)
    v = manifold.log(mean.expand_as(x), x)
    # E log_μ x = 0 and E |log_μ x|² = n σ² = 2 × 0.09; standard errors ~0.0015 and ~0.0013
    assert v.mean(0).abs().max() < 0.01
    assert abs(manifold.inner(mean, v, v).mean() - 0.18) < 0.006


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_perturb_is_isotropic_tangent_noise_of_scale_sigma(name):
    manifold, points = POINTS[name]
    x = points(1, 3).expand(40_000, -1)
    y = manifold.perturb(x, scale=0.1, generator=torch.Generator().manual_seed(2))
    assert manifold.distance_to_manifold(y).max() < 1e-12
    v = manifold.log(x, y)
    # log_x x̃ = σ P_x ε exactly (|σ P_x ε| < π): mean 0 and E|v|² = n σ² = 2 × 0.01; s.e. ~5e-4 and ~1e-4
    assert v.mean(0).abs().max() < 3e-3
    assert abs(manifold.inner(x, v, v).mean() - 0.02) < 6e-4
    assert manifold.perturb(x, scale=0.0) is x


def test_poincare_map_preserves_distances():
    h = Lorentz(2)
    x, y = hyper_points(200, 0), hyper_points(200, 1)
    p, q = Lorentz.to_poincare(x), Lorentz.to_poincare(y)
    assert (p.norm(dim=-1) < 1).all()
    # Poincaré-ball distance acosh(1 + 2|p - q|² / ((1 - |p|²)(1 - |q|²)))
    ball = torch.acosh(1 + 2 * ((p - q) ** 2).sum(-1) / ((1 - (p**2).sum(-1)) * (1 - (q**2).sum(-1))))
    torch.testing.assert_close(h.dist(x, y), ball, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(Lorentz.to_poincare(h.base_point(dtype=F64)), torch.zeros(2, dtype=F64))


def test_euclidean_is_flat():
    e = Euclidean(3)
    x, y = torch.randn(10, 3, dtype=F64), torch.randn(10, 3, dtype=F64)
    torch.testing.assert_close(e.exp(x, e.log(x, y)), y)
    torch.testing.assert_close(e.dist(x, y), (x - y).norm(dim=-1))
    torch.testing.assert_close(e.transport(x, y, y - x), y - x)


# --- numerical edge cases ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sphere_log_at_antipodal_points_is_a_minimising_direction(dtype):
    s = Sphere(2)
    x = s.proj(torch.randn(50, 3, generator=torch.Generator().manual_seed(0), dtype=dtype))
    u = s.log(x, -x)
    assert torch.isfinite(u).all()
    torch.testing.assert_close(u.norm(dim=-1), torch.full((50,), math.pi, dtype=dtype))
    assert (x * u).sum(-1).abs().max() < 1e-5  # tangent at x
    torch.testing.assert_close(s.exp(x, u), -x, rtol=0, atol=1e-5)
    # nearly antipodal: still finite, still of length ≈ π and leading to y
    y = s.proj(-x + 1e-6 * torch.randn(50, 3, generator=torch.Generator().manual_seed(1), dtype=dtype))
    v = s.log(x, y)
    assert torch.isfinite(v).all()
    torch.testing.assert_close(s.exp(x, v), y, rtol=0, atol=1e-5)


def test_sphere_small_distances_are_accurate_in_float32():
    s = Sphere(2)
    o = s.base_point()
    for angle in (1e-3, 1e-4, 1e-5):
        y = s.exp(o, torch.tensor([angle, 0.0, 0.0]))
        # acos(o·y) would give 0 or ~3e-4 here; the chordal form keeps ~1e-7 relative accuracy
        assert abs(float(s.dist(o, y)) - angle) < 1e-3 * angle
        # the log is tangent at o (no rounding-level normal component) and has the right length
        torch.testing.assert_close(s.log(o, y), torch.tensor([angle, 0.0, 0.0]), rtol=1e-3, atol=1e-12)


def test_lorentz_small_distances_are_accurate_in_float32():
    h = Lorentz(2)
    o = h.base_point()
    for r in (1e-3, 1e-4, 1e-5):
        y = h.exp(o, torch.tensor([0.0, r, 0.0]))
        assert abs(float(h.dist(o, y)) - r) < 1e-3 * r  # acosh(1 + r²/2) gives 0 or 3e-4 in float32


def test_lorentz_far_points_and_huge_tangents_stay_finite():
    h = Lorentz(2)
    o = h.base_point(dtype=F64)
    # points 15 units from the origin (x_0 ≈ 1.6e6, near the boundary of the Poincaré disk)
    far = h.exp(o.expand(20, -1), 15.0 * unit_tangent(h, o.expand(20, -1), 2))
    torch.testing.assert_close(h.dist(o.expand(20, -1), far), torch.full((20,), 15.0, dtype=F64), rtol=1e-9, atol=0)
    back = h.log(far, o.expand(20, -1))
    # Minkowski norms of tangent vectors at x_0 ~ 1e6 cancel terms of size ~x_0⁴ ~ 1e25 (the Lorentz model's
    # conditioning), so only ~1e-3 relative accuracy is possible here; the round trip must still be finite and close
    assert torch.isfinite(back).all()
    torch.testing.assert_close(h.norm(far, back), torch.full((20,), 15.0, dtype=F64), rtol=1e-3, atol=0)
    assert (Lorentz.to_poincare(far).norm(dim=-1) < 1).all()
    # a huge tangent vector is clamped below the overflow of cosh instead of producing inf/NaN
    huge = h.exp(h.base_point(), torch.tensor([0.0, 1e4, 0.0]))
    assert torch.isfinite(huge).all()


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_squared_distance_gradient_is_finite_at_coincident_points(name):
    manifold, points = POINTS[name]
    x = points(5, 0).requires_grad_(True)
    (grad,) = torch.autograd.grad(manifold.dist(x, x.detach()).pow(2).sum(), x)
    assert torch.isfinite(grad).all() and grad.abs().max() < 1e-6


def test_shape_errors_name_the_argument():
    s = Sphere(2)
    with pytest.raises(ValueError, match="x0 must have last axis of size 3"):
        s.check(torch.zeros(4, 2), "x0")
    with pytest.raises(ValueError, match="coords must have last axis of size 2"):
        s.from_chart(torch.zeros(4, 3))
    with pytest.raises(ValueError, match="dim must be a positive integer"):
        Lorentz(0)
    with pytest.raises(ValueError, match="scale must be positive"):
        s.wrapped_normal(3, scale=0.0)
    with pytest.raises(ValueError, match="scale must be >= 0"):
        s.perturb(s.base_point().expand(2, -1), scale=-0.1)


# --- points off the manifold are refused, with a tolerance keyed by dtype -------------------------------------------


def test_point_tolerance_is_sqrt_eps_of_the_dtype():
    assert point_tolerance(torch.float64) == math.sqrt(2.0**-52)  # 1.49e-8
    assert point_tolerance(torch.float32) == math.sqrt(2.0**-23)  # 3.45e-4


def test_sphere_check_tests_the_norm_not_only_the_last_coordinate():
    s = Sphere(2)
    x = sphere_points(4)
    assert s.check(x, "x") is x
    # 1.001 x: ||x|² - 1| = 2.001e-3, beyond the tolerance in both dtypes; the message counts and names the fix
    for dtype in (F64, torch.float32):
        with pytest.raises(
            ValueError, match=r"x must lie on S2 \(\|x\| = 1\): 1 of 4 points violate it by up to 0.002"
        ):
            s.check(torch.cat([x[:3], 1.001 * x[3:]]).to(dtype), "x")
    # (1 + 1e-5) x: ||x|² - 1| = 2e-5, within float32's 3.45e-4 but not float64's 1.49e-8
    nudged = (1 + 1e-5) * x
    s.check(nudged.float(), "x")
    with pytest.raises(ValueError, match="beyond the torch.float64 tolerance 1.5e-08; map ambient points onto"):
        s.check(nudged, "x")
    # the old check looked only at the last axis: (1, 1, 0) has the right shape but is off S²
    with pytest.raises(ValueError, match="x must lie on S2"):
        s.check(torch.tensor([1.0, 1.0, 0.0]), "x")


def test_lorentz_check_tests_the_minkowski_norm_and_the_upper_sheet():
    h = Lorentz(2)
    h.check(hyper_points(10), "x")
    # <x, x>_L = -1 + 1 = 0 for (1, 1, 0): relative violation |0 + 1| / (2 + 1) = 1/3
    with pytest.raises(
        ValueError, match=r"x must lie on H2 \(<x, x>_L = -1 and x_0 > 0\): 1 of 1 points violate it by up to 0.333"
    ):
        h.check(torch.tensor([1.0, 1.0, 0.0]), "x")
    # the lower sheet satisfies <x, x>_L = -1 but not x_0 > 0
    with pytest.raises(ValueError, match="violate it by up to inf"):
        h.check(-hyper_points(3), "x")
    # far out, rounding leaves an absolute error ~eps x_0² in <x, x>_L: the relative measure accepts such points
    # first row: x_0 = x_1 = 1e20 in float32, <x, x>_L = 0 exactly, relative violation 1/(2e40 + 1); its squares
    # overflow float32, so the check rescales it
    far32 = torch.cat([torch.tensor([[1e20, 1e20, 0.0]]), h.proj(torch.tensor([[0.0, 3e4, 4e4]]))])
    assert h.check(far32, "x") is far32
    with pytest.raises(ValueError, match="must lie on H2"):  # while a 1 % error in x_0 at that distance is refused
        h.check(far32 * torch.tensor([1.01, 1.0, 1.0]), "x")


@pytest.mark.parametrize("name", ["sphere", "lorentz"])
def test_every_map_refuses_points_off_the_manifold_naming_the_argument(name):
    manifold, points = POINTS[name]
    x, y = points(4, 0), points(4, 1)
    u = unit_tangent(manifold, x)
    off = x * torch.tensor([1.0, 1.0, 1.1], dtype=F64)  # the last coordinate 10 % off: not a point of either
    t = torch.full((4, 1), 0.5, dtype=F64)
    calls = {
        "x": [
            lambda: manifold.exp(off, u),
            lambda: manifold.log(off, y),
            lambda: manifold.dist(off, y),
            lambda: manifold.transport(off, y, u),
            lambda: manifold.proj_tangent(off, u),
            lambda: manifold.output_to_tangent(off, u),
            lambda: manifold.perturb(off, scale=0.1),
            lambda: manifold.to_chart(off),
        ],
        "y": [lambda: manifold.log(x, off), lambda: manifold.dist(x, off), lambda: manifold.transport(x, off, u)],
        "x0": [lambda: manifold.geodesic(off, y, t), lambda: manifold.geodesic_velocity(off, y, t)],
        "x1": [lambda: manifold.geodesic(x, off, t), lambda: manifold.geodesic_velocity(x, off, t)],
        "mean": [lambda: manifold.wrapped_normal(3, mean=off[0], dtype=F64)],
    }
    for arg, fns in calls.items():
        for fn in fns:
            with pytest.raises(ValueError, match=f"^{arg} must lie on {manifold.name}"):
                fn()
    # NaN and inf coordinates are named as such
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match=f"x must be finite points of {manifold.name}, got NaN or inf"):
            manifold.exp(torch.cat([x[:3], torch.full((1, 3), bad, dtype=F64)]), u)
    # proj takes any ambient point (that is its job), and its result passes every check
    assert manifold.check(manifold.proj(off), "x") is not None


def test_euclidean_points_must_be_finite():
    e = Euclidean(3)
    e.check(torch.randn(5, 3) * 1e30, "x")  # every finite point lies on Rⁿ
    with pytest.raises(ValueError, match="x0 must be finite points of R3, got NaN or inf"):
        e.geodesic(torch.tensor([[0.0, math.nan, 0.0]]), torch.zeros(1, 3), torch.ones(1, 1))
