"""BiasFreeBench (ICLR 2026, arXiv 2510.00232): response-level debiasing benchmark — prompts, training baselines,
judge and Bias-Free Score."""

from iclr26.biasfree.capability import Capability, probe_capability
from iclr26.biasfree.data import find_bbq, load_bbq, load_bbq_category, load_dpo, load_fairmt, load_sft
from iclr26.biasfree.items import CATEGORIES, BBQItem, PreferencePair, generate_items, generate_pairs
from iclr26.biasfree.judge import LLMJudge, combine_fairmt, judge_bbq, majority_vote, vote
from iclr26.biasfree.prompts import (
    METHODS,
    SelfHelpRewrite,
    cot_messages,
    option_order,
    parse_self_help,
    reflection_messages,
    self_aware_messages,
    self_help_messages,
    vanilla_messages,
)
from iclr26.biasfree.score import bfs, bfs_fairmt, bfs_paper, bootstrap_bfs, paired_bootstrap
from iclr26.biasfree.training import cosine_lr, negate_task_vector, reference_logprobs, train_pairs

__all__ = [
    "CATEGORIES",
    "METHODS",
    "BBQItem",
    "Capability",
    "LLMJudge",
    "PreferencePair",
    "SelfHelpRewrite",
    "bfs",
    "bfs_fairmt",
    "bfs_paper",
    "bootstrap_bfs",
    "combine_fairmt",
    "cosine_lr",
    "cot_messages",
    "find_bbq",
    "generate_items",
    "generate_pairs",
    "judge_bbq",
    "load_bbq",
    "load_bbq_category",
    "load_dpo",
    "load_fairmt",
    "load_sft",
    "majority_vote",
    "negate_task_vector",
    "option_order",
    "paired_bootstrap",
    "parse_self_help",
    "probe_capability",
    "reference_logprobs",
    "reflection_messages",
    "self_aware_messages",
    "self_help_messages",
    "train_pairs",
    "vanilla_messages",
    "vote",
]
