"""Episode sampling from the tabulated game: consistency with the tree, behaviour bookkeeping, per-step tables."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from iclr26.lamir.games import TERMINAL, load_goofspiel  # noqa: E402
from iclr26.lamir.trajectories import behaviour_tables, sample_trajectories  # noqa: E402


def uniform(tree):
    return tuple(tree.infoset_legal[p] / tree.infoset_legal[p].sum(-1, keepdims=True) for p in (0, 1))


def lowest_card(tree):
    """Deterministic tables playing the lowest legal card."""
    return tuple((legal & (legal.cumsum(-1) == 1)).astype(np.float64) for legal in tree.infoset_legal)


def test_episodes_follow_the_tree_and_end_at_terminals():
    tree = load_goofspiel(4)
    traj = sample_trajectories(tree, uniform(tree), batch=50, rng=np.random.default_rng(0))
    # Goofspiel 4 always lasts 3 decision steps; the last one ends the episode with the win/loss reward.
    assert traj.valid.all()
    assert traj.terminal[-1].all() and not traj.terminal[:-1].any()
    assert (tree.node_kind[traj.next_node[-1]] == TERMINAL).all()
    np.testing.assert_array_equal(traj.next_node[:-1], traj.node[1:])
    np.testing.assert_array_equal(traj.next_node, tree.children[traj.node, traj.action[..., 0], traj.action[..., 1]])
    assert set(np.unique(traj.reward[-1])) <= {-1.0, 0.0, 1.0}
    # Uniform behaviour: the probability of a taken action is 1 / (number of legal actions).
    for p in (0, 1):
        legal = tree.infoset_legal[p][traj.infoset[..., p]].sum(-1)
        np.testing.assert_allclose(traj.behaviour[..., p], 1.0 / legal)


def test_epsilon_mixes_toward_uniform():
    tree = load_goofspiel(3)
    greedy = lowest_card(tree)
    mixed = behaviour_tables(tree, greedy, epsilon=0.5)
    # Root: 3 legal cards; μ = 0.5 · (1, 0, 0) + 0.5 · (1/3, 1/3, 1/3).
    np.testing.assert_allclose(mixed[0][tree.node_infoset[tree.root, 0]], [2 / 3, 1 / 6, 1 / 6])
    with pytest.raises(ValueError, match="epsilon"):
        behaviour_tables(tree, greedy, epsilon=1.5)


def test_per_step_assignment_switches_tables():
    tree = load_goofspiel(3)
    first = lowest_card(tree)
    stacks = tuple(np.stack([first[p], uniform(tree)[p]]) for p in (0, 1))
    # Step 0 uniform (table 1), step 1 deterministic "lowest legal card" (table 0).
    assignment = np.zeros((tree.max_steps, 40, 2), dtype=np.int64)
    assignment[0] = 1
    traj = sample_trajectories(tree, stacks, batch=40, rng=np.random.default_rng(1), assignment=assignment)
    np.testing.assert_allclose(traj.behaviour[0], 1 / 3)
    np.testing.assert_allclose(traj.behaviour[1], 1.0)
    for p in (0, 1):
        lowest = tree.infoset_legal[p][traj.infoset[1, :, p]].argmax(-1)
        np.testing.assert_array_equal(traj.action[1, :, p], lowest)
    assert traj.assignment.shape == (tree.max_steps, 40, 2)


def test_sampling_rejects_bad_arguments():
    tree = load_goofspiel(3)
    with pytest.raises(ValueError, match="batch"):
        sample_trajectories(tree, uniform(tree), batch=0, rng=np.random.default_rng(0))
    stacks = tuple(u[None] for u in uniform(tree))
    with pytest.raises(ValueError, match="assignment"):
        sample_trajectories(tree, stacks, batch=4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        sample_trajectories(tree, stacks, batch=4, rng=np.random.default_rng(0), assignment=np.zeros((3, 2)))
