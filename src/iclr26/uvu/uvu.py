"""UVU: universal value-function uncertainties from one online network and one fixed random target network.

Paper: "Universal Value-Function Uncertainties", Zanger et al., ICLR 2026, arXiv 2505.21119 (OpenReview
NeAzH9u2jh). Implemented: the UVU estimator of §3 — the online UVFA ``u(s, a, z; ϑ)``, the fixed randomly
initialised UVFA ``g(s, a, z; ψ₀)``, the TD loss on the synthetic reward and the uncertainty ``ε²``. The
equations themselves live in :mod:`iclr26.uvu.td`.

One training iteration on a minibatch ``{(s_i, a_i, s'_i, a'_i, done_i, z_i)}`` (``a' ~ π(·|s', z)``):

1. evaluate the frozen target at both ends, ``g(s, a, z)`` and ``g(s', a', z)``;
2. synthetic reward ``r_g = g(s, a, z) - γ g(s', a', z)`` (the real reward is never used);
3. TD target ``y = r_g + γ [u(s', a', z)]_sg``;
4. gradient step on ``1/(2N) Σ (y - u(s, a, z))²`` w.r.t. ``ϑ`` only.

Query: ``ε²(s, a, z) = (u(s, a, z) - g(s, a, z))²`` — small where the data let TD propagate ``g``'s structure
along the whole future of ``π_z``, large where some of that future is missing. A bonus ``λ sqrt(ε²)`` is added to
``Q`` for exploration or subtracted for pessimism.

Deviations: see :mod:`iclr26.uvu.td` (terminal transitions, several heads).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from iclr26.uvu.data import Transitions
from iclr26.uvu.model import check_independent
from iclr26.uvu.td import synthetic_reward, uvu_td_loss, uvu_uncertainty


class UVU(nn.Module):
    """Universal value-function uncertainty estimator, a drop-in for any value-based or actor-critic learner.

    ``ε²(s, a, z) = (u(s, a, z; ϑ_t) - g(s, a, z; ψ₀))²``, with ``u`` trained by TD on
    ``r_g = g(s, a, z) - γ g(s', a', z)``.

    Both networks take ``(states (B, D_s), actions, tasks (B, D_z))`` and return ``(B, H)`` (e.g.
    :class:`iclr26.uvu.model.UniversalMLP`); they must be independently initialised and produce outputs of the
    same shape. The target is frozen here (``requires_grad = False``); optimise :meth:`trainable_parameters`.

    Example::

        u = UniversalMLP(d_s, d_z, num_actions=7, num_heads=8)
        g = UniversalMLP(d_s, d_z, num_actions=7, num_heads=8)
        uvu = UVU(u, g, gamma=0.9)
        opt = torch.optim.Adam(uvu.trainable_parameters(), lr=1e-3)
        loss = uvu.loss(batch)            # batch: Transitions with a' ~ π(·|s', z)
        opt.zero_grad(); loss.backward(); opt.step()
        q_pessimistic = q - uvu.bonus(s, a, z, scale=1.0)

    Args:
        online: the online network ``u(·; ϑ)``.
        target: the fixed random target network ``g(·; ψ₀)`` (frozen in place).
        gamma: discount ``γ`` in ``[0, 1)``.

    Raises:
        TypeError: if ``online`` or ``target`` is not a ``torch.nn.Module`` (e.g. a function or a tensor).
        ValueError: if ``online is target``, if they share parameters or have identical values, if their signatures
            (inputs, number of outputs; :func:`iclr26.uvu.model.signature_of`) differ, or for ``gamma`` outside
            ``[0, 1)``.
    """

    def __init__(self, online: nn.Module, target: nn.Module, *, gamma: float) -> None:
        super().__init__()
        check_independent(online, target, names=("online", "target"))
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1), got {gamma}")
        self.online = online
        # g(·; ψ₀) stays at its random initialisation: it only defines the synthetic reward r_g
        self.target = target.requires_grad_(False)
        self.gamma = gamma

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The online network's parameters ``ϑ`` (the target ``ψ₀`` stays fixed)."""
        return list(self.online.parameters())

    def synthetic_reward(self, batch: Transitions) -> Tensor:
        """``r_g = g(s, a, z) - γ (1 - done) g(s', a', z)`` for a batch: ``(B, H)``."""
        g_sa = self.target(batch.states, batch.actions, batch.tasks)
        g_next = self.target(batch.next_states, batch.next_actions, batch.tasks)
        return synthetic_reward(g_sa, g_next, gamma=self.gamma, done=batch.dones)

    def loss(self, batch: Transitions) -> Tensor:
        """The UVU TD loss ``1/(2N) Σ (γ [u(s', a')]_sg + r_g - u(s, a))²`` on a batch (scalar).

        Raises:
            ValueError: if online and target outputs differ in shape.
        """
        u_sa = self.online(batch.states, batch.actions, batch.tasks)
        u_next = self.online(batch.next_states, batch.next_actions, batch.tasks)
        g_sa = self.target(batch.states, batch.actions, batch.tasks)
        g_next = self.target(batch.next_states, batch.next_actions, batch.tasks)
        # §3: TD on r_g = g(s, a) − γ g(s', a'), semi-gradient; u ≡ g is a fixed point of this update
        return uvu_td_loss(u_sa, u_next, g_sa, g_next, gamma=self.gamma, done=batch.dones)

    def uncertainty(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """``ε²(s, a, z)`` for a batch of queries, averaged over heads: ``(B,)``.

        Args:
            states: ``(B, D_s)``.
            actions: ``(B,)`` indices or ``(B, D_a)``.
            tasks: ``(B, D_z)`` policy/task encodings ``z``.

        Raises:
            TypeError: if an argument is not a tensor.
            ValueError: if ``states``, ``tasks`` or continuous ``actions`` hold NaN or inf (named), or online and
                target outputs differ in shape.
        """
        for name, value in (("states", states), ("actions", actions), ("tasks", tasks)):
            if not isinstance(value, Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
            if value.is_floating_point() and not torch.isfinite(value).all():
                bad = int((~torch.isfinite(value)).sum())
                raise ValueError(f"{name} holds {bad} non-finite value(s) (NaN or inf); ε² is undefined there")
        # §3: ε² = (u − g)², large where the data miss part of π_z's future and TD cannot propagate g
        return uvu_uncertainty(self.online(states, actions, tasks), self.target(states, actions, tasks))

    def bonus(self, states: Tensor, actions: Tensor, tasks: Tensor, *, scale: float) -> Tensor:
        """``λ sqrt(ε²(s, a, z))``: add to ``Q`` to explore optimistically, subtract for pessimism. ``(B,)``.

        Raises:
            ValueError: for a negative or NaN ``scale``.
        """
        if not scale >= 0:
            raise ValueError(f"scale must be non-negative (subtract the bonus for pessimism), got {scale}")
        # λ √ε²: added to Q as an exploration bonus, subtracted for pessimism / task rejection
        return scale * self.uncertainty(states, actions, tasks).sqrt()
