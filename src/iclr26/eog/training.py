"""EoG's three-stage pipeline on any :class:`~iclr26.eog.policy.Policy`, and its evaluation.

Explore-on-Graph (ICLR 2026, arXiv 2602.21728), §3: **(1)** SFT cold start on long-CoT KG reasoning traces;
**(2)** RL phase 1, GRPO with the outcome reward ``R_out`` = answer-set F1; **(3)** RL phase 2, GRPO with
``R_out + R_path`` (:mod:`iclr26.eog.rewards`).

One GRPO step of :func:`grpo_stage`:

1. draw ``Q`` questions of the RL pool (``torch.Generator`` from the stage seed; the same draws for every arm that
   shares the seed);
2. sample ``G`` completions each (:meth:`Policy.sample`);
3. score each with :func:`~iclr26.eog.rewards.eog_reward` and the stage's weights → rewards ``(Q, G)``; the path
   term uses the question's gold path, or a *placebo* path (random off-path graph triples of the same count; the
   control arm);
4. :meth:`Policy.grpo_update` (group-normalised advantages, clipped surrogate, token mean).

Glossary: ``Q`` prompts per step, ``G`` samples per prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, shard_range
from iclr26.common.seeding import derive_seed
from iclr26.eog.data import KGQAExample, make_trace
from iclr26.eog.policy import Policy
from iclr26.eog.rewards import RewardWeights, eog_reward, extract_triples, parse_output

__all__ = ["EvalResult", "StageCurves", "evaluate", "grpo_stage", "placebo_paths", "score_samples", "sft_stage"]


def sft_stage(
    policy: Policy,
    examples: Sequence[KGQAExample],
    *,
    steps: int,
    batch_size: int,
    seed: int,
    cite_prob: float = 1.0,
    detour_prob: float = 0.0,
    progress: Callable[[], None] | None = None,
) -> list[float]:
    """Stage 1 (or the imitation baseline's extra SFT): ``steps`` updates on traces of random ``examples``.

    Each step draws ``batch_size`` examples (with replacement) and writes a fresh trace for each
    (:func:`~iclr26.eog.data.make_trace`, with ``cite_prob`` / ``detour_prob``).

    Returns:
        The loss per step.
    """
    if not examples:
        raise ValueError("sft_stage needs at least one example")
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        batch = [examples[int(i)] for i in rng.integers(len(examples), size=batch_size)]
        traces = [make_trace(e, rng, cite_prob=cite_prob, detour_prob=detour_prob) for e in batch]
        losses.append(policy.sft_update(batch, traces))
        if progress is not None:
            progress()
    return losses


def placebo_paths(examples: Sequence[KGQAExample], seed: int) -> dict[str, list[list[list[str]]]]:
    """Per question, a placebo "gold" path: as many graph triples as the gold path has, drawn off the gold path.

    Returns:
        ``{qid: [[s, r, o], ...] as one path}``; fewer triples where the graph has fewer off-path triples.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for e in examples:
        gold = set(e.gold_triples)
        off = [t for t in e.graph if t not in gold]
        k = min(len(off), len(set(gold)))  # as many triples as the gold path: R_path's scale is unchanged
        picks = [off[int(i)] for i in rng.choice(len(off), size=k, replace=False)] if k else []
        out[e.qid] = [[list(t) for t in picks]]
    return out


@dataclass
class StageCurves:
    """What one GRPO stage measured per step (plain data).

    Attributes:
        reward, f1, path: mean total reward, F1 and (gold) path reward of the step's samples.
        length: mean completion length in tokens.
        valid: share of parseable completions.
        n_tokens: completion tokens sampled in all.
    """

    reward: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    path: list[float] = field(default_factory=list)
    length: list[float] = field(default_factory=list)
    valid: list[float] = field(default_factory=list)
    n_tokens: int = 0


def grpo_stage(
    policy: Policy,
    pool: Sequence[KGQAExample],
    *,
    steps: int,
    prompts_per_step: int,
    group_size: int,
    weights: RewardWeights,
    seed: int,
    path_override: dict[str, list[list[list[str]]]] | None = None,
    progress: Callable[[], None] | None = None,
    per_prompt_seeds: bool = False,
    world: World = SINGLE,
) -> StageCurves:
    """Stages 2–3: ``steps`` GRPO steps with reward weights ``weights`` (module docstring, steps 1–4).

    Args:
        policy: the policy (updated in place; data parallel over ``world`` after ``policy.distribute``).
        pool: the RL questions.
        steps: GRPO steps.
        prompts_per_step: ``Q``.
        group_size: ``G``.
        weights: the reward weights (:data:`~iclr26.eog.rewards.F1_ONLY`, :data:`~iclr26.eog.rewards.F1_PLUS_PATH`).
        seed: seeds the question draws and the sampling.
        path_override: ``{qid: path}`` used by the reward's path term instead of the gold path (the placebo
            control); the curves' ``path`` still reports the gold path reward.
        progress: called after each step.
        per_prompt_seeds: sample each prompt's ``G`` completions from a seed of its own
            (``derive_seed(step seed, "prompt", q)``, ``q`` its index in the step's draw; :meth:`Policy.sample_prompts`)
            instead of one stream for the batch. Required under torchrun, where each rank takes its contiguous
            shard of the ``Q`` prompts (:func:`~iclr26.common.distributed.shard_range`), scores it, updates through
            the policy's data-parallel ``grpo_update``, and the curves are summed over the ranks: a run on ``N`` ranks
            draws the completions of a one-process run with ``per_prompt_seeds=True`` and follows its trajectory up
            to float summation order.
        world: the ranks (``ctx.world``).

    Returns:
        :class:`StageCurves`.
    """
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 for a group-relative advantage, got {group_size}")
    if world.is_distributed and not per_prompt_seeds:
        raise ValueError("under torchrun grpo_stage needs per_prompt_seeds=True (one stream cannot be sharded)")
    if prompts_per_step < world.size:
        raise ValueError(f"prompts_per_step={prompts_per_step} must be >= the number of ranks ({world.size})")
    if getattr(getattr(policy, "lm", None), "parallel", None) == "fsdp" and prompts_per_step % world.size:
        raise ValueError(
            f"prompts_per_step={prompts_per_step} must be a multiple of the number of ranks ({world.size}) with "
            "parallel=fsdp (every rank makes the same generation calls)"
        )
    gen = torch.Generator().manual_seed(seed % 2**63)
    shard = shard_range(prompts_per_step, world.rank, world.size)
    n_rows = prompts_per_step * group_size
    curves = StageCurves()
    for _ in range(steps):
        # Step 1: the step's Q questions (the same draw on every rank)
        idx = torch.randint(len(pool), (prompts_per_step,), generator=gen).tolist()
        step_seed = int(torch.randint(2**31, (1,), generator=gen))
        # Step 2: G completions each, one stream for the batch or one seed per prompt of this rank's shard
        if per_prompt_seeds:
            batch = [pool[idx[q]] for q in shard]
            seeds = [derive_seed(step_seed, "prompt", q) % 2**31 for q in shard]
            samples = policy.sample_prompts(batch, group_size=group_size, seeds=seeds)
        else:
            batch = [pool[i] for i in idx]
            samples = policy.sample(batch, group_size=group_size, seed=step_seed)
        # Step 3: rewards (Q_r, G); step 4: the GRPO update
        # RL phase 1 rewards R_out (answer-set F1); phase 2 the joint R = R_out + R_path (``weights``)
        totals, f1s, paths, valid = score_samples(samples, batch, group_size, weights, path_override)
        rewards = torch.tensor(totals, dtype=torch.float64).reshape(len(batch), group_size)
        policy.grpo_update(samples, rewards)
        sums = all_reduce_sum([float(np.sum(v)) for v in (totals, f1s, paths, valid, samples.n_tokens)])
        curves.reward.append(sums[0] / n_rows)
        curves.f1.append(sums[1] / n_rows)
        curves.path.append(sums[2] / n_rows)
        curves.valid.append(sums[3] / n_rows)
        curves.length.append(sums[4] / n_rows)
        curves.n_tokens += int(sums[4])
        if progress is not None:
            progress()
    return curves


def score_samples(
    samples, batch: Sequence[KGQAExample], group_size: int, weights: RewardWeights, path_override
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Step 3: total reward, F1, gold path reward and validity of each sampled row (row ``q·G + g`` answers
    ``batch[q]``); with ``path_override`` the path term of a valid row scores the override path instead."""
    totals, f1s, paths, valid = [], [], [], []
    for row, text in enumerate(samples.texts):
        e = batch[row // group_size]
        scored = eog_reward(text, e.answers, e.path_as_lists(), weights=weights)
        total = scored.total
        if path_override is not None and scored.valid:
            # placebo control: R_path against off-path triples, so a gain of EoG must come from the gold path itself
            total = eog_reward(text, e.answers, path_override[e.qid], weights=weights).total
        totals.append(total)
        f1s.append(scored.f1)
        paths.append(scored.path)
        valid.append(float(scored.valid))
    return totals, f1s, paths, valid


@dataclass(frozen=True)
class EvalResult:
    """Greedy evaluation of one split, per question (in the split's order) and as means.

    Attributes:
        hits_at_1: official (lenient) Hits@1 per question.
        f1: answer-set F1 per question.
        faithfulness: share of the distinct gold triples the reasoning cites (the whole text when it has no
            ``<answer>``), whatever the answer.
        length: completion length in tokens.
        off_path: cited triples that are on no gold path (futile exploration).
        valid: whether the output parsed.
    """

    hits_at_1: list[float]
    f1: list[float]
    faithfulness: list[float]
    length: list[int]
    off_path: list[int]
    valid: list[bool]

    def means(self) -> dict[str, float]:
        """Mean of every field."""
        return {
            "hits_at_1": float(np.mean(self.hits_at_1)),
            "f1": float(np.mean(self.f1)),
            "faithfulness": float(np.mean(self.faithfulness)),
            "length": float(np.mean(self.length)),
            "off_path": float(np.mean(self.off_path)),
            "valid": float(np.mean(self.valid)),
        }


def faithfulness(text: str, example: KGQAExample) -> float:
    """Share of the example's distinct gold triples cited in the reasoning (case-insensitive)."""
    parsed = parse_output(text)
    gold = {tuple(f.lower() for f in t) for t in example.gold_triples}
    if not gold:
        return 0.0
    cited = {tuple(f.lower() for f in t) for t in extract_triples(parsed.reasoning or text)}
    # path faithfulness: unlike R_path it ignores duplicate gold triples and scores even a malformed output
    return len(cited & gold) / len(gold)


def evaluate(policy: Policy, examples: Sequence[KGQAExample], *, batch_size: int = 64) -> EvalResult:
    """Greedy completions of ``examples`` scored by the official rules (:class:`EvalResult`)."""
    hits, f1, faith, length, off, valid = [], [], [], [], [], []
    for start in range(0, len(examples), batch_size):
        batch = list(examples[start : start + batch_size])
        samples = policy.greedy(batch)
        for e, text, n in zip(batch, samples.texts, samples.n_tokens, strict=True):
            scored = eog_reward(text, e.answers, e.path_as_lists())
            hits.append(scored.hits_at_1)
            f1.append(scored.f1)
            faith.append(faithfulness(text, e))
            length.append(int(n))
            off.append(scored.n_off_path)
            valid.append(scored.valid)
    return EvalResult(hits, f1, faith, length, off, valid)
