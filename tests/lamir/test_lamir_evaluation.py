"""Exact outcomes, seat-averaged scores and match intervals against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from iclr26.lamir.evaluation import exact_outcomes, score_interval, seat_averaged_score  # noqa: E402
from iclr26.lamir.games import load_goofspiel  # noqa: E402


def bids(p_high: float) -> np.ndarray:
    """A one-infoset table of II-Goofspiel 2: bid card 1 (slot 0) or card 2 (slot 1, with probability p_high)."""
    return np.array([[1.0 - p_high, p_high]])


def test_goofspiel2_is_the_hand_derived_matrix_game():
    # II-Goofspiel 2 (points 2 then 1): one decision, the last bids are forced. Bidding card 2 against card 1 wins
    # the 2-point prize and loses the 1-point one: a win; equal bids tie both rounds: a draw.
    tree = load_goofspiel(2)
    assert tree.max_steps == 1
    rewards = tree.reward[tree.children[tree.root]]
    np.testing.assert_array_equal(rewards, [[0.0, -1.0], [1.0, 0.0]])


def test_exact_outcomes_by_hand():
    # Player 0 bids high with a = 3/4, player 1 with b = 1/2: win = a(1-b) = 3/8, loss = (1-a)b = 1/8,
    # draw = 1/2, value = 3/8 - 1/8 = 1/4, score = 3/8 + 1/4 = 5/8.
    tree = load_goofspiel(2)
    out = exact_outcomes(tree, (bids(0.75), bids(0.5)))
    assert (out.win, out.loss, out.draw) == pytest.approx((0.375, 0.125, 0.5))
    assert out.value == pytest.approx(0.25)
    assert out.score == pytest.approx(0.625)


def test_seat_averaged_score_uses_each_seat_table():
    # Agent: seat 0 bids high with 3/4, seat 1 never bids high; opponent: 1/2 in both seats.
    # Seat 0: score 5/8 (previous test). Seat 1: player 0 (opponent) wins c(1-d) = 1/2, loses (1-c)d = 0, draws
    # 1/2, so the agent scores 0 + 1/4. Average (5/8 + 1/4) / 2 = 7/16 (seat 0's table in both seats would give
    # 5/8).
    tree = load_goofspiel(2)
    agent = (bids(0.75), bids(0.0))
    opponent = (bids(0.5), bids(0.5))
    assert seat_averaged_score(tree, agent, opponent) == pytest.approx(7 / 16)


def test_score_interval_by_hand():
    # Per-game scores (1, 1, 1/2, 0): mean 5/8; population variance (2·(3/8)² + (1/8)² + (5/8)²) / 4 = 11/64;
    # half-width 1.96 · sqrt(11/64 / 4).
    result = score_interval(2, 1, 1)
    assert result.score == pytest.approx(0.625)
    assert result.ci95 == pytest.approx(1.96 * math.sqrt(11 / 256))
    assert score_interval(5, 0, 0).ci95 == 0.0  # no spread, no interval
    with pytest.raises(ValueError, match="at least one game"):
        score_interval(0, 0, 0)
