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

from iclr26.common.distributed import all_reduce_sum, current_world, shard_range
from iclr26.common.grpo import group_relative_advantages
from iclr26.common.seeding import derive_seed
from iclr26.hicra.advantages import entropy_mask, hicra_advantages
from iclr26.hicra.diagnostics import masked_token_mean, semantic_entropy
from iclr26.hicra.grams import (
    StrategicGrams,
    cluster_counts,
    decoded_pieces,
    mine_strategic_grams,
    placebo_grams,
    planning_mask_batch,
    token_coverage,
)
from iclr26.hicra.task import Problem, check_answer, make_trace
from iclr26.hicra.training import ARMS, EVAL_CHUNK, RLCurves, all_gather_counts, gather_rows, prompt_seed

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
    adv = group_relative_advantages(rewards, scale="none").reshape(-1)  # (N,)
    mask = rollout.mask.cpu()  # (N, T)
    width = mask.shape[1]
    pieces = [decoded_pieces(lm.tokenizer.decode, ids) for ids in rollout.completion_ids]
    planning = planning_mask_batch(pieces, grams, width=width) & mask
    if amplify == "grams":
        amplified = planning
    elif amplify == "entropy" and parallel_world(lm).is_distributed:
        # the top-surprisal tokens of the global batch at its planning coverage; this rank's rows of the selection
        n_plan, n_real = all_reduce_sum([float(planning.sum()), float(mask.sum())])
        chosen = entropy_mask(
            gather_rows(-rollout.logp_old.cpu().float()), gather_rows(mask), fraction=n_plan / max(1.0, n_real)
        )
        before = int(all_gather_counts(mask.shape[0])[: parallel_world(lm).rank].sum())
        amplified = chosen[before : before + mask.shape[0], :width]
    elif amplify == "entropy":
        coverage = float(planning.sum()) / max(1, int(mask.sum()))
        amplified = entropy_mask(-rollout.logp_old.cpu().float(), mask, fraction=coverage)
    elif isinstance(amplify, StrategicGrams):
        amplified = planning_mask_batch(pieces, amplify, width=width) & mask
    elif amplify is None:
        amplified = torch.zeros_like(mask)
    else:
        raise ValueError(f"amplify must be 'grams', 'entropy', a StrategicGrams or None, got {amplify!r}")
    token_adv = hicra_advantages(adv, amplified, alpha=alpha if amplify is not None else 0.0, mask=mask)
    result = grpo_step(
        lm, optimizer, rollout, advantages=token_adv, clip_eps=clip_eps, micro_batch_size=micro_batch_size
    )
    return HicraStep(rewards, planning, amplified, token_adv, result.loss)


def _sharded_accuracy(lm, problems: Sequence[Problem], max_new_tokens: int) -> float:
    """:func:`_accuracy` in fixed batches of :data:`~iclr26.hicra.training.EVAL_CHUNK` dealt round-robin to the
    ranks, summed over them (every rank calls it)."""
    world = current_world()
    if lm.parallel == "fsdp":  # every forward is collective under FSDP: every rank decodes every batch
        return sum(
            _accuracy(lm, problems[s : s + EVAL_CHUNK], max_new_tokens) * len(problems[s : s + EVAL_CHUNK])
            for s in range(0, len(problems), EVAL_CHUNK)
        ) / len(problems)
    total = 0.0
    for c, start in enumerate(range(0, len(problems), EVAL_CHUNK)):
        if c % world.size == world.rank:
            chunk = problems[start : start + EVAL_CHUNK]
            total += _accuracy(lm, chunk, max_new_tokens) * len(chunk)
    (total,) = all_reduce_sum([total])
    return total / len(problems)


def _accuracy(lm, problems: Sequence[Problem], max_new_tokens: int) -> float:
    gen = lm.generate([prompt_text(p) for p in problems], max_new_tokens=max_new_tokens, temperature=0.0, chat=False)
    rewards = [
        check_answer(p, t, finished=r != "length").reward
        for p, t, r in zip(problems, gen.texts, gen.finish_reasons, strict=True)
    ]
    return sum(rewards) / len(rewards)


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


