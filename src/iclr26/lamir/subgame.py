"""Subgames as flat arrays, and CFR+ on them (the solver LAMIR runs at test time on the merged abstract subgame).

A subgame is a tree of simultaneous-move decision nodes (a player with one forced action has no infoset there),
chance nodes and terminal nodes, with one or more root nodes weighted by an external reach (the merged root of the
paper: each root is a joint abstraction, weighted by the reach of the histories merged into it). Depth-limit
("multi-valued state") leaves are ordinary decision nodes in which both players pick one of ``T`` policy
transformations, followed by terminals holding the value network's payoffs.

CFR+ (Tammelin 2014; Tammelin et al. 2015), one iteration ``t``, for ``p`` = 0 then 1 (alternating updates):

1. current strategies by regret matching+: ``σ_p(I, a) = R⁺(I, a) / Σ_b R⁺(I, b)`` (uniform if all zero);
2. forward pass: reaches ``π_0, π_1`` and the external/chance reach ``π_c`` of every node;
3. backward pass: player 0's expected utility ``v(h)`` of every node under ``σ``;
4. counterfactual action values ``q_p(I, a) = Σ_{h∈I} π_{-p}(h) π_c(h) Σ_{a'} σ_{-p}(a') u_p(h·(a, a'))``;
5. regret update ``R⁺(I, a) ← max(R⁺(I, a) + q_p(I, a) − Σ_b σ_p(I, b) q_p(I, b), 0)``;
6. average strategy ``S_p(I, a) += t · Σ_{h∈I} π_p(h) σ_p(I, a)`` (CFR+'s linear averaging).

Glossary: ``E`` edges, ``M_p`` infoset-actions of player ``p``, ``J_p`` infosets of player ``p``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from iclr26.common.native import compiled_core


@dataclass(frozen=True)
class Subgame:
    """A subgame in flat arrays (build it with :class:`SubgameBuilder`).

    Attributes:
        num_nodes: nodes in the tree.
        utility: ``(num_nodes,)`` player 0's payoff at terminal nodes (0 elsewhere).
        is_terminal: ``(num_nodes,)`` bool.
        roots: root node ids.
        root_weight: ``(len(roots),)`` external reach of each root (chance and merged ranges).
        edge_parent, edge_child: ``(E,)`` every edge, sorted by the parent's depth.
        edge_ia: ``(2, E)`` each player's infoset-action index on the edge, ``-1`` where the player is forced.
        edge_prob: ``(E,)`` chance probability of the edge (1 on decision edges).
        edge_depth: ``(E,)`` depth of the parent.
        ia_infoset: per player, ``(M_p,)`` the infoset of each infoset-action.
        ia_action: per player, ``(M_p,)`` the action label of each infoset-action.
        infoset_keys: per player, the key of each infoset.
        node_infoset: ``(2, num_nodes)`` each player's infoset at a node, ``-1`` if forced or not a decision.
    """

    num_nodes: int
    utility: np.ndarray
    is_terminal: np.ndarray
    roots: np.ndarray
    root_weight: np.ndarray
    edge_parent: np.ndarray
    edge_child: np.ndarray
    edge_ia: np.ndarray
    edge_prob: np.ndarray
    edge_depth: np.ndarray
    ia_infoset: tuple[np.ndarray, np.ndarray]
    ia_action: tuple[np.ndarray, np.ndarray]
    infoset_keys: tuple[tuple[object, ...], tuple[object, ...]]
    node_infoset: np.ndarray

    def num_infosets(self, player: int) -> int:
        """``J_p``."""
        return len(self.infoset_keys[player])

    def infoset_index(self, player: int) -> dict[object, int]:
        """Map from infoset key to id for ``player``."""
        return {k: i for i, k in enumerate(self.infoset_keys[player])}


class SubgameBuilder:
    """Builds a :class:`Subgame` bottom-up: children before parents, then :meth:`finalize` with the roots."""

    def __init__(self) -> None:
        self._utility: list[float] = []
        self._terminal: list[bool] = []
        self._edges: list[tuple[int, int, int, int, float]] = []  # parent, child, ia0, ia1, prob
        self._node_infoset: list[tuple[int, int]] = []
        self._has_parent: list[bool] = []
        self._infoset_id: tuple[dict[object, int], dict[object, int]] = ({}, {})
        self._infoset_actions: tuple[list[tuple[int, ...]], list[tuple[int, ...]]] = ([], [])
        self._ia_offset: tuple[list[int], list[int]] = ([], [])
        self._ia_count = [0, 0]

    def _node(self, utility: float, terminal: bool, infosets: tuple[int, int]) -> int:
        self._utility.append(float(utility))
        self._terminal.append(terminal)
        self._node_infoset.append(infosets)
        self._has_parent.append(False)
        return len(self._utility) - 1

    def infoset(self, player: int, key: object, actions: Sequence[int]) -> int:
        """The id of ``player``'s infoset ``key`` with the given action labels (created on first use).

        Raises:
            ValueError: if ``actions`` is empty or differs from an earlier call with the same key.
        """
        actions = tuple(int(a) for a in actions)
        if not actions:
            raise ValueError(f"infoset {key!r} of player {player}: actions must be non-empty")
        index = self._infoset_id[player]
        if key in index:
            if self._infoset_actions[player][index[key]] != actions:
                raise ValueError(
                    f"infoset {key!r} of player {player}: actions {actions} differ from earlier "
                    f"{self._infoset_actions[player][index[key]]}"
                )
            return index[key]
        index[key] = len(self._infoset_actions[player])
        self._infoset_actions[player].append(actions)
        self._ia_offset[player].append(self._ia_count[player])
        self._ia_count[player] += len(actions)
        return index[key]

    def terminal(self, utility: float) -> int:
        """A terminal node with player 0's payoff ``utility``."""
        return self._node(utility, True, (-1, -1))

    def decision(self, infosets: tuple[int, int], children: np.ndarray) -> int:
        """A simultaneous decision node.

        Args:
            infosets: each player's infoset id, or ``-1`` for a player with one forced action.
            children: ``(n0, n1)`` child node ids, ``n_p`` the number of actions of player ``p``'s infoset
                (1 when forced).

        Raises:
            ValueError: if the shape of ``children`` does not match the infosets' action counts, or a child
                already has a parent.
        """
        children = np.asarray(children, dtype=np.int64)
        counts = tuple(1 if infosets[p] < 0 else len(self._infoset_actions[p][infosets[p]]) for p in (0, 1))
        if children.shape != counts:
            raise ValueError(f"children must have shape {counts} (actions per player), got {children.shape}")
        node = self._node(0.0, False, infosets)
        for a0 in range(counts[0]):
            for a1 in range(counts[1]):
                ia = [-1 if infosets[p] < 0 else self._ia_offset[p][infosets[p]] + (a0, a1)[p] for p in (0, 1)]
                self._link(node, int(children[a0, a1]), ia[0], ia[1], 1.0)
        return node

    def chance(self, children: Sequence[int], probs: Sequence[float]) -> int:
        """A chance node with the given children and outcome probabilities.

        Raises:
            ValueError: if the probabilities are negative or do not sum to 1.
        """
        probs = np.asarray(probs, dtype=np.float64)
        if (probs < 0).any() or abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"chance probabilities must be non-negative and sum to 1, got {probs}")
        node = self._node(0.0, False, (-1, -1))
        for child, prob in zip(children, probs, strict=True):
            self._link(node, int(child), -1, -1, float(prob))
        return node

    def _link(self, parent: int, child: int, ia0: int, ia1: int, prob: float) -> None:
        if self._has_parent[child]:
            raise ValueError(f"node {child} already has a parent; build a tree, not a DAG")
        self._has_parent[child] = True
        self._edges.append((parent, child, ia0, ia1, prob))

    def finalize(self, roots: Sequence[int], weights: Sequence[float]) -> Subgame:
        """The finished subgame with the given root nodes and their external reaches.

        Raises:
            ValueError: if a root has a parent, weights are negative, or no root has positive weight.
        """
        roots = np.asarray(roots, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        if roots.shape != weights.shape or roots.size == 0:
            raise ValueError("roots and weights must be non-empty and of equal length")
        if any(self._has_parent[r] for r in roots):
            raise ValueError("a root node must not have a parent")
        if (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"root weights must be non-negative with a positive sum, got {weights}")
        n = len(self._utility)
        edges = np.asarray(self._edges, dtype=np.float64).reshape(-1, 5)
        parent = edges[:, 0].astype(np.int64)
        child = edges[:, 1].astype(np.int64)
        depth = np.full(n, -1, dtype=np.int64)
        depth[roots] = 0
        # Edges were added bottom-up; walk them top-down to assign depths.
        by_parent: dict[int, list[int]] = {}
        for e, p in enumerate(parent):
            by_parent.setdefault(int(p), []).append(e)
        frontier = list(roots)
        while frontier:
            nxt = []
            for node in frontier:
                for e in by_parent.get(int(node), ()):
                    depth[child[e]] = depth[node] + 1
                    nxt.append(int(child[e]))
            frontier = nxt
        reachable = depth[parent] >= 0 if parent.size else np.zeros(0, dtype=bool)
        order = np.argsort(depth[parent][reachable], kind="stable")
        keep = np.flatnonzero(reachable)[order]
        ia_infoset = []
        ia_action = []
        for p in (0, 1):
            inf = np.zeros(self._ia_count[p], dtype=np.int64)
            act = np.zeros(self._ia_count[p], dtype=np.int64)
            for i, actions in enumerate(self._infoset_actions[p]):
                off = self._ia_offset[p][i]
                inf[off : off + len(actions)] = i
                act[off : off + len(actions)] = actions
            ia_infoset.append(inf)
            ia_action.append(act)
        return Subgame(
            num_nodes=n,
            utility=np.asarray(self._utility, dtype=np.float64),
            is_terminal=np.asarray(self._terminal, dtype=bool),
            roots=roots,
            root_weight=weights,
            edge_parent=parent[keep],
            edge_child=child[keep],
            edge_ia=edges[keep][:, 2:4].T.astype(np.int64),
            edge_prob=edges[keep, 4],
            edge_depth=depth[parent[keep]],
            ia_infoset=(ia_infoset[0], ia_infoset[1]),
            ia_action=(ia_action[0], ia_action[1]),
            infoset_keys=(tuple(self._infoset_id[0]), tuple(self._infoset_id[1])),
            node_infoset=np.asarray(self._node_infoset, dtype=np.int64).T.reshape(2, n),
        )


@dataclass(frozen=True)
class SubgameSolution:
    """A profile on a subgame and its values (CFR+'s average profile when returned by :func:`solve_cfr_plus`).

    Attributes:
        strategy: per player, ``(M_p,)`` the strategy over infoset-actions.
        value: player 0's expected utility of the profile, ``Σ_roots w · v(root)``.
        infoset_cfv: per player, ``(J_p,)`` counterfactual value of each infoset under the profile (in that
            player's utility).
        infoset_cf_reach: per player, ``(J_p,)`` the opponent-and-external reach summed over the infoset's nodes
            (so ``cfv / cf_reach`` is the infoset's expected value).
        iterations: CFR+ iterations run.
    """

    strategy: tuple[np.ndarray, np.ndarray]
    value: float
    infoset_cfv: tuple[np.ndarray, np.ndarray]
    infoset_cf_reach: tuple[np.ndarray, np.ndarray]
    iterations: int

    def infoset_strategy(self, subgame: Subgame, player: int, infoset: int) -> dict[int, float]:
        """``{action label: probability}`` of the average strategy at one infoset."""
        mask = subgame.ia_infoset[player] == infoset
        return dict(zip(subgame.ia_action[player][mask].tolist(), self.strategy[player][mask].tolist(), strict=True))


def regret_matching_plus(regret: np.ndarray, ia_infoset: np.ndarray, num_infosets: int) -> np.ndarray:
    """Step 1: ``σ(I, a) = R⁺(I, a) / Σ_b R⁺(I, b)``, uniform over the infoset's actions when the sum is 0.

    Args:
        regret: ``(M,)`` cumulative (clipped) regrets.
        ia_infoset: ``(M,)`` infoset of each infoset-action.
        num_infosets: ``J``.

    Returns:
        ``(M,)`` the strategy.
    """
    positive = np.maximum(regret, 0.0)
    total = np.bincount(ia_infoset, weights=positive, minlength=num_infosets)
    count = np.bincount(ia_infoset, minlength=num_infosets).astype(np.float64)
    denom = total[ia_infoset]
    return np.where(denom > 0, positive / np.where(denom > 0, denom, 1.0), 1.0 / count[ia_infoset])


def normalize_per_infoset(weights: np.ndarray, ia_infoset: np.ndarray, num_infosets: int) -> np.ndarray:
    """Normalise non-negative ``weights`` within each infoset (uniform where an infoset's weights sum to 0)."""
    return regret_matching_plus(weights, ia_infoset, num_infosets)


class CfrPasses:
    """Forward/backward passes of one subgame, shared by the CFR+ iterations and the final evaluation.

    Everything that does not depend on the strategies is gathered once here (a per-pass ``np.append`` and per-layer
    fancy indexing would dominate CFR+'s time on small games):

    - both players' strategies live in one preallocated buffer ``[σ_0, 1, 0, σ_1, 1, 0]``; a forced player's
      ``ia = -1`` points at its 1.0 slot;
    - the edges are sorted by depth, so each layer is a slice; its parents (their distinct ids and each edge's
      position among them) and children are stored per layer, and each edge's buffer positions once;
    - the external/chance reach does not depend on σ and is computed once;
    - in small trees (``2 · depth · num_nodes ≤ PATH_TABLE_LIMIT``) each node's player reach is the product of the
      strategy entries on its path, gathered at once from a ``(2, depth, num_nodes)`` table of buffer positions
      padded with the 1.0 slot (nodes off every root's tree point at the 0.0 slot: they had reach 0 in the
      layer-by-layer pass); larger trees go layer by layer, both players in one step. Multiplying the rows in
      order root → node gives the same floating-point products as the layer-by-layer recursion, and the backward pass
      adds the same terms in the same order, so the results are bit-for-bit those of the earlier passes (a test
      checks it against a copy of them).

    The methods taking ``sigma`` copy it into the buffer; the underscored ones read the buffer as it is.
    """

    PATH_TABLE_LIMIT = 1 << 16  # path-table entries up to which the players' reaches are one gather

    def __init__(self, sg: Subgame) -> None:
        self.sg = sg
        n = sg.num_nodes
        self.num_infosets = (sg.num_infosets(0), sg.num_infosets(1))
        sizes = (sg.ia_infoset[0].size, sg.ia_infoset[1].size)
        self.sizes = sizes
        # buffer: [σ_0 (M_0), 1.0, 0.0, σ_1 (M_1), 1.0, 0.0]
        self.offset = (0, sizes[0] + 2)
        self.buffer = np.zeros(sizes[0] + sizes[1] + 4)
        self.sigma_views = tuple(self.buffer[self.offset[p] : self.offset[p] + sizes[p]] for p in (0, 1))
        one = tuple(self.offset[p] + sizes[p] for p in (0, 1))
        for p in (0, 1):
            self.buffer[one[p]] = 1.0
        pos = [np.where(sg.edge_ia[p] >= 0, self.offset[p] + sg.edge_ia[p], one[p]) for p in (0, 1)]
        depths = sg.edge_depth
        num_layers = int(depths.max(initial=-1)) + 1
        bounds = np.searchsorted(depths, np.arange(num_layers + 1))
        layers = [slice(int(bounds[d]), int(bounds[d + 1])) for d in range(num_layers)]
        self._layers = []  # per layer: its edge slice, distinct parents, each edge's parent position, children
        for s in layers:
            parents, inverse = np.unique(sg.edge_parent[s], return_inverse=True)
            self._layers.append((s, parents, inverse, sg.edge_child[s]))
        self._edge_pos = (pos[0], pos[1])
        self._edge_prob = sg.edge_prob
        self._weight_cache: dict[int, tuple] = {}
        # chance/external reach: fixed
        chance = np.zeros(n)
        chance[sg.roots] = sg.root_weight
        for s, _, _, ch in self._layers:
            chance[ch] = chance[sg.edge_parent[s]] * sg.edge_prob[s]
        self._chance = chance
        # players' reaches: one gather from a path table for small trees, layer by layer for large ones
        self._reach_layers = [(sg.edge_parent[s], ch, np.stack([pos[0][s], pos[1][s]])) for s, _, _, ch in self._layers]
        self._reach_init = np.zeros((2, n))
        self._reach_init[:, sg.roots] = 1.0
        self._path = (
            self._path_table(sg, pos, one, num_layers) if 2 * max(num_layers, 1) * n <= self.PATH_TABLE_LIMIT else None
        )
        # per player: the edges where it acts (for the counterfactual action values)
        self._act = []
        for p in (0, 1):
            sel = sg.edge_ia[p] >= 0
            par = sg.edge_parent[sel]
            prob = sg.edge_prob[sel]
            # player 1's sign folded into the fixed factor: reach · (−c) = −(reach · c) exactly, and then
            # (−w)·v = (−1·w)·v; an acting edge is a decision edge, whose probability 1 multiplies exactly
            self._act.append(
                (
                    par,
                    chance[par] if p == 0 else -chance[par],
                    sg.edge_child[sel],
                    pos[1 - p][sel],
                    None if (prob == 1.0).all() else prob,
                    sg.edge_ia[p, sel],
                )
            )
        nodes = [np.flatnonzero(sg.node_infoset[p] >= 0) for p in (0, 1)]
        self._decision = [(nodes[p], sg.node_infoset[p, nodes[p]]) for p in (0, 1)]
        count = [np.bincount(sg.ia_infoset[p], minlength=self.num_infosets[p]).astype(np.float64) for p in (0, 1)]
        self._uniform = [1.0 / count[p][sg.ia_infoset[p]] for p in (0, 1)]
        self._terminal_utility = np.where(sg.is_terminal, sg.utility, 0.0)

    @property
    def uses_path_table(self) -> bool:
        """Whether the players' reaches are one gather from the path table (small trees) or go layer by layer."""
        return self._path is not None

    def fill(self, sigma: tuple[np.ndarray, np.ndarray]) -> None:
        """Copy a profile into the strategy buffer."""
        self.sigma_views[0][:] = sigma[0]
        self.sigma_views[1][:] = sigma[1]

    def reaches(self, sigma: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """``(3, num_nodes)`` reach of player 0, player 1 and the external/chance reach."""
        self.fill(sigma)
        reach = np.empty((3, self.sg.num_nodes))
        reach[:2] = self._reaches()
        reach[2] = self._chance
        return reach

    def _reaches(self) -> np.ndarray:
        """``(2, num_nodes)`` the players' reaches under the buffer's profile."""
        reach = np.empty((2, self.sg.num_nodes))
        if self._path is not None:
            np.multiply.reduce(self.buffer[self._path], axis=1, out=reach)
        else:
            reach[:] = self._reach_init
            buffer = self.buffer
            for parents, children, positions in self._reach_layers:
                reach[:, children] = reach[:, parents] * buffer[positions]
        return reach

    @staticmethod
    def _path_table(sg: Subgame, pos: list[np.ndarray], one: tuple[int, ...], num_layers: int) -> np.ndarray:
        """``(2, depth, num_nodes)``: row ``k`` holds the buffer position of the edge at depth ``k`` on each node's
        path; the 1.0 slot below the node's depth, the 0.0 slot in every row of a node off the roots' trees."""
        n = sg.num_nodes
        reachable = np.zeros(n, dtype=bool)
        reachable[sg.roots] = True
        reachable[sg.edge_child] = True
        node_parent = np.full(n, -1, dtype=np.int64)
        node_parent[sg.edge_child] = sg.edge_parent
        node_depth = np.zeros(n, dtype=np.int64)
        node_depth[sg.edge_child] = sg.edge_depth + 1
        path = np.empty((2, max(num_layers, 1), n), dtype=np.int64)
        for p in (0, 1):
            path[p] = np.where(reachable, one[p], one[p] + 1)
            node_pos = np.full(n, one[p], dtype=np.int64)  # buffer position of the edge into each node
            node_pos[sg.edge_child] = pos[p]
            cur = np.arange(n)  # walk up from every node: the edge into an ancestor at depth k + 1 sits in row k
            for _ in range(num_layers):
                idx = np.flatnonzero(node_parent[cur] >= 0)
                above = cur[idx]
                path[p, node_depth[above] - 1, idx] = node_pos[above]
                cur[idx] = node_parent[above]
        return path

    def values(self, sigma: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """``(num_nodes,)`` player 0's expected utility of every node under ``sigma``."""
        self.fill(sigma)
        return self._values()

    def _values(self, *, top: int = 0) -> np.ndarray:
        """Values bottom-up; the parents of the ``top`` uppermost layers are left at 0 (CFR+ reads only the values
        of edges' children, so it skips the roots' layer)."""
        buffer = self.buffer
        start, pos0, pos1, prob, layers = self._weight_edges(top)
        weight = buffer[pos0] * buffer[pos1]  # indexed from edge `start` on
        if prob is not None:
            weight *= prob
        value = self._terminal_utility.copy()
        for s, parents, inverse, children in reversed(layers):
            # a parent's value is 0 until its own layer: assigning the sum equals adding it
            w = weight[s.start - start : s.stop - start]
            value[parents] = np.bincount(inverse, weights=w * value[children], minlength=parents.size)
        return value

    def _weight_edges(self, top: int):
        """The edges of the layers from ``top`` down: first edge, both players' buffer positions, probabilities
        (None where all are 1, an exact factor), and the layers (cached per ``top``)."""
        cached = self._weight_cache.get(top)
        if cached is None:
            layers = self._layers[top:]
            start = layers[0][0].start if layers else 0
            prob = self._edge_prob[start:]
            cached = (
                start,
                self._edge_pos[0][start:],
                self._edge_pos[1][start:],
                None if (prob == 1.0).all() else prob,
                layers,
            )
            self._weight_cache[top] = cached
        return cached

    def action_values(
        self, player: int, sigma: tuple[np.ndarray, np.ndarray], reach: np.ndarray, value: np.ndarray
    ) -> np.ndarray:
        """Step 4: ``(M_p,)`` counterfactual action values of ``player`` (in its own utility)."""
        self.fill(sigma)
        return self._action_values(player, reach, value)

    def _action_values(self, player: int, reach: np.ndarray, value: np.ndarray) -> np.ndarray:
        """Step 4 from the players' reaches (rows 0 and 1 of ``reach``; the external reach is fixed)."""
        par, signed_chance, ch, opp_pos, prob, own_ia = self._act[player]
        w = reach[1 - player, par] * signed_chance * self.buffer[opp_pos]
        if prob is not None:
            w *= prob
        return np.bincount(own_ia, weights=w * value[ch], minlength=self.sizes[player])

    def own_reach(self, player: int, reach: np.ndarray) -> np.ndarray:
        """``(J_p,)`` the player's own reach summed over each infoset's nodes."""
        nodes, infosets = self._decision[player]
        return np.bincount(infosets, weights=reach[player, nodes], minlength=self.num_infosets[player])

    def native_arrays(self, avg: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
        """The arrays the compiled loop (``iclr26.lamir._cfr``) reads, in its order: the strategy buffer (written),
        the layer bounds and the edges, the start reach and the terminal utility, then per player its acting edges,
        infosets, decision nodes, uniform strategy and ``avg`` (float64, accumulated in place), then (offset of
        σ_1, J_0, J_1). The read-only ones are converted to C-contiguous int64/float64; the written ones are passed
        as they are (the core refuses them unless they already are float64 and C-contiguous)."""
        sg = self.sg

        def ints(a) -> np.ndarray:
            return np.ascontiguousarray(a, dtype=np.int64)

        def floats(a) -> np.ndarray:
            return np.ascontiguousarray(a, dtype=np.float64)

        bounds = [s.start for s, *_ in self._layers] + [self._layers[-1][0].stop if self._layers else 0]
        arrays = [self.buffer, ints(bounds), ints(sg.edge_parent), ints(sg.edge_child)]
        arrays += [ints(self._edge_pos[0]), ints(self._edge_pos[1]), floats(self._edge_prob)]
        arrays += [floats(self._reach_init[0]), floats(self._terminal_utility)]
        for p in (0, 1):
            par, signed_chance, ch, opp_pos, prob, own_ia = self._act[p]
            nodes, infosets = self._decision[p]
            arrays += [ints(par), floats(signed_chance), ints(ch), ints(opp_pos)]
            arrays += [floats(np.ones(par.size) if prob is None else prob), ints(own_ia), ints(sg.ia_infoset[p])]
            arrays += [ints(nodes), ints(infosets), floats(self._uniform[p]), avg[p]]
        arrays.append(ints([self.offset[1], *self.num_infosets]))
        return arrays

    def regret_matching_plus(self, player: int, regret: np.ndarray, *, clipped: bool = False) -> np.ndarray:
        """Step 1 with the infosets' action counts gathered once (the values of :func:`regret_matching_plus`);
        ``clipped``: the regrets are CFR+'s, already ``max(·, 0)`` (clipping them again returns the same bits)."""
        ia_infoset = self.sg.ia_infoset[player]
        positive = regret if clipped else np.maximum(regret, 0.0)
        denom = np.bincount(ia_infoset, weights=positive, minlength=self.num_infosets[player])[ia_infoset]
        out = self._uniform[player].copy()
        np.divide(positive, denom, out=out, where=denom > 0)
        return out


def solve_cfr_plus(sg: Subgame, *, iterations: int, backend: Literal["native", "python"] = "native") -> SubgameSolution:
    """Run ``iterations`` of alternating-update CFR+ (steps 1-6 of the module docstring) on ``sg``.

    Args:
        sg: the subgame.
        iterations: number of iterations (each updates both players once).
        backend: ``"native"`` (default) runs the iterations in the compiled loop ``iclr26.lamir._cfr`` (built by
            ``make install``), ``"python"`` in numpy; the two give the same average strategies bit for bit (the C
            loop takes each numpy operation in the same order; ``benchmarks/lamir_cfr.py`` times it).

    Returns:
        The average strategies, the game value and the infosets' counterfactual values under the average profile.

    Raises:
        ValueError: if ``iterations`` is not positive or ``backend`` is unknown.
        ImportError: for ``backend="native"`` when the compiled loop was not built (the message says how).
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if backend not in ("native", "python"):
        raise ValueError(f"backend must be 'native' or 'python', got {backend!r}")
    passes = CfrPasses(sg)
    regret = [np.zeros(size) for size in passes.sizes]
    zeros = [np.zeros(size) for size in passes.sizes]
    avg = [np.zeros(size) for size in passes.sizes]
    sigma = [passes.regret_matching_plus(p, regret[p]) for p in (0, 1)]
    ia_infoset = sg.ia_infoset
    passes.fill((sigma[0], sigma[1]))
    if backend == "native":
        core = compiled_core("iclr26.lamir._cfr", what="CFR+ loop", fallback="backend='python' runs it in numpy")
        core.solve(iterations, sg.num_nodes, 1, passes.native_arrays((avg[0], avg[1])))  # accumulates into avg
    else:
        for t in range(1, iterations + 1):
            for p in (0, 1):
                reach = passes._reaches()
                q = passes._action_values(p, reach, passes._values(top=1))
                # Step 5: regret of each action against the infoset's expected counterfactual value.
                expected = np.bincount(ia_infoset[p], weights=sigma[p] * q, minlength=passes.num_infosets[p])
                regret[p] = np.maximum(regret[p] + q - expected[ia_infoset[p]], zeros[p])
                # Step 6: linear averaging weighted by the player's own reach of the infoset's nodes.
                avg[p] += t * passes.own_reach(p, reach)[ia_infoset[p]] * sigma[p]
                sigma[p] = passes.regret_matching_plus(p, regret[p], clipped=True)
                passes.sigma_views[p][:] = sigma[p]
    # CFR+ returns the weighted average strategy: it converges to an equilibrium, the current σ need not
    strategy = tuple(normalize_per_infoset(avg[p], sg.ia_infoset[p], passes.num_infosets[p]) for p in (0, 1))
    return evaluate_profile(sg, (strategy[0], strategy[1]), iterations=iterations)


def evaluate_profile(sg: Subgame, strategy: tuple[np.ndarray, np.ndarray], *, iterations: int = 0) -> SubgameSolution:
    """Value and infoset counterfactual values of a fixed profile (CFR+'s average profile, or a best response
    against it)."""
    passes = CfrPasses(sg)
    reach = passes.reaches(strategy)
    value = passes.values(strategy)
    cfv = []
    cf_reach = []
    for p in (0, 1):
        q = passes.action_values(p, strategy, reach, value)
        cfv.append(np.bincount(sg.ia_infoset[p], weights=strategy[p] * q, minlength=passes.num_infosets[p]))
        nodes = np.flatnonzero(sg.node_infoset[p] >= 0)
        cf_reach.append(
            np.bincount(
                sg.node_infoset[p, nodes],
                weights=reach[1 - p, nodes] * reach[2, nodes],
                minlength=passes.num_infosets[p],
            )
        )
    root_value = float(np.dot(sg.root_weight, value[sg.roots]))
    return SubgameSolution(
        strategy=strategy,
        value=root_value,
        infoset_cfv=(cfv[0], cfv[1]),
        infoset_cf_reach=(cf_reach[0], cf_reach[1]),
        iterations=iterations,
    )


def best_response(sg: Subgame, strategy: tuple[np.ndarray, np.ndarray], player: int) -> np.ndarray:
    """``(M_p,)`` a pure best response of ``player`` to the other player's strategy in ``strategy``.

    Decided bottom-up over the responder's infosets (the subgame must have perfect recall for the responder): at
    each infoset, the action with the largest summed counterfactual action value given the choices below it. The
    deepest-first sweep is repeated until no choice changes, so infosets whose nodes lie at different depths
    (e.g. roots with and without a gadget) are also settled.
    """
    passes = CfrPasses(sg)
    reach = passes.reaches(strategy)  # the other player's and the external reach do not depend on the response
    br = strategy[player].copy()
    nodes = np.flatnonzero(sg.node_infoset[player] >= 0)
    node_depth = np.zeros(sg.num_nodes, dtype=np.int64)
    node_depth[sg.edge_child] = sg.edge_depth + 1
    infoset_depth = np.full(sg.num_infosets(player), -1)
    np.maximum.at(infoset_depth, sg.node_infoset[player, nodes], node_depth[nodes])
    levels = sorted({int(d) for d in infoset_depth if d >= 0}, reverse=True)
    for _ in range(len(levels) + 1):
        before = br.copy()
        for d in levels:
            profile = (br, strategy[1]) if player == 0 else (strategy[0], br)
            q = passes.action_values(player, profile, reach, passes.values(profile))
            for infoset in np.flatnonzero(infoset_depth == d):
                mask = np.flatnonzero(sg.ia_infoset[player] == infoset)
                choice = np.zeros(mask.size)
                choice[int(np.argmax(q[mask]))] = 1.0
                br[mask] = choice
        if np.array_equal(br, before):
            break
    return br


def best_response_values(sg: Subgame, strategy: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    """Each player's best-response value (own utility) against the other's fixed strategy in ``sg``.

    Used to measure how far a CFR+ solution is from equilibrium (``NashConv = Σ_p BR_p − u_p``).
    """
    passes = CfrPasses(sg)
    out = []
    for p in (0, 1):
        br = best_response(sg, strategy, p)
        value = passes.values((br, strategy[1]) if p == 0 else (strategy[0], br))
        sign = 1.0 if p == 0 else -1.0
        out.append(sign * float(np.dot(sg.root_weight, value[sg.roots])))
    return out[0], out[1]
