"""GUI-Shift (ICLR 2026, arXiv 2505.12493): K-step GUI transition as a self-supervised RL task.

The drop-in components: the rule reward of the official script (:mod:`iclr26.guishift.reward`), the data filter and
a GRPO step on :mod:`iclr26.common.grpo` (:mod:`iclr26.guishift.training`), K-step pair construction from
exploration (:mod:`iclr26.guishift.data`), a procedural GUI world (:mod:`iclr26.guishift.env`; as a gymnasium
environment in :mod:`iclr26.guishift.gym_env`, which needs the ``rl`` extra) and a CNN policy
(:mod:`iclr26.guishift.policy`).
"""

from iclr26.guishift.data import Trajectory, TransitionSet, explore, goal_items, kstep_pairs
from iclr26.guishift.env import (
    ACTION_TYPES,
    DIRECTIONS,
    Element,
    StepResult,
    World,
    effective_actions,
    generate_world,
    optimal_first_actions,
    render,
    shortest_paths,
    step,
)
from iclr26.guishift.policy import GUIPolicy, decode_actions, encode_label, screens_to_tensor
from iclr26.guishift.reward import (
    ActionScore,
    action_reward,
    best_action_reward,
    format_reward,
    parse_answer,
    to_completion,
)
from iclr26.guishift.training import GRPOSettings, evaluate, grpo_step, mixed_groups, sample_rewards, sft_step

__all__ = [
    "ACTION_TYPES",
    "DIRECTIONS",
    "ActionScore",
    "Element",
    "GRPOSettings",
    "GUIPolicy",
    "StepResult",
    "Trajectory",
    "TransitionSet",
    "World",
    "action_reward",
    "best_action_reward",
    "decode_actions",
    "effective_actions",
    "encode_label",
    "evaluate",
    "explore",
    "format_reward",
    "generate_world",
    "goal_items",
    "grpo_step",
    "kstep_pairs",
    "mixed_groups",
    "optimal_first_actions",
    "parse_answer",
    "render",
    "sample_rewards",
    "screens_to_tensor",
    "sft_step",
    "shortest_paths",
    "step",
    "to_completion",
]