def _load(config):
    from iclr26.common.pretrained import add_lora, load_pretrained

    lm = load_pretrained(device=config.device)
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

        lm = _load(config)
        opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=config.sft_lr)
        rng = np.random.default_rng(derive_seed(config.seed, "sft"))
        kinds = ("correct", "premature", "slip")
        weights = np.asarray(config.sft_mix) / sum(config.sft_mix)
        losses = []
        lm.model.train()
        for _ in range(config.sft_steps):
            batch = [train[int(rng.integers(len(train)))] for _ in range(config.sft_batch)]
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
            _accuracy(lm, held_out, config.max_new_tokens),
            _accuracy(lm, train, config.max_new_tokens),
            len(correct) / len(train),
            grams,
            placebo,
            coverage,
        )

    sft = ctx.unit("sft", sft_unit)

    def arm_unit(arm: str, i: int) -> RLCurves:
        from iclr26.common.grpo import per_prompt_seeds
        from iclr26.common.pretrained import distribute, sample_rollout

        lm = _load(config)
        _set_adapter(lm, sft.adapter)
        if per_prompt_seeds(config.rollout_seeds, ctx.world):
            distribute(lm, mode=config.parallel)  # no-op in one process
            return _arm_per_prompt(config, lm, arm, i, sft, train, held_out)
        opt, gen, amplify = _arm_start(config, lm, arm, i, sft)
        curves = RLCurves(arm=arm)
        for step in range(config.rl_steps + 1):
            if step % config.eval_every == 0 or step == config.rl_steps:
                curves.eval_step.append(step)
                curves.held_out_acc.append(_accuracy(lm, held_out, config.max_new_tokens))
            if step == config.rl_steps:
                break
            idx = torch.randint(len(train), (config.prompts_per_step,), generator=gen).tolist()
            problems = [train[j] for j in idx]
            rollout = sample_rollout(
                lm,
                [prompt_text(p) for p in problems],
                group_size=config.group_size,
                max_new_tokens=config.max_new_tokens,
                chat=False,
                seed=int(torch.randint(2**31, (1,), generator=gen)),
            )
            out = hicra_step(
                lm, opt, rollout, problems, sft.grams, alpha=config.alpha, amplify=amplify, clip_eps=config.clip_eps
            )
            mask = rollout.mask.cpu()
            surprisal = -rollout.logp_old.cpu().float()
            execution = mask & ~out.planning
            curves.reward.append(float(out.rewards.mean()))
            curves.exec_entropy.append(masked_token_mean(surprisal, execution))
            curves.plan_entropy.append(masked_token_mean(surprisal, out.planning))
            curves.exec_nll.append(masked_token_mean(surprisal, execution))
            curves.semantic_entropy.append(semantic_entropy(cluster_counts(rollout.texts, sft.grams)))
            curves.length.append(float(mask.sum(dim=1).float().mean()))
            curves.planning_coverage.append(float(out.planning.sum()) / max(1, int(mask.sum())))
            curves.amplified_coverage.append(float(out.amplified.sum()) / max(1, int(mask.sum())))
            curves.n_tokens += int(mask.sum())
        return curves

    runs = {
        arm: [ctx.unit(f"rl-{arm}-seed{i}", lambda a=arm, i=i: arm_unit(a, i)) for i in range(config.n_seeds)]
        for arm in ARMS
    }
    return sft, runs


def _arm_start(config, lm, arm: str, i: int, sft: PretrainedSFT) -> tuple:
    """An RL arm's optimiser over the adapters, its step generator (seed i's "rl" stream) and what it amplifies."""
    opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=config.rl_lr)
    gen = torch.Generator().manual_seed(derive_seed(config.seed, "rl", i) % 2**63)
    amplify: StrategicGrams | str | None = {
        "grpo": None,
        "hicra": "grams",
        "placebo": sft.placebo,
        "entropy": "entropy",
    }[arm]
    return opt, gen, amplify


