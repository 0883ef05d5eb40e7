"""OpenSpiel games tabulated into arrays: the simulator LAMIR learns from, and the ground truth we measure against.

LAMIR (Kubíček & Lisý, ICLR 2026, arXiv 2510.05048) treats every game as a two-player zero-sum game in which both
players act at every step (a player who does not move has one "no-op" action), each player sees its own
information set (infoset), and public observations define public states. This module enumerates an OpenSpiel game
once into that view:

1. every decision node gets both players' infoset ids, a public-state id, and a child for every joint action;
2. every infoset gets its ``information_state_tensor``, legal-action mask, public state and own-action history;
3. every public state (the perfect-recall *public* observation of OpenSpiel's observer) gets its tensor and the
   list of histories (nodes) it contains.

The learner only ever samples trajectories from this table (it is a fast simulator, the agent-environment
interaction of the paper); the search and the evaluation use the table to enumerate the histories of a public state
(§"continual resolving" of the paper) and to compute exact values.

Glossary: ``N`` nodes, ``A`` action slots per player (OpenSpiel's distinct actions, plus one no-op slot in
turn-based games), ``K_p`` infosets of player ``p``, ``S`` public states, ``F_p`` infoset-tensor width, ``P``
public-tensor width, ``H`` the most decision steps in one episode.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

DECISION, CHANCE, TERMINAL = 0, 1, 2


class UnsupportedGameError(ValueError):
    """The game is outside LAMIR's scope (the message says which assumption fails and what to use instead)."""


@dataclass(frozen=True)
class GameTree:
    """A two-player zero-sum game enumerated into arrays (see the module docstring).

    Attributes:
        name: a readable name of the game.
        num_actions: ``A``, action slots per player; OpenSpiel action ``a`` is slot ``a``.
        noop: the no-op slot of a player who does not move (turn-based games), or ``None`` (simultaneous games).
        node_kind: ``(N,)`` ``DECISION``, ``CHANCE`` or ``TERMINAL``.
        node_infoset: ``(N, 2)`` each player's infoset at a decision node, ``-1`` elsewhere.
        node_public: ``(N,)`` public-state id of a decision node, ``-1`` elsewhere.
        node_depth: ``(N,)`` decision steps taken before the node.
        reward: ``(N,)`` player 0's reward on the transition into the node (its return minus its parent's).
        children: ``(N, A, A)`` child of a decision node for joint action ``(a0, a1)``, ``-1`` if illegal.
        chance_children: ``(N, C)`` children of a chance node (``-1`` padded); ``C`` is the most outcomes.
        chance_probs: ``(N, C)`` their probabilities.
        node_chance: ``(N,)`` the product of chance probabilities on the path to the node.
        infoset_key: per player, the ``information_state_string`` of each infoset.
        infoset_tensor: per player, ``(K_p, F_p)`` float32 ``information_state_tensor``.
        infoset_legal: per player, ``(K_p, A)`` bool legal-action masks.
        infoset_public: per player, ``(K_p,)`` the public state of each infoset.
        infoset_history: per player, ``(K_p, H)`` the player's own past actions, ``-1`` padded.
        public_key: ``(S,)`` public observation strings.
        public_tensor: ``(S, P)`` float32 public-state tensors.
        public_nodes: per public state, the ids of the histories (decision nodes) it contains.
        root: the initial node.
        max_steps: ``H``.
    """

    name: str
    num_actions: int
    noop: int | None
    node_kind: np.ndarray
    node_infoset: np.ndarray
    node_public: np.ndarray
    node_depth: np.ndarray
    reward: np.ndarray
    children: np.ndarray
    chance_children: np.ndarray
    chance_probs: np.ndarray
    node_chance: np.ndarray
    infoset_key: tuple[tuple[str, ...], tuple[str, ...]]
    infoset_tensor: tuple[np.ndarray, np.ndarray]
    infoset_legal: tuple[np.ndarray, np.ndarray]
    infoset_public: tuple[np.ndarray, np.ndarray]
    infoset_history: tuple[np.ndarray, np.ndarray]
    public_key: tuple[str, ...]
    public_tensor: np.ndarray
    public_nodes: tuple[np.ndarray, ...]
    root: int
    max_steps: int

    @property
    def num_nodes(self) -> int:
        """``N``."""
        return int(self.node_kind.shape[0])

    @property
    def num_public_states(self) -> int:
        """``S``."""
        return len(self.public_key)

    @property
    def has_chance(self) -> bool:
        """Whether any chance node occurs (LAMIR's learned model assumes none)."""
        return bool((self.node_kind == CHANCE).any())

    def num_infosets(self, player: int) -> int:
        """``K_p``."""
        return int(self.infoset_legal[player].shape[0])

    def public_infosets(self, public: int, player: int) -> np.ndarray:
        """The infoset ids of ``player`` in public state ``public`` (sorted)."""
        return np.flatnonzero(self.infoset_public[player] == public)

    def max_infosets_per_public_state(self) -> int:
        """The largest number of one player's infosets in one public state: the capacity ``L`` that lets an
        abstraction be one-to-one."""
        return int(max(np.bincount(self.infoset_public[p], minlength=self.num_public_states).max() for p in (0, 1)))


