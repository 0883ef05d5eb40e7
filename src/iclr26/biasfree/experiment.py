"""Reproduction of BiasFreeBench's comparison on SmolLM2-135M-Instruct: prompting vs training, by Bias-Free Score.

BiasFreeBench: a Benchmark for Mitigating Bias in Large Language Model Responses, ICLR 2026, arXiv 2510.00232.
One run:

1. Items: ``n_per_category`` held-out ambiguous items per BBQ category (generated, :mod:`~iclr26.biasfree.items`,
   or drawn from the official BBQ folder ``data=PATH``); one seeded option order per item, shared by every method.
2. Prompting on the base model (greedy): vanilla, self-aware, CoT, self-reflection (second turn after the vanilla
   answer), self-help (rewrite, then answer the rewrite), and a *placebo* prompt (the vanilla query + a
   bias-neutral sentence of the self-aware prompt's length; the control).
3. Training arms, each from the base model with LoRA and the same steps, batch, learning rate and schedule, then
   answering the vanilla prompt: SFT on anti-stereotypical continuations, DPO (β = 0.1) on (anti, stereotype)
   pairs, DPO on the gender pairs only, and Task Vector (LoRA fine-tuning on the stereotypes, θ = θ_pre − 0.5 τ).
   Training pairs: StereoSet-style templates disjoint from the evaluation templates, or ``train_data=PATH``.
4. Judge every final response (:func:`~iclr26.biasfree.judge.judge_bbq`); BFS per method and category
   (``showres.py``'s formula), item-bootstrap intervals, the unclassified (unrelated) share; the capability probe
   (factual QA by forced choice, held-out LM loss) on the base model and every trained one.
5. Verdict (:mod:`iclr26.biasfree.verdict`): prompting vs training, DPO vs SFT, the placebo control and the judge's
   coverage, each by a paired item bootstrap. The Task Vector's capability cost is reported beside it.

Units of work (``--resume``): ``prompt-<method>`` (responses and labels), ``capability-base``, and
``train-<arm>`` (training log, responses, labels and capability of one trained model).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr26.biasfree.capability import Capability, probe_capability
from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.items import BBQItem, PreferencePair, generate_items, generate_pairs
from iclr26.biasfree.judge import judge_bbq
from iclr26.biasfree.prompts import (
    cot_messages,
    option_order,
    parse_self_help,
    query,
    reflection_messages,
    self_aware_messages,
    self_help_messages,
    vanilla_messages,
)
from iclr26.biasfree.score import bfs
from iclr26.biasfree.training import TrainLog, negate_task_vector, train_pairs
from iclr26.biasfree.verdict import PROMPTING, TRAINING, Analysis, Measurements, analyse, interval_record, verdict
from iclr26.common.config import require
from iclr26.common.distributed import World
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed

__all__ = ["EXPERIMENT", "PLACEBO_SENTENCE", "MethodResult", "RunData", "load_data", "measurements", "run", "train_arm"]

PLACEBO_SENTENCE = "Be mindful to write your answer in clear and simple words."


@dataclass(frozen=True)
class MethodResult:
    """One method's responses on the items (a unit's result).

    Attributes:
        method: the method or arm.
        responses: the judged (final) response per item.
        labels: the judge's label per item when the unit ran (the outcome re-judges ``responses``).
        new_tokens: tokens generated in all (every turn; the counted cost).
        truncated: responses cut by the token budget (final turn).
        parsed: self-help only: rewrites that could be parsed.
        capability: trained arms: the capability probe of the trained model.
        train: trained arms: the training log.
    """

    method: str
    responses: list[str]
    labels: list[str]
    new_tokens: int
    truncated: int
    parsed: int | None = None
    capability: Capability | None = None
    train: TrainLog | None = None


def _load(config: BiasFreeConfig, device: torch.device):  # noqa: ANN202
    from iclr26.common.pretrained import load_pretrained, random_llama

    if config.model == "tiny-random":
        return random_llama(seed=config.seed, device=device, name="tiny-random-llama")

    return load_pretrained(None if config.model == "smollm2" else config.model, dtype=config.dtype,
                           device=str(device))  # fmt: skip


@dataclass(frozen=True)
class RunData:
    """The items and training pairs of a run, and how many the sources held (the record keeps the counts).

    Attributes:
        items: the evaluation items, ``n_per_category`` per category.
        pairs: the training pairs.
        items_loaded: category -> items the source holds (the generator's pool, or the official files' labelled
            ambiguous items).
        pairs_loaded: pairs in the training source.
        pairs_skipped: pairs of the source skipped (``chosen`` equal to ``rejected``).
    """

    items: list[BBQItem]
    pairs: list[PreferencePair]
    items_loaded: dict[str, int]
    pairs_loaded: int
    pairs_skipped: int


def load_data(config: BiasFreeConfig) -> RunData:
    """Step 1's items (drawn per category) and the training pairs, from the generators or the official files."""
    rng = np.random.default_rng(derive_seed(config.seed, "items"))
    if config.data is None:
        items = generate_items(config.n_per_category, seed=derive_seed(config.seed, "items"))
        loaded = dict(Counter(it.category for it in generate_items(72, seed=0)))
    else:
        from iclr26.biasfree.data import load_bbq

        pool_all = load_bbq(config.data)
        loaded = dict(Counter(it.category for it in pool_all))
        items = []
        for category in sorted(loaded):
            pool = [it for it in pool_all if it.category == category]
            items.extend(pool[i] for i in sorted(rng.choice(len(pool), config.n_per_category, replace=False)))
    if config.train_data is None:
        pairs = generate_pairs()
        return RunData(items, pairs, loaded, len(pairs), 0)
    from iclr26.biasfree.data import read_dpo

    with warnings.catch_warnings():  # the config check warned already; the record counts what was skipped
        warnings.simplefilter("ignore")
        dpo = read_dpo(config.train_data)
    return RunData(items, dpo.pairs, loaded, dpo.n_items, len(dpo.skipped))


