"""Reproduction of Explore-on-Graph (ICLR 2026, arXiv 2602.21728): RL with answer and path rewards vs imitation.

What ``iclr26 run eog`` does (backend ``tinylm``, the ``smoke`` and ``cpu`` scales):

1. builds a synthetic typed KG and its questions (:func:`iclr26.eog.kg.make_task`): SFT questions of
   in-distribution compositions, an RL pool of in-distribution and OOD questions (answers and gold paths only), and
   held-out ID and OOD test splits — OOD compositions contain a relation bigram no SFT trace ever shows (the paper's
   atypical paths); or loads the user's RoG-style JSONL (``--set data=PATH``) and holds out whole compositions;
2. stage 1: SFT cold start of a tiny word-level LM on mixed-quality traces of the SFT questions (unit ``sft``; the
   **SFT-only** arm), one start for every seed, as the paper fine-tunes one model;
3. per seed, stage 2: GRPO with ``R_out`` = F1 for ``stage2_steps`` (unit ``grpo1-seed<i>``), shared by the three RL
   arms of the seed;
4. stage 3, from that checkpoint, ``stage3_steps`` more GRPO steps with: F1 again (**GRPO(F1)**), F1 + path reward
   (**EoG**), or F1 + a placebo path reward scored against random off-path triples (**placebo**, the control);
   units ``grpo2-<arm>-seed<i>``;
5. **imitation** baseline: from the SFT checkpoint, ``stage2_steps + stage3_steps`` more SFT updates on
   demonstrations, each on ``prompts_per_step × group_size`` sequences (as many as a GRPO update) — equal updates;
6. greedy evaluation on both test splits: Hits@1, F1, path faithfulness (share of gold triples cited), trace length
   and off-path citations (futile exploration);
7. the verdict (:mod:`iclr26.eog.verdict`).

At the ``cpu`` scale a small check runs the same pipeline code on SmolLM2-135M-Instruct (unit ``smollm2-check``:
a few SFT steps and one GRPO step of each RL stage); it is reported, not part of the verdict. The ``gpu`` preset
runs the whole reproduction on SmolLM2 (``backend=smollm2``, LoRA, CUDA).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.grpo import per_prompt_seeds
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed
from iclr26.eog.config import ARMS, EogConfig
from iclr26.eog.data import KGQAExample, compact_prompt, load_rog_jsonl, make_trace
from iclr26.eog.kg import KGTask, make_task, split_loaded
from iclr26.eog.policy import Policy, PretrainedPolicy, TinyPolicy, WordVocab, tokenize
from iclr26.eog.rewards import F1_ONLY, F1_PLUS_PATH
from iclr26.eog.training import EvalResult, StageCurves, evaluate, grpo_stage, placebo_paths, sft_stage
from iclr26.eog.verdict import Measurements, paired_tests, verdict


def build_task(config: EogConfig) -> KGTask:
    """The synthetic task, or the user's data split by composition."""
    if config.data is not None:
        return split_loaded(
            load_rog_jsonl(config.data, require_path=True),
            ood_frac=config.ood_frac,
            seed=derive_seed(config.seed, "split"),
        )
    return make_task(
        derive_seed(config.seed, "task"),
        n_sft=config.n_sft,
        n_rl=config.n_rl,
        n_test=config.n_test,
        ood_bigrams=config.ood_bigrams,
        rl_ood_frac=config.rl_ood_frac,
        n_graph=config.n_graph,
        scale=config.kg_scale,
    )


def _examples(task: KGTask) -> list[KGQAExample]:
    return [*task.sft, *task.rl, *task.test_id, *task.test_ood]


def build_vocab(task: KGTask) -> WordVocab:
    """The tiny LM's vocabulary: every piece of every prompt and full trace, plus the format's symbols."""
    texts = [compact_prompt(e) for e in _examples(task)] + [make_trace(e) for e in _examples(task)]
    return WordVocab([*texts, '( , ) . [ ] " <think> </think> <answer> </answer>'])


def make_policy(
    config: EogConfig, task: KGTask, seed: int, device: torch.device, *, backend: str | None = None
) -> Policy:
    """A fresh policy of the configured backend on ``device`` (``seed`` fixes its initialisation / LoRA init)."""
    backend = backend or config.backend
    if backend == "tinylm":
        vocab = build_vocab(task)
        longest = max(len(tokenize(compact_prompt(e))) for e in _examples(task)) + 1
        return TinyPolicy(
            vocab,
            d_model=config.d_model,
            n_layers=config.n_layers,
            n_heads=config.n_heads,
            d_ff=config.d_ff,
            context_len=longest + config.max_new_tokens,
            max_new_tokens=config.max_new_tokens,
            lr_sft=config.sft_lr,
            lr_rl=config.rl_lr,
            temperature=config.temperature,
            clip_eps=config.clip_eps,
            seed=seed % 2**31,
            device=device,
        )
    from iclr26.common.pretrained import add_lora, load_pretrained

    lm = load_pretrained(device=str(device))
    add_lora(lm, r=config.lora_r, seed=seed % 2**31)
    return PretrainedPolicy(
        lm,
        max_new_tokens=config.pretrained_max_new_tokens,
        lr_sft=config.pretrained_sft_lr,
        lr_rl=config.pretrained_rl_lr,
        temperature=config.temperature,
        clip_eps=config.clip_eps,
    )


