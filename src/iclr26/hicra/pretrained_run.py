"""HICRA on a pretrained LM (SmolLM2-135M-Instruct with LoRA) through :mod:`iclr26.common.pretrained`: the ``gpu``
preset's backend, and :func:`hicra_step`, the drop-in HICRA step for any :class:`~iclr26.common.pretrained.Rollout`.

One step (:func:`hicra_step`): score the rollout's texts → rewards ``(Q, G)``; ``Â = R − mean_group(R)``; the planning
mask from each completion's decoded pieces (:func:`~iclr26.hicra.grams.decoded_pieces` with the tokenizer's
``decode``) and the Strategic Grams; ``Â' = hicra_advantages(Â, mask, alpha)``; then
:func:`~iclr26.common.pretrained.grpo_step` with those per-token advantages.

Deviations (gpu preset only): the entropy arm uses the sampled token's surprisal ``−log π(o_t)`` as its per-token
entropy (a one-sample estimate; :mod:`iclr26.common.pretrained` exposes log-probs, not full distributions), and the
entropy diagnostics track that surprisal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from iclr26.common.distributed import SINGLE, World, all_reduce_sum, shard_range
from iclr26.common.grpo import group_relative_advantages, per_prompt_seeds
from iclr26.common.seeding import derive_seed
from iclr26.hicra.advantages import hicra_advantages
from iclr26.hicra.grams import (
    StrategicGrams,
    decoded_pieces,
    mine_strategic_grams,
    placebo_grams,
    planning_mask_batch,
    token_coverage,
)
from iclr26.hicra.task import Problem, check_answer, make_trace
from iclr26.hicra.training import ARMS, EVAL_CHUNK, RLCurves, StepTensors, amplified_tokens, prompt_seed

INSTRUCTION = "Reach the target with + - or * . Problem: "


def prompt_text(problem: Problem) -> str:
    """The raw (no chat template) prompt of a problem for the pretrained LM."""
    return INSTRUCTION + problem.prompt


@dataclass(frozen=True)
class HicraStep:
    """One HICRA step on a pretrained LM.

    Attributes:
        rewards: ``(Q, G)``.
        planning: ``(N, T)`` bool planning mask of the rollout.
        amplified: ``(N, T)`` bool tokens the step amplified.
        advantages: ``(N, T)`` the advantages used.
        loss: the step's ``−J``.
    """

    rewards: Tensor
    planning: Tensor
    amplified: Tensor
    advantages: Tensor
    loss: float


def hicra_step(
    lm,
    optimizer: torch.optim.Optimizer,
    rollout,
    problems: Sequence[Problem],
    grams: StrategicGrams,
    *,
    alpha: float = 0.2,
    amplify: StrategicGrams | str | None = "grams",
    clip_eps: float = 0.2,
    micro_batch_size: int = 8,
) -> HicraStep:
    """A GRPO step with HICRA's advantage on a rollout of :func:`iclr26.common.pretrained.sample_rollout`.

    Args:
        lm: the :class:`~iclr26.common.pretrained.PretrainedLM` (with LoRA adapters).
        optimizer: over its trainable parameters.
        rollout: ``N = Q·G`` completions, row-major.
        problems: the ``Q`` problems (one per group).
        grams: the Strategic Grams (planning mask and diagnostics).
        alpha: HICRA's ``α``.
        amplify: ``"grams"`` (HICRA), a placebo :class:`StrategicGrams`, ``"entropy"`` (top-surprisal tokens at the
            planning coverage) or ``None`` (plain GRPO).
        clip_eps: ratio clip.
        micro_batch_size: sequences per forward pass.

    Returns:
        :class:`HicraStep`.
    """
    from iclr26.common.pretrained import grpo_step, parallel_world

    G = rollout.group_size
    if len(problems) * G != len(rollout.texts):
        raise ValueError(f"problems: {len(problems)} problems x G={G} != {len(rollout.texts)} rollout rows")
    finished = [r != "length" for r in rollout.finish_reasons] or [True] * len(rollout.texts)
    rewards = torch.tensor(
        [
            check_answer(problems[i // G], t, finished=f).reward
            for i, (t, f) in enumerate(zip(rollout.texts, finished, strict=True))
        ]
    ).reshape(-1, G)
    # the paper's GRPO advantage Â = R − mean_group(R), without std division
    adv = group_relative_advantages(rewards, scale="none").reshape(-1)  # (N,)
    mask = rollout.mask.cpu()  # (N, T)
    width = mask.shape[1]
    pieces = [decoded_pieces(lm.tokenizer.decode, ids) for ids in rollout.completion_ids]
    planning = planning_mask_batch(pieces, grams, width=width) & mask
    if isinstance(amplify, StrategicGrams):
        arm = "placebo"
    elif amplify in ("grams", "entropy", None):
        arm = {"grams": "hicra", "entropy": "entropy", None: "grpo"}[amplify]
    else:
        raise ValueError(f"amplify must be 'grams', 'entropy', a StrategicGrams or None, got {amplify!r}")
    n_plan, n_real = all_reduce_sum([float(planning.sum()), float(mask.sum())])
    amplified = amplified_tokens(
        arm,
        planning=planning,
        placebo=planning_mask_batch(pieces, amplify, width=width) & mask if arm == "placebo" else None,
        entropy=-rollout.logp_old.cpu().float(),  # the sampled token's surprisal stands in for the entropy
        mask=mask,
        coverage=n_plan / max(1.0, n_real),
        world=parallel_world(lm),
    )
    # HICRA: Â' = Â + α|Â| on the amplified tokens; the GRPO arm (amplify None) is α = 0
    token_adv = hicra_advantages(adv, amplified, alpha=alpha if amplify is not None else 0.0, mask=mask)
    result = grpo_step(
        lm, optimizer, rollout, advantages=token_adv, clip_eps=clip_eps, micro_batch_size=micro_batch_size
    )
    return HicraStep(rewards, planning, amplified, token_adv, result.loss)


def accuracy(
    lm, problems: Sequence[Problem], max_new_tokens: int, *, world: World = SINGLE, chunk: int | None = None
) -> float:
    """Greedy accuracy on ``problems``: batches of ``chunk`` (None: one batch) dealt round-robin to the ranks and
    summed over them; under FSDP every forward is collective, so every rank decodes every batch."""
    fsdp = lm.parallel == "fsdp"
    size = chunk or len(problems)
    total = 0.0
    for c, start in enumerate(range(0, len(problems), size)):
        if fsdp or c % world.size == world.rank:
            part = problems[start : start + size]
            gen = lm.generate(
                [prompt_text(p) for p in part], max_new_tokens=max_new_tokens, temperature=0.0, chat=False
            )
            total += sum(
                check_answer(p, t, finished=r != "length").reward
                for p, t, r in zip(part, gen.texts, gen.finish_reasons, strict=True)
            )
    if world.is_distributed and not fsdp:
        (total,) = all_reduce_sum([total])
    return total / len(problems)


@dataclass(frozen=True)
class PretrainedSFT:
    """The pretrained backend's SFT start (unit ``sft``): LoRA weights and the mined grams."""

    adapter: dict[str, Tensor]
    losses: list[float]
    held_out_acc: float
    train_acc: float
    sampled_acc: float
    grams: StrategicGrams
    placebo: StrategicGrams
    coverage: dict[str, float]


