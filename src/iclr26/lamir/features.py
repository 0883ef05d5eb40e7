"""Tensors the learners read from a tabulated game: infoset features, legal masks, public states, attributes κ.

The attribute functions κ(s_i) are the user-given embeddings the abstraction clusters (notes §2.2): the legal
actions, the current policy, the player's own action history, or all three concatenated.

Glossary: ``K_p`` infosets of player ``p``, ``F`` infoset width (padded to the wider player, plus a player one-hot),
``A`` actions, ``S`` public states, ``P`` public width, ``H`` max steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from iclr26.lamir.games import GameTree

Kappa = Literal["legal", "policy", "history", "legal_policy_history"]
KAPPAS: tuple[str, ...] = ("legal", "policy", "history", "legal_policy_history")


@dataclass(frozen=True)
class GameFeatures:
    """Per-infoset and per-public-state tensors of one game (float32).

    Attributes:
        infoset: per player, ``(K_p, F)`` infoset tensor, zero-padded, with a player one-hot appended.
        legal: per player, ``(K_p, A)`` bool legal masks.
        history: per player, ``(K_p, H·A)`` one-hot of the player's own past actions, step by step.
        infoset_public: per player, ``(K_p,)`` long, the infoset's public state.
        public: ``(S, P)`` public-state tensors.
        player_onehot: ``(2, 2)`` the identity (row ``p`` is player ``p``'s one-hot).
    """

    infoset: tuple[torch.Tensor, torch.Tensor]
    legal: tuple[torch.Tensor, torch.Tensor]
    history: tuple[torch.Tensor, torch.Tensor]
    infoset_public: tuple[torch.Tensor, torch.Tensor]
    public: torch.Tensor
    player_onehot: torch.Tensor

    @property
    def infoset_dim(self) -> int:
        """``F``."""
        return int(self.infoset[0].shape[1])

    @property
    def num_actions(self) -> int:
        """``A``."""
        return int(self.legal[0].shape[1])

    @property
    def public_dim(self) -> int:
        """``P``."""
        return int(self.public.shape[1])

    def attribute_dim(self, kappa: Kappa) -> int:
        """``K`` of the attribute function ``kappa``."""
        a, h = self.num_actions, int(self.history[0].shape[1])
        return {"legal": a, "policy": a, "history": h, "legal_policy_history": 2 * a + h}[kappa]

    def attributes(self, kappa: Kappa, player: int, infosets: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
        """κ(s_i) of the given infosets ``(n,)`` of ``player``: ``(n, K)``.

        Args:
            kappa: which attribute function.
            player: 0 or 1.
            infosets: long indices.
            policy: ``(K_p, A)`` the current policy table of ``player`` (used by the policy attributes).

        Raises:
            ValueError: for an unknown ``kappa``.
        """
        legal = self.legal[player][infosets].float()
        if kappa == "legal":
            return legal
        if kappa == "policy":
            return policy[infosets]
        if kappa == "history":
            return self.history[player][infosets]
        if kappa == "legal_policy_history":
            return torch.cat([legal, policy[infosets], self.history[player][infosets]], -1)
        raise ValueError(f"kappa must be one of {', '.join(KAPPAS)}, got {kappa!r}")


def game_features(tree: GameTree) -> GameFeatures:
    """Build :class:`GameFeatures` from a tabulated game.

    Raises:
        ValueError: if the public tensor is not binary (the dynamics predicts it with a Bernoulli loss).
    """
    if not np.isin(tree.public_tensor, (0.0, 1.0)).all():
        raise ValueError(f"{tree.name}: the public-state tensor must be binary for LAMIR's public-state head")
    width = max(tree.infoset_tensor[p].shape[1] for p in (0, 1))
    a = tree.num_actions
    h = tree.max_steps
    infoset, legal, history, public_of = [], [], [], []
    for p in (0, 1):
        k = tree.num_infosets(p)
        x = np.zeros((k, width + 2), dtype=np.float32)
        x[:, : tree.infoset_tensor[p].shape[1]] = tree.infoset_tensor[p]
        x[:, width + p] = 1.0
        infoset.append(torch.from_numpy(x))
        legal.append(torch.from_numpy(tree.infoset_legal[p].copy()))
        hist = np.zeros((k, h, a), dtype=np.float32)
        own = tree.infoset_history[p]
        rows, steps = np.nonzero(own >= 0)
        hist[rows, steps, own[rows, steps]] = 1.0
        history.append(torch.from_numpy(hist.reshape(k, h * a)))
        public_of.append(torch.from_numpy(tree.infoset_public[p].copy()))
    return GameFeatures(
        infoset=(infoset[0], infoset[1]),
        legal=(legal[0], legal[1]),
        history=(history[0], history[1]),
        infoset_public=(public_of[0], public_of[1]),
        public=torch.from_numpy(tree.public_tensor.copy()),
        player_onehot=torch.eye(2),
    )
