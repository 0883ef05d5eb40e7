"""Test-time look-ahead of LAMIR: continual resolving with CFR+ on depth-limited subgames (notes §2.5).

At each public state ``S`` the resolving player ``r`` (opponent ``o``):

1. collects every history of ``S`` (the histories consistent with the public state), with ``r``'s range (the
   product of its own earlier resolved strategies) and the chance reach;
2. maps both players' infosets to abstract infosets with Λ^I and **merges histories with the same joint
   abstraction** into one root, weighted by the summed reach (so at most ``L²`` roots);
3. adds the re-solving gadget for ``o`` (Burch et al. 2014): at each of its abstract root infosets ``o`` may
   *terminate* for the counterfactual value carried from the previous subgame, or *follow* into the subgame;
4. unrolls the model below every root to the depth limit; at the limit both players choose one of ``T``
   transformations of the base policy and receive the value network's payoff (multi-valued states);
5. solves the subgame with CFR+ and plays ``r``'s root strategy at its real infoset (restricted to the real legal
   actions);
6. hands the next public states ``r``'s new range and ``o``'s counterfactual values for their gadgets: the
   values of ``o``'s **best response** to ``r``'s CFR+ average strategy, at ``o``'s infosets of this subgame that
   lead into each next public state. Safe re-solving needs these best-response values (upper bounds on what ``o``
   can get; Burch et al. 2014, DeepStack's continual re-solving); the values under the average profile itself
   are lower and, with an approximate solve, make later gadgets constrain the resolver wrongly. A chance node
   between two public states (Leduc poker's public card) is stepped through; its probabilities are carried by
   the chance reach.

Two models plug into the same procedure: :class:`LearnedModel` (LAMIR's abstraction, Υ_θ, Γ_θ, v_θ; depth limit 1
as in the paper's small-game experiments) and :class:`TrueModel` (the real game, exact multi-valued leaf values
or full depth), the reference LAMIR is compared with.

Deviations (README): a player's infoset below the root of the learned subgame is (root abstract infoset, own
action, predicted next public state); gadget values are taken per unit of resolver reach and rescaled to the real
infosets; an opponent root infoset without a stored value gets no gadget (counted).

Glossary: ``K_p`` infosets of player ``p``, ``A`` actions, ``T`` transformations, ``N`` nodes, ``D`` latent width.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from iclr26.lamir.features import GameFeatures
from iclr26.lamir.games import CHANCE, DECISION, TERMINAL, GameTree
from iclr26.lamir.model import AbstractModel
from iclr26.lamir.subgame import Subgame, SubgameBuilder, best_response, evaluate_profile, solve_cfr_plus


@dataclass(frozen=True)
class RootSpec:
    """One (merged) root of a subgame.

    Attributes:
        labels: both players' abstract infosets at the root.
        history: a representative history (the only one, for a model that does not merge).
    """

    labels: tuple[int, int]
    history: int


class SearchModel(Protocol):
    """What continual resolving needs from a model of the game."""

    merges_histories: bool

    def labels(self, player: int, infosets: np.ndarray) -> np.ndarray:
        """Abstract infoset of each real infoset of ``player`` (``(n,)`` → ``(n,)``)."""
        ...

    def expand(self, builder: SubgameBuilder, public: int, roots: Sequence[RootSpec]) -> list[int]:
        """Build the depth-limited tree below every root; root infosets use keys ``("root", label)``."""
        ...

    def next_key(self, player: int, label: int, action: int, next_public: int, next_infoset: int) -> Hashable:
        """The key of the subgame infoset whose counterfactual value seeds ``player``'s gadget at
        ``next_infoset`` (reached from abstract infoset ``label`` by ``action`` into ``next_public``)."""
        ...


def transformed_values(tree: GameTree, transformed: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Exact values of the transformed-policy pairs: ``(N, T, T)``, player 0's expected return from each node when
    player 0 follows ``π^{χ_j0}`` and player 1 follows ``π^{χ_j1}`` (the quantity v_θ learns).

    Args:
        tree: a game without chance nodes and with rewards only on entering terminal nodes.
        transformed: per player ``(K_p, T, A)`` transformed policies.

    Raises:
        ValueError: if the game has chance nodes.
    """
    if tree.has_chance:
        raise ValueError(f"{tree.name}: transformed values are defined here for games without chance nodes")
    t = transformed[0].shape[1]
    value = np.zeros((tree.num_nodes, t, t))
    terminal = tree.node_kind == TERMINAL
    value[terminal] = tree.reward[terminal][:, None, None]
    depth = tree.node_depth
    for d in range(int(depth.max()), -1, -1):
        nodes = np.flatnonzero((depth == d) & (tree.node_kind == DECISION))
        if nodes.size == 0:
            continue
        child = tree.children[nodes]  # (n, A, A)
        legal = child >= 0
        child_value = value[np.maximum(child, 0)] * legal[..., None, None]  # (n, A, A, T, T)
        p0 = transformed[0][tree.node_infoset[nodes, 0]]  # (n, T, A)
        p1 = transformed[1][tree.node_infoset[nodes, 1]]
        # v(h, i, j) = Σ_{a,b} π^{χ_i}_0(a) π^{χ_j}_1(b) v(h·(a, b), i, j), bottom-up: what v_θ learns
        value[nodes] = np.einsum("nia,njb,nabij->nij", p0, p1, child_value)
    return value


