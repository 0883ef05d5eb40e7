"""HICRA (ICLR 2026, arXiv 2509.03646): hierarchy-aware credit assignment for RL on LLM reasoning.

The drop-in components: :func:`hicra_advantages` (the advantage transform for any GRPO trainer with per-token
advantages), Strategic-Gram mining and the planning-token mask (:mod:`iclr26.hicra.grams`), and the diagnostics of the
two-phase dynamic (:mod:`iclr26.hicra.diagnostics`). :func:`hicra_step` (in :mod:`iclr26.hicra.pretrained_run`) is a
HICRA step on :mod:`iclr26.common.pretrained`'s rollouts; it is imported lazily (it needs ``transformers``).
"""

from iclr26.hicra.advantages import entropy_mask, hicra_advantages
from iclr26.hicra.diagnostics import masked_token_mean, relative_perplexity, semantic_entropy, token_entropy
from iclr26.hicra.grams import (
    GramCluster,
    StrategicGrams,
    cluster_counts,
    decoded_pieces,
    mine_strategic_grams,
    placebo_grams,
    planning_mask,
    planning_mask_batch,
)
from iclr26.hicra.task import AnswerCheck, Problem, Vocab, check_answer, make_problems, make_trace, split_problems

__all__ = [
    "AnswerCheck",
    "GramCluster",
    "Problem",
    "StrategicGrams",
    "Vocab",
    "check_answer",
    "cluster_counts",
    "decoded_pieces",
    "entropy_mask",
    "hicra_advantages",
    "make_problems",
    "make_trace",
    "masked_token_mean",
    "mine_strategic_grams",
    "placebo_grams",
    "planning_mask",
    "planning_mask_batch",
    "relative_perplexity",
    "semantic_entropy",
    "split_problems",
    "token_entropy",
]
