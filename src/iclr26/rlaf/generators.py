"""The paper's problem families, generated with ``cnfgen`` (the generator the official code uses), seeded.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053), its experimental data; facts from the official
``generate_data.py`` and ``src/datasets/generate_{ksat,col}.py`` (read, not copied):

- random 3-SAT at the satisfiability threshold: ``cnfgen.RandomKCNF(3, n, m)`` with
  ``m = ⌊4.258·n + 58.26·n^(-2/3)⌋`` clauses;
- 3-colouring: ``cnfgen.GraphColoringFormula(G, 3)`` on an Erdős–Rényi graph ``G(n, p)`` of average degree 4.67,
  i.e. ``p = 4.67·n / 2 / C(n, 2) = 4.67 / (n − 1)``;
- training sets are balanced (half SAT, half UNSAT, labelled by a solver); test sets are plain random draws.

Every formula is a function of ``(family, size, seed)``; a set of ``count`` formulas uses the seeds
``derive_seed(seed, family, size, i)`` for ``i = 0, 1, ...`` in order, so sets are reproducible and disjoint across
different ``seed`` values with overwhelming probability.

Deviations: the cryptographic family of the paper needs an external generator and is not provided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from iclr26.common.seeding import derive_seed
from iclr26.rlaf.cnf import CNF

__all__ = [
    "FAMILIES",
    "Family",
    "Instance",
    "coloring_3",
    "describe",
    "generate",
    "generate_balanced",
    "random_3sat",
    "threshold_clauses",
]

Family = Literal["3sat", "3col"]
FAMILIES: tuple[Family, ...] = ("3sat", "3col")


def threshold_clauses(num_vars: int) -> int:
    """Clauses of a random 3-SAT formula at the empirical threshold: ``⌊4.258·n + 58.26·n^(-2/3)⌋``."""
    if num_vars < 3:
        raise ValueError(f"num_vars must be >= 3 for 3-SAT, got {num_vars}")
    return int(4.258 * num_vars + 58.26 * num_vars ** (-2.0 / 3.0))


def random_3sat(num_vars: int, *, seed: int) -> CNF:
    """A uniformly random 3-SAT formula with ``n = num_vars`` variables at the threshold (``cnfgen.RandomKCNF``)."""
    from cnfgen import RandomKCNF

    formula = RandomKCNF(3, num_vars, threshold_clauses(num_vars), seed=seed)
    return CNF.from_clauses(formula.clauses(), num_vars=num_vars)


def coloring_3(num_nodes: int, *, seed: int, average_degree: float = 4.67) -> CNF:
    """3-colourability of ``G(n, p)`` with ``p = average_degree / (n − 1)`` (``cnfgen.GraphColoringFormula``).

    Variables: ``3·n`` (node ``i`` has colour ``c``); clauses: at least one colour per node, at most one (the
    functional encoding), and differently coloured endpoints per edge.
    """
    import networkx as nx
    from cnfgen import GraphColoringFormula

    if num_nodes < 2:
        raise ValueError(f"num_nodes must be >= 2, got {num_nodes}")
    if not 0.0 < average_degree < num_nodes - 1:
        raise ValueError(f"average_degree must be in (0, num_nodes - 1), got {average_degree}")
    graph = nx.gnp_random_graph(num_nodes, average_degree / (num_nodes - 1), seed=seed)
    formula = GraphColoringFormula(graph, 3)
    return CNF.from_clauses(formula.clauses(), num_vars=formula.number_of_variables())


_GENERATORS: dict[str, Callable[..., CNF]] = {"3sat": random_3sat, "3col": coloring_3}


@dataclass(frozen=True)
class Instance:
    """A generated formula with where it came from.

    Attributes:
        cnf: the formula.
        family: ``"3sat"`` or ``"3col"``.
        size: variables (3-SAT) or graph nodes (3-colouring).
        seed: the generator seed of this formula.
        satisfiable: the SAT/UNSAT label where it was computed (balanced sets), else ``None``.
    """

    cnf: CNF
    family: Family
    size: int
    seed: int
    satisfiable: bool | None = None


def _check(family: str, size: int, count: int) -> None:
    if family not in _GENERATORS:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    if size < 3:
        raise ValueError(f"size must be >= 3, got {size}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")


def generate(family: Family, size: int, count: int, *, seed: int) -> list[Instance]:
    """``count`` random formulas of one family and size (a test set: no SAT/UNSAT balancing).

    Args:
        family: ``"3sat"`` or ``"3col"``.
        size: variables (3-SAT) or nodes (3-colouring).
        count: how many.
        seed: the set's seed.
    """
    _check(family, size, count)
    make = _GENERATORS[family]
    out = []
    for i in range(count):
        s = derive_seed(seed, family, size, i) % 2**32
        out.append(Instance(cnf=make(size, seed=s), family=family, size=size, seed=s))
    return out


def generate_balanced(
    family: Family, size: int, count: int, *, seed: int, max_draws: int | None = None
) -> list[Instance]:
    """``count`` formulas, half satisfiable and half not (the paper's training sets), labelled by Glucose 4.

    Formulas are drawn in seed order; each is kept while its class still has room, so the result is a
    deterministic function of the arguments. Satisfiable and unsatisfiable formulas alternate in the output.

    Args:
        family: ``"3sat"`` or ``"3col"``.
        size: variables (3-SAT) or nodes (3-colouring).
        count: how many (must be even).
        seed: the set's seed.
        max_draws: give up after this many draws (default ``50·count + 100``).

    Raises:
        ValueError: for an odd ``count``, or when ``max_draws`` draws do not fill both classes (a size far from
            the threshold, where almost every formula falls in one class).
    """
    from pysat.solvers import Solver

    _check(family, size, count)
    if count % 2:
        raise ValueError(f"count must be even for a balanced set, got {count}")
    make = _GENERATORS[family]
    limit = max_draws if max_draws is not None else 50 * count + 100
    buckets: dict[bool, list[Instance]] = {True: [], False: []}
    for i in range(limit):
        if min(len(b) for b in buckets.values()) >= count // 2:
            break
        s = derive_seed(seed, family, size, "balanced", i) % 2**32
        cnf = make(size, seed=s)
        with Solver(name="glucose4", bootstrap_with=[list(c) for c in cnf.clauses]) as solver:
            sat = bool(solver.solve())
        if len(buckets[sat]) < count // 2:
            buckets[sat].append(Instance(cnf=cnf, family=family, size=size, seed=s, satisfiable=sat))
    if min(len(b) for b in buckets.values()) < count // 2:
        raise ValueError(
            f"generate_balanced: {limit} draws of {family} size {size} gave {len(buckets[True])} SAT and "
            f"{len(buckets[False])} UNSAT; raise max_draws or choose a size nearer the threshold"
        )
    return [inst for pair in zip(buckets[True], buckets[False], strict=True) for inst in pair]


def describe(instances: list[Instance]) -> str:
    """A one-line summary ``"<count> <family>-<size> (<sat> SAT)"`` for logs."""
    if not instances:
        return "0 instances"
    sat = sum(1 for i in instances if i.satisfiable)
    first = instances[0]
    return f"{len(instances)} {first.family}-{first.size}" + (f" ({sat} SAT)" if first.satisfiable is not None else "")
