"""Reproduction of DExploration's headline claim on a generated corpus of non-linear integer arithmetic proofs.

Let's Explore Step by Step: Generating Provable Formal Statements with Deductive Exploration, ICLR 2026,
OpenReview Njrkeo3DiJ. Per seed k:

1. Corpus: ``n_proofs`` random forward proofs (:mod:`iclr26.dexploration.corpus`), or the proofs of
   ``data=PATH``; Exploratory Transformation turns each into an interleaved trajectory (and a Staged one).
2. Training, equal for every arm (same corpus, model size, steps, batch): a GRU agent on the interleaved
   trajectories (DExplorer), one on the Staged trajectories (the paper's ablation), and one on the bare statements
   Γ ⊢ U (the Conjecture-then-Prove baseline's conjecturer).
3. ``n_episodes`` episodes per arm: DExplorer and Staged explore with the z3 step kernel (``mode="products"``: one
   degree-2 certificate per step, which the Coq replay re-asserts); the *unchecked* control runs the
   DExplorer agent with the kernel switched off; Conjecture-then-Prove samples a statement in one shot and runs the
   bounded prover (:func:`~iclr26.dexploration.prover.bounded_prove`) on it.
4. Evaluation of every output: valid = hypotheses satisfiable, conclusion entailed, and non-trivial (U is neither a
   tautology nor implied by a single hypothesis); for CtP also proved by the bounded prover. ``coqc`` compiles each
   submitted statement's certificate (:mod:`iclr26.dexploration.coq`); difficulty = share of valid statements that
   ``lia``, ``nia`` and z3 pass@k all fail to prove bare; complexity = proof length and DAG depth.
5. Verdict (fixed before the first run): with per-seed success rates s (valid per episode) and tokens per valid
   statement c (sampled tokens / (valid + 1)), the claim holds when (a) s_DExplorer − s_CtP and (b)
   log(c_CtP / c_DExplorer) each have a seed mean above their margin and a one-sided ``confidence`` lower bound
   above 0 (paired t over seeds), (c) ``coqc`` accepts every DExplorer output (share >= ``coq_accept_min``, at least
   one output), and (d) the control fails: ``coqc`` rejects at least one output of the unchecked agent.

Units of work (``--resume``): ``train-{explorer,staged,conjecturer}-seed<k>`` (state dicts) and
``episodes-{dexplorer,staged,unchecked,ctp}-seed<k>`` (episodes and their evaluation, coqc included).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from iclr26.common.config import ConfigError, ExperimentConfig, require, threshold
from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.common.stats import MarginTest, margin_test


def _opt(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class DExplorationConfig(ExperimentConfig):
    """DExploration vs Conjecture-then-Prove on a generated proof corpus; defaults are the ``cpu`` scale."""

    n_seeds: int = _opt(4, "seeds (corpus, training and sampling draws) for the paired tests (issue 24: paired over "
                        "seeds); the paper's gap (23% -> 55% valid vs Conjecture-Prover) needs few")  # fmt: skip
    n_proofs: int = _opt(2000, "forward proofs in the generated corpus per seed (paper: 39,509 trajectories from "
                         "NuminaMath-Lean [unverified]; sized for 2 CPU cores)")  # fmt: skip
    max_vars: int = _opt(3, "most variables of a generated proof (not in the paper)")
    max_hyps: int = _opt(3, "most hypotheses of a generated proof (not in the paper)")
    max_steps: int = _opt(3, "most steps of a generated proof (not in the paper)")
    max_degree: int = _opt(2, "largest degree of a derived fact (not in the paper; products of two bounds)")
    backward_prob: float = _opt(0.3, "share of proofs written with a backward 'suffices' step, which deductive "
                                "rewriting removes (not in the paper)")  # fmt: skip
    train_steps: int = _opt(200, "optimizer steps per agent, equal for every arm (issue 24: same training budget)")
    batch_size: int = _opt(32, "sequences per step (not in the paper)")
    lr: float = _opt(3e-3, "AdamW peak learning rate, cosine decay (not in the paper; usual for small GRUs)")
    d_embed: int = _opt(32, "token embedding width (not in the paper)")
    d_hidden: int = _opt(128, "GRU hidden width, equal for every arm (paper: an 8B prover; sized for the CPU)")
    n_layers: int = _opt(1, "GRU layers (not in the paper)")
    n_episodes: int = _opt(60, "episodes per arm and seed (paper: 5,000 per method [unverified])")
    max_actions: int = _opt(40, "most proposed actions per exploration episode (paper: 80 steps [unverified])")
    temperature: float = _opt(1.0, "sampling temperature of every arm (not in the paper)")
    kernel_timeout_ms: int = _opt(500, "z3 time limit per kernel query; past it the action is rejected")
    prover_depth: int = _opt(2, "forward-chaining levels of the baseline's bounded prover (the corpus's proofs "
                             "need at most max_steps - 1 levels before the last linear step)")  # fmt: skip
    prover_max_facts: int = _opt(120, "most facts the bounded prover keeps (not in the paper)")
    difficulty_k: int = _opt(4, "k of z3 pass@k in the difficulty measure (paper: Pass@4 and Pass@64)")
    difficulty_timeout_ms: int = _opt(200, "z3 time limit per difficulty attempt (not in the paper)")
    coq_time_limit_s: int = _opt(10, "Coq timeout of each lia/nia call in a certificate (not in the paper)")
    bare_time_limit_s: int = _opt(2, "Coq timeout of lia/nia on a bare statement (difficulty; not in the paper)")
    staged_arm: bool = _opt(True, "also train and run the Staged ablation (paper: 2340 valid vs 2726 interleaved)")
    confidence: float = _opt(0.95, "one-sided confidence of the paired lower bounds (fixed before the first run)")
    success_margin: float = _opt(0.0, "seed-mean success-rate gain over CtP that must be exceeded (the claim is "
                                 "'exceeds'; fixed before the first run)")  # fmt: skip
    token_margin: float = _opt(0.0, "seed-mean log(tokens per valid, CtP / DExplorer) that must be exceeded (the "
                               "claim is 'lower token cost'; fixed before the first run)")  # fmt: skip
    coq_accept_min: float = _opt(1.0, "share of DExplorer outputs coqc must accept (issue 24: every output; the "
                                 "paper's guaranteed provability)")  # fmt: skip
    data: Path | None = _opt(None, "a JSONL corpus of forward proofs in this module's format (see corpus.py; the "
                             "paper's Lean 4 data cannot be checked here); replaces the generated corpus")  # fmt: skip

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"n_seeds": 1, "n_proofs": 60, "train_steps": 4, "batch_size": 8, "d_embed": 8, "d_hidden": 16,
                  "n_episodes": 4, "max_actions": 4, "prover_max_facts": 20, "staged_arm": False},
        "gpu": {"n_seeds": 10, "n_proofs": 20000, "train_steps": 3000, "d_hidden": 256, "n_layers": 2,
                "n_episodes": 500, "max_actions": 80, "max_steps": 4},
    }  # fmt: skip
    CPU_BOUND: ClassVar[str | None] = (
        "the kernel (z3) and the certificates (coqc) are CPU programs and the agent is a small GRU; the gpu preset "
        "is a larger corpus, agent and episode count on the CPU"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("n_seeds", "n_proofs", "train_steps", "batch_size", "d_embed", "d_hidden", "n_layers",
                     "n_episodes", "max_actions", "kernel_timeout_ms", "prover_depth", "difficulty_k",
                     "difficulty_timeout_ms", "coq_time_limit_s", "bare_time_limit_s"):  # fmt: skip
            require(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        for name in ("max_vars", "max_hyps", "max_steps", "max_degree"):
            require(getattr(self, name) >= 2, name, f"must be >= 2, got {getattr(self, name)}")
        require(self.max_vars <= 4, "max_vars", f"the language has 4 variables, got {self.max_vars}")
        require(self.prover_max_facts >= 2, "prover_max_facts", f"must be >= 2, got {self.prover_max_facts}")
        require(0 <= self.backward_prob <= 1, "backward_prob", f"must lie in [0, 1], got {self.backward_prob}")
        require(self.lr > 0, "lr", f"must be > 0, got {self.lr}")
        require(self.temperature > 0, "temperature", f"must be > 0, got {self.temperature}")
        require(0.5 < self.confidence < 1, "confidence", f"must lie in (0.5, 1), got {self.confidence}")
        require(0 < self.coq_accept_min <= 1, "coq_accept_min", f"must lie in (0, 1], got {self.coq_accept_min}")
        if self.data is not None:
            from iclr26.dexploration.corpus import load_jsonl
            from iclr26.dexploration.kernel import Z3Kernel

            try:
                load_jsonl(self.data, kernel=Z3Kernel(timeout_ms=self.kernel_timeout_ms))
            except ValueError as err:
                raise ConfigError(f"config field 'data': {err}") from None


ARMS = ("dexplorer", "staged", "unchecked", "ctp")


@dataclass(frozen=True)
class ArmResult:
    """One arm's episodes on one seed, evaluated (a unit's result).

    Attributes:
        episodes: episodes run.
        outputs: statements produced (DExplorer/Staged/unchecked: submitted; CtP: parsed and satisfiable).
        valid: valid statements (module docstring, step 4).
        distinct_valid: valid statements counted once.
        tokens: tokens sampled by the agent (CtP: the conjectures, plus the written proofs of proved ones).
        kernel_queries: z3 queries spent during the episodes (CtP: by the bounded prover).
        proof_lengths: steps of each valid statement's proof.
        dag_depths: inference depth of each valid statement's conclusion.
        hard: per valid statement, whether lia, nia and z3 pass@k all failed on it bare.
        coq_checked: outputs whose certificate was compiled.
        coq_accepted: of them, accepted by coqc.
        rejections: rejected actions (or malformed conjectures) by reason.
        ends: why episodes ended.
        examples: a few valid statements as text.
    """

    episodes: int
    outputs: int
    valid: int
    distinct_valid: int
    tokens: int
    kernel_queries: int
    proof_lengths: list[int]
    dag_depths: list[int]
    hard: list[bool]
    coq_checked: int
    coq_accepted: int
    rejections: dict[str, int]
    ends: dict[str, int]
    examples: list[str]

    @property
    def success_rate(self) -> float:
        """Valid statements per episode."""
        return self.valid / self.episodes

    @property
    def tokens_per_valid(self) -> float:
        """Tokens per valid statement, with one pseudo-valid statement so a seed without any stays finite."""
        return self.tokens / (self.valid + 1)


def _corpus(config: DExplorationConfig, seed: int):  # noqa: ANN202
    from iclr26.dexploration.corpus import load_jsonl, random_proof

    if config.data is not None:
        return load_jsonl(config.data)
    rng = numpy_rng(derive_seed(seed, "corpus"))
    return [
        random_proof(rng, max_vars=config.max_vars, max_hyps=config.max_hyps, max_steps=config.max_steps,
                     max_degree=config.max_degree, backward_prob=config.backward_prob)
        for _ in range(config.n_proofs)
    ]  # fmt: skip


def _train(config: DExplorationConfig, sequences: list[list[str]], seed: int, arm: str):  # noqa: ANN202
    from iclr26.dexploration.agent import train_agent

    return train_agent(
        sequences, steps=config.train_steps, batch_size=config.batch_size, lr=config.lr, d_embed=config.d_embed,
        d_hidden=config.d_hidden, n_layers=config.n_layers, generator=torch_generator(derive_seed(seed, "train", arm)),
    )  # fmt: skip


def statement_text(st) -> str:  # noqa: ANN001
    """``x, y, h1 : F1, ... |- U`` for the record."""
    parts = [b.name if b.kind == "var" else f"{b.name}: {b.fact.text()}" for b in st.binders]
    return f"{', '.join(parts)} |- {st.conclusion.text()}"


def is_nontrivial(st, kernel) -> bool:  # noqa: ANN001
    """U is neither a tautology nor implied by one hypothesis of Γ alone."""
    if kernel.entails([], st.conclusion).proved is not False:
        return False
    return all(kernel.entails([h], st.conclusion).proved is False for h in st.hypotheses)


def _evaluate(config: DExplorationConfig, arm: str, statements: list, tokens: int, queries: int, episodes: int,
              rejections: Counter, ends: Counter) -> ArmResult:  # fmt: skip
    """Step 4 of the module docstring on one arm's outputs."""
    from iclr26.dexploration.coq import CoqCertifier, bare_coq
    from iclr26.dexploration.kernel import Z3Kernel
    from iclr26.dexploration.prover import z3_pass_at_k

    kernel = Z3Kernel(timeout_ms=config.kernel_timeout_ms)
    valid = []
    for st in statements:
        ok = is_nontrivial(st, kernel)
        if ok and arm == "unchecked":
            sat = kernel.satisfiable(st.hypotheses) is True
            ok = sat and kernel.entails(st.hypotheses, st.conclusion).proved is True
        if ok:
            valid.append(st)
    certified = statements if arm != "ctp" else valid
    accepted = CoqCertifier(time_limit_s=config.coq_time_limit_s).certify(certified)
    bare = bare_coq(valid, time_limit_s=config.bare_time_limit_s)
    hard = [
        not (bare["lia"][i] or bare["nia"][i] or
             z3_pass_at_k(st, k=config.difficulty_k, timeout_ms=config.difficulty_timeout_ms))
        for i, st in enumerate(valid)
    ]  # fmt: skip
    return ArmResult(
        episodes=episodes, outputs=len(statements), valid=len(valid), distinct_valid=len({s.key() for s in valid}),
        tokens=tokens, kernel_queries=queries, proof_lengths=[len(s.steps) for s in valid],
        dag_depths=[s.dag_depth() for s in valid], hard=hard, coq_checked=len(certified),
        coq_accepted=sum(accepted), rejections=dict(sorted(rejections.items())), ends=dict(sorted(ends.items())),
        examples=[statement_text(s) for s in valid[:3]],
    )  # fmt: skip


