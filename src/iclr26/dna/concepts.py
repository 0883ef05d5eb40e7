"""DNA Phase I (abstraction learning): concept extraction, the concept dependency graph, and the abstraction library.

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. Phase I follows the six steps of the official
``Abstraction_Learning/extend_dsl.py`` (repository ``marcusm117/DNA``; read for its prompts and data layout):

1. concept extraction over the whole informal corpus (:func:`extract_concepts`);
2. filtering: concepts already in the DSL and duplicates are dropped (:func:`extract_concepts`);
3. the concept dependency graph (CDG, :func:`build_cdg`): a queue and an analysed set; each concept gets an
   analysis with its ``formal_correspondents``, ``concept_dependencies`` and a status in ``directly_expressible``,
   ``needs_dependencies``, ``impossible``; dependencies not yet analysed join the queue; the graph must be acyclic
   (:class:`CycleError` names the cycle);
4. formalization in topological order, leaves first, with validator-checked repair (:func:`learn_library`): each
   definition's informal clauses are translated by the same :class:`~iclr26.dna.translators.Translator` that
   Phase II uses, with the abstractions learned so far available;
5. refactoring (not done: see Deviations);
6. documentation: one line per abstraction (:meth:`Library.docs`), what a prompt shows the model.

Deviations: the paper's steps 1–3 are LLM calls; here extraction matches each concept's informal pattern against
the corpus and the analysis comes from an ``analyse`` callable (the reproduction's concept catalogue), because
the trained small model cannot analyse concepts. Step 5 (refactoring, compression ratio ≈ 1.59 in the paper) is not
implemented: our definitions are written without redundancy, so :attr:`Library.reuse_ratio` (expanded literals /
written literals) is reported in its place.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from iclr26.dna.dsl import PRIMITIVES, Definition, atoms, definition_type_errors, expand

__all__ = [
    "CDG",
    "ConceptAnalysis",
    "CycleError",
    "Library",
    "build_cdg",
    "extract_concepts",
]

Status = Literal["directly_expressible", "needs_dependencies", "impossible"]
STATUSES: tuple[str, ...] = ("directly_expressible", "needs_dependencies", "impossible")


class CycleError(ValueError):
    """The concept dependency graph has a cycle; :attr:`cycle` lists it, first concept repeated at the end."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__(f"the concept dependency graph has a cycle: {' -> '.join(self.cycle)}")


@dataclass(frozen=True)
class ConceptAnalysis:
    """The CDG record of one concept (the fields of ``extend_dsl.py``'s step-3 JSON).

    Attributes:
        status: ``directly_expressible`` (primitives suffice), ``needs_dependencies`` (needs other concepts
            first) or ``impossible`` (the DSL cannot express it).
        concept_dependencies: other concepts it is defined with.
        formal_correspondents: the DSL primitives it uses.
        analysis: a free-text note.
    """

    status: Status
    concept_dependencies: tuple[str, ...] = ()
    formal_correspondents: tuple[str, ...] = ()
    analysis: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "directly_expressible" and self.concept_dependencies:
            raise ValueError("a directly_expressible concept has no concept_dependencies")
        if self.status == "needs_dependencies" and not self.concept_dependencies:
            raise ValueError("a needs_dependencies concept must list its concept_dependencies")


@dataclass(frozen=True)
class CDG:
    """A concept dependency graph.

    Attributes:
        nodes: concept -> its analysis, in the order the queue analysed them.
    """

    nodes: dict[str, ConceptAnalysis]

    def edges(self) -> list[tuple[str, str]]:
        """``(concept, dependency)`` pairs."""
        return [(c, d) for c, a in self.nodes.items() for d in a.concept_dependencies]

    def find_cycle(self) -> list[str] | None:
        """A dependency cycle (first node repeated at the end), or None (depth-first search, three colours)."""
        colour = dict.fromkeys(self.nodes, 0)  # 0 new, 1 on the stack, 2 done
        stack: list[str] = []

        def visit(c: str) -> list[str] | None:
            colour[c] = 1
            stack.append(c)
            for d in self.nodes[c].concept_dependencies:
                if colour.get(d) == 1:
                    return stack[stack.index(d) :] + [d]
                if colour.get(d) == 0:
                    found = visit(d)
                    if found:
                        return found
            stack.pop()
            colour[c] = 2
            return None

        for c in self.nodes:
            if colour[c] == 0:
                found = visit(c)
                if found:
                    return found
        return None

    def topological_order(self) -> list[str]:
        """Concepts with every dependency before its dependants (leaves first; ties by name: Kahn's algorithm).

        Raises:
            CycleError: if the graph has a cycle.
        """
        cycle = self.find_cycle()
        if cycle:
            raise CycleError(cycle)
        pending = {c: {d for d in a.concept_dependencies if d in self.nodes} for c, a in self.nodes.items()}
        order: list[str] = []
        while pending:
            # Phase I step 4 formalizes leaves first: a concept is ready once all its dependencies are placed
            ready = sorted(c for c, deps in pending.items() if not deps)
            for c in ready:
                order.append(c)
                del pending[c]
            for deps in pending.values():
                deps.difference_update(ready)
        return order

    def depth(self) -> int:
        """Nodes on the longest dependency chain (1 for a graph without edges, 0 for an empty one)."""
        memo: dict[str, int] = {}
        for c in self.topological_order():
            deps = [memo[d] for d in self.nodes[c].concept_dependencies if d in memo]
            memo[c] = 1 + max(deps, default=0)
        return max(memo.values(), default=0)

    def stats(self) -> dict[str, int]:
        """Size, edges, depth and the count of each status."""
        out = {"size": len(self.nodes), "edges": len(self.edges()), "depth": self.depth()}
        for s in STATUSES:
            out[s] = sum(a.status == s for a in self.nodes.values())
        return out


