"""The zeroth-order diffusive proximal sampler (Algorithm 1): invariances, costs, interaction, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.zoprox.estimator import sigma2_schedule
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.sampler import backward_step, sample

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def gauss(mu: torch.Tensor, s2: float):
    return lambda x: (x - mu).square().sum(-1) / (2 * s2)


def test_gaussian_target_keeps_its_moments_over_many_iterations():
    # Start at exact samples of N(mu, 0.5 I) in d = 2 and run 20 iterations: the particles pooled over the last 15
    # iterations keep mean mu and variance 0.5. Tolerances: the pooled mean of 3000 correlated draws has a standard
    # error of about 0.03; finite N, M and T bias the variance by a few percent (15% allowed).
    mu = torch.tensor([1.0, -2.0], dtype=F64)
    x0 = mu + math.sqrt(0.5) * torch.randn(200, 2, dtype=F64, generator=gen(0))
    out = sample(gauss(mu, 0.5), x0, 20, 0.5, 64, generator=gen(1))
    pooled = out.snapshots[6:].reshape(-1, 2)
    torch.testing.assert_close(pooled.mean(0), mu, rtol=0, atol=0.12)
    torch.testing.assert_close(pooled.var(0), torch.full((2,), 0.5, dtype=F64), rtol=0.15, atol=0)


@pytest.mark.parametrize("interacting", [True, False], ids=["interacting", "N=1 ablation"])
def test_backward_step_matches_its_closed_form_for_a_flat_potential(interacting):
    # f = 0 and every forward sample at the same y*: every posterior component of Eq. (13) is the same Gaussian, so
    # the interacting step and the N = 1 ablation have the same law, and the whole step is linear-Gaussian.
    # Per coordinate, with c_l = 1/M (f = 0) and x0_l = m(z) + sbar_t zeta_l, m(z) - z = s_t^2 (y* - z) / (h + s_t^2):
    #   score_t = (y* - z) / (h + s_t^2) + (sbar_t / s_t^2) zeta_bar,   zeta_bar ~ N(0, 1/M)
    #   z <- a_t z + (1 - a_t) y* + D_t (sbar_t / s_t^2) zeta_bar + sqrt(D_t) eps,   a_t = 1 - D_t / (h + s_t^2)
    # with D_t = s_t^2 - s_{t-1}^2. From z_T = c + sqrt(h) xi' (fresh noise around the particle c):
    #   E z_0 = A c + (1 - A) y*,  Var z_0 = A^2 h + W,  A = prod_t a_t,
    #   W <- a_t^2 W + D_t + D_t^2 sbar_t^2 / (s_t^4 M)   (t = T, ..., 1, from W = 0).
    # With h = 1, T = 2, s^2 = (0.05, 0.525, 1), M = 2: A = 0.7625 * 0.6885 = 0.525, E z_0 = -0.2125 for c = 0.5,
    # y* = -1, and Var z_0 = 1.143 (the Monte Carlo noise of the score contributes 0.168 of it).
    h, n_mc, n, d = 1.0, 2, 400, 50  # the coordinates are independent: 20000 draws of z_0 per check
    c, y_star = 0.5, -1.0
    schedule = sigma2_schedule(h, 2, 0.05)
    a_prod, w = 1.0, 0.0
    for t in (2, 1):
        s2, dt = float(schedule[t]), float(schedule[t] - schedule[t - 1])
        a = 1 - dt / (h + s2)
        a_prod, w = a * a_prod, a * a * w + dt + dt**2 * (1 / (1 / h + 1 / s2)) / (s2**2 * n_mc)
    mean, var = a_prod * c + (1 - a_prod) * y_star, a_prod**2 * h + w
    assert mean == pytest.approx(-0.2125, abs=1e-12) and var == pytest.approx(1.143, abs=1e-3)
    oracle = PotentialOracle(lambda x: torch.zeros(x.shape[0], dtype=x.dtype))
    x = torch.full((n, d), c, dtype=F64)
    y = torch.full((n, d), y_star, dtype=F64)
    out = backward_step(
        oracle, x, y, step_size=h, schedule=schedule, n_mc=n_mc, interacting=interacting, generator=gen(30)
    )
    # standard errors over 20000 draws: sqrt(1.143 / 2e4) = 0.0076 for the mean, 1.143 sqrt(2 / 2e4) = 0.011 for the
    # variance; tolerances are 4 standard errors (a 10% error in the Euler-Maruyama noise moves Var by 0.1)
    assert abs(out.x.mean().item() - mean) < 0.03
    assert abs(out.x.var().item() - var) < 0.045
    # flat potential: the self-normalised weights are uniform, ESS = M exactly at each of the T sub-steps
    torch.testing.assert_close(out.ess, torch.full((2, n), float(n_mc), dtype=F64))
    assert oracle.n_evals == 2 * n * n_mc and oracle.n_rounds == 2


def test_converges_from_a_far_start():
    # From N(5, 1) to N(0, 1) in d = 1: after 25 iterations with h = 1 the mean is near 0 and the variance near 1.
    x0 = 5.0 + torch.randn(300, 1, dtype=F64, generator=gen(2))
    out = sample(lambda x: 0.5 * x.square().sum(-1), x0, 25, 1.0, 32, generator=gen(3))
    assert abs(out.samples.mean().item()) < 0.25
    assert abs(out.samples.var().item() - 1.0) < 0.3


def test_translation_equivariance_is_exact():
    # Shifting the target by c and the start by c shifts every draw by c (the same random numbers are used).
    c = torch.tensor([3.0, -1.5], dtype=F64)
    x0 = torch.randn(20, 2, dtype=F64, generator=gen(4))
    f = lambda x: 0.5 * x.square().sum(-1) + 0.1 * x[:, 0] ** 4  # noqa: E731
    a = sample(f, x0, 3, 0.3, 16, generator=gen(5))
    b = sample(lambda x: f(x - c), x0 + c, 3, 0.3, 16, generator=gen(5))
    torch.testing.assert_close(b.samples, a.samples + c, rtol=0, atol=1e-9)


def test_potential_shift_leaves_the_run_unchanged():
    # f + 1e5 has the same target; with log-domain weights the whole run is identical (no underflow to 0/0).
    x0 = torch.randn(10, 2, dtype=F64, generator=gen(6))
    f = lambda x: 0.5 * x.square().sum(-1)  # noqa: E731
    a = sample(f, x0, 3, 0.5, 8, generator=gen(7))
    b = sample(lambda x: f(x) + 1e5, x0, 3, 0.5, 8, generator=gen(7))
    assert torch.isfinite(b.samples).all()
    torch.testing.assert_close(b.samples, a.samples, rtol=0, atol=1e-9)


def test_evaluation_count_is_deterministic():
    # K * T * N * M potential evaluations in K * T batched calls; no gradients.
    oracle = PotentialOracle(lambda x: x.square().sum(-1))
    out = sample(oracle, torch.zeros(7, 3, dtype=F64), 4, 0.2, 5, n_diffusion_steps=6, generator=gen(8), record_every=2)
    assert out.n_evals == oracle.n_evals == 4 * 6 * 7 * 5
    assert out.n_rounds == 4 * 6
    assert out.n_grads == 0
    assert out.snapshot_iters.tolist() == [0, 2, 4]
    assert out.snapshot_evals.tolist() == [0, 2 * 6 * 35, 4 * 6 * 35]
    assert out.snapshots.shape == (3, 7, 3)
    ess = out.diagnostics["ess_mean"]
    assert ess.shape == (4,) and bool(((ess >= 1) & (ess <= 5)).all())


def test_same_seed_same_run_and_different_seed_different_run():
    x0 = torch.randn(8, 2, dtype=F64, generator=gen(9))
    f = lambda x: 0.5 * x.square().sum(-1)  # noqa: E731
    a = sample(f, x0, 2, 0.5, 8, generator=gen(10))
    b = sample(f, x0, 2, 0.5, 8, generator=gen(10))
    c = sample(f, x0, 2, 0.5, 8, generator=gen(11))
    assert torch.equal(a.samples, b.samples)
    assert not torch.allclose(a.samples, c.samples)


def test_interaction_couples_particles_and_the_ablation_does_not():
    # Moving particle 1 changes particle 0's trajectory only when the particles interact (Eq. 9 mixes all y_j).
    x0 = torch.randn(2, 2, dtype=F64, generator=gen(12))
    moved = x0.clone()
    moved[1] += 0.5
    f = lambda x: 0.5 * x.square().sum(-1)  # noqa: E731
    for interacting, coupled in ((True, True), (False, False)):
        a = sample(f, x0, 2, 1.0, 16, interacting=interacting, generator=gen(13))
        b = sample(f, moved, 2, 1.0, 16, interacting=interacting, generator=gen(13))
        assert (not torch.allclose(a.samples[0], b.samples[0], atol=1e-12)) == coupled


def test_numpy_potential_matches_torch_potential():
    x0 = torch.randn(6, 2, dtype=F64, generator=gen(14))
    a = sample(lambda x: 0.5 * (x**2).sum(-1), x0, 2, 0.5, 8, generator=gen(15))
    b = sample(
        PotentialOracle(lambda x: 0.5 * np.sum(x**2, axis=-1), backend="numpy"), x0, 2, 0.5, 8, generator=gen(15)
    )
    torch.testing.assert_close(a.samples, b.samples, rtol=0, atol=1e-12)


def test_float64_by_default_and_progress_is_streamed():
    seen = []

    def progress(steps):
        for k in steps:
            seen.append(k)
            yield k

    out = sample(
        lambda x: x.square().sum(-1),
        torch.zeros(3, 1, dtype=torch.float32),
        3,
        0.5,
        4,
        generator=gen(16),
        progress=progress,
    )
    assert out.samples.dtype == F64
    assert seen == [1, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": -1.0}, "step_size"),
        ({"n_mc": 0}, "n_mc"),
        ({"n_iters": -1}, "n_iters"),
        ({"step_size": float("inf")}, "step_size"),
        ({"n_diffusion_steps": 0}, "n_diffusion_steps"),
        ({"n_diffusion_steps": 2.5}, "n_diffusion_steps"),
        ({"record_every": 0}, "record_every"),
        ({"sigma2_min": 0.5}, "sigma2_min"),
        ({"x0": torch.zeros(3)}, "x0"),
        ({"x0": torch.tensor([[float("nan")]])}, "x0"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, name):
    args = {"x0": torch.zeros(3, 2), "n_iters": 1, "step_size": 0.5, "n_mc": 4} | kwargs
    with pytest.raises(ValueError, match=name):
        sample(lambda x: x.square().sum(-1), **args)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: torch.full((x.shape[0],), float("nan"), dtype=x.dtype), "NaN"),
        (lambda x: torch.where(x[:, 0] > 0, float("inf"), 0.0).to(x.dtype), "infinite"),
        (lambda x: x.square(), "shape"),
    ],
)
def test_bad_potentials_raise_instead_of_returning_nan(fn, message):
    with pytest.raises(ValueError, match=message) as info:
        sample(fn, torch.randn(5, 2, generator=gen(17)), 1, 0.5, 4, generator=gen(18))
    assert str(info.value).startswith("potential:")