@dataclass(frozen=True)
class ArmResult:
    """One arm and seed (a unit's result; plain data).

    Attributes:
        test_id, test_ood: greedy evaluations of the two test splits.
        losses: SFT losses (SFT / imitation units).
        curves: GRPO curves (RL units).
        state: the policy's weights, kept only where a later unit starts from them.
    """

    test_id: EvalResult
    test_ood: EvalResult
    losses: list[float] = field(default_factory=list)
    curves: StageCurves | None = None
    state: dict[str, torch.Tensor] | None = None


def evaluated(policy: Policy, task: KGTask, **kw) -> ArmResult:
    """Step 6 on both test splits, as an :class:`ArmResult` with ``kw`` (losses, curves, state)."""
    return ArmResult(evaluate(policy, task.test_id), evaluate(policy, task.test_ood), **kw)


def policy_from(config: EogConfig, task: KGTask, i: int, ctx: RunContext, state=None) -> Policy:
    """Seed ``i``'s policy on ``ctx.device``: fresh, or with the weights of an earlier unit."""
    policy = make_policy(config, task, derive_seed(config.seed, "init", i), ctx.device)
    if state is not None:
        policy.load_state(state)
    return policy


def sft_unit(config: EogConfig, task: KGTask, i: int, ctx: RunContext, start=None, *, key: str = "sft") -> ArmResult:
    """Step 2 (``start`` None: the SFT-only arm) or step 5 (``start``: the SFT weights; the imitation arm)."""
    policy = policy_from(config, task, i, ctx, start)
    pretrained = config.backend == "smollm2"
    if start is None:  # stage 1, on the backend's own SFT settings
        steps = config.pretrained_sft_steps if pretrained else config.sft_steps
        batch = config.pretrained_sft_batch if pretrained else config.sft_batch
    else:  # imitation: as many updates as the RL arms, of as many sequences
        steps = config.stage2_steps + config.stage3_steps
        batch = config.prompts_per_step * config.group_size
    with ctx.progress(total=steps, desc=f"{key} seed {i}") as bar:
        losses = sft_stage(
            policy,
            task.sft,
            steps=steps,
            batch_size=batch,
            seed=derive_seed(config.seed, key, i),
            cite_prob=config.cite_prob,
            detour_prob=config.detour_prob,
            progress=lambda: bar.update(1),
        )
    return evaluated(policy, task, losses=losses, state=policy.state() if start is None else None)


def rl_unit(config: EogConfig, task: KGTask, i: int, ctx: RunContext, start, stage: str, arm: str) -> ArmResult:
    """Steps 3–4: a GRPO stage from ``start``'s weights with the arm's reward map (:data:`STAGE_REWARDS`)."""
    policy = policy_from(config, task, i, ctx, start)
    if ctx.world.is_distributed:
        policy.distribute(ctx.world, config.parallel)
    weights, placebo = STAGE_REWARDS[arm]
    steps = config.stage2_steps if stage == "stage2" else config.stage3_steps
    with ctx.progress(total=steps, desc=f"{arm} seed {i}") as bar:
        curves = grpo_stage(
            policy,
            task.rl,
            steps=steps,
            prompts_per_step=config.prompts_per_step,
            group_size=config.group_size,
            weights=weights,
            seed=derive_seed(config.seed, stage, i),  # the same stage-3 seed for the three arms: paired draws
            path_override=placebo_paths(task.rl, derive_seed(config.seed, "placebo")) if placebo else None,
            progress=lambda: bar.update(1),
            per_prompt_seeds=per_prompt_seeds(config.rollout_seeds, ctx.world),
            world=ctx.world,
        )
    return evaluated(policy, task, curves=curves, state=policy.state() if stage == "stage2" else None)


#: Each RL arm's reward weights and whether its path term scores a placebo path (random off-path triples): stage 2
#: (shared) rewards F1; in stage 3 GRPO(F1) keeps F1, EoG adds the path reward, the placebo adds it on placebo paths.
STAGE_REWARDS = {"grpo1": (F1_ONLY, False), "grpo_f1": (F1_ONLY, False), "eog": (F1_PLUS_PATH, False)}
STAGE_REWARDS["placebo"] = (F1_PLUS_PATH, True)


