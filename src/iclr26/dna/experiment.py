"""Reproduction of DNA's headline claim on a generated Euclid-style corpus with a low-resource DSL.

Divide and Abstract: Autoformalization via Decomposition and Abstraction Learning, ICLR 2026, OpenReview
NjgaeXNit3. What ``iclr26 run dna`` does:

1. Corpus (:mod:`iclr26.dna.corpus`): ``n_train`` statements of 2..``train_max_clauses`` clauses that avoid the
   ``held_out`` concepts (the translator's training statements), and ``n_test`` statements of
   2..``test_max_clauses`` clauses over every concept (or the statements of ``data=PATH``). Splits: by length
   (``<= train_max_clauses`` vs longer) and by concepts unseen in the translator's training statements.
2. Phase I (:mod:`iclr26.dna.concepts`): concept extraction over the informal test corpus, the CDG (statistics),
   and the library formalized by the translator in topological order (:func:`~iclr26.dna.pipeline.learn_library`).
3. The small translator: a TinyLM trained from scratch on the parallel corpus of the training statements (whole
   statements, clauses and quantifier clauses, each with and without abstractions) plus the library's
   documentation pairs (each concept's phrase -> its abstraction, held-out concepts included: the library is
   learned for the whole corpus, as in the paper).
4. Arms (:data:`~iclr26.dna.pipeline.ARMS`), the same translator and the same call budget per statement
   (clauses + 1 + ``refine_calls``): direct, abstractions only, decomposition only, full DNA; and the control
   ``dna_placebo``: full DNA with a placebo library (names, signatures and documentation kept, each definition's
   first conjunct negated), which must not reach full DNA.
5. The same four arms with SmolLM2-135M-Instruct few-shot (``pretrained_arm``) on ``n_pretrained`` test statements
   (its own Phase I library); reported, not part of the verdict (too few statements for power on one CPU thread).
6. Judging: equivalence accuracy (z3 proves the output equivalent to the gold formalization, each side expanded
   with its own library), syntactic validity (parses and type-checks), per length and per split; model calls and
   tokens per statement.
7. Verdict (:mod:`iclr26.dna.verdict`), on the small translator, paired over the test statements: DNA against
   direct, against decomposition only, and against the placebo-library control, behind gates that the test bed
   can show the effect.

Units of work (``--resume``): ``corpus``, ``train-tiny``, ``library-tiny``, ``arm-tiny-<arm>`` (five),
``library-smollm2`` and ``arm-smollm2-<arm>`` (four) when ``pretrained_arm``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from iclr26.common.experiment import Experiment, Outcome, RunContext
from iclr26.common.plots import figure
from iclr26.common.seeding import derive_seed, numpy_rng, torch_generator
from iclr26.dna.config import DNAConfig
from iclr26.dna.pipeline import ARMS
from iclr26.dna.verdict import Measurements, compare, verdict


@dataclass(frozen=True)
class ArmResult:
    """One arm's formalizations of the test statements, judged (a unit's result).

    Attributes:
        correct: per statement, z3 proved the output equivalent to the gold formalization.
        valid: per statement, the output parses and type-checks.
        calls: per statement, model calls.
        tokens: per statement, prompt + completion tokens.
        validator_ok: per statement, the full validator accepts the output.
        outputs: the final texts (the first few kept in the record).
        z3_unknowns: z3 queries of the arm (refinement and judging) that ran out of ``z3_rlimit``.
    """

    correct: list[bool]
    valid: list[bool]
    calls: list[int]
    tokens: list[int]
    validator_ok: list[bool]
    outputs: list[str]
    z3_unknowns: int = 0


@dataclass(frozen=True)
class CorpusData:
    """The corpus, Phase I's extraction and CDG (a unit's result)."""

    train: list
    test: list
    extracted: dict[str, int]
    cdg_stats: dict[str, int]
    order: list[str]


@dataclass(frozen=True)
class LibraryResult:
    """A learned library as text, its report, and how many definitions z3 proves equal to the gold ones."""

    definitions: list[str]
    learned: list[str]
    dropped: dict[str, str]
    calls: int
    tokens: int
    correct_definitions: int


def corpus_data(config: DNAConfig) -> CorpusData:
    from iclr26.dna.concepts import build_cdg, extract_concepts
    from iclr26.dna.corpus import CONCEPTS, LITERALS, clause_phrases, concept_analysis, generate_corpus, load_jsonl
    from iclr26.dna.validator import Validator

    validator = Validator(rlimit=config.z3_rlimit)
    seen = [c for c in CONCEPTS if c not in config.held_out]
    train = generate_corpus(numpy_rng(derive_seed(config.seed, "train")), config.n_train, min_clauses=2,
                            max_clauses=config.train_max_clauses, concepts=seen, concept_prob=config.concept_prob,
                            prefix="train")  # fmt: skip
    if config.data is not None:
        test = load_jsonl(config.data)
    else:
        test = generate_corpus(numpy_rng(derive_seed(config.seed, "test")), config.n_test, min_clauses=2,
                               max_clauses=config.test_max_clauses, concepts=list(CONCEPTS),
                               concept_prob=config.concept_prob, split="test", validator=validator,
                               prefix="test")  # fmt: skip
    extracted = extract_concepts([it.informal for it in test], clause_phrases(), in_dsl=LITERALS)
    graph = build_cdg(extracted, concept_analysis)
    return CorpusData(train, test, extracted, graph.stats(), graph.topological_order())


def _pairs(config: DNAConfig, train: list) -> list:
    """The small translator's parallel corpus (module docstring, step 3)."""
    from iclr26.dna.corpus import CONCEPTS, POOLS, Clause, binders_formal, gold_library
    from iclr26.dna.dsl import expand, parse_statement, render_statement
    from iclr26.dna.pipeline import decompose_informal, gold_clause_target
    from iclr26.dna.translators import Request

    gold = gold_library().definitions
    pairs = []
    for it in train:
        st = parse_statement(it.formal)
        expanded = type(st)(st.binders, expand(st.premises, gold), expand(st.conclusion, gold))
        tree = decompose_informal(it.informal)
        pairs.append((Request(it.informal, "statement", True), render_statement(st)))
        pairs.append((Request(it.informal, "statement", False), render_statement(expanded)))
        pairs.append((Request(tree.binders_text, "binders", True), binders_formal(it.binders)))
        pairs.append((Request(tree.binders_text, "binders", False), binders_formal(it.binders)))
        for c in (*it.premises, *it.conclusions):
            for lib in (True, False):
                pairs.append((Request(c.informal(), "clause", lib), gold_clause_target(c, library=lib, gold=gold)))
    rng = numpy_rng(derive_seed(config.seed, "docs"))
    for name, concept in CONCEPTS.items():
        for _ in range(config.doc_pairs):
            args, used = [], set()
            for s in concept.sorts:
                choices = [v for v in POOLS[s] if v not in used]
                v = choices[int(rng.integers(len(choices)))]
                used.add(v)
                args.append(v)
            c = Clause(name, tuple(args))
            pairs.append((Request(c.informal(), "clause", True), gold_clause_target(c, library=True, gold=gold)))
    return pairs


