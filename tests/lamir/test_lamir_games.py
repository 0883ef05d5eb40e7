"""Tabulating OpenSpiel games for LAMIR: sizes against hand counts, and clear errors outside the paper's scope."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from iclr26.lamir.games import (  # noqa: E402
    DECISION,
    TERMINAL,
    UnsupportedGameError,
    load_goofspiel,
    tabulate_game,
)


def test_goofspiel4_sizes_match_hand_counts():
    tree = load_goofspiel(4)
    # Four cards, last round played automatically: 3 decision rounds. Histories after r rounds: (4·3·…)² pairs of
    # bid sequences, so 1 + 16 + 144 = 161 decision nodes and 576 terminal ones (24² full bid orders).
    assert (tree.node_kind == DECISION).sum() == 161
    assert (tree.node_kind == TERMINAL).sum() == 576
    assert tree.max_steps == 3
    assert not tree.has_chance
    # Public states: root, 3 outcomes of round 1, 9 of rounds 1-2 (win/lose/tie are public in II-Goofspiel).
    assert tree.num_public_states == 13
    # Player 0 infosets after round 1: (own bid, outcome) pairs that can happen. Bid 1 cannot win, bid 4 cannot
    # lose, the others can do all three: 2 + 3 + 3 + 2 = 10.
    depth1 = tree.node_infoset[(tree.node_kind == DECISION) & (tree.node_depth == 1), 0]
    assert np.unique(depth1).size == 10
    assert tree.num_infosets(0) == tree.num_infosets(1) == 81
    assert tree.max_infosets_per_public_state() == 12


def test_every_history_lies_in_the_public_state_of_its_infosets():
    tree = load_goofspiel(3)
    for s, nodes in enumerate(tree.public_nodes):
        assert (tree.node_public[nodes] == s).all()
        for p in (0, 1):
            assert (tree.infoset_public[p][tree.node_infoset[nodes, p]] == s).all()


def test_rewards_sum_to_openspiel_returns_on_every_path():
    game = pyspiel.load_game(
        "goofspiel", {"imp_info": True, "points_order": "descending", "num_cards": 3, "returns_type": "win_loss"}
    )
    tree = tabulate_game(game)
    # Replay a fixed bid sequence in OpenSpiel and in the table.
    state = game.new_initial_state()
    node = tree.root
    total = 0.0
    for a0, a1 in [(0, 2), (2, 1)]:
        state.apply_actions([a0, a1])
        node = tree.children[node, a0, a1]
        total += tree.reward[node]
    assert state.is_terminal() and tree.node_kind[node] == TERMINAL
    assert total == pytest.approx(state.returns()[0])


def test_own_action_history_is_recorded_per_infoset():
    tree = load_goofspiel(3)
    child = tree.children[tree.root, 2, 0]  # player 0 bids card 3, player 1 card 1
    for p, own in ((0, 2), (1, 0)):
        history = tree.infoset_history[p][tree.node_infoset[child, p]]
        assert history[0] == own and (history[1:] == -1).all()


@pytest.mark.parametrize(
    ("name", "params", "fragment"),
    [
        ("tic_tac_toe", {}, "perfect-information"),
        ("matrix_pd", {}, "zero-sum"),
        ("kuhn_poker", {"players": 3}, "exactly 2 players"),
        ("kuhn_poker", {}, "chance"),
        ("goofspiel", {"imp_info": True, "points_order": "random", "num_cards": 3}, "chance"),
        ("goofspiel", {"imp_info": False, "points_order": "descending", "num_cards": 3}, "perfect-information"),
        ("matrix_rps", {}, "public observer"),
    ],
)
def test_games_outside_the_scope_raise_a_clear_error(name, params, fragment):
    game = pyspiel.load_game(name, params)
    with pytest.raises(UnsupportedGameError, match=fragment):
        tabulate_game(game)


def test_chance_is_accepted_for_true_model_checks():
    tree = tabulate_game(pyspiel.load_game("kuhn_poker"), allow_chance=True)
    assert tree.has_chance
    # Six deals of three cards, each with probability 1/6.
    first = np.flatnonzero((tree.node_kind == DECISION) & (tree.node_depth == 0))
    assert first.size == 6
    np.testing.assert_allclose(tree.node_chance[first], 1 / 6)
    assert tree.noop == 2


def test_goofspiel_size_is_validated():
    with pytest.raises(ValueError, match="num_cards"):
        load_goofspiel(7)


def test_a_game_name_string_is_loaded():
    # Kuhn poker: 3 cards dealt to 2 players (6 deals), then the betting tree; tabulated from its name alone.
    by_name = tabulate_game("kuhn_poker", allow_chance=True)
    by_game = tabulate_game(pyspiel.load_game("kuhn_poker"), allow_chance=True)
    assert by_name.num_nodes == by_game.num_nodes == 58
    assert by_name.name == by_game.name == "kuhn_poker()"
    # with parameters, as pyspiel.load_game reads them: II-Goofspiel 3 with descending points has no chance node
    tree = tabulate_game("goofspiel(imp_info=True,num_cards=3,points_order=descending,returns_type=win_loss)")
    assert tree.num_nodes == load_goofspiel(3).num_nodes


@pytest.mark.parametrize(
    ("game", "error", "match"),
    [
        ("kuhn_pokr", ValueError, r"game: 'kuhn_pokr' is not an OpenSpiel game \(closest known names: kuhn_poker"),
        ("no_such_game_at_all", ValueError, r"game: 'no_such_game_at_all' is not an OpenSpiel game; pass"),
        ("goofspiel(num_cards=x)", ValueError, r"game: pyspiel.load_game\('goofspiel\(num_cards=x\)'\) failed"),
        (3, TypeError, r"game must be a pyspiel.Game or an OpenSpiel game name .* got int"),
    ],
)
def test_a_game_that_cannot_be_loaded_is_named(game, error, match):
    with pytest.raises(error, match=match):
        tabulate_game(game)


def test_a_loaded_name_outside_the_scope_still_says_why():
    with pytest.raises(UnsupportedGameError, match="perfect-information games are outside LAMIR's scope"):
        tabulate_game("tic_tac_toe")