def _load(config, device):
    from iclr26.common.pretrained import add_lora, load_pretrained

    lm = load_pretrained(device=str(device))
    return add_lora(lm, r=config.lora_r, seed=derive_seed(config.seed, "lora") % 2**31)


def _adapter_state(lm) -> dict[str, Tensor]:
    return {n: p.detach().cpu().clone() for n, p in lm.model.named_parameters() if p.requires_grad}


def _set_adapter(lm, state: dict[str, Tensor]) -> None:
    params = dict(lm.model.named_parameters())
    with torch.no_grad():
        for n, v in state.items():
            params[n].copy_(v.to(params[n].device))


def run_pretrained(config, train: Sequence[Problem], held_out: Sequence[Problem], ctx) -> tuple:
    """The experiment's steps 2–4 on SmolLM2 with LoRA; returns ``(sft, {arm: [RLCurves per seed]})``."""
    import numpy as np

    def sft_unit() -> PretrainedSFT:
        from iclr26.common.pretrained import sample_rollout, sft_step

        lm = _load(config, ctx.device)
        opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=config.pretrained_sft_lr)
        rng = np.random.default_rng(derive_seed(config.seed, "sft"))
        kinds = ("correct", "premature", "slip")
        weights = np.asarray(config.sft_mix) / sum(config.sft_mix)
        losses = []
        lm.model.train()
        for _ in range(config.pretrained_sft_steps):
            batch = [train[int(rng.integers(len(train)))] for _ in range(config.pretrained_sft_batch)]
            traces = [make_trace(p, kinds[int(rng.choice(3, p=weights))], rng) for p in batch]
            losses.append(sft_step(lm, opt, [prompt_text(p) for p in batch], traces, chat=False).loss)
        roll = sample_rollout(
            lm,
            [prompt_text(p) for p in train],
            group_size=1,
            max_new_tokens=config.max_new_tokens,
            chat=False,
            seed=derive_seed(config.seed, "mine") % 2**31,
        )
        correct = [t for p, t in zip(train, roll.texts, strict=True) if check_answer(p, t).reward > 0]
        if not correct:
            raise RuntimeError("the SFT policy solved no training problem; raise sft_steps")
        grams = mine_strategic_grams(
            correct,
            n_min=config.n_min,
            n_max=config.n_max,
            min_doc_frac=config.min_doc_frac,
            max_within=config.max_within,
            merge_jaccard=config.merge_jaccard,
        )

        def tokenize(text: str) -> list[str]:
            return decoded_pieces(lm.tokenizer.decode, lm.tokenizer(text, add_special_tokens=False)["input_ids"])

        placebo = placebo_grams(
            correct, grams, tokenize=tokenize, seed=derive_seed(config.seed, "placebo"), n_draws=config.placebo_draws
        )
        pieces = [tokenize(t) for t in correct]
        coverage = {name: token_coverage(pieces, g) for name, g in (("grams", grams), ("placebo", placebo))}
        return PretrainedSFT(
            _adapter_state(lm),
            losses,
            accuracy(lm, held_out, config.max_new_tokens),
            accuracy(lm, train, config.max_new_tokens),
            len(correct) / len(train),
            grams,
            placebo,
            coverage,
        )

    sft = ctx.unit("sft", sft_unit)

    def arm_unit(arm: str, i: int) -> RLCurves:
        from iclr26.common.pretrained import distribute

        lm = _load(config, ctx.device)
        _set_adapter(lm, sft.adapter)
        per_prompt = per_prompt_seeds(config.rollout_seeds, ctx.world)
        if per_prompt:
            distribute(lm, mode=config.parallel, world=ctx.world)  # no-op in one process
        return train_arm(config, lm, arm, i, sft, train, held_out, world=ctx.world, per_prompt=per_prompt)

    runs = {
        arm: [ctx.unit(f"rl-{arm}-seed{i}", lambda a=arm, i=i: arm_unit(a, i)) for i in range(config.n_seeds)]
        for arm in ARMS
    }
    return sft, runs