def _train(config: DNAConfig, train: list):  # noqa: ANN202
    from iclr26.dna.corpus import CONCEPTS, POOLS
    from iclr26.dna.translators import train_tiny

    names = [v for pool in POOLS.values() for v in pool] + list(CONCEPTS)
    return train_tiny(_pairs(config, train), steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                      d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
                      generator=torch_generator(derive_seed(config.seed, "batches")), extra_vocab=names,
                      context_len=640)  # fmt: skip


def _library(config: DNAConfig, translator, order: list[str], *, repairs: int) -> LibraryResult:  # noqa: ANN001
    from iclr26.dna.corpus import gold_library
    from iclr26.dna.pipeline import learn_library
    from iclr26.dna.validator import Validator

    validator = Validator(rlimit=config.z3_rlimit)
    lib, report = learn_library(order, translator, validator, repair_rounds=repairs)
    gold = gold_library().definitions
    correct = sum(
        validator.same_definition(d, lib.definitions, gold[name], gold) for name, d in lib.definitions.items()
    )
    return LibraryResult(lib.texts(), list(report.learned), dict(report.dropped), report.calls, report.tokens,
                         correct)  # fmt: skip


def as_library(result: LibraryResult, *, placebo: bool = False):  # noqa: ANN202
    """The :class:`~iclr26.dna.concepts.Library` of a unit's result; ``placebo`` negates each first conjunct."""
    from iclr26.dna.concepts import Library
    from iclr26.dna.corpus import CONCEPTS
    from iclr26.dna.dsl import Definition, Not, conjunction, conjuncts, parse_definition

    lib = Library()
    for text in result.definitions:
        d = parse_definition(text)
        if placebo:
            parts = list(conjuncts(d.body))
            parts[0] = parts[0].arg if isinstance(parts[0], Not) else Not(parts[0])
            d = Definition(d.name, d.params, conjunction(parts))
        lib.definitions[d.name] = d
        lib.phrases[d.name] = CONCEPTS[d.name].phrase if d.name in CONCEPTS else ""
    return lib