def _run_explorer(config: DExplorationConfig, trained, seed: int, arm: str) -> ArmResult:  # noqa: ANN001
    from iclr26.dexploration.agent import explore, load_agent
    from iclr26.dexploration.kernel import Z3Kernel

    model = load_agent(trained, d_embed=config.d_embed, d_hidden=config.d_hidden, n_layers=config.n_layers)
    kernel = Z3Kernel(timeout_ms=config.kernel_timeout_ms, mode="products")
    eps = explore(model, kernel, config.n_episodes, max_actions=config.max_actions, temperature=config.temperature,
                  check=arm != "unchecked", generator=torch_generator(derive_seed(seed, "sample", arm)))  # fmt: skip
    rejections: Counter = Counter()
    for e in eps:
        rejections.update(e.rejections)
    statements = [e.statement for e in eps if e.statement is not None]
    return _evaluate(config, arm, statements, sum(e.tokens for e in eps), kernel.queries, len(eps), rejections,
                     Counter(e.end for e in eps))  # fmt: skip


def conjecture_statement(tokens: list[str]):  # noqa: ANN201
    """The statement (binders, no proof yet) and goal of a one-shot conjecture, or the reason it is malformed.

    Returns:
        ``(binders, goal, None)`` or ``(None, None, reason)``.
    """
    from iclr26.dexploration.agent import parse_conjecture
    from iclr26.dexploration.env import Entry, MalformedAction
    from iclr26.dexploration.logic import parse_fact

    try:
        conj = parse_conjecture(tokens)
    except MalformedAction as err:
        return None, None, err.reason
    binders: list[Entry] = []
    names: set[str] = set()
    for a in conj.actions:
        if a.kind == "intro":
            if a.var in names:
                return None, None, "duplicate_variable"
            names.add(str(a.var))
            binders.append(Entry("var", str(a.var)))
        else:
            assert a.fact is not None
            if not a.fact.variables <= names:
                return None, None, "unbound_variable"
            binders.append(Entry("hyp", f"h{sum(b.kind == 'hyp' for b in binders) + 1}", a.fact))
    goal = parse_fact(conj.goal_tokens)
    if not goal.variables <= names:
        return None, None, "unbound_variable"
    if not any(b.kind == "hyp" for b in binders):
        return None, None, "no_hypothesis"
    return binders, goal, None