def _arm_start(config, lm, arm: str, i: int, sft: PretrainedSFT) -> tuple:
    """An RL arm's optimiser over the adapters, its step generator (seed i's "rl" stream) and what it amplifies."""
    opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=config.pretrained_rl_lr)
    gen = torch.Generator().manual_seed(derive_seed(config.seed, "rl", i) % 2**63)
    amplify: StrategicGrams | str | None = {
        "grpo": None,
        "hicra": "grams",
        "placebo": sft.placebo,
        "entropy": "entropy",
    }[arm]
    return opt, gen, amplify


def train_arm(
    config, lm, arm: str, i: int, sft: PretrainedSFT, train, held_out, *, world: World = SINGLE, per_prompt: bool
) -> RLCurves:
    """One arm's RL on the pretrained LM (the tiny LM's :func:`~iclr26.hicra.training.train_rl`, step for step).

    One sampling stream per step (``per_prompt=False``, one process), or per-prompt seeds
    (:func:`~iclr26.hicra.training.prompt_seed`, ``sample_rollout(prompt_seeds=...)``) with each rank on its shard
    of the prompts; the GRPO step is the data-parallel :func:`~iclr26.common.pretrained.grpo_step` (DDP or FSDP,
    ``config.parallel``), and the curves are sums over the ranks.
    """
    from iclr26.common.pretrained import sample_rollout

    Q, G = config.prompts_per_step, config.group_size
    if Q < world.size or (lm.parallel == "fsdp" and Q % world.size):
        raise ValueError(
            f"prompts_per_step={Q} must be >= the number of ranks ({world.size}) under torchrun, and a multiple of "
            "it with parallel=fsdp (every rank makes the same generation calls)"
        )
    shard = shard_range(Q, world.rank, world.size)
    opt, gen, amplify = _arm_start(config, lm, arm, i, sft)
    curves = RLCurves(arm=arm)
    chunk = EVAL_CHUNK if per_prompt else None
    for step in range(config.rl_steps + 1):
        if step % config.eval_every == 0 or step == config.rl_steps:
            curves.eval_step.append(step)
            curves.held_out_acc.append(accuracy(lm, held_out, config.max_new_tokens, world=world, chunk=chunk))
        if step == config.rl_steps:
            break
        idx = torch.randint(len(train), (Q,), generator=gen).tolist()
        if per_prompt:
            step_seed = int(torch.randint(2**62, (1,), generator=gen))
            problems = [train[idx[q]] for q in shard]
            seeds: dict = {"prompt_seeds": [prompt_seed(step_seed, q) % 2**31 for q in shard]}
        else:
            problems = [train[j] for j in idx]
            seeds = {"seed": int(torch.randint(2**31, (1,), generator=gen))}
        prompts = [prompt_text(p) for p in problems]
        rollout = sample_rollout(lm, prompts, group_size=G, max_new_tokens=config.max_new_tokens, chat=False, **seeds)
        out = hicra_step(
            lm, opt, rollout, problems, sft.grams, alpha=config.alpha, amplify=amplify, clip_eps=config.clip_eps
        )
        surprisal = -rollout.logp_old.cpu().float()  # stands in for the entropy (module docstring, Deviations)
        tensors = StepTensors(
            out.rewards, surprisal, surprisal, rollout.mask.cpu(), out.planning, out.amplified, list(rollout.texts)
        )
        curves.add_step(tensors, sft.grams, n_rows=Q * G, world=world)
    return curves


__all__ = ["HicraStep", "accuracy", "hicra_step", "prompt_text", "run_pretrained", "train_arm"]