def budget_of(item, config: DNAConfig, *, pretrained: bool = False) -> int:  # noqa: ANN001
    """Calls per statement, equal for every arm: one pass of the clause tree (clauses + 1) + ``refine_calls``
    (``pretrained_refine_calls`` for SmolLM2)."""
    return item.n_clauses + 1 + (config.pretrained_refine_calls if pretrained else config.refine_calls)


def _arm(config: DNAConfig, translator, items: list, arm: str, library, gold_lib, *,  # noqa: ANN001
         pretrained: bool = False) -> ArmResult:  # fmt: skip
    from iclr26.dna.dsl import DSLSyntaxError, parse_statement, statement_type_errors
    from iclr26.dna.pipeline import formalize
    from iclr26.dna.validator import Validator

    validator = Validator(rlimit=config.z3_rlimit)
    base = "dna" if arm == "dna_placebo" else arm
    outs = formalize([it.informal for it in items], base, translator, library, validator,
                     budget=[budget_of(it, config, pretrained=pretrained) for it in items])  # fmt: skip
    defs = library.definitions if base in ("abstract", "dna") else {}
    correct, valid, vok = [], [], []
    for it, out in zip(items, outs, strict=True):
        try:
            ok = not statement_type_errors(parse_statement(out.text), defs)
        except DSLSyntaxError:
            ok = False
        valid.append(ok)
        correct.append(bool(ok and validator.equivalent(out.text, it.formal, defs, gold_lib)))
        vok.append(bool(ok and validator.validate(out.text, defs, expected_binders=it.binders).ok))
    return ArmResult(correct, valid, [o.calls for o in outs], [o.prompt_tokens + o.completion_tokens for o in outs],
                     vok, [o.text for o in outs], validator.unknowns)  # fmt: skip


def prompt_book(config: DNAConfig, train: list, library) -> Any:  # noqa: ANN001
    """SmolLM2's prompt: library docs and ``few_shot`` examples per (kind, mode), the first distinct clause kinds."""
    from iclr26.dna.corpus import binders_formal, gold_library
    from iclr26.dna.dsl import expand, parse_statement, render_statement
    from iclr26.dna.pipeline import decompose_informal, gold_clause_target
    from iclr26.dna.translators import PromptBook

    gold = gold_library().definitions
    book = PromptBook(library_docs=library.docs())
    kinds_seen: set[tuple[str, bool]] = set()
    short = sorted(train, key=lambda it: (it.n_clauses, it.id))
    for lib in (True, False):
        clause_ex, stmt_ex, bind_ex = [], [], []
        for it in train:
            for c in (*it.premises, *it.conclusions):
                if (c.kind, lib) not in kinds_seen and len(clause_ex) < config.few_shot:
                    kinds_seen.add((c.kind, lib))
                    clause_ex.append((c.informal(), gold_clause_target(c, library=lib, gold=gold)))
        for it in short[: config.few_shot]:
            st = parse_statement(it.formal)
            if not lib:
                st = type(st)(st.binders, expand(st.premises, gold), expand(st.conclusion, gold))
            stmt_ex.append((it.informal, render_statement(st)))
            bind_ex.append((decompose_informal(it.informal).binders_text, binders_formal(it.binders)))
        book.examples[("clause", lib)] = clause_ex
        book.examples[("statement", lib)] = stmt_ex[:2]
        book.examples[("binders", lib)] = bind_ex
    return book


