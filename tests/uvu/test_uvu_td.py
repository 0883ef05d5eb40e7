"""UVU's synthetic reward, TD target and loss: hand-computed steps, the fixed point, tabular convergence, errors."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from iclr26.uvu import UVU, Transitions, UniversalMLP, synthetic_reward, td_loss, td_target, uvu_td_loss
from iclr26.uvu.mdp import FiniteMDP
from iclr26.uvu.training import LossLog, fit


def test_synthetic_reward_by_hand():
    # r_g = g(s,a) - γ (1 - done) g(s',a'):  1 - 0.9*0.5 = 0.55 ;  terminal: 2 - 0 = 2
    g_sa = torch.tensor([1.0, 2.0])
    g_next = torch.tensor([0.5, 4.0])
    r = synthetic_reward(g_sa, g_next, gamma=0.9, done=torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(r, torch.tensor([0.55, 2.0]))


def test_td_target_and_loss_by_hand():
    # y = r + γ (1 - done) v' : [1 + 0.5*2, 3 + 0] = [2, 3]; heads broadcast from (B,) rewards
    v_next = torch.tensor([[2.0, 4.0], [10.0, 10.0]], requires_grad=True)
    y = td_target(torch.tensor([1.0, 3.0]), v_next, gamma=0.5, done=torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(y, torch.tensor([[2.0, 3.0], [3.0, 3.0]]))
    assert not y.requires_grad  # bootstrap is stop-gradient
    # loss = 1/(2N) Σ_i Σ_h (y - v)²: errors [[1, 0], [1, 3]] → (1 + 10)/(2*2) = 2.75
    v = torch.tensor([[1.0, 3.0], [2.0, 0.0]])
    assert td_loss(v, y).item() == pytest.approx(2.75)


def test_td_target_rejects_rewards_of_another_shape():
    v_next = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="reward has shape"):
        td_target(torch.zeros(3), v_next, gamma=0.9)  # 3 rewards for 4 transitions
    with pytest.raises(ValueError, match="reward has shape"):
        td_target(torch.zeros(1), v_next, gamma=0.9)  # would silently broadcast one reward to every row


def test_uvu_loss_gradient_reaches_only_u_sa():
    u_sa = torch.tensor([0.3, -0.2], requires_grad=True)
    u_next = torch.tensor([0.1, 0.4], requires_grad=True)
    g_sa, g_next = torch.tensor([0.5, 0.5]), torch.tensor([0.2, 0.0])
    loss = uvu_td_loss(u_sa, u_next, g_sa, g_next, gamma=0.9)
    loss.backward()
    assert u_next.grad is None
    # dL/du_sa = -(y - u_sa)/N with y = g_sa - γ g_next + γ u_next
    y = g_sa - 0.9 * g_next + 0.9 * u_next.detach()
    torch.testing.assert_close(u_sa.grad, -(y - u_sa.detach()) / 2)


def _batch(n: int, generator: torch.Generator, *, with_dones: bool = True) -> Transitions:
    return Transitions(
        states=torch.randn(n, 5, generator=generator),
        actions=torch.randint(3, (n,), generator=generator),
        rewards=torch.randn(n, generator=generator),
        next_states=torch.randn(n, 5, generator=generator),
        next_actions=torch.randint(3, (n,), generator=generator),
        dones=(torch.rand(n, generator=generator) < 0.3).float() if with_dones else torch.zeros(n),
        tasks=torch.randn(n, 2, generator=generator),
    )


def test_target_is_a_fixed_point_of_the_td_operator():
    """g is the value of r_g under π: with u ≡ g the TD error, loss, gradient and uncertainty all vanish."""
    torch.manual_seed(0)
    target = UniversalMLP(5, 2, num_actions=3, hidden=(16, 16), num_heads=4)
    online = UniversalMLP(5, 2, num_actions=3, hidden=(16, 16), num_heads=4)
    uvu = UVU(online, target, gamma=0.97)  # a copy is refused at construction (it is this fixed point) ...
    online.load_state_dict(copy.deepcopy(target.state_dict()))  # ... so set u = g afterwards to test the maths
    batch = _batch(64, torch.Generator().manual_seed(1))
    loss = uvu.loss(batch)
    loss.backward()
    assert loss.item() == pytest.approx(0.0, abs=1e-12)
    assert all(p.grad.abs().max().item() < 1e-6 for p in online.parameters())
    assert uvu.uncertainty(batch.states, batch.actions, batch.tasks).abs().max().item() < 1e-12


def test_independent_networks_are_not_a_fixed_point():
    torch.manual_seed(0)
    uvu = UVU(
        UniversalMLP(5, 2, num_actions=3, hidden=(16,)), UniversalMLP(5, 2, num_actions=3, hidden=(16,)), gamma=0.9
    )
    batch = _batch(32, torch.Generator().manual_seed(2))
    assert uvu.loss(batch).item() > 1e-4
    assert (uvu.uncertainty(batch.states, batch.actions, batch.tasks) > 0).all()


class Table(nn.Module):
    """A tabular universal value function over one-hot states and tasks: f(s, a, z) = T[s, a, z]."""

    def __init__(self, num_states: int, num_actions: int, num_tasks: int, generator: torch.Generator) -> None:
        super().__init__()
        self.table = nn.Parameter(
            torch.randn(num_states, num_actions, num_tasks, 1, generator=generator, dtype=torch.float64)
        )

    def forward(self, states, actions, tasks):
        return self.table[states.argmax(1), actions, tasks.argmax(1)]  # (B, 1)


def test_tabular_uvu_zero_on_covered_futures_and_propagated_elsewhere():
    """A chain MDP 0→1→2→3→3 (one action, one policy). Data A: all of 0..3 (closed) — ε² = 0 everywhere.
    Data B: only 0, 1, 2 (state 3's transition missing): at convergence u(x) - g(x) = γ (u(x') - g(x')) on the data,
    so ε(2) = γ ε0(3), ε(1) = γ² ε0(3), ε(0) = γ³ ε0(3), where ε0(3) = u_0(3) - g(3) never changes."""
    gamma = 0.8
    mdp = FiniteMDP(
        next_state=torch.tensor([[1], [2], [3], [3]]),
        reward=torch.zeros(4, 1, dtype=torch.float64),
        policies=torch.zeros(1, 4, dtype=torch.long),
    )
    states, actions, tasks = mdp.features(torch.float64)
    for data_idx, closed in ((torch.arange(4), True), (torch.arange(3), False)):
        gen = torch.Generator().manual_seed(3)
        uvu = UVU(Table(4, 1, 1, gen), Table(4, 1, 1, gen), gamma=gamma)
        eps0_3 = (uvu.online.table[3] - uvu.target.table[3]).item()
        data = mdp.transitions(data_idx, dtype=torch.float64)
        fit(uvu, data, steps=3000, lr=1.0, generator=gen, optimizer="sgd")
        with torch.no_grad():
            eps2 = uvu.uncertainty(states, actions, tasks)
        if closed:
            assert eps2.max().item() < 1e-12
        else:
            expected = torch.tensor([gamma**6, gamma**4, gamma**2, 1.0], dtype=torch.float64) * eps0_3**2
            torch.testing.assert_close(eps2, expected, rtol=1e-6, atol=1e-12)


def test_wide_network_uvu_small_on_covered_large_off_data():
    """A neural UVU on a small MDP: after training, ε² on points whose future is covered is far below ε² off data."""
    torch.manual_seed(0)
    mdp = FiniteMDP.random(6, 2, 2, torch.Generator().manual_seed(4))
    m = 6 * 2 * 2
    data_idx = torch.randperm(m, generator=torch.Generator().manual_seed(5))[: m // 2]
    data = mdp.transitions(data_idx, dtype=torch.float64)

    def make():
        return UniversalMLP(6, 2, num_actions=2, hidden=(256,), num_heads=8).double()

    uvu = UVU(make(), make(), gamma=0.5)
    fit(uvu, data, steps=800, lr=3e-3, generator=torch.Generator(), optimizer="adam")
    with torch.no_grad():
        eps2 = uvu.uncertainty(*mdp.features(torch.float64))
    closed = mdp.closed_points(data_idx)
    covered = torch.zeros(m, dtype=torch.bool)
    covered[data_idx] = True
    assert closed.any() and (~covered).any()
    assert eps2[closed].max() < 0.05 * eps2[~covered].mean()


def test_shape_mismatch_between_online_and_target_is_refused_at_construction():
    """Two UniversalMLPs state their inputs and heads: 2 heads against 3 is refused before any call."""
    with pytest.raises(ValueError, match="online and target .* differ in outputs 2 vs 3"):
        UVU(
            UniversalMLP(5, 2, num_actions=3, hidden=(8,), num_heads=2),
            UniversalMLP(5, 2, num_actions=3, hidden=(8,), num_heads=3),
            gamma=0.9,
        )
    with pytest.raises(ValueError, match="differ in state_dim 5 vs 6"):
        UVU(
            UniversalMLP(5, 2, num_actions=3, hidden=(8,)),
            UniversalMLP(6, 2, num_actions=3, hidden=(8,)),
            gamma=0.9,
        )


class _Opaque(nn.Module):
    """A network that states no signature: its output shape is only known at the first call."""

    def __init__(self, heads: int) -> None:
        super().__init__()
        self.net = UniversalMLP(5, 2, num_actions=3, hidden=(8,), num_heads=heads)

    def forward(self, states, actions, tasks):
        return self.net(states, actions, tasks)


def test_shape_mismatch_of_networks_without_a_signature_is_an_error_at_the_first_call():
    torch.manual_seed(0)
    uvu = UVU(_Opaque(2), _Opaque(3), gamma=0.9)
    batch = _batch(4, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="online.*target"):
        uvu.loss(batch)
    with pytest.raises(ValueError, match="online.*target"):
        uvu.uncertainty(batch.states, batch.actions, batch.tasks)


def test_constructor_and_bonus_errors():
    net = UniversalMLP(5, 2, num_actions=3, hidden=(8,))
    with pytest.raises(ValueError, match="same one"):
        UVU(net, net, gamma=0.9)
    with pytest.raises(ValueError, match="share"):
        UVU(net, nn.Sequential(net.body), gamma=0.9)
    with pytest.raises(ValueError, match="gamma"):
        UVU(net, UniversalMLP(5, 2, num_actions=3, hidden=(8,)), gamma=1.0)
    uvu = UVU(net, UniversalMLP(5, 2, num_actions=3, hidden=(8,)), gamma=0.9)
    batch = _batch(6, torch.Generator().manual_seed(0))
    for bad_scale in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="scale"):
            uvu.bonus(batch.states, batch.actions, batch.tasks, scale=bad_scale)
    bonus = uvu.bonus(batch.states, batch.actions, batch.tasks, scale=2.0)
    torch.testing.assert_close(bonus, 2.0 * uvu.uncertainty(batch.states, batch.actions, batch.tasks).sqrt())
    assert not any(p.requires_grad for p in uvu.target.parameters())
    assert len(uvu.trainable_parameters()) == len(list(net.parameters()))


def test_transitions_reject_bad_data():
    gen = torch.Generator().manual_seed(0)
    good = _batch(5, gen)
    fields = {k: getattr(good, k) for k in good.__dataclass_fields__}
    bad_reward = good.rewards.clone()
    bad_reward[2] = float("nan")
    with pytest.raises(ValueError, match="rewards contain 1 non-finite"):
        Transitions(**{**fields, "rewards": bad_reward})
    with pytest.raises(ValueError, match="next_states"):
        Transitions(**{**fields, "next_states": good.next_states[:, :3]})
    with pytest.raises(ValueError, match="next_actions"):
        Transitions(**{**fields, "next_actions": good.next_actions.float()})
    with pytest.raises(ValueError, match="dones"):
        Transitions(**{**fields, "dones": torch.full((5,), 0.5)})
    with pytest.raises(ValueError, match="tasks"):
        Transitions(**{**fields, "tasks": good.tasks[:4]})
    # continuous actions (N, D_a): a NaN in a' must not reach the networks
    cont = {**fields, "actions": torch.zeros(5, 2), "next_actions": torch.zeros(5, 2)}
    Transitions(**cont)
    nan_next = torch.zeros(5, 2)
    nan_next[1, 0] = float("nan")
    with pytest.raises(ValueError, match="next_actions contain non-finite"):
        Transitions(**{**cont, "next_actions": nan_next})
    with pytest.raises(ValueError, match="empty"):
        good.index(torch.zeros(0, dtype=torch.long)).sample(4, gen)


def test_fit_stops_on_a_diverging_loss_and_checks_its_arguments():
    """Plain gradient descent with a huge step overflows within a few steps: fit must raise, not record NaNs."""
    torch.manual_seed(0)
    uvu = UVU(
        UniversalMLP(5, 2, num_actions=3, hidden=(16,)), UniversalMLP(5, 2, num_actions=3, hidden=(16,)), gamma=0.9
    )
    batch = _batch(32, torch.Generator().manual_seed(0))
    with pytest.raises(FloatingPointError, match="lower lr"):
        fit(uvu, batch, steps=200, lr=1e6, generator=torch.Generator(), optimizer="sgd")
    with pytest.raises(ValueError, match="lr must be positive"):
        fit(uvu, batch, steps=1, lr=float("nan"), generator=torch.Generator())
    with pytest.raises(ValueError, match="steps must be positive"):
        fit(uvu, batch, steps=0, lr=1e-3, generator=torch.Generator())
    with pytest.raises(ValueError, match="optimizer"):
        fit(uvu, batch, steps=1, lr=1e-3, generator=torch.Generator(), optimizer="rmsprop")


def test_network_input_errors_name_the_argument():
    net = UniversalMLP(5, 2, num_actions=3, hidden=(8,))
    batch = _batch(4, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="states"):
        net(batch.states[:, :4], batch.actions, batch.tasks)
    with pytest.raises(ValueError, match="actions"):
        net(batch.states, batch.actions + 3, batch.tasks)
    with pytest.raises(ValueError, match="tasks"):
        net(batch.states, batch.actions, batch.tasks[:, :1])
    with pytest.raises(ValueError, match="exactly one"):
        UniversalMLP(5, 2, hidden=(8,))


def test_loss_log_reads_a_gpu_back_in_blocks_and_names_the_first_bad_step():
    """On a GPU the losses are read back once per CHECK_EVERY steps (no host sync per step); the first non-finite
    loss is still named by its step. A CUDA device object needs no GPU; the tensors stay on the CPU."""
    log = LossLog(torch.device("cuda"), what="loss", lr=0.1)
    for value in (1.0, 2.0, float("nan"), 3.0):
        log.add(torch.tensor(value))
    assert log.values == []  # nothing read back yet
    with pytest.raises(FloatingPointError, match="loss is nan at step 2 .lr=0.1."):
        log.flush()
    cpu = LossLog(torch.device("cpu"), what="CQL loss", lr=0.1)
    cpu.add(torch.tensor(0.5))
    cpu.add(0.25)  # a float already on the host (the data-parallel path)
    assert cpu.values == [0.5, 0.25]
    with pytest.raises(FloatingPointError, match="CQL loss is inf at step 2"):
        cpu.add(torch.tensor(float("inf")))  # on the CPU each loss is checked as it comes
