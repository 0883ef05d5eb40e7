"""How closely a learned abstract model matches the real game (the "recovers the exact game" claim;
notes §3, small games).

Measured over every history of the tabulated game:

* abstraction: in each public state, are the player's infosets mapped to distinct abstract infosets (one-to-one)?
* dynamics: over every history and joint legal action, is the terminal flag right, is the next public state right,
  how far is the predicted reward from the real one, and are the legal actions of every infoset right?
* value: how far is v_θ on the abstract latents from the exact values of the transformed-policy pairs?

Glossary: ``K_p`` infosets, ``S`` public states, ``N`` nodes, ``T`` transformations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from iclr26.lamir.features import GameFeatures
from iclr26.lamir.games import DECISION, TERMINAL, GameTree
from iclr26.lamir.model import AbstractModel


@dataclass(frozen=True)
class ModelAccuracy:
    """Agreement of a learned model with the real game.

    Attributes:
        one_to_one_public_states: fraction of (public state, player) pairs whose infosets get distinct abstract
            infosets.
        separated_pairs: fraction of same-public-state infoset pairs that get distinct abstract infosets.
        exact_abstraction: every public state one-to-one for both players.
        terminal_accuracy: share of (history, joint action) transitions whose terminal flag is right.
        public_accuracy: share of non-terminal transitions whose predicted next public state is exactly right.
        reward_mae: mean absolute reward error over terminal transitions.
        reward_sign_accuracy: share of terminal transitions whose predicted reward rounds to the real one.
        legal_accuracy: share of infosets whose predicted legal-action set is exactly right.
        value_mae: mean absolute error of v_θ against the exact transformed-policy values, over histories.
    """

    one_to_one_public_states: float
    separated_pairs: float
    exact_abstraction: bool
    terminal_accuracy: float
    public_accuracy: float
    reward_mae: float
    reward_sign_accuracy: float
    legal_accuracy: float
    value_mae: float

    @property
    def dynamics_exact(self) -> bool:
        """Terminal flags, next public states, rounded rewards and legal actions all right."""
        return (
            self.terminal_accuracy == 1.0
            and self.public_accuracy == 1.0
            and self.reward_sign_accuracy == 1.0
            and self.legal_accuracy == 1.0
        )


class AbstractionAgreement(NamedTuple):
    """How well an abstraction separates the infosets of each public state.

    Attributes:
        one_to_one: share of (public state, player) pairs whose infosets get distinct abstract infosets.
        separated: share of same-public-state infoset pairs that get distinct abstract infosets.
    """

    one_to_one: float
    separated: float


def abstraction_agreement(tree: GameTree, abstraction: tuple[np.ndarray, np.ndarray]) -> AbstractionAgreement:
    """Compare an abstraction (per player ``(K_p,)`` abstract infoset ids) with the real infoset partition."""
    one_to_one = []
    separated = 0
    pairs = 0
    for p in (0, 1):
        for s in range(tree.num_public_states):
            labels = abstraction[p][tree.public_infosets(s, p)]
            one_to_one.append(len(set(labels.tolist())) == labels.size)
            same = (labels[:, None] == labels[None, :]).sum() - labels.size
            total = labels.size * (labels.size - 1)
            separated += total - same
            pairs += total
    return AbstractionAgreement(
        one_to_one=float(np.mean(one_to_one)), separated=float(separated / pairs) if pairs else 1.0
    )


def _history_latents(
    tree: GameTree,
    features: GameFeatures,
    model: AbstractModel,
    abstraction: tuple[np.ndarray, np.ndarray],
    nodes: np.ndarray,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per player ``(n, D)``: the latent ``Λ^I(s_0, l)`` of each history's public state and abstract infoset."""
    pub = features.public[torch.from_numpy(tree.node_public[nodes])]
    latents = []
    for p in (0, 1):
        onehot = features.player_onehot[p].expand(nodes.size, 2)
        latents.append(model.latent(pub, torch.from_numpy(abstraction[p][tree.node_infoset[nodes, p]]), onehot))
    return latents[0], latents[1]