def reply_budgets(config: DNAConfig, *, pretrained: bool = False) -> dict[str, int]:
    """Reply lengths per request kind (SmolLM2's BPE tokens: statements capped at 128 for the CPU budget)."""
    statement = min(config.max_new_statement, 128) if pretrained else config.max_new_statement
    return {"statement": statement, "clause": config.max_new_clause, "binders": min(config.max_new_clause, 32)}


def _tiny_arms(config: DNAConfig, ctx: RunContext, data: CorpusData, timings: dict[str, float]) -> tuple:
    """Train the small translator, learn its library, run its five arms (units ``train-tiny`` … ``arm-tiny-*``)."""
    from iclr26.dna.corpus import gold_library
    from iclr26.dna.translators import TinyTranslator

    gold_lib = gold_library().definitions
    t0 = time.perf_counter()
    state = ctx.unit("train-tiny", lambda: _train(config, data.train))
    timings["train_tiny_s"] = time.perf_counter() - t0
    tiny = TinyTranslator(state, temperature=config.temperature, seed=derive_seed(config.seed, "sample"),
                          max_new_tokens=reply_budgets(config))  # fmt: skip
    lib_tiny = ctx.unit("library-tiny", lambda: _library(config, tiny, data.order, repairs=config.library_repairs))
    arms: dict[str, ArmResult] = {}
    for arm in (*ARMS, "dna_placebo"):
        t0 = time.perf_counter()
        lib = as_library(lib_tiny, placebo=arm == "dna_placebo")
        arms[arm] = ctx.unit(f"arm-tiny-{arm}", lambda a=arm, lb=lib: _arm(config, tiny, data.test, a, lb, gold_lib))
        timings[f"arm_tiny_{arm}_s"] = time.perf_counter() - t0
        r = arms[arm]
        ctx.log(f"tiny {arm}: accuracy {np.mean(r.correct):.3f}, valid {np.mean(r.valid):.3f}, "
                f"calls/statement {np.mean(r.calls):.2f}")  # fmt: skip
    return state, lib_tiny, arms


def _pretrained_arms(config: DNAConfig, ctx: RunContext, data: CorpusData,
                     timings: dict[str, float]) -> tuple[dict[str, ArmResult], dict[str, Any]]:  # fmt: skip
    """SmolLM2 few-shot: its Phase I library and its four arms (units ``library-smollm2``, ``arm-smollm2-*``)."""
    from iclr26.common.pretrained import load_pretrained
    from iclr26.dna.corpus import gold_library
    from iclr26.dna.translators import PretrainedTranslator

    gold_lib = gold_library().definitions
    t0 = time.perf_counter()
    lm = load_pretrained(config.model, dtype="bfloat16")
    model_info = lm.describe()
    model_info.pop("load_seconds", None)
    timings["pretrained_load_s"] = time.perf_counter() - t0
    items = [it for it in data.test if it.n_clauses <= config.pretrained_max_clauses][: config.n_pretrained]
    book0 = prompt_book(config, data.train, as_library(LibraryResult([], [], {}, 0, 0, 0)))
    pre0 = PretrainedTranslator(lm, book0, temperature=config.pretrained_temperature,
                                max_new_tokens=reply_budgets(config, pretrained=True))  # fmt: skip
    t0 = time.perf_counter()
    lib_pre = ctx.unit("library-smollm2", lambda: _library(config, pre0, data.order, repairs=0))
    timings["library_smollm2_s"] = time.perf_counter() - t0
    lib_p = as_library(lib_pre)
    pre = PretrainedTranslator(lm, prompt_book(config, data.train, lib_p), temperature=config.pretrained_temperature,
                               max_new_tokens=reply_budgets(config, pretrained=True))  # fmt: skip
    arms: dict[str, ArmResult] = {}
    for arm in ARMS:
        t0 = time.perf_counter()
        arms[arm] = ctx.unit(f"arm-smollm2-{arm}",
                             lambda a=arm: _arm(config, pre, items, a, lib_p, gold_lib, pretrained=True))  # fmt: skip
        timings[f"arm_smollm2_{arm}_s"] = time.perf_counter() - t0
        ctx.log(f"smollm2 {arm}: accuracy {np.mean(arms[arm].correct):.3f}, valid {np.mean(arms[arm].valid):.3f}")
    return arms, _pretrained_metrics(config, items, lib_pre, arms, model_info)


