"""The closed-form TD limit of ``ntk.py`` against gradient descent on a model that is exactly linear in its weights.

A random-feature value function ``f(s, a, z) = φ(s, a, z) · w`` has the tangent kernel ``Θ = Φ Φᵀ`` at every step, so
full-batch gradient descent on the TD loss follows the kernel dynamics of :mod:`iclr26.uvu.ntk` with no width
approximation. Derivation of what the limit must equal for one network: the TD residual on the data,
``δ = f(X) - γ f(X') - r``, obeys ``δ_{t+1} = (I - η/N A) δ_t`` with ``A = Θ_XX - γ Θ_X'X``, and
``f_{t+1} - f_t = -(η/N) Θ_{·X} δ_t``; summing the geometric series gives
``f_∞ = f_0 - Θ_{·X} A⁻¹ δ_0 = E f_∞ + ℓ f_0`` with ``E f_∞ = Θ_{·X} A⁻¹ r`` and ``ℓ = I - Θ_{·X} A⁻¹ (E_X - γ E_X')``.
``td_limit`` returns ``E f_∞`` and ``ℓ κ ℓᵀ``; choosing ``κ = f_0 f_0ᵀ`` (one realised draw) makes that
``(f_∞ - E f_∞)(f_∞ - E f_∞)ᵀ``, which these tests compare entry by entry with the trained models. For UVU the same
algebra with ``r = r_g`` gives ``u_∞ - g = ℓ (u_0 - g)``, so ``κ = (u_0 - g)(u_0 - g)ᵀ`` makes the limit's variance
exactly the trained ``ε²``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from iclr26.uvu import UVU, ValueEnsemble, fit, td_limit
from iclr26.uvu.mdp import FiniteMDP
from iclr26.uvu.ntk import Kernels

GAMMA = 0.5
FEATURES = 32


class RandomFeatureValue(nn.Module):
    """``f(s, a, z) = φ(s, a, z) · w`` on the points of a finite MDP; ``φ`` is a fixed (M, P) matrix (not a buffer)."""

    def __init__(self, mdp: FiniteMDP, features: torch.Tensor) -> None:
        super().__init__()
        self.mdp = mdp
        self.features = features  # (M, P)
        self.weight = nn.Parameter(torch.randn(features.shape[1], 1, dtype=torch.float64))  # (P, 1)

    def forward(self, states: torch.Tensor, actions: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        idx = self.mdp.index(states.argmax(1), actions, tasks.argmax(1))  # (B,)
        return self.features[idx] @ self.weight  # (B, 1)


def _setup():
    mdp = FiniteMDP.random(5, 2, 2, torch.Generator().manual_seed(0))
    m = 5 * 2 * 2
    # every policy-0 point (their futures stay inside policy 0: closed) plus 4 of the 10 policy-1 points
    data_idx = torch.cat([torch.arange(10), 10 + torch.randperm(10, generator=torch.Generator().manual_seed(1))[:4]])
    data = mdp.transitions(data_idx, dtype=torch.float64)
    phi = torch.randn(m, FEATURES, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    phi = phi / math.sqrt(FEATURES)
    theta = phi @ phi.T  # (M, M) exact NTK of RandomFeatureValue

    def limit(kappa: torch.Tensor, rewards: torch.Tensor):
        return td_limit(Kernels(nngp=kappa, ntk=theta), data_idx, mdp.successors()[data_idx], rewards, gamma=GAMMA)

    eig = limit(torch.eye(m, dtype=torch.float64), data.rewards).operator_eigenvalues
    lam_max, lam_min = float(eig.abs().max()), float(eig.real.min())
    # η = ½ N / λ_max contracts the slowest mode by (1 - ½ λ_min/λ_max) per step; run until it is below 1e-13
    lr = 0.5 * len(data_idx) / lam_max
    steps = math.ceil(math.log(1e13) / (0.5 * lam_min / lam_max))
    assert steps < 20_000, f"ill-conditioned test MDP ({steps} steps); pick other seeds"
    return mdp, data_idx, data, phi, limit, lr, steps


def test_ensemble_members_converge_to_the_closed_form_limit():
    mdp, data_idx, data, phi, limit, lr, steps = _setup()
    states, actions, tasks = mdp.features(torch.float64)
    torch.manual_seed(3)
    ensemble = ValueEnsemble(lambda: RandomFeatureValue(mdp, phi), 3, gamma=GAMMA)
    with torch.no_grad():
        ensemble.stacked[0][0].zero_()  # member 0 starts at f_0 = 0, so f_∞ = E f_∞ exactly
        f0 = ensemble.values(states, actions, tasks)[:, :, 0].clone()  # (K, M)
    fit(ensemble, data, steps=steps, lr=lr, generator=torch.Generator(), optimizer="sgd")
    with torch.no_grad():
        f_inf = ensemble.values(states, actions, tasks)[:, :, 0]  # (K, M)
    torch.testing.assert_close(f_inf[0], limit(torch.outer(f0[0], f0[0]), data.rewards).mean)
    for k in (1, 2):
        lim = limit(torch.outer(f0[k], f0[k]), data.rewards)
        dev = f_inf[k] - lim.mean  # = ℓ f_0
        torch.testing.assert_close(lim.covariance, torch.outer(dev, dev))
        # the deviation is not trivially zero: the data leave part of the MDP uncovered
        assert dev.abs().max() > 1e-2


def test_uvu_error_converges_to_the_closed_form_limit():
    mdp, data_idx, data, phi, limit, lr, steps = _setup()
    states, actions, tasks = mdp.features(torch.float64)
    torch.manual_seed(4)
    uvu = UVU(RandomFeatureValue(mdp, phi), RandomFeatureValue(mdp, phi), gamma=GAMMA)
    with torch.no_grad():
        e0 = (uvu.online(states, actions, tasks) - uvu.target(states, actions, tasks))[:, 0]  # (M,) u_0 - g
        r_g = uvu.synthetic_reward(data)[:, 0]
    fit(uvu, data, steps=steps, lr=lr, generator=torch.Generator(), optimizer="sgd")
    with torch.no_grad():
        eps2 = uvu.uncertainty(states, actions, tasks)  # (M,)
    lim = limit(torch.outer(e0, e0), r_g)
    torch.testing.assert_close(eps2, lim.ensemble_variance)
    # zero on points whose whole future is in the data, positive on some others
    closed = mdp.closed_points(data_idx)
    assert closed.any() and eps2[closed].max() < 1e-18
    assert eps2[~closed].max() > 1e-3