def build_cdg(seeds: Iterable[str], analyse: Callable[[str], ConceptAnalysis]) -> CDG:
    """Build the CDG breadth-first from the extracted concepts (step 3 of Phase I).

    Args:
        seeds: the filtered concepts, in extraction order.
        analyse: concept -> its :class:`ConceptAnalysis` (the paper asks an LLM).

    Returns:
        The :class:`CDG`; every dependency of a node is a node.

    Raises:
        CycleError: if the dependencies form a cycle (checked after the queue empties).
    """
    queue = deque(seeds)
    analysed: dict[str, ConceptAnalysis] = {}
    while queue:
        concept = queue.popleft()
        if concept in analysed:
            continue
        result = analyse(concept)
        analysed[concept] = result
        # CDG expansion (Phase I step 3): a dependency not yet analysed joins the queue, breadth-first
        for dep in result.concept_dependencies:
            if dep not in analysed and dep not in queue:
                queue.append(dep)
    graph = CDG(analysed)
    cycle = graph.find_cycle()  # the paper's CDG must be acyclic, else no leaves-first formalization order exists
    if cycle:
        raise CycleError(cycle)
    return graph


def pattern_regex(phrase: str) -> re.Pattern[str]:
    """A concept's informal template (``"{0} and {1} are on opposite sides of {2}"``) as a regex over statements."""
    parts = re.split(r"\{\d+\}", phrase)
    return re.compile(r"\b\w+\b".join(re.escape(p) for p in parts))


def extract_concepts(
    texts: Sequence[str], phrases: Mapping[str, str], *, min_count: int = 1, in_dsl: Iterable[str] = ()
) -> dict[str, int]:
    """Steps 1–2 of Phase I: the concepts used in the corpus, with the number of statements using each.

    Args:
        texts: the informal corpus.
        phrases: concept name -> informal template with ``{i}`` argument slots.
        min_count: keep a concept used by at least this many statements (an abstraction pays off when reused).
        in_dsl: names the DSL already expresses directly (dropped, as the DSL's primitives are).

    Returns:
        concept -> count, most used first (ties by name); primitives of the DSL are filtered out.
    """
    counts = {}
    skip = set(PRIMITIVES) | set(in_dsl)
    for name, phrase in phrases.items():
        if name in skip:  # step 2: already in the DSL
            continue
        rx = pattern_regex(phrase)
        n = sum(1 for t in texts if rx.search(t))
        if n >= min_count:
            counts[name] = n
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class Library:
    """The abstraction library: formal definitions learned once and reused by every statement.

    Attributes:
        definitions: name -> :class:`~iclr26.dna.dsl.Definition`, in the order they were added.
        phrases: name -> the informal template (for the documentation).
    """

    definitions: dict[str, Definition] = field(default_factory=dict)
    phrases: dict[str, str] = field(default_factory=dict)

    def add(self, d: Definition, phrase: str = "") -> None:
        """Add ``d`` after checking it against the library so far.

        Raises:
            ValueError: if the name is taken or the body is ill-typed (the messages of the type checker).
        """
        if d.name in self.definitions:
            raise ValueError(f"abstraction '{d.name}' is already in the library")
        errors = definition_type_errors(d, self.definitions)
        if errors:
            raise ValueError(f"definition of '{d.name}' is ill-typed: {'; '.join(errors)}")
        self.definitions[d.name] = d
        self.phrases[d.name] = phrase

    def __contains__(self, name: object) -> bool:
        return name in self.definitions

    def __len__(self) -> int:
        return len(self.definitions)

    def docs(self) -> list[str]:
        """Step 6: one documentation line per abstraction, ``name (params) : informal meaning``."""
        out = []
        for name, d in self.definitions.items():
            params = " ".join(f"{p}:{s}" for p, s in d.params)
            meaning = self.phrases.get(name, "").format(*(p for p, _ in d.params))
            out.append(f"{name} {params} -- {meaning}" if meaning else f"{name} {params}")
        return out

    def reuse_ratio(self) -> float:
        """Literals of the definitions expanded to primitives / literals as written (1 when nothing is reused)."""
        written = sum(len(list(atoms(d.body))) for d in self.definitions.values())
        expanded = sum(len(list(atoms(expand(d.body, self.definitions)))) for d in self.definitions.values())
        # reported in place of the paper's refactoring compression ratio (≈ 1.59), as step 5 is not implemented
        return expanded / written if written else 1.0

    def texts(self) -> list[str]:
        """The definitions as DSL text."""
        return [d.text() for d in self.definitions.values()]