def run_seed(config: EogConfig, task: KGTask, sft: ArmResult, i: int, ctx: RunContext) -> dict[str, ArmResult]:
    """Steps 3–6 for seed ``i`` from the shared SFT start: the five arms (and ``"stage2"``, the seed's RL phase-1
    checkpoint), as units."""
    results = {"sft": sft}
    results["imitation"] = ctx.unit(
        f"imitation-seed{i}", lambda: sft_unit(config, task, i, ctx, sft.state, key="imitation")
    )
    stage2 = ctx.unit(f"grpo1-seed{i}", lambda: rl_unit(config, task, i, ctx, sft.state, "stage2", "grpo1"))
    results["stage2"] = stage2
    for arm in ("grpo_f1", "eog", "placebo"):
        results[arm] = ctx.unit(
            f"grpo2-{arm}-seed{i}", lambda arm=arm: rl_unit(config, task, i, ctx, stage2.state, "stage3", arm)
        )
    return results


@dataclass(frozen=True)
class PretrainedCheck:
    """The cpu scale's check that the pipeline runs on SmolLM2 (unit ``smollm2-check``).

    Attributes:
        sft_losses: SFT losses.
        stage_rewards: mean reward of the sampled group in each RL stage (F1, then F1 + path).
        valid: share of parseable completions per stage.
        adapter_change: L2 norm of the LoRA change over the whole check.
        model: the pretrained model's description.
    """

    sft_losses: list[float]
    stage_rewards: list[float]
    valid: list[float]
    adapter_change: float
    model: dict[str, Any]


def smollm2_check(config: EogConfig, task: KGTask, device: torch.device) -> PretrainedCheck:
    """Stage 1 (``check_sft_steps`` steps of 2 traces), then one GRPO step of stage 2 and one of stage 3."""
    policy = make_policy(config, task, derive_seed(config.seed, "smollm2"), device, backend="smollm2")
    assert isinstance(policy, PretrainedPolicy)
    before = policy.state()
    losses = sft_stage(
        policy, task.sft, steps=config.check_sft_steps, batch_size=2, seed=derive_seed(config.seed, "check-sft")
    )
    rewards, valid = [], []
    for stage, weights in enumerate((F1_ONLY, F1_PLUS_PATH)):
        curves = grpo_stage(
            policy,
            task.rl,
            steps=1,
            prompts_per_step=config.check_prompts,
            group_size=config.check_group,
            weights=weights,
            seed=derive_seed(config.seed, "check-rl", stage),
        )
        rewards.append(curves.reward[0])
        valid.append(curves.valid[0])
    after = policy.state()
    change = math.sqrt(sum(float((after[k].float() - before[k].float()).pow(2).sum()) for k in before))
    return PretrainedCheck(losses, rewards, valid, change, policy.lm.describe())


def measurements(runs: list[dict[str, ArmResult]]) -> Measurements:
    """The verdict's per-seed numbers: OOD Hits@1, and faithfulness, F1, off-path citations over both splits."""

    def pooled(arm: str, metric: str) -> list[float]:
        return [float(np.mean(getattr(r[arm].test_id, metric) + getattr(r[arm].test_ood, metric))) for r in runs]

    return Measurements(
        ood_hits={arm: [float(np.mean(r[arm].test_ood.hits_at_1)) for r in runs] for arm in ARMS},
        faithfulness={arm: pooled(arm, "faithfulness") for arm in ARMS},
        f1={arm: pooled(arm, "f1") for arm in ARMS},
        off_path={arm: pooled(arm, "off_path") for arm in ARMS},
        valid={arm: pooled(arm, "valid") for arm in ARMS},
    )


def metrics(config: EogConfig, task: KGTask, runs: list[dict[str, ArmResult]], m: Measurements) -> dict[str, Any]:
    """Every measured quantity of the record (the verdict's tests are added by :func:`outcome`)."""

    def per_seed(arm: str, split: str, metric: str) -> list[float]:
        if split == "all":
            return [float(np.mean(getattr(r[arm].test_id, metric) + getattr(r[arm].test_ood, metric))) for r in runs]
        return [float(np.mean(getattr(getattr(r[arm], f"test_{split}"), metric))) for r in runs]

    names = ("hits_at_1", "f1", "faithfulness", "length", "off_path", "valid")
    return {
        "per_arm": {
            arm: {s: {n: float(np.mean(per_seed(arm, s, n))) for n in names} for s in ("id", "ood", "all")}
            for arm in ARMS
        },
        "per_seed_ood_hits": m.ood_hits,
        "per_seed_faithfulness": m.faithfulness,
        "budgets": {
            arm: {
                "updates_after_sft": 0 if arm == "sft" else config.stage2_steps + config.stage3_steps,
                "rl_sampled_tokens": sum(
                    r["stage2"].curves.n_tokens + r[arm].curves.n_tokens if r[arm].curves else 0 for r in runs
                ),
            }
            for arm in ARMS
        },
        "task": {
            "sft": len(task.sft),
            "rl": len(task.rl),
            "test_id": len(task.test_id),
            "test_ood": len(task.test_ood),
            "ood_bigrams": [list(b) for b in task.ood_bigrams],
            "id_compositions": len(task.id_compositions),
            "ood_compositions": len(task.ood_compositions),
            "source": "data" if config.data is not None else "synthetic",
        },
        "sft_final_loss": float(np.mean([r["sft"].losses[-1] for r in runs])),
    }


