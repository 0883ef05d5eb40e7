"""The shared offline universal Q-function whose policy every uncertainty method evaluates (experiment side).

Not a contribution of the paper: the task-rejection experiment needs one policy ``π(s, z) = argmax_a Q(s, a, z)``
learned from the offline data, and then asks how well each uncertainty estimate predicts where that policy fails.
We train it with double DQN plus the conservative Q-learning regulariser of Kumar et al. (2020, CQL(H)) for
discrete actions:

    L(θ) = 1/(2N) Σ_i (Q(s_i, a_i, z_i) - y_i)² + α/N Σ_i (logsumexp_a Q(s_i, a, z_i) - Q(s_i, a_i, z_i)),
    y_i = r_i + γ (1 - done_i) Q_target(s'_i, argmax_a Q(s'_i, a, z_i), z_i).

Glossary: ``B`` batch, ``A`` discrete actions, ``D_s`` state features, ``D_z`` task features.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from iclr26.common.distributed import SINGLE, World
from iclr26.uvu.data import Transitions
from iclr26.uvu.training import LossLog, data_parallel_loss, shard_loss


class DiscreteQNetwork(nn.Module):
    """``Q(s, ·, z)``: an MLP from ``[s, z]`` to ``A`` action values.

    Args:
        state_dim: ``D_s``; task_dim: ``D_z``; num_actions: ``A``; hidden: hidden widths.
    """

    def __init__(self, state_dim: int, task_dim: int, num_actions: int, *, hidden: tuple[int, ...]) -> None:
        super().__init__()
        widths = (state_dim + task_dim, *hidden)
        layers: list[nn.Module] = []
        for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
            layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
        layers.append(nn.Linear(widths[-1], num_actions))
        self.body = nn.Sequential(*layers)

    def forward(self, states: Tensor, tasks: Tensor) -> Tensor:
        """``(B, A)`` action values."""
        return self.body(torch.cat([states, tasks], dim=-1))

    def greedy(self, states: Tensor, tasks: Tensor) -> Tensor:
        """``(B,)`` greedy actions ``argmax_a Q(s, a, z)`` (no gradient)."""
        with torch.no_grad():
            return self(states, tasks).argmax(dim=-1)


@dataclass(frozen=True)
class CQLConfig:
    """Hyperparameters of :func:`train_cql_dqn` (none from the UVU paper; chosen for the small GoToDoor data).

    Attributes:
        steps: gradient steps; batch_size: transitions per step; lr: Adam learning rate; gamma: discount;
        alpha: CQL regulariser weight α; target_every: steps between hard target-network updates.
    """

    steps: int
    batch_size: int
    lr: float
    gamma: float
    alpha: float
    target_every: int


def cql_loss(
    q: DiscreteQNetwork, q_target: DiscreteQNetwork, batch: Transitions, *, gamma: float, alpha: float
) -> Tensor:
    """Double-DQN TD loss plus the discrete CQL(H) regulariser (module docstring), scalar."""
    q_all = q(batch.states, batch.tasks)  # (B, A)
    q_sa = q_all.gather(1, batch.actions[:, None])[:, 0]  # (B,)
    with torch.no_grad():
        a_next = q.greedy(batch.next_states, batch.tasks)
        q_next = q_target(batch.next_states, batch.tasks).gather(1, a_next[:, None])[:, 0]
        # y = r + γ (1 - done) Q_target(s', argmax_a Q(s', a))
        y = batch.rewards + gamma * (1.0 - batch.dones) * q_next
    # CQL(H): α (logsumexp_a Q(s, a) - Q(s, a_data))
    conservative = (torch.logsumexp(q_all, dim=1) - q_sa).mean()
    return 0.5 * (q_sa - y).pow(2).mean() + alpha * conservative


def train_cql_dqn(
    q: DiscreteQNetwork,
    data: Transitions,
    config: CQLConfig,
    generator: torch.Generator,
    *,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
    world: World = SINGLE,
) -> list[float]:
    """Train ``q`` in place on ``data``; returns the loss of every step.

    Args:
        q: the network to train.
        data: offline transitions (``next_actions`` unused).
        config: hyperparameters.
        generator: minibatch sampling RNG.
        progress: optional wrapper of the step iterator (a progress bar).
        world: the processes training together (the run's ``ctx.world``); data parallel with more than one.

    Raises:
        FloatingPointError: if the loss becomes NaN or infinite (the step is named; lower ``config.lr``).
    """
    q_target = copy.deepcopy(q).requires_grad_(False)
    opt = torch.optim.Adam(q.parameters(), lr=config.lr)
    steps = range(config.steps) if progress is None else progress(range(config.steps))
    log = LossLog(next(q.parameters()).device, what="CQL loss", lr=config.lr)
    net = None
    if world.is_distributed:  # torchrun: DDP over this rank's shard of each global batch (uvu.training.shard_loss)
        net = data_parallel_loss(q, lambda b: cql_loss(q, q_target, b, gamma=config.gamma, alpha=config.alpha), world)
    for step in steps:
        if net is not None:
            loss, value = shard_loss(net, data.sample(config.batch_size, generator), world)
            log.add(value)
        else:
            batch = data.sample(config.batch_size, generator)
            loss = cql_loss(q, q_target, batch, gamma=config.gamma, alpha=config.alpha)
            log.add(loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % config.target_every == 0:
            q_target.load_state_dict(q.state_dict())
    return log.flush()
