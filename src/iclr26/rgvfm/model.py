"""The network shared by all five models: an MLP of (t, x) with SELU activations.

Architecture as in the official repository (olgatticus/rg-vfm, ``rvf/models/dynamics_models_euclidean.py``,
read through the code search): Linear(D + 1 → 64), then SELU-separated layers 64 → H → H → 64 → D.
The raw D-vector output is turned into an endpoint or a velocity by the flow that owns the network
(:mod:`iclr26.rgvfm.flows`), so every model has the identical parametrised function.

Shapes: ``B`` batch, ``D`` ambient dimension, ``H`` hidden width.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class TimeMLP(nn.Module):
    """f_θ(x, t) ∈ R^D for x ∈ R^D and t ∈ [0, 1].

    Args:
        ambient_dim: D, the size of x and of the output.
        hidden_dim: H, width of the two middle layers (official default 128).
        edge_dim: width of the first and last hidden layers (64 in the official code).
    """

    def __init__(self, ambient_dim: int, *, hidden_dim: int = 128, edge_dim: int = 64) -> None:
        super().__init__()
        if ambient_dim < 1 or hidden_dim < 1 or edge_dim < 1:
            raise ValueError(
                f"ambient_dim, hidden_dim and edge_dim must be positive, got {ambient_dim}, {hidden_dim}, {edge_dim}"
            )
        self.ambient_dim = ambient_dim
        self.net = nn.Sequential(
            nn.Linear(ambient_dim + 1, edge_dim),
            nn.SELU(),
            nn.Linear(edge_dim, hidden_dim),
            nn.SELU(),
            nn.Linear(hidden_dim, hidden_dim),
            nn.SELU(),
            nn.Linear(hidden_dim, edge_dim),
            nn.SELU(),
            nn.Linear(edge_dim, ambient_dim),
        )

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        """f_θ(x, t).

        Args:
            x: points, (B, D).
            t: times, (B, 1).

        Returns:
            (B, D) raw outputs.
        """
        return self.net(torch.cat([t, x], dim=-1))
