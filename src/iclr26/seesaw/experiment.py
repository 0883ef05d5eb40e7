"""Reproduction of Seesaw (arXiv 2510.14717): `iclr26 run seesaw --scale smoke|cpu|gpu`.

Two parts.

1. **Theory, noisy linear regression** (the setting of Thm 1). A step-decay base (LR halved at evenly spaced
   phase boundaries, batch B₀) against batch ramps built by :class:`iclr26.seesaw.Seesaw`:
   the SGD rule (LR kept, batch ×2), Seesaw's √ rule (LR ÷√2, batch ×2) and the pure ramp (LR kept, batch ×4).
   SGD and normalised SGD are run through the exact second-moment recursion (no sampling noise), Adam by Monte
   Carlo over many seeds at each β₂ of ``adam_beta2s`` (on ``ctx.device``). The record holds the largest relative
   risk gap to the base at the phase ends.
2. **Language-model pretraining** on :mod:`iclr26.common.tinylm` with the stdlib byte corpus, at one token budget:
   (a) cosine decay at constant batch B₀, (b) its Seesaw equivalent (the staircase of halvings of that cosine,
   LR ÷√2 and batch ×2 at each), (c) the naive ramp (batch ×2, LR unchanged) as a control; every schedule at every
   peak LR of ``peak_lrs`` on several paired seeds (one model initialisation and one data order per seed, shared by
   the schedules), each then taken at its own best LR.

The verdict is :func:`iclr26.seesaw.verdict.verdict`. The serial-step saving is a property of the plan: reported,
not judged. Wall-clock times go to ``timings`` only.

Units of work (``iclr26 run seesaw --resume RUN_DIR`` skips the finished ones): ``theory-linreg`` (part 1) and
``lm-<arm>-lr=<lr>-seed<i>`` for each schedule, peak LR and seed index.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from iclr26.common.corpus import load_corpus
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.lmtrain import CosineSchedule, TokenData, TrainConfig, TrainHistory, train_lm
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, torch_generator
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.common.verdict import Verdict
from iclr26.seesaw.config import SeesawConfig
from iclr26.seesaw.linreg import (
    LinRegProblem,
    RiskCurve,
    exact_risk,
    max_relative_gap,
    phase_plan,
    plan_from_seesaw,
    simulate,
)
from iclr26.seesaw.schedule import CosineDecay, Seesaw, StepDecay
from iclr26.seesaw.verdict import LM_ARMS, Measurements, verdict

# --- Part 1 -----------------------------------------------------------------------------------------------------


def theory_plans(config: SeesawConfig, eta: float) -> dict[str, Any]:
    """The phase plans of the regression schedules at peak LR ``eta``, built with :class:`Seesaw`: LR decay, Seesaw
    (LR ÷√2, batch ×2), the naive ramp (batch ×2, LR kept) and the pure ramp (batch ×4, LR kept)."""
    K, B0, S = config.theory_phases, config.theory_batch, config.theory_samples_per_phase
    kw = dict(peak_lr=eta, base_batch_size=B0, total_tokens=K * S, base=StepDecay.even(K - 1))
    return {
        "decay": plan_from_seesaw(Seesaw(max_batch_size=B0, **kw)),
        "seesaw": plan_from_seesaw(Seesaw(max_batch_size=B0 * 2 ** (K - 1), **kw)),
        "naive": plan_from_seesaw(Seesaw(max_batch_size=B0 * 2 ** (K - 1), rule="sgd", **kw)),
        "pure": plan_from_seesaw(Seesaw(batch_growth=4.0, max_batch_size=B0 * 4 ** (K - 1), **kw)),
    }


def _curve_summary(curve: RiskCurve, reference: RiskCurve) -> dict[str, Any]:
    return {
        "phase_end_risk": curve.phase_end_risk,
        "serial_steps": curve.steps,
        "diverged": curve.diverged,
        "max_rel_gap_to_decay": max_relative_gap(curve, reference),
    }


def adam_family(beta2: float) -> str:
    """The theory family name of Adam at ``beta2``, e.g. ``adam_b2=0.95``."""
    return f"adam_b2={beta2!r}"


def adam_regime(config: SeesawConfig, beta2: float) -> bool:
    """Whether ``beta2`` lies in the regime the paper's claim covers: Adam's averaging horizon ``1 / (1 − β₂)`` is
    at most ``adam_horizon_fraction`` × the steps of the shortest Seesaw phase (see the config field)."""
    shortest = int(min(theory_plans(config, config.adam_lr)["seesaw"].steps))
    return 1.0 / (1.0 - beta2) <= config.adam_horizon_fraction * shortest


def theory_jobs(config: SeesawConfig) -> list[tuple[str, str, Any, float | None]]:
    """Every (family, schedule, plan, β₂) of part 1: SGD (decay, naive, mixed), NSGD and Adam at each β₂ (all four
    schedules)."""
    K, B0, S = config.theory_phases, config.theory_batch, config.theory_samples_per_phase
    sgd_plans = theory_plans(config, config.sgd_lr)
    # Thm 1 with a real-valued batch: (a, β) = (√2, √2), exact recursion only.
    sgd_plans["mixed"] = phase_plan(
        eta0=config.sgd_lr, batch0=B0, lr_decay=math.sqrt(2), batch_growth=math.sqrt(2), n_phases=K, samples_per_phase=S
    )
    jobs: list[tuple[str, str, Any, float | None]] = [
        ("sgd", name, plan, None) for name, plan in sgd_plans.items() if name in ("decay", "naive", "mixed")
    ]
    jobs += [("nsgd", name, plan, None) for name, plan in theory_plans(config, config.nsgd_lr).items()]
    for beta2 in config.adam_beta2s:
        jobs += [(adam_family(beta2), n, plan, beta2) for n, plan in theory_plans(config, config.adam_lr).items()]
    return jobs


def run_theory(config: SeesawConfig, ctx: RunContext) -> dict[str, Any]:
    """Part 1: exact SGD and NSGD risk, Monte-Carlo Adam risk at every β₂ of the sweep (on ``ctx.device``), for the
    decay base and the ramps."""
    problem = LinRegProblem.power_law(
        config.theory_dim, exponent=config.theory_spectrum_exponent, noise_var=config.theory_noise_var
    )
    jobs = theory_jobs(config)
    curves: dict[str, dict[str, RiskCurve]] = {}
    for family, name, plan, beta2 in ctx.progress(jobs, total=len(jobs), desc="linear regression"):
        if beta2 is not None:
            # The same data stream for every schedule and β₂ (common random numbers).
            gen = torch_generator(derive_seed(config.seed, "adam-regression"), ctx.device)
            curve = simulate(
                problem,
                plan,
                optimizer="adam",
                n_seeds=config.adam_seeds,
                generator=gen,
                betas=(0.9, beta2),
                record_every=max(1, int(plan.steps[0]) // 64),
            )
        else:
            curve = exact_risk(problem, plan, normalized=family == "nsgd")
        curves.setdefault(family, {})[name] = curve
    summary = {
        family: {name: _curve_summary(c, arms["decay"]) for name, c in arms.items()} for family, arms in curves.items()
    }
    return {"curves": curves, "summary": summary}


# --- Part 2 -----------------------------------------------------------------------------------------------------


def lm_schedules(config: SeesawConfig, peak_lr: float) -> dict[str, Any]:
    """The three LM schedules at the config's budget and ``peak_lr``: cosine, Seesaw and the naive ramp.

    Seesaw and the naive ramp differ in the rule alone (``adam``: LR ÷√2 per doubling of the batch; ``sgd``: LR
    kept); both start from cosine's B₀, warmup and decay, and share the batch cap.
    """
    warmup = int(config.warmup_frac * config.total_tokens)
    cosine = CosineSchedule(
        peak_lr=peak_lr,
        batch_size=config.base_batch_size,
        total_tokens=config.total_tokens,
        warmup_tokens=warmup,
        final_lr_frac=config.final_lr_frac,
    )
    kw = dict(
        peak_lr=peak_lr,
        base_batch_size=config.base_batch_size,
        total_tokens=config.total_tokens,
        base=CosineDecay(config.final_lr_frac),
        warmup_tokens=warmup,
        max_batch_size=config.max_batch_size,
        tokens_per_sample=config.context_len,
    )
    return {"cosine": cosine, "seesaw": Seesaw(rule="adam", **kw), "naive": Seesaw(rule="sgd", **kw)}


def model_config(config: SeesawConfig, vocab_size: int = 256) -> TinyLMConfig:
    """The LM of every run."""
    return TinyLMConfig(
        vocab_size=vocab_size,
        context_len=config.context_len,
        d_model=config.d_model,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        d_ff=4 * config.d_model,
    )


def train_run(
    config: SeesawConfig, data: TokenData, schedule: Any, seed_index: int, ctx: RunContext, desc: str
) -> TrainHistory:
    """One LM run on ``ctx.device``; the seed index fixes the initialisation and the data order (paired across
    schedules)."""
    torch.manual_seed(derive_seed(config.seed, "init", seed_index))
    model = TinyLM(model_config(config)).to(ctx.device)
    train_cfg = TrainConfig(
        total_tokens=config.total_tokens,
        context_len=config.context_len,
        micro_batch_size=config.micro_batch_size,
        weight_decay=config.weight_decay,
        eval_every_tokens=config.total_tokens // config.eval_points,
        eval_tokens=config.eval_tokens,
        seed=derive_seed(config.seed, "data", seed_index),
        autocast=config.bf16,
    )
    t0 = time.perf_counter()
    with ctx.progress(total=config.total_tokens, desc=desc) as bar:
        history = train_lm(model, data, schedule, train_cfg, progress=bar, world=ctx.world)
    ctx.log(
        f"{desc}: val {history.final_val_loss:.4f} in {history.steps_done} steps ({time.perf_counter() - t0:.1f} s)"
    )
    return history


def run_lm(config: SeesawConfig, ctx: RunContext) -> dict[str, dict[float, list[TrainHistory]]]:
    """Part 2: every schedule at every peak LR on every seed, one unit each: ``{arm: {lr: [history per seed]}}``."""
    data = TokenData.from_corpus(load_corpus(config.data))
    runs: dict[str, dict[float, list[TrainHistory]]] = {arm: {lr: [] for lr in config.peak_lrs} for arm in LM_ARMS}
    for seed_index in range(config.n_seeds):
        for lr in config.peak_lrs:
            for arm in LM_ARMS:
                desc = f"LM {arm} lr={lr:g} seed {seed_index + 1}/{config.n_seeds}"
                runs[arm][lr].append(
                    ctx.unit(
                        f"lm-{arm}-lr={lr!r}-seed{seed_index}",
                        lambda arm=arm, lr=lr, seed_index=seed_index, desc=desc: train_run(
                            config, data, lm_schedules(config, lr)[arm], seed_index, ctx, desc
                        ),
                    )
                )
    return runs


def n_params(config: SeesawConfig) -> int:
    """Non-embedding parameters of the LM, counted on the meta device (no memory, no random draws)."""
    with torch.device("meta"):
        return TinyLM(model_config(config)).num_params()


def lm_summary(config: SeesawConfig, runs: dict[str, dict[float, list[TrainHistory]]], best: dict[str, float]):
    """The record's entry of each schedule at its best LR."""
    summary = {}
    for arm in LM_ARMS:
        histories = runs[arm][best[arm]]
        finals = np.array([h.final_val_loss for h in histories])
        summary[arm] = {
            "peak_lr": best[arm],
            "best_lr_at_grid_edge": len(config.peak_lrs) > 1
            and best[arm] in (min(config.peak_lrs), max(config.peak_lrs)),
            "final_val_loss": finals,
            "final_val_loss_mean": float(finals.mean()),
            "final_val_loss_std": float(finals.std(ddof=1)) if finals.size > 1 else 0.0,
            "final_val_loss_mean_by_lr": {
                repr(lr): float(np.mean([h.final_val_loss for h in hs])) for lr, hs in runs[arm].items()
            },
            "serial_steps": histories[0].steps_done,
            "max_batch_size": max(histories[0].batch_size),
            "flops": histories[0].flops,
        }
    return summary