def public_observer(game: Any) -> Callable[[Any], tuple[str, np.ndarray]]:
    """OpenSpiel's perfect-recall public observation of a state, as ``(key, tensor)``.

    Raises:
        UnsupportedGameError: if the game has no observer for public information.
    """
    import pyspiel
    from open_spiel.python.observation import make_observation

    iig = pyspiel.IIGObservationType(perfect_recall=True, public_info=True, private_info=pyspiel.PrivateInfoType.NONE)
    fix = "LAMIR needs public states, so pick a game whose observer supports public_info (e.g. goofspiel, kuhn_poker)"
    try:
        observation = make_observation(game, iig)
    except Exception as err:  # pyspiel raises a plain RuntimeError/SpielError here
        raise UnsupportedGameError(
            f"game {game}: OpenSpiel provides no perfect-recall public observer for it ({err}); {fix}"
        ) from err
    if observation is None:  # make_observation returns None for an observer type the game does not support
        raise UnsupportedGameError(f"game {game}: OpenSpiel provides no perfect-recall public observer for it; {fix}")

    def observe(state: Any) -> tuple[str, np.ndarray]:
        observation.set_from(state, 0)
        return observation.string_from(state, 0), np.array(observation.tensor, dtype=np.float32)

    return observe


def check_lamir_scope(game: Any) -> None:
    """Raise unless ``game`` is in the scope LAMIR is defined for (before enumerating it).

    LAMIR (notes §2, "Setting") assumes two-player zero-sum games with imperfect information, played through
    information-state tensors; chance events are excluded (checked on the enumerated tree, since some OpenSpiel
    games declare a chance mode but never reach a chance node, e.g. goofspiel with ``points_order=descending``).

    Raises:
        UnsupportedGameError: naming the failed assumption and what to use instead.
    """
    import pyspiel

    gtype = game.get_type()
    name = gtype.short_name
    if game.num_players() != 2:
        raise UnsupportedGameError(f"game {name}: LAMIR needs exactly 2 players, got {game.num_players()}")
    if gtype.utility not in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM):
        raise UnsupportedGameError(
            f"game {name}: LAMIR is defined for zero-sum games, this one is {gtype.utility}; use a zero-sum game"
        )
    if gtype.information == pyspiel.GameType.Information.PERFECT_INFORMATION:
        raise UnsupportedGameError(
            f"game {name}: perfect-information games are outside LAMIR's scope (it learns abstractions of "
            "information sets); use an imperfect-information game such as goofspiel(imp_info=True)"
        )
    if not gtype.provides_information_state_tensor:
        raise UnsupportedGameError(f"game {name}: LAMIR needs information_state_tensor, which it does not provide")


