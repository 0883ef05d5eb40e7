"""GoToDoor (minigrid) wrapper, rejection metrics and the offline Q-learner."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.uvu.gotodoor import DONE, NUM_ACTIONS, GoToDoorFamily
from iclr26.uvu.offline import CQLConfig, DiscreteQNetwork, cql_loss, train_cql_dqn
from iclr26.uvu.rejection import oracle_curve, rank_correlation, rejection_curve, rejection_grid
from iclr26.uvu.studies import episodes_to_transitions, held_out


@pytest.fixture(scope="module")
def family():
    return GoToDoorFamily(7)


def test_task_layout_and_features(family):
    task = family.reset(11)
    assert [d[1] for d in task.doors][0] == 0 and task.doors[2][0] == 0  # top door on y = 0, left door on x = 0
    assert len({d[2] for d in task.doors}) == 4  # four distinct colours
    assert (task.doors[task.target_wall][0], task.doors[task.target_wall][1]) == tuple(family.env.target_pos)
    f = family.features(task)
    # one-hot x, y, direction + 4 doors × (x, y, colour) = 3 + 12 ones
    assert f.shape == (family.state_dim,) and f.sum() == 15 and set(np.unique(f)) == {0.0, 1.0}
    z = family.task_code(task)
    assert z.sum() == 1 and z[task.target_color] == 1


def test_expert_solves_every_task_on_the_shortest_path(family):
    gamma = 0.9
    for seed in range(12):
        task = family.reset(seed)
        episode = family.collect(task, epsilon=0.0, max_steps=None, rng=np.random.default_rng(0))
        assert episode.actions[-1] == DONE and episode.dones[-1] == 1 and episode.rewards[-1] > 0
        assert episode.dones[:-1].sum() == 0 and episode.rewards[:-1].sum() == 0
        # the roll-out of the expert policy returns γ^(T-1) r_T with minigrid's r_T = 1 - 0.9 T / T_max
        out = family.rollout(task, lambda _f, _z: family.expert_action(), gamma=gamma)
        t = len(episode.actions)
        assert out.success and out.steps == t
        assert out.discounted_return == pytest.approx(gamma ** (t - 1) * (1 - 0.9 * t / family.env.max_steps))


def test_rollout_detects_cycles_as_failures(family):
    task = family.reset(3)
    out = family.rollout(task, lambda _f, _z: 0, gamma=0.9)  # always turn left: the pose repeats after 4 steps
    assert not out.success and out.discounted_return == 0.0 and out.steps == 4
    out = family.rollout(task, lambda _f, _z: 3, gamma=0.9)  # 'pickup' changes nothing: repeats at once
    assert not out.success and out.steps == 1


def test_cut_off_episodes_are_not_terminal(family):
    task = family.reset(5)
    episode = family.collect(task, epsilon=0.0, max_steps=2, rng=np.random.default_rng(0))
    assert len(episode.actions) == 2 and episode.dones.sum() == 0
    data = episodes_to_transitions([episode], family.task_dim, torch.device("cpu"))
    assert len(data) == 2 and data.tasks[0, task.target_color] == 1
    with pytest.raises(ValueError, match="epsilon"):
        family.collect(task, epsilon=1.5, max_steps=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_steps"):
        family.collect(task, epsilon=0.0, max_steps=0, rng=np.random.default_rng(0))


def test_held_out_rule():
    from iclr26.uvu.gotodoor import Task

    doors = ((2, 0, 0), (3, 6, 1), (0, 2, 2), (6, 3, 3))
    assert held_out(Task(seed=0, doors=doors, target_wall=1, target_color=0))  # colour 0 on wall 1
    assert not held_out(Task(seed=0, doors=doors, target_wall=0, target_color=0))


def test_rejection_curve_by_hand():
    # most certain first: tasks 0 (0.1), 3 (0.2), 2 (0.5), 1 (0.9) with outcomes 1, 1, 0, 0
    # ρ = 0: 2/4 ; ρ = 0.25: keep 3 → 2/3 ; ρ = 0.5: keep 2 → 1 ;  AUC = (0.5 + 2/3 + 1)/3
    curve = rejection_curve(np.array([0.1, 0.9, 0.5, 0.2]), np.array([1, 0, 0, 1]), np.array([0.0, 0.25, 0.5]))
    np.testing.assert_allclose(curve.success, [0.5, 2 / 3, 1.0])
    assert curve.auc == pytest.approx((0.5 + 2 / 3 + 1.0) / 3)
    oracle = oracle_curve(np.array([0, 1, 0, 1]), np.array([0.0, 0.5]))
    np.testing.assert_allclose(oracle.success, [0.5, 1.0])
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.3, 0.2])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="fractions"):
        rejection_curve(np.ones(3), np.ones(3), np.array([1.0]))
    with pytest.raises(ValueError, match="non-finite"):
        rejection_curve(np.array([np.nan, 1.0]), np.ones(2), np.array([0.0]))
    with pytest.raises(ValueError, match="max_fraction"):
        rejection_grid(1.0, 5)
    with pytest.raises(ValueError, match="success must hold only 0/1"):
        rejection_curve(np.ones(3), np.array([1.0, 0.5, 0.0]), np.array([0.0]))
    with pytest.raises(ValueError, match="finite"):
        rank_correlation(np.array([1.0, np.nan, 3.0]), np.array([0.1, 0.3, 0.2]))
    assert np.isnan(rank_correlation(np.ones(3), np.array([0.1, 0.3, 0.2])))  # constant: undefined, not 0


def test_rejection_counts_are_not_lost_to_rounding():
    # ρ = 0.57 of T = 100 rejects floor(57) = 57 tasks; in floating point 0.57 * 100 = 56.99999999999999, whose
    # floor would keep 44 tasks. The 43 most certain tasks all succeed and the rest fail, so keeping exactly 43
    # gives a success rate of 1, keeping 44 gives 43/44.
    uncertainty = np.arange(100.0)
    success = (uncertainty < 43).astype(float)
    assert 0.57 * 100 < 57
    curve = rejection_curve(uncertainty, success, np.array([0.57]))
    assert curve.success[0] == 1.0


def test_cql_loss_by_hand_and_training_reduces_it():
    torch.manual_seed(0)
    q = DiscreteQNetwork(4, 2, NUM_ACTIONS, hidden=(16,))
    g = torch.Generator().manual_seed(0)
    from iclr26.uvu.data import Transitions

    n = 32
    data = Transitions(
        states=torch.randn(n, 4, generator=g),
        actions=torch.randint(NUM_ACTIONS, (n,), generator=g),
        rewards=torch.rand(n, generator=g),
        next_states=torch.randn(n, 4, generator=g),
        next_actions=torch.zeros(n, dtype=torch.long),
        dones=torch.ones(n),
        tasks=torch.randn(n, 2, generator=g),
    )
    # all terminal: y = r, so the loss is ½ mean (Q(s,a) - r)² + α mean(logsumexp Q(s,·) - Q(s,a))
    with torch.no_grad():
        q_all = q(data.states, data.tasks)
        q_sa = q_all[torch.arange(n), data.actions]
        expected = 0.5 * (q_sa - data.rewards).pow(2).mean() + 0.3 * (torch.logsumexp(q_all, 1) - q_sa).mean()
    assert cql_loss(q, q, data, gamma=0.9, alpha=0.3).item() == pytest.approx(expected.item(), rel=1e-6)
    losses = train_cql_dqn(
        q,
        data,
        CQLConfig(steps=200, batch_size=32, lr=1e-2, gamma=0.9, alpha=0.3, target_every=20),
        torch.Generator().manual_seed(1),
    )
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:5])