def _arm_per_prompt(config, lm, arm: str, i: int, sft: PretrainedSFT, train, held_out) -> RLCurves:
    """One arm's RL with per-prompt seeds, data parallel under torchrun (each rank on its shard of the prompts).

    As :func:`iclr26.hicra.training.train_rl_sharded` for the tiny LM: the step's ``Q`` problems and step seed are
    drawn alike on every rank, each rank samples its shard's prompts with
    :func:`~iclr26.hicra.training.prompt_seed` seeds (``sample_rollout(prompt_seeds=...)``), the GRPO step is the
    data-parallel :func:`~iclr26.common.pretrained.grpo_step` (DDP or FSDP, ``config.parallel``), and the curves
    are sums over the ranks.
    """
    from iclr26.common.pretrained import sample_rollout

    world = current_world()
    Q, G = config.prompts_per_step, config.group_size
    if Q < world.size or (lm.parallel == "fsdp" and Q % world.size):
        raise ValueError(
            f"prompts_per_step={Q} must be >= the number of ranks ({world.size}) under torchrun, and a multiple of "
            "it with parallel=fsdp (every rank makes the same generation calls)"
        )
    shard = shard_range(Q, world.rank, world.size)
    opt, gen, amplify = _arm_start(config, lm, arm, i, sft)
    curves = RLCurves(arm=arm)
    for step in range(config.rl_steps + 1):
        if step % config.eval_every == 0 or step == config.rl_steps:
            curves.eval_step.append(step)
            curves.held_out_acc.append(_sharded_accuracy(lm, held_out, config.max_new_tokens))
        if step == config.rl_steps:
            break
        idx = torch.randint(len(train), (Q,), generator=gen).tolist()
        step_seed = int(torch.randint(2**62, (1,), generator=gen))
        problems = [train[idx[q]] for q in shard]
        rollout = sample_rollout(
            lm,
            [prompt_text(p) for p in problems],
            group_size=G,
            max_new_tokens=config.max_new_tokens,
            chat=False,
            prompt_seeds=[prompt_seed(step_seed, q) % 2**31 for q in shard],
        )
        out = hicra_step(
            lm, opt, rollout, problems, sft.grams, alpha=config.alpha, amplify=amplify, clip_eps=config.clip_eps
        )
        mask = rollout.mask.cpu()
        surprisal = -rollout.logp_old.cpu().float()
        execution = mask & ~out.planning
        counts = cluster_counts(rollout.texts, sft.grams)
        sums = all_reduce_sum(
            [
                float(out.rewards.double().sum()),
                float(surprisal.double()[execution].sum()),
                float(execution.sum()),
                float(surprisal.double()[out.planning].sum()),
                float(out.planning.sum()),
                float(mask.sum()),
                float(out.amplified.sum()),
                *counts.values(),
            ]
        )
        r_sum, e_sum, e_n, p_sum, p_n, n_real, amp_n = sums[:7]
        curves.reward.append(r_sum / (Q * G))
        curves.exec_entropy.append(e_sum / e_n if e_n else float("nan"))
        curves.plan_entropy.append(p_sum / p_n if p_n else float("nan"))
        curves.exec_nll.append(e_sum / e_n if e_n else float("nan"))
        curves.semantic_entropy.append(semantic_entropy([round(v) for v in sums[7:]]))
        curves.length.append(n_real / (Q * G))
        curves.planning_coverage.append(p_n / max(1.0, n_real))
        curves.amplified_coverage.append(amp_n / max(1.0, n_real))
        curves.n_tokens += int(n_real)
    return curves


__all__ = ["HicraStep", "hicra_step", "prompt_text", "run_pretrained"]