def run(config: DNAConfig, ctx: RunContext) -> Outcome:
    """Run the reproduction (module docstring) and judge the claim."""
    start = time.perf_counter()
    timings: dict[str, float] = {}
    data = ctx.unit("corpus", lambda: corpus_data(config))
    state, lib_tiny, tiny = _tiny_arms(config, ctx, data, timings)
    results: dict[str, dict[str, ArmResult]] = {"tiny": tiny}
    pretrained: dict[str, Any] = {}
    if config.pretrained_arm:
        results["smollm2"], pretrained = _pretrained_arms(config, ctx, data, timings)
    timings["wall_s"] = time.perf_counter() - start
    return _outcome(config, ctx, data, state, lib_tiny, results, pretrained, timings)


def _arm_metrics(r: ArmResult, items: list, train_max: int, held_out: tuple[str, ...]) -> dict[str, Any]:
    by_len: dict[int, list[bool]] = {}
    for c, it in zip(r.correct, items, strict=True):
        by_len.setdefault(it.n_clauses, []).append(c)
    unseen = [c for c, it in zip(r.correct, items, strict=True) if set(it.concepts) & set(held_out)]
    seen = [c for c, it in zip(r.correct, items, strict=True) if not set(it.concepts) & set(held_out)]
    long = [c for c, it in zip(r.correct, items, strict=True) if it.n_clauses > train_max]
    short = [c for c, it in zip(r.correct, items, strict=True) if it.n_clauses <= train_max]

    def mean(xs: list) -> float | None:
        return float(np.mean(xs)) if xs else None

    return {
        "accuracy": float(np.mean(r.correct)), "valid": float(np.mean(r.valid)),
        "validator_ok": float(np.mean(r.validator_ok)),
        "accuracy_by_length": {str(k): float(np.mean(v)) for k, v in sorted(by_len.items())},
        "accuracy_short": mean(short), "accuracy_long": mean(long),
        "accuracy_seen_concepts": mean(seen), "accuracy_unseen_concepts": mean(unseen),
        "calls_per_statement": float(np.mean(r.calls)), "tokens_per_statement": float(np.mean(r.tokens)),
        "examples": r.outputs[:3], "z3_unknowns": r.z3_unknowns,
    }  # fmt: skip


def _metrics(config: DNAConfig, data: CorpusData, state, lib_tiny: LibraryResult, results: dict) -> dict[str, Any]:  # noqa: ANN001
    """The record's metrics of the small translator's arms, the corpus and Phase I."""
    test = data.test
    lengths = [it.n_clauses for it in test]
    return {
        "tiny": {arm: _arm_metrics(r, test, config.train_max_clauses, config.held_out)
                 for arm, r in results["tiny"].items()},
        "n_test": len(test), "n_train": len(data.train), "test_lengths": {str(k): lengths.count(k)
                                                                          for k in sorted(set(lengths))},
        "n_test_unseen_concepts": sum(bool(set(it.concepts) & set(config.held_out)) for it in test),
        "cdg": data.cdg_stats, "extracted_concepts": data.extracted, "formalization_order": data.order,
        "library_tiny": asdict(lib_tiny), "tiny_final_loss": float(np.mean(state.losses[-20:])),
        "tiny_params": int(sum(v.numel() for v in state.weights.values())),
    }  # fmt: skip


