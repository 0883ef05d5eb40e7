"""CFR+ on flat subgames: hand-computed steps, closed-form equilibria, and exactness of the passes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel")  # the package re-exports the OpenSpiel bot (extra "games")

from iclr26.lamir.subgame import (  # noqa: E402
    SubgameBuilder,
    best_response,
    best_response_values,
    evaluate_profile,
    regret_matching_plus,
    solve_cfr_plus,
)


def matrix_game(payoff: np.ndarray):
    """A one-shot simultaneous game with player 0's payoff matrix."""
    b = SubgameBuilder()
    i0 = b.infoset(0, "row", range(payoff.shape[0]))
    i1 = b.infoset(1, "col", range(payoff.shape[1]))
    kids = np.array([[b.terminal(payoff[i, j]) for j in range(payoff.shape[1])] for i in range(payoff.shape[0])])
    return b.finalize([b.decision((i0, i1), kids)], [1.0])


def test_regret_matching_plus_by_hand():
    # Infoset 0 has regrets (2, -1, 1) -> positive parts (2, 0, 1) / 3; infoset 1 has (-1, 0) -> uniform.
    sigma = regret_matching_plus(np.array([2.0, -1.0, 1.0, -1.0, 0.0]), np.array([0, 0, 0, 1, 1]), 2)
    np.testing.assert_allclose(sigma, [2 / 3, 0.0, 1 / 3, 0.5, 0.5])


def test_matching_pennies_variant_has_the_closed_form_equilibrium():
    # Payoff [[2, -1], [-1, 1]]: the row player mixes p with 2p - (1-p) = -p + (1-p) -> p = 2/5;
    # the column player mixes q with 2q - (1-q) = -q + (1-q) -> q = 2/5; value = 2·(2/5) - 3/5 = 1/5.
    sg = matrix_game(np.array([[2.0, -1.0], [-1.0, 1.0]]))
    sol = solve_cfr_plus(sg, iterations=2000)
    np.testing.assert_allclose(sol.strategy[0], [0.4, 0.6], atol=2e-3)
    np.testing.assert_allclose(sol.strategy[1], [0.4, 0.6], atol=2e-3)
    assert sol.value == pytest.approx(0.2, abs=2e-3)
    br0, br1 = best_response_values(sg, sol.strategy)
    assert br0 + br1 == pytest.approx(0.0, abs=5e-3)  # NashConv ≈ 0


def test_best_response_by_hand():
    # Matrix [[2, -1], [-1, 1]] against the uniform column: rows are worth 0.5 and 0, so row 0. Against the
    # uniform row, columns are worth (to the column player) -0.5 and 0, so column 1.
    sg = matrix_game(np.array([[2.0, -1.0], [-1.0, 1.0]]))
    uniform = (np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    np.testing.assert_array_equal(best_response(sg, uniform, 0), [1.0, 0.0])
    np.testing.assert_array_equal(best_response(sg, uniform, 1), [0.0, 1.0])
    # Sequential: player 0 picks left/right, then player 1 (not seeing it) picks y0/y1; payoffs (3, -1) / (0, 2).
    # Against y = (1/4, 3/4): left is worth 0, right 1.5, so right. Against x = (1/4, 3/4): y0 is worth
    # -(1/4·3 + 3/4·0) = -0.75 to player 1 and y1 -(1/4·(-1) + 3/4·2) = -1.25, so y0.
    b = SubgameBuilder()
    j = b.infoset(1, "y", (0, 1))
    left = b.decision((-1, j), np.array([[b.terminal(3.0), b.terminal(-1.0)]]))
    right = b.decision((-1, j), np.array([[b.terminal(0.0), b.terminal(2.0)]]))
    i = b.infoset(0, "x", (0, 1))
    seq = b.finalize([b.decision((i, -1), np.array([[left], [right]]))], [1.0])
    profile = (np.array([0.25, 0.75]), np.array([0.25, 0.75]))
    np.testing.assert_array_equal(best_response(seq, profile, 0), [0.0, 1.0])
    np.testing.assert_array_equal(best_response(seq, profile, 1), [1.0, 0.0])
    # Best-response values: player 0 gets 1.5; player 1 gets -0.75.
    assert best_response_values(seq, profile) == pytest.approx((1.5, -0.75))


def test_evaluate_profile_counterfactual_values_by_hand():
    # Player 0 moves first (player 1 forced), then player 1 at one infoset (it does not see player 0's move).
    b = SubgameBuilder()
    j = b.infoset(1, "y", (0, 1))
    left = b.decision((-1, j), np.array([[b.terminal(3.0), b.terminal(-1.0)]]))
    right = b.decision((-1, j), np.array([[b.terminal(0.0), b.terminal(2.0)]]))
    i = b.infoset(0, "x", (0, 1))
    root = b.decision((i, -1), np.array([[left], [right]]))
    sg = b.finalize([root], [0.5])
    sol = evaluate_profile(sg, (np.array([0.25, 0.75]), np.array([0.5, 0.5])))
    # v(left) = 1, v(right) = 1 -> root value 1, weighted by the external reach 0.5.
    assert sol.value == pytest.approx(0.5)
    # Player 1's cfv: 0.5 · [0.25 · (-(0.5·3 + 0.5·-1)) + 0.75 · (-(0.5·0 + 0.5·2))] = 0.5 · (-0.25 - 0.75) = -0.5.
    assert sol.infoset_cfv[1][j] == pytest.approx(-0.5)
    # Player 1's counterfactual reach of y: player 0 reaches both nodes, total 0.5 · (0.25 + 0.75).
    assert sol.infoset_cf_reach[1][j] == pytest.approx(0.5)


def test_chance_node_weights_the_values():
    b = SubgameBuilder()
    i = b.infoset(0, "x", (0, 1))
    heads = b.decision((i, -1), np.array([[b.terminal(1.0)], [b.terminal(0.0)]]))
    j = b.infoset(0, "z", (0, 1))
    tails = b.decision((j, -1), np.array([[b.terminal(0.0)], [b.terminal(4.0)]]))
    sg = b.finalize([b.chance([heads, tails], [0.25, 0.75])], [1.0])
    sol = solve_cfr_plus(sg, iterations=50)
    # The maximiser picks action 0 after heads and 1 after tails: 0.25·1 + 0.75·4 = 3.25. The linear average keeps
    # the uniform first iterate with weight 1/Σt = 1/1275, hence the tolerance.
    assert sol.value == pytest.approx(3.25, abs=5e-3)


def test_builder_rejects_malformed_trees():
    b = SubgameBuilder()
    i = b.infoset(0, "x", (0, 1))
    with pytest.raises(ValueError, match="shape"):
        b.decision((i, -1), np.array([[b.terminal(0.0)]]))
    with pytest.raises(ValueError, match="differ"):
        b.infoset(0, "x", (0, 1, 2))
    with pytest.raises(ValueError, match="sum to 1"):
        b.chance([b.terminal(0.0)], [0.5])
    t = b.terminal(1.0)
    b.chance([t], [1.0])
    with pytest.raises(ValueError, match="already has a parent"):
        b.chance([t], [1.0])


def test_solver_rejects_zero_iterations():
    with pytest.raises(ValueError, match="iterations"):
        solve_cfr_plus(matrix_game(np.eye(2)), iterations=0)
