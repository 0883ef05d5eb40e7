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
def test_kstep_pairs_of_a_trajectory_with_the_walks_own_actions(world, k):
    trajs = [explore(world, n_steps=6, rng=np.random.default_rng(s)) for s in (1, 2)]
    pairs = kstep_pairs(world, trajs, k, labels="walk")
    # a trajectory of n = 6 actions gives n - K + 1 pairs, less those whose two screens are the same
    kept = [(j, t) for j, tr in enumerate(trajs) for t in range(6 - k + 1) if tr.states[t] != tr.states[t + k]]
    assert len(pairs) == len(kept) and (pairs.k == k).all()
    for i, (j, t) in enumerate(kept):  # in walk order
        assert pairs.actions[i] == [trajs[j].actions[t]]
        assert np.array_equal(pairs.before[i], render(world, trajs[j].states[t]))
        assert np.array_equal(pairs.after[i], render(world, trajs[j].states[t + k]))


def test_kstep_labels_are_every_shortest_first_action_and_identical_screens_are_dropped(world):
    # a hand-made walk: home -> open app0 -> back -> open app1 -> open app0; at K = 2 the pair (home, home) has two
    # identical screens (dropped); (app0, app1) is one action apart, so its label is "open app1" (or its icon), not
    # the walk's navigate_back
    from iclr26.guishift.data import Trajectory
    from iclr26.guishift.env import HOME

    open0, open1 = {"action_type": "open_app", "app_name": "app0"}, {"action_type": "open_app", "app_name": "app1"}
    back = {"action_type": "navigate_back"}
    app0, app1 = step(world, HOME, open0).state, step(world, HOME, open1).state
    walk = Trajectory((HOME, app0, HOME, app1, app0), (open0, back, open1, open0))
    two = kstep_pairs(world, [walk], 2)
    assert len(two) == 2  # (home, home) dropped; (app0, app1) and (home, app0) kept
    assert open1 in two.actions[0] and back not in two.actions[0]
    assert two.actions == [optimal_first_actions(world, app0, app1)[1], optimal_first_actions(world, HOME, app0)[1]]
    three = kstep_pairs(world, [walk], 3)  # (home, app1) is one action apart; (app0, app0) is dropped
    assert three.actions == [optimal_first_actions(world, HOME, app1)[1]] and open0 not in three.actions[0]
    walked = kstep_pairs(world, [walk], 2, labels="walk")
    assert walked.actions == [[back], [open1]]  # the explorer's own first actions, the same pairs
    with pytest.raises(ValueError, match="labels"):
        kstep_pairs(world, [walk], 1, labels="random")


def test_kstep_labels_hold_the_walks_action_exactly_when_it_took_a_shortest_path(world):
    trajs = [explore(world, n_steps=8, rng=np.random.default_rng(s)) for s in range(6)]
    for k in (1, 2, 3):
        short, walked = kstep_pairs(world, trajs, k), kstep_pairs(world, trajs, k, labels="walk")
        assert len(short) == len(walked) > 0
        for labels, (own,), before, after in zip(short.actions, walked.actions, short.before, short.after,
                                                 strict=True):  # fmt: skip
            assert labels and not np.array_equal(before, after)
            if k == 1:
                assert own in labels  # one effective action is always a shortest path of length 1


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
