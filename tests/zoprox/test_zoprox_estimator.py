"""The score estimator of the zeroth-order proximal sampler against closed forms (Eqs. 9-13 of the paper)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from iclr26.zoprox.estimator import (
    draw_own_posterior,
    draw_posterior,
    log_inverse_weights,
    mc_score,
    posterior_logits,
    posterior_mean,
    posterior_variance,
    sigma2_schedule,
)

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_log_inverse_weights_match_the_mixture_density_loop():
    # Eq. (10): q(y_j) = (1/N) sum_i N(y_j; x_i, h I); the code must return -log q exactly (constants included).
    x = torch.randn(4, 3, dtype=F64, generator=gen(0))
    y = torch.randn(5, 3, dtype=F64, generator=gen(1))
    h = 0.7
    expected = [
        -math.log(sum(multivariate_normal(xi.numpy(), h * np.eye(3)).pdf(yj.numpy()) for xi in x) / 4) for yj in y
    ]
    torch.testing.assert_close(log_inverse_weights(y, x, h), torch.tensor(expected, dtype=F64), rtol=1e-10, atol=1e-10)


def test_posterior_logits_are_the_bayes_weights_of_the_mixture():
    # Eq. (13): pi_j(z) ∝ w_j N(z; y_j, (h + s2) I); compare the normalised weights with a direct density loop.
    y = torch.randn(3, 2, dtype=F64, generator=gen(2))
    log_w = torch.tensor([0.1, -0.4, 0.3], dtype=F64)
    z = torch.randn(2, 2, dtype=F64, generator=gen(3))
    h, s2 = 0.5, 0.2
    got = torch.softmax(posterior_logits(z, y, log_w, h, s2), dim=1)
    for a, zi in enumerate(z):
        dens = torch.tensor(
            [
                math.exp(lw) * multivariate_normal(yj.numpy(), (h + s2) * np.eye(2)).pdf(zi.numpy())
                for lw, yj in zip(log_w.tolist(), y, strict=True)
            ],
            dtype=F64,
        )
        torch.testing.assert_close(got[a], dens / dens.sum(), rtol=1e-10, atol=1e-12)


def test_posterior_moments_hand_computed():
    # Eq. (13) with h = 0.5, s2 = 2 (h != s2, so swapping them is caught): var_bar = (1/0.5 + 1/2)^-1 = 0.4;
    # for y = 1, z = 3: m = 0.4 (1/0.5 + 3/2) = 0.4 * 3.5 = 1.4.
    assert posterior_variance(0.5, 2.0) == pytest.approx(0.4, rel=1e-15)
    m = posterior_mean(torch.tensor([[3.0]], dtype=F64), torch.tensor([[1.0]], dtype=F64), 0.5, 2.0)
    torch.testing.assert_close(m, torch.tensor([[1.4]], dtype=F64), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("own", [False, True], ids=["mixture-of-one", "own-component"])
def test_one_component_posterior_draws_have_the_hand_computed_moments(own):
    # One component y = 1, z = 3, h = 0.5, s2 = 2: N(1.4, 0.4) as derived above, from both draw functions.
    z = torch.tensor([[3.0]], dtype=F64)
    y = torch.tensor([[1.0]], dtype=F64)
    if own:
        x0 = draw_own_posterior(z, y, 0.5, 2.0, 200_000, gen(4))
    else:
        x0 = draw_posterior(z, y, torch.zeros(1, dtype=F64), 0.5, 2.0, 200_000, gen(4))
    assert x0.shape == (1, 200_000, 1)
    # standard errors: sqrt(0.4 / 2e5) = 1.4e-3 for the mean; 0.4 * sqrt(2 / 2e5) = 1.3e-3 for the variance
    assert abs(x0.mean().item() - 1.4) < 7e-3
    assert abs(x0.var().item() - 0.4) < 7e-3


def test_mixture_posterior_draws_pick_components_by_their_bayes_weights():
    # d = 1, z = 0, centres y = (-1, 2), log w = (0, log 2), h = s2 = 1: pi_j ∝ w_j N(0; y_j, 2), so
    # logits (-1/4, log 2 - 4/4) and pi = softmax(logits) = (0.5143, 0.4857); component means m_j = (y_j + 0) / 2 =
    # (-0.5, 1), variance var_bar = 1/2. The draws have mean sum_j pi_j m_j and variance 1/2 + Var_pi(m).
    z = torch.zeros(1, 1, dtype=F64)
    y = torch.tensor([[-1.0], [2.0]], dtype=F64)
    log_w = torch.tensor([0.0, math.log(2.0)], dtype=F64)
    pi = torch.softmax(torch.tensor([-0.25, math.log(2.0) - 1.0], dtype=F64), dim=0)
    m = torch.tensor([-0.5, 1.0], dtype=F64)
    mean = float((pi * m).sum())
    var = 0.5 + float((pi * (m - mean) ** 2).sum())
    x0 = draw_posterior(z, y, log_w, 1.0, 1.0, 200_000, gen(40)).flatten()
    # standard errors with var ~ 1.06: 2.3e-3 for the mean and ~3.5e-3 for the variance
    assert abs(x0.mean().item() - mean) < 1e-2
    assert abs(x0.var().item() - var) < 1.5e-2
    # the two components are 1.5 apart and the draws lie on either side of their midpoint 0.25 in about the mixing
    # proportions only if the weights are right: P(x0 > 0.25) = sum_j pi_j P(N(m_j, 1/2) > 0.25)
    norm = torch.distributions.Normal(m, math.sqrt(0.5))
    p_right = float((pi * (1 - norm.cdf(torch.tensor(0.25, dtype=F64)))).sum())
    assert abs((x0 > 0.25).double().mean().item() - p_right) < 5e-3


def test_mc_score_hand_computed():
    # z = 0, s2 = 0.5, two samples x0 = 1 (f = 0) and x0 = -1 (f = log 3): weights c = (3/4, 1/4),
    # score = (3/4 * 1 + 1/4 * (-1)) / 0.5 = 1.0; ESS = 1 / (9/16 + 1/16) = 1.6.
    z = torch.zeros(1, 1, dtype=F64)
    x0 = torch.tensor([[[1.0], [-1.0]]], dtype=F64)
    f0 = torch.tensor([[0.0, math.log(3.0)]], dtype=F64)
    est = mc_score(z, x0, f0, 0.5)
    torch.testing.assert_close(est.score, torch.tensor([[1.0]], dtype=F64))
    torch.testing.assert_close(est.ess, torch.tensor([1.6], dtype=F64))


def test_mc_score_survives_huge_potentials_and_is_shift_invariant():
    # exp(-1e6) underflows to 0 for every sample; the log-domain weights must not (no NaN, same as unshifted).
    z = torch.randn(3, 2, dtype=F64, generator=gen(5))
    x0 = torch.randn(3, 7, 2, dtype=F64, generator=gen(6))
    f0 = torch.rand(3, 7, dtype=F64, generator=gen(7))
    plain = mc_score(z, x0, f0, 0.3)
    shifted = mc_score(z, x0, f0 + 1e6, 0.3)
    assert torch.isfinite(shifted.score).all()
    torch.testing.assert_close(shifted.score, plain.score, rtol=1e-9, atol=1e-9)


def _exact_surrogate_score(z, y, log_w, mu, s2_target, h, sigma2):
    """Score of (q_hat * N(0, sigma2)) for f = |x - mu|^2 / (2 s2_target): a Gaussian mixture in closed form.

    e^{-f} N(x; y_j, h) ∝ N(y_j; mu, (s2_target + h)) N(x; m_j, v) with v = (1/s2_target + 1/h)^-1 and
    m_j = v (mu / s2_target + y_j / h); convolving with N(0, sigma2) gives components N(z; m_j, v + sigma2) with
    weights w_j N(y_j; mu, s2_target + h), whose score is sum_j r_j(z) (m_j - z) / (v + sigma2).
    """
    v = 1.0 / (1.0 / s2_target + 1.0 / h)
    m = v * (mu / s2_target + y / h)  # (J, d)
    log_c = -(y - mu).square().sum(-1) / (2 * (s2_target + h))
    logits = log_w + log_c - (z[:, None, :] - m[None]).square().sum(-1) / (2 * (v + sigma2))  # (N, J)
    r = torch.softmax(logits, dim=1)
    return (r @ m - z) / (v + sigma2)


@pytest.mark.parametrize("sigma2", [0.05, 0.4])
def test_mc_score_converges_to_the_exact_surrogate_score_as_m_grows(sigma2):
    # Gaussian target N(mu, 0.3 I) in d = 2 with 6 surrogate components; rows of z are independent MC repetitions.
    mu = torch.tensor([0.5, -1.0], dtype=F64)
    s2_target, h = 0.3, 0.6
    x = mu + math.sqrt(s2_target) * torch.randn(6, 2, dtype=F64, generator=gen(8))
    y = x + math.sqrt(h) * torch.randn(6, 2, dtype=F64, generator=gen(9))
    log_w = log_inverse_weights(y, x, h)
    z = (mu + torch.randn(1, 2, dtype=F64, generator=gen(10))).repeat(400, 1)  # (400, 2) the same point repeated
    exact = _exact_surrogate_score(z[:1], y, log_w, mu, s2_target, h, sigma2)
    f = lambda p: (p - mu).square().sum(-1) / (2 * s2_target)  # noqa: E731
    rms = {}
    for m in (16, 1024):
        x0 = draw_posterior(z, y, log_w, h, sigma2, m, gen(11 + m))
        est = mc_score(z, x0, f(x0.reshape(-1, 2)).reshape(400, m), sigma2).score
        err = est - exact
        rms[m] = err.square().sum(-1).mean().sqrt().item()
    # at M = 1024 the estimator's mean over the repetitions is within 4 standard errors of the exact score (the
    # self-normalised weights add an O(1/M) bias, visible at M = 16 but small against the error at M = 1024)
    se = est.std(0) / math.sqrt(400)
    assert ((est.mean(0) - exact[0]).abs() <= 4 * se).all(), (est.mean(0), exact)
    # Monte Carlo error shrinks like 1/sqrt(M): 64x more samples, expected ratio 8; require at least 4
    assert rms[1024] < rms[16] / 4, rms


def test_surrogate_score_approaches_the_true_diffused_score_for_many_particles():
    # With X ~ pi = N(0, I) and many particles the surrogate is pi itself (Eq. 9 with q_{k+1/2} = pi_Y), so the
    # score of pi * N(0, sigma2) is -z / (1 + sigma2).
    n, h, sigma2 = 4000, 0.5, 0.25
    x = torch.randn(n, 1, dtype=F64, generator=gen(20))
    y = x + math.sqrt(h) * torch.randn(n, 1, dtype=F64, generator=gen(21))
    log_w = log_inverse_weights(y, x, h)
    z = torch.tensor([[-1.0], [0.0], [0.8]], dtype=F64)
    x0 = draw_posterior(z, y, log_w, h, sigma2, 20_000, gen(22))
    est = mc_score(z, x0, 0.5 * x0.square().sum(-1), sigma2).score
    torch.testing.assert_close(est, -z / (1 + sigma2), rtol=0, atol=0.05)


def test_sigma2_schedule_is_linear_in_variance_and_validates():
    sched = sigma2_schedule(0.1, 4, 0.02)
    torch.testing.assert_close(sched, torch.tensor([0.02, 0.04, 0.06, 0.08, 0.1], dtype=F64))
    with pytest.raises(ValueError, match="step_size"):
        sigma2_schedule(0.0, 4, 0.0)
    with pytest.raises(ValueError, match="n_diffusion_steps"):
        sigma2_schedule(0.1, 0, 0.0)
    with pytest.raises(ValueError, match="sigma2_min"):
        sigma2_schedule(0.1, 4, 0.1)
