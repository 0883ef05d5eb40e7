"""KERN (ICLR 2026, arXiv 2509.25913): the FFN-style MoE router ``γ · ReLU(ℓ2-norm(W x + b))`` and its family.

Drop-in components: :class:`Router` (Softmax, Sigmoid, Tanh, KERN and any member of the family via
:class:`RouterSpec`) and :class:`MoEFeedForward`, a top-k mixture-of-experts block for
:class:`iclr26.common.tinylm.TinyLM` (``TinyLM(cfg, ffn_factory=lambda i: MoEFeedForward(...))``).
"""

from iclr26.kern.moe import Dispatch, MoEFeedForward, PaddedDispatch, expert_capacity, group_by_expert, pad_by_expert
from iclr26.kern.router import (
    ROUTERS,
    GateCost,
    Router,
    RouterOutput,
    RouterSpec,
    TopK,
    activate,
    expert_counts,
    gate_cost,
    gate_scores,
    normalize,
    projection_flops,
    select_top_k,
    switch_balance_loss,
)

__all__ = [
    "ROUTERS",
    "Dispatch",
    "GateCost",
    "MoEFeedForward",
    "PaddedDispatch",
    "Router",
    "RouterOutput",
    "RouterSpec",
    "TopK",
    "activate",
    "expert_capacity",
    "expert_counts",
    "gate_cost",
    "gate_scores",
    "group_by_expert",
    "normalize",
    "pad_by_expert",
    "projection_flops",
    "select_top_k",
    "switch_balance_loss",
]