# --- The record ---------------------------------------------------------------------------------------------------


def measurements(config: SeesawConfig, theory: dict[str, Any], runs) -> Measurements:
    """The plain numbers the verdict rests on."""
    ts = theory["summary"]
    return Measurements(
        theory_gaps={
            "sgd_ramp": ts["sgd"]["naive"]["max_rel_gap_to_decay"],
            "sgd_mixed": ts["sgd"]["mixed"]["max_rel_gap_to_decay"],
            "nsgd_seesaw": ts["nsgd"]["seesaw"]["max_rel_gap_to_decay"],
            "nsgd_naive": ts["nsgd"]["naive"]["max_rel_gap_to_decay"],
        },
        adam_gaps={
            b2: {n: ts[adam_family(b2)][n]["max_rel_gap_to_decay"] for n in ("seesaw", "naive", "pure")}
            for b2 in config.adam_beta2s
        },
        adam_in_regime={b2: adam_regime(config, b2) for b2 in config.adam_beta2s},
        lm_final={arm: {lr: [h.final_val_loss for h in hs] for lr, hs in by_lr.items()} for arm, by_lr in runs.items()},
        lm_n_params=n_params(config),
    )


def record_metrics(config: SeesawConfig, theory, runs, m: Measurements, check: Verdict) -> dict[str, Any]:
    """The record's metrics: both parts' numbers and the verdict's comparisons."""
    ev = check.evidence
    best = ev["best_lr"]
    ls = lm_summary(config, runs, best)
    # The serial-step saving is a property of the plan (the schedule alone fixes it), reported, not judged.
    cosine_steps = math.ceil(config.total_tokens / (config.base_batch_size * config.context_len))
    planned = 1.0 - lm_schedules(config, best["seesaw"])["seesaw"].serial_steps() / cosine_steps
    return {
        "theory": theory["summary"],
        "theory_gaps": m.theory_gaps,
        "theory_adam_gaps_by_beta2": {repr(b2): v for b2, v in m.adam_gaps.items()},
        "theory_adam_in_claim_regime": {repr(b2): r for b2, r in m.adam_in_regime.items()},
        "theory_adam_equivalence_by_beta2": {
            repr(b2): v["seesaw"] <= config.gap_tolerance < v["naive"] for b2, v in m.adam_gaps.items()
        },
        "theory_held": ev["theory_held"],
        "lm": ls,
        "lm_loss_tolerance": ev["lm_loss_tolerance"],
        "lm_cosine_pooled_seed_std": ev["cosine_pooled_seed_std"],
        "lm_loss_gap_seesaw_minus_cosine": ev["lm_loss_gap"],
        "lm_loss_gap_naive_minus_cosine": ev["lm_naive_gap"],
        "lm_paired_seesaw_minus_cosine": ev["lm_paired_seesaw_minus_cosine"],
        "lm_paired_naive_minus_cosine": ev["lm_paired_naive_minus_cosine"],
        "lm_seesaw_within_tolerance": ev["lm_seesaw_within_tolerance"],
        "lm_naive_outside_tolerance": ev["gates"]["naive_ramp_separated"]["passed"],
        "lm_step_reduction": 1.0 - ls["seesaw"]["serial_steps"] / ls["cosine"]["serial_steps"],
        "lm_planned_step_reduction": planned,
        "lm_held": ev["lm_seesaw_within_tolerance"] and ev["gates"]["naive_ramp_separated"]["passed"],
        "lm_n_params": m.lm_n_params,
        "lm_best_lr": best,
        "lm_final_val_loss_by_lr": {arm: {repr(lr): v for lr, v in by_lr.items()} for arm, by_lr in m.lm_final.items()},
        "lm_eval_tokens": runs["cosine"][best["cosine"]][0].eval_tokens,
        "lm_val_loss_curves": {arm: [h.val_loss for h in runs[arm][best[arm]]] for arm in LM_ARMS},
    }


