"""Infinite-width theory: kernels against a very wide network, the TD limit against closed forms, the MDP."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.uvu import UniversalMLP, relu_kernels, td_limit
from iclr26.uvu.mdp import FiniteMDP
from iclr26.uvu.studies import sampling_gap, symmetric_gap


def _empirical_kernels(net: UniversalMLP, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """NTK Σ_p ∂f(x)/∂p ∂f(x')/∂p of one wide network, and the NNGP σ_w²/W Σ_j φ_j(x) φ_j(x') of its last layer."""
    params = list(net.parameters())
    grads = []
    for i in range(x.shape[0]):
        g = torch.autograd.grad(net.body(x[i : i + 1]).sum(), params)
        grads.append(torch.cat([t.reshape(-1) for t in g]))
    jac = torch.stack(grads)
    hidden = net.body[:-1](x)  # (M, W) last hidden activations
    nngp = hidden @ hidden.T / hidden.shape[1]  # σ_w = 1
    return jac @ jac.T, nngp


@pytest.mark.parametrize(("depth", "width", "tol"), [(1, 8192, 0.02), (2, 2048, 0.05)])
def test_relu_kernels_match_a_very_wide_network(depth, width, tol):
    """A very wide network's empirical NTK/NNGP match the arc-cosine recursion up to O(1/sqrt W) fluctuations:
    mean relative error below ``tol``, largest entry below ``3 tol`` (measured: 0.7 %/3.4 % at depth 1, 2.3 %/7.7 %
    at depth 2)."""
    torch.manual_seed(0)
    net = UniversalMLP(3, 2, num_actions=2, hidden=(width,) * depth, parameterization="ntk", sigma_b=0.5).double()
    g = torch.Generator().manual_seed(1)
    x = net.encode(
        torch.randn(5, 3, generator=g, dtype=torch.float64),
        torch.tensor([0, 1, 1, 0, 1]),
        torch.randn(5, 2, generator=g, dtype=torch.float64),
    )
    ntk_emp, nngp_emp = _empirical_kernels(net, x)
    kernels = relu_kernels(x, depth=depth, sigma_b=0.5)
    ntk_err = (ntk_emp - kernels.ntk).abs() / kernels.ntk.diagonal().mean()
    # NNGP of the output = σ_w² E[φφ'] + σ_b² ; the empirical one lacks the output bias term σ_b² = 0.25
    nngp_err = (nngp_emp + 0.25 - kernels.nngp).abs() / kernels.nngp.diagonal().mean()
    for err in (ntk_err, nngp_err):
        assert err.mean() < tol and err.max() < 3 * tol


def test_relu_kernel_single_layer_by_hand():
    # x = e1 (D = 2, σ_w = 1, no bias): Σ¹ = 1/2 on the diagonal; κ = σ_w² · Σ¹/2 = 1/4; Θ = κ + Σ¹ · 1/2 = 1/2
    k = relu_kernels(torch.tensor([[1.0, 0.0]]), depth=1)
    assert k.nngp.item() == pytest.approx(0.25)
    assert k.ntk.item() == pytest.approx(0.5)
    # orthogonal inputs e1, e2: θ = π/2 → κ = sqrt(1/4)(1 + 0)/(2π) = 1/(4π); Θ = κ + 0
    k2 = relu_kernels(torch.eye(2), depth=1)
    assert k2.nngp[0, 1].item() == pytest.approx(1 / (4 * math.pi))
    assert k2.ntk[0, 1].item() == pytest.approx(1 / (4 * math.pi))
    with pytest.raises(ValueError, match="zero variance"):
        relu_kernels(torch.zeros(1, 2), depth=1)


def _mdp() -> FiniteMDP:
    return FiniteMDP.random(5, 2, 2, torch.Generator().manual_seed(0))


def test_q_values_closed_form_equals_iterated_bellman():
    mdp = _mdp()
    gamma = 0.7
    q = torch.zeros(2, 5, 2, dtype=torch.float64)
    for _ in range(120):  # Q_z(s, a) ← R(s, a) + γ Q_z(s', π_z(s'))
        nxt = mdp.next_state
        q = mdp.reward[None] + gamma * torch.stack([q[z][nxt, mdp.policies[z][nxt]] for z in range(2)])
    torch.testing.assert_close(mdp.q_values(gamma), q.reshape(-1))


def test_td_limit_with_full_data_recovers_true_values_with_zero_variance():
    """All points in the data: the TD fixed point is unique, f_∞ = Q^π whatever the initialisation."""
    mdp = _mdp()
    s, a, z = mdp.features(torch.float64)
    x = UniversalMLP(5, 2, num_actions=2, hidden=(1,), parameterization="ntk").double().encode(s, a, z)
    m = x.shape[0]
    idx = torch.arange(m)
    s_i, a_i, _ = mdp.points()
    limit = td_limit(relu_kernels(x, depth=1), idx, mdp.successors(), mdp.reward[s_i, a_i], gamma=0.5)
    torch.testing.assert_close(limit.mean, mdp.q_values(0.5))
    assert limit.ensemble_variance.abs().max() < 1e-10
    torch.testing.assert_close(limit.uvu_error, 2 * limit.ensemble_variance)


def test_td_limit_zero_variance_exactly_on_covered_futures():
    mdp = FiniteMDP.random(6, 2, 2, torch.Generator().manual_seed(3))
    s, a, z = mdp.features(torch.float64)
    x = UniversalMLP(6, 2, num_actions=2, hidden=(1,), parameterization="ntk").double().encode(s, a, z)
    # every policy-0 point (their futures stay inside policy 0) plus a random half of the policy-1 points
    half = 12 + torch.randperm(12, generator=torch.Generator().manual_seed(4))[:6]
    data = torch.cat([torch.arange(12), half])
    s_i, a_i, _ = mdp.points()
    limit = td_limit(relu_kernels(x, depth=1), data, mdp.successors()[data], mdp.reward[s_i, a_i][data], gamma=0.5)
    closed = mdp.closed_points(data)
    covered = torch.zeros(x.shape[0], dtype=torch.bool)
    covered[data] = True
    assert closed.any() and (covered & ~closed).any()
    assert limit.ensemble_variance[closed].max() < 1e-10
    assert limit.ensemble_variance[covered & ~closed].min() > 1e-6  # in the data, future missing: not certain


def test_td_limit_errors():
    k = relu_kernels(torch.eye(3), depth=1)
    with pytest.raises(ValueError, match="distinct"):
        td_limit(k, torch.tensor([0, 0]), torch.tensor([1, 2]), torch.zeros(2), gamma=0.5)
    with pytest.raises(ValueError, match="shape"):
        td_limit(k, torch.tensor([0, 1]), torch.tensor([1]), torch.zeros(2), gamma=0.5)
    with pytest.raises(ValueError, match="gamma"):
        td_limit(k, torch.tensor([0, 1]), torch.tensor([1, 2]), torch.zeros(2), gamma=1.0)
    with pytest.raises(ValueError, match="successors indices must lie in"):
        td_limit(k, torch.tensor([0, 1]), torch.tensor([1, 3]), torch.zeros(2), gamma=0.5)


def test_closed_points_by_hand():
    # one policy, one action: 0→1→0 cycle, 2→3→3; data {0, 1, 2}: 0 and 1 closed, 2 not (3 missing)
    mdp = FiniteMDP(
        next_state=torch.tensor([[1], [0], [3], [3]]),
        reward=torch.zeros(4, 1, dtype=torch.float64),
        policies=torch.zeros(1, 4, dtype=torch.long),
    )
    assert mdp.closed_points(torch.tensor([0, 1, 2])).tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="next_state"):
        FiniteMDP(
            next_state=torch.tensor([[5]]),
            reward=torch.zeros(1, 1, dtype=torch.float64),
            policies=torch.zeros(1, 1, dtype=torch.long),
        )


def test_symmetric_gap_and_sampling_noise():
    # |1-3| + |2-2| = 2 over (1+2+3+2)/2 = 4 → 0.5
    assert symmetric_gap(np.array([1.0, 2.0]), np.array([3.0, 2.0])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same shape"):
        symmetric_gap(np.array([1.0, 2.0]), np.array([[3.0], [2.0]]))  # would broadcast to a 2x2 sum
    cov = np.diag([1.0, 2.0, 0.5])
    rng = np.random.default_rng(0)
    few = sampling_gap(cov, members=4, copies=4, repeats=200, rng=rng).mean()
    many = sampling_gap(cov, members=400, copies=400, repeats=200, rng=rng).mean()
    assert many < 0.25 * few  # the gap of exact agreement shrinks like 1/sqrt(K)
