"""Sampling episodes from a tabulated game: the agent-environment interaction LAMIR learns from.

Both players act at every step (simultaneous-move view); a behaviour policy is a table ``(K_p, A)`` per player, or
a stack ``(M, K_p, A)`` of tables with one of them assigned to each episode, or to each step of each episode (e.g.
random play up to a step, then one transformed-policy pair, for the value targets).
The learner sees, per step, each player's infoset (tensor, legal mask), the public state, the joint action, the
reward, whether the episode ended, and the next public state.

Glossary: ``H`` steps (``GameTree.max_steps``), ``B`` episodes, ``K_p`` infosets of player ``p``, ``A`` actions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.lamir.games import CHANCE, TERMINAL, GameTree


@dataclass(frozen=True)
class Trajectories:
    """A batch of episodes padded to ``H`` steps.

    Attributes:
        node: ``(H, B)`` the history at each step (``-1`` after the episode ended).
        next_node: ``(H, B)`` the history after the step's joint action (``-1`` on invalid steps).
        infoset: ``(H, B, 2)`` both players' infosets (0 on invalid steps, masked by ``valid``).
        action: ``(H, B, 2)`` the joint action.
        behaviour: ``(H, B, 2)`` probability the behaviour policy gave each taken action.
        reward: ``(H, B)`` player 0's reward of the step.
        terminal: ``(H, B)`` whether the step ended the episode.
        valid: ``(H, B)`` whether the step happened.
        assignment: ``(H, B, 2)`` which table of a stacked behaviour each player used at each step (0 for a single
            table).
    """

    node: np.ndarray
    next_node: np.ndarray
    infoset: np.ndarray
    action: np.ndarray
    behaviour: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    valid: np.ndarray
    assignment: np.ndarray


def behaviour_tables(
    tree: GameTree, policy: tuple[np.ndarray, np.ndarray], *, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """``μ = (1 − ε) π + ε · uniform(legal)`` for both players' tables ``(K_p, A)``.

    Raises:
        ValueError: if ``epsilon`` is outside ``[0, 1]`` or a table does not match the game.
    """
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    out = []
    for p in (0, 1):
        legal = tree.infoset_legal[p].astype(np.float64)
        if policy[p].shape != legal.shape:
            raise ValueError(f"policy table of player {p} must have shape {legal.shape}, got {policy[p].shape}")
        uniform = legal / legal.sum(-1, keepdims=True)
        out.append((1.0 - epsilon) * policy[p] + epsilon * uniform)
    return out[0], out[1]


def sample_trajectories(
    tree: GameTree,
    behaviour: tuple[np.ndarray, np.ndarray],
    *,
    batch: int,
    rng: np.random.Generator,
    assignment: np.ndarray | None = None,
) -> Trajectories:
    """Play ``batch`` episodes from the root with the behaviour tables.

    Args:
        tree: the game.
        behaviour: per player a table ``(K_p, A)``, or a stack ``(M_p, K_p, A)`` used with ``assignment``.
        batch: ``B``.
        rng: draws the actions.
        assignment: ``(B, 2)`` the table of each player's stack used in each episode, or ``(H, B, 2)`` per step
            (stacked behaviour only).

    Raises:
        ValueError: if the game has chance nodes (LAMIR's learner assumes none), ``batch`` is not positive, or
            ``assignment`` does not fit the behaviour.
    """
    if tree.has_chance:
        raise ValueError(f"{tree.name}: sampling for LAMIR's learner needs a game without chance nodes")
    if batch < 1:
        raise ValueError(f"batch must be positive, got {batch}")
    stacked = behaviour[0].ndim == 3
    if stacked != (assignment is not None) or behaviour[1].ndim != behaviour[0].ndim:
        raise ValueError("assignment must be given exactly when both behaviours are stacks (M, K_p, A)")
    h = tree.max_steps
    if assignment is None:
        assignment = np.zeros((h, batch, 2), dtype=np.int64)
        tables = (behaviour[0][None], behaviour[1][None])
    else:
        assignment = np.asarray(assignment, dtype=np.int64)
        if assignment.shape == (batch, 2):
            assignment = np.broadcast_to(assignment, (h, batch, 2)).copy()
        if assignment.shape != (h, batch, 2):
            raise ValueError(f"assignment must have shape ({batch}, 2) or ({h}, {batch}, 2), got {assignment.shape}")
        tables = behaviour
    node = np.full((h, batch), -1, dtype=np.int64)
    next_node = np.full((h, batch), -1, dtype=np.int64)
    infoset = np.zeros((h, batch, 2), dtype=np.int64)
    action = np.zeros((h, batch, 2), dtype=np.int64)
    prob = np.ones((h, batch, 2), dtype=np.float64)
    reward = np.zeros((h, batch), dtype=np.float64)
    terminal = np.zeros((h, batch), dtype=bool)
    valid = np.zeros((h, batch), dtype=bool)
    current = np.full(batch, tree.root, dtype=np.int64)
    alive = tree.node_kind[current] != TERMINAL
    for t in range(h):
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            break
        cur = current[idx]
        valid[t, idx] = True
        node[t, idx] = cur
        for p in (0, 1):
            info = tree.node_infoset[cur, p]
            infoset[t, idx, p] = info
            table = tables[p][assignment[t, idx, p], info]  # (n, A)
            cum = np.cumsum(table, axis=1)
            u = rng.random(idx.size)[:, None] * cum[:, -1:]
            act = np.minimum((u > cum).sum(1), table.shape[1] - 1)
            action[t, idx, p] = act
            prob[t, idx, p] = table[np.arange(idx.size), act]
        nxt = tree.children[cur, action[t, idx, 0], action[t, idx, 1]]
        if (nxt < 0).any():
            raise ValueError("a behaviour table put mass on an illegal action")
        if (tree.node_kind[nxt] == CHANCE).any():
            raise ValueError(f"{tree.name}: reached a chance node; LAMIR's learner assumes none")
        next_node[t, idx] = nxt
        reward[t, idx] = tree.reward[nxt]
        ended = tree.node_kind[nxt] == TERMINAL
        terminal[t, idx] = ended
        current[idx] = nxt
        alive[idx] = ~ended
    return Trajectories(
        node=node,
        next_node=next_node,
        infoset=infoset,
        action=action,
        behaviour=prob,
        reward=reward,
        terminal=terminal,
        valid=valid,
        assignment=assignment,
    )
