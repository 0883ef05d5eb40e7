"""Flows, integrators and training: the five models' objectives, sampling, and numerical edge cases."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.rgvfm.flows import FLOW_SPECS, EndpointFlow, VelocityFlow, build_flow
from iclr26.rgvfm.integrators import integrate
from iclr26.rgvfm.manifolds import Euclidean, Lorentz, Sphere
from iclr26.rgvfm.model import TimeMLP
from iclr26.rgvfm.training import make_prior, train_flow

F64 = torch.float64


def batch(manifold, n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x0 = manifold.wrapped_normal(n, scale=1.0, generator=g, dtype=F64)
    x1 = manifold.wrapped_normal(n, scale=0.5, generator=g, dtype=F64)
    return x0, x1, torch.rand(n, 1, generator=g, dtype=F64)


def net(seed=0):
    torch.manual_seed(seed)
    return TimeMLP(3, hidden_dim=16).double()


@pytest.mark.parametrize(
    ("key", "path", "endpoint"),
    [
        ("cfm", "R3", None),
        ("vfm", "R3", "R3"),
        ("rgvfm_ambient", "R3", "S2"),
        ("rfm", "S2", None),
        ("rgvfm", "S2", "S2"),
    ],
)
def test_build_flow_wires_the_five_models(key, path, endpoint):
    flow = build_flow(key, Sphere(2), net(), noise_scale=0.1)
    assert flow.path.name == path
    assert isinstance(flow, EndpointFlow if FLOW_SPECS[key].predicts == "endpoint" else VelocityFlow)
    if endpoint is not None:
        assert flow.endpoint_manifold.name == endpoint


def test_training_loss_rejects_mismatched_batches():
    flow = build_flow("rgvfm", Sphere(2), net())
    x0, x1, t = batch(Sphere(2))
    with pytest.raises(ValueError, match=r"x0 and x1 must both be \(B, D\) batches, got \(32, 3\) and \(31, 3\)"):
        flow.training_loss(x0, x1[:31], t)
    with pytest.raises(ValueError, match=r"t must have shape \(B, 1\) = \(32, 1\), got \(32,\)"):
        flow.training_loss(x0, x1, t[:, 0])


def test_build_flow_rejects_unknown_model():
    with pytest.raises(ValueError, match="unknown model 'fm'; choose one of cfm, vfm"):
        build_flow("fm", Sphere(2), net())


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2)])
def test_rgvfm_loss_is_the_geodesic_endpoint_error(manifold):
    network = net()
    x0, x1, t = batch(manifold)
    flow = build_flow("rgvfm", manifold, network, noise_scale=0.0)  # no input noise: the bare objective
    xt = manifold.geodesic(x0, x1, t)
    mu = manifold.proj(network(manifold.encode(xt), t))
    expected = manifold.dist(mu, x1).pow(2).mean()
    torch.testing.assert_close(flow.training_loss(x0, x1, t), expected)


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2)])
def test_rfm_loss_is_the_tangent_velocity_error(manifold):
    network = net()
    x0, x1, t = batch(manifold)
    flow = build_flow("rfm", manifold, network, noise_scale=0.0)  # no input noise: the bare objective
    xt = manifold.geodesic(x0, x1, t)
    v = manifold.output_to_tangent(xt, network(manifold.encode(xt), t))
    u = manifold.log(xt, x1) / (1 - t)
    diff = v - u
    torch.testing.assert_close(flow.training_loss(x0, x1, t), manifold.inner(xt, diff, diff).mean())


def test_hyperboloid_velocity_head_is_an_isometric_tangent_map():
    h = Lorentz(2)
    x = h.wrapped_normal(50, scale=2.0, generator=torch.Generator().manual_seed(0), dtype=F64)
    f = torch.randn(50, 3, generator=torch.Generator().manual_seed(1), dtype=F64)
    v = h.output_to_tangent(x, f)
    torch.testing.assert_close(h.inner(x, x, v), torch.zeros(50, dtype=F64), rtol=0, atol=1e-9)
    # |v|_L = |f_{1:}| whatever the distance of x from the origin (the projection P_x f grows with |x|²)
    torch.testing.assert_close(h.norm(x, v), f[:, 1:].norm(dim=-1), rtol=1e-8, atol=1e-10)
    # on the sphere the head is the (non-expansive) projection
    s = Sphere(2)
    y = s.random_uniform(50, generator=torch.Generator().manual_seed(2), dtype=F64)
    torch.testing.assert_close(s.output_to_tangent(y, f), s.proj_tangent(y, f))


def test_hyperboloid_encoding_is_bounded_and_injective():
    h = Lorentz(2)
    x = h.wrapped_normal(200, scale=3.0, generator=torch.Generator().manual_seed(0), dtype=F64)
    e = h.encode(x)
    # (1/x_0, x_{1:}/x_0) lies on the unit sphere, and x is recovered as (1, e_{1:})/e_0
    torch.testing.assert_close(e.norm(dim=-1), torch.ones(200, dtype=F64))
    torch.testing.assert_close(torch.cat([torch.ones(200, 1, dtype=F64), e[:, 1:]], -1) / e[:, :1], x)
    assert torch.equal(Sphere(2).encode(e), e)


def test_velocity_sampling_on_the_hyperboloid_stays_bounded_for_a_growing_network():
    """A network whose output grows with its input cannot make a sample run off to infinity: it sees the
    bounded encoding, so |v| ≤ 5 and sampling to t = 0.99 moves at most 4.95 units. Fed raw ambient
    coordinates, the same network's velocity grows like e^distance and the sample overflows (and is refused)."""

    class RawLorentz(Lorentz):
        def encode(self, x):
            return x

    h = Lorentz(2)
    x0 = h.wrapped_normal(64, generator=torch.Generator().manual_seed(0), dtype=F64)
    x = VelocityFlow(lambda x, t: 5 * x, path=h).sample(x0, steps=100, t_end=0.99)
    assert torch.isfinite(x).all()
    assert (h.dist(x0, x) <= 4.95 + 1e-6).all()
    # fed raw coordinates the sample overflows, and the next map refuses the non-finite point instead of going on
    with pytest.raises(ValueError, match="x must be finite points of H2, got NaN or inf"):
        VelocityFlow(lambda x, t: 5 * x, path=RawLorentz(2)).sample(x0, steps=100, t_end=0.99)