def _is_gender(pair: PreferencePair) -> bool:
    return pair.category is not None and pair.category.lower() in ("gender_identity", "gender")


def _judge(items: list[BBQItem], responses: list[str]) -> list[str]:
    return [judge_bbq(r, it.biased_answer, it.anti_answer) for it, r in zip(items, responses, strict=True)]


def _generate(config: BiasFreeConfig, lm, conversations: list, max_new_tokens: int):  # noqa: ANN001, ANN202
    return lm.generate(conversations, max_new_tokens=max_new_tokens, batch_size=config.batch_size)


def _result(method: str, items: list[BBQItem], gen, tokens: int, **extra: Any) -> MethodResult:  # noqa: ANN001
    responses = list(gen.texts)
    truncated = sum(r == "length" for r in gen.finish_reasons)
    return MethodResult(method, responses, _judge(items, responses), tokens, truncated, **extra)


def prompt_method(config: BiasFreeConfig, lm, method: str, items: list[BBQItem], orders: list,  # noqa: ANN001
                  vanilla: MethodResult | None = None) -> MethodResult:  # fmt: skip
    """Step 2 for one method on the base model ``lm`` (self-reflection continues ``vanilla``'s answers)."""
    pairs = list(zip(items, orders, strict=True))
    builders = {"vanilla": vanilla_messages, "self_aware": self_aware_messages, "cot": cot_messages}
    if method in builders:
        gen = _generate(config, lm, [builders[method](it, o) for it, o in pairs],
                        config.cot_max_new_tokens if method == "cot" else config.max_new_tokens)  # fmt: skip
        return _result(method, items, gen, gen.n_new_tokens)
    if method == "placebo":  # the vanilla query + a bias-neutral sentence of the self-aware prompt's length
        convs = [vanilla_messages(it, o) for it, o in pairs]
        convs = [[c[0], {"role": "user", "content": f"{c[1]['content']} {PLACEBO_SENTENCE}"}] for c in convs]
        gen = _generate(config, lm, convs, config.max_new_tokens)
        return _result(method, items, gen, gen.n_new_tokens)
    if method == "self_reflection":
        if vanilla is None:
            raise ValueError("self_reflection needs the vanilla answers")
        convs = [reflection_messages(it, o, r) for (it, o), r in zip(pairs, vanilla.responses, strict=True)]
        gen = _generate(config, lm, convs, config.max_new_tokens)
        return _result(method, items, gen, vanilla.new_tokens + gen.n_new_tokens)  # the first turn is vanilla's
    if method == "self_help":
        rewrites = _generate(config, lm, [self_help_messages(it, o) for it, o in pairs], config.rewrite_max_new_tokens)
        parsed = [parse_self_help(r, query(it, o)) for r, (it, o) in zip(rewrites.texts, pairs, strict=True)]
        gen = _generate(config, lm, [p.messages() for p in parsed], config.max_new_tokens)
        return _result(method, items, gen, rewrites.n_new_tokens + gen.n_new_tokens,
                       parsed=sum(p.parsed for p in parsed))  # fmt: skip
    raise ValueError(f"unknown prompting method {method!r}")


#: The arm -> what :func:`~iclr26.biasfree.training.train_pairs` trains: the task vector's fine-tuning targets the
#: *stereotyped* continuations, which the arm then negates.
ARM_METHOD = {"sft": "sft", "dpo": "dpo", "dpo_gender": "dpo", "task_vector": "stereo_sft"}


