"""The verification kernel behind the exploration: a :class:`Kernel` interface and its z3 implementation.

The paper checks every step in Lean 4; Lean 4 cannot be installed here, so exploration steps are decided by the SMT
solver z3 over the integers, and every submitted statement is re-checked by Coq (:mod:`iclr26.dexploration.coq`).
A Lean 4 backend plugs in by implementing :class:`Kernel` (and, for the certificate, :class:`~iclr26.dexploration.
coq.Certifier`): the environment only calls ``entails`` and ``satisfiable``.

- Deduce(H) from context Γ is accepted iff Γ ∧ ¬H is unsatisfiable; the unsat core names the premises used (the
  dependency edges of the output's DAG and the facts the Coq replay keeps).
- Modes: ``full`` decides integer polynomial arithmetic (semantic truth; z3 may give up on non-linear problems);
  ``linear`` treats every non-linear monomial as an opaque atom (what ``lia`` does); ``products`` (the exploration's
  step checker) is ``linear`` over the premises plus the products of pairs of linear bounds, (c − p)(d − q) ≥ 0
  for p ≤ c and q ≤ d (an equation gives both bounds) — the degree-2 Positivstellensatz certificates that Lean's
  ``nlinarith`` and Coq's ``nia`` search. It is decidable, and the products in the unsat core are exactly what the
  Coq replay asserts (``Z.mul_nonneg_nonneg``) before ``lia``, so every accepted step replays in Coq.
- The explosion check accepts a context iff it is satisfiable (exact here; the paper's check is heuristic).
- z3 may answer "unknown" on non-linear integer problems within its resource limit (``rlimit``, a count of z3's
  own work units, so the answer does not depend on the machine's load); that is a rejection, never an acceptance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from iclr26.dexploration.logic import Fact, rule_mul


@dataclass(frozen=True)
class Entailment:
    """A kernel's answer to "does Γ entail H?".

    Attributes:
        proved: True if proved, False if refuted (a counter-model exists), None if undecided (resource limit).
        used: indices into the premises of a sufficient subset (the unsat core); empty unless proved.
        products: for mode ``products``, the products in the core, each a pair of bounds ``(index, sign)``:
            sign +1 is c − p ≥ 0 of premise ``p <= c`` or ``p = c``, sign −1 is p − c ≥ 0 of an equation.
    """

    proved: bool | None
    used: tuple[int, ...] = ()
    products: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = ()


class Kernel(Protocol):
    """What the exploration needs from a verifier (z3 here; a Lean 4 REPL would implement the same two calls)."""

    name: str

    def entails(self, premises: Sequence[Fact], goal: Fact, *, seed: int = 0) -> Entailment:
        """Whether ``premises`` entail ``goal`` over the integers."""
        ...

    def satisfiable(self, facts: Sequence[Fact]) -> bool | None:
        """Whether ``facts`` have a common integer solution (None: undecided)."""
        ...


def to_z3(f: Fact, env: dict[str, object], *, atoms: dict[tuple[str, ...], object] | None = None):  # noqa: ANN201
    """The z3 term of ``f`` over the integer variables ``env`` (name -> z3 Int).

    With ``atoms`` (a dict filled on the fly), every non-linear monomial becomes a fresh integer atom: the linear
    abstraction that ``lia`` works in.
    """
    import z3

    terms = []
    for mono, coef in f.lhs:
        if atoms is not None and len(mono) > 1:
            if mono not in atoms:
                atoms[mono] = z3.Int("m_" + "_".join(mono))
            term = atoms[mono]
        else:
            term = env[mono[0]]
            for v in mono[1:]:
                term = term * env[v]
        terms.append(coef * term)
    lhs = z3.Sum(terms) if terms else z3.IntVal(0)
    return lhs <= f.rhs if f.rel == "<=" else lhs == f.rhs


@dataclass
class Z3Kernel:
    """The SMT kernel: integer arithmetic decided by z3 with a resource limit per query.

    Args:
        rlimit: z3's resource limit per query (``rlimit``, deterministic work units; about 5 million per second of
            one core); past it the answer is "undecided" (a rejection).
        mode: ``full``, ``linear`` or ``products`` (module docstring).
        product_degree: in mode ``products``, only bounds whose degrees sum to at most this are multiplied.
    """

    rlimit: int = 2_000_000
    mode: Literal["full", "linear", "products"] = "full"
    product_degree: int = 2
    name: str = "z3"

    def __post_init__(self) -> None:
        if self.rlimit < 1:
            raise ValueError(f"rlimit must be >= 1, got {self.rlimit}")
        if self.mode not in ("full", "linear", "products"):
            raise ValueError(f"mode must be full, linear or products, got {self.mode!r}")
        self.queries = 0

    def _solver(self, seed: int):  # noqa: ANN202
        import z3

        s = z3.SimpleSolver()  # no preprocessing tactics: ~4x less overhead per query on these small problems
        s.set("rlimit", self.rlimit)
        s.set("random_seed", seed)
        return s

    def _vars(self, facts: Sequence[Fact]) -> dict[str, object]:
        import z3

        names = sorted(set().union(*(f.variables for f in facts))) if facts else []
        return {v: z3.Int(v) for v in names}

    def entails(self, premises: Sequence[Fact], goal: Fact, *, seed: int = 0) -> Entailment:
        """Γ ⊢ H iff Γ ∧ ¬H is unsatisfiable; ``used`` is the unsat core (indices into ``premises``)."""
        import z3

        self.queries += 1
        env = self._vars([*premises, goal])
        atoms: dict | None = None if self.mode == "full" else {}
        s = self._solver(seed)
        for i, p in enumerate(premises):
            s.assert_and_track(to_z3(p, env, atoms=atoms), z3.Bool(f"p{i}"))
        pairs: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
        if self.mode == "products":
            bounds = [(i, sg) for i, p in enumerate(premises) for sg in ((1, -1) if p.rel == "=" else (1,))]
            for a, (i, si) in enumerate(bounds):
                for j, sj in bounds[a:]:
                    if premises[i].degree + premises[j].degree > self.product_degree:
                        continue
                    # (c_i - p_i)(c_j - p_j) >= 0 for the bounds p_i <= c_i, p_j <= c_j
                    prod = rule_mul(premises[i].bound(si), premises[j].bound(sj))
                    key = f"m{i}_{si}_{j}_{sj}"
                    pairs[key] = ((i, si), (j, sj))
                    s.assert_and_track(to_z3(prod, env, atoms=atoms), z3.Bool(key))
        s.add(z3.Not(to_z3(goal, env, atoms=atoms)))  # refutation: Γ ⊢ H iff Γ ∧ ¬H has no integer model
        res = s.check()
        if res == z3.unsat:
            core = {str(c) for c in s.unsat_core()}
            products = tuple(v for k, v in pairs.items() if k in core)
            used = {i for i in range(len(premises)) if f"p{i}" in core}
            used |= {i for pair in products for i, _ in pair}
            return Entailment(True, tuple(sorted(used)), products)
        if res == z3.sat:
            return Entailment(False)
        return Entailment(None)

    def satisfiable(self, facts: Sequence[Fact]) -> bool | None:
        """Whether the facts have a common integer solution (None when z3 gives up within the resource limit)."""
        import z3

        self.queries += 1
        env = self._vars(facts)
        s = self._solver(0)
        for f in facts:
            s.add(to_z3(f, env))
        res = s.check()
        return True if res == z3.sat else False if res == z3.unsat else None
