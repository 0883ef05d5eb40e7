"""Measuring policies the way the paper does: exploitability (OpenSpiel's NashConv) and head-to-head results.

Glossary: ``K_p`` infosets of player ``p``, ``A`` actions, ``N`` nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.lamir.games import CHANCE, DECISION, TERMINAL, GameTree


def tabular_policy(game: Any, tree: GameTree, tables: tuple[np.ndarray, np.ndarray]) -> Any:
    """An OpenSpiel ``TabularPolicy`` holding both players' tables (keyed by information-state strings).

    Infosets at which a player has only the no-op slot (turn-based games) are not decision points in OpenSpiel and
    are skipped. Rows are renormalised in float64 (tables computed in float32 sum to 1 only up to ~1e-7, which
    OpenSpiel's samplers reject).
    """
    from open_spiel.python import policy as policy_lib

    tab = policy_lib.TabularPolicy(game)
    width = game.num_distinct_actions()
    for p in (0, 1):
        acting = tree.infoset_legal[p][:, :width].any(-1)
        for k, key in enumerate(tree.infoset_key[p]):
            if acting[k] and key in tab.state_lookup:
                row = np.asarray(tables[p][k][:width], dtype=np.float64)
                tab.policy_for_key(key)[:] = row / row.sum()
    return tab


def exploitability(game: Any, tree: GameTree, tables: tuple[np.ndarray, np.ndarray]) -> float:
    """``NashConv / 2`` of the profile, computed by OpenSpiel's best responses (``exploitability.nash_conv``)."""
    from open_spiel.python.algorithms import exploitability as expl

    return float(expl.nash_conv(game, tabular_policy(game, tree, tables))) / 2.0


@dataclass(frozen=True)
class Outcomes:
    """Exact outcome distribution of a profile, from player 0's side.

    Attributes:
        value: player 0's expected return.
        win: probability that player 0's return is positive.
        draw: probability that it is zero.
        loss: probability that it is negative.
    """

    value: float
    win: float
    draw: float
    loss: float

    @property
    def score(self) -> float:
        """``win + draw / 2``: the win rate with draws counted half."""
        return self.win + 0.5 * self.draw


def exact_outcomes(tree: GameTree, tables: tuple[np.ndarray, np.ndarray]) -> Outcomes:
    """Play the profile out exactly (forward reach over the tabulated tree).

    The return of a terminal node is the sum of rewards on its path.
    """
    reach = np.zeros(tree.num_nodes)
    ret = np.zeros(tree.num_nodes)
    reach[tree.root] = 1.0
    # Children have larger ids than parents (enumeration order), so one pass in id order is topological.
    for node in range(tree.num_nodes):
        if reach[node] == 0 and node != tree.root:
            continue
        kind = tree.node_kind[node]
        if kind == DECISION:
            p0 = tables[0][tree.node_infoset[node, 0]]
            p1 = tables[1][tree.node_infoset[node, 1]]
            for a0, a1 in zip(*np.nonzero(tree.children[node] >= 0), strict=True):
                child = tree.children[node, a0, a1]
                reach[child] += reach[node] * p0[a0] * p1[a1]
                ret[child] = ret[node] + tree.reward[child]
        elif kind == CHANCE:
            for child, prob in zip(tree.chance_children[node], tree.chance_probs[node], strict=True):
                if child >= 0:
                    reach[child] += reach[node] * prob
                    ret[child] = ret[node] + tree.reward[child]
    terminal = tree.node_kind == TERMINAL
    r, w = ret[terminal], reach[terminal]
    return Outcomes(
        value=float(np.dot(w, r)),
        win=float(w[r > 0].sum()),
        draw=float(w[r == 0].sum()),
        loss=float(w[r < 0].sum()),
    )


def seat_averaged_score(
    tree: GameTree, agent: tuple[np.ndarray, np.ndarray], opponent: tuple[np.ndarray, np.ndarray]
) -> float:
    """The agent's exact score (win + draw/2) against the opponent, averaged over the two seats."""
    as_first = exact_outcomes(tree, (agent[0], opponent[1]))
    as_second = exact_outcomes(tree, (opponent[0], agent[1]))
    return 0.5 * (as_first.score + (as_second.loss + 0.5 * as_second.draw))


@dataclass(frozen=True)
class MatchResult:
    """Sampled head-to-head games.

    Attributes:
        games: games played (half in each seat).
        wins, draws, losses: from the agent's side.
        score: ``(wins + draws / 2) / games``.
        ci95: half-width of the normal-approximation 95% interval of ``score``.
    """

    games: int
    wins: int
    draws: int
    losses: int
    score: float
    ci95: float


def score_interval(wins: int, draws: int, losses: int) -> MatchResult:
    """Score and its 95% half-width ``1.96 · sd / √n`` from per-game scores in {1, 1/2, 0}.

    Raises:
        ValueError: if no game was played.
    """
    n = wins + draws + losses
    if n == 0:
        raise ValueError("score_interval needs at least one game")
    mean = (wins + 0.5 * draws) / n
    second = (wins + 0.25 * draws) / n
    var = max(second - mean * mean, 0.0)
    return MatchResult(games=n, wins=wins, draws=draws, losses=losses, score=mean, ci95=1.96 * math.sqrt(var / n))


def play_match(game: Any, make_agent: Any, make_opponent: Any, *, games: int, seed: int) -> MatchResult:
    """Play ``games`` games with OpenSpiel's ``evaluate_bots``, the agent taking each seat in turn.

    Args:
        game: the ``pyspiel.Game``.
        make_agent: ``(player, seed) -> pyspiel.Bot`` for the agent.
        make_opponent: ``(player, seed) -> pyspiel.Bot`` for the opponent.
        games: number of games (even numbers split the seats equally).
        seed: seeds the bots and chance.

    Raises:
        ValueError: if ``games`` is not positive.
    """
    from open_spiel.python.algorithms.evaluate_bots import evaluate_bots

    if games < 1:
        raise ValueError(f"games must be positive, got {games}")
    rng = np.random.default_rng(seed)
    wins = draws = losses = 0
    for g in range(games):
        seat = g % 2
        bots = [None, None]
        bots[seat] = make_agent(seat, int(rng.integers(2**31)))
        bots[1 - seat] = make_opponent(1 - seat, int(rng.integers(2**31)))
        returns = evaluate_bots(game.new_initial_state(), bots, rng)
        mine = returns[seat]
        wins += mine > 0
        draws += mine == 0
        losses += mine < 0
    return score_interval(int(wins), int(draws), int(losses))
