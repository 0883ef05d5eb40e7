"""A generated corpus of informal Euclid-style statements with gold EuclidDSL formalizations (DNA reproduction).

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. The paper's benchmarks (LeanEuclidPlus, ProofNet-Hard)
are Lean 4 corpora; here every statement is built from *clauses*: primitive literals (``b is between a and c``)
and uses of shared *concepts* (``a, b, c form a triangle with sides l, m, n``), so that the same concepts recur
across the corpus and an abstraction learned once pays off. Each concept has an informal template, a signature and
a definition made of clauses (:data:`CONCEPTS`); the gold formalization uses the concept's name, and
:func:`gold_library` holds the gold definitions.

Informal format (what :func:`~iclr26.dna.pipeline.decompose_informal` reads)::

    Let a, b be points, l be a line. Assume C1; C2. Then C3.

Data format of the ``data`` key: JSON Lines, one statement per line,
``{"id": str, "informal": str, "formal": str}``, the informal text in the format above (every clause one of
:func:`clause_phrases`), the formal one a statement of the DSL that type-checks against :func:`gold_library`
(:func:`load_jsonl` checks both and names the line and field of the first error).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr26.dna.concepts import ConceptAnalysis, Library
from iclr26.dna.dsl import AND, Statement, atoms, parse_formula, parse_statement, statement_type_errors

__all__ = ["CONCEPTS", "LITERALS", "Clause", "Item", "gold_library", "generate_corpus", "load_jsonl", "save_jsonl"]


@dataclass(frozen=True)
class ClauseKind:
    """A kind of clause: argument sorts, informal template, formal template (``{i}`` = argument ``i``)."""

    sorts: tuple[str, ...]
    phrase: str
    formal: str


P, L, C = "Point", "Line", "Circle"
#: Variable names by sort, in the order statements introduce them.
POOLS = {P: tuple("abcdefghopqr"), L: ("l", "m", "n", "s", "t", "u"), C: ("k", "j", "w")}

#: Primitive literals: clauses the DSL expresses directly.
LITERALS: dict[str, ClauseKind] = {
    "onLine": ClauseKind((P, L), "{0} lies on {1}", "onLine {0} {1}"),
    "notOnLine": ClauseKind((P, L), "{0} does not lie on {1}", "~ onLine {0} {1}"),
    "between": ClauseKind((P, P, P), "{1} is between {0} and {2}", "between {0} {1} {2}"),
    "notBetween": ClauseKind((P, P, P), "{1} is not between {0} and {2}", "~ between {0} {1} {2}"),
    "onCircle": ClauseKind((P, C), "{0} is on {1}", "onCircle {0} {1}"),
    "notOnCircle": ClauseKind((P, C), "{0} is not on {1}", "~ onCircle {0} {1}"),
    "inside": ClauseKind((P, C), "{0} is inside {1}", "inside {0} {1}"),
    "notInside": ClauseKind((P, C), "{0} is not inside {1}", "~ inside {0} {1}"),
    "centre": ClauseKind((P, C), "{0} is the centre of {1}", "centre {0} {1}"),
    "sameSide": ClauseKind((P, P, L), "{0} and {1} are on the same side of {2}", "sameSide {0} {1} {2}"),
    "notSameSide": ClauseKind((P, P, L), "{0} and {1} are not on the same side of {2}", "~ sameSide {0} {1} {2}"),
    "distinct": ClauseKind((P, P), "{0} is different from {1}", "{0} != {1}"),
    "equal": ClauseKind((P, P), "{0} is the same point as {1}", "{0} = {1}"),
}


@dataclass(frozen=True)
class Concept:
    """A shared concept: signature, informal template, and its definition as clauses over the parameters."""

    sorts: tuple[str, ...]
    phrase: str
    body: tuple[tuple[str, tuple[int, ...]], ...]

    def params(self) -> tuple[tuple[str, str], ...]:
        """Canonical parameter names, the first names of each sort's pool (``a b c``, ``l m n``, ``k``), so that a
        definition's clauses read like the corpus's clauses."""
        counts = {P: 0, L: 0, C: 0}
        out = []
        for s in self.sorts:
            out.append((POOLS[s][counts[s]], s))
            counts[s] += 1
        return tuple(out)


#: The concepts of the generated world (a triangle as LeanEuclid's ``formTriangle``; the rest in its spirit).
CONCEPTS: dict[str, Concept] = {
    "segment": Concept((P, P, L), "{0} and {1} are two distinct points of {2}",
                       (("onLine", (0, 2)), ("onLine", (1, 2)), ("distinct", (0, 1)))),
    "collinear": Concept((P, P, P, L), "{0}, {1} and {2} all lie on {3}",
                         (("onLine", (0, 3)), ("onLine", (1, 3)), ("onLine", (2, 3)))),
    "formTriangle": Concept((P, P, P, L, L, L), "{0}, {1}, {2} form a triangle with sides {3}, {4}, {5}",
                            (("segment", (0, 1, 3)), ("segment", (1, 2, 4)), ("segment", (2, 0, 5)),
                             ("notOnLine", (2, 3)), ("notOnLine", (0, 4)), ("notOnLine", (1, 5)))),
    "chord": Concept((P, P, C), "{0} and {1} are the ends of a chord of {2}",
                     (("onCircle", (0, 2)), ("onCircle", (1, 2)), ("distinct", (0, 1)))),
    "radius": Concept((P, P, C), "{0} and {1} are the ends of a radius of {2}",
                      (("centre", (0, 2)), ("onCircle", (1, 2)))),
    "diameter": Concept((P, P, P, C), "{0} and {1} are the ends of a diameter of {3} with centre {2}",
                        (("chord", (0, 1, 3)), ("centre", (2, 3)), ("between", (0, 2, 1)))),
    "oppositeSides": Concept((P, P, L), "{0} and {1} are on opposite sides of {2}",
                             (("notOnLine", (0, 2)), ("notOnLine", (1, 2)), ("notSameSide", (0, 1, 2)))),
    "outside": Concept((P, C), "{0} lies outside {1}", (("notInside", (0, 1)), ("notOnCircle", (0, 1)))),
    "inOrder": Concept((P, P, P, P), "{0}, {1}, {2}, {3} lie in this order",
                       (("between", (0, 1, 2)), ("between", (1, 2, 3)))),
    "inscribed": Concept((P, P, P, L, L, L, C),
                         "{0}, {1}, {2} form a triangle with sides {3}, {4}, {5} inscribed in {6}",
                         (("formTriangle", (0, 1, 2, 3, 4, 5)), ("onCircle", (0, 6)), ("onCircle", (1, 6)),
                          ("onCircle", (2, 6)))),
}  # fmt: skip

_PLURAL = {P: "points", L: "lines", C: "circles"}
_SINGULAR = {P: "a point", L: "a line", C: "a circle"}


def kind_of(name: str) -> ClauseKind:
    """The clause kind ``name`` (a literal or a concept, the latter formalized by its name).

    Raises:
        KeyError: naming the unknown kind.
    """
    if name in LITERALS:
        return LITERALS[name]
    if name in CONCEPTS:
        c = CONCEPTS[name]
        return ClauseKind(c.sorts, c.phrase, " ".join([name] + [f"{{{i}}}" for i in range(len(c.sorts))]))
    raise KeyError(f"unknown clause kind {name!r}; known: {', '.join(sorted(LITERALS) + sorted(CONCEPTS))}")


def clause_phrases() -> dict[str, str]:
    """Clause kind -> informal template, literals and concepts."""
    return {k: kind_of(k).phrase for k in (*LITERALS, *CONCEPTS)}


@dataclass(frozen=True)
class Clause:
    """One clause of a statement: a kind and its arguments (variable names)."""

    kind: str
    args: tuple[str, ...]

    def informal(self) -> str:
        """The informal text."""
        return kind_of(self.kind).phrase.format(*self.args)

    def formal(self) -> str:
        """The gold formal text (a concept by its abstraction's name)."""
        return kind_of(self.kind).formal.format(*self.args)


def concept_analysis(name: str) -> ConceptAnalysis:
    """The CDG analysis of a catalogue concept (what the paper's step-3 LLM call returns).

    Raises:
        KeyError: for a name that is not a concept of :data:`CONCEPTS`.
    """
    c = CONCEPTS[name]
    deps = tuple(dict.fromkeys(k for k, _ in c.body if k in CONCEPTS))
    prims = sorted({a.pred for k, _ in c.body if k in LITERALS for a in atoms(parse_formula(LITERALS[k].formal.format(
        *("x" for _ in LITERALS[k].sorts))))})  # fmt: skip
    status = "needs_dependencies" if deps else "directly_expressible"
    return ConceptAnalysis(status, deps, tuple(prims), analysis=f"defined by {len(c.body)} clauses")


def definition_clauses(name: str) -> tuple[tuple[str, str], tuple[Clause, ...]]:
    """The informal definition of concept ``name`` over its canonical parameters: (header phrase, body clauses)."""
    c = CONCEPTS[name]
    params = [p for p, _ in c.params()]
    return c.phrase.format(*params), tuple(Clause(k, tuple(params[i] for i in idx)) for k, idx in c.body)


def gold_library() -> Library:
    """The gold definitions of every concept (bodies use earlier concepts by name)."""
    from iclr26.dna.dsl import Definition, conjunction

    lib = Library()
    order = ("segment", "collinear", "formTriangle", "chord", "radius", "diameter", "oppositeSides", "outside",
             "inOrder", "inscribed")  # fmt: skip
    for name in order:
        _, body = definition_clauses(name)
        lib.add(Definition(name, CONCEPTS[name].params(), conjunction([parse_formula(b.formal()) for b in body])),
                CONCEPTS[name].phrase)  # fmt: skip
    return lib


@dataclass(frozen=True)
class Item:
    """One corpus statement.

    Attributes:
        id: a name.
        informal: the informal statement (module docstring format).
        formal: the gold formalization (abstractions by name).
        binders: ``(name, sort)`` pairs.
        premises: the premise clauses.
        conclusions: the conclusion clauses.
        split: ``"train"``, ``"test"`` or ``"data"`` (user data).
    """

    id: str
    informal: str
    formal: str
    binders: tuple[tuple[str, str], ...]
    premises: tuple[Clause, ...]
    conclusions: tuple[Clause, ...]
    split: str

    @property
    def n_clauses(self) -> int:
        """Statement length: premise + conclusion clauses."""
        return len(self.premises) + len(self.conclusions)

    @property
    def concepts(self) -> tuple[str, ...]:
        """The concepts the statement uses (sorted)."""
        return tuple(sorted({c.kind for c in (*self.premises, *self.conclusions) if c.kind in CONCEPTS}))


def binders_phrase(binders: Sequence[tuple[str, str]]) -> str:
    """``a, b be points, l be a line`` (groups by sort in first-appearance order)."""
    groups: dict[str, list[str]] = {}
    for n, s in binders:
        groups.setdefault(s, []).append(n)
    parts = [f"{', '.join(ns)} be {_PLURAL[s] if len(ns) > 1 else _SINGULAR[s]}" for s, ns in groups.items()]
    return ", ".join(parts)


def binders_formal(binders: Sequence[tuple[str, str]]) -> str:
    """``(a b : Point) (l : Line)``, grouped as :func:`binders_phrase` groups."""
    groups: dict[str, list[str]] = {}
    for n, s in binders:
        groups.setdefault(s, []).append(n)
    return " ".join(f"({' '.join(ns)} : {s})" for s, ns in groups.items())


def make_item(ident: str, premises: Sequence[Clause], conclusions: Sequence[Clause], split: str) -> Item:
    """Build the informal and gold formal text of a statement from its clauses."""
    seen: dict[str, str] = {}
    for c in (*premises, *conclusions):
        for v, s in zip(c.args, kind_of(c.kind).sorts, strict=True):
            seen.setdefault(v, s)
    order = {P: 0, L: 1, C: 2}
    binders = tuple(sorted(seen.items(), key=lambda kv: order[kv[1]]))  # stable: first appearance within a sort
    informal = (f"Let {binders_phrase(binders)}. Assume {'; '.join(c.informal() for c in premises)}. "
                f"Then {'; '.join(c.informal() for c in conclusions)}.")  # fmt: skip
    formal = (f"forall {binders_formal(binders)}, {AND.join(c.formal() for c in premises)} -> "
              f"{AND.join(c.formal() for c in conclusions)}")  # fmt: skip
    return Item(ident, informal, formal, binders, tuple(premises), tuple(conclusions), split)


def _draw_clause(rng: np.random.Generator, kinds: Sequence[str], used: dict[str, list[str]], reuse: float) -> Clause:
    kind = kinds[int(rng.integers(len(kinds)))]
    args: list[str] = []
    for s in kind_of(kind).sorts:
        old = [v for v in used[s] if v not in args]
        fresh = [v for v in POOLS[s] if v not in used[s] and v not in args]
        if old and (rng.random() < reuse or not fresh):
            v = old[int(rng.integers(len(old)))]
        else:
            v = fresh[0]
            used[s].append(v)
        args.append(v)
    return Clause(kind, tuple(args))


def generate_corpus(
    rng: np.random.Generator,
    n: int,
    *,
    min_clauses: int,
    max_clauses: int,
    concepts: Sequence[str],
    concept_prob: float,
    reuse: float = 0.6,
    split: str = "train",
    validator=None,  # noqa: ANN001
    prefix: str = "s",
) -> list[Item]:
    """Draw ``n`` statements with clause counts uniform in ``[min_clauses, max_clauses]``.

    Each clause is a concept from ``concepts`` with probability ``concept_prob``, else a primitive literal; an
    argument reuses a variable of its sort with probability ``reuse``. One conclusion clause (two for statements of
    five clauses or more). With a ``validator``, a draw whose premises contradict each other or whose conclusion is
    trivial is redrawn (every gold statement passes the validator).

    Args:
        rng: the random generator.
        n: statements.
        min_clauses: fewest clauses (>= 2).
        max_clauses: most clauses.
        concepts: the concepts that may be used.
        concept_prob: probability that a clause is a concept use.
        reuse: probability that an argument reuses a bound variable of its sort.
        split: the items' split label.
        validator: a :class:`~iclr26.dna.validator.Validator`, or None.
        prefix: id prefix.

    Returns:
        The items.
    """
    if min_clauses < 2 or max_clauses < min_clauses:
        raise ValueError(f"need 2 <= min_clauses <= max_clauses, got {min_clauses}, {max_clauses}")
    lib = gold_library().definitions
    literals = list(LITERALS)
    items: list[Item] = []
    while len(items) < n:
        length = int(rng.integers(min_clauses, max_clauses + 1))
        n_concl = 2 if length >= 5 else 1
        used: dict[str, list[str]] = {P: [], L: [], C: []}
        clauses = []
        for _ in range(length):
            pool = list(concepts) if concepts and rng.random() < concept_prob else literals
            clauses.append(_draw_clause(rng, pool, used, reuse))
        item = make_item(f"{prefix}{len(items)}", clauses[:-n_concl], clauses[-n_concl:], split)
        if validator is not None and not validator.validate(item.formal, lib).ok:
            continue
        items.append(item)
    return items


# ------------------------------------------------------------------------------------------------ data files
def save_jsonl(items: Sequence[Item], path: str | Path) -> None:
    """Write items in the ``data`` format (module docstring)."""
    with open(path, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps({"id": it.id, "informal": it.informal, "formal": it.formal}) + "\n")


def load_jsonl(path: str | Path) -> list[Item]:
    """Read and check a ``data`` file (module docstring).

    Raises:
        ValueError: naming the line and the field (``informal``/``formal``/``id``) of the first error: not JSON,
            a missing field, an informal text not in the format, a formal text that does not parse or type-check,
            or binders that differ from the variables the informal text declares.
        FileNotFoundError: if ``path`` does not exist.
    """
    from iclr26.dna.pipeline import decompose_informal, parse_clause

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    lib = gold_library().definitions
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path.name} line {lineno}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path.name} line {lineno}: expected a JSON object")
        for key in ("id", "informal", "formal"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ValueError(f"{path.name} line {lineno}: field '{key}' must be a non-empty string")
        try:
            tree = decompose_informal(row["informal"])
            premises = tuple(parse_clause(t) for t in tree.premises)
            conclusions = tuple(parse_clause(t) for t in tree.conclusions)
        except ValueError as err:
            raise ValueError(f"{path.name} line {lineno}: field 'informal': {err}") from None
        try:
            st: Statement = parse_statement(row["formal"])
        except ValueError as err:
            raise ValueError(f"{path.name} line {lineno}: field 'formal': {err}") from None
        errors = statement_type_errors(st, lib)
        if errors:
            raise ValueError(f"{path.name} line {lineno}: field 'formal': {errors[0]}")
        if set(st.binders) != set(tree.binders):
            raise ValueError(f"{path.name} line {lineno}: field 'formal': binders {sorted(st.binders)} differ from "
                             f"the informal statement's {sorted(tree.binders)}")  # fmt: skip
        items.append(Item(row["id"], row["informal"], row["formal"], tuple(tree.binders), premises, conclusions,
                          "data"))  # fmt: skip
    if not items:
        raise ValueError(f"{path.name}: no statements")
    return items