def record_notes(config: SeesawConfig, metrics: dict[str, Any]) -> str:
    """The record's notes: seed spreads, paired intervals, best LRs, the planned step saving, Adam's regime."""
    ls, s, n = metrics["lm"], metrics["lm_paired_seesaw_minus_cosine"], metrics["lm_paired_naive_minus_cosine"]
    return (
        f"LM seed std at best LR: cosine {ls['cosine']['final_val_loss_std']:.4f}, Seesaw "
        f"{ls['seesaw']['final_val_loss_std']:.4f}; paired Seesaw-cosine {s['mean']:+.4f} [95% CI "
        f"{s['ci_low']:+.4f}, {s['ci_high']:+.4f}], naive-cosine {n['mean']:+.4f} [{n['ci_low']:+.4f}, "
        f"{n['ci_high']:+.4f}]. Best LRs: "
        + ", ".join(f"{arm} {metrics['lm_best_lr'][arm]:g}" for arm in LM_ARMS)
        + ". Serial steps are a property of the plan, not evidence: Seesaw plans "
        f"{100 * metrics['lm_planned_step_reduction']:.1f}% fewer than cosine (wall-clock is in `timings` only). "
        f"Adam's regime: horizon 1/(1-b2) <= {config.adam_horizon_fraction:g} x the shortest Seesaw phase's steps."
    )