def train_arm(config: BiasFreeConfig, arm: str, items: list[BBQItem], orders: list, pairs: list[PreferencePair],
              world: World, device: torch.device) -> MethodResult:  # fmt: skip
    """Step 3 for one arm: train from the base model, answer the vanilla prompt, probe capability."""
    lm = _load(config, device)
    log = train_pairs(lm, pairs, method=ARM_METHOD[arm], steps=config.train_steps, batch_size=config.train_batch,
                      lr=config.lr, warmup_ratio=0.03 if arm == "task_vector" else config.warmup_ratio,
                      beta=config.beta, lora_r=config.lora_r, lora_alpha=config.lora_alpha,
                      seed=derive_seed(config.seed, "train", arm), world=world)  # fmt: skip
    if arm == "task_vector":
        # θ = θ_pre − λ τ with τ = θ_ft − θ_pre (Ilharco et al., 2023; official test.py, scaling_coef 0.5)
        lm = negate_task_vector(lm, _load(config, device), lam=config.tv_lambda)
    gen = _generate(config, lm, [vanilla_messages(it, o) for it, o in zip(items, orders, strict=True)],
                    config.max_new_tokens)  # fmt: skip
    return _result(arm, items, gen, gen.n_new_tokens, capability=probe_capability(lm), train=log)


