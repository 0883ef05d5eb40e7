"""The hierarchical hypergraph convolution of ST-HHOL: level one (context), level two (co-occurrence).

ST-HHOL: Spatio-Temporal Hierarchical Hypergraph Online Learning for Crime Prediction, ICLR 2026, OpenReview
Nc3dl43s5Z. The official code (777Rebecca/ST-HHOL) could not be read here; the structure follows a third-party
summary of the paper (``../shared/papers/16-sthhol.md``, tagged [unverified] there).

Both levels are the degree-normalised hypergraph convolution

    X' = D_v^{-1} H W D_e^{-1} H^T X,     D_v = diag(H w),  D_e = diag(1^T H),

with a non-negative incidence ``H`` (nodes × hyperedges) and hyperedge weights ``w`` (all 1 here). The summary says
only "degree-normalised"; this is the row-normalised (random-walk) form, where HGNN (Feng et al., AAAI 2019) uses the
symmetric D_v^{-1/2} H W D_e^{-1} H^T D_v^{-1/2} (README: Deviations).

1. **Level one, heterogeneous** (:class:`ContextHypergraph`): one hyperedge per (region n, category c) joins the
   crime node x_{n,c} (weight 1) with the region's context nodes s_{n,m} (weights a_{c,m} = softplus(Θ_e[c, m]),
   the learnable, category-specific contribution of context factor m). Every crime node lies in its own hyperedge
   only, so its convolved feature is the hyperedge mean e_{n,c} = (x_{n,c} + Σ_m a_{c,m} s_{n,m}) / (1 + Σ_m a_{c,m});
   the pattern node is x̃_{n,c} = x_{n,c} + GELU(W [x_{n,c} ‖ e_{n,c}]).
2. **Level two, homogeneous** (:class:`CooccurrenceHypergraph`): ``H_o`` hyperedges over the N·C pattern nodes with
   the learnable incidence H = softplus(Θ_o)^T ∈ R^{NC × H_o}; x̂ = x̃ + GELU(W · conv(x̃)).

Shape glossary: ``B`` batch (days), ``N`` regions, ``C`` crime categories, ``M`` context factors, ``D`` hidden
width, ``V`` nodes, ``E`` hyperedges.

Deviations: the exact nonlinearity and residual of the paper's f(σ(Θ_e [X ‖ S])) are not known; we use a residual
GELU layer. Incidence weights go through softplus so that the degrees stay positive.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["ContextHypergraph", "CooccurrenceHypergraph", "context_incidence", "hypergraph_conv"]


def hypergraph_conv(x: Tensor, incidence: Tensor, edge_weight: Tensor | None = None) -> Tensor:
    """Degree-normalised hypergraph convolution ``D_v^{-1} H W D_e^{-1} H^T X`` (no feature transform).

    A node in no hyperedge (zero degree) gets a zero output; an empty hyperedge contributes nothing.

    Args:
        x: ``(..., V, D)`` node features.
        incidence: ``(V, E)`` non-negative incidence weights ``H``.
        edge_weight: ``(E,)`` non-negative hyperedge weights ``w`` (default all 1).

    Returns:
        ``(..., V, D)`` the convolved node features.

    Raises:
        ValueError: if ``incidence`` is not 2-D, does not match ``x``'s node dimension, or has negative or
            non-finite entries; if ``edge_weight`` has the wrong shape or negative entries.
    """
    if incidence.dim() != 2:
        raise ValueError(f"incidence must be (V, E), got shape {tuple(incidence.shape)}")
    if x.dim() < 2 or x.shape[-2] != incidence.shape[0]:
        raise ValueError(f"x must be (..., V={incidence.shape[0]}, D) to match incidence, got shape {tuple(x.shape)}")
    if not torch.isfinite(incidence).all() or (incidence < 0).any():
        raise ValueError("incidence must be finite and non-negative")
    if edge_weight is None:
        edge_weight = torch.ones(incidence.shape[1], dtype=incidence.dtype, device=incidence.device)
    elif edge_weight.shape != (incidence.shape[1],) or (edge_weight < 0).any():
        raise ValueError(f"edge_weight must be ({incidence.shape[1]},), non-negative; got {tuple(edge_weight.shape)}")
    tiny = torch.finfo(incidence.dtype).tiny
    d_e = incidence.sum(dim=0)  # (E,)
    d_v = incidence @ edge_weight  # (V,)
    # D_e^{-1} H^T X: the weighted mean of each hyperedge's members
    edge_feat = (incidence.transpose(0, 1) @ x) / d_e.clamp_min(tiny).unsqueeze(-1)  # (..., E, D)
    # D_v^{-1} H W: each node averages its hyperedges
    out = (incidence * edge_weight) @ edge_feat  # (..., V, D)
    return out / d_v.clamp_min(tiny).unsqueeze(-1)


def context_incidence(a: Tensor, n_regions: int) -> Tensor:
    """The explicit level-one incidence over crime then context nodes (for tests and inspection).

    Node order: crime nodes (n, c) at ``n*C + c``, then context nodes (n, m) at ``N*C + n*M + m``; hyperedge
    (n, c) at ``n*C + c``.

    Args:
        a: ``(C, M)`` non-negative contribution of context factor m to a category-c hyperedge.
        n_regions: ``N``.

    Returns:
        ``(N*C + N*M, N*C)`` incidence.
    """
    n_cat, n_ctx = a.shape
    h = torch.zeros(n_regions * (n_cat + n_ctx), n_regions * n_cat, dtype=a.dtype)
    for n in range(n_regions):
        for c in range(n_cat):
            h[n * n_cat + c, n * n_cat + c] = 1.0
            for m in range(n_ctx):
                h[n_regions * n_cat + n * n_ctx + m, n * n_cat + c] = a[c, m]
    return h


class ContextHypergraph(nn.Module):
    """Level one: region- and category-specific hyperedges joining crime and context nodes.

    e_{n,c} = (x_{n,c} + Σ_m a_{c,m} s_{n,m}) / (1 + Σ_m a_{c,m}),  a = softplus(Θ_e),
    x̃_{n,c} = x_{n,c} + GELU(W [x_{n,c} ‖ e_{n,c}]).

    ``e`` equals :func:`hypergraph_conv` with :func:`context_incidence` on the crime nodes.

    Args:
        n_categories: ``C``.
        n_context: ``M`` (0 is allowed: then e = x).
        d: hidden width ``D``.
    """

    def __init__(self, n_categories: int, n_context: int, d: int) -> None:
        super().__init__()
        if n_categories < 1 or n_context < 0 or d < 1:
            raise ValueError(f"need n_categories >= 1, n_context >= 0, d >= 1, got {n_categories}, {n_context}, {d}")
        self.theta_e = nn.Parameter(torch.zeros(n_categories, n_context))  # Θ_e
        self.mix = nn.Linear(2 * d, d)

    def weights(self) -> Tensor:
        """``(C, M)`` the incidence weights a = softplus(Θ_e)."""
        # softplus keeps each context weight a_{c,m} and so the hyperedge degrees positive
        return F.softplus(self.theta_e)

    def hyperedge_means(self, x: Tensor, s: Tensor) -> Tensor:
        """``(B, N, C, D)`` the level-one hyperedge features e_{n,c} for crime ``x`` (B, N, C, D), context ``s``
        (B, N, M, D)."""
        if x.dim() != 4 or s.dim() != 4 or s.shape[:2] != x.shape[:2] or s.shape[3] != x.shape[3]:
            raise ValueError(f"x must be (B, N, C, D) and s (B, N, M, D), got {tuple(x.shape)} and {tuple(s.shape)}")
        if x.shape[2] != self.theta_e.shape[0] or s.shape[2] != self.theta_e.shape[1]:
            raise ValueError(
                f"expected C={self.theta_e.shape[0]} categories and M={self.theta_e.shape[1]} context factors, got "
                f"x {tuple(x.shape)}, s {tuple(s.shape)}"
            )
        a = self.weights()
        # e_{n,c} = (x_{n,c} + Σ_m a_{c,m} s_{n,m}) / (1 + Σ_m a_{c,m})
        return (x + torch.einsum("cm,bnmd->bncd", a, s)) / (1.0 + a.sum(dim=1)).unsqueeze(-1)

    def forward(self, x: Tensor, s: Tensor) -> Tensor:
        """``(B, N, C, D)`` pattern nodes x̃ from crime ``x`` (B, N, C, D) and context ``s`` (B, N, M, D)."""
        e = self.hyperedge_means(x, s)
        # the paper's X̃ = f(σ(Θ_e [X ‖ S])), as a residual GELU layer on [x ‖ e]
        return x + F.gelu(self.mix(torch.cat([x, e], dim=-1)))


class CooccurrenceHypergraph(nn.Module):
    """Level two: ``H_o`` learnable hyperedges over the N·C pattern nodes (co-occurrence relations).

    H = softplus(Θ_o)^T ∈ R^{NC × H_o},  x̂ = x̃ + GELU(W · D_v^{-1} H D_e^{-1} H^T x̃).

    Args:
        n_nodes: ``N*C``.
        n_edges: ``H_o`` (64 in the paper, per the summary [unverified]).
        d: hidden width ``D``.
        generator: draws the initial Θ_o (small noise so that hyperedges differ).
    """

    def __init__(self, n_nodes: int, n_edges: int, d: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if n_nodes < 1 or n_edges < 1 or d < 1:
            raise ValueError(f"need n_nodes, n_edges, d >= 1, got {n_nodes}, {n_edges}, {d}")
        self.theta_o = nn.Parameter(0.1 * torch.randn(n_edges, n_nodes, generator=generator))  # Θ_o
        self.proj = nn.Linear(d, d)

    def incidence(self) -> Tensor:
        """``(N*C, H_o)`` the incidence H = softplus(Θ_o)^T."""
        # learnable incidence Θ_o (H_o hyperedges over N·C nodes), softplus for positive degrees
        return F.softplus(self.theta_o).transpose(0, 1)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, N, C, D)`` → ``(B, N, C, D)``: the convolution over the flattened N·C nodes, residual."""
        if x.dim() != 4 or x.shape[1] * x.shape[2] != self.theta_o.shape[1]:
            raise ValueError(f"x must be (B, N, C, D) with N*C={self.theta_o.shape[1]}, got {tuple(x.shape)}")
        b, n, c, d = x.shape
        conv = hypergraph_conv(x.reshape(b, n * c, d), self.incidence()).reshape(b, n, c, d)  # (B, N, C, D)
        # level two: x̂ = x̃ + GELU(W · D_v^{-1} H D_e^{-1} H^T x̃)
        return x + F.gelu(self.proj(conv))
