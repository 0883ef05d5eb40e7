"""Baseline: a deep ensemble of independently initialised universal value functions, vectorised with ``vmap``.

The paper compares UVU with deep ensembles of UVFAs whose uncertainty is the variance of their predictions,
``σ²_Q(s, a, z) = V_{θ₀}[Q(s, a, z; θ_t)]`` (§2, §4). Each member is trained by the same semi-gradient TD policy
evaluation on the real reward, ``Q_k(s, a) ← r + γ [Q_k(s', a')]_sg`` with ``a' ~ π(·|s', z)``; members differ only
in their initialisation.

:class:`StackedNetworks` holds ``K`` copies of any parameter-only network (``torch.func.stack_module_state``) and
evaluates them with one ``vmap``-ed call — numerically the same as looping over ``K`` separate networks (tested),
but faster. Its ``forward`` lays the copies out as heads, ``(B, K·H)``, so ``R`` independent UVU models are simply
``UVU(StackedNetworks(make, R), StackedNetworks(make, R), gamma=γ)``.

Glossary: ``K`` members, ``B`` batch, ``H`` heads per member (1 for a plain ensemble).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from iclr26.uvu.data import Transitions
from iclr26.uvu.model import signature_of
from iclr26.uvu.td import ensemble_variance, td_loss, td_target


class StackedNetworks(nn.Module):
    """``K`` independently initialised copies of a network ``(states, actions, tasks) -> (B, H)``, vectorised.

    Args:
        make_member: a factory returning a freshly initialised network; called ``size`` times (each call draws new
            weights from the global RNG).
        size: number of copies ``K >= 1``.

    Raises:
        ValueError: for ``size < 1`` or members with buffers (e.g. batch-norm statistics).
    """

    def __init__(self, make_member: Callable[[], nn.Module], size: int) -> None:
        super().__init__()
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        members = [make_member() for _ in range(size)]
        if any(True for _ in members[0].buffers()):
            raise ValueError("stacked members must not have buffers (e.g. batch-norm statistics)")
        params, _ = stack_module_state(members)
        self._names = list(params)
        self.stacked = nn.ParameterList([nn.Parameter(params[name].detach().clone()) for name in self._names])
        # A weight-free template for functional_call, kept out of the module tree so it holds no parameters.
        self._template = [copy.deepcopy(members[0]).to("meta")]
        self.size = size

    def signature(self) -> dict[str, int | None] | None:
        """The member's signature (:func:`iclr26.uvu.model.signature_of`) with ``outputs`` multiplied by ``K``,
        or None when the member states none."""
        member = signature_of(self._template[0])
        return None if member is None else {**member, "outputs": member["outputs"] * self.size}

    def member_parameters(self) -> int:
        """Scalar parameters of one copy."""
        return sum(p[0].numel() for p in self.stacked)

    def member_state(self, k: int) -> dict[str, Tensor]:
        """Copy ``k``'s parameters as a state dict (load it into a network built by the same factory)."""
        if not 0 <= k < self.size:
            raise IndexError(f"member index {k} outside [0, {self.size})")
        return {name: p[k].detach().clone() for name, p in zip(self._names, self.stacked, strict=True)}

    def values(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """Every copy's output: ``(K, B, H)``."""
        template = self._template[0]

        def one(*flat: Tensor) -> Tensor:
            return functional_call(template, dict(zip(self._names, flat, strict=True)), (states, actions, tasks))

        return vmap(one)(*self.stacked)

    def forward(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """The copies laid out as heads, member-major: ``(B, K·H)``."""
        v = self.values(states, actions, tasks)  # (K, B, H)
        return v.permute(1, 0, 2).reshape(v.shape[1], -1)  # (B, K·H)


class ValueEnsemble(StackedNetworks):
    """``K`` independent universal value functions ``Q_k(s, a, z)``; uncertainty = their variance.

    Args:
        make_member: factory of a freshly initialised member ``(states, actions, tasks) -> (B, H)``.
        size: number of members ``K >= 2``.
        gamma: discount ``γ`` in ``[0, 1)``.

    Raises:
        ValueError: for ``size < 2`` or ``gamma`` outside ``[0, 1)``.
    """

    def __init__(self, make_member: Callable[[], nn.Module], size: int, *, gamma: float) -> None:
        if size < 2:
            raise ValueError(f"size must be >= 2 members (a variance needs two), got {size}")
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1), got {gamma}")
        super().__init__(make_member, size)
        self.gamma = gamma

    def loss(self, batch: Transitions) -> Tensor:
        """Sum over members of ``1/(2N) Σ_i (r_i + γ (1 - done_i) [Q_k(s'_i, a'_i)]_sg - Q_k(s_i, a_i))²``.

        Summing keeps the members independent: member ``k``'s gradient is that of its own loss.
        """
        q_sa = self(batch.states, batch.actions, batch.tasks)  # (B, K·H)
        q_next = self(batch.next_states, batch.next_actions, batch.tasks)  # (B, K·H)
        # each member Q_k is trained by TD on the real reward; they differ only in their initialisation
        target = td_target(batch.rewards.to(q_sa.dtype), q_next, gamma=self.gamma, done=batch.dones)
        return td_loss(q_sa, target)

    def mean(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """Ensemble mean ``(1/K) Σ_k Q_k``, averaged over heads: ``(B,)``."""
        return self.values(states, actions, tasks).mean(dim=(0, 2))

    def uncertainty(self, states: Tensor, actions: Tensor, tasks: Tensor, *, unbiased: bool = True) -> Tensor:
        """``σ²_Q(s, a, z)``: variance across members (unbiased by default), averaged over heads: ``(B,)``."""
        # the baseline's σ²_Q = V_k[Q_k]; UVU's E[ε²] matches it (up to the factor 2 of ntk.py) in the NTK limit (§4)
        return ensemble_variance(self.values(states, actions, tasks), unbiased=unbiased)
