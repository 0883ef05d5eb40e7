"""The networks of LAMIR (Kubíček & Lisý, ICLR 2026, arXiv 2510.05048; notes §2.1-§2.4) and of the base policy learner.

Base agent (trained by policy gradient, the "pre-trained agent" LAMIR improves):
    π_θ   :class:`PolicyNet`          infoset → action logits
    V     :class:`CriticNet`          joint infosets (training-time only) → player 0's value, the PG baseline
    τ_θ   :class:`TransformationNet`  infoset → ``T`` policy transformations χ (multi-valued states)

Learned abstract model, one per capacity ``L`` (:class:`AbstractModel`):
    Λ_i   ``public_abstraction``   public state → ``L`` abstract-infoset codes for player ``i``
    κ_θ   ``attribute_head``       abstract-infoset code → its centroid in the attribute space ``R^K``
    Λ^I_i ``infoset_abstraction``  infoset → logits over the ``L`` abstract infosets of its public state
    Λ^I   ``representation``       (public state, abstract infoset) → latent ``s̄`` used by the dynamics
    Υ_θ   ``dynamics``             (``s̄_1, s̄_2, a_1, a_2``) → (``s̄_1', s̄_2'``, reward, terminal, public obs.)
    Γ_θ   ``legal_head``           latent → legal-action logits
    v_θ   ``value``                (``s̄_1, s̄_2``) → ``T × T`` values of the transformed-policy pairs

The latent of an abstract infoset is produced by ``representation`` from the public state and the abstract index,
not by ``public_abstraction``: that keeps the model loss's gradient out of the abstraction (the paper's
decoupling) while the dynamics still gets a trainable input (see the README's Deviations).

Glossary: ``B`` batch, ``A`` action slots, ``L`` capacity, ``K`` attribute width, ``D`` latent width, ``T``
transformations, ``F`` infoset-tensor width (plus a 2-wide player one-hot), ``P`` public-tensor width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


def mlp(in_dim: int, hidden: int, out_dim: int, *, layers: int = 2) -> nn.Sequential:
    """``layers`` hidden ReLU layers of width ``hidden`` and a linear output."""
    mods: list[nn.Module] = []
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, out_dim))
    return nn.Sequential(*mods)


def masked_logits(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Logits with illegal actions set to the dtype's lowest value (so softmax gives them probability 0)."""
    return logits.masked_fill(~legal, torch.finfo(logits.dtype).min)