def _legal_actions(mask: np.ndarray) -> list[int]:
    return np.flatnonzero(mask).tolist()


class TrueModel:
    """The real game as a search model: identity abstraction, real dynamics, exact leaf values.

    Args:
        tree: the tabulated game.
        depth_limit: decision steps below the root before the multi-valued leaves, or ``None`` for full depth.
        leaf_values: ``(N, T, T)`` from :func:`transformed_values` (required when ``depth_limit`` is set).

    Raises:
        ValueError: if ``depth_limit`` is set without leaf values, or is not positive, or ``leaf_values`` is not
            ``(N, T, T)``.
    """

    merges_histories = False

    def __init__(self, tree: GameTree, *, depth_limit: int | None, leaf_values: np.ndarray | None = None) -> None:
        if depth_limit is not None and (depth_limit < 1 or leaf_values is None):
            raise ValueError("depth_limit must be >= 1 and comes with leaf_values (N, T, T)")
        if leaf_values is not None and (
            leaf_values.ndim != 3
            or leaf_values.shape[0] != tree.num_nodes
            or leaf_values.shape[1] != leaf_values.shape[2]
        ):
            raise ValueError(
                f"leaf_values must be (N, T, T) with N = {tree.num_nodes} nodes (see transformed_values), "
                f"got {leaf_values.shape}"
            )
        self.tree = tree
        self.depth_limit = depth_limit
        self.leaf_values = leaf_values

    def labels(self, player: int, infosets: np.ndarray) -> np.ndarray:
        """The identity: every real infoset is its own abstract infoset."""
        return np.asarray(infosets)

    def expand(self, builder: SubgameBuilder, public: int, roots: Sequence[RootSpec]) -> list[int]:
        """The real tree below each root history, to the depth limit."""
        return [self._build(builder, r.history, 0) for r in roots]

    def _build(self, builder: SubgameBuilder, node: int, depth: int) -> int:
        tree = self.tree
        kind = tree.node_kind[node]
        if kind == TERMINAL:
            return builder.terminal(float(tree.reward[node]))
        if kind == CHANCE:
            mask = tree.chance_children[node] >= 0
            kids = [self._build(builder, int(c), depth) for c in tree.chance_children[node][mask]]
            return builder.chance(kids, tree.chance_probs[node][mask])
        infosets = tree.node_infoset[node]
        if self.depth_limit is not None and depth == self.depth_limit:
            values = self.leaf_values[node]
            t = values.shape[0]
            ids = (
                builder.infoset(0, ("leaf", int(infosets[0])), range(t)),
                builder.infoset(1, ("leaf", int(infosets[1])), range(t)),
            )
            kids = np.array([[builder.terminal(float(values[i, j])) for j in range(t)] for i in range(t)])
            return builder.decision(ids, kids)
        tag = "root" if depth == 0 else "node"
        actions = [_legal_actions(tree.infoset_legal[p][infosets[p]]) for p in (0, 1)]
        ids = (
            builder.infoset(0, (tag, int(infosets[0])), actions[0]),
            builder.infoset(1, (tag, int(infosets[1])), actions[1]),
        )
        kids = np.array(
            [
                [self._build(builder, int(tree.children[node, a0, a1]), depth + 1) for a1 in actions[1]]
                for a0 in actions[0]
            ]
        )
        return builder.decision(ids, kids)

    def next_key(self, player: int, label: int, action: int, next_public: int, next_infoset: int) -> Hashable:
        """The real next infoset, a leaf when the depth limit is 1."""
        return ("leaf" if self.depth_limit == 1 else "node", int(next_infoset))


