"""DNA Phase II (decompose, translate, compose, refine), its ablations, and Phase I's library formalization.

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. Per statement, conditioned on the abstraction
library (``../shared/papers/06-dna.md`` §2, [unverified]):

1. **decompose** the informal statement into a clause tree: the quantifier clause, premise clauses and conclusion
   clauses (:func:`decompose_informal`);
2. **translate** each clause with the :class:`~iclr26.dna.translators.Translator`, abstractions allowed;
3. **compose** the formal clauses back (:func:`compose_text`; binders scope over all clauses);
4. **refine**: the :class:`~iclr26.dna.validator.Validator` checks syntax and types, the binders against the
   informal statement, non-contradiction and non-triviality; its messages and the clauses it blames go back to the
   translator, which retranslates those clauses; repeat while the call budget lasts.

The arms of the reproduction (:data:`ARMS`) share one translator and one call budget per statement:

- ``direct``: the whole statement in one call, primitives only; spare calls resample it (temperature) until the
  output parses and type-checks (the "compiles" filter every arm but DNA uses);
- ``abstract``: the same, with the library's abstractions;
- ``decompose``: steps 1–3 without the library; spare calls resample clauses that do not parse or type-check;
- ``dna``: steps 1–4 with the library.

The formal side of a clause tree (:func:`decompose`, :func:`compose`) turns a statement into nested clause nodes
and back; ``compose(decompose(s)) == s`` and ``decompose(compose(t)) == t`` for well-formed trees.

Deviations: decomposition is rule-based on the corpus's regular informal format (the paper asks the LLM); refinement
for the trained small model retranslates the blamed clauses by sampling (it cannot read feedback), while the
prompt-based backends get the messages and the previous attempt in the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from iclr26.dna.concepts import Library
from iclr26.dna.corpus import CONCEPTS, Clause, clause_phrases, definition_clauses, kind_of
from iclr26.dna.dsl import (
    AND,
    And,
    Atom,
    Definition,
    DSLSyntaxError,
    Formula,
    Not,
    Or,
    Statement,
    conjunction,
    conjuncts,
    parse_formula,
    render,
    render_statement,
    type_errors,
)
from iclr26.dna.translators import Reply, Request, Translator
from iclr26.dna.validator import Validator

__all__ = [
    "ARMS",
    "ClauseNode",
    "ClauseTree",
    "Formalization",
    "InformalTree",
    "compose",
    "compose_text",
    "decompose",
    "decompose_informal",
    "formalize",
    "learn_library",
    "parse_clause",
]

ARMS = ("direct", "abstract", "decompose", "dna")
_SORT_WORDS = {"points": "Point", "a point": "Point", "lines": "Line", "a line": "Line", "circles": "Circle",
               "a circle": "Circle"}  # fmt: skip
_STATEMENT = re.compile(r"^Let (?P<binders>.+?)\. Assume (?P<premises>.+?)\. Then (?P<conclusions>.+?)\.$")


# ------------------------------------------------------------------------------------------------ informal side
@dataclass(frozen=True)
class InformalTree:
    """Step 1's output: the informal statement as a clause tree.

    Attributes:
        binders_text: the quantifier clause (``a, b be points, l be a line``).
        binders: the ``(name, sort)`` pairs it declares (what the validator's faithfulness check compares with).
        premises: premise clauses.
        conclusions: conclusion clauses.
    """

    binders_text: str
    binders: tuple[tuple[str, str], ...]
    premises: tuple[str, ...]
    conclusions: tuple[str, ...]


def decompose_informal(text: str) -> InformalTree:
    """Split ``Let B. Assume C1; C2. Then C3.`` into its clause tree (step 1).

    Raises:
        ValueError: if the text is not in that format, or the quantifier clause declares no variable.
    """
    m = _STATEMENT.match(text.strip())
    if m is None:
        raise ValueError("expected 'Let <variables>. Assume <clause>; <clause>. Then <clause>.', got "
                         f"{text[:60]!r}")  # fmt: skip
    binders: list[tuple[str, str]] = []
    for group in re.finditer(r"((?:\w+, )*\w+) be (points|a point|lines|a line|circles|a circle)",
                             m["binders"]):  # fmt: skip
        binders.extend((n, _SORT_WORDS[group[2]]) for n in group[1].split(", "))
    if not binders:
        raise ValueError(f"the quantifier clause {m['binders']!r} declares no variable ('x, y be points')")
    premises = tuple(c.strip() for c in m["premises"].split(";"))
    conclusions = tuple(c.strip() for c in m["conclusions"].split(";"))
    return InformalTree(m["binders"], tuple(binders), premises, conclusions)


def parse_clause(text: str) -> Clause:
    """The clause kind and arguments of an informal clause (the inverse of :meth:`Clause.informal`).

    Raises:
        ValueError: naming the clause when no template matches.
    """
    for kind, phrase in sorted(clause_phrases().items(), key=lambda kv: -len(kv[1])):
        slots = [int(i) for i in re.findall(r"\{(\d+)\}", phrase)]
        rx = "^" + r"(\w+)".join(re.escape(p) for p in re.split(r"\{\d+\}", phrase)) + "$"
        m = re.match(rx, text)
        if m:
            args: dict[int, str] = {}
            for slot, value in zip(slots, m.groups(), strict=True):
                args[slot] = value
            return Clause(kind, tuple(args[i] for i in range(len(kind_of(kind).sorts))))
    raise ValueError(f"clause {text!r} matches no known template")


# ------------------------------------------------------------------------------------------------ formal side
@dataclass(frozen=True)
class ClauseNode:
    """A node of a formal clause tree: a literal (``formula`` set, no children) or ``op`` over children.

    Attributes:
        op: ``"lit"``, ``"and"`` or ``"or"``.
        formula: the literal (an atom or a negation) when ``op == "lit"``.
        children: the sub-clauses of an ``and``/``or`` node (>= 2, none with the same op, when well-formed).
    """

    op: str
    formula: Formula | None = None
    children: tuple[ClauseNode, ...] = ()


@dataclass(frozen=True)
class ClauseTree:
    """A statement as a clause tree: binders (the quantifier clause), premise and conclusion clauses."""

    binders: tuple[tuple[str, str], ...]
    premises: tuple[ClauseNode, ...]
    conclusions: tuple[ClauseNode, ...]


def _node(f: Formula) -> ClauseNode:
    if isinstance(f, And):
        return ClauseNode("and", None, tuple(_node(a) for a in f.args))
    if isinstance(f, Or):
        return ClauseNode("or", None, tuple(_node(a) for a in f.args))
    return ClauseNode("lit", f)


def _formula(n: ClauseNode) -> Formula:
    if n.op == "lit":
        if not isinstance(n.formula, Atom | Not):
            raise ValueError(f"a literal node holds an atom or a negation, got {n.formula!r}")
        return n.formula
    if len(n.children) < 2:
        raise ValueError(f"an '{n.op}' node needs at least 2 children, got {len(n.children)}")
    parts = tuple(_formula(c) for c in n.children)
    return And(parts) if n.op == "and" else Or(parts)


def decompose(st: Statement) -> ClauseTree:
    """The clause tree of a statement: each top-level premise/conclusion conjunct one node, nested recursively."""
    return ClauseTree(st.binders, tuple(_node(f) for f in conjuncts(st.premises)),
                      tuple(_node(f) for f in conjuncts(st.conclusion)))  # fmt: skip


def compose(tree: ClauseTree) -> Statement:
    """The statement of a clause tree (premises and conclusions conjoined; binders scope over all of them).

    Raises:
        ValueError: for a tree without premises or conclusions, or a malformed node.
    """
    if not tree.premises or not tree.conclusions:
        raise ValueError("a clause tree needs at least one premise and one conclusion")
    return Statement(tree.binders, conjunction([_formula(n) for n in tree.premises]),
                     conjunction([_formula(n) for n in tree.conclusions]))  # fmt: skip


def compose_text(binders: str, premises: Sequence[str], conclusions: Sequence[str]) -> str:
    """Step 3 on text: ``forall B, (P1) /\\ (P2) -> (C1)``; re-rendered canonically when it parses."""
    from iclr26.dna.dsl import parse_statement

    # each clause parenthesised keeps its own scope (a clause ``a \\/ b`` must not bind to its neighbours)
    text = (f"forall {binders}, {AND.join(f'({p})' for p in premises)} -> "
            f"{AND.join(f'({c})' for c in conclusions)}")  # fmt: skip
    try:
        return render_statement(parse_statement(text))
    except DSLSyntaxError:
        return text


# ------------------------------------------------------------------------------------------------ the arms
@dataclass
class Formalization:
    """One statement's formalization by one arm.

    Attributes:
        text: the final formal statement.
        calls: model calls spent.
        prompt_tokens: tokens read by the model over all calls.
        completion_tokens: tokens written.
        rounds: refine (or resample) rounds after the first pass.
        validator_stage: the validator's last verdict stage on ``text``.
        history: per round, the validator messages (DNA) or failing parts (others).
    """

    text: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rounds: int = 0
    validator_stage: str = ""
    history: list[list[str]] = field(default_factory=list)


def _charge(out: Formalization, reply: Reply) -> None:
    out.calls += 1
    out.prompt_tokens += reply.prompt_tokens
    out.completion_tokens += reply.completion_tokens


def _compiles(text: str, library: Mapping[str, Definition]) -> bool:
    from iclr26.dna.dsl import parse_statement, statement_type_errors

    try:
        return not statement_type_errors(parse_statement(text), library)
    except DSLSyntaxError:
        return False


def _clause_ok(text: str, env: Mapping[str, str], library: Mapping[str, Definition]) -> bool:
    try:
        return not type_errors(parse_formula(text), env, library)
    except DSLSyntaxError:
        return False


def _binders_env(text: str) -> dict[str, str] | None:
    from iclr26.dna.dsl import parse_statement

    try:
        return dict(parse_statement(f"forall {text}, x = x -> x = x").binders)
    except DSLSyntaxError:
        return None


def formalize(
    texts: Sequence[str],
    arm: str,
    translator: Translator,
    library: Library,
    validator: Validator,
    *,
    budget: Sequence[int],
) -> list[Formalization]:
    """Formalize informal statements with one arm (module docstring), batching the model calls across statements.

    Args:
        texts: informal statements.
        arm: one of :data:`ARMS`.
        translator: the model.
        library: the learned abstractions (ignored by ``direct`` and ``decompose``).
        validator: the symbolic validator.
        budget: model calls allowed per statement.

    Returns:
        One :class:`Formalization` per statement.

    Raises:
        ValueError: for an unknown arm, or a budget below what the arm's first pass needs.
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    if len(budget) != len(texts):
        raise ValueError(f"budget needs one entry per statement, got {len(budget)} for {len(texts)}")
    use_lib = arm in ("abstract", "dna")
    defs = library.definitions if use_lib else {}
    if arm in ("direct", "abstract"):
        return _whole(texts, translator, defs, use_lib, budget)
    return _clausewise(texts, translator, defs, use_lib, validator, budget, refine=arm == "dna")


def _whole(texts, translator, defs, use_lib, budget) -> list[Formalization]:  # noqa: ANN001
    """``direct``/``abstract``: sample the whole statement until it compiles or the budget is spent."""
    outs = [Formalization() for _ in texts]
    pending = list(range(len(texts)))
    sample = 0
    while pending:
        replies = translator.translate([Request(texts[i], "statement", use_lib, sample=sample) for i in pending])
        still = []
        for i, reply in zip(pending, replies, strict=True):
            _charge(outs[i], reply)
            outs[i].text = reply.text
            ok = _compiles(reply.text, defs)  # the "compiles" filter: the only check the non-DNA arms get
            if not ok:
                outs[i].history.append(["does not compile"])
            if not ok and outs[i].calls < budget[i]:
                still.append(i)
        pending = still
        sample += 1
        for i in pending:
            outs[i].rounds += 1
    return outs


def _clausewise(texts, translator, defs, use_lib, validator, budget, *, refine: bool) -> list[Formalization]:  # noqa: ANN001
    """``decompose``/``dna``: translate the clause tree's nodes, compose, then resample or refine blamed nodes."""
    trees = [decompose_informal(t) for t in texts]
    outs = [Formalization() for _ in texts]
    # node j of statement i: j = 0 the binders, then premises, then conclusions
    nodes = [[("binders", t.binders_text)] + [("clause", c) for c in (*t.premises, *t.conclusions)] for t in trees]
    current: list[list[str]] = [[""] * len(ns) for ns in nodes]
    samples: list[list[int]] = [[0] * len(ns) for ns in nodes]
    feedback: list[list[str]] = [[""] * len(ns) for ns in nodes]
    todo = {i: list(range(len(ns))) for i, ns in enumerate(nodes)}
    for i, ns in enumerate(nodes):
        if len(ns) > budget[i]:
            raise ValueError(f"statement {i}: budget {budget[i]} is below the {len(ns)} calls of one pass")
    first = True
    while todo:
        reqs, where = [], []
        for i, js in todo.items():
            for j in js:
                kind, text = nodes[i][j]
                previous = current[i][j] if feedback[i][j] else ""
                reqs.append(Request(text, kind, use_lib, feedback=feedback[i][j], previous=previous,
                                    sample=samples[i][j]))  # fmt: skip
                where.append((i, j))
        for (i, j), reply in zip(where, translator.translate(reqs), strict=True):
            _charge(outs[i], reply)
            current[i][j] = reply.text
            samples[i][j] += 1
        next_todo: dict[int, list[int]] = {}
        for i in todo:
            tree = trees[i]
            n_p = len(tree.premises)
            binders = current[i][0]
            # Phase II step 3: compose the translated clauses under the one quantifier clause
            outs[i].text = compose_text(binders, current[i][1 : 1 + n_p], current[i][1 + n_p :])
            if not first:
                outs[i].rounds += 1
            blamed, messages = _blame(i, tree, current[i], defs, validator, outs[i], refine=refine)
            outs[i].history.append(messages)
            left = budget[i] - outs[i].calls
            if blamed and left > 0:
                next_todo[i] = blamed[:left]
                for j in blamed:  # step 4 (refine): only DNA passes the validator's messages back to the translator
                    feedback[i][j] = "; ".join(messages) if refine else ""
        todo = next_todo
        first = False
    return outs


def _blame(i, tree, current, defs, validator, out, *, refine: bool):  # noqa: ANN001, ANN202
    """The nodes to redo and the messages: compile checks per node; for DNA also the validator's verdict."""
    env = _binders_env(current[0])
    if env is None:
        return [0], [f"the quantifier clause does not parse: {current[0]!r}"]
    bad = [j for j in range(1, len(current)) if not _clause_ok(current[j], env, defs)]
    if not refine:
        out.validator_stage = "ok" if not bad else "types"
        return bad, [f"clause {j} does not compile" for j in bad]
    # the symbolic validator: syntax/types, variable-name faithfulness, non-contradiction, non-triviality
    verdict = validator.validate(out.text, defs, expected_binders=tree.binders)
    out.validator_stage = verdict.stage
    if verdict.ok:
        return [], []
    if verdict.stage == "binders":
        return [0], list(verdict.messages)
    n_p = len(tree.premises)
    blamed = sorted({1 + k if role == "premise" else 1 + n_p + k for role, k in verdict.blamed} | set(bad))
    if verdict.stage in ("syntax", "types") and not blamed:
        blamed = bad or list(range(1, len(current)))
    return blamed, list(verdict.messages)


# ------------------------------------------------------------------------------------------------ Phase I step 4
@dataclass(frozen=True)
class LibraryReport:
    """What :func:`learn_library` did.

    Attributes:
        order: the topological order it formalized in.
        learned: concepts whose definition was accepted.
        dropped: concepts given up after the repair rounds (with the last message).
        calls: model calls spent.
        tokens: prompt + completion tokens spent.
    """

    order: tuple[str, ...]
    learned: tuple[str, ...]
    dropped: dict[str, str]
    calls: int
    tokens: int


def learn_library(
    order: Sequence[str],
    translator: Translator,
    validator: Validator,
    *,
    repair_rounds: int = 2,
) -> tuple[Library, LibraryReport]:
    """Phase I step 4: formalize each concept's informal definition in topological order, leaves first.

    Each body clause is translated (abstractions learned so far allowed), the body is the conjunction of the
    clauses, and the definition is accepted when it type-checks over its parameters and its body is satisfiable
    with the axioms; otherwise the failing clauses are retranslated (sampling, with the messages as feedback) up to
    ``repair_rounds`` times, then the concept is dropped.

    Args:
        order: concepts of :data:`~iclr26.dna.corpus.CONCEPTS` in topological order.
        translator: the model.
        validator: the symbolic validator.
        repair_rounds: retranslation rounds per concept.

    Returns:
        The library and a :class:`LibraryReport`.
    """
    lib = Library()
    learned, dropped = [], {}
    calls = tokens = 0
    for name in order:
        if name not in CONCEPTS:
            dropped[name] = "not a concept of the catalogue"
            continue
        params = CONCEPTS[name].params()
        env = dict(params)
        _, body = definition_clauses(name)
        texts = [c.informal() for c in body]
        current = [""] * len(texts)
        redo = list(range(len(texts)))
        message = ""
        for round_ in range(repair_rounds + 1):
            replies = translator.translate([Request(texts[j], "clause", True, feedback=message,
                                                    previous=current[j] if message else "", sample=round_)
                                            for j in redo])  # fmt: skip
            for j, r in zip(redo, replies, strict=True):
                current[j] = r.text
                calls += 1
                tokens += r.prompt_tokens + r.completion_tokens
            redo = [j for j in range(len(texts)) if not _clause_ok(current[j], env, lib.definitions)]
            if redo:
                message = f"clause {redo[0] + 1} does not compile"
                continue
            definition = Definition(name, params, conjunction([parse_formula(t) for t in current]))
            # compile-and-repair: a definition must type-check and be satisfiable with the axioms (not vacuous)
            if not validator.satisfiable(definition.body, params, lib.definitions):
                message = "the definition is contradictory"
                redo = list(range(len(texts)))
                continue
            lib.add(definition, CONCEPTS[name].phrase)
            learned.append(name)
            break
        else:
            dropped[name] = message
    return lib, LibraryReport(tuple(order), tuple(learned), dropped, calls, tokens)


def gold_clause_target(clause: Clause, *, library: bool, gold: Mapping[str, Definition]) -> str:
    """The gold translation of a clause: by abstraction name (``library``) or expanded to primitives."""
    from iclr26.dna.dsl import expand

    f = parse_formula(clause.formal())
    return render(f if library else expand(f, gold))