@torch.no_grad()
def learned_values_on_real_histories(
    tree: GameTree, features: GameFeatures, model: AbstractModel, abstraction: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """``(N, T, T)`` v_θ on the abstract latents of every real decision history (terminal nodes: their reward).

    Plugged into the true model's depth-limited search, this isolates the error of v_θ from the errors of the
    learned abstraction and dynamics (an ablation; not in the paper).
    """
    nodes = np.flatnonzero(tree.node_kind == DECISION)
    latents = _history_latents(tree, features, model, abstraction, nodes)
    values = model.values(latents[0], latents[1]).numpy().astype(np.float64)
    out = np.zeros((tree.num_nodes, *values.shape[1:]))
    out[nodes] = values
    terminal = tree.node_kind == TERMINAL
    out[terminal] = tree.reward[terminal][:, None, None]
    return out


@torch.no_grad()
def model_accuracy(
    tree: GameTree,
    features: GameFeatures,
    model: AbstractModel,
    abstraction: tuple[np.ndarray, np.ndarray],
    exact_values: np.ndarray,
) -> ModelAccuracy:
    """Compare a learned model with the real game on every history and joint action.

    Args:
        tree: the real game (no chance nodes).
        features: its tensors.
        model: the learned model.
        abstraction: per player ``(K_p,)`` abstract infoset of every infoset.
        exact_values: ``(N, T, T)`` exact transformed-policy values (from ``search.transformed_values``).
    """
    agreement = abstraction_agreement(tree, abstraction)
    nodes = np.flatnonzero(tree.node_kind == DECISION)
    latents = _history_latents(tree, features, model, abstraction, nodes)
    # value of every history
    pred_values = model.values(latents[0], latents[1]).numpy()
    value_mae = float(np.abs(pred_values - exact_values[nodes]).mean())
    # legal actions of every infoset (each at one of its histories; the latent depends only on the abstraction)
    legal_ok = []
    for p in (0, 1):
        first = {}
        for i, s in enumerate(tree.node_infoset[nodes, p].tolist()):
            first.setdefault(s, i)
        idx = np.array(list(first.values()))
        pred = torch.sigmoid(model.legal_logits(latents[p][idx])).numpy() > 0.5
        legal_ok.extend((pred == tree.infoset_legal[p][list(first)]).all(-1).tolist())
    # every joint legal action of every history
    rows, a0s, a1s, kids = [], [], [], []
    for i, h in enumerate(nodes):
        for a0, a1 in zip(*np.nonzero(tree.children[h] >= 0), strict=True):
            rows.append(i)
            a0s.append(a0)
            a1s.append(a1)
            kids.append(tree.children[h, a0, a1])
    rows_t = torch.tensor(rows)
    out = model.step(latents[0][rows_t], latents[1][rows_t], torch.tensor(a0s), torch.tensor(a1s))
    kids = np.asarray(kids)
    is_terminal = tree.node_kind[kids] == TERMINAL
    pred_terminal = torch.sigmoid(out.terminal_logit).numpy() > 0.5
    reward = out.reward.numpy()
    cont = ~is_terminal
    pred_pub = torch.sigmoid(out.public_logits).numpy()[cont] > 0.5
    real_pub = tree.public_tensor[tree.node_public[kids[cont]]] > 0.5
    real_reward = tree.reward[kids[is_terminal]]
    return ModelAccuracy(
        one_to_one_public_states=agreement.one_to_one,
        separated_pairs=agreement.separated,
        exact_abstraction=agreement.one_to_one == 1.0,
        terminal_accuracy=float((pred_terminal == is_terminal).mean()),
        public_accuracy=float((pred_pub == real_pub).all(-1).mean()) if cont.any() else 1.0,
        reward_mae=float(np.abs(reward[is_terminal] - real_reward).mean()),
        reward_sign_accuracy=float((np.round(reward[is_terminal]) == real_reward).mean()),
        legal_accuracy=float(np.mean(legal_ok)),
        value_mae=value_mae,
    )