def run(config: SeesawConfig, ctx: RunContext) -> Outcome:
    """Both parts, the plots, and the verdict against the stated tolerances."""
    theory = ctx.unit("theory-linreg", lambda: run_theory(config, ctx))
    runs = run_lm(config, ctx)
    m = measurements(config, theory, runs)
    check = verdict(m, config)
    metrics = record_metrics(config, theory, runs, m, check)
    covered = [b2 for b2 in config.adam_beta2s if m.adam_in_regime[b2]]
    _plot_theory(theory, adam_family(max(covered) if covered else config.adam_beta2s[0]), ctx)
    _plot_beta2(m.adam_gaps, m.adam_in_regime, config.gap_tolerance, ctx)
    best = metrics["lm_best_lr"]
    _plot_lm({arm: runs[arm][best[arm]] for arm in LM_ARMS}, best, ctx)
    timings = {
        "lm_train_wall_time_s": {arm: [h.wall_time_s for h in runs[arm][best[arm]]] for arm in LM_ARMS},
    }
    return Outcome.of(check, metrics=metrics, timings=timings, notes=record_notes(config, metrics))


# --- Plots ------------------------------------------------------------------------------------------------------

_STYLE = {
    "decay": ("k", "LR decay (a=2, β=1)"),
    "naive": ("tab:orange", "SGD-rule ramp (a=1, β=2)"),
    "mixed": ("tab:green", "mixed (a=√2, β=√2)"),
    "seesaw": ("tab:blue", "Seesaw (a=√2, β=2)"),
    "pure": ("tab:red", "pure ramp (a=1, β=4)"),
}


