"""The K-step GUI transition dataset from automated exploration, and the downstream goal-reaching items.

GUI-Shift, ICLR 2026, arXiv 2505.12493, §3 (K-step GUI Transition): from an unlabeled trajectory
``S_0, a_0, S_1, ..., S_n`` take the pairs ``(S_t, S_{t+K})`` and ask for the first action ``a_t``; a trajectory of
``n`` actions gives up to ``n - K + 1`` pairs for each K. No instruction is involved.

The paper's trajectories are recorded episodes, whose actions head for a goal; a uniformly random walk wanders, so
its own first action is often not one that leads to ``S_{t+K}`` at all (it may go back and forth), and a pair whose
two screens are identical asks for an action that changes nothing. :func:`kstep_pairs` therefore labels a pair with
the *set* of first actions of the shortest paths from ``S_t`` to ``S_{t+K}`` (as :func:`goal_items` does; the
reward accepts any of them) and drops pairs whose screens are identical; ``labels="walk"`` keeps the explorer's own
action (the paper's rule for recorded episodes).

1. :func:`explore` walks a world with uniformly random effective actions (the "automated exploration").
2. :func:`kstep_pairs` cuts trajectories into ``(S_t, S_{t+K}) -> first actions`` items.
3. :func:`goal_items` draws downstream items: a start state, a goal state at shortest distance ``d`` and every
   first action of a shortest path (the automation task with the goal given as its screen).

Shape glossary: ``M`` items, ``H = W`` pixels; images ``(M, H, W, 3)`` uint8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from iclr26.guishift.env import HOME, State, World, optimal_first_actions, render, shortest_paths, successors

__all__ = ["Trajectory", "TransitionSet", "derangement", "explore", "goal_items", "kstep_pairs", "random_state"]


@dataclass(frozen=True)
class Trajectory:
    """An exploration trajectory: ``len(states) == len(actions) + 1``; ``states[t+1] = step(states[t], actions[t])``."""

    states: tuple[State, ...]
    actions: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class TransitionSet:
    """Items ``(before, after) -> first action``.

    Attributes:
        before: ``(M, H, W, 3)`` screens ``S_t`` (the current screen).
        after: ``(M, H, W, 3)`` screens ``S_{t+K}`` (or the goal screen).
        actions: per item the list of correct actions (ground-truth dicts; clicks carry ``bbox``): every first
            action of a shortest path to the after-screen (or the explorer's own action, ``labels="walk"``).
        k: ``(M,)`` the step gap K (or the goal distance d).
    """

    before: np.ndarray
    after: np.ndarray
    actions: list[list[dict[str, Any]]]
    k: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    @staticmethod
    def concat(parts: list[TransitionSet]) -> TransitionSet:
        """The items of ``parts`` one after the other."""
        if not parts:
            raise ValueError("parts must hold at least one TransitionSet")
        return TransitionSet(
            np.concatenate([p.before for p in parts]),
            np.concatenate([p.after for p in parts]),
            [a for p in parts for a in p.actions],
            np.concatenate([p.k for p in parts]),
        )

    def subset(self, idx: np.ndarray | list[int]) -> TransitionSet:
        """The items at ``idx``, in that order."""
        idx = np.asarray(idx, dtype=np.int64)
        return TransitionSet(self.before[idx], self.after[idx], [self.actions[i] for i in idx], self.k[idx])


def random_state(world: World, rng: np.random.Generator) -> State:
    """A uniformly drawn state of the world (home included)."""
    states = world.states()
    return states[int(rng.integers(len(states)))]


def explore(world: World, *, n_steps: int, rng: np.random.Generator, start: State | None = None) -> Trajectory:
    """A random walk of ``n_steps`` effective actions (each drawn uniformly among those that change the screen)."""
    state = HOME if start is None else start
    states, actions = [state], []
    for _ in range(n_steps):
        options = successors(world, state)
        action, state = options[int(rng.integers(len(options)))]
        states.append(state)
        actions.append(action)
    return Trajectory(tuple(states), tuple(actions))


def kstep_pairs(
    world: World, trajectories: list[Trajectory], k: int, *, labels: Literal["shortest", "walk"] = "shortest"
) -> TransitionSet:
    """The K-step items of ``trajectories``: ``(S_t, S_{t+K})`` for ``t = 0 .. n-K``, without the pairs whose two
    screens are identical.

    Args:
        world: the world the trajectories walked.
        trajectories: the walks.
        k: the step gap K.
        labels: ``"shortest"``: every first action of a shortest path from ``S_t`` to ``S_{t+K}`` (the walk's own
            ``a_t`` is one of them exactly when the walk took a shortest path); ``"walk"``: ``[a_t]``.

    Raises:
        ValueError: if ``k < 1`` or ``labels`` is neither.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if labels not in ("shortest", "walk"):
        raise ValueError(f"labels must be 'shortest' or 'walk', got {labels!r}")
    before, after, actions = [], [], []
    for traj in trajectories:
        screens = [render(world, s) for s in traj.states]
        # the self-supervised task: up to n − K + 1 pairs (S_t, S_{t+K}) per walk of n actions; infer the first action
        for t in range(len(traj.actions) - k + 1):
            if np.array_equal(screens[t], screens[t + k]):
                continue  # nothing to infer: the K actions came back to the same screen
            if labels == "walk":
                firsts = [traj.actions[t]]
            else:  # the walk is a path of K actions, so the goal lies within K
                _, firsts = optimal_first_actions(world, traj.states[t], traj.states[t + k], max_depth=k)
            before.append(screens[t])
            after.append(screens[t + k])
            actions.append(firsts)
    return _pack(world, before, after, actions, [k] * len(actions))


def goal_items(
    world: World, *, n: int, rng: np.random.Generator, max_distance: int = 4, clicks_only: bool = False
) -> TransitionSet:
    """``n`` downstream items: a random start, a goal at shortest distance ``d`` drawn uniformly from
    ``1..max_distance``, and every first action of a shortest path.

    Args:
        world: the world (held-out apps for the evaluation).
        n: items.
        rng: the draw.
        max_distance: the largest goal distance.
        clicks_only: keep only items whose correct actions are all clicks (the grounding probe at ``d = 1``).
    """
    before, after, actions, ks = [], [], [], []
    guard = 0
    while len(actions) < n:
        guard += 1
        if guard > 200 * n:
            raise RuntimeError("could not draw enough goal items; the world is too small")
        d = int(rng.integers(1, max_distance + 1))
        start = random_state(world, rng)
        paths = shortest_paths(world, start, d)
        at_d = sorted(s for s, (dist, _) in paths.items() if dist == d)
        if not at_d:
            continue
        goal = at_d[int(rng.integers(len(at_d)))]
        firsts = paths[goal][1]
        if clicks_only and any(a["action_type"] != "click" for a in firsts):
            continue
        before.append(render(world, start))
        after.append(render(world, goal))
        actions.append(firsts)
        ks.append(d)
    return _pack(world, before, after, actions, ks)


def _pack(world: World, before: list, after: list, actions: list, ks: list[int]) -> TransitionSet:
    shape = (0, world.size, world.size, 3)
    return TransitionSet(
        np.stack(before) if before else np.zeros(shape, np.uint8),
        np.stack(after) if after else np.zeros(shape, np.uint8),
        actions,
        np.asarray(ks, dtype=np.int64),
    )


def derangement(n: int, seed: int) -> np.ndarray:
    """A random permutation of ``range(n)`` with no fixed point (for ``n >= 2``): item ``order[i]`` takes the slot of
    ``order[i - 1]`` for a random ``order`` (a cyclic shift)."""
    order = np.random.default_rng(seed).permutation(n)
    perm = np.empty(n, dtype=np.int64)
    perm[order] = np.roll(order, 1)
    return perm
