"""Reproduction of DExploration's headline claim on a generated corpus of non-linear integer arithmetic proofs.

Let's Explore Step by Step: Generating Provable Formal Statements with Deductive Exploration, ICLR 2026,
OpenReview Njrkeo3DiJ. Per seed k:

1. Corpus: ``n_proofs`` random forward proofs (:mod:`iclr26.dexploration.corpus`), or the proofs of
   ``data=PATH``; Exploratory Transformation turns each into an interleaved trajectory (and a Staged one).
2. Training, equal for every arm (same corpus, model size, steps, batch): a GRU agent on the interleaved
   trajectories (DExplorer), one on the Staged trajectories (the paper's ablation), and one on the bare statements
   Γ ⊢ U (the Conjecture-then-Prove baseline's conjecturer).
3. ``n_episodes`` episodes per exploring arm: DExplorer and Staged explore with the z3 step kernel
   (``mode="products"``: one degree-2 certificate per step, which the Coq replay re-asserts); the *unchecked*
   control runs the DExplorer agent with the kernel switched off. Conjecture-then-Prove samples one-shot statements,
   resampling until it has spent DExplorer's tokens of that seed (malformed ones cost their tokens and are drawn
   again), and runs the bounded prover (:func:`~iclr26.dexploration.prover.bounded_prove`) on each well-formed,
   satisfiable one. The *trivial script* (:data:`TRIVIAL_SCRIPT`, 25 tokens) is repeated up to the same tokens.
4. Evaluation of every output: valid = hypotheses satisfiable, conclusion entailed, and non-trivial (U is neither a
   tautology nor implied by a single hypothesis); for CtP also proved by the bounded prover. *Non-linear* = valid
   and not provable bare by linear arithmetic with non-linear monomials as atoms (``lia``'s fragment). ``coqc``
   compiles each submitted statement's certificate (:mod:`iclr26.dexploration.coq`); reported besides: hard share
   (``lia``, ``nia`` and z3 pass@k all fail bare), proof length and DAG depth. z3 runs under a resource limit
   (``rlimit``), so no answer depends on the machine's load.
5. Verdict: :mod:`iclr26.dexploration.verdict` (distinct valid and distinct non-linear statements per 1,000
   tokens against CtP at equal tokens, ``coqc`` acceptance, the unchecked control, and the trivial-script gate).

Units of work (``--resume``): ``train-{explorer,staged,conjecturer}-seed<k>`` (state dicts) and
``episodes-{dexplorer,staged,unchecked,ctp,trivial_script}-seed<k>`` (episodes and their evaluation, coqc included).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.dexploration.config import DExplorationConfig
from iclr26.dexploration.verdict import Measurements, verdict

ARMS = ("dexplorer", "staged", "unchecked", "ctp", "trivial_script")
#: The laziest episode that passes every check: two bounds and their sum (a linear step any prover finds).
TRIVIAL_SCRIPT = "INTRO x ; HYP x <= 1 ; INTRO y ; HYP y <= 1 ; DEDUCE x + y <= 2 ; SUBMIT ;"


@dataclass(frozen=True)
class ArmResult:
    """One arm's episodes on one seed, evaluated (a unit's result).

    Attributes:
        episodes: episodes run (CtP: conjectures sampled; the trivial script: its repetitions).
        outputs: statements produced (DExplorer/Staged/unchecked: submitted; CtP: proved; script: submitted).
        wellformed: CtP: conjectures that parse with every variable bound and a hypothesis; others: ``outputs``.
        valid: valid statements (module docstring, step 4).
        distinct_valid: valid statements counted once.
        distinct_nonlinear: distinct valid statements that linear arithmetic cannot prove bare.
        tokens: tokens sampled by the agent (CtP: its conjectures, within DExplorer's tokens of the seed).
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
    wellformed: int
    valid: int
    distinct_valid: int
    distinct_nonlinear: int
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
        return self.valid / self.episodes if self.episodes else 0.0  # the paper's Valid count / 5,000 episodes

    @property
    def tokens_per_valid(self) -> float | None:
        """Tokens per valid statement; None without a valid statement (no finite cost to report)."""
        return self.tokens / self.valid if self.valid else None  # the paper's "token cost per valid"


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


def is_nonlinear(st, kernel) -> bool:  # noqa: ANN001
    """Linear arithmetic (``kernel`` in mode ``linear``: non-linear monomials as atoms) does not prove Γ ⊢ U bare."""
    return kernel.entails(st.hypotheses, st.conclusion).proved is not True


def _judge(config: DExplorationConfig, arm: str, st) -> tuple[bool, bool]:  # noqa: ANN001
    """(valid, non-linear) of one output (module docstring, step 4)."""
    from iclr26.dexploration.kernel import Z3Kernel

    kernel = Z3Kernel(rlimit=config.kernel_rlimit)
    ok = is_nontrivial(st, kernel)
    if ok and arm == "unchecked":
        ok = kernel.satisfiable(st.hypotheses) is True and kernel.entails(st.hypotheses, st.conclusion).proved is True
    return ok, ok and is_nonlinear(st, Z3Kernel(rlimit=config.kernel_rlimit, mode="linear"))


def _evaluate(config: DExplorationConfig, arm: str, statements: list, counts: dict[str, int], rejections: Counter,
              ends: Counter) -> ArmResult:  # fmt: skip
    """Step 4 of the module docstring on one arm's outputs (each distinct statement judged once).

    ``counts`` holds ``episodes``, ``tokens``, ``queries`` and, for CtP, ``wellformed``.
    """
    from iclr26.dexploration.coq import CoqCertifier, bare_coq
    from iclr26.dexploration.prover import z3_pass_at_k

    distinct = {s.key(): s for s in statements}
    judged = {k: _judge(config, arm, s) for k, s in distinct.items()}
    valid = [s for s in statements if judged[s.key()][0]]
    certified = statements if arm != "ctp" else valid
    unique = {s.key(): s for s in certified}
    certifier = CoqCertifier(time_limit_s=config.coq_time_limit_s, coqc_timeout_s=config.coqc_timeout_s)
    accepted = dict(zip(unique, certifier.certify(list(unique.values())), strict=True))
    first = list({s.key(): s for s in valid}.values())
    bare = bare_coq(first, time_limit_s=config.bare_time_limit_s, coqc_timeout_s=config.coqc_timeout_s)
    hard = [
        not (bare["lia"][i] or bare["nia"][i] or
             z3_pass_at_k(st, k=config.difficulty_k, rlimit=config.difficulty_rlimit))
        for i, st in enumerate(first)
    ]  # fmt: skip
    return ArmResult(
        episodes=counts["episodes"], outputs=len(statements), wellformed=counts.get("wellformed", len(statements)),
        valid=len(valid), distinct_valid=len(first), distinct_nonlinear=sum(judged[s.key()][1] for s in first),
        tokens=counts["tokens"], kernel_queries=counts["queries"], proof_lengths=[len(s.steps) for s in first],
        dag_depths=[s.dag_depth() for s in first], hard=hard, coq_checked=len(certified),
        coq_accepted=sum(accepted[s.key()] for s in certified), rejections=dict(sorted(rejections.items())),
        ends=dict(sorted(ends.items())), examples=[statement_text(s) for s in first[:3]],
    )  # fmt: skip


def _run_explorer(config: DExplorationConfig, trained, seed: int, arm: str) -> ArmResult:  # noqa: ANN001
    from iclr26.dexploration.agent import explore, load_agent
    from iclr26.dexploration.kernel import Z3Kernel

    model = load_agent(trained, d_embed=config.d_embed, d_hidden=config.d_hidden, n_layers=config.n_layers)
    kernel = Z3Kernel(rlimit=config.kernel_rlimit, mode="products")
    eps = explore(model, kernel, config.n_episodes, max_actions=config.max_actions, temperature=config.temperature,
                  check=arm != "unchecked", generator=torch_generator(derive_seed(seed, "sample", arm)))  # fmt: skip
    rejections: Counter = Counter()
    for e in eps:
        rejections.update(e.rejections)
    statements = [e.statement for e in eps if e.statement is not None]
    counts = {"episodes": len(eps), "tokens": sum(e.tokens for e in eps), "queries": kernel.queries}
    return _evaluate(config, arm, statements, counts, rejections, Counter(e.end for e in eps))


def run_trivial_script(config: DExplorationConfig, budget: int) -> ArmResult:
    """:data:`TRIVIAL_SCRIPT` through the checked environment, repeated while its tokens fit in ``budget``."""
    from iclr26.dexploration.env import ExplorationEnv
    from iclr26.dexploration.kernel import Z3Kernel

    kernel = Z3Kernel(rlimit=config.kernel_rlimit, mode="products")
    env = ExplorationEnv(kernel)
    tokens = TRIVIAL_SCRIPT.split()
    for action in TRIVIAL_SCRIPT.removesuffix(" ;").split(" ; "):
        res = env.step_tokens([*action.split(), ";"])
        assert res.accepted, f"the trivial script's action {action!r} was rejected: {res.reason}"
    n = max(budget // len(tokens), 1)
    counts = {"episodes": n, "tokens": n * len(tokens), "queries": kernel.queries}
    return _evaluate(config, "trivial_script", [res.statement] * n, counts, Counter(), Counter({"submitted": n}))


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


def _sample_within(config: DExplorationConfig, model, budget: int, seed: int) -> list[tuple[list[str], int]]:  # noqa: ANN001
    """One-shot conjectures (tokens, tokens sampled) drawn in order until the next would pass ``budget`` tokens."""
    from iclr26.dexploration.agent import conjecture

    generator = torch_generator(derive_seed(seed, "sample", "ctp"))
    out: list[tuple[list[str], int]] = []
    spent = 0
    while True:
        for toks, n in conjecture(model, config.ctp_batch, temperature=config.temperature, generator=generator):
            if spent + n > budget:
                return out
            spent += n
            out.append((toks, n))


def _run_ctp(config: DExplorationConfig, trained, seed: int, budget: int) -> ArmResult:  # noqa: ANN001
    """Conjecture-then-Prove at ``budget`` sampled tokens: resample until well-formed, then the bounded prover."""
    from iclr26.dexploration.agent import load_agent
    from iclr26.dexploration.kernel import Z3Kernel
    from iclr26.dexploration.prover import bounded_prove

    model = load_agent(trained, d_embed=config.d_embed, d_hidden=config.d_hidden, n_layers=config.n_layers)
    samples = _sample_within(config, model, budget, seed)
    kernel = Z3Kernel(rlimit=config.kernel_rlimit)
    reasons: Counter = Counter()
    proved = []
    queries = wellformed = 0
    for toks, _ in samples:
        binders, goal, reason = conjecture_statement(toks)
        if reason is not None:
            reasons[reason] += 1
            continue
        wellformed += 1
        if kernel.satisfiable([b.fact for b in binders if b.kind == "hyp"]) is not True:
            reasons["explosion"] += 1
            continue
        res = bounded_prove(binders, goal, depth=config.prover_depth, max_facts=config.prover_max_facts,
                            max_degree=config.max_degree + 1, rlimit=config.kernel_rlimit)  # fmt: skip
        queries += res.queries
        if res.statement is None:
            # Whether the prover or the conjecture failed: z3 decides the entailment outright.
            true = kernel.entails([b.fact for b in binders if b.kind == "hyp"], goal).proved is True
            reasons["not_proved_but_true" if true else "not_proved"] += 1
            continue
        proved.append(res.statement)
    counts = {"episodes": len(samples), "tokens": sum(n for _, n in samples), "queries": queries + kernel.queries,
              "wellformed": wellformed}  # fmt: skip
    return _evaluate(config, "ctp", proved, counts, reasons, Counter({"conjectured": len(samples)}))


def _seed(config: DExplorationConfig, ctx: RunContext, k: int) -> tuple[dict[str, ArmResult], dict[str, list[float]]]:
    """Every unit of seed ``k``: the three agents, then the arms (CtP and the script at DExplorer's tokens)."""
    from iclr26.dexploration.agent import conjecture_sequence, explorer_sequence
    from iclr26.dexploration.transform import exploratory_transformation

    seed = derive_seed(config.seed, "seed", k)
    proofs = _corpus(config, seed)
    interleaved = [exploratory_transformation(p) for p in proofs]
    data = {"explorer": [explorer_sequence(a) for a in interleaved],
            "conjecturer": [conjecture_sequence(a) for a in interleaved]}  # fmt: skip
    if config.staged_arm:
        data["staged"] = [explorer_sequence(exploratory_transformation(p, staged=True)) for p in proofs]
    trained = {n: ctx.unit(f"train-{n}-seed{k}", lambda s=seqs, n=n: _train(config, s, seed, n))
               for n, seqs in data.items()}  # fmt: skip
    res: dict[str, ArmResult] = {}
    for arm in [a for a in ARMS[:3] if a != "staged" or config.staged_arm]:
        agent = trained["staged" if arm == "staged" else "explorer"]
        res[arm] = ctx.unit(f"episodes-{arm}-seed{k}", lambda a=arm, t=agent: _run_explorer(config, t, seed, a))
    budget = res["dexplorer"].tokens
    res["ctp"] = ctx.unit(f"episodes-ctp-seed{k}", lambda: _run_ctp(config, trained["conjecturer"], seed, budget))
    res["trivial_script"] = ctx.unit(f"episodes-trivial_script-seed{k}", lambda: run_trivial_script(config, budget))
    for arm, r in res.items():
        ctx.log(f"seed {k} {arm}: {r.distinct_valid} distinct valid ({r.distinct_nonlinear} non-linear) of "
                f"{r.outputs} outputs, {r.tokens} tokens, coqc {r.coq_accepted}/{r.coq_checked}")  # fmt: skip
    return res, {n: t.losses for n, t in trained.items()}


def run(config: DExplorationConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    from iclr26.dexploration.coq import coqc_path

    coqc_path()  # fail before any work when coqc is missing
    start = time.perf_counter()
    results: dict[str, list[ArmResult]] = {}
    losses: dict[str, list[list[float]]] = {}
    for k in range(config.n_seeds):
        res, loss = _seed(config, ctx, k)
        for arm, r in res.items():
            results.setdefault(arm, []).append(r)
        for n, curve in loss.items():
            losses.setdefault(n, []).append(curve)
    return _outcome(config, ctx, results, losses, time.perf_counter() - start)


def measurements(results: dict[str, list[ArmResult]]) -> Measurements:
    """The per-seed counts the verdict reads."""
    return Measurements(
        tokens={a: [r.tokens for r in rs] for a, rs in results.items()},
        valid={a: [r.distinct_valid for r in rs] for a, rs in results.items()},
        nonlinear={a: [r.distinct_nonlinear for r in rs] for a, rs in results.items()},
        coq_checked={a: [r.coq_checked for r in rs] for a, rs in results.items()},
        coq_accepted={a: [r.coq_accepted for r in rs] for a, rs in results.items()},
        ctp_wellformed=[r.wellformed for r in results.get("ctp", [])],
    )


def _arm_metrics(rs: list[ArmResult]) -> dict[str, Any]:
    lengths = [x for r in rs for x in r.proof_lengths]
    depths = [x for r in rs for x in r.dag_depths]
    hard = [x for r in rs for x in r.hard]
    rejections: Counter = Counter()
    for r in rs:
        rejections.update(r.rejections)
    checked = sum(r.coq_checked for r in rs)
    return {
        "success_rate_per_seed": [r.success_rate for r in rs],
        "tokens_per_valid_per_seed": [r.tokens_per_valid for r in rs],
        "valid": sum(r.valid for r in rs), "distinct_valid": sum(r.distinct_valid for r in rs),
        "distinct_nonlinear": sum(r.distinct_nonlinear for r in rs),
        "episodes": sum(r.episodes for r in rs), "outputs": sum(r.outputs for r in rs),
        "wellformed": sum(r.wellformed for r in rs),
        "tokens": sum(r.tokens for r in rs), "kernel_queries": sum(r.kernel_queries for r in rs),
        "mean_proof_length": float(np.mean(lengths)) if lengths else None,
        "mean_dag_depth": float(np.mean(depths)) if depths else None,
        "max_dag_depth": max(depths, default=0),
        "difficulty_hard_share": float(np.mean(hard)) if hard else None,
        "coq_checked": checked, "coq_accepted": sum(r.coq_accepted for r in rs),
        "coq_accept_share": sum(r.coq_accepted for r in rs) / checked if checked else None,
        "rejections": dict(sorted(rejections.items())),
        "examples": [e for r in rs for e in r.examples][:4],
    }  # fmt: skip


def _outcome(config: DExplorationConfig, ctx: RunContext, results: dict[str, list[ArmResult]],
             losses: dict[str, list[list[float]]], wall: float) -> Outcome:  # fmt: skip
    """Metrics, plots and the verdict (module docstring, step 5)."""
    metrics = {"arms": {arm: _arm_metrics(rs) for arm, rs in results.items()},
               "final_train_loss": {n: [float(np.mean(x[-10:])) for x in ls] for n, ls in losses.items()}}  # fmt: skip
    measured = measurements(results)
    _plot(ctx, measured)
    notes = (
        "Paired over seeds; a comparison passes when the seed mean exceeds its margin and the one-sided "
        f"{config.confidence:.0%} lower bound exceeds 0. Conjecture-then-Prove resamples until it has spent "
        "DExplorer's sampled tokens of the seed; counts are of distinct statements. Tokens per valid statement are "
        "reported only where an arm has a valid statement."
    )
    return Outcome.of(verdict(measured, config), metrics=metrics, notes=notes, timings={"wall_s": wall})


def _plot(ctx: RunContext, m: Measurements) -> None:
    """Distinct valid and distinct non-linear statements per 1,000 sampled tokens per arm (mean and seeds)."""
    fig, axes = figure(2, 1, width=7.0)
    names = list(m.tokens)
    panels = ((axes[0][0], m.valid, "distinct valid per 1k tokens"),
              (axes[0][1], m.nonlinear, "distinct non-linear per 1k tokens"))  # fmt: skip
    for ax, counts, title in panels:
        for i, arm in enumerate(names):
            vals = m.per_kilotoken(counts, arm)
            ax.bar(i, float(np.mean(vals)), color=f"C{i}", alpha=0.6)
            ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
        ax.set_xticks(range(len(names)), names, fontsize=7)
        ax.set_title(title, fontsize=9)
    ctx.save_plot(fig, "success_and_cost.png")


EXPERIMENT = Experiment(config_cls=DExplorationConfig, run=run)