def _plot_theory(theory: dict[str, Any], adam_family_shown: str, ctx: RunContext) -> None:
    fig, axes = figure(3, 1, width=4.6)
    titles = {"sgd": "SGD (exact)", "nsgd": "normalised SGD (exact)"}
    beta2 = adam_family_shown.split("=", 1)[1]
    titles[adam_family_shown] = f"Adam (Monte Carlo, β2 = {beta2})"
    for ax, family in zip(axes[0], ("sgd", "nsgd", adam_family_shown), strict=True):
        for name, curve in theory["curves"][family].items():
            color, label = _STYLE[name]
            ax.plot(
                curve.samples,
                curve.risk,
                color=color,
                label=label,
                lw=1.2,
                ls="--" if name in ("naive", "pure") else "-",
            )
        ax.set(xlabel="samples", ylabel="excess risk", yscale="log", title=titles[family])
        ax.legend(fontsize=7)
    ctx.save_plot(fig, "linreg_risk.png")


def _plot_beta2(adam_gaps: dict[float, dict[str, float]], regime: dict[float, bool], tol: float, ctx) -> None:
    """Largest relative risk gap to LR decay vs Adam's β₂, Seesaw and the naive ramp; the claim's regime shaded."""
    fig, ax = figure(width=5.5, height=3.8)
    beta2s = sorted(adam_gaps)
    x = [1.0 / (1.0 - b) for b in beta2s]  # averaging horizon in steps
    for name in ("seesaw", "naive", "pure"):
        color, label = _STYLE[name]
        ax.plot(x, [adam_gaps[b][name] for b in beta2s], "o-", color=color, label=label)
    ax.axhline(tol, color="k", ls=":", lw=1, label=f"gap tolerance {tol}")
    covered = [xi for xi, b in zip(x, beta2s, strict=True) if regime[b]]
    if covered:
        ax.axvspan(min(x) / 1.5, max(covered) * 1.2, color="tab:green", alpha=0.12, label="regime of the claim")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{b:g}" for b in beta2s])
    ax.set(xlabel="Adam β2 (axis: horizon 1/(1-β2), log)", ylabel="max relative risk gap to LR decay")
    ax.set_title("Adam on noisy linear regression: equivalence vs β2")
    ax.legend(fontsize=7)
    ctx.save_plot(fig, "adam_beta2.png")


