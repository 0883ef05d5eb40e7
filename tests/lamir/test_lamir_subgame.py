"""CFR+ on flat subgames: hand-computed steps, closed-form equilibria, and exactness of the passes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel")  # the package re-exports the OpenSpiel bot (extra "games")

from iclr26.lamir.games import tabulate_game  # noqa: E402
from iclr26.lamir.search import whole_game_subgame  # noqa: E402
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


# ---- the gathered passes give bit-for-bit the results of the straightforward passes ----


def _reference_solve(sg, iterations: int):
    """The straightforward CFR+ loop and passes (``np.append`` per pass, fancy indexing per layer): the
    equivalence reference for the gathered passes. Returns the average strategies before normalisation."""
    depths = sg.edge_depth
    layers = [np.flatnonzero(depths == d) for d in range(int(depths.max(initial=-1)) + 1)]
    num_infosets = (sg.num_infosets(0), sg.num_infosets(1))

    def reaches(sigma):
        reach = np.zeros((3, sg.num_nodes))
        reach[:2, sg.roots] = 1.0
        reach[2, sg.roots] = sg.root_weight
        full = [np.append(s, 1.0) for s in sigma]
        for edges in layers:
            par, ch = sg.edge_parent[edges], sg.edge_child[edges]
            reach[0, ch] = reach[0, par] * full[0][sg.edge_ia[0, edges]]
            reach[1, ch] = reach[1, par] * full[1][sg.edge_ia[1, edges]]
            reach[2, ch] = reach[2, par] * sg.edge_prob[edges]
        return reach

    def values(sigma):
        full = [np.append(s, 1.0) for s in sigma]
        value = np.where(sg.is_terminal, sg.utility, 0.0)
        for edges in reversed(layers):
            par, ch = sg.edge_parent[edges], sg.edge_child[edges]
            w = full[0][sg.edge_ia[0, edges]] * full[1][sg.edge_ia[1, edges]] * sg.edge_prob[edges]
            value += np.bincount(par, weights=w * value[ch], minlength=sg.num_nodes)
        return value

    def action_values(player, sigma, reach, value):
        opp = 1 - player
        sel = sg.edge_ia[player] >= 0
        par, ch = sg.edge_parent[sel], sg.edge_child[sel]
        opp_full = np.append(sigma[opp], 1.0)
        sign = 1.0 if player == 0 else -1.0
        w = reach[opp, par] * reach[2, par] * opp_full[sg.edge_ia[opp, sel]] * sg.edge_prob[sel]
        return np.bincount(sg.edge_ia[player, sel], weights=sign * w * value[ch], minlength=sg.ia_infoset[player].size)

    regret = [np.zeros(sg.ia_infoset[p].size) for p in (0, 1)]
    avg = [np.zeros(sg.ia_infoset[p].size) for p in (0, 1)]
    sigma = [regret_matching_plus(regret[p], sg.ia_infoset[p], num_infosets[p]) for p in (0, 1)]
    for t in range(1, iterations + 1):
        for p in (0, 1):
            reach = reaches((sigma[0], sigma[1]))
            value = values((sigma[0], sigma[1]))
            q = action_values(p, (sigma[0], sigma[1]), reach, value)
            expected = np.bincount(sg.ia_infoset[p], weights=sigma[p] * q, minlength=num_infosets[p])
            regret[p] = np.maximum(regret[p] + q - expected[sg.ia_infoset[p]], 0.0)
            nodes = np.flatnonzero(sg.node_infoset[p] >= 0)
            own = np.bincount(sg.node_infoset[p, nodes], weights=reach[p, nodes], minlength=num_infosets[p])
            avg[p] += t * own[sg.ia_infoset[p]] * sigma[p]
            sigma[p] = regret_matching_plus(regret[p], sg.ia_infoset[p], num_infosets[p])
    return avg, reaches, values


def _whole_game(name: str):
    import pyspiel

    return whole_game_subgame(tabulate_game(pyspiel.load_game(name), allow_chance=True))


def _unreachable_extra_subgame():
    """Kuhn-like chance root plus a node built but never linked to a root (it must get reach 0)."""
    b = SubgameBuilder()
    i = b.infoset(0, "x", (0, 1))
    j = b.infoset(1, "y", (0, 1, 2))
    heads = b.decision((i, j), np.array([[b.terminal(v) for v in row] for row in ([1.0, -2.0, 0.5], [0.0, 3.0, -1])]))
    k = b.infoset(1, "z", (0, 1))
    tails = b.decision((-1, k), np.array([[b.terminal(2.0), b.terminal(-0.5)]]))
    b.decision((i, -1), np.array([[b.terminal(5.0)], [b.terminal(7.0)]]))  # orphan: not below any root
    return b.finalize([b.chance([heads, tails], [0.3, 0.7])], [0.8])


@pytest.mark.parametrize("path_table", [True, False])
@pytest.mark.parametrize("which", ["kuhn_poker", "goofspiel-gadget", "orphan"])
def test_gathered_passes_equal_the_previous_passes_bit_for_bit(which, path_table, monkeypatch):
    from iclr26.lamir import subgame as subgame_module

    if which == "goofspiel-gadget":
        # a real resolve subgame of II-Goofspiel 3: two merged roots with an opponent gadget and depth-1 leaves
        b = SubgameBuilder()
        leaves = []
        for r in range(2):
            li = b.infoset(0, ("leaf", r), range(3))
            lj = b.infoset(1, ("leaf", r), range(3))
            vals = np.arange(9.0).reshape(3, 3) * (0.1 + r) - 0.4
            leaf = b.decision((li, lj), np.array([[b.terminal(vals[x, y]) for y in range(3)] for x in range(3)]))
            ri = b.infoset(0, ("root", r), (0, 1))
            rj = b.infoset(1, "root", (0, 1))
            other = b.terminal(-0.25 * r)
            sub = b.decision((ri, rj), np.array([[leaf, other], [b.terminal(0.3), b.terminal(-1.0)]]))
            g = b.infoset(1, ("gadget", r), (0, 1))
            leaves.append(b.decision((-1, g), np.array([[sub, b.terminal(0.1 * (r + 1))]])))
        sg = b.finalize(leaves, [0.6, 0.15])
    elif which == "orphan":
        sg = _unreachable_extra_subgame()
    else:
        sg = _whole_game(which)
    if not path_table:
        monkeypatch.setattr(subgame_module.CfrPasses, "PATH_TABLE_LIMIT", 0)
    passes = subgame_module.CfrPasses(sg)
    assert passes.uses_path_table == path_table
    ref_avg, ref_reaches, ref_values = _reference_solve(sg, 60)
    sol = solve_cfr_plus(sg, iterations=60)
    for p in (0, 1):
        expected = regret_matching_plus(ref_avg[p], sg.ia_infoset[p], sg.num_infosets(p))
        np.testing.assert_array_equal(sol.strategy[p], expected)
    # the passes themselves, on a random full-support profile
    rng = np.random.default_rng(0)
    profile = tuple(
        regret_matching_plus(rng.random(sg.ia_infoset[p].size), sg.ia_infoset[p], sg.num_infosets(p)) for p in (0, 1)
    )
    np.testing.assert_array_equal(passes.reaches(profile), ref_reaches(profile))
    np.testing.assert_array_equal(passes.values(profile), ref_values(profile))


def test_leduc_whole_game_cfr_plus_equals_the_previous_passes():
    sg = _whole_game("leduc_poker")
    assert passes_use_layers(sg)  # 9457 nodes, depth 11: the layer-by-layer reaches
    ref_avg, _, _ = _reference_solve(sg, 3)
    sol = solve_cfr_plus(sg, iterations=3)
    for p in (0, 1):
        expected = regret_matching_plus(ref_avg[p], sg.ia_infoset[p], sg.num_infosets(p))
        np.testing.assert_array_equal(sol.strategy[p], expected)


def passes_use_layers(sg) -> bool:
    from iclr26.lamir.subgame import CfrPasses

    return not CfrPasses(sg).uses_path_table


def test_whole_kuhn_cfr_plus_reaches_the_game_value():
    # Kuhn poker's value for player 0 is -1/18 (Kuhn 1950); alternating CFR+ with linear averaging gets within
    # 1e-3 of it in 300 iterations (OpenSpiel's CFRPlusSolver: -0.0556 at 200).
    assert solve_cfr_plus(_whole_game("kuhn_poker"), iterations=300).value == pytest.approx(-1 / 18, abs=1e-3)
