"""Explore-on-Graph (ICLR 2026, arXiv 2602.21728): RL with answer and path rewards for question answering over a KG.

The drop-in components: the reward functions of the official ``reward_func.py`` (:mod:`iclr26.eog.rewards`), the
RoG-style data loader and prompt layout (:mod:`iclr26.eog.data`), the synthetic typed KG with an OOD split
(:mod:`iclr26.eog.kg`), and the three-stage pipeline (SFT → GRPO(F1) → GRPO(F1 + path)) on either policy backend
(:mod:`iclr26.eog.training`, :mod:`iclr26.eog.policy`).
"""

from iclr26.eog.data import KGQAExample, compact_prompt, load_rog_jsonl, make_trace, official_prompt
from iclr26.eog.kg import KGTask, compositions, make_kg, make_question, make_task
from iclr26.eog.policy import PretrainedPolicy, Samples, TinyPolicy, WordVocab
from iclr26.eog.rewards import (
    F1_ONLY,
    F1_PLUS_PATH,
    OFFICIAL_RELEASED,
    RewardBreakdown,
    RewardWeights,
    answer_f1,
    eog_reward,
    extract_triples,
    flatten_path,
    hits_at_1,
    parse_output,
    path_reward,
)
from iclr26.eog.training import EvalResult, evaluate, grpo_stage, placebo_paths, sft_stage

__all__ = [
    "F1_ONLY",
    "F1_PLUS_PATH",
    "OFFICIAL_RELEASED",
    "EvalResult",
    "KGQAExample",
    "KGTask",
    "PretrainedPolicy",
    "RewardBreakdown",
    "RewardWeights",
    "Samples",
    "TinyPolicy",
    "WordVocab",
    "answer_f1",
    "compact_prompt",
    "compositions",
    "eog_reward",
    "evaluate",
    "extract_triples",
    "flatten_path",
    "grpo_stage",
    "hits_at_1",
    "load_rog_jsonl",
    "make_kg",
    "make_question",
    "make_task",
    "make_trace",
    "official_prompt",
    "parse_output",
    "path_reward",
    "placebo_paths",
    "sft_stage",
]
