"""A synthetic knowledge graph with typed entities and relations, templated multi-hop questions and an OOD split.

The reproduction's stand-in for the RoG-processed Freebase subgraphs of CWQ/WebQSP (EoG §4). A *composition* is a
type-valid relation chain ``r_1 … r_k`` (``k`` = 1–3 hops); a question starts at an entity, follows its composition
and asks for the entities reached. Each question's subgraph holds its gold path plus every other outgoing triple of
the entities on the path (the detours an explorer sees) and random filler triples.

**The out-of-distribution split** (the paper's "atypical paths"): a few relation *bigrams* ``(r_a, r_b)`` are held
out; every composition containing one is OOD. The SFT traces come from in-distribution compositions only, so no SFT
trace ever follows ``r_a`` by ``r_b``, although every relation appears in the SFT data. The RL pool holds questions
of both kinds with answers and gold paths but no traces (RL only sees rewards); the test splits hold (start entity,
composition) pairs seen in no training pool.

Glossary: ``P`` person, ``C`` company, ``T`` city (town), ``N`` country (nation), ``L`` language.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from iclr26.eog.data import KGQAExample

__all__ = [
    "ENTITY_TYPES",
    "RELATIONS",
    "KGTask",
    "Relation",
    "compositions",
    "make_kg",
    "make_question",
    "make_task",
    "split_loaded",
]


@dataclass(frozen=True)
class Relation:
    """A typed relation.

    Attributes:
        name: the relation's name (one word).
        head: the subject's type.
        tail: the object's type.
        max_objects: objects per subject are drawn from 1 to this (1 = functional).
    """

    name: str
    head: str
    tail: str
    max_objects: int = 1


#: type → (name prefix, default count)
ENTITY_TYPES: dict[str, tuple[str, int]] = {
    "person": ("p", 60),
    "company": ("c", 16),
    "city": ("t", 16),
    "country": ("n", 6),
    "language": ("l", 8),
}
RELATIONS: tuple[Relation, ...] = (
    Relation("works_at", "person", "company"),
    Relation("born_in", "person", "city"),
    Relation("mentor", "person", "person"),
    Relation("hq_in", "company", "city"),
    Relation("partner", "company", "company"),
    Relation("in_country", "city", "country"),
    Relation("twin", "city", "city"),
    Relation("capital", "country", "city"),
    Relation("speaks", "country", "language", max_objects=2),
)


def make_kg(seed: int, *, scale: float = 1.0) -> nx.MultiDiGraph:
    """A random typed KG: every entity gets 1 to ``max_objects`` objects for each relation its type heads.

    Args:
        seed: the generator's seed.
        scale: multiplies every entity count (at least 3 per type).

    Returns:
        A ``networkx.MultiDiGraph``: nodes carry ``type``; edges are keyed and labelled by ``relation``. Names are a
        type prefix and a fixed number of digits (two, more for > 100 entities), so no name contains another (the
        official Hits@1 matches substrings).
    """
    rng = np.random.default_rng(seed)
    g = nx.MultiDiGraph()
    by_type: dict[str, list[str]] = {}
    for kind, (prefix, count) in ENTITY_TYPES.items():
        n = max(3, round(count * scale))
        width = max(2, len(str(n - 1)))  # one width per type: no name contains another
        by_type[kind] = [f"{prefix}{i:0{width}d}" for i in range(n)]
        g.add_nodes_from(by_type[kind], type=kind)
    for rel in RELATIONS:
        for s in by_type[rel.head]:
            pool = [o for o in by_type[rel.tail] if o != s]  # no self-loops (mentor, twin, partner)
            k = int(rng.integers(1, rel.max_objects + 1))
            for j in rng.choice(len(pool), size=k, replace=False):
                g.add_edge(s, pool[int(j)], key=rel.name, relation=rel.name)
    return g


def compositions(max_hops: int = 3) -> list[tuple[str, ...]]:
    """Every type-valid relation chain of 1 to ``max_hops`` relations, shortest first, then by name."""
    by_head: dict[str, list[Relation]] = {}
    for rel in RELATIONS:
        by_head.setdefault(rel.head, []).append(rel)
    chains: list[tuple[str, ...]] = []
    frontier = [(r.name,) for r in RELATIONS]
    tail = {r.name: r.tail for r in RELATIONS}
    for _ in range(max_hops):
        chains.extend(sorted(frontier))
        frontier = [(*c, r.name) for c in frontier for r in by_head.get(tail[c[-1]], [])]
    return chains


def _head_type(chain: Sequence[str]) -> str:
    return next(r.head for r in RELATIONS if r.name == chain[0])


def make_question(
    g: nx.MultiDiGraph, start: str, chain: Sequence[str], rng: np.random.Generator, *, n_graph: int = 12, qid: str
) -> KGQAExample:
    """The question "what is reached from ``start`` via ``chain``", its subgraph and its gold path.

    The gold path is every triple on a path from ``start`` along ``chain`` (one path; parallel objects of a
    multi-valued relation are all on it); the answers are the entities reached at the end. The subgraph is the gold
    path, the other outgoing triples of the entities on it, then random triples up to ``n_graph`` (gold triples are
    never dropped), shuffled.

    Raises:
        ValueError: if ``chain`` does not start at ``start``'s type.
    """
    if g.nodes[start]["type"] != _head_type(chain):
        raise ValueError(f"chain {chain} starts at type {_head_type(chain)}, but {start} is a {g.nodes[start]['type']}")
    gold: list[tuple[str, str, str]] = []
    frontier = [start]
    visited = [start]
    for rel in chain:
        nxt = []
        for e in frontier:
            for _, o, key in g.out_edges(e, keys=True):
                if key != rel:
                    continue
                if (e, rel, o) not in gold:  # a cycle (a mentor's mentor's mentor) may revisit a triple
                    gold.append((e, rel, o))
                if o not in nxt:
                    nxt.append(o)
        frontier = nxt
        visited.extend(o for o in nxt if o not in visited)
    gold_set = set(gold)
    near = [(s, k, o) for e in visited for s, o, k in g.out_edges(e, keys=True) if (s, k, o) not in gold_set]
    near = [near[int(i)] for i in rng.permutation(len(near))][: max(0, n_graph - len(gold))]
    chosen = set(gold) | set(near)
    edges = [(s, k, o) for s, o, k in g.edges(keys=True)]
    for i in rng.permutation(len(edges)):
        if len(chosen) >= n_graph:
            break
        chosen.add(edges[int(i)])
    ordered = sorted(chosen)
    graph = [ordered[int(i)] for i in rng.permutation(len(ordered))]
    question = f"what is reached from {start} via {' then '.join(chain)} ?"
    path = (tuple(gold),)
    return KGQAExample(
        qid=qid,
        question=question,
        answers=tuple(frontier),
        q_entity=(start,),
        a_entity=tuple(frontier),
        graph=tuple(graph),
        reasoning_path=path,
        composition=tuple(chain),
    )


@dataclass(frozen=True)
class KGTask:
    """The reproduction's data.

    Attributes:
        sft: in-distribution questions with gold paths (SFT traces are written from them).
        rl: the RL pool: in-distribution and OOD questions (RL uses answers and gold paths, never traces).
        test_id: held-out in-distribution questions.
        test_ood: held-out questions of OOD compositions.
        ood_bigrams: the held-out relation bigrams.
        id_compositions, ood_compositions: the compositions of each kind.
    """

    sft: list[KGQAExample]
    rl: list[KGQAExample]
    test_id: list[KGQAExample]
    test_ood: list[KGQAExample]
    ood_bigrams: list[tuple[str, str]]
    id_compositions: list[tuple[str, ...]]
    ood_compositions: list[tuple[str, ...]]


def bigrams(chain: Sequence[str]) -> set[tuple[str, str]]:
    """The adjacent relation pairs of a chain."""
    return set(itertools.pairwise(chain))


def make_task(
    seed: int,
    *,
    n_sft: int = 500,
    n_rl: int = 500,
    n_test: int = 100,
    ood_bigrams: int = 3,
    rl_ood_frac: float = 0.5,
    max_hops: int = 3,
    n_graph: int = 12,
    scale: float = 1.0,
) -> KGTask:
    """Build the KG, choose the held-out bigrams and draw the four disjoint question sets.

    Args:
        seed: the task's seed.
        n_sft: SFT questions (in-distribution).
        n_rl: RL questions, ``rl_ood_frac`` of them OOD.
        n_test: questions per test split.
        ood_bigrams: relation bigrams held out of the SFT data.
        rl_ood_frac: share of OOD questions in the RL pool.
        max_hops: longest composition.
        n_graph: triples per subgraph (at least the gold path).
        scale: entity counts multiplier (:func:`make_kg`).

    Returns:
        :class:`KGTask`.

    Raises:
        ValueError: if the graph has too few (start, composition) pairs for the requested sizes.
    """
    rng = np.random.default_rng(seed)
    g = make_kg(int(rng.integers(2**31)), scale=scale)
    chains = compositions(max_hops)
    all_bigrams = sorted({b for c in chains for b in bigrams(c)})
    held = [all_bigrams[int(i)] for i in rng.choice(len(all_bigrams), size=ood_bigrams, replace=False)]
    # the paper's atypical paths: a composition is OOD when it chains a held-out bigram no SFT trace contains
    ood = [c for c in chains if bigrams(c) & set(held)]
    idc = [c for c in chains if c not in ood]
    by_type: dict[str, list[str]] = {}
    for n, data in g.nodes(data=True):
        by_type.setdefault(data["type"], []).append(n)

    def pairs(chains_: list[tuple[str, ...]]) -> list[tuple[str, tuple[str, ...]]]:
        out = [(s, c) for c in chains_ for s in sorted(by_type[_head_type(c)])]
        return [out[int(i)] for i in rng.permutation(len(out))]

    id_pairs, ood_pairs = pairs(idc), pairs(ood)
    n_rl_ood = round(n_rl * rl_ood_frac)
    n_rl_id = n_rl - n_rl_ood
    if len(id_pairs) < n_sft + n_rl_id + n_test or len(ood_pairs) < n_rl_ood + n_test:
        raise ValueError(
            f"the KG has {len(id_pairs)} in-distribution and {len(ood_pairs)} OOD (start, composition) pairs; "
            f"need {n_sft + n_rl_id + n_test} and {n_rl_ood + n_test}: lower n_sft/n_rl/n_test or raise scale"
        )

    def build(selected, tag):
        return [make_question(g, s, c, rng, n_graph=n_graph, qid=f"{tag}{i}") for i, (s, c) in enumerate(selected)]

    test_id = build(id_pairs[:n_test], "tid")
    rl_id = build(id_pairs[n_test : n_test + n_rl_id], "rid")
    sft = build(id_pairs[n_test + n_rl_id : n_test + n_rl_id + n_sft], "sft")
    test_ood = build(ood_pairs[:n_test], "tood")
    rl_ood = build(ood_pairs[n_test : n_test + n_rl_ood], "rood")
    rl = [*rl_id, *rl_ood]
    rl = [rl[int(i)] for i in rng.permutation(len(rl))]
    return KGTask(sft, rl, test_id, test_ood, held, idc, ood)


def split_loaded(examples: list[KGQAExample], *, ood_frac: float, seed: int) -> KGTask:
    """Split user data as the synthetic task is split: whole compositions (of length >= 2 where possible) are OOD.

    ID questions: 20% test, the rest halved into SFT and RL; OOD questions: half test, half RL (no traces).
    """
    rng = np.random.default_rng(seed)
    comps = sorted({e.composition for e in examples})
    multi = [c for c in comps if len(c) >= 2] or comps
    k = max(1, min(len(multi), round(ood_frac * len(comps))))
    if k >= len(comps):
        k = len(comps) - 1
    held = {multi[int(i)] for i in rng.choice(len(multi), size=k, replace=False)}
    order = [examples[int(i)] for i in rng.permutation(len(examples))]
    ood = [e for e in order if e.composition in held]
    idx = [e for e in order if e.composition not in held]
    n_test = max(1, len(idx) // 5)
    test_id, rest = idx[:n_test], idx[n_test:]
    sft, rl_id = rest[: (len(rest) + 1) // 2], rest[(len(rest) + 1) // 2 :]
    half = max(1, len(ood) // 2)
    test_ood, rl_ood = ood[:half], ood[half:]
    held_bigrams = sorted({b for c in held for b in bigrams(c)})
    return KGTask(sft, rl_id + rl_ood, test_id, test_ood, held_bigrams, sorted(set(comps) - held), sorted(held))
