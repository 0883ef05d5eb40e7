"""Reproduction of HICRA (ICLR 2026, arXiv 2509.03646): planning-token credit vs GRPO on a generated reasoning task.

What ``iclr26 run hicra`` does (backend ``tinylm``, the ``smoke`` and ``cpu`` scales):

1. generates every two-number countdown problem up to ``max_number`` and holds out ``held_out_frac`` of them
   (:mod:`iclr26.hicra.task`);
2. SFT start: a tiny LM from scratch (:class:`~iclr26.common.tinylm.TinyLM`) trained on mixed-quality traces of the
   training problems (correct searches, premature commits, arithmetic slips); one start shared by every arm and seed,
   as the paper starts every method from one base model;
3. mines Strategic Grams from the SFT policy's *correct* sampled solutions of the training problems
   (:func:`~iclr26.hicra.grams.mine_strategic_grams`) and draws the placebo set (random n-grams, same count, closest
   token coverage; :func:`~iclr26.hicra.grams.placebo_grams`);
4. for each seed, runs the four arms from the SFT start at equal steps and samples (:mod:`iclr26.hicra.training`):
   ``grpo``, ``hicra`` (α on the mined grams), ``placebo`` (α on the random grams) and ``entropy`` (α on the
   top-entropy tokens at the planning coverage, the paper's ablation); the seed fixes the prompt draws and the
   sampling stream, shared by the arms;
5. tracks held-out greedy accuracy, execution-token entropy and relative perplexity, and semantic entropy;
6. the verdict (:mod:`iclr26.hicra.verdict`).

Backend ``smollm2`` (the ``gpu`` preset): the same task, arms and verdict on SmolLM2-135M-Instruct with LoRA through
:mod:`iclr26.common.pretrained` (:mod:`iclr26.hicra.pretrained_run`).

Units of work (``--resume`` skips finished ones): ``sft`` (steps 2–3) and ``rl-<arm>-seed<i>`` (step 4).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.grpo import per_prompt_seeds
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed
from iclr26.hicra.config import HicraConfig
from iclr26.hicra.diagnostics import relative_perplexity
from iclr26.hicra.grams import StrategicGrams, describe, mine_strategic_grams, placebo_grams, token_coverage
from iclr26.hicra.task import Problem, Vocab, check_answer, make_problems, split_problems
from iclr26.hicra.training import (
    ARMS,
    ModelSpec,
    RLCurves,
    RLSettings,
    SFTSettings,
    accuracy,
    auc,
    build_policy,
    encode_prompts,
    generate,
    train_rl,
    train_sft,
)
from iclr26.hicra.verdict import Measurements, paired_tests, two_phase, verdict


def model_spec(config: HicraConfig) -> ModelSpec:
    """The tiny LM's size (its context holds the longest prompt and the completion cap)."""
    return ModelSpec(config.d_model, config.n_layers, config.n_heads, config.d_ff, config.max_new_tokens + 16)


@dataclass(frozen=True)
class SFTResult:
    """The SFT start and what was mined from it (unit ``sft``).

    Attributes:
        state: the policy's weights (CPU tensors).
        losses: SFT loss per step.
        held_out_acc, train_acc: greedy accuracy after SFT.
        sampled_acc: accuracy of the one sample per training problem the grams were mined from.
        grams, placebo: the mined Strategic Grams and the placebo set.
        coverage: token coverage of both on the mined solutions.
    """

    state: dict[str, torch.Tensor]
    losses: list[float]
    held_out_acc: float
    train_acc: float
    sampled_acc: float
    grams: StrategicGrams
    placebo: StrategicGrams
    coverage: dict[str, float]


def mine(config: HicraConfig, correct: list[str], tokenize) -> tuple[StrategicGrams, StrategicGrams, dict]:
    """Step 3: the Strategic Grams of the correct solutions, the placebo set and their token coverage."""
    grams = mine_strategic_grams(
        correct,
        n_min=config.n_min,
        n_max=config.n_max,
        min_doc_frac=config.min_doc_frac,
        max_within=config.max_within,
        merge_jaccard=config.merge_jaccard,
        max_doc_frac=config.max_doc_frac,
    )
    if len(grams) == 0:
        raise RuntimeError("no Strategic Gram passed the filters; lower min_doc_frac or raise max_within")
    placebo = placebo_grams(
        correct, grams, tokenize=tokenize, seed=derive_seed(config.seed, "placebo"), n_draws=config.placebo_draws
    )
    pieces = [tokenize(t) for t in correct]
    coverage = {name: token_coverage(pieces, g) for name, g in (("grams", grams), ("placebo", placebo))}
    return grams, placebo, coverage