def _plot_lm(histories: dict[str, list[TrainHistory]], best_lr: dict[str, float], ctx: RunContext) -> None:
    colors = {"cosine": "k", "seesaw": "tab:blue", "naive": "tab:orange"}
    fig, axes = figure(2, 2, width=5.0)
    for arm in LM_ARMS:
        lr = best_lr[arm]
        for i, h in enumerate(histories[arm]):
            label = f"{arm} (lr {lr:g})" if i == 0 else None
            axes[0][0].plot(h.eval_tokens, h.val_loss, "o-", ms=3, color=colors[arm], alpha=0.8, label=label)
            axes[0][1].plot(h.eval_step, h.val_loss, "o-", ms=3, color=colors[arm], alpha=0.8, label=label)
        h = histories[arm][0]
        ls = "--" if arm == "naive" else "-"  # the naive ramp's batches equal Seesaw's: dashed, so both show
        axes[1][0].plot(h.tokens, h.lr, color=colors[arm], ls=ls, label=arm)
        axes[1][1].plot(h.tokens, h.batch_size, color=colors[arm], ls=ls, label=arm)
    for ax in axes[0]:
        ax.set_ylim(top=min(ax.get_ylim()[1], histories["cosine"][0].val_loss[1] + 0.3))
    axes[0][0].set(xlabel="tokens", ylabel="validation loss (nats/byte)", title="loss vs tokens (each at best LR)")
    axes[0][1].set(xlabel="serial optimizer steps", ylabel="validation loss (nats/byte)", title="loss vs steps")
    axes[1][0].set(xlabel="tokens", ylabel="learning rate", title="schedules: LR")
    axes[1][1].set(xlabel="tokens", ylabel="batch (sequences)", title="schedules: batch size")
    axes[1][1].set_yscale("log", base=2)
    for ax in (*axes[0], *axes[1]):
        ax.legend(fontsize=8)
    ctx.save_plot(fig, "lm_loss.png")


EXPERIMENT = Experiment(config_cls=SeesawConfig, run=run, data_parallel=True)