def outcome(config, task, runs, check: PretrainedCheck | None, timings: dict[str, float]) -> Outcome:
    """The record: the verdict, the metrics, and the notes (the SmolLM2 check's numbers when it ran)."""
    m = measurements(runs)
    values = metrics(config, task, runs, m)
    # every paired test in full (per-seed differences, interval, p); a bound is None with one seed (no interval)
    values["tests"] = {
        name: {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in t.items() if k != "ci95"}
        | {"ci95": [b if math.isfinite(b) else None for b in t["ci95"]]}
        for name, t in paired_tests(m, config).items()
    }
    if check is not None:
        values["smollm2_check"] = {
            "sft_losses": check.sft_losses,
            "stage_rewards": check.stage_rewards,
            "valid": check.valid,
            "adapter_change": check.adapter_change,
            "model": check.model.get("model"),
        }
    notes = (
        f"{config.backend}: {config.n_seeds} seed(s); {config.sft_steps} SFT steps, then {config.stage2_steps} + "
        f"{config.stage3_steps} updates per arm after SFT (GRPO Q={config.prompts_per_step} x G={config.group_size}; "
        f"imitation: SFT on {config.prompts_per_step * config.group_size} traces per update). Hits@1 is the official "
        "lenient definition (any predicted answer matching any gold one). "
        + (
            f"SmolLM2 check: stage rewards {[round(r, 3) for r in check.stage_rewards]}, adapter change "
            f"{check.adapter_change:.3g}."
            if check is not None
            else ""
        )
    )
    return Outcome.of(verdict(m, config), metrics=values, notes=notes, timings=timings)


def run(config: EogConfig, ctx: RunContext) -> Outcome:
    """Steps 1–7 (module docstring)."""
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    task = build_task(config)
    sft = ctx.unit("sft", lambda: sft_unit(config, task, 0, ctx))  # one SFT start for every seed, as the paper's
    runs = [run_seed(config, task, sft, i, ctx) for i in range(config.n_seeds)]
    check = None
    if config.backend == "tinylm" and config.smollm2_check:
        check = ctx.unit("smollm2-check", lambda: smollm2_check(config, task, ctx.device))
    plots(runs, ctx)
    timings = {"process_cpu_time_s": time.process_time() - start_cpu, "wall_s": time.perf_counter() - start_wall}
    return outcome(config, task, runs, check, timings)


def plots(runs: list[dict[str, ArmResult]], ctx: RunContext) -> None:
    """Hits@1 per arm (dots: seeds), and faithfulness against F1 per seed."""
    fig, grid = figure(ncols=2, width=5.2, height=3.8)
    axes = grid[0]  # (2,)
    x = np.arange(len(ARMS))
    for ax, split in zip(axes, ("id", "ood"), strict=True):
        values = np.asarray([[np.mean(getattr(r[a], f"test_{split}").hits_at_1) for a in ARMS] for r in runs])
        ax.bar(x, values.mean(axis=0), color="#9bb", edgecolor="k")
        for row in values:
            ax.plot(x, row, "k.", alpha=0.6)
        ax.set_xticks(x, ARMS, rotation=30, fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(f"{split.upper()} Hits@1 (dots: seeds)")
        ax.grid(axis="y", alpha=0.3)
    ctx.save_plot(fig, "hits_at_1.png")

    fig, ax = figure(width=5.5, height=4.0)
    for arm in ARMS:
        f = [np.mean(r[arm].test_id.faithfulness + r[arm].test_ood.faithfulness) for r in runs]
        s = [np.mean(r[arm].test_id.f1 + r[arm].test_ood.f1) for r in runs]
        ax.scatter(f, s, label=arm, alpha=0.8)
    ax.set_xlabel("path faithfulness (share of gold triples cited)")
    ax.set_ylabel("answer F1")
    ax.set_title("Faithfulness vs F1, ID+OOD test questions, per seed")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ctx.save_plot(fig, "faithfulness_f1.png")


EXPERIMENT = Experiment(config_cls=EogConfig, run=run, data_parallel=True)
