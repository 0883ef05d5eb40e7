"""NextStep-1 (ICLR 2026, arXiv 2508.10711): autoregressive image generation on continuous tokens with a
flow-matching head.

Drop-in parts: :class:`FlowMatchingHead` (put it on any AR transformer: condition it on the hidden state before each
continuous token and add ``head.loss(tokens, c)`` to the LM loss), :func:`flow_matching_loss`,
:func:`sample_flow` (the per-token SDE/ODE sampler with guidance via :func:`cfg_combine`), the tokenizer
(:class:`ConvAutoencoder`, :func:`channel_norm`, :func:`patchify`), and the full pipeline
(:class:`ARTransformer`, :func:`nextstep_loss`, :func:`generate`).
"""

from iclr26.nextstep.heads import (
    AdaLNMLP,
    DiscreteHead,
    FlowMatchingHead,
    RegressionHead,
    flow_matching_loss,
    interpolate,
    logit_normal_t,
)
from iclr26.nextstep.model import ARTransformer, nextstep_loss
from iclr26.nextstep.sampler import cfg_combine, generate, sample_flow, timestep_grid, velocity_to_score
from iclr26.nextstep.tokenizer import (
    ConvAutoencoder,
    Tokenizer,
    TokenizerSpec,
    VectorQuantizer,
    channel_norm,
    patchify,
    train_tokenizer,
    unpatchify,
)

__all__ = [
    "ARTransformer",
    "AdaLNMLP",
    "ConvAutoencoder",
    "DiscreteHead",
    "FlowMatchingHead",
    "RegressionHead",
    "Tokenizer",
    "TokenizerSpec",
    "VectorQuantizer",
    "cfg_combine",
    "channel_norm",
    "flow_matching_loss",
    "generate",
    "interpolate",
    "logit_normal_t",
    "nextstep_loss",
    "patchify",
    "sample_flow",
    "timestep_grid",
    "train_tokenizer",
    "unpatchify",
    "velocity_to_score",
]