class PolicyNet(nn.Module):
    """π_θ(a | s_i): the base agent's policy on real infosets."""

    def __init__(self, infoset_dim: int, num_actions: int, *, hidden: int) -> None:
        super().__init__()
        self.net = mlp(infoset_dim, hidden, num_actions)

    def forward(self, infoset: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """``(B, F) , (B, A) bool → (B, A)`` logits, illegal actions masked."""
        return masked_logits(self.net(infoset), legal)


class CriticNet(nn.Module):
    """V(h): player 0's value of a state from both players' infosets (a training-time baseline only)."""

    def __init__(self, infoset_dim: int, *, hidden: int) -> None:
        super().__init__()
        self.net = mlp(2 * infoset_dim, hidden, 1)

    def forward(self, infoset0: torch.Tensor, infoset1: torch.Tensor) -> torch.Tensor:
        """``(B, F), (B, F) → (B,)``."""
        return self.net(torch.cat([infoset0, infoset1], dim=-1)).squeeze(-1)


class TransformationNet(nn.Module):
    """τ_θ(s_i): ``T`` policy transformations χ, each projected to sum zero over the legal actions.

    The projection makes ``Σ_legal (π + χ) = 1``, so ``clip(π + χ)`` always has positive mass to normalise.
    """

    def __init__(self, infoset_dim: int, num_actions: int, num_transformations: int, *, hidden: int) -> None:
        super().__init__()
        self.num_transformations = num_transformations
        self.num_actions = num_actions
        self.net = mlp(infoset_dim, hidden, num_transformations * num_actions)

    def forward(self, infoset: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """``(B, F), (B, A) → (B, T, A)``, zero on illegal actions and summing to zero over legal ones."""
        chi = self.net(infoset).view(-1, self.num_transformations, self.num_actions)
        mask = legal.unsqueeze(1).to(chi.dtype)  # (B, 1, A)
        chi = chi * mask
        mean = chi.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp_min(1.0)
        return (chi - mean) * mask


@dataclass(frozen=True)
class ModelSizes:
    """Widths of one :class:`AbstractModel`.

    Attributes:
        infoset_dim: ``F`` (infoset tensor plus player one-hot).
        public_dim: ``P``.
        num_actions: ``A``.
        capacity: ``L``.
        attribute_dim: ``K``.
        latent_dim: ``D``.
        code_dim: width of an abstract-infoset code (input of κ_θ).
        num_transformations: ``T``.
        hidden: hidden width of every MLP.
        value_bound: largest absolute return; the reward and value heads output ``bound · tanh(·)``.
    """

    infoset_dim: int
    public_dim: int
    num_actions: int
    capacity: int
    attribute_dim: int
    latent_dim: int
    code_dim: int
    num_transformations: int
    hidden: int
    value_bound: float


class AbstractModel(nn.Module):
    """LAMIR's learned abstracted model for one capacity ``L`` (the heads listed in the module docstring)."""

    def __init__(self, sizes: ModelSizes) -> None:
        super().__init__()
        self.sizes = sizes
        s = sizes
        player = 2  # every head that is per player takes a player one-hot
        self.public_abstraction = mlp(s.public_dim + player, s.hidden, s.capacity * s.code_dim)
        self.attribute_head = mlp(s.code_dim, s.hidden, s.attribute_dim, layers=1)
        self.infoset_abstraction = mlp(s.infoset_dim, s.hidden, s.capacity)
        self.representation = mlp(s.public_dim + s.capacity + player, s.hidden, s.latent_dim)
        self.dynamics = mlp(2 * s.latent_dim + 2 * s.num_actions, s.hidden, 2 * s.latent_dim + 2 + s.public_dim)
        self.legal_head = mlp(s.latent_dim, s.hidden, s.num_actions, layers=1)
        self.value = mlp(2 * s.latent_dim, s.hidden, s.num_transformations**2)

    def centroids(self, public: torch.Tensor, player: torch.Tensor) -> torch.Tensor:
        """κ_θ(Λ_i(s_0)): ``(B, P), (B, 2) → (B, L, K)`` the abstract infosets' centroids in attribute space."""
        codes = self.public_abstraction(torch.cat([public, player], -1)).view(
            -1, self.sizes.capacity, self.sizes.code_dim
        )
        return self.attribute_head(codes)

    def assign_logits(self, infoset: torch.Tensor) -> torch.Tensor:
        """Λ^I_i(s_i): ``(B, F) → (B, L)`` logits over the abstract infosets of the infoset's public state."""
        return self.infoset_abstraction(infoset)

    def latent(self, public: torch.Tensor, abstract: torch.Tensor, player: torch.Tensor) -> torch.Tensor:
        """The latent ``s̄`` of abstract infoset ``abstract`` (indices ``(B,)``) in ``public``: ``(B, D)``."""
        onehot = nn.functional.one_hot(abstract, self.sizes.capacity).to(public.dtype)
        return torch.tanh(self.representation(torch.cat([public, onehot, player], -1)))

    def step(
        self, latent0: torch.Tensor, latent1: torch.Tensor, action0: torch.Tensor, action1: torch.Tensor
    ) -> DynamicsOutput:
        """Υ_θ: one joint transition from latents ``(B, D)`` and action indices ``(B,)``."""
        a = self.sizes.num_actions
        d = self.sizes.latent_dim
        x = torch.cat(
            [
                latent0,
                latent1,
                nn.functional.one_hot(action0, a).to(latent0.dtype),
                nn.functional.one_hot(action1, a).to(latent0.dtype),
            ],
            -1,
        )
        out = self.dynamics(x)
        return DynamicsOutput(
            latent0=torch.tanh(out[:, :d]),
            latent1=torch.tanh(out[:, d : 2 * d]),
            reward=self.sizes.value_bound * torch.tanh(out[:, 2 * d]),
            terminal_logit=out[:, 2 * d + 1],
            public_logits=out[:, 2 * d + 2 :],
        )

    def legal_logits(self, latent: torch.Tensor) -> torch.Tensor:
        """Γ_θ: ``(B, D) → (B, A)``."""
        return self.legal_head(latent)

    def values(self, latent0: torch.Tensor, latent1: torch.Tensor) -> torch.Tensor:
        """v_θ: ``(B, D), (B, D) → (B, T, T)`` player 0's value when player 0 follows transformation ``j0`` and
        player 1 follows ``j1`` from this state on."""
        t = self.sizes.num_transformations
        raw = self.value(torch.cat([latent0, latent1], -1)).view(-1, t, t)
        return self.sizes.value_bound * torch.tanh(raw)


@dataclass(frozen=True)
class DynamicsOutput:
    """What Υ_θ predicts for one joint transition.

    Attributes:
        latent0, latent1: ``(B, D)`` the next latents ``s̄_1', s̄_2'``.
        reward: ``(B,)`` player 0's reward of the transition.
        terminal_logit: ``(B,)`` logit that the next state is terminal.
        public_logits: ``(B, P)`` logits of the next public-state tensor's entries.
    """

    latent0: torch.Tensor
    latent1: torch.Tensor
    reward: torch.Tensor
    terminal_logit: torch.Tensor
    public_logits: torch.Tensor
