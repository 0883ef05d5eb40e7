"""A small finite MDP with several policies, for checking UVU against ensembles and the NTK limit.

Deterministic transitions ``s' = P[s, a]``, rewards ``R[s, a]`` and ``Z`` deterministic policies ``a = π_z(s)``: the
points ``(s, a, z)`` form a finite set of ``M = S·A·Z`` inputs, every transition's successor ``(s', π_z(s'), z)`` is
again one of them, and the true values are in closed form, ``Q^{π_z} = (I - γ P^{π_z})⁻¹ R``.

Glossary: ``S`` states, ``A`` actions, ``Z`` policies, ``M = S·A·Z`` points ordered ``(z, s, a)``, ``N`` data points.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from iclr26.uvu.data import Transitions


@dataclass(frozen=True)
class FiniteMDP:
    """A deterministic finite MDP with ``Z`` deterministic policies.

    Attributes:
        next_state: ``(S, A)`` long, ``s' = P[s, a]``.
        reward: ``(S, A)`` float64 rewards.
        policies: ``(Z, S)`` long, ``π_z(s)``.
    """

    next_state: Tensor
    reward: Tensor
    policies: Tensor

    def __post_init__(self) -> None:
        s, a = self.next_state.shape
        if self.reward.shape != (s, a):
            raise ValueError(f"reward must have shape ({s}, {a}), got {tuple(self.reward.shape)}")
        if self.policies.dim() != 2 or self.policies.shape[1] != s:
            raise ValueError(f"policies must have shape (Z, {s}), got {tuple(self.policies.shape)}")
        if self.next_state.min() < 0 or self.next_state.max() >= s:
            raise ValueError("next_state entries must be states in [0, S)")
        if self.policies.min() < 0 or self.policies.max() >= a:
            raise ValueError("policies must pick actions in [0, A)")

    @classmethod
    def random(cls, num_states: int, num_actions: int, num_policies: int, generator: torch.Generator) -> FiniteMDP:
        """Uniformly random successors, ``U(0, 1)`` rewards and uniformly random deterministic policies."""
        for name, value in (("num_states", num_states), ("num_actions", num_actions), ("num_policies", num_policies)):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        return cls(
            next_state=torch.randint(num_states, (num_states, num_actions), generator=generator),
            reward=torch.rand(num_states, num_actions, generator=generator, dtype=torch.float64),
            policies=torch.randint(num_actions, (num_policies, num_states), generator=generator),
        )

    @property
    def num_states(self) -> int:
        """``S``."""
        return self.next_state.shape[0]

    @property
    def num_actions(self) -> int:
        """``A``."""
        return self.next_state.shape[1]

    @property
    def num_policies(self) -> int:
        """``Z``."""
        return self.policies.shape[0]

    def points(self) -> tuple[Tensor, Tensor, Tensor]:
        """All ``M`` points as (states, actions, policies) index tensors, ordered ``(z, s, a)``."""
        z, s, a = torch.meshgrid(
            torch.arange(self.num_policies),
            torch.arange(self.num_states),
            torch.arange(self.num_actions),
            indexing="ij",
        )
        return s.reshape(-1), a.reshape(-1), z.reshape(-1)

    def index(self, s: Tensor, a: Tensor, z: Tensor) -> Tensor:
        """Point index of ``(s, a, z)`` in the ``(z, s, a)`` order."""
        return (z * self.num_states + s) * self.num_actions + a

    def successors(self) -> Tensor:
        """``(M,)`` index of each point's successor ``(P[s, a], π_z(P[s, a]), z)``."""
        s, a, z = self.points()
        s2 = self.next_state[s, a]
        return self.index(s2, self.policies[z, s2], z)

    def q_values(self, gamma: float) -> Tensor:
        """Closed-form ``Q^{π_z}(s, a)`` at every point: ``(M,)`` float64, from ``(I - γ P^π) Q = R``."""
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1), got {gamma}")
        m = self.num_states * self.num_actions * self.num_policies
        s, a, _ = self.points()
        p = torch.zeros(m, m, dtype=torch.float64)
        p[torch.arange(m), self.successors()] = 1.0
        # Q = R + γ P^π Q   ⇔   Q = (I - γ P^π)⁻¹ R
        return torch.linalg.solve(torch.eye(m, dtype=torch.float64) - gamma * p, self.reward[s, a])

    def features(self, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor, Tensor]:
        """One-hot state features ``(M, S)``, action indices ``(M,)`` and one-hot policy codes ``(M, Z)``."""
        s, a, z = self.points()
        return F.one_hot(s, self.num_states).to(dtype), a, F.one_hot(z, self.num_policies).to(dtype)

    def transitions(self, data: Tensor, dtype: torch.dtype = torch.float32) -> Transitions:
        """The data set of the points ``data`` (indices), with ``a' = π_z(s')`` and no terminal states."""
        s, a, z = self.points()
        s, a, z = s[data], a[data], z[data]
        s2 = self.next_state[s, a]
        return Transitions(
            states=F.one_hot(s, self.num_states).to(dtype),
            actions=a,
            rewards=self.reward[s, a].to(dtype),
            next_states=F.one_hot(s2, self.num_states).to(dtype),
            next_actions=self.policies[z, s2],
            dones=torch.zeros(len(data), dtype=dtype),
            tasks=F.one_hot(z, self.num_policies).to(dtype),
        )

    def closed_points(self, data: Tensor) -> Tensor:
        """``(M,)`` bool: points in ``data`` whose whole future under their policy stays inside ``data``.

        On these points the TD fixed point reproduces any target exactly (zero UVU error), whatever the network.
        """
        m = self.num_states * self.num_actions * self.num_policies
        covered = torch.zeros(m, dtype=torch.bool)
        covered[data] = True
        succ = self.successors()
        closed = covered.clone()
        for _ in range(m):  # a point's future has at most M distinct points
            closed = closed & closed[succ]
        return closed
