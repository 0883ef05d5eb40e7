"""LamirBot as a drop-in ``pyspiel.Bot``: it plays through OpenSpiel's evaluation and matches the resolved tables."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402
from open_spiel.python.bots.uniform_random import UniformRandomBot  # noqa: E402

from iclr26.lamir.bot import LamirBot, ResolveCache  # noqa: E402
from iclr26.lamir.evaluation import play_match  # noqa: E402
from iclr26.lamir.games import load_goofspiel, tabulate_game  # noqa: E402
from iclr26.lamir.search import TrueModel, resolve_all  # noqa: E402


def goofspiel3():
    return pyspiel.load_game(
        "goofspiel", {"imp_info": True, "points_order": "descending", "num_cards": 3, "returns_type": "win_loss"}
    )


def test_bot_plays_with_openspiel_evaluate_bots_and_matches_resolve_all():
    game = goofspiel3()
    tree = load_goofspiel(3)
    model = TrueModel(tree, depth_limit=None)
    tables = resolve_all(tree, model, iterations=100).tables
    cache = ResolveCache()
    rng = np.random.default_rng(0)
    for g in range(6):
        bot = LamirBot(game, tree, model, player=0, iterations=100, seed=g, cache=cache)
        state = game.new_initial_state()
        returns = evaluate_bots(state, [bot, UniformRandomBot(1, rng)], rng)
        assert state.is_terminal() and returns[0] in (-1.0, 0.0, 1.0)
    # Every strategy the bot resolved along the played games is the one the full pass computes.
    assert cache.resolves >= 1
    for infoset, row in cache.strategy.items():
        np.testing.assert_allclose(row, tables[0][infoset], atol=1e-12)


def test_bot_reports_its_policy_on_turn_based_kuhn():
    game = pyspiel.load_game("kuhn_poker")
    tree = tabulate_game(game, allow_chance=True)
    bot = LamirBot(game, tree, TrueModel(tree, depth_limit=None), player=0, iterations=50, seed=0)
    state = game.new_initial_state()
    state.apply_action(0)
    state.apply_action(1)
    policy, action = bot.step_with_policy(state)
    assert [a for a, _ in policy] == state.legal_actions(0)
    assert sum(p for _, p in policy) == pytest.approx(1.0)
    assert action in state.legal_actions(0)


def test_play_match_counts_both_seats():
    game = goofspiel3()
    tree = load_goofspiel(3)
    model = TrueModel(tree, depth_limit=None)
    caches = (ResolveCache(), ResolveCache())

    def agent(seat, seed):
        return LamirBot(game, tree, model, player=seat, iterations=50, seed=seed, cache=caches[seat])

    def opponent(seat, seed):
        return UniformRandomBot(seat, np.random.default_rng(seed))

    result = play_match(game, agent, opponent, games=20, seed=0)
    assert result.games == 20 and result.wins + result.draws + result.losses == 20
    assert 0.0 <= result.score <= 1.0 and result.ci95 >= 0.0


def test_bot_rejects_states_of_another_game():
    tree = load_goofspiel(3)
    bot = LamirBot(goofspiel3(), tree, TrueModel(tree, depth_limit=None), player=0, iterations=10, seed=0)
    other = pyspiel.load_game(
        "goofspiel", {"imp_info": True, "points_order": "descending", "num_cards": 4, "returns_type": "win_loss"}
    )
    with pytest.raises(ValueError, match="not in the tabulated game"):
        bot.step(other.new_initial_state())