def test_extrinsic_models_follow_straight_lines_in_ambient_space():
    network = net()
    s = Sphere(2)
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(16, 3, generator=g, dtype=F64)
    x1 = s.random_uniform(16, generator=g, dtype=F64)
    t = torch.rand(16, 1, generator=g, dtype=F64)
    xt = (1 - t) * x0 + t * x1
    out = network(xt, t)
    # CFM: |f - (x1 - x0)|²; VFM: |f - x1|²; RG-VFM-R³: d_S²(f/|f|, x1)²
    torch.testing.assert_close(
        build_flow("cfm", s, network, noise_scale=0.0).training_loss(x0, x1, t), ((out - (x1 - x0)) ** 2).sum(-1).mean()
    )
    torch.testing.assert_close(
        build_flow("vfm", s, network, noise_scale=0.0).training_loss(x0, x1, t), ((out - x1) ** 2).sum(-1).mean()
    )
    torch.testing.assert_close(
        build_flow("rgvfm_ambient", s, network, noise_scale=0.0).training_loss(x0, x1, t),
        s.dist(s.proj(out), x1).pow(2).mean(),
    )


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2), Euclidean(3)])
def test_euler_with_an_oracle_endpoint_reaches_one_percent_of_the_distance(manifold):
    """With μ ≡ p, Euler step k multiplies the distance to p by (1 - t_{k+1})/(1 - t_k): after 100 steps to
    t = 0.99 the remaining distance is exactly (1 - 0.99) d(x0, p) (the product telescopes)."""
    p = manifold.base_point(dtype=F64)
    x0 = batch(manifold, 10)[1] if manifold.dim == 2 else torch.randn(10, 3, dtype=F64)
    flow = EndpointFlow(lambda x, t: p.expand_as(x), path=manifold, time_clip=None)  # the unclipped log/(1 - t)
    x = flow.sample(x0, steps=100, t_end=0.99)
    torch.testing.assert_close(manifold.dist(x, p.expand_as(x)), 0.01 * manifold.dist(x0, p.expand_as(x0)))


