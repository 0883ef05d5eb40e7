"""The temporal-difference math of UVU and its baselines, as pure tensor functions.

Paper: "Universal Value-Function Uncertainties", Zanger, Weltevrede, Oren, van der Vaart, Horsch, Böhmer, Spaan,
ICLR 2026, arXiv 2505.21119, OpenReview NeAzH9u2jh. Implemented here (§3 of the paper, "UVU"):

* the synthetic reward ``r_g(s, a, s', a') = g(s, a, z) - γ g(s', a', z)`` built from the fixed random target
  network ``g(·; ψ₀)``, with ``a' ~ π(·|s', z)``;
* the semi-gradient TD loss of the online network
  ``L(ϑ) = 1/(2N) Σ_i (γ [u(s'_i, a'_i, z_i)]_sg + r_g,i - u(s_i, a_i, z_i))²``;
* the uncertainty ``ε²(s, a, z) = (u(s, a, z; ϑ_t) - g(s, a, z; ψ₀))²``;
* for the baselines: the TD loss of an ordinary (universal) value function on the real reward, the variance of an
  ensemble's predictions, and RND's regression loss.

By construction ``g`` is the value function of ``r_g`` under ``π``: ``g(s, a) = r_g + γ g(s', a')`` holds on every
transition, so ``u ≡ g`` is a fixed point of the TD operator and the TD error vanishes there
(``tests/uvu/test_uvu_td.py`` checks it).

Glossary: ``B`` transitions in a batch, ``H`` output heads (independent ``u``/``g`` pairs), ``K`` ensemble members.

Deviations:
    * Terminal transitions (``done = 1``): the paper's formula has no termination flag. We use
      ``r_g = g(s, a) - γ (1 - done) g(s', a')`` and the target ``r_g + γ (1 - done) [u(s', a')]_sg``, the usual
      episodic convention; it keeps ``u ≡ g`` an exact fixed point and reduces to the paper's formula when
      ``done = 0`` (derived, not in the paper).
    * Several heads (``H > 1``, independent ``u``/``g`` output pairs): the loss is the sum of the heads' losses and
      ``ε²`` their mean. The paper's practical multi-head variant could not be checked against the PDF (README).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check_pair(a: Tensor, b: Tensor, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{name_a} has shape {tuple(a.shape)} but {name_b} has shape {tuple(b.shape)}; the online and target "
            "networks must produce outputs of the same shape (same number of heads)"
        )


def _done_mask(done: Tensor | None, like: Tensor) -> Tensor:
    """``1 - done`` broadcast over trailing head dimensions of ``like`` (``done`` has shape ``(B,)``)."""
    if done is None:
        return torch.ones_like(like)
    if done.shape != like.shape[: done.dim()]:
        raise ValueError(f"done has shape {tuple(done.shape)}, expected the batch shape {tuple(like.shape[:1])}")
    not_done = 1.0 - done.to(like.dtype)
    return not_done.reshape(not_done.shape + (1,) * (like.dim() - done.dim()))


def synthetic_reward(g_sa: Tensor, g_next: Tensor, *, gamma: float, done: Tensor | None = None) -> Tensor:
    """The UVU synthetic reward ``r_g = g(s, a, z) - γ (1 - done) g(s', a', z)``.

    Args:
        g_sa: target-network values ``g(s, a, z; ψ₀)``, shape ``(B,)`` or ``(B, H)``.
        g_next: target-network values at the next state-action ``g(s', a', z; ψ₀)`` with ``a' ~ π(·|s', z)``,
            same shape as ``g_sa``.
        gamma: discount ``γ`` in ``[0, 1]``.
        done: optional ``(B,)`` termination flags (1 = ``s'`` terminal, no bootstrap).

    Returns:
        ``r_g`` with the shape of ``g_sa``.

    Raises:
        ValueError: if the shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    _check_pair(g_sa, g_next, "g_sa", "g_next")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    # §3: r_g(s, a, s', a') = g(s, a, z; ψ₀) - γ g(s', a', z; ψ₀)   (terminal: no bootstrap, see Deviations)
    return g_sa - gamma * _done_mask(done, g_next) * g_next


def td_target(reward: Tensor, v_next: Tensor, *, gamma: float, done: Tensor | None = None) -> Tensor:
    """The one-step TD target ``r + γ (1 - done) [v(s', a')]_sg`` (the bootstrap is detached).

    Args:
        reward: ``(B,)`` or ``(B, H)`` rewards (real or synthetic); ``(B,)`` is broadcast over heads.
        v_next: ``(B,)`` or ``(B, H)`` values of the learner at ``(s', a')``.
        gamma: discount ``γ`` in ``[0, 1]``.
        done: optional ``(B,)`` termination flags.

    Returns:
        The target, shape of ``v_next``, without gradient.

    Raises:
        ValueError: if ``gamma`` is outside ``[0, 1]`` or ``reward`` is neither ``(B,)`` nor ``v_next``'s shape.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if reward.shape not in (v_next.shape, v_next.shape[:1]):
        raise ValueError(
            f"reward has shape {tuple(reward.shape)} but v_next has shape {tuple(v_next.shape)}; give one reward "
            "per transition (B,) or one per head (B, H)"
        )
    if reward.dim() < v_next.dim():
        reward = reward.reshape(reward.shape + (1,) * (v_next.dim() - reward.dim()))
    # TD target y = r + γ [v(s', a')]_sg ; [·]_sg = stop-gradient
    return reward + gamma * _done_mask(done, v_next) * v_next.detach()


def td_loss(v_sa: Tensor, target: Tensor) -> Tensor:
    """The semi-gradient TD loss ``1/(2N) Σ_i (y_i - v(s_i, a_i))²``: mean over the batch, sum over heads.

    Summing over heads makes the loss of ``H`` heads the sum of ``H`` single-head losses, so each head (or each
    independent network stacked as heads) gets exactly the gradient of its own loss.

    Args:
        v_sa: ``(B,)`` or ``(B, H)`` predictions of the learner at ``(s, a)``.
        target: the TD target of :func:`td_target` (no gradient), same shape.

    Returns:
        A scalar loss.
    """
    _check_pair(v_sa, target, "v_sa", "target")
    sq = (target.detach() - v_sa).pow(2)
    sq = sq.reshape(sq.shape[0], -1).sum(dim=1) if sq.dim() > 1 else sq
    # §3: L(ϑ) = 1/(2N) Σ_i (γ [u(s'_i, a'_i)]_sg + r_g,i - u(s_i, a_i))²
    return 0.5 * sq.mean()


def uvu_td_loss(
    u_sa: Tensor, u_next: Tensor, g_sa: Tensor, g_next: Tensor, *, gamma: float, done: Tensor | None = None
) -> Tensor:
    """UVU's training loss: TD on the synthetic reward of the fixed target network.

    ``L(ϑ) = 1/(2N) Σ_i (γ (1 - done_i) [u(s'_i, a'_i, z_i)]_sg + r_g,i - u(s_i, a_i, z_i))²``.

    Args:
        u_sa: online values ``u(s, a, z; ϑ)``, ``(B,)`` or ``(B, H)``.
        u_next: online values at ``(s', a', z)``, same shape (detached inside).
        g_sa: target values ``g(s, a, z; ψ₀)``, same shape.
        g_next: target values at ``(s', a', z)``, same shape.
        gamma: discount ``γ``.
        done: optional ``(B,)`` termination flags.

    Returns:
        A scalar loss; its gradient reaches ``u_sa`` only.

    Raises:
        ValueError: if online and target outputs differ in shape.
    """
    _check_pair(u_sa, g_sa, "u_sa (online)", "g_sa (target)")
    _check_pair(u_next, g_next, "u_next (online)", "g_next (target)")
    r_g = synthetic_reward(g_sa.detach(), g_next.detach(), gamma=gamma, done=done)
    return td_loss(u_sa, td_target(r_g, u_next, gamma=gamma, done=done))


def uvu_uncertainty(u_sa: Tensor, g_sa: Tensor) -> Tensor:
    """The UVU uncertainty ``ε² = (u(s, a, z; ϑ_t) - g(s, a, z; ψ₀))²``, averaged over heads.

    Args:
        u_sa: online values, ``(B,)`` or ``(B, H)``.
        g_sa: target values, same shape.

    Returns:
        ``(B,)`` squared prediction errors (mean over the ``H`` heads).
    """
    _check_pair(u_sa, g_sa, "u_sa (online)", "g_sa (target)")
    # §3: ε²(s, a, z, ϑ_t) = (u(s, a, z; ϑ_t) - g(s, a, z; ψ₀))²
    err = (u_sa - g_sa).pow(2)
    return err.mean(dim=-1) if err.dim() > 1 else err


def ensemble_variance(values: Tensor, *, unbiased: bool = True) -> Tensor:
    """The ensemble's uncertainty ``σ²_Q(s, a, z) = V_k[Q_k(s, a, z)]`` across members.

    Args:
        values: ``(K, B)`` predictions of ``K >= 2`` members (or ``(K, B, H)``, heads averaged after).
        unbiased: divide by ``K - 1`` (unbiased estimate of the variance over initialisations) instead of ``K``.

    Returns:
        ``(B,)`` variances.

    Raises:
        ValueError: with fewer than two members.
    """
    if values.dim() < 2 or values.shape[0] < 2:
        raise ValueError(f"values must have shape (K, B) with K >= 2 members, got {tuple(values.shape)}")
    # σ²(x) = 1/(K-1) Σ_k (Q_k(x) - mean_k Q_k(x))²
    var = values.var(dim=0, unbiased=unbiased)
    return var.mean(dim=-1) if var.dim() > 1 else var