def _run_ctp(config: DExplorationConfig, trained, seed: int) -> ArmResult:  # noqa: ANN001
    from iclr26.dexploration.agent import conjecture, load_agent
    from iclr26.dexploration.kernel import Z3Kernel
    from iclr26.dexploration.prover import bounded_prove

    model = load_agent(trained, d_embed=config.d_embed, d_hidden=config.d_hidden, n_layers=config.n_layers)
    samples = conjecture(model, config.n_episodes, temperature=config.temperature,
                         generator=torch_generator(derive_seed(seed, "sample", "ctp")))  # fmt: skip
    kernel = Z3Kernel(timeout_ms=config.kernel_timeout_ms)
    reasons: Counter = Counter()
    proved = []
    tokens = sum(n for _, n in samples)
    queries = 0
    for toks, _ in samples:
        binders, goal, reason = conjecture_statement(toks)
        if reason is not None:
            reasons[reason] += 1
            continue
        if kernel.satisfiable([b.fact for b in binders if b.kind == "hyp"]) is not True:
            reasons["explosion"] += 1
            continue
        res = bounded_prove(binders, goal, depth=config.prover_depth, max_facts=config.prover_max_facts,
                            max_degree=config.max_degree + 1, timeout_ms=config.kernel_timeout_ms)  # fmt: skip
        queries += res.queries
        if res.statement is None:
            reasons["not_proved"] += 1
            continue
        # The written proof costs its DEDUCE tokens, as the prover's output in the paper's token count.
        tokens += sum(len(s.fact.tokens()) + 2 for s in res.statement.steps)
        proved.append(res.statement)
    return _evaluate(config, "ctp", proved, tokens, queries + kernel.queries, len(samples), reasons,
                     Counter({"conjectured": len(samples)}))  # fmt: skip