def test_velocity_flow_samples_with_the_same_integrator():
    """A velocity oracle v = log_x(p)/(1 - t) gives the same trajectory as the endpoint oracle p."""
    s = Sphere(2)
    p = s.base_point(dtype=F64)
    x0 = batch(s, 10)[0]
    oracle = VelocityFlow(lambda x, t: s.log(x, p.expand_as(x)) / (1 - t), path=s)
    endpoint = EndpointFlow(lambda x, t: p.expand_as(x), path=s, time_clip=None)
    torch.testing.assert_close(oracle.sample(x0, steps=20), endpoint.sample(x0, steps=20))
    # and its implied endpoint is p
    t = torch.full((10, 1), 0.3, dtype=F64)
    torch.testing.assert_close(oracle.endpoint(x0, t), p.expand_as(x0))


def test_antipodal_pairs_and_t_near_one_give_finite_losses_and_gradients():
    s = Sphere(2)
    g = torch.Generator().manual_seed(5)
    x1 = s.random_uniform(8, generator=g)
    x0 = -x1  # every pair antipodal: the geodesic is not unique
    t = torch.tensor([[0.0], [0.5], [0.999], [1 - 1e-7], [0.25], [0.75], [0.1], [0.9]])
    for key in ("rfm", "rgvfm"):
        network = TimeMLP(3, hidden_dim=8)
        loss = build_flow(key, s, network, noise_scale=0.1).training_loss(x0, x1, t, generator=g)
        loss.backward()
        assert torch.isfinite(loss)
        assert all(torch.isfinite(p.grad).all() for p in network.parameters())


def test_training_lowers_the_loss_and_is_deterministic():
    s = Sphere(2)
    data = s.wrapped_normal(500, scale=0.3, generator=torch.Generator().manual_seed(0))
    prior = make_prior(s, intrinsic=True)

    def train(seed):
        torch.manual_seed(seed)
        network = TimeMLP(3, hidden_dim=32)
        flow = build_flow("rgvfm", s, network, noise_scale=0.1)
        return train_flow(
            flow,
            network.parameters(),
            data,
            prior,
            steps=60,
            batch_size=64,
            lr=1e-2,
            generator=torch.Generator().manual_seed(seed),
        )

    first, again = train(1), train(1)
    assert first.loss_trace == again.loss_trace
    assert first.loss_trace[-1] < 0.5 * first.loss_trace[0]


def test_training_rejects_a_generator_on_another_device():
    """Every training draw is made on the generator's device, so it must be the data's (here: meta vs CPU)."""
    s = Sphere(2)
    network = TimeMLP(3, hidden_dim=8)
    data = torch.empty(10, 3, device="meta")
    with pytest.raises(ValueError, match="generator is on cpu but data on meta"):
        train_flow(
            build_flow("rgvfm", s, network),
            network.parameters(),
            data,
            make_prior(s, intrinsic=True),
            steps=1,
            batch_size=4,
            lr=1e-3,
            generator=torch.Generator(),
        )