def _pretrained_metrics(config: DNAConfig, items: list, lib_pre: LibraryResult, pre: dict[str, ArmResult],
                        model_info: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """SmolLM2's arms (reported, not judged): accuracies, its library, and its DNA − direct comparison."""
    return {
        "smollm2": {arm: _arm_metrics(r, items, config.train_max_clauses, config.held_out) for arm, r in pre.items()},
        "library_smollm2": asdict(lib_pre),
        "pretrained_model": model_info,
        "smollm2_dna_vs_direct": asdict(compare(pre["dna"].correct, pre["direct"].correct,
                                                margin=config.gain_margin, confidence=config.confidence)),
    }  # fmt: skip


NOTES = (
    "Paired over test statements (0/1 equivalence per statement); ± is the 95% two-sided half-width. The verdict uses "
    "the small translator trained here; SmolLM2's numbers are reported, not judged. Equivalence is proved by z3 "
    "modulo a System E fragment, not by Lean/E3."
)


def _outcome(config: DNAConfig, ctx: RunContext, data: CorpusData, state, lib_tiny: LibraryResult,  # noqa: ANN001
             results: dict, pretrained: dict[str, Any], timings: dict[str, float]) -> Outcome:  # fmt: skip
    """The verdict on the small translator's arms and the record's metrics."""
    measured = Measurements(
        correct={arm: list(r.correct) for arm, r in results["tiny"].items()},
        lengths=[it.n_clauses for it in data.test],
        library_correct=lib_tiny.correct_definitions,
        library_size=len(data.order),
    )
    judged = verdict(measured, config)
    metrics = {**_metrics(config, data, state, lib_tiny, results), **pretrained}
    _plot(ctx, results, data.test, config)
    if "smollm2" in results:
        s, n = metrics["smollm2"], len(results["smollm2"]["dna"].correct)
        extra = (
            f"SmolLM2 few-shot ({n} statements): DNA {s['dna']['accuracy']:.0%} vs direct {s['direct']['accuracy']:.0%}"
        )
        judged = dataclasses.replace(judged, measurement=f"{judged.measurement}; {extra}")
    return Outcome.of(judged, metrics=metrics, timings=timings, notes=NOTES)


def _plot(ctx: RunContext, results: dict, test: list, config: DNAConfig) -> None:
    """Accuracy by statement length per arm (small translator), and accuracy per arm for both translators."""
    fig, axes = figure(2, 1, width=8.0)
    ax = axes[0][0]
    lengths = sorted({it.n_clauses for it in test})
    for i, (arm, r) in enumerate(results["tiny"].items()):
        acc = [np.mean([c for c, it in zip(r.correct, test, strict=True) if it.n_clauses == n]) for n in lengths]
        ax.plot(lengths, acc, marker="o", color=f"C{i}", label=arm)
    ax.axvline(config.train_max_clauses + 0.5, color="k", lw=0.6, ls=":")
    ax.set_xlabel("clauses per statement", fontsize=8)
    ax.set_ylabel("equivalence accuracy", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0][1]
    for j, (name, res) in enumerate(results.items()):
        arms = list(res)
        ax.bar(np.arange(len(arms)) + 0.4 * j, [np.mean(res[a].correct) for a in arms], width=0.4, label=name)
        ax.set_xticks(np.arange(len(arms)) + 0.2, arms, fontsize=6)
    ax.legend(fontsize=6)
    ctx.save_plot(fig, "accuracy.png")


EXPERIMENT = Experiment(config_cls=DNAConfig, run=run)