def run(config: DExplorationConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    from iclr26.dexploration.agent import conjecture_sequence, explorer_sequence
    from iclr26.dexploration.coq import coqc_path
    from iclr26.dexploration.transform import exploratory_transformation

    coqc_path()  # fail before any work when coqc is missing
    start = time.perf_counter()
    arms = [a for a in ARMS if a != "staged" or config.staged_arm]
    results: dict[str, list[ArmResult]] = {a: [] for a in arms}
    losses: dict[str, list[list[float]]] = {}
    for k in range(config.n_seeds):
        seed = derive_seed(config.seed, "seed", k)
        proofs = _corpus(config, seed)
        interleaved = [exploratory_transformation(p) for p in proofs]
        data = {"explorer": [explorer_sequence(a) for a in interleaved],
                "conjecturer": [conjecture_sequence(a) for a in interleaved]}  # fmt: skip
        if config.staged_arm:
            data["staged"] = [explorer_sequence(exploratory_transformation(p, staged=True)) for p in proofs]
        trained = {}
        for name, seqs in data.items():
            trained[name] = ctx.unit(f"train-{name}-seed{k}", lambda s=seqs, n=name, sd=seed: _train(config, s, sd, n))
            losses.setdefault(name, []).append(trained[name].losses)
        for arm in arms:
            if arm == "ctp":
                res = ctx.unit(f"episodes-ctp-seed{k}",
                               lambda t=trained["conjecturer"], sd=seed: _run_ctp(config, t, sd))  # fmt: skip
            else:
                agent = trained["staged" if arm == "staged" else "explorer"]
                res = ctx.unit(f"episodes-{arm}-seed{k}",
                               lambda a=arm, t=agent, sd=seed: _run_explorer(config, t, sd, a))  # fmt: skip
            results[arm].append(res)
            ctx.log(f"seed {k} {arm}: {res.valid}/{res.episodes} valid, {res.tokens} tokens, "
                    f"coqc {res.coq_accepted}/{res.coq_checked}")  # fmt: skip
    return _outcome(config, ctx, results, losses, time.perf_counter() - start)


def _arm_metrics(rs: list[ArmResult]) -> dict[str, Any]:
    valid = sum(r.valid for r in rs)
    lengths = [x for r in rs for x in r.proof_lengths]
    depths = [x for r in rs for x in r.dag_depths]
    hard = [x for r in rs for x in r.hard]
    rejections: Counter = Counter()
    for r in rs:
        rejections.update(r.rejections)
    return {
        "success_rate_per_seed": [r.success_rate for r in rs],
        "success_rate": float(np.mean([r.success_rate for r in rs])),
        "tokens_per_valid_per_seed": [r.tokens_per_valid for r in rs],
        "tokens_per_valid": float(np.mean([r.tokens_per_valid for r in rs])),
        "valid": valid, "episodes": sum(r.episodes for r in rs), "outputs": sum(r.outputs for r in rs),
        "distinct_valid": sum(r.distinct_valid for r in rs),
        "tokens": sum(r.tokens for r in rs), "kernel_queries": sum(r.kernel_queries for r in rs),
        "mean_proof_length": float(np.mean(lengths)) if lengths else 0.0,
        "mean_dag_depth": float(np.mean(depths)) if depths else 0.0,
        "max_dag_depth": max(depths, default=0),
        "difficulty_hard_share": float(np.mean(hard)) if hard else 0.0,
        "coq_checked": sum(r.coq_checked for r in rs), "coq_accepted": sum(r.coq_accepted for r in rs),
        "coq_accept_share": (sum(r.coq_accepted for r in rs) / max(sum(r.coq_checked for r in rs), 1)),
        "rejections": dict(sorted(rejections.items())),
        "examples": [e for r in rs for e in r.examples][:4],
    }  # fmt: skip


def _outcome(config: DExplorationConfig, ctx: RunContext, results: dict[str, list[ArmResult]],
             losses: dict[str, list[list[float]]], wall: float) -> Outcome:  # fmt: skip
    """Metrics, paired tests, plots and the verdict (module docstring, step 5)."""
    dx, ctp, ctl = results["dexplorer"], results["ctp"], results["unchecked"]
    success = margin_test([a.success_rate - b.success_rate for a, b in zip(dx, ctp, strict=True)],
                     margin=config.success_margin, confidence=config.confidence)  # fmt: skip
    cost = margin_test([math.log(b.tokens_per_valid / a.tokens_per_valid) if a.tokens and b.tokens else 0.0
                   for a, b in zip(dx, ctp, strict=True)], margin=config.token_margin,
                  confidence=config.confidence)  # fmt: skip
    dx_checked, dx_accepted = sum(r.coq_checked for r in dx), sum(r.coq_accepted for r in dx)
    coq_share = dx_accepted / dx_checked if dx_checked else 0.0
    coq_ok = dx_checked > 0 and coq_share >= config.coq_accept_min
    ctl_checked, ctl_accepted = sum(r.coq_checked for r in ctl), sum(r.coq_accepted for r in ctl)
    control_fails = ctl_checked > ctl_accepted
    held = bool(success.passes and cost.passes and coq_ok and control_fails)
    metrics = {"arms": {arm: _arm_metrics(rs) for arm, rs in results.items()},
               "final_train_loss": {n: [float(np.mean(x[-10:])) for x in ls] for n, ls in losses.items()}}  # fmt: skip
    evidence = {
        "success_rate_gain": asdict(success),
        "log_token_cost_ratio": asdict(cost),
        "dexplorer_coq_accepted": dx_accepted, "dexplorer_coq_checked": dx_checked,
        "dexplorer_coq_share": coq_share, "coq_all_accepted": coq_ok,
        "control_unchecked_coq_accepted": ctl_accepted, "control_unchecked_coq_checked": ctl_checked,
        "control_fails": control_fails, "n_seeds": config.n_seeds,
        "thresholds": {n: threshold(config, n) for n in ("success_margin", "token_margin", "coq_accept_min",
                                                          "confidence")},
    }  # fmt: skip
    _plot(ctx, results)

    def fmt(x: MarginTest, pct: bool) -> str:
        v = f"{x.mean:+.1%}" if pct else f"{x.mean:+.2f}"
        ci = "" if x.ci95_halfwidth is None else (f" ± {x.ci95_halfwidth:.1%}" if pct else f" ± {x.ci95_halfwidth:.2f}")
        return v + ci

    m = metrics["arms"]
    measurement = (
        f"{config.n_seeds} seed(s) x {config.n_episodes} episodes: success DExplorer "
        f"{m['dexplorer']['success_rate']:.1%} vs CtP {m['ctp']['success_rate']:.1%} (gain {fmt(success, True)}); "
        f"tokens/valid "
        f"{m['dexplorer']['tokens_per_valid']:.0f} vs {m['ctp']['tokens_per_valid']:.0f} (log ratio "
        f"{fmt(cost, False)}); coqc accepts {dx_accepted}/{dx_checked} DExplorer outputs, "
        f"{ctl_accepted}/{ctl_checked} of the unchecked control's"
    )
    notes = ("Paired over seeds; ± is the 95% two-sided half-width. A comparison passes when the seed mean exceeds "
             f"its margin and the one-sided {config.confidence:.0%} lower bound exceeds 0. Tokens per valid "
             "statement add one pseudo-valid statement per arm and seed.")  # fmt: skip
    return Outcome(metrics=metrics, claim_held=held, evidence=evidence, measurement=measurement, notes=notes,
                   timings={"wall_s": wall})  # fmt: skip


def _plot(ctx: RunContext, results: dict[str, list[ArmResult]]) -> None:
    """Success rate and tokens per valid statement per arm (mean and seeds)."""
    fig, axes = figure(2, 1, width=7.0)
    names = list(results)
    for ax, get, title in ((axes[0][0], lambda r: r.success_rate, "valid statements per episode"),
                           (axes[0][1], lambda r: r.tokens_per_valid, "tokens per valid statement")):  # fmt: skip
        for i, arm in enumerate(names):
            vals = [get(r) for r in results[arm]]
            ax.bar(i, float(np.mean(vals)), color=f"C{i}", alpha=0.6)
            ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
        ax.set_xticks(range(len(names)), names, fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0][1].set_yscale("log")
    ctx.save_plot(fig, "success_and_cost.png")


EXPERIMENT = Experiment(config_cls=DExplorationConfig, run=run)
