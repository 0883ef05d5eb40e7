"""An offline data set of task-conditioned transitions ``(s, a, r, s', a', done, z)``, validated once.

Glossary: ``N`` transitions, ``D_s`` state features, ``D_z`` task (policy) encoding ``z``, ``D_a`` continuous action
dimensions (discrete actions are integer indices).

The next action ``a' ~ π(·|s', z)`` belongs to the data because UVU (and the ensemble it is compared with) evaluates
a given policy ``π``: relabel it with :meth:`Transitions.with_next_actions` whenever ``π`` changes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor


@dataclass(frozen=True)
class Transitions:
    """A batch or data set of transitions; every field has ``N`` rows.

    Attributes:
        states: ``(N, D_s)`` float features of ``s``.
        actions: ``(N,)`` integer actions, or ``(N, D_a)`` float actions.
        rewards: ``(N,)`` finite rewards ``r``.
        next_states: ``(N, D_s)`` features of ``s'``.
        next_actions: ``a' ~ π(·|s', z)``, same shape and dtype kind as ``actions``.
        dones: ``(N,)`` termination flags in {0, 1} (1 = ``s'`` is terminal; time-limit cuts are not terminal).
        tasks: ``(N, D_z)`` task / policy encodings ``z``.
    """

    states: Tensor
    actions: Tensor
    rewards: Tensor
    next_states: Tensor
    next_actions: Tensor
    dones: Tensor
    tasks: Tensor

    def __post_init__(self) -> None:
        n = self.states.shape[0] if self.states.dim() == 2 else -1
        if self.states.dim() != 2:
            raise ValueError(f"states must have shape (N, D_s), got {tuple(self.states.shape)}")
        if self.next_states.shape != self.states.shape:
            raise ValueError(
                f"next_states has shape {tuple(self.next_states.shape)}, states {tuple(self.states.shape)}; "
                "they must match"
            )
        if self.tasks.dim() != 2 or self.tasks.shape[0] != n:
            raise ValueError(f"tasks must have shape (N={n}, D_z), got {tuple(self.tasks.shape)}")
        for name in ("rewards", "dones"):
            value = getattr(self, name)
            if value.shape != (n,):
                raise ValueError(f"{name} must have shape (N={n},), got {tuple(value.shape)}")
        if self.actions.shape[:1] != (n,) or self.actions.dim() > 2:
            raise ValueError(f"actions must have shape (N={n},) or (N, D_a), got {tuple(self.actions.shape)}")
        if self.next_actions.shape != self.actions.shape or self.next_actions.dtype != self.actions.dtype:
            raise ValueError(
                f"next_actions ({tuple(self.next_actions.shape)}, {self.next_actions.dtype}) must match actions "
                f"({tuple(self.actions.shape)}, {self.actions.dtype})"
            )
        if not torch.isfinite(self.rewards).all():
            bad = int((~torch.isfinite(self.rewards)).sum())
            raise ValueError(f"rewards contain {bad} non-finite value(s) (NaN or inf); clean the data set first")
        finite_fields = ["states", "next_states", "tasks"]
        if self.actions.is_floating_point():  # continuous actions a and a'
            finite_fields += ["actions", "next_actions"]
        for name in finite_fields:
            if not torch.isfinite(getattr(self, name)).all():
                raise ValueError(f"{name} contain non-finite values (NaN or inf); clean the data set first")
        if not ((self.dones == 0) | (self.dones == 1)).all():
            raise ValueError("dones must hold only 0 and 1")

    def __len__(self) -> int:
        return self.states.shape[0]

    def _derived(self, values: dict[str, Tensor]) -> Transitions:
        """Transitions derived from these ones by a selection of rows or a move of device, not validated again: the
        values were checked when the data set was built, and a check per minibatch would cost a host sync per step
        on a GPU."""
        out = object.__new__(Transitions)
        for name, value in values.items():
            object.__setattr__(out, name, value)
        return out

    def index(self, idx: Tensor) -> Transitions:
        """The rows ``idx`` (a minibatch); ``idx`` is a ``(B,)`` integer tensor."""
        return self._derived({f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def to(self, device: torch.device | str) -> Transitions:
        """The same transitions on ``device``."""
        return self._derived({f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def with_next_actions(self, next_actions: Tensor) -> Transitions:
        """The same transitions with ``a'`` relabelled by a (new) policy ``π``."""
        return replace(self, next_actions=next_actions)

    def sample(self, batch_size: int, generator: torch.Generator) -> Transitions:
        """A uniform minibatch of ``batch_size`` rows drawn with replacement."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if len(self) == 0:
            raise ValueError("cannot sample a minibatch from an empty data set (N = 0)")
        return self.index(torch.randint(len(self), (batch_size,), generator=generator))
