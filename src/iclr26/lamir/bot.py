"""LAMIR as an OpenSpiel bot: continual resolving along the game actually played (drop-in ``pyspiel.Bot``).

The bot sees, at each of its decisions, only the public state (OpenSpiel's public observer) and its own
information state. When it reaches a public state it has not resolved, it resolves it with the state carried from
the previous resolve (its range and the opponent's gadget values) and keeps the next public states' carried states.
Resolving depends only on the public history, so a :class:`ResolveCache` can be shared by the bots of many games
(same seat, same model) without changing what they play.

Usage::

    cache = ResolveCache()
    bot = LamirBot(game, tree, LearnedModel(features, model, abstraction), player=0, iterations=300,
                   seed=1, cache=cache)
    returns = evaluate_bots(game.new_initial_state(), [bot, other_bot], np.random.default_rng(0))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel

from iclr26.lamir.games import GameTree, public_observer
from iclr26.lamir.search import ContinualResolver, ResolveState, SearchModel


@dataclass
class ResolveCache:
    """Resolved strategies and carried states of one seat, shareable across games.

    Attributes:
        pending: carried state of every public state reachable from those resolved so far.
        strategy: resolved strategy of every real infoset of the seat resolved so far.
        resolves: number of subgames solved through this cache.
    """

    pending: dict[int, ResolveState] = field(default_factory=dict)
    strategy: dict[int, np.ndarray] = field(default_factory=dict)
    resolves: int = 0


class LamirBot(pyspiel.Bot):
    """A ``pyspiel.Bot`` playing LAMIR's look-ahead policy for one seat.

    Args:
        game: the ``pyspiel.Game`` (for the public observer).
        tree: the tabulated game (to enumerate the histories of a public state).
        model: the search model (:class:`~iclr26.lamir.search.LearnedModel` for LAMIR).
        player: the seat.
        iterations: CFR+ iterations per resolve.
        seed: seeds the bot's action sampling.
        cache: optional :class:`ResolveCache` shared between bots of the same seat and model.
    """

    def __init__(
        self,
        game: Any,
        tree: GameTree,
        model: SearchModel,
        *,
        player: int,
        iterations: int,
        seed: int,
        cache: ResolveCache | None = None,
    ) -> None:
        pyspiel.Bot.__init__(self)
        self._player = player
        self._tree = tree
        self._resolver = ContinualResolver(tree, model, player=player, iterations=iterations)
        self._observe = public_observer(game)
        self._public_index = {key: i for i, key in enumerate(tree.public_key)}
        self._infoset_index = {key: i for i, key in enumerate(tree.infoset_key[player])}
        self._rng = np.random.default_rng(seed)
        self._cache = cache if cache is not None else ResolveCache()
        self._cache.pending.setdefault(self._resolver.initial.public, self._resolver.initial)

    def player_id(self) -> int:
        """The bot's seat."""
        return self._player

    def restart_at(self, state: Any) -> None:
        """Nothing to reset: resolving depends only on the public history, which the cache is keyed by."""

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        """Opponent actions are not needed: the public observer reports the public state."""

    def inform_actions(self, state: Any, actions: list[int]) -> None:
        """See :meth:`inform_action`."""

    def provides_policy(self) -> bool:
        """The bot can report its action distribution."""
        return True

    def _distribution(self, state: Any) -> np.ndarray:
        infoset = self._infoset_index.get(state.information_state_string(self._player))
        if infoset is None:
            raise ValueError(f"state {state} is not in the tabulated game {self._tree.name}")
        if infoset not in self._cache.strategy:
            public = self._public_index[self._observe(state)[0]]
            carried = self._cache.pending.get(public)
            if carried is None:
                raise RuntimeError(
                    f"public state {public} was not reached by continual resolving from the start of the game"
                )
            step = self._resolver.resolve(carried)
            self._cache.resolves += 1
            self._cache.strategy.update(step.strategy)
            self._cache.pending.update({child.public: child for child in step.children})
        return self._cache.strategy[infoset]

    def step_with_policy(self, state: Any) -> tuple[list[tuple[int, float]], int]:
        """The resolved distribution at the bot's infoset and an action sampled from it."""
        probs = self._distribution(state)
        legal = state.legal_actions(self._player)
        weights = np.array([probs[a] for a in legal])
        action = int(legal[int(self._rng.choice(len(legal), p=weights / weights.sum()))])
        return [(a, float(probs[a])) for a in legal], action

    def step(self, state: Any) -> int:
        """An action sampled from the resolved strategy at the bot's infoset."""
        return self.step_with_policy(state)[1]