def whole_game_subgame(tree: GameTree) -> Subgame:
    """The whole tabulated game as one flat subgame: the true model expanded from the root without a depth limit (to
    solve a small game outright with :func:`~iclr26.lamir.subgame.solve_cfr_plus`)."""
    builder = SubgameBuilder()
    return builder.finalize([TrueModel(tree, depth_limit=None)._build(builder, tree.root, 0)], [1.0])


@dataclass
class ExpansionStats:
    """Counters of model predictions that needed an explicit rule (reported in the run's metrics).

    Attributes:
        empty_legal: abstract infosets for which Γ_θ predicted no legal action (the most likely one is used).
    """

    empty_legal: int = 0


class LearnedModel:
    """LAMIR's learned abstract model as a search model (depth limit 1).

    Roots are joint abstract infosets; the latent of abstract infoset ``l`` of player ``i`` in public state ``s_0``
    is ``Λ^I(s_0, l)``; legal actions come from Γ_θ; one step of Υ_θ gives the next latents, the reward, whether the
    game ended and the next public state; leaves get ``r + v_θ(s̄_1', s̄_2')``. A player's leaf infoset is
    (its root abstract infoset, its action, the predicted next public state).

    Args:
        features: the game's tensors.
        model: the trained :class:`AbstractModel`.
        abstraction: per player ``(K_p,)`` the abstract infoset of every real infoset (``argmax Λ^I``).

    Raises:
        ValueError: if an abstraction does not give every infoset an index in ``[0, L)``.
    """

    merges_histories = True

    def __init__(
        self, features: GameFeatures, model: AbstractModel, abstraction: tuple[np.ndarray, np.ndarray]
    ) -> None:
        capacity = model.sizes.capacity
        for p in (0, 1):
            labels = np.asarray(abstraction[p])
            k = int(features.infoset[p].shape[0])
            if labels.shape != (k,) or (labels.size and (labels.min() < 0 or labels.max() >= capacity)):
                raise ValueError(
                    f"abstraction[{p}] must hold one index in [0, {capacity}) per infoset ({k}), e.g. "
                    f"AbstractModelLearner.abstraction({p}); got shape {labels.shape}"
                )
        self.features = features
        self.model = model
        self.abstraction = abstraction
        self.stats = ExpansionStats()

    def labels(self, player: int, infosets: np.ndarray) -> np.ndarray:
        """``argmax Λ^I_i`` of each infoset."""
        return self.abstraction[player][np.asarray(infosets)]

    @staticmethod
    def public_key(public_probs: np.ndarray) -> bytes:
        """A hashable key of a (predicted or real) public-state tensor: its entries thresholded at 1/2."""
        return np.packbits(public_probs > 0.5).tobytes()

    @torch.no_grad()
    def expand(self, builder: SubgameBuilder, public: int, roots: Sequence[RootSpec]) -> list[int]:
        """One step of the learned dynamics below each merged root, then the multi-valued leaf layer."""
        model = self.model
        pub = self.features.public[public]
        latents: list[dict[int, torch.Tensor]] = [{}, {}]
        actions: list[dict[int, list[int]]] = [{}, {}]
        for p in (0, 1):
            labels = sorted({r.labels[p] for r in roots})
            onehot = self.features.player_onehot[p].expand(len(labels), 2)
            z = model.latent(pub.expand(len(labels), -1), torch.tensor(labels), onehot)
            legal = torch.sigmoid(model.legal_logits(z)).numpy()
            for i, label in enumerate(labels):
                latents[p][label] = z[i]
                acts = np.flatnonzero(legal[i] > 0.5).tolist()
                if not acts:
                    self.stats.empty_legal += 1
                    acts = [int(np.argmax(legal[i]))]
                actions[p][label] = acts
        # All (root, a0, a1) transitions in one batch.
        rows = [
            (k, a0, a1) for k, r in enumerate(roots) for a0 in actions[0][r.labels[0]] for a1 in actions[1][r.labels[1]]
        ]
        z0 = torch.stack([latents[0][roots[k].labels[0]] for k, _, _ in rows])
        z1 = torch.stack([latents[1][roots[k].labels[1]] for k, _, _ in rows])
        a0 = torch.tensor([r[1] for r in rows])
        a1 = torch.tensor([r[2] for r in rows])
        out = model.step(z0, z1, a0, a1)
        values = model.values(out.latent0, out.latent1).numpy().astype(np.float64)
        reward = out.reward.numpy().astype(np.float64)
        terminal = torch.sigmoid(out.terminal_logit).numpy() > 0.5
        public_probs = torch.sigmoid(out.public_logits).numpy()
        t = values.shape[-1]
        leaf = {}
        for i, (k, act0, act1) in enumerate(rows):
            if terminal[i]:
                leaf[(k, act0, act1)] = builder.terminal(float(reward[i]))
                continue
            key = self.public_key(public_probs[i])
            labels = roots[k].labels
            ids = (
                builder.infoset(0, ("leaf", labels[0], act0, key), range(t)),
                builder.infoset(1, ("leaf", labels[1], act1, key), range(t)),
            )
            kids = np.array(
                # depth-limit layer: both players pick one of T transformations; payoff r + v_θ(s̄', χ_x, χ_y)
                [[builder.terminal(float(reward[i] + values[i, x, y])) for y in range(t)] for x in range(t)]
            )
            leaf[(k, act0, act1)] = builder.decision(ids, kids)
        nodes = []
        for k, r in enumerate(roots):
            acts = (actions[0][r.labels[0]], actions[1][r.labels[1]])
            ids = (
                builder.infoset(0, ("root", r.labels[0]), acts[0]),
                builder.infoset(1, ("root", r.labels[1]), acts[1]),
            )
            kids = np.array([[leaf[(k, x, y)] for y in acts[1]] for x in acts[0]])
            nodes.append(builder.decision(ids, kids))
        return nodes

    def next_key(self, player: int, label: int, action: int, next_public: int, next_infoset: int) -> Hashable:
        """(root abstract infoset, action, the real next public state's key)."""
        return ("leaf", int(label), int(action), self.public_key(self.features.public[next_public].numpy()))