def test_priors():
    s, h = Sphere(2), Lorentz(2)
    g = torch.Generator().manual_seed(0)
    # extrinsic source on the hyperboloid is centred at its origin (1, 0, 0) (official code)
    x = make_prior(h, intrinsic=False)(20_000, g)
    assert (x.mean(0) - torch.tensor([1.0, 0.0, 0.0])).abs().max() < 0.05
    assert s.distance_to_manifold(make_prior(s, intrinsic=True, kind="uniform")(100, g)).max() < 1e-6
    with pytest.raises(ValueError, match="uniform source exists only on the sphere"):
        make_prior(h, intrinsic=True, kind="uniform")
    with pytest.raises(ValueError, match="for intrinsic models only"):
        make_prior(s, intrinsic=False, kind="uniform")
    with pytest.raises(ValueError, match="kind must be 'wrapped_normal' or 'uniform', got 'gaussian'"):
        make_prior(s, intrinsic=True, kind="gaussian")
    with pytest.raises(ValueError, match="scale must be positive"):
        make_prior(s, intrinsic=True, scale=0.0)


# --- integrators ------------------------------------------------------------------------------------------------


def rotation_field(x, t):
    """v(x) = ω × x with ω = (0, 0, 2π): one full turn about the z axis per unit time."""
    omega = torch.tensor([0.0, 0.0, 2 * math.pi], dtype=x.dtype).expand_as(x)
    return torch.cross(omega, x, dim=-1)


def rotated(x, angle):
    c, s = math.cos(angle), math.sin(angle)
    rot = torch.tensor([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], dtype=x.dtype)
    return x @ rot.T


def test_rk4_on_the_sphere_is_fourth_order_and_euler_first_order():
    s = Sphere(2)
    x0 = s.random_uniform(20, generator=torch.Generator().manual_seed(0), dtype=F64)
    exact = rotated(x0, 2 * math.pi * 0.5)

    def err(method, steps):
        x = integrate(rotation_field, x0, s, steps=steps, t_end=0.5, method=method)
        assert s.distance_to_manifold(x).max() < 1e-12
        return float((x - exact).norm(dim=-1).max())

    # halving h divides the error by ~2 (Euler) and by ~16 (RK4)
    assert 1.7 < err("euler", 50) / err("euler", 100) < 2.3
    assert 12 < err("rk4", 50) / err("rk4", 100) < 20
    assert err("rk4", 100) < 1e-6


def test_rk4_on_the_hyperboloid_follows_a_boost():
    """v(x) = B x with B the boost generator in the (x_0, x_1) plane: x(t) = (I + sinh t B + (cosh t - 1) B²) x0."""
    h = Lorentz(2)
    boost = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64)
    x0 = h.wrapped_normal(10, scale=0.5, generator=torch.Generator().manual_seed(0), dtype=F64)
    x = integrate(lambda x, t: x @ boost.T, x0, h, steps=40, t_end=1.0, method="rk4")
    flow_map = torch.eye(3, dtype=F64) + math.sinh(1.0) * boost + (math.cosh(1.0) - 1) * boost @ boost
    torch.testing.assert_close(x, x0 @ flow_map.T, rtol=1e-6, atol=1e-7)


def test_rk4_on_flat_space_is_classical_rk4():
    # x' = -x from x0 = 1 over [0, 1] with h = 0.1: classical RK4 multiplies by (1 - h + h²/2 - h³/6 + h⁴/24) per step
    x = integrate(lambda x, t: -x, torch.ones(1, 1, dtype=F64), Euclidean(1), steps=10, method="rk4")
    h = 0.1
    torch.testing.assert_close(x, torch.full((1, 1), (1 - h + h**2 / 2 - h**3 / 6 + h**4 / 24) ** 10, dtype=F64))


def test_integrator_argument_errors():
    s = Sphere(2)
    x0 = s.base_point().expand(2, -1)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        integrate(rotation_field, x0, s, steps=0)
    with pytest.raises(ValueError, match="t_end must lie in"):
        integrate(rotation_field, x0, s, steps=2, t_end=1.5)
    with pytest.raises(ValueError, match="method must be one of"):
        integrate(rotation_field, x0, s, steps=2, method="heun")
    with pytest.raises(ValueError, match="x0 must have last axis of size 3"):
        integrate(rotation_field, torch.zeros(2, 2), s, steps=2)
