"""K-step pair construction from exploration and the downstream goal items."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.guishift.data import TransitionSet, explore, goal_items, kstep_pairs
from iclr26.guishift.env import generate_world, optimal_first_actions, render, step


@pytest.fixture(scope="module")
def world():
    return generate_world(n_apps=3, n_text=2, seed=3)


def test_exploration_is_a_valid_deterministic_walk(world):
    a = explore(world, n_steps=10, rng=np.random.default_rng(0))
    b = explore(world, n_steps=10, rng=np.random.default_rng(0))
    assert a == b and len(a.states) == 11 and len(a.actions) == 10
    for t, action in enumerate(a.actions):
        res = step(world, a.states[t], action)
        assert res.changed and res.state == a.states[t + 1]


@pytest.mark.parametrize("k", [1, 2, 4])
def test_kstep_pairs_of_a_trajectory(world, k):
    trajs = [explore(world, n_steps=6, rng=np.random.default_rng(s)) for s in (1, 2)]
    pairs = kstep_pairs(world, trajs, k)
    # a trajectory of n = 6 actions gives n - K + 1 pairs
    assert len(pairs) == 2 * (6 - k + 1)
    assert (pairs.k == k).all()
    for i, t in enumerate(range(6 - k + 1)):  # the first trajectory's pairs come first, in order
        assert pairs.actions[i] == [trajs[0].actions[t]]
        assert np.array_equal(pairs.before[i], render(world, trajs[0].states[t]))
        assert np.array_equal(pairs.after[i], render(world, trajs[0].states[t + k]))


def test_kstep_rejects_k0_and_a_short_trajectory_gives_none(world):
    with pytest.raises(ValueError, match="k must be >= 1"):
        kstep_pairs(world, [], 0)
    short = explore(world, n_steps=2, rng=np.random.default_rng(0))
    assert len(kstep_pairs(world, [short], 3)) == 0


def test_goal_items_have_their_distance_and_all_shortest_first_actions(world):
    items = goal_items(world, n=12, rng=np.random.default_rng(5), max_distance=3)
    assert len(items) == 12 and set(items.k.tolist()) <= {1, 2, 3}
    states = world.states()
    screens = {s: render(world, s).tobytes() for s in states}
    for i in range(len(items)):
        start = [s for s in states if screens[s] == items.before[i].tobytes()]
        goal = [s for s in states if screens[s] == items.after[i].tobytes()]
        assert len(start) == 1 and len(goal) == 1  # every state renders differently in this world
        assert optimal_first_actions(world, start[0], goal[0]) == (items.k[i], items.actions[i])
    clicks = goal_items(world, n=5, rng=np.random.default_rng(6), max_distance=1, clicks_only=True)
    assert all(a["action_type"] == "click" and "bbox" in a for row in clicks.actions for a in row)


def test_subset_and_concat(world):
    pairs = kstep_pairs(world, [explore(world, n_steps=5, rng=np.random.default_rng(0))], 1)
    both = TransitionSet.concat([pairs.subset([3, 1]), pairs.subset([0])])
    assert both.actions == [pairs.actions[3], pairs.actions[1], pairs.actions[0]]
    assert np.array_equal(both.after[2], pairs.after[0])
    with pytest.raises(ValueError, match="parts"):
        TransitionSet.concat([])