@dataclass(frozen=True)
class ResolveState:
    """What continual resolving carries into a public state.

    Attributes:
        public: the public state.
        own_range: ``(K_r,)`` the resolving player's reach of its infosets (only this public state's are read).
        opponent_cfv: ``(K_o,)`` the opponent's counterfactual values for the gadget (``NaN`` = unconstrained), or
            ``None`` at the first public state (no gadget).
    """

    public: int
    own_range: np.ndarray
    opponent_cfv: np.ndarray | None


@dataclass
class ResolveStats:
    """Counters over all resolves of one player.

    Attributes:
        resolves: subgames solved.
        max_roots: the most (merged) roots of one subgame.
        max_nodes: the most nodes of one subgame.
        gadget_misses: opponent root infosets left without a gadget (no matching leaf in the previous subgame).
        legal_mismatches: real infosets whose abstract strategy had no mass on their legal actions (played
            uniformly instead).
    """

    resolves: int = 0
    max_roots: int = 0
    max_nodes: int = 0
    gadget_misses: int = 0
    legal_mismatches: int = 0


@dataclass(frozen=True)
class ResolveStep:
    """The outcome of resolving one public state.

    Attributes:
        strategy: ``{real infoset: (A,) probabilities}`` for the resolving player's infosets in the public state.
        children: the states to carry into each next public state.
    """

    strategy: dict[int, np.ndarray]
    children: tuple[ResolveState, ...]


