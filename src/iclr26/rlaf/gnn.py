"""The message-passing GNN over the literal–clause graph, in plain torch (``index_add_``), batched over formulas.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053), the policy network, and the official
``src/model/{model,modules}.py`` (read for the architecture, not copied): an MLP encodes the ``log(1 + degree)``
feature of every node (one encoder shared by literals and clauses); each layer then

1. updates every clause from the mean of its literals: ``h_c ← LN(h_c + MLP_c([h_c ‖ mean_{l∈c} h_l]))``;
2. updates every literal from its complement and the mean of its clauses:
   ``h_l ← LN(h_l + MLP_l([h_l ‖ h_¬l ‖ mean_{c∋l} h_c]))``.

Why plain torch and not torch-geometric: the graph is one bipartite edge list plus the fixed complement pairing
``l ^ 1``; mean aggregation over it is two ``index_add_`` calls, which keeps the module free of a heavy optional
dependency (torch-geometric is not installed here) with no loss of speed at these sizes.

Shape glossary: L literals; C clauses; E occurrences (edges); D channels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from iclr26.rlaf.graph import LiteralClauseGraph

__all__ = ["GNNLayer", "LiteralClauseGNN", "mean_aggregate"]


def mean_aggregate(values: Tensor, src: Tensor, dst: Tensor, num_dst: int) -> Tensor:
    """Mean of ``values[src[e]]`` over the edges ``e`` that end in each destination node.

    Args:
        values: ``(N_src, D)`` source node states.
        src: ``(E,)`` source node of each edge.
        dst: ``(E,)`` destination node of each edge.
        num_dst: number of destination nodes.

    Returns:
        ``(num_dst, D)``; a node without edges gets zeros.
    """
    total = values.new_zeros(num_dst, values.shape[1]).index_add_(0, dst, values[src])
    count = torch.bincount(dst, minlength=num_dst).clamp_min(1).to(values.dtype)
    return total / count.unsqueeze(1)


def _mlp(d_in: int, d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d), nn.SiLU(), nn.Linear(d, d))


class GNNLayer(nn.Module):
    """One round of literal→clause and clause→literal message passing with residuals and LayerNorm.

    Args:
        channels: ``D``.
    """

    def __init__(self, *, channels: int) -> None:
        super().__init__()
        self.cls_update = _mlp(2 * channels, channels)
        self.lit_update = _mlp(3 * channels, channels)
        self.cls_norm = nn.LayerNorm(channels)
        self.lit_norm = nn.LayerNorm(channels)

    def forward(self, h_lit: Tensor, h_cls: Tensor, graph: LiteralClauseGraph) -> tuple[Tensor, Tensor]:
        """``(L, D), (C, D) → (L, D), (C, D)``."""
        # step 1: h_c ← LN(h_c + MLP_c([h_c ‖ mean_{l∈c} h_l]))
        lit_to_cls = mean_aggregate(h_lit, graph.edge_lit, graph.edge_cls, h_cls.shape[0])
        h_cls = self.cls_norm(h_cls + self.cls_update(torch.cat([h_cls, lit_to_cls], dim=1)))
        # step 2: h_l ← LN(h_l + MLP_l([h_l ‖ h_¬l ‖ mean_{c∋l} h_c])), complement of 2u ↔ 2u + 1
        complement = h_lit.view(-1, 2, h_lit.shape[1]).flip(1).reshape(h_lit.shape)  # (L, D)
        cls_to_lit = mean_aggregate(h_cls, graph.edge_cls, graph.edge_lit, h_lit.shape[0])
        h_lit = self.lit_norm(h_lit + self.lit_update(torch.cat([h_lit, complement, cls_to_lit], dim=1)))
        return h_lit, h_cls


class LiteralClauseGNN(nn.Module):
    """Encoder plus ``num_layers`` :class:`GNNLayer`; returns the literal embeddings.

    Args:
        channels: hidden width ``D`` (paper: 256).
        num_layers: message-passing rounds (paper: 10).
    """

    def __init__(self, *, channels: int, num_layers: int) -> None:
        super().__init__()
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        self.channels = channels
        self.num_layers = num_layers
        self.encoder = nn.Sequential(
            nn.Linear(1, 2 * channels), nn.SiLU(), nn.Linear(2 * channels, channels), nn.LayerNorm(channels)
        )
        self.layers = nn.ModuleList(GNNLayer(channels=channels) for _ in range(num_layers))

    def forward(self, graph: LiteralClauseGraph) -> Tensor:
        """The ``(L, D)`` literal embeddings of the batch."""
        h_lit = self.encoder(graph.lit_features)
        h_cls = self.encoder(graph.cls_features)
        for layer in self.layers:
            h_lit, h_cls = layer(h_lit, h_cls, graph)
        return h_lit