def load_game(game: Any) -> Any:
    """``game`` as a ``pyspiel.Game``: a game is returned as it is, a string is loaded with ``pyspiel.load_game``
    (a short name such as ``"kuhn_poker"``, or with parameters, ``"goofspiel(num_cards=4,imp_info=True)"``).

    Raises:
        ValueError: for a name OpenSpiel does not know (with the closest known names) or parameters it rejects.
        TypeError: if ``game`` is neither a ``pyspiel.Game`` nor a string.
    """
    import pyspiel

    if isinstance(game, pyspiel.Game):
        return game
    if not isinstance(game, str):
        raise TypeError(
            f"game must be a pyspiel.Game or an OpenSpiel game name such as 'kuhn_poker', got {type(game).__name__}"
        )
    short = game.split("(", 1)[0].strip()
    known = pyspiel.registered_names()
    if short not in known:
        close = difflib.get_close_matches(short, known, n=3)
        hint = f" (closest known names: {', '.join(close)})" if close else ""
        raise ValueError(
            f"game: {game!r} is not an OpenSpiel game{hint}; pass a pyspiel.Game or a name pyspiel.load_game "
            "accepts, e.g. 'kuhn_poker' or 'goofspiel(imp_info=True,points_order=descending)'"
        )
    try:
        return pyspiel.load_game(game)
    except pyspiel.SpielError as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"game: pyspiel.load_game({game!r}) failed: {reason}") from None


def tabulate_game(game: Any, *, allow_chance: bool = False, max_nodes: int = 2_000_000) -> GameTree:
    """Enumerate an OpenSpiel game into a :class:`GameTree`.

    Args:
        game: a ``pyspiel.Game``, or a game name string that ``pyspiel.load_game`` accepts (loaded here, see
            :func:`load_game`).
        allow_chance: accept chance nodes (for exact true-model checks such as Kuhn poker); LAMIR's learned model
            needs ``False``.
        max_nodes: refuse games larger than this.

    Raises:
        UnsupportedGameError: if the game is outside LAMIR's scope, has chance nodes while ``allow_chance`` is
            false, or has more than ``max_nodes`` nodes.
        ValueError: if ``game`` is a name OpenSpiel cannot load.
        TypeError: if ``game`` is neither a ``pyspiel.Game`` nor a string.
    """
    game = load_game(game)
    check_lamir_scope(game)
    turn_based = game.get_type().dynamics != game.get_type().dynamics.SIMULTANEOUS
    tree = tabulate(
        game.new_initial_state(),
        name=str(game),
        num_distinct_actions=game.num_distinct_actions(),
        turn_based=turn_based,
        public_observation=public_observer(game),
        max_nodes=max_nodes,
    )
    if tree.has_chance and not allow_chance:
        raise UnsupportedGameError(
            f"game {game}: it has chance nodes, and LAMIR's learned model assumes a game without chance events; "
            "for goofspiel use points_order=descending (or ascending)"
        )
    return tree


