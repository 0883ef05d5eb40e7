"""The learned abstract model: it recovers a hand-made tiny game exactly; its losses stay decoupled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

pytest.importorskip("pyspiel")  # the package re-exports the OpenSpiel bot (extra "games")

from iclr26.lamir.accuracy import model_accuracy  # noqa: E402
from iclr26.lamir.features import game_features  # noqa: E402
from iclr26.lamir.games import tabulate  # noqa: E402
from iclr26.lamir.learners import AbstractModelLearner, BaseAgentLearner, BaseAgentSettings, ModelSettings  # noqa: E402
from iclr26.lamir.search import transformed_values  # noqa: E402
from iclr26.lamir.training import train_lamir  # noqa: E402
from iclr26.lamir.trajectories import behaviour_tables, sample_trajectories  # noqa: E402


class TinyState:
    """A hand-made two-round simultaneous game (OpenSpiel's State interface, as `tabulate` needs it).

    Round 1: both pick 0 or 1; whether the picks matched is public. Round 2: a player who picked 0 may pick 0 or 1,
    one who picked 1 may pick 0, 1 or 2. Player 0 wins (+1) if its two picks sum higher, loses (-1) if lower.
    """

    def __init__(self, picks: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())) -> None:
        self.picks = picks

    def clone(self) -> TinyState:
        return TinyState(self.picks)

    def is_terminal(self) -> bool:
        return len(self.picks[0]) == 2

    def is_chance_node(self) -> bool:
        return False

    def chance_outcomes(self) -> list:
        return []

    def is_simultaneous_node(self) -> bool:
        return True

    def current_player(self) -> int:
        return -2

    def legal_actions(self, player: int) -> list[int]:
        if not self.picks[player]:
            return [0, 1]
        return [0, 1] if self.picks[player][0] == 0 else [0, 1, 2]

    def apply_actions(self, actions: list[int]) -> None:
        self.picks = (self.picks[0] + (actions[0],), self.picks[1] + (actions[1],))

    def apply_action(self, action: int) -> None:
        raise AssertionError("simultaneous game")

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0, 0.0]
        diff = sum(self.picks[0]) - sum(self.picks[1])
        r = float(np.sign(diff))
        return [r, -r]

    def public(self) -> tuple[str, np.ndarray]:
        matched = [int(a == b) for a, b in zip(*self.picks, strict=True)]
        tensor = np.zeros(4, dtype=np.float32)
        tensor[len(self.picks[0])] = 1.0  # round one-hot (0 or 1 before terminal)
        if matched:
            tensor[2 + matched[0]] = 1.0
        return f"round {len(self.picks[0])} matched {matched}", tensor

    def information_state_string(self, player: int) -> str:
        return f"p{player} own {self.picks[player]} | {self.public()[0]}"

    def information_state_tensor(self, player: int) -> list[float]:
        own = np.zeros(6, dtype=np.float32)  # one-hot of the own pick in each round (3 slots)
        for t, a in enumerate(self.picks[player]):
            own[3 * t + a] = 1.0
        return [*own, *self.public()[1]]


def tiny_tree():
    return tabulate(
        TinyState(), name="tiny", num_distinct_actions=3, turn_based=False, public_observation=TinyState.public
    )


def test_tiny_game_structure():
    tree = tiny_tree()
    # Root, then 4 joint picks -> public states "matched" / "not matched", each with 2 infosets per player.
    assert tree.num_public_states == 3
    assert tree.max_infosets_per_public_state() == 2
    assert tree.max_steps == 2


def test_abstraction_agreement_by_hand():
    from iclr26.lamir.accuracy import abstraction_agreement

    tree = tiny_tree()
    # Identity: every infoset its own abstract infoset, so everything is one-to-one and separated.
    identity = tuple(np.arange(tree.num_infosets(p)) for p in (0, 1))
    assert abstraction_agreement(tree, identity) == (1.0, 1.0)
    # Everything merged into abstract infoset 0: only the root public state (one infoset per player) stays
    # one-to-one, 2 of the 3 × 2 (public state, player) pairs; none of the 2 × 2 × 2 ordered same-state pairs of
    # the two round-1 public states is separated.
    merged = tuple(np.zeros(tree.num_infosets(p), dtype=np.int64) for p in (0, 1))
    agreement = abstraction_agreement(tree, merged)
    assert agreement.one_to_one == pytest.approx(1 / 3)
    assert agreement.separated == 0.0


def test_learner_recovers_the_tiny_game_exactly():
    torch.manual_seed(0)
    tree = tiny_tree()
    feats = game_features(tree)
    result = train_lamir(
        tree,
        feats,
        base_settings=BaseAgentSettings(hidden=32, num_transformations=2),
        model_settings=[ModelSettings(capacity=2, hidden=32, latent_dim=8, code_dim=4, gamma_end=64.0)],
        steps=500,
        batch=32,
        epsilon_pg=0.25,
        epsilon_model=1.0,
        rng=np.random.default_rng(0),
    )
    learner = result.models[0]
    abstraction = (learner.abstraction(0), learner.abstraction(1))
    exact = transformed_values(tree, tuple(t.double().numpy() for t in result.base.transformed_tables()))
    acc = model_accuracy(tree, feats, learner.model, abstraction, exact)
    # Capacity 2 = the largest number of infosets per public state: the abstraction must be one-to-one, and the
    # dynamics must predict every terminal flag, next public state, (rounded) reward and legal-action set.
    assert acc.exact_abstraction, acc
    assert acc.dynamics_exact, acc
    assert acc.reward_mae < 0.25


def _one_batch():
    torch.manual_seed(0)
    tree = tiny_tree()
    feats = game_features(tree)
    uniform = tuple(tree.infoset_legal[p] / tree.infoset_legal[p].sum(-1, keepdims=True) for p in (0, 1))
    batch = sample_trajectories(
        tree, behaviour_tables(tree, uniform, epsilon=1.0), batch=16, rng=np.random.default_rng(1)
    )
    base = BaseAgentLearner(feats, BaseAgentSettings(hidden=16, num_transformations=2))
    learner = AbstractModelLearner(feats, ModelSettings(capacity=2, hidden=16), num_transformations=2, value_bound=1.0)
    losses = learner.losses(batch, batch, base.policy_tables(), base.transformed_tables(), tree.node_public, gamma=1.0)
    return learner, losses


@pytest.mark.parametrize(
    ("loss", "reaches", "untouched"),
    [
        (
            "model",
            ("representation", "dynamics", "legal_head"),
            ("public_abstraction", "attribute_head", "infoset_abstraction", "value"),
        ),
        (
            "abstraction",
            ("public_abstraction", "attribute_head"),
            ("infoset_abstraction", "representation", "dynamics", "legal_head", "value"),
        ),
        (
            "assignment",
            ("infoset_abstraction",),
            ("public_abstraction", "attribute_head", "representation", "dynamics", "legal_head", "value"),
        ),
        (
            "value",
            ("value",),
            ("public_abstraction", "attribute_head", "infoset_abstraction", "representation", "dynamics"),
        ),
    ],
)
def test_each_loss_reaches_only_its_heads(loss, reaches, untouched):
    # The paper's decoupling: L^M's gradient never reaches the abstraction (Λ_i, κ_θ, Λ^I).
    learner, losses = _one_batch()
    getattr(losses, loss).backward()
    for name in reaches:
        grads = [p.grad for p in getattr(learner.model, name).parameters()]
        assert any(g is not None and g.abs().sum() > 0 for g in grads), f"{loss} should reach {name}"
    for name in untouched:
        grads = [p.grad for p in getattr(learner.model, name).parameters()]
        assert all(g is None or g.abs().sum() == 0 for g in grads), f"{loss} must not reach {name}"


def test_training_is_deterministic_under_a_seed():
    def run():
        torch.manual_seed(3)
        tree = tiny_tree()
        result = train_lamir(
            tree,
            game_features(tree),
            base_settings=BaseAgentSettings(hidden=16, num_transformations=2),
            model_settings=[ModelSettings(capacity=2, hidden=16)],
            steps=5,
            batch=8,
            epsilon_pg=0.25,
            epsilon_model=1.0,
            rng=np.random.default_rng(3),
        )
        return result.curves

    assert run() == run()


def test_settings_are_validated():
    with pytest.raises(ValueError, match="capacity"):
        ModelSettings(capacity=0)
    with pytest.raises(ValueError, match="kappa"):
        ModelSettings(capacity=2, kappa="cards")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gamma_start"):
        ModelSettings(capacity=2, gamma_start=10.0, gamma_end=1.0)


def _train_tiny(**kwargs):
    """Five steps on the tiny game from seed 3 (networks initialised from torch's global generator, seeded here)."""
    torch.manual_seed(3)
    tree = tiny_tree()
    return train_lamir(
        tree,
        game_features(tree),
        base_settings=BaseAgentSettings(hidden=16, num_transformations=2, reg_period=2),
        model_settings=[ModelSettings(capacity=2, hidden=16), ModelSettings(capacity=1, hidden=16)],
        steps=5,
        batch=8,
        epsilon_pg=0.25,
        epsilon_model=1.0,
        rng=np.random.default_rng(3),
        log_every=1,
        **kwargs,
    )


def _same_tensors(a, b) -> bool:
    """Nested dicts/lists of tensors and numbers, equal bit for bit."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_tensors(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_tensors(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def test_training_in_pieces_through_a_pickled_state_equals_one_call():
    # Steps 0-1, then a pickle round trip of the state (what a resumed run reads back from its unit file), then
    # steps 2-4 with freshly initialised (differently seeded) networks: everything equals one 5-step call. The
    # RNaD reference is reloaded at step 2 (reg_period=2), so its state must travel too.
    whole = _train_tiny()
    first = _train_tiny(stop=2)
    assert first.step == 2 and first.curves["policy_loss"] == whole.curves["policy_loss"][:2]
    saved = pickle.loads(pickle.dumps(first.state()))
    torch.manual_seed(99)  # the restored networks must not depend on the initialisation they overwrite
    tree = tiny_tree()
    rest = train_lamir(
        tree,
        game_features(tree),
        base_settings=BaseAgentSettings(hidden=16, num_transformations=2, reg_period=2),
        model_settings=[ModelSettings(capacity=2, hidden=16), ModelSettings(capacity=1, hidden=16)],
        steps=5,
        batch=8,
        epsilon_pg=0.25,
        epsilon_model=1.0,
        rng=np.random.default_rng(12345),  # its state is replaced by the saved one
        log_every=1,
        start=saved,
    )
    assert rest.step == 5 and rest.curves == whole.curves
    assert _same_tensors(rest.state().base, whole.state().base)
    assert _same_tensors(list(rest.state().models), list(whole.state().models))
    assert rest.state().rng == whole.state().rng


def test_a_state_is_a_copy_that_later_steps_do_not_change():
    result = _train_tiny(stop=2)
    state = result.state()
    before = state.base["policy"]["net.0.weight"].clone()
    result.base.policy.net[0].weight.data.add_(1.0)
    assert torch.equal(state.base["policy"]["net.0.weight"], before)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"stop": 6}, r"stop must be in \[0, steps=5\]"), ({"stop": -1}, r"stop must be in \[0, steps=5\]")],
)
def test_stop_outside_the_run_is_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _train_tiny(**kwargs)


def test_a_start_with_other_models_is_rejected():
    state = _train_tiny(stop=1).state()
    torch.manual_seed(3)
    tree = tiny_tree()
    with pytest.raises(ValueError, match="start holds 2 models but model_settings gives 1"):
        train_lamir(
            tree,
            game_features(tree),
            base_settings=BaseAgentSettings(hidden=16, num_transformations=2, reg_period=2),
            model_settings=[ModelSettings(capacity=2, hidden=16)],
            steps=5,
            batch=8,
            epsilon_pg=0.25,
            epsilon_model=1.0,
            rng=np.random.default_rng(3),
            start=state,
        )
