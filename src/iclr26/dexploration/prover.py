"""Automated provers on bare statements: the bounded prover of Conjecture-then-Prove, and the difficulty measure.

**Bounded prover** (:func:`bounded_prove`), the prover of the baseline: breadth-first forward chaining with the
corpus's rules (sum, difference with an equation, product of two upper bounds) from the hypotheses, ``depth``
levels deep and at most ``max_facts`` facts; after each level the goal is tried by linear arithmetic with the
non-linear monomials as opaque atoms (what ``lia`` does). A found proof is the used facts' derivations plus the
final linear step, so it replays in Coq like an exploration.

**Difficulty** (the paper's measure: whether automated provers fail on the bare statement): z3 with a resource limit
at pass@k over k random seeds (:func:`z3_pass_at_k`), and Coq's ``lia``/``nia`` (:func:`iclr26.dexploration.coq.
bare_coq`); a statement is *hard* when all of them fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from iclr26.dexploration.env import Entry, Statement
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import Fact, rule_add, rule_mul


@dataclass(frozen=True)
class ProverResult:
    """What the bounded prover found.

    Attributes:
        statement: the statement with the found proof (None if none within the bounds).
        queries: kernel queries spent.
        candidates: facts derived.
    """

    statement: Statement | None
    queries: int
    candidates: int


def _derive(a: Fact, b: Fact, max_degree: int, max_terms: int) -> list[tuple[str, Fact]]:
    out = [("add", rule_add(a, b))]
    if b.rel == "=":
        out.append(("sub", rule_add(a, b, scale=-1)))
    if a.rel == "<=" and b.rel == "<=" and a.degree + b.degree <= max_degree:
        out.append(("mul", rule_mul(a, b)))
    return [(r, f) for r, f in out if f.lhs and len(f.lhs) <= max_terms and f.degree <= max_degree]


def bounded_prove(
    binders: Sequence[Entry],
    goal: Fact,
    *,
    depth: int = 2,
    max_facts: int = 120,
    max_degree: int = 2,
    max_terms: int = 8,
    rlimit: int = 2_000_000,
) -> ProverResult:
    """Try to prove Γ ⊢ goal (module docstring).

    Args:
        binders: Γ (variables and hypotheses, as :class:`~iclr26.dexploration.env.Entry`).
        goal: U.
        depth: forward-chaining levels.
        max_facts: most facts kept (hypotheses included).
        max_degree: largest degree of a derived fact.
        max_terms: most monomials of a derived fact.
        rlimit: z3 resource limit per linear check.
    """
    kernel = Z3Kernel(rlimit=rlimit, mode="linear")
    facts: list[Entry] = [b for b in binders if b.kind == "hyp"]
    seen = {e.fact for e in facts}
    candidates = 0

    def attempt() -> Statement | None:
        ans = kernel.entails([e.fact for e in facts if e.fact is not None], goal)
        if ans.proved is not True:
            return None
        used = {facts[i].name for i in ans.used}
        for e in reversed(facts):
            if e.name in used:
                used.update(e.premises)
        steps = [e for e in facts if e.kind == "step" and e.name in used]
        final = Entry("step", f"h{len(facts) + 1}", goal, tuple(facts[i].name for i in ans.used))
        return Statement(tuple(binders), (*steps, final), goal)

    # Conjecture-Prover's prover: forward chaining (add/sub/mul of fact pairs) level by level, a linear check after each
    found = attempt()
    level_start = 0
    for _ in range(depth):
        if found is not None:
            break
        frontier_end = len(facts)
        new: list[Entry] = []
        for i in range(frontier_end):
            for j in range(max(i + 1, level_start), frontier_end):
                for a, b in ((facts[i], facts[j]), (facts[j], facts[i])):
                    for rule, f in _derive(a.fact, b.fact, max_degree, max_terms):  # type: ignore[arg-type]
                        candidates += 1
                        if f in seen or len(facts) + len(new) >= max_facts:
                            continue
                        seen.add(f)
                        prods = (((a.name, 1), (b.name, 1)),) if rule == "mul" else ()
                        new.append(Entry("step", f"h{len(facts) + len(new) + 1}", f, (a.name, b.name), prods))
        level_start = frontier_end
        facts.extend(new)
        found = attempt()
        if not new:
            break
    return ProverResult(found, kernel.queries, candidates)


def z3_pass_at_k(statement: Statement, *, k: int, rlimit: int) -> bool:
    """Whether z3 proves the bare statement Γ ⊢ U with any of ``k`` random seeds within ``rlimit`` each."""
    kernel = Z3Kernel(rlimit=rlimit)
    # difficulty as in the paper's Pass@k: a statement is hard when no attempt of a bare prover succeeds
    return any(kernel.entails(statement.hypotheses, statement.conclusion, seed=s).proved is True for s in range(k))
