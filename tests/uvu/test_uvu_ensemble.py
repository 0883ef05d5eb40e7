"""The ensemble and RND baselines: variance by hand, vmap vs a loop of separate networks, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.uvu import RND, StackedNetworks, Transitions, UniversalMLP, ValueEnsemble, ensemble_variance
from iclr26.uvu.td import td_loss, td_target


def _batch(n: int, seed: int) -> Transitions:
    g = torch.Generator().manual_seed(seed)
    return Transitions(
        states=torch.randn(n, 4, generator=g),
        actions=torch.randint(2, (n,), generator=g),
        rewards=torch.randn(n, generator=g),
        next_states=torch.randn(n, 4, generator=g),
        next_actions=torch.randint(2, (n,), generator=g),
        dones=(torch.rand(n, generator=g) < 0.2).float(),
        tasks=torch.randn(n, 3, generator=g),
    )


def _make():
    return UniversalMLP(4, 3, num_actions=2, hidden=(16, 16))


def test_ensemble_variance_by_hand():
    # members' values at one point: 1, 2, 6 → mean 3, unbiased var ((4 + 1 + 9)/2) = 7, biased 14/3
    v = torch.tensor([[1.0], [2.0], [6.0]])
    assert ensemble_variance(v).item() == pytest.approx(7.0)
    assert ensemble_variance(v, unbiased=False).item() == pytest.approx(14 / 3)
    # heads are averaged after the variance: head 2 has values 0, 0, 3 → var 3 → mean over heads (7 + 3)/2
    v2 = torch.tensor([[[1.0, 0.0]], [[2.0, 0.0]], [[6.0, 3.0]]])
    assert ensemble_variance(v2).item() == pytest.approx(5.0)
    with pytest.raises(ValueError, match="K >= 2"):
        ensemble_variance(torch.ones(1, 3))


def test_stacked_values_equal_a_loop_over_separate_networks():
    torch.manual_seed(0)
    stacked = StackedNetworks(_make, 4)
    batch = _batch(10, 1)
    values = stacked.values(batch.states, batch.actions, batch.tasks)  # (K, B, 1)
    for k in range(4):
        net = _make()
        net.load_state_dict(stacked.member_state(k))
        torch.testing.assert_close(values[k], net(batch.states, batch.actions, batch.tasks))
    # heads layout: member-major (B, K·H)
    torch.testing.assert_close(stacked(batch.states, batch.actions, batch.tasks), values[:, :, 0].T)


def test_ensemble_members_get_exactly_their_own_td_gradient():
    torch.manual_seed(0)
    ens = ValueEnsemble(_make, 3, gamma=0.9)
    batch = _batch(12, 2)
    ens.loss(batch).backward()
    for k in range(3):
        net = _make()
        net.load_state_dict(ens.member_state(k))
        q_sa = net(batch.states, batch.actions, batch.tasks)
        q_next = net(batch.next_states, batch.next_actions, batch.tasks)
        td_loss(q_sa, td_target(batch.rewards, q_next, gamma=0.9, done=batch.dones)).backward()
        for (name, p), stacked in zip(net.named_parameters(), ens.stacked, strict=True):
            torch.testing.assert_close(stacked.grad[k], p.grad, msg=name)


def test_ensemble_uncertainty_is_the_member_variance():
    torch.manual_seed(0)
    ens = ValueEnsemble(_make, 5, gamma=0.9)
    batch = _batch(7, 3)
    values = ens.values(batch.states, batch.actions, batch.tasks)[:, :, 0].detach().numpy()
    expected = np.var(values, axis=0, ddof=1)
    np.testing.assert_allclose(
        ens.uncertainty(batch.states, batch.actions, batch.tasks).detach().numpy(), expected, rtol=1e-5
    )
    np.testing.assert_allclose(
        ens.mean(batch.states, batch.actions, batch.tasks).detach().numpy(), values.mean(0), rtol=1e-5
    )


def test_initialisation_is_deterministic_under_the_seed_and_members_differ():
    torch.manual_seed(7)
    a = ValueEnsemble(_make, 3, gamma=0.5)
    torch.manual_seed(7)
    b = ValueEnsemble(_make, 3, gamma=0.5)
    for pa, pb in zip(a.stacked, b.stacked, strict=True):
        torch.testing.assert_close(pa, pb)
    assert not torch.equal(a.stacked[0][0], a.stacked[0][1])


def test_ensemble_errors():
    with pytest.raises(ValueError, match="size must be >= 2"):
        ValueEnsemble(_make, 1, gamma=0.9)
    with pytest.raises(ValueError, match="gamma"):
        ValueEnsemble(_make, 2, gamma=1.5)
    with pytest.raises(ValueError, match="buffers"):
        StackedNetworks(lambda: torch.nn.BatchNorm1d(3), 2)


def test_rnd_is_myopic_regression_onto_the_target():
    """RND learns g at the data inputs whatever their future: after fitting one batch its error there is ~0."""
    torch.manual_seed(0)
    rnd = RND(
        UniversalMLP(4, 3, num_actions=2, hidden=(64,), num_heads=2),
        UniversalMLP(4, 3, num_actions=2, hidden=(64,), num_heads=2),
    )
    batch = _batch(8, 4)
    before = rnd.uncertainty(batch.states, batch.actions, batch.tasks).mean().item()
    opt = torch.optim.Adam(rnd.trainable_parameters(), lr=1e-2)
    for _ in range(500):
        opt.zero_grad()
        rnd.loss(batch).backward()
        opt.step()
    after = rnd.uncertainty(batch.states, batch.actions, batch.tasks).max().item()
    assert after < 1e-3 * before
    net = UniversalMLP(4, 3, num_actions=2, hidden=(8,))
    with pytest.raises(ValueError, match="predictor and target must be two independently"):
        RND(net, net)
    with pytest.raises(ValueError, match="predictor and target share"):
        RND(net, torch.nn.Sequential(net.body))