def run_sft(config: HicraConfig, train, held_out, vocab: Vocab, device: torch.device) -> SFTResult:
    """Steps 2–3: SFT start, correct samples, mined grams and the placebo."""
    torch.manual_seed(derive_seed(config.seed, "init") % 2**31)
    model = build_policy(model_spec(config), vocab, device)
    settings = SFTSettings(config.sft_steps, config.sft_batch, config.sft_lr, config.sft_mix)
    losses = train_sft(model, train, vocab, settings, seed=derive_seed(config.seed, "sft"))
    gen = torch.Generator().manual_seed(derive_seed(config.seed, "mine") % 2**63)
    samples = generate(
        model, encode_prompts(train, vocab), vocab, max_new_tokens=config.max_new_tokens, temperature=1.0, generator=gen
    )
    # the sampled tokens' pieces (a sampled completion need not re-encode: a digit piece may follow a word piece)
    pieces = {t: vocab.piece_list(samples.completion_ids(i)) for i, t in enumerate(samples.texts)}
    correct = [
        t
        for p, t, f in zip(train, samples.texts, samples.finished.tolist(), strict=True)
        if check_answer(p, t, finished=bool(f)).reward > 0
    ]
    if not correct:
        raise RuntimeError("the SFT policy solved no training problem; raise sft_steps (nothing to mine grams from)")
    grams, placebo, coverage = mine(config, correct, pieces.__getitem__)
    return SFTResult(
        state={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        losses=losses,
        held_out_acc=accuracy(model, held_out, vocab, max_new_tokens=config.max_new_tokens),
        train_acc=accuracy(model, train, vocab, max_new_tokens=config.max_new_tokens),
        sampled_acc=len(correct) / len(train),
        grams=grams,
        placebo=placebo,
        coverage=coverage,
    )


def rl_settings(config: HicraConfig) -> RLSettings:
    """The RL settings every arm shares."""
    return RLSettings(
        config.rl_steps,
        config.prompts_per_step,
        config.group_size,
        config.rl_lr,
        config.alpha,
        config.clip_eps,
        config.max_new_tokens,
        config.eval_every,
    )


def run_arm(config: HicraConfig, sft: SFTResult, arm: str, i: int, train, held_out, vocab, ctx) -> RLCurves:
    """Step 4: one arm and seed from the SFT start."""
    model = build_policy(model_spec(config), vocab, ctx.device)
    model.load_state_dict(sft.state)
    seed = derive_seed(config.seed, "rl", i) % 2**63  # shared by the arms of a seed (paired)
    with ctx.progress(total=config.rl_steps, desc=f"{arm} seed {i}") as bar:
        return train_rl(
            model,
            arm,
            train,
            held_out,
            vocab,
            sft.grams,
            sft.placebo,
            rl_settings(config),
            seed=seed,
            per_prompt_seeds=per_prompt_seeds(config.rollout_seeds, ctx.world),
            world=ctx.world,
            device=ctx.device,
            progress=bar,
        )


def measurements(runs: dict[str, list[RLCurves]], n_held: int) -> Measurements:
    """The verdict's per-seed numbers from every arm's curves."""
    return Measurements(
        start_acc={arm: [c.held_out_acc[0] for c in curves] for arm, curves in runs.items()},
        final_acc={arm: [c.held_out_acc[-1] for c in curves] for arm, curves in runs.items()},
        auc={arm: [auc(c.eval_step, c.held_out_acc) for c in curves] for arm, curves in runs.items()},
        exec_entropy={arm: [c.exec_entropy for c in curves] for arm, curves in runs.items()},
        semantic_entropy={arm: [c.semantic_entropy for c in curves] for arm, curves in runs.items()},
        n_held_out=n_held,
    )


def arm_metrics(m: Measurements, arm: str, curves: list[RLCurves], drop: float) -> dict[str, Any]:
    """One arm's block of the record's metrics."""
    return {
        "final_acc": m.final_acc[arm],
        "final_acc_mean": statistics.fmean(m.final_acc[arm]),
        "auc": m.auc[arm],
        "auc_mean": statistics.fmean(m.auc[arm]),
        "eval_step": curves[0].eval_step,
        "held_out_acc_curves": [c.held_out_acc for c in curves],
        "train_reward_mean_last_quarter": statistics.fmean(
            float(np.mean(c.reward[-max(1, len(c.reward) // 4) :])) for c in curves
        ),
        "amplified_coverage_mean": statistics.fmean(float(np.mean(c.amplified_coverage)) for c in curves),
        "planning_coverage_mean": statistics.fmean(float(np.mean(c.planning_coverage)) for c in curves),
        "relative_exec_perplexity_final": statistics.fmean(
            relative_perplexity(c.exec_nll)[-1] if c.exec_nll and math.isfinite(c.exec_nll[0]) else math.nan
            for c in curves
        ),
        "completion_tokens": [c.n_tokens for c in curves],
        "two_phase": two_phase(m.exec_entropy[arm], m.semantic_entropy[arm], drop),
    }


def outcome(
    config: HicraConfig, sft, runs: dict[str, list[RLCurves]], *, n_train: int, n_held: int, timings: dict
) -> Outcome:
    """The record: the verdict and every measured quantity."""
    m = measurements(runs, n_held)
    tests = paired_tests(m, config)
    metrics = {
        "per_arm": {arm: arm_metrics(m, arm, curves, config.entropy_drop) for arm, curves in runs.items()},
        "paired_vs_grpo": {arm: {k: v.summary() for k, v in t.items()} for arm, t in tests.items()},
        "hicra_minus_placebo_final": [h - p for h, p in zip(m.final_acc["hicra"], m.final_acc["placebo"], strict=True)],
        "sft": {
            "held_out_acc": sft.held_out_acc,
            "train_acc": sft.train_acc,
            "sampled_acc": sft.sampled_acc,
            "final_loss": sft.losses[-1],
        },
        "strategic_grams": describe(sft.grams),
        "grams_in_every_solution": [c.name for c in sft.grams.clusters if c.doc_freq == 1.0],
        "placebo_grams": [c.name for c in sft.placebo.clusters],
        "token_coverage": sft.coverage,
        "problems": {"train": n_train, "held_out": n_held},
    }
    entropy = tests["entropy"]["final"]
    bound = "n/a (one seed)" if not math.isfinite(entropy.lower) else f"{entropy.lower:+.3f}"
    notes = (
        f"{config.backend}: {config.n_seeds} seed(s) x {len(ARMS)} arms x {config.rl_steps} RL steps of "
        f"{config.prompts_per_step}x{config.group_size} samples from one SFT start; held-out set of {n_held} problems "
        f"scored greedily. Entropy arm (paper's ablation) vs GRPO: final {entropy.mean:+.3f} (lower bound {bound})."
    )
    return Outcome.of(verdict(m, config), metrics=metrics, notes=notes, timings=timings)


def plots(runs: dict[str, list[RLCurves]], ctx: RunContext) -> None:
    """Held-out accuracy per arm (band: seed range), and the entropy dynamics."""
    fig, ax = figure(width=6.0, height=4.0)
    for arm, curves in runs.items():
        steps = curves[0].eval_step
        acc = np.asarray([c.held_out_acc for c in curves])  # (seeds, evals)
        (line,) = ax.plot(steps, acc.mean(axis=0), marker="o", ms=3, label=f"{arm} (mean of {len(curves)})")
        if len(curves) > 1:
            ax.fill_between(steps, acc.min(axis=0), acc.max(axis=0), color=line.get_color(), alpha=0.12)
    ax.set_xlabel("RL step")
    ax.set_ylabel("held-out accuracy (greedy)")
    ax.set_title("HICRA reproduction: held-out accuracy (band: seed range)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ctx.save_plot(fig, "held_out_accuracy.png")

    fig, grid = figure(ncols=2, width=5.0, height=3.6)
    axes = grid[0]  # (2,)
    for arm, curves in runs.items():
        width = max(1, len(curves[0].exec_entropy) // 10)
        for ax, key in zip(axes, ("exec_entropy", "semantic_entropy"), strict=True):
            mean = np.nanmean([getattr(c, key) for c in curves], axis=0)
            y = mean if len(mean) < width or width <= 1 else np.convolve(mean, np.ones(width) / width, mode="valid")
            ax.plot(np.arange(len(y)) + (width - 1) / 2, y, label=arm)
    axes[0].set_title("execution-token entropy (nats, smoothed)")
    axes[1].set_title("semantic entropy of Strategic Grams (nats, smoothed)")
    for ax in axes:
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ctx.save_plot(fig, "entropy_dynamics.png")


def problems(config: HicraConfig) -> tuple[list[Problem], list[Problem]]:
    """Step 1: the training and held-out problems."""
    return split_problems(
        make_problems(config.max_number), held_out_frac=config.held_out_frac, seed=derive_seed(config.seed, "split")
    )


def run(config: HicraConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring, steps 1–6)."""
    start_cpu = time.process_time()
    vocab = Vocab()
    train, held_out = problems(config)
    if config.backend == "smollm2":
        from iclr26.hicra.pretrained_run import run_pretrained

        sft, runs = run_pretrained(config, train, held_out, ctx)
    else:
        sft = ctx.unit("sft", lambda: run_sft(config, train, held_out, vocab, ctx.device))
        runs = {
            arm: [
                ctx.unit(
                    f"rl-{arm}-seed{i}", lambda a=arm, i=i: run_arm(config, sft, a, i, train, held_out, vocab, ctx)
                )
                for i in range(config.n_seeds)
            ]
            for arm in ARMS
        }
    plots(runs, ctx)
    timings = {"process_cpu_time_s": time.process_time() - start_cpu}
    return outcome(config, sft, runs, n_train=len(train), n_held=len(held_out), timings=timings)


EXPERIMENT = Experiment(config_cls=HicraConfig, run=run, data_parallel=True)
