"""Flow-matching head, loss and sampler against hand-computed values and a closed-form 1-D Gaussian flow."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from iclr26.common.seeding import torch_generator
from iclr26.nextstep.heads import (
    AdaLNMLP,
    DiscreteHead,
    FlowMatchingHead,
    RegressionHead,
    flow_matching_loss,
    interpolate,
    logit_normal_t,
    timestep_embedding,
)
from iclr26.nextstep.sampler import cfg_combine, sample_flow, timestep_grid, velocity_to_score


class LinearVelocity(nn.Module):
    """f(x_t, t, c) = a x_t + b t + c (a test stand-in with a hand-computable loss)."""

    def __init__(self, a: float, b: float) -> None:
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x, t, c):
        return self.a * x + self.b * t[:, None] + c


def test_flow_matching_loss_matches_hand_computation():
    # One row, d = 2, batch_mul = 1, with the generator's own draws u, eps read back from an identical generator:
    # t = sigmoid(u), x_t = t x + (1 - t) eps, v = x - eps, loss = mean_j (a x_t + b t + c - v)_j^2.
    x = torch.tensor([[1.0, -2.0]])
    c = torch.tensor([[0.5, 0.0]])
    f = LinearVelocity(a=2.0, b=-1.0)
    loss = flow_matching_loss(f, x, c, batch_mul=1, generator=torch_generator(7))
    g = torch_generator(7)
    u = torch.randn(1, generator=g).item()
    eps = torch.randn(1, 2, generator=g)[0].tolist()
    t = 1 / (1 + math.exp(-u))
    expected = 0.0
    for xj, ej, cj in zip([1.0, -2.0], eps, [0.5, 0.0], strict=True):
        x_t = t * xj + (1 - t) * ej
        expected += (2.0 * x_t - 1.0 * t + cj - (xj - ej)) ** 2 / 2
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_flow_matching_loss_repeats_rows_and_masks():
    x = torch.randn(3, 4, generator=torch_generator(0))
    c = torch.zeros(3, 4)
    f = LinearVelocity(a=0.0, b=0.0)  # f = 0, so the loss is E||x - eps||^2 / d, no t dependence
    full = flow_matching_loss(f, x, c, batch_mul=4, generator=torch_generator(1))
    g = torch_generator(1)
    torch.randn(12, generator=g)  # u
    eps = torch.randn(12, 4, generator=g)
    expected = ((x.repeat(4, 1) - eps) ** 2).mean()
    assert full.item() == pytest.approx(expected.item(), rel=1e-5)
    masked = flow_matching_loss(f, x, c, batch_mul=4, mask=torch.tensor([1.0, 0.0, 0.0]), generator=torch_generator(1))
    rows = ((x.repeat(4, 1) - eps) ** 2).mean(-1).reshape(4, 3)[:, 0]
    assert masked.item() == pytest.approx(rows.mean().item(), rel=1e-5)


def test_interpolate_endpoints_and_velocity():
    x, eps = torch.tensor([[3.0]]), torch.tensor([[-1.0]])
    assert interpolate(x, eps, torch.tensor([0.0])).x_t.item() == -1.0  # t = 0: noise
    assert interpolate(x, eps, torch.tensor([1.0])).x_t.item() == 3.0  # t = 1: data
    assert interpolate(x, eps, torch.tensor([0.25])).x_t.item() == pytest.approx(0.25 * 3 + 0.75 * -1)
    assert interpolate(x, eps, torch.tensor([0.5])).v.item() == 4.0


def test_logit_normal_t_statistics():
    t = logit_normal_t(200_000, generator=torch_generator(0))
    assert 0 < t.min() and t.max() < 1
    # logit(t) = u ~ N(0, 1): median 0.5, logit variance 1
    assert t.median().item() == pytest.approx(0.5, abs=0.01)
    assert torch.logit(t).var().item() == pytest.approx(1.0, abs=0.02)


def gaussian_velocity(m: float, s: float):
    """Closed-form marginal velocity of x_t = t x + (1-t) eps with x ~ N(m, s^2), eps ~ N(0, 1).

    x_t ~ N(t m, sigma_t^2), sigma_t^2 = t^2 s^2 + (1-t)^2;  E[x | x_t] = m + t s^2 (x_t - t m) / sigma_t^2,
    E[eps | x_t] = (1-t)(x_t - t m) / sigma_t^2;  v*(x_t, t) = E[x - eps | x_t].
    """

    def v(x, t):
        t = t[:, None]
        var = t**2 * s**2 + (1 - t) ** 2
        r = (x - t * m) / var
        return m + t * s**2 * r - (1 - t) * r

    return v


def test_flow_matching_target_is_minimised_by_the_conditional_mean_velocity():
    # The FM loss of v* is below that of v* shifted or scaled: v* = E[x - eps | x_t] minimises E||f - (x - eps)||^2.
    m, s = 2.0, 0.5
    v_star = gaussian_velocity(m, s)
    x = m + s * torch.randn(100_000, 1, generator=torch_generator(3))
    c = torch.zeros_like(x)

    def loss_of(fn):
        return flow_matching_loss(lambda xt, t, _c: fn(xt, t), x, c, batch_mul=1, generator=torch_generator(4)).item()

    best = loss_of(v_star)
    for delta in (0.2, -0.2):
        assert loss_of(lambda xt, t, d=delta: v_star(xt, t) + d) > best + 0.03  # + delta^2 in expectation
    assert loss_of(lambda xt, t: 1.2 * v_star(xt, t)) > best


def test_velocity_to_score_matches_gaussian_score():
    # For the Gaussian path the score of x_t is -(x_t - t m) / sigma_t^2; from v*: (t v - x) / (1 - t).
    m, s = 1.0, 0.7
    x = torch.linspace(-3, 3, 13)[:, None]
    for t in (0.1, 0.5, 0.9):
        tt = torch.full((13,), t)
        var = t**2 * s**2 + (1 - t) ** 2
        assert torch.allclose(velocity_to_score(gaussian_velocity(m, s)(x, tt), x, t), -(x - t * m) / var, atol=1e-5)


@pytest.mark.parametrize("sde", [True, False])
def test_sampler_recovers_the_gaussian_with_the_exact_velocity(sde):
    m, s = 2.0, 0.5
    out = sample_flow(
        gaussian_velocity(m, s), (20_000, 1), steps=200, last_step=0.01, sde=sde, generator=torch_generator(5)
    )
    # Euler discretisation error at 200 steps is well below these tolerances; Monte Carlo se of the mean 0.004
    assert out.mean().item() == pytest.approx(m, abs=0.03)
    assert out.std().item() == pytest.approx(s, abs=0.03)


def test_timestep_grid_and_shift():
    g = timestep_grid(5, last_step=0.2)
    assert torch.allclose(g, torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8]))
    shifted = timestep_grid(5, last_step=0.2, shift=3.0)
    # t / (3 - 2 t) at t = 0.4: 0.4 / 2.2
    assert shifted[2].item() == pytest.approx(0.4 / 2.2)
    with pytest.raises(ValueError, match="steps"):
        timestep_grid(1)
    with pytest.raises(ValueError, match="last_step"):
        timestep_grid(5, last_step=1.0)


def test_cfg_combine():
    cond, uncond = torch.tensor([3.0]), torch.tensor([1.0])
    assert cfg_combine(cond, uncond, 1.0).item() == 3.0  # w = 1: no guidance
    assert cfg_combine(cond, uncond, 2.5).item() == 1.0 + 2.5 * 2.0


def test_head_initialisation_outputs_zero_and_shapes_are_checked():
    head = FlowMatchingHead(6, 8, dim=16, layers=2)
    out = head.velocity(torch.randn(5, 6), torch.rand(5), torch.randn(5, 8))
    assert out.shape == (5, 6) and torch.all(out == 0)  # zero-initialised output layer, as in the official head
    with pytest.raises(ValueError, match="x must have shape"):
        head.velocity(torch.randn(5, 7), torch.rand(5), torch.randn(5, 8))
    with pytest.raises(ValueError, match="c must have shape"):
        head.velocity(torch.randn(5, 6), torch.rand(5), torch.randn(4, 8))
    with pytest.raises(ValueError, match="t must have shape"):
        head.velocity(torch.randn(5, 6), torch.rand(4), torch.randn(5, 8))
    with pytest.raises(ValueError, match="batch_mul"):
        FlowMatchingHead(6, 8, batch_mul=0)
    with pytest.raises(ValueError, match="x holds non-finite"):
        head.loss(torch.full((5, 6), float("nan")), torch.randn(5, 8))


def test_baseline_heads_have_the_fm_heads_parameters():
    fm = FlowMatchingHead(16, 32, dim=24, layers=2)
    reg = RegressionHead(16, 32, dim=24, layers=2)
    vq = DiscreteHead(16, 32, token_dim=16, dim=24, layers=2)
    n = [sum(p.numel() for p in h.parameters()) for h in (fm, reg, vq)]
    assert n[1] == n[2] == n[0] + 16  # K = d = 16: the same network plus the learned input x0 (d = 16)
    assert reg.loss(torch.zeros(3, 16), torch.randn(3, 32)).item() == 0.0  # zero output, zero targets
    with pytest.raises(ValueError, match="codes"):
        vq.loss(torch.zeros(3), torch.randn(3, 32))


def test_baseline_heads_learn_a_conditional_mean():
    # The regression head must fit x = W c (the zero-initialised network must not sit at a stationary point).
    torch.manual_seed(0)
    head = RegressionHead(2, 3, dim=16, layers=1)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    c = torch.randn(64, 3, generator=torch_generator(0))
    x = c[:, :2] * 2.0
    for _ in range(150):
        loss = head.loss(x, c)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1 * x.var().item()


def test_timestep_embedding_values():
    e = timestep_embedding(torch.tensor([0.0, 1.0]), 4)
    # freqs = 10000^(-k/2) for k = 0, 1 -> [1, 0.01]; t = 1: [cos 1, cos 0.01, sin 1, sin 0.01]
    assert torch.allclose(e[0], torch.tensor([1.0, 1.0, 0.0, 0.0]))
    assert torch.allclose(e[1], torch.tensor([math.cos(1), math.cos(0.01), math.sin(1), math.sin(0.01)]), atol=1e-6)
    with pytest.raises(ValueError, match="layers"):
        AdaLNMLP(2, 2, 2, dim=4, layers=0)