class ContinualResolver:
    """Continual resolving (steps 1-6 of the module docstring) for one player with a given model.

    Args:
        tree: the real game (to enumerate the histories of a public state, as the paper's resolving does).
        model: a :class:`SearchModel`.
        player: the resolving player.
        iterations: CFR+ iterations per subgame.

    Raises:
        ValueError: if the game has rewards before terminal nodes, more than one first public state, an invalid
            ``player`` or ``iterations < 1``.
    """

    def __init__(self, tree: GameTree, model: SearchModel, *, player: int, iterations: int) -> None:
        if np.abs(tree.reward[tree.node_kind != TERMINAL]).max(initial=0.0) > 0:
            raise ValueError(f"{tree.name}: continual resolving here needs rewards only on terminal transitions")
        first = np.unique(tree.node_public[(tree.node_kind == DECISION) & (tree.node_depth == 0)])
        if first.size != 1:
            raise ValueError(f"{tree.name}: expected one first public state, found {first.size}")
        if player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, got {player}")
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1 (CFR+ iterations per resolve), got {iterations}")
        self.tree = tree
        self.model = model
        self.player = player
        self.iterations = iterations
        self.stats = ResolveStats()
        self.initial = ResolveState(
            public=int(first[0]), own_range=np.ones(tree.num_infosets(player)), opponent_cfv=None
        )

    def resolve(self, state: ResolveState) -> ResolveStep:
        """Resolve one public state (steps 1-6)."""
        tree, model = self.tree, self.model
        r, o = self.player, 1 - self.player
        hist = tree.public_nodes[state.public]
        s_r = tree.node_infoset[hist, r]
        s_o = tree.node_infoset[hist, o]
        # Step 1: the resolver's range times chance, per history.
        weight = state.own_range[s_r] * tree.node_chance[hist]
        lab_r = model.labels(r, s_r)
        lab_o = model.labels(o, s_o)
        joint = np.stack([lab_r, lab_o] if r == 0 else [lab_o, lab_r], 1)
        # Step 2: merge histories with the same joint abstraction.
        groups: dict[Hashable, int] = {}
        roots: list[RootSpec] = []
        root_weight: list[float] = []
        for i, h in enumerate(hist):
            key = (int(joint[i, 0]), int(joint[i, 1])) if model.merges_histories else int(h)
            if key not in groups:
                groups[key] = len(roots)
                roots.append(RootSpec(labels=(int(joint[i, 0]), int(joint[i, 1])), history=int(h)))
                root_weight.append(0.0)
            root_weight[groups[key]] += float(weight[i])
        builder = SubgameBuilder()
        subtrees = model.expand(builder, state.public, roots)
        # Step 3: the gadget for the opponent's abstract root infosets.
        gadget = self._gadget(state, s_o, lab_o, weight)
        sign = 1.0 if o == 0 else -1.0
        tops = []
        for root, sub in zip(roots, subtrees, strict=True):
            label = root.labels[o]
            if label in gadget:
                value, mass = gadget[label]
                info = builder.infoset(o, ("gadget", label), (0, 1))
                # gadget "terminate": the opponent takes its carried counterfactual value, per unit of resolver reach
                stop = builder.terminal(sign * value / mass)
                kids = np.array([[sub], [stop]]) if o == 0 else np.array([[sub, stop]])
                tops.append(builder.decision((info, -1) if o == 0 else (-1, info), kids))
            else:
                tops.append(sub)
        total = float(sum(root_weight))
        if total <= 0:
            raise ValueError(f"public state {state.public} has no reach for player {r}; it should not be resolved")
        subgame = builder.finalize(tops, root_weight)
        # Step 5: CFR+.
        solution = solve_cfr_plus(subgame, iterations=self.iterations)
        self.stats.resolves += 1
        self.stats.max_roots = max(self.stats.max_roots, len(roots))
        self.stats.max_nodes = max(self.stats.max_nodes, subgame.num_nodes)
        index_r = subgame.infoset_index(r)
        strategy: dict[int, np.ndarray] = {}
        for s, label in zip(s_r.tolist(), lab_r.tolist(), strict=True):
            if s in strategy:
                continue
            probs = solution.infoset_strategy(subgame, r, index_r[("root", int(label))])
            legal = tree.infoset_legal[r][s]
            row = np.array([probs.get(a, 0.0) if legal[a] else 0.0 for a in range(tree.num_actions)])
            if row.sum() <= 0:
                self.stats.legal_mismatches += 1
                row = legal.astype(np.float64)
            strategy[s] = row / row.sum()
        # Step 6: ranges and the opponent's best-response counterfactual values for the next public states.
        index_o = subgame.infoset_index(o)
        br_o = best_response(subgame, solution.strategy, o)
        carried = evaluate_profile(subgame, (solution.strategy[0], br_o) if o == 1 else (br_o, solution.strategy[1]))
        cfv, cf_reach = carried.infoset_cfv[o], carried.infoset_cf_reach[o]
        own_range = np.zeros(tree.num_infosets(r))
        keys: dict[int, dict[int, Hashable]] = {}
        for i, h in enumerate(hist):
            for a0, a1 in zip(*np.nonzero(tree.children[h] >= 0), strict=True):
                act = (int(a0), int(a1))
                for child in self._next_histories(int(tree.children[h, a0, a1])):
                    nxt = int(tree.node_public[child])
                    if nxt == state.public:
                        raise ValueError(f"{tree.name}: a step did not change the public state")
                    own_range[tree.node_infoset[child, r]] = state.own_range[s_r[i]] * strategy[int(s_r[i])][act[r]]
                    keys.setdefault(nxt, {})[int(tree.node_infoset[child, o])] = model.next_key(
                        o, int(lab_o[i]), act[o], nxt, int(tree.node_infoset[child, o])
                    )
        children = []
        for nxt, opp_keys in sorted(keys.items()):
            hist2 = tree.public_nodes[nxt]
            mass = np.bincount(
                tree.node_infoset[hist2, o],
                weights=own_range[tree.node_infoset[hist2, r]] * tree.node_chance[hist2],
                minlength=tree.num_infosets(o),
            )
            opp_cfv = np.full(tree.num_infosets(o), np.nan)
            for s, key in opp_keys.items():
                j = index_o.get(key)
                if j is not None and cf_reach[j] > 0:
                    # counterfactual value per unit of the resolver's reach, rescaled to the real infoset's mass
                    opp_cfv[s] = cfv[j] / cf_reach[j] * mass[s]
            children.append(ResolveState(public=nxt, own_range=own_range, opponent_cfv=opp_cfv))
        return ResolveStep(strategy=strategy, children=tuple(children))

    def _next_histories(self, child: int) -> list[int]:
        """The decision histories a joint action leads to: the child itself, none if it is terminal, or the decision
        outcomes of a chance node between two public states (e.g. Leduc poker's public card; chance reach is
        carried by ``node_chance``)."""
        tree = self.tree
        if tree.node_kind[child] == DECISION:
            return [child]
        if tree.node_kind[child] == TERMINAL:
            return []
        outcomes = tree.chance_children[child][tree.chance_children[child] >= 0]
        if (tree.node_kind[outcomes] == CHANCE).any():
            raise ValueError(f"{tree.name}: consecutive chance nodes between public states are not supported")
        return [int(c) for c in outcomes if tree.node_kind[c] == DECISION]

    def _gadget(
        self, state: ResolveState, s_o: np.ndarray, lab_o: np.ndarray, weight: np.ndarray
    ) -> dict[int, tuple[float, float]]:
        """Per opponent abstract root infoset: (summed counterfactual value, summed resolver reach), for those whose
        every reached member has a stored value."""
        if state.opponent_cfv is None:
            return {}
        mass = np.bincount(lab_o, weights=weight)  # resolver reach of each abstract root infoset
        value = np.zeros_like(mass)
        missing: set[int] = set()
        for s in np.unique(s_o[weight > 0]):
            label = int(lab_o[np.flatnonzero(s_o == s)[0]])
            if np.isnan(state.opponent_cfv[s]):
                missing.add(label)
            else:
                value[label] += float(state.opponent_cfv[s])
        self.stats.gadget_misses += len(missing)
        return {int(k): (float(value[k]), float(mass[k])) for k in np.flatnonzero(mass > 0) if int(k) not in missing}


