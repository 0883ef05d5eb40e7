"""LAMIR's training: the two-step update of the base agent and of the learned abstract model(s).

One training step on a batch of sampled episodes (the paper's two-step update, notes §2.4; the
paper's method sections were not available, see the README):

(a) **policy step** (:meth:`BaseAgentLearner.update`): NeuRD with RNaD's reward regularisation and V-trace targets
    updates π_θ (and the critic); the policy change ``δ = π_new − π_old`` on the batch's infosets is recorded;
(b) **model step**: the transformations τ_θ are fitted to ``δ`` by soft clustering (``L^T``), and each
    :class:`AbstractModelLearner` takes one step on ``L^A + L^S + L^M + L^V``:

    1. κ attributes of every sampled infoset; centroids ``κ_θ(Λ_i(s_0))``; soft-clustering ``L^A``; assignment
       ``L^S`` toward the nearest centroid (stop-gradient);
    2. every infoset's abstract infoset ``l = argmax Λ^I_i(s_i)`` (a discrete choice: no gradient reaches the
       abstraction from the model loss) and its latent ``s̄ = Λ^I(s_0, l)``;
    3. ``L^M``: unroll Υ_θ along the real joint actions from every step for ``unroll`` steps: BCE on the legal
       actions (Γ_θ), the terminal flag and the next public state, MSE on the reward and on the latent, whose
       target is the (stop-gradient) latent of the real next infoset's abstraction;
    4. ``L^V``: v_θ on the (detached) latents against V-trace targets for each of the ``T × T`` pairs of
       transformed policies ``π^χ``, the behaviour policy being the sampling policy.

Deviations (README): the responsibilities of the soft clustering are constants and γ is annealed; the latent of an
abstract infoset comes from a representation network; v_θ learns from episodes that follow one transformed-policy
pair; τ_θ clusters rescaled policy-change directions; the base agent omits RNaD's two-reference interpolation.

Glossary: ``H`` steps, ``B`` episodes, ``A`` actions, ``T`` transformations, ``L`` capacity, ``D`` latent width.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26.lamir.features import KAPPAS, GameFeatures, Kappa
from iclr26.lamir.losses import (
    assignment_loss,
    direction_targets,
    neurd_loss,
    soft_clustering_loss,
    transform_policy,
    vtrace_targets,
)
from iclr26.lamir.model import AbstractModel, CriticNet, ModelSizes, PolicyNet, TransformationNet
from iclr26.lamir.trajectories import Trajectories


def _require(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise ValueError(f"{name}: {message}")


@dataclass(frozen=True)
class BaseAgentSettings:
    """Hyperparameters of the base agent (π_θ, its critic) and of the transformations τ_θ.

    Attributes:
        hidden: MLP width.
        lr: Adam learning rate.
        eta: RNaD reward-regularisation strength η.
        reg_period: steps between updates of RNaD's reference policy.
        neurd_threshold: NeuRD logit threshold β.
        neurd_clip: NeuRD advantage clip.
        num_transformations: ``T``.
        transformation_gamma: softness γ of τ_θ's clustering.
        transformation_scale: L1 size of the policy-change directions τ_θ clusters.
    """

    hidden: int = 128
    lr: float = 1e-3
    eta: float = 0.2
    reg_period: int = 200
    neurd_threshold: float = 2.0
    neurd_clip: float = 10.0
    num_transformations: int = 3
    transformation_gamma: float = 4.0
    transformation_scale: float = 1.0

    def __post_init__(self) -> None:
        _require(self.hidden > 0, "hidden", f"must be positive, got {self.hidden}")
        _require(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        _require(self.eta >= 0, "eta", f"must be non-negative, got {self.eta}")
        _require(self.reg_period > 0, "reg_period", f"must be positive, got {self.reg_period}")
        _require(self.num_transformations >= 1, "num_transformations", "must be >= 1")
        _require(self.transformation_gamma > 0, "transformation_gamma", "must be positive")
        _require(self.transformation_scale > 0, "transformation_scale", "must be positive")


@dataclass(frozen=True)
class ModelSettings:
    """Hyperparameters of one learned abstract model.

    Attributes:
        capacity: ``L``, abstract infosets per public state and player.
        kappa: the attribute function κ clustered by the abstraction.
        gamma_start: softness γ of the abstraction's soft clustering at the start of training.
        gamma_end: γ after annealing (see :func:`annealed_gamma`).
        hidden: MLP width.
        latent_dim: ``D``.
        code_dim: width of an abstract-infoset code.
        lr: Adam learning rate.
        unroll: how many steps Υ_θ is unrolled along real trajectories.
        rho_bar: V-trace ``ρ̄`` of the value targets.
        c_bar: V-trace ``c̄`` of the value targets.
    """

    capacity: int
    kappa: Kappa = "history"
    gamma_start: float = 0.25
    gamma_end: float = 64.0
    hidden: int = 128
    latent_dim: int = 32
    code_dim: int = 16
    lr: float = 1e-3
    unroll: int = 3
    rho_bar: float = 5.0
    c_bar: float = 5.0

    def __post_init__(self) -> None:
        _require(self.capacity >= 1, "capacity", f"must be >= 1, got {self.capacity}")
        _require(self.kappa in KAPPAS, "kappa", f"must be one of {', '.join(KAPPAS)}, got {self.kappa!r}")
        _require(
            0 < self.gamma_start <= self.gamma_end,
            "gamma_start/gamma_end",
            f"need 0 < gamma_start <= gamma_end, got {self.gamma_start}, {self.gamma_end}",
        )
        _require(self.unroll >= 1, "unroll", f"must be >= 1, got {self.unroll}")
        _require(self.rho_bar > 0 and self.c_bar > 0, "rho_bar/c_bar", "must be positive")


def annealed_gamma(progress: float, *, start: float, end: float, fraction: float = 0.7) -> float:
    """Geometric annealing of the clustering softness: ``γ = start · (end/start)^min(1, progress/fraction)``.

    Starting soft puts all centroids of a public state together; raising γ splits them one by one (deterministic
    annealing), so no centroid is left dead far from every point, which a fixed large γ does (README, Deviations).

    Args:
        progress: fraction of training done, in ``[0, 1]``.
        start: initial γ.
        end: final γ, reached at ``progress = fraction``.
        fraction: share of training spent annealing.
    """
    return start * (end / start) ** min(1.0, max(progress, 0.0) / fraction)


def _gather(table: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    return table[torch.from_numpy(index)]


class BaseAgentLearner:
    """The pre-trained agent: π_θ trained by NeuRD + RNaD regularisation, and its transformations τ_θ."""

    def __init__(self, features: GameFeatures, settings: BaseAgentSettings) -> None:
        self.features = features
        self.settings = settings
        f, a = features.infoset_dim, features.num_actions
        self.policy = PolicyNet(f, a, hidden=settings.hidden)
        self.critic = CriticNet(f, hidden=settings.hidden)
        self.transformations = TransformationNet(f, a, settings.num_transformations, hidden=settings.hidden)
        self.reference = copy.deepcopy(self.policy).requires_grad_(False)
        self.optimizer = torch.optim.Adam(
            list(self.policy.parameters()) + list(self.critic.parameters()), lr=settings.lr
        )
        self.tau_optimizer = torch.optim.Adam(self.transformations.parameters(), lr=settings.lr)
        self.steps = 0

    def state_dict(self) -> dict[str, Any]:
        """Everything that training changes, as copied tensors and numbers (picklable; no live objects): the
        networks π_θ, critic, τ_θ and RNaD's reference policy, both optimisers' moments, and the step counter."""
        return copy.deepcopy(
            {
                "policy": self.policy.state_dict(),
                "critic": self.critic.state_dict(),
                "transformations": self.transformations.state_dict(),
                "reference": self.reference.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "tau_optimizer": self.tau_optimizer.state_dict(),
                "steps": self.steps,
            }
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; training then continues exactly as if never interrupted."""
        self.policy.load_state_dict(state["policy"])
        self.critic.load_state_dict(state["critic"])
        self.transformations.load_state_dict(state["transformations"])
        self.reference.load_state_dict(state["reference"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.tau_optimizer.load_state_dict(state["tau_optimizer"])
        self.steps = int(state["steps"])

    @torch.no_grad()
    def policy_tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """π_θ on every infoset: per player ``(K_p, A)`` float32."""
        return tuple(  # type: ignore[return-value]
            torch.softmax(self.policy(self.features.infoset[p], self.features.legal[p]), -1) for p in (0, 1)
        )

    @torch.no_grad()
    def transformed_tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``π^{χ_j}`` on every infoset: per player ``(K_p, T, A)``."""
        out = []
        for p, pi in enumerate(self.policy_tables()):
            legal = self.features.legal[p]
            out.append(transform_policy(pi, self.transformations(self.features.infoset[p], legal), legal))
        return out[0], out[1]

    def update(self, traj: Trajectories) -> dict[str, float]:
        """Step (a) and ``L^T`` of step (b) on one batch; returns the losses."""
        s = self.settings
        feats = self.features
        valid = torch.from_numpy(traj.valid)
        mask = valid.float()
        h, b = traj.valid.shape
        logp, logp_ref, logits, legal, x = [], [], [], [], []
        for p in (0, 1):
            xi = _gather(feats.infoset[p], traj.infoset[..., p]).view(h * b, -1)
            li = _gather(feats.legal[p], traj.infoset[..., p]).view(h * b, -1)
            lg = self.policy(xi, li)
            with torch.no_grad():
                ref = torch.log_softmax(self.reference(xi, li), -1)
            logits.append(lg)
            logp.append(torch.log_softmax(lg, -1))
            logp_ref.append(ref)
            legal.append(li)
            x.append(xi)
        action = [torch.from_numpy(traj.action[..., p]).view(-1) for p in (0, 1)]
        mu = [torch.from_numpy(traj.behaviour[..., p]).float().view(h, b) for p in (0, 1)]
        taken = [logp[p].gather(1, action[p][:, None]).view(h, b) for p in (0, 1)]
        # log π/π_reg of each player's taken action (RNaD's regulariser), constant in the targets
        log_ratio = [(logp[p] - logp_ref[p]).gather(1, action[p][:, None]).view(h, b).detach() for p in (0, 1)]
        reward = torch.from_numpy(traj.reward).float()
        # RNaD reward transform, player 0's view: r − η log(π_0/π_reg,0) + η log(π_1/π_reg,1)
        reg_reward = reward - s.eta * log_ratio[0] + s.eta * log_ratio[1]
        value = self.critic(x[0], x[1]).view(h, b)
        ratio = [(taken[p].detach().exp() / mu[p]) for p in (0, 1)]
        # critic target: V-trace on the regularised reward with the joint ratio of both players' simultaneous actions
        target = vtrace_targets(value, reg_reward, ratio[0] * ratio[1], valid, rho_bar=1.0, c_bar=1.0)
        next_target = torch.cat([target[1:], torch.zeros_like(target[:1])], 0)
        v_det = value.detach()
        policy_loss = torch.zeros(())
        for p in (0, 1):
            sign = 1.0 if p == 0 else -1.0
            opp = 1 - p
            # Sampled, importance-weighted action value of the taken action; the baseline V elsewhere.
            own_reward = sign * reward + s.eta * log_ratio[opp]
            correction = ratio[opp].clamp(max=1.0) * (own_reward + sign * next_target - sign * v_det) / mu[p]
            onehot = nn.functional.one_hot(action[p], feats.num_actions).float().view(h, b, -1)
            q = (
                -s.eta * (logp[p] - logp_ref[p]).detach().view(h, b, -1)
                + sign * v_det[..., None]
                + onehot * correction[..., None]
            )
            per = neurd_loss(
                logits[p],
                logp[p].exp(),
                q.view(h * b, -1),
                legal[p],
                threshold=s.neurd_threshold,
                clip=s.neurd_clip,
            ).view(h, b)
            policy_loss = policy_loss + (per * mask).sum() / mask.sum()
        critic_loss = ((value - target).pow(2) * mask).sum() / mask.sum()
        self.optimizer.zero_grad()
        (policy_loss + critic_loss).backward()
        self.optimizer.step()
        self.steps += 1
        if self.steps % s.reg_period == 0:
            # RNaD's outer iteration: every reg_period steps the regularisation policy π_reg becomes the current π
            self.reference.load_state_dict(self.policy.state_dict())
        # Step (b), L^T: soft-cluster the directions of δ = π_new − π_old with τ_θ's T centroids.
        flat_valid = valid.view(-1).repeat(2).float()
        xs = torch.cat(x, 0)
        ls = torch.cat(legal, 0)
        with torch.no_grad():
            delta = torch.softmax(self.policy(xs, ls), -1) - torch.cat(logp, 0).exp().detach()
        chi = self.transformations(xs, ls)
        tau = soft_clustering_loss(
            chi,
            direction_targets(delta, scale=s.transformation_scale),
            gamma=s.transformation_gamma,
            weights=flat_valid,
        )
        self.tau_optimizer.zero_grad()
        tau.loss.backward()
        self.tau_optimizer.step()
        return {
            "policy_loss": float(policy_loss.detach()),
            "critic_loss": float(critic_loss.detach()),
            "transformation_loss": float(tau.loss.detach()),
        }


@dataclass(frozen=True)
class ModelLosses:
    """The losses of one model step.

    Attributes:
        abstraction: ``L^A`` (reaches only Λ_i and κ_θ).
        assignment: ``L^S`` (reaches only Λ^I_i).
        model: ``L^M`` (reaches only the representation, Υ_θ and Γ_θ).
        value: ``L^V`` (reaches only v_θ).
        model_parts: the terms of ``L^M`` (reward, terminal, public, latent, legal) as floats.
    """

    abstraction: torch.Tensor
    assignment: torch.Tensor
    model: torch.Tensor
    value: torch.Tensor
    model_parts: dict[str, float]


class AbstractModelLearner:
    """One learned abstract model of capacity ``L`` and its step on ``L^A + L^S + L^M + L^V`` (steps 1-4).

    Args:
        features: the game's tensors.
        settings: the model's hyperparameters.
        num_transformations: ``T`` of the base agent's τ_θ.
        value_bound: the largest absolute return of the game (bounds the reward and value heads).
    """

    def __init__(
        self, features: GameFeatures, settings: ModelSettings, *, num_transformations: int, value_bound: float
    ) -> None:
        self.features = features
        self.settings = settings
        self.model = AbstractModel(
            ModelSizes(
                infoset_dim=features.infoset_dim,
                public_dim=features.public_dim,
                num_actions=features.num_actions,
                capacity=settings.capacity,
                attribute_dim=features.attribute_dim(settings.kappa),
                latent_dim=settings.latent_dim,
                code_dim=settings.code_dim,
                num_transformations=num_transformations,
                hidden=settings.hidden,
                value_bound=value_bound,
            )
        )
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.lr)

    def state_dict(self) -> dict[str, Any]:
        """The model's parameters and its optimiser's moments, as copied tensors (picklable; no live objects)."""
        return copy.deepcopy({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; training then continues exactly as if never interrupted."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    @torch.no_grad()
    def abstraction(self, player: int) -> np.ndarray:
        """``argmax Λ^I_i`` of every infoset of ``player``: ``(K_p,)`` abstract-infoset indices."""
        return self.model.assign_logits(self.features.infoset[player]).argmax(-1).numpy()

    def _latents(self, traj: Trajectories, public_of_node: np.ndarray) -> list[torch.Tensor]:
        """Step 2 on a batch: per player ``(H, B, D)`` latents of the selected abstract infosets."""
        h, b = traj.valid.shape
        public = self._public(traj.node, traj.valid, public_of_node).view(h * b, -1)
        out = []
        for p in (0, 1):
            info = torch.from_numpy(traj.infoset[..., p]).view(-1)
            # argmax: a discrete index, so the model loss cannot move the abstraction
            label = self.model.assign_logits(self.features.infoset[p][info]).detach().argmax(-1)
            onehot = self.features.player_onehot[p].expand(h * b, 2)
            out.append(self.model.latent(public, label, onehot).view(h, b, -1))
        return out

    def _public(self, nodes: np.ndarray, mask: np.ndarray, public_of_node: np.ndarray) -> torch.Tensor:
        """``(H, B, P)`` public tensors of the given nodes (zeros where ``mask`` is false)."""
        index = np.maximum(public_of_node[np.where(mask, nodes, 0)], 0)
        return self.features.public[torch.from_numpy(index)] * torch.from_numpy(mask)[..., None].float()

    def losses(
        self,
        model_batch: Trajectories,
        value_batch: Trajectories,
        policy: tuple[torch.Tensor, torch.Tensor],
        transformed: tuple[torch.Tensor, torch.Tensor],
        public_of_node: np.ndarray,
        *,
        gamma: float,
    ) -> ModelLosses:
        """``L^A``, ``L^S``, ``L^M`` and ``L^V`` (steps 1-4), as differentiable tensors.

        Args:
            model_batch: episodes for the abstraction and the dynamics.
            value_batch: episodes for the value targets (their behaviour probabilities enter V-trace).
            policy: per player ``(K_p, A)`` the current π_θ table (for κ = policy).
            transformed: per player ``(K_p, T, A)`` the transformed policies ``π^χ`` (value targets).
            public_of_node: ``(N,)`` public state of every node (``-1`` for terminal nodes).
            gamma: the abstraction's clustering softness γ at this step.

        Returns:
            The four losses and the parts of ``L^M``.
        """
        abstraction, assignment = self._abstraction_losses(model_batch, policy, public_of_node, gamma)
        model, parts = self._model_loss(model_batch, public_of_node)
        value = self._value_loss(value_batch, transformed, public_of_node)
        return ModelLosses(abstraction=abstraction, assignment=assignment, model=model, value=value, model_parts=parts)

    def _abstraction_losses(
        self,
        traj: Trajectories,
        policy: tuple[torch.Tensor, torch.Tensor],
        public_of_node: np.ndarray,
        gamma: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Step 1: ``L^A`` (soft clustering of κ toward κ_θ(Λ_i(s_0))) and ``L^S`` (Λ^I toward the nearest)."""
        h, b = traj.valid.shape
        weights = torch.from_numpy(traj.valid).view(-1).float()
        public = self._public(traj.node, traj.valid, public_of_node).view(h * b, -1)
        abstraction = torch.zeros(())
        assignment = torch.zeros(())
        for p in (0, 1):
            info = torch.from_numpy(traj.infoset[..., p]).view(-1)
            onehot = self.features.player_onehot[p].expand(h * b, 2)
            centroids = self.model.centroids(public, onehot)  # (H·B, L, K)
            points = self.features.attributes(self.settings.kappa, p, info, policy[p])
            # L^A: the attributes κ(s_i) clustered toward the L centroids κ_θ(Λ_i(s_0)) of their public state
            clustering = soft_clustering_loss(centroids, points, gamma=gamma, weights=weights)
            logits = self.model.assign_logits(self.features.infoset[p][info])
            abstraction = abstraction + clustering.loss
            # L^S: Λ^I_i trained toward the nearest centroid, the hard assignment the search uses via argmax
            assignment = assignment + assignment_loss(logits, clustering.nearest, weights=weights)
        return abstraction, assignment

    def _model_loss(self, traj: Trajectories, public_of_node: np.ndarray) -> tuple[torch.Tensor, dict[str, float]]:
        """Step 3: ``L^M``, Υ_θ unrolled along the real joint actions from every step."""
        model = self.model
        feats = self.features
        h, b = traj.valid.shape
        bce = nn.functional.binary_cross_entropy_with_logits
        valid = torch.from_numpy(traj.valid)
        latents = self._latents(traj, public_of_node)
        legal = [feats.legal[p][torch.from_numpy(traj.infoset[..., p])].float() for p in (0, 1)]  # (H, B, A)
        actions = [torch.from_numpy(traj.action[..., p]) for p in (0, 1)]
        reward = torch.from_numpy(traj.reward).float()
        terminal = torch.from_numpy(traj.terminal)
        next_public = self._public(traj.next_node, traj.valid & ~traj.terminal, public_of_node)
        sums = {k: torch.zeros(()) for k in ("reward", "terminal", "public", "latent", "legal")}
        counts = dict.fromkeys(sums, 0.0)

        def add(name: str, per: torch.Tensor, mask: torch.Tensor) -> None:
            sums[name] = sums[name] + (per * mask).sum()
            counts[name] += float(mask.sum())

        for p in (0, 1):
            logits = model.legal_logits(latents[p].view(h * b, -1))
            add("legal", bce(logits, legal[p].view(h * b, -1), reduction="none").mean(-1), valid.view(-1).float())
        for t in range(h):
            z0, z1 = latents[0][t], latents[1][t]
            alive = valid[t].clone()
            for step in range(t, min(h, t + self.settings.unroll)):
                mask = alive & valid[step]
                if not bool(mask.any()):
                    break
                out = model.step(z0, z1, actions[0][step], actions[1][step])
                m = mask.float()
                add("reward", (out.reward - reward[step]).pow(2), m)
                add("terminal", bce(out.terminal_logit, terminal[step].float(), reduction="none"), m)
                cont = (mask & ~terminal[step]).float()
                add("public", bce(out.public_logits, next_public[step], reduction="none").mean(-1), cont)
                if step + 1 < h:
                    for p, z in ((0, out.latent0), (1, out.latent1)):
                        # latent target: the real next infoset's abstract latent, stop-gradient
                        add("latent", (z - latents[p][step + 1].detach()).pow(2).mean(-1), cont)
                        add("legal", bce(model.legal_logits(z), legal[p][step + 1], reduction="none").mean(-1), cont)
                z0, z1 = out.latent0, out.latent1
                alive = mask & ~terminal[step]
        # L^M = BCE(legal) + BCE(terminal) + BCE(public) + MSE(reward) + MSE(latent), each averaged over its steps
        loss = sum(sums[k] / max(counts[k], 1.0) for k in sums)
        return loss, {k: float(sums[k].detach()) / max(counts[k], 1.0) for k in sums}

    def _value_loss(
        self, traj: Trajectories, transformed: tuple[torch.Tensor, torch.Tensor], public_of_node: np.ndarray
    ) -> torch.Tensor:
        """Step 4: ``L^V``, v_θ on detached latents against V-trace targets.

        ``traj.assignment[t, b]`` names the transformation each player followed at step ``t`` (index ``T`` = a
        step of random play before the switch). Steps from the switch on train the entry of their pair with
        V-trace targets whose importance ratios are those of the pair itself (exactly 1 when the pair is followed
        without exploration): unbiased targets (README, Deviations).
        """
        s = self.settings
        h, b = traj.valid.shape
        # L^V reaches v_θ only: no gradient flows into the representation or the abstraction heads
        latents = [z.detach() for z in self._latents(traj, public_of_node)]
        pred = self.model.values(latents[0].view(h * b, -1), latents[1].view(h * b, -1))
        t = pred.shape[-1]
        pair = torch.from_numpy(traj.assignment).clamp(max=t - 1)  # (H, B, 2)
        followed = torch.from_numpy((traj.assignment < t).all(-1) & traj.valid)  # (H, B)
        pred = pred.view(h * b, t * t).gather(1, (pair[..., 0] * t + pair[..., 1]).view(-1, 1)).view(h, b)
        prob = []
        for p in (0, 1):
            table = transformed[p][torch.from_numpy(traj.infoset[..., p])]  # (H, B, T, A)
            chosen = table.gather(2, pair[..., p, None, None].expand(h, b, 1, table.shape[-1])).squeeze(2)
            prob.append(chosen.gather(-1, torch.from_numpy(traj.action[..., p])[..., None]).squeeze(-1))
        mu = torch.from_numpy(traj.behaviour[..., 0] * traj.behaviour[..., 1]).float()
        ratio = prob[0] * prob[1] / mu
        reward = torch.from_numpy(traj.reward).float()
        # L^V: v_θ's entry for the followed transformation pair regressed on V-trace targets of that pair
        targets = vtrace_targets(pred, reward, ratio, followed, rho_bar=s.rho_bar, c_bar=s.c_bar)
        mask = followed.float()
        return ((pred - targets).pow(2) * mask).sum() / mask.sum().clamp_min(1.0)

    def update(self, parts: ModelLosses) -> dict[str, float]:
        """One Adam step on ``L^A + L^S + L^M + L^V`` from :meth:`losses`'s output; returns the losses as floats."""
        total = parts.abstraction + parts.assignment + parts.model + parts.value
        self.optimizer.zero_grad()
        total.backward()
        self.optimizer.step()
        out = {
            "abstraction_loss": float(parts.abstraction.detach()),
            "assignment_loss": float(parts.assignment.detach()),
            "model_loss": float(parts.model.detach()),
            "value_loss": float(parts.value.detach()),
        }
        out.update({f"model_{k}": v for k, v in parts.model_parts.items()})
        return out