def tabulate(
    root_state: Any,
    *,
    name: str,
    num_distinct_actions: int,
    turn_based: bool,
    public_observation: Callable[[Any], tuple[str, np.ndarray]],
    max_nodes: int = 2_000_000,
) -> GameTree:
    """Enumerate any state object with OpenSpiel's ``State`` interface into a :class:`GameTree`.

    The state must provide ``is_terminal``, ``is_chance_node``, ``chance_outcomes``, ``is_simultaneous_node``,
    ``current_player``, ``legal_actions(player)``, ``apply_action``, ``apply_actions``, ``clone``, ``returns``,
    ``information_state_string(player)`` and ``information_state_tensor(player)``; this lets tests build tiny
    hand-made games without registering them with OpenSpiel.

    Args:
        root_state: the initial state.
        name: a readable name.
        num_distinct_actions: OpenSpiel's ``num_distinct_actions``.
        turn_based: whether one player moves at a time (then the other gets the no-op slot).
        public_observation: ``state -> (key, tensor)`` of the public state.
        max_nodes: refuse trees larger than this.

    Raises:
        UnsupportedGameError: if the tree exceeds ``max_nodes`` or an infoset's legal actions are inconsistent.
    """
    num_actions = num_distinct_actions + (1 if turn_based else 0)
    noop = num_distinct_actions if turn_based else None
    kinds: list[int] = []
    infosets: list[tuple[int, int]] = []
    publics: list[int] = []
    depths: list[int] = []
    rewards: list[float] = []
    child_lists: list[list[tuple[int, int, int]]] = []
    chance_lists: list[list[tuple[int, float]]] = []
    info_index: tuple[dict[str, int], dict[str, int]] = ({}, {})
    info_tensor: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    info_legal: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    info_public: tuple[list[int], list[int]] = ([], [])
    info_history: tuple[list[tuple[int, ...]], list[tuple[int, ...]]] = ([], [])
    pub_index: dict[str, int] = {}
    pub_tensor: list[np.ndarray] = []
    pub_nodes: list[list[int]] = []

    def legal_mask(state: Any, player: int) -> np.ndarray:
        mask = np.zeros(num_actions, dtype=bool)
        actions = state.legal_actions(player)
        if actions:
            mask[np.asarray(actions)] = True
        elif noop is not None:
            mask[noop] = True
        return mask

    def new_node(kind: int, depth: int, reward: float) -> int:
        if len(kinds) >= max_nodes:
            raise UnsupportedGameError(f"game {name}: more than max_nodes={max_nodes} nodes; use a smaller game")
        kinds.append(kind)
        infosets.append((-1, -1))
        publics.append(-1)
        depths.append(depth)
        rewards.append(reward)
        child_lists.append([])
        chance_lists.append([])
        return len(kinds) - 1

    # Iterative DFS: (state, node id, own-action histories of both players).
    root = new_node(TERMINAL if root_state.is_terminal() else DECISION, 0, 0.0)
    stack: list[tuple[Any, int, tuple[tuple[int, ...], tuple[int, ...]]]] = [(root_state, root, ((), ()))]
    max_steps = 0
    while stack:
        state, node, history = stack.pop()
        ret0 = float(state.returns()[0])
        if state.is_terminal():
            kinds[node] = TERMINAL
            continue
        if state.is_chance_node():
            kinds[node] = CHANCE
            for outcome, prob in state.chance_outcomes():
                child_state = state.clone()
                child_state.apply_action(outcome)
                child = new_node(DECISION, depths[node], float(child_state.returns()[0]) - ret0)
                chance_lists[node].append((child, float(prob)))
                stack.append((child_state, child, history))
            continue
        kinds[node] = DECISION
        key, tensor = public_observation(state)
        if key not in pub_index:
            pub_index[key] = len(pub_tensor)
            pub_tensor.append(tensor)
            pub_nodes.append([])
        publics[node] = pub_index[key]
        pub_nodes[pub_index[key]].append(node)
        ids = []
        masks = []
        for p in (0, 1):
            mask = legal_mask(state, p)
            masks.append(mask)
            skey = state.information_state_string(p)
            if skey not in info_index[p]:
                info_index[p][skey] = len(info_tensor[p])
                info_tensor[p].append(np.asarray(state.information_state_tensor(p), dtype=np.float32))
                info_legal[p].append(mask)
                info_public[p].append(pub_index[key])
                info_history[p].append(history[p])
            elif not np.array_equal(info_legal[p][info_index[p][skey]], mask):
                raise UnsupportedGameError(f"game {name}: infoset {skey!r} has inconsistent legal actions")
            ids.append(info_index[p][skey])
        infosets[node] = (ids[0], ids[1])
        max_steps = max(max_steps, depths[node] + 1)
        for a0 in np.flatnonzero(masks[0]):
            for a1 in np.flatnonzero(masks[1]):
                child_state = state.clone()
                if turn_based:
                    mover = state.current_player()
                    child_state.apply_action(int(a0 if mover == 0 else a1))
                else:
                    child_state.apply_actions([int(a0), int(a1)])
                child = new_node(DECISION, depths[node] + 1, float(child_state.returns()[0]) - ret0)
                child_lists[node].append((int(a0), int(a1), child))
                own = tuple(h + ((int(a),) if a != noop else ()) for h, a in zip(history, (a0, a1), strict=True))
                stack.append((child_state, child, own))

    n = len(kinds)
    children = np.full((n, num_actions, num_actions), -1, dtype=np.int64)
    for node, lst in enumerate(child_lists):
        for a0, a1, child in lst:
            children[node, a0, a1] = child
    width = max([len(c) for c in chance_lists] + [1])
    chance_children = np.full((n, width), -1, dtype=np.int64)
    chance_probs = np.zeros((n, width), dtype=np.float64)
    for node, lst in enumerate(chance_lists):
        for j, (child, prob) in enumerate(lst):
            chance_children[node, j] = child
            chance_probs[node, j] = prob

    # Children always get larger ids than their parents, so one pass in id order propagates chance reach.
    node_chance = np.ones(n, dtype=np.float64)
    for node in range(n):
        for _, _, child in child_lists[node]:
            node_chance[child] = node_chance[node]
        for child, prob in chance_lists[node]:
            node_chance[child] = node_chance[node] * prob

    def history_array(rows: list[tuple[int, ...]]) -> np.ndarray:
        out = np.full((len(rows), max(max_steps, 1)), -1, dtype=np.int64)
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return out

    return GameTree(
        name=name,
        num_actions=num_actions,
        noop=noop,
        node_kind=np.asarray(kinds, dtype=np.int8),
        node_infoset=np.asarray(infosets, dtype=np.int64),
        node_public=np.asarray(publics, dtype=np.int64),
        node_depth=np.asarray(depths, dtype=np.int64),
        reward=np.asarray(rewards, dtype=np.float64),
        children=children,
        chance_children=chance_children,
        chance_probs=chance_probs,
        node_chance=node_chance,
        infoset_key=(tuple(info_index[0]), tuple(info_index[1])),
        infoset_tensor=(np.stack(info_tensor[0]), np.stack(info_tensor[1])),
        infoset_legal=(np.stack(info_legal[0]), np.stack(info_legal[1])),
        infoset_public=(np.asarray(info_public[0], dtype=np.int64), np.asarray(info_public[1], dtype=np.int64)),
        infoset_history=(history_array(info_history[0]), history_array(info_history[1])),
        public_key=tuple(pub_index),
        public_tensor=np.stack(pub_tensor),
        public_nodes=tuple(np.asarray(v, dtype=np.int64) for v in pub_nodes),
        root=root,
        max_steps=max_steps,
    )


def goofspiel_game(num_cards: int) -> Any:
    """The ``pyspiel.Game`` of imperfect-information Goofspiel with descending point cards (the paper's game family,
    with the chance-free point order) and win/loss returns.

    Raises:
        ValueError: if ``num_cards`` is not in 2..5 (larger trees are too big to enumerate here).
    """
    import pyspiel

    if not 2 <= num_cards <= 5:
        raise ValueError(f"num_cards must be in 2..5 for an enumerable II-Goofspiel, got {num_cards}")
    return pyspiel.load_game(
        "goofspiel",
        {"imp_info": True, "points_order": "descending", "num_cards": num_cards, "returns_type": "win_loss"},
    )


def load_goofspiel(num_cards: int) -> GameTree:
    """:func:`goofspiel_game`, tabulated.

    Raises:
        ValueError: if ``num_cards`` is not in 2..5.
    """
    return tabulate_game(goofspiel_game(num_cards))