@dataclass(frozen=True)
class SearchPolicy:
    """The look-ahead policy of both seats, as tables over real infosets.

    Attributes:
        tables: per player ``(K_p, A)``: the strategy continual resolving plays at every infoset (uniform over
            legal actions where that player never arrives under its own strategy).
        stats: per player :class:`ResolveStats`.
    """

    tables: tuple[np.ndarray, np.ndarray]
    stats: tuple[ResolveStats, ResolveStats] = field(default_factory=lambda: (ResolveStats(), ResolveStats()))


def resolve_all(tree: GameTree, model: SearchModel, *, iterations: int) -> SearchPolicy:
    """Continual resolving of every public state the resolver can reach, for both seats.

    The resolver's strategy at a public state depends only on the public history (its range and the gadget are
    computed for all its infosets), so one pass over the public tree gives its whole policy; exploitability and
    exact head-to-head values are then computed from these tables.
    """
    tables = []
    stats = []
    for player in (0, 1):
        resolver = ContinualResolver(tree, model, player=player, iterations=iterations)
        table = tree.infoset_legal[player] / tree.infoset_legal[player].sum(-1, keepdims=True)
        frontier = [resolver.initial]
        while frontier:
            state = frontier.pop()
            hist = tree.public_nodes[state.public]
            reach = state.own_range[tree.node_infoset[hist, player]] * tree.node_chance[hist]
            if reach.sum() <= 0:
                continue
            step = resolver.resolve(state)
            for s, row in step.strategy.items():
                table[s] = row
            frontier.extend(step.children)
        tables.append(table)
        stats.append(resolver.stats)
    return SearchPolicy(tables=(tables[0], tables[1]), stats=(stats[0], stats[1]))
