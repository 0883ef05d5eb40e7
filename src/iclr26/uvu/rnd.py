"""Baseline: random network distillation (RND, Burda et al. 2019) on ``(s, a, z)`` — a *myopic* novelty signal.

RND regresses a predictor ``f(s, a, z; ϑ)`` directly onto a fixed random network ``g(s, a, z; ψ₀)`` at the data
points, ``L(ϑ) = 1/(2N) Σ (f(s_i, a_i, z_i) - g(s_i, a_i, z_i))²``, and reports ``(f - g)²``. It is UVU with
``γ = 0``: only the novelty of the queried input itself counts, not that of the future states ``π_z`` would visit.
This is the contrast the paper draws between UVU and RND (abstract, §1).
"""

from __future__ import annotations

from torch import Tensor, nn

from iclr26.uvu.data import Transitions
from iclr26.uvu.model import check_independent
from iclr26.uvu.td import td_loss, uvu_uncertainty


class RND(nn.Module):
    """Random network distillation on universal inputs ``(s, a, z)``.

    Args:
        predictor: trained network ``f(·; ϑ)``, ``(states, actions, tasks) -> (B, H)``.
        target: fixed random network ``g(·; ψ₀)`` with outputs of the same shape (frozen in place).

    Raises:
        TypeError: if ``predictor`` or ``target`` is not a ``torch.nn.Module``.
        ValueError: if ``predictor is target``, they share parameters or have identical values, or their signatures
            (inputs, number of outputs; :func:`iclr26.uvu.model.signature_of`) differ.
    """

    def __init__(self, predictor: nn.Module, target: nn.Module) -> None:
        super().__init__()
        check_independent(predictor, target, names=("predictor", "target"))
        self.predictor = predictor
        self.target = target.requires_grad_(False)

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The predictor's parameters."""
        return list(self.predictor.parameters())

    def loss(self, batch: Transitions) -> Tensor:
        """``1/(2N) Σ (f(s, a, z) - g(s, a, z))²`` on the batch's ``(s, a, z)`` (scalar)."""
        f = self.predictor(batch.states, batch.actions, batch.tasks)
        g = self.target(batch.states, batch.actions, batch.tasks)
        if f.shape != g.shape:
            raise ValueError(f"predictor output {tuple(f.shape)} and target output {tuple(g.shape)} differ in shape")
        # RND = UVU with γ = 0: regress f onto g at the data points only, so the novelty is myopic
        return td_loss(f, g)

    def uncertainty(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """``(f(s, a, z) - g(s, a, z))²`` averaged over heads: ``(B,)``."""
        return uvu_uncertainty(self.predictor(states, actions, tasks), self.target(states, actions, tasks))
