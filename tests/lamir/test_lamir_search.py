"""Continual resolving: near-zero exploitability with the true model, exact leaf values, merged abstract roots."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")

from iclr26.lamir.evaluation import exact_outcomes, exploitability, tabular_policy  # noqa: E402
from iclr26.lamir.features import game_features  # noqa: E402
from iclr26.lamir.games import load_goofspiel, tabulate_game  # noqa: E402
from iclr26.lamir.model import AbstractModel, ModelSizes  # noqa: E402
from iclr26.lamir.search import (  # noqa: E402
    ContinualResolver,
    LearnedModel,
    TrueModel,
    resolve_all,
    transformed_values,
)


def goofspiel(n: int):
    return pyspiel.load_game(
        "goofspiel", {"imp_info": True, "points_order": "descending", "num_cards": n, "returns_type": "win_loss"}
    )


def test_kuhn_continual_resolving_with_the_true_model_is_near_nash():
    # Kuhn poker (with its chance deal): resolving every public state with the gadget, full depth, CFR+.
    game = pyspiel.load_game("kuhn_poker")
    tree = tabulate_game(game, allow_chance=True)
    policy = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=400)
    assert exploitability(game, tree, policy.tables) < 2e-3
    # Player 0's value of Kuhn poker is -1/18.
    assert exact_outcomes(tree, policy.tables).value == pytest.approx(-1 / 18, abs=5e-3)
    assert policy.stats[0].gadget_misses == 0 and policy.stats[1].gadget_misses == 0


def test_goofspiel3_continual_resolving_with_the_true_model_is_near_nash():
    game = goofspiel(3)
    tree = load_goofspiel(3)
    policy = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=400)
    assert exploitability(game, tree, policy.tables) < 1e-3


def test_goofspiel4_continual_resolving_is_as_good_as_solving_the_whole_game():
    # Whole-game CFR+ reaches about 1.4e-3 after 300 iterations. Continual resolving with exact (full-depth)
    # subgames must not lose much on top: the gadget gets the opponent's best-response values. With the values of
    # the average profile instead, it stalls at about 1.3e-2 however many iterations are run.
    game = goofspiel(4)
    tree = load_goofspiel(4)
    policy = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=300)
    assert exploitability(game, tree, policy.tables) < 2e-3


def test_leduc_continual_resolving_is_close_after_few_iterations():
    # The chance node between public states (Leduc's public card), fast: 50 CFR+ iterations per resolve (~4 s)
    # already give exploitability 0.051 and player 0's value -0.0883 (game value about -0.0856).
    game = pyspiel.load_game("leduc_poker")
    tree = tabulate_game(game, allow_chance=True)
    policy = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=50)
    assert exploitability(game, tree, policy.tables) < 0.08
    assert exact_outcomes(tree, policy.tables).value == pytest.approx(-0.0856, abs=1e-2)


@pytest.mark.slow
def test_leduc_continual_resolving_steps_through_the_public_card():
    # Leduc poker has a chance node (the public card) between public states; about 20 s.
    game = pyspiel.load_game("leduc_poker")
    tree = tabulate_game(game, allow_chance=True)
    policy = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=300)
    assert exploitability(game, tree, policy.tables) < 1e-2
    # Player 0's value of Leduc poker is about -0.0856.
    assert exact_outcomes(tree, policy.tables).value == pytest.approx(-0.0856, abs=5e-3)


def test_transformed_values_match_openspiel_policy_value():
    from open_spiel.python.algorithms.expected_game_score import policy_value

    game = goofspiel(3)
    tree = load_goofspiel(3)
    rng = np.random.default_rng(0)
    tables = []
    for p in (0, 1):
        raw = rng.random((tree.num_infosets(p), 2, tree.num_actions)) * tree.infoset_legal[p][:, None, :]
        tables.append(raw / raw.sum(-1, keepdims=True))
    values = transformed_values(tree, (tables[0], tables[1]))
    for j0, j1 in ((0, 0), (0, 1), (1, 0)):
        tab = tabular_policy(game, tree, (tables[0][:, j0], tables[1][:, j1]))
        expected = policy_value(game.new_initial_state(), tab)[0]
        assert values[tree.root, j0, j1] == pytest.approx(expected, abs=1e-12)


def test_depth_limited_search_with_exact_values_of_a_nash_continuation_is_near_nash():
    # If the leaf values come from an equilibrium continuation (T = 1), depth-1 resolving loses nothing.
    game = goofspiel(3)
    tree = load_goofspiel(3)
    nash = resolve_all(tree, TrueModel(tree, depth_limit=None), iterations=400).tables
    values = transformed_values(tree, (nash[0][:, None, :], nash[1][:, None, :]))
    policy = resolve_all(tree, TrueModel(tree, depth_limit=1, leaf_values=values), iterations=400)
    assert exploitability(game, tree, policy.tables) < 1e-3


def _random_learned_model(tree, capacity: int, seed: int):
    torch.manual_seed(seed)
    feats = game_features(tree)
    model = AbstractModel(
        ModelSizes(
            infoset_dim=feats.infoset_dim,
            public_dim=feats.public_dim,
            num_actions=feats.num_actions,
            capacity=capacity,
            attribute_dim=4,
            latent_dim=8,
            code_dim=4,
            num_transformations=2,
            hidden=16,
            value_bound=1.0,
        )
    )
    rng = np.random.default_rng(seed)
    abstraction = tuple(rng.integers(0, capacity, tree.num_infosets(p)) for p in (0, 1))
    return LearnedModel(feats, model, abstraction)


def test_learned_model_subgames_merge_histories_by_joint_abstraction():
    tree = load_goofspiel(4)
    model = _random_learned_model(tree, capacity=2, seed=0)
    policy = resolve_all(tree, model, iterations=20)
    # At most L² = 4 merged roots in any subgame, whatever the number of histories (up to 28 here).
    assert max(policy.stats[p].max_roots for p in (0, 1)) <= 4
    for p in (0, 1):
        table = policy.tables[p]
        np.testing.assert_allclose(table.sum(-1), 1.0)
        assert (table[~tree.infoset_legal[p]] == 0).all()


def test_merged_roots_are_exactly_the_distinct_joint_abstractions():
    # Step 2 of resolving: one root per distinct (Λ^I_0, Λ^I_1) pair of the public state's histories (with
    # the true model, which does not merge, one root per history).
    from iclr26.lamir.search import ResolveState

    tree = load_goofspiel(4)
    public = int(np.argmax([nodes.size for nodes in tree.public_nodes]))
    hist = tree.public_nodes[public]
    model = _random_learned_model(tree, capacity=3, seed=2)
    infosets = tree.node_infoset[hist]  # (n, 2)
    pairs = set(zip(model.labels(0, infosets[:, 0]).tolist(), model.labels(1, infosets[:, 1]).tolist(), strict=True))
    assert 1 < len(pairs) < hist.size  # the draw really merges some histories and keeps some apart
    for search, expected in ((model, len(pairs)), (TrueModel(tree, depth_limit=None), hist.size)):
        resolver = ContinualResolver(tree, search, player=0, iterations=5)
        state = ResolveState(public=public, own_range=np.ones(tree.num_infosets(0)), opponent_cfv=None)
        step = resolver.resolve(state)
        assert resolver.stats.max_roots == expected
        # The resolver plays a distribution on every one of its infosets in the public state.
        assert set(step.strategy) == set(tree.public_infosets(public, 0).tolist())


def test_learned_values_plug_into_the_true_tree():
    from iclr26.lamir.accuracy import learned_values_on_real_histories
    from iclr26.lamir.games import TERMINAL

    tree = load_goofspiel(3)
    learned = _random_learned_model(tree, capacity=2, seed=1)
    values = learned_values_on_real_histories(tree, learned.features, learned.model, learned.abstraction)
    assert values.shape == (tree.num_nodes, 2, 2)
    terminal = tree.node_kind == TERMINAL
    np.testing.assert_array_equal(
        values[terminal], np.broadcast_to(tree.reward[terminal, None, None], (terminal.sum(), 2, 2))
    )
    assert np.abs(values).max() <= 1.0  # tanh-bounded by the return range
    policy = resolve_all(tree, TrueModel(tree, depth_limit=1, leaf_values=values), iterations=20)
    np.testing.assert_allclose(policy.tables[0].sum(-1), 1.0)


def test_resolver_validates_its_inputs():
    tree = load_goofspiel(3)
    with pytest.raises(ValueError, match="player"):
        ContinualResolver(tree, TrueModel(tree, depth_limit=None), player=2, iterations=10)
    with pytest.raises(ValueError, match="leaf_values"):
        TrueModel(tree, depth_limit=1)
    with pytest.raises(ValueError, match="leaf_values must be"):
        TrueModel(tree, depth_limit=1, leaf_values=np.zeros((tree.num_nodes, 2, 3)))
    with pytest.raises(ValueError, match="iterations"):
        ContinualResolver(tree, TrueModel(tree, depth_limit=None), player=0, iterations=0)
    learned = _random_learned_model(tree, capacity=2, seed=0)
    with pytest.raises(ValueError, match=r"abstraction\[0\]"):
        LearnedModel(learned.features, learned.model, (learned.abstraction[0] + 2, learned.abstraction[1]))