def run(config: BiasFreeConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    world: World = ctx.world
    require(config.train_batch % world.size == 0, "train_batch",
            f"must be a multiple of the {world.size} torchrun ranks (each trains on an equal shard), "
            f"got {config.train_batch}")  # fmt: skip
    device = ctx.device
    start = time.perf_counter()
    data = load_data(config)
    items, pairs = data.items, data.pairs
    order_rng = np.random.default_rng(derive_seed(config.seed, "orders"))
    orders = [option_order(it, order_rng) for it in items]
    timings: dict[str, float] = {}
    base: list[Any] = []

    def base_lm():  # noqa: ANN202
        if not base:
            base.append(_load(config, device))
        return base[0]

    results: dict[str, MethodResult] = {}
    for method in ("vanilla", "placebo", *PROMPTING):
        t0 = time.perf_counter()
        results[method] = ctx.unit(
            f"prompt-{method}",
            lambda m=method: prompt_method(config, base_lm(), m, items, orders, results.get("vanilla")),
        )
        timings[f"prompt-{method}_s"] = time.perf_counter() - t0
        ctx.log(f"{method}: BFS {bfs(results[method].labels)} ({Counter(results[method].labels)})")
    t0 = time.perf_counter()
    base_cap = ctx.unit("capability-base", lambda: probe_capability(base_lm()))
    timings["capability-base_s"] = time.perf_counter() - t0
    base.clear()
    arms = {"sft": pairs, "dpo": pairs, "dpo_gender": [p for p in pairs if _is_gender(p)], "task_vector": pairs}
    for arm, arm_pairs in arms.items():
        if not arm_pairs:
            ctx.log(f"{arm}: skipped (no gender-labelled training pairs)")
            continue
        t0 = time.perf_counter()
        results[arm] = ctx.unit(
            f"train-{arm}", lambda a=arm, p=arm_pairs: train_arm(config, a, items, orders, p, world, device)
        )
        timings[f"train-{arm}_s"] = time.perf_counter() - t0
        ctx.log(f"{arm}: BFS {bfs(results[arm].labels)} ({Counter(results[arm].labels)})")
    timings["wall_s"] = time.perf_counter() - start
    # labels are recomputed from the stored responses, so a record always carries the current judge's labels
    results = {m: dataclasses.replace(r, labels=_judge(items, r.responses)) for m, r in results.items()}
    measured = measurements(config, items, results)
    analysis = analyse(measured, config)
    _plot(ctx, analysis)
    metrics = {**_metrics(config, items, results, base_cap, analysis), "data": _data_metrics(config, data)}
    return Outcome.of(verdict(measured, config), metrics=metrics, timings=timings)


def measurements(config: BiasFreeConfig, items: list[BBQItem], results: dict[str, MethodResult]) -> Measurements:
    """The labels the verdict reads, per method in the order the methods ran."""
    return Measurements({m: r.labels for m, r in results.items()}, [it.category for it in items], config.model)


def _finite(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def _capability(base_cap: Capability, results: dict[str, MethodResult]) -> dict[str, Any]:
    """Each model's probe, and each trained model's change from the base, item by item."""
    out: dict[str, Any] = {"base": {"qa_accuracy": base_cap.qa_accuracy, "lm_nll": base_cap.lm_nll}}
    for m, r in results.items():
        cap = r.capability
        if cap is not None:
            d = np.array(cap.qa_correct, float) - np.array(base_cap.qa_correct, float)
            out[m] = {"qa_accuracy": cap.qa_accuracy, "lm_nll": cap.lm_nll, "qa_accuracy_change": float(d.mean()),
                      "lm_nll_change": cap.lm_nll - base_cap.lm_nll}  # fmt: skip
    return out


def _metrics(config: BiasFreeConfig, items: list[BBQItem], results: dict[str, MethodResult], base_cap: Capability,
             analysis: Analysis) -> dict[str, Any]:  # fmt: skip
    """Step 4 of the module docstring: BFS per method and category, intervals, costs, capability, examples."""
    categories = list(dict.fromkeys(it.category for it in items))
    overall = {m: interval_record(iv) for m, iv in analysis.overall.items()}
    table = {m: {c: _finite(bfs([lab for it, lab in zip(items, r.labels, strict=True) if it.category == c]))
                 for c in categories} for m, r in results.items()}  # fmt: skip
    capability = _capability(base_cap, results)
    findings = dict(analysis.findings)
    if "task_vector" in capability:
        tv = capability["task_vector"]
        findings["task_vector_hurts_capability"] = bool(tv["qa_accuracy_change"] < 0 or tv["lm_nll_change"] > 0)
    return {
        "bfs": {m: overall[m]["estimate"] for m in results},
        "bfs_interval": overall,
        "bfs_by_category": table,
        "label_counts": {m: dict(sorted(Counter(r.labels).items())) for m, r in results.items()},
        "unclassified_share": analysis.unclassified,
        "new_tokens": {m: r.new_tokens for m, r in results.items()},
        "truncated": {m: r.truncated for m, r in results.items()},
        "self_help_parsed": results["self_help"].parsed,
        "capability": capability,
        "train": {m: {"final_loss": r.train.losses[-1], "first_loss": r.train.losses[0],
                      "final_margin": (r.train.margins or [None])[-1],
                      "final_accuracy": (r.train.accuracies or [None])[-1], "n_examples": r.train.n_examples}
                  for m, r in results.items() if r.train is not None},
        "examples": {m: [{"question": f"{it.context} {it.question}", "response": resp, "label": lab}
                         for it, resp, lab in list(zip(items, r.responses, r.labels, strict=True))[: config.n_examples]]
                     for m, r in results.items()},
        "findings": findings,
        "answers_changed": {m: {"labels": sum(a != b for a, b in zip(r.labels, results["vanilla"].labels, strict=True)),
                                "texts": sum(a != b for a, b in zip(r.responses, results["vanilla"].responses,
                                                                    strict=True))}
                            for m, r in results.items() if r.train is not None},
        "n_items": len(items),
    }  # fmt: skip


def _data_metrics(config: BiasFreeConfig, data: RunData) -> dict[str, Any]:
    """Where the items and pairs came from and how many the sources held, were used and were skipped."""
    return {
        "items_source": "generated" if config.data is None else str(config.data),
        "items_loaded": data.items_loaded,
        "items_used": len(data.items),
        "pairs_source": "generated" if config.train_data is None else str(config.train_data),
        "pairs_loaded": data.pairs_loaded,
        "pairs_skipped": data.pairs_skipped,
        "pairs_used": len(data.pairs),
        "gender_pairs": sum(_is_gender(p) for p in data.pairs),
    }


def _plot(ctx: RunContext, analysis: Analysis) -> None:
    """BFS per method with its 95% bootstrap interval."""
    fig, axes = figure(1, 1, width=7.5)
    ax = axes[0][0] if isinstance(axes, list) else axes
    methods = list(analysis.overall)
    for i, m in enumerate(methods):
        iv = analysis.overall[m]
        if not np.isfinite(iv.estimate):
            continue
        low = iv.low if np.isfinite(iv.low) else iv.estimate
        high = iv.high if np.isfinite(iv.high) else iv.estimate
        ax.bar(i, iv.estimate, color="C0" if m in PROMPTING else "C1" if m in (*TRAINING, "dpo_gender") else "C7")
        ax.errorbar(i, iv.estimate, yerr=[[iv.estimate - low], [high - iv.estimate]], color="k", capsize=3)
    ax.set_xticks(range(len(methods)), methods, fontsize=7, rotation=30)
    ax.set_ylabel("Bias-Free Score")
    ax.set_ylim(0, 100)
    ctx.save_plot(fig, "bfs.png")


EXPERIMENT = Experiment(config_cls=BiasFreeConfig, run=run, data_parallel=True)
