"""The paper's diagnostics of the two-phase dynamic: execution-token entropy and relative perplexity, semantic entropy.

Wang et al., ICLR 2026, arXiv 2509.03646, §2 (training dynamics):

- **token entropy** of the policy at a generated token, ``H_t = −Σ_v π(v | ·) log π(v | ·)``, averaged over the
  *execution* tokens (those outside every Strategic Gram); it falls early in training (phase 1, procedural
  consolidation);
- **relative perplexity** of the execution tokens, ``exp(mean −log π(o_t | ·))`` over them divided by its value at
  the first measurement;
- **semantic entropy**, the Shannon entropy of the frequency distribution of Strategic Grams (clusters) in the
  generated solutions, ``H = −Σ_k p_k log p_k`` with ``p_k = n_k / Σ_j n_j``; it rises later (phase 2, strategic
  exploration).

Glossary: ``B`` sequences, ``T`` tokens, ``V`` vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

__all__ = ["masked_token_mean", "relative_perplexity", "semantic_entropy", "token_entropy"]


def token_entropy(logits: Tensor) -> Tensor:
    """Entropy (nats) of the next-token distribution ``softmax(logits)`` at every position.

    Args:
        logits: ``(..., V)``.

    Returns:
        ``(...)``, computed with log-softmax (finite for any finite logits).

    Raises:
        ValueError: if ``logits`` has no vocabulary dimension.
    """
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have a vocabulary dimension, got shape {tuple(logits.shape)}")
    logp = torch.log_softmax(logits.float(), dim=-1)
    # token entropy of the two-phase analysis (execution vs planning tokens): H_t = −Σ_v π(v) log π(v)
    return -(logp.exp() * logp).sum(dim=-1)


def masked_token_mean(values: Tensor, mask: Tensor) -> float:
    """Mean of ``values`` over the true positions of ``mask`` (NaN if there are none).

    Raises:
        ValueError: if the shapes differ.
    """
    if values.shape != mask.shape:
        raise ValueError(f"mask must have the shape of values {tuple(values.shape)}, got {tuple(mask.shape)}")
    keep = mask.bool()
    if not keep.any():
        return math.nan
    return float(values.detach()[keep].double().mean())


def relative_perplexity(mean_nll: Sequence[float]) -> list[float]:
    """Perplexity ``exp(nll)`` of each measurement divided by that of the first.

    Args:
        mean_nll: mean negative log-likelihood (nats per token) of the execution tokens, one per measurement.

    Returns:
        ``exp(nll_k − nll_0)`` per measurement (1 at the first).

    Raises:
        ValueError: for an empty sequence or a non-finite first value.
    """
    if len(mean_nll) == 0:
        raise ValueError("mean_nll must hold at least one measurement")
    if not math.isfinite(mean_nll[0]):
        raise ValueError(f"the first mean_nll must be finite, got {mean_nll[0]}")
    # relative perplexity of the two-phase analysis: exp(nll_k) / exp(nll_0)
    return [math.exp(v - mean_nll[0]) if math.isfinite(v) else math.nan for v in mean_nll]


def semantic_entropy(counts: Mapping[str, int] | Sequence[int]) -> float:
    """Shannon entropy (nats) of the Strategic-Gram frequency distribution ``p_k = n_k / Σ n``.

    Args:
        counts: occurrences per cluster (:func:`iclr26.hicra.grams.cluster_counts`) or a plain list of counts.

    Returns:
        ``−Σ p_k log p_k`` over the clusters seen (0 if none or one was seen).

    Raises:
        ValueError: for a negative count.
    """
    values = list(counts.values()) if isinstance(counts, Mapping) else list(counts)
    if any(v < 0 for v in values):
        raise ValueError(f"counts must be non-negative, got {values}")
    total = sum(values)
    if total == 0:
        return 0.0
    # semantic entropy of the two-phase analysis: −Σ_k p_k log p_k, p_k = n_k / Σ n over the gram clusters
    return float(-sum((v / total) * math.log(v / total) for v in values if v > 0))
