"""The symbolic validator and the equivalence checker of DNA's reproduction (z3 over EuclidDSL).

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. Phase II step 4 of the paper refines a formalization
with feedback from a symbolic validator that checks syntax and compilation, the faithfulness of variable names, and
logical consistency: the premises must not contradict each other and the conclusion must not be trivial
(``../shared/papers/06-dna.md`` §2, [unverified]). The paper's evaluation decides *semantic* correctness with a
symbolic equivalence checker (E3 on LeanEuclid). Both are z3 queries here:

- sorts Point, Line, Circle are z3 uninterpreted sorts, the primitives uninterpreted predicates, abstractions are
  expanded to primitives first (:func:`~iclr26.dna.dsl.expand`);
- background theory :data:`AXIOMS`: a few universally quantified axioms of Avigad et al.'s System E (the theory
  LeanEuclid's E3 checker works in). With universal axioms, no function symbols and quantifier-free matrices every
  query below is in the decidable EPR fragment;
- **well-formed**: parses, binders unique, predicates known, arities and sorts right, the binders are those the
  informal statement names (faithfulness of variable names);
- **non-contradiction**: axioms ∧ premises is satisfiable;
- **non-triviality**: axioms ⊭ conclusion (the conclusion does not hold without the premises);
- **equivalence** (semantic correctness): same binders (names and sorts), equivalent premises (axioms ⊨ ∀x̄
  P₁ ↔ P₂) and equivalent conclusions under them (axioms ⊨ ∀x̄ P₂ → (Q₁ ↔ Q₂)), each side's abstractions
  expanded by its own library (a wrong learned definition makes its uses wrong). This is the component-wise form
  of E3's check; the whole-claim form ∀x̄ (P₁ → Q₁) ↔ (P₂ → Q₂) would call any two valid statements equivalent.

Deviations: E3 aligns variables by search and checks Lean propositions; here variables align by name (the informal
statement names them) and only the System E fragment in :data:`AXIOMS` is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from iclr26.dna.dsl import (
    PRIMITIVES,
    SORTS,
    Atom,
    Definition,
    DSLSyntaxError,
    Formula,
    Not,
    Statement,
    conjuncts,
    expand,
    parse_statement,
    statement_type_errors,
)

__all__ = ["AXIOMS", "Validation", "Validator", "equivalent"]

#: System E axioms assumed by every query (Avigad, Dean, Mumma 2009, "A formal system for Euclid's Elements").
AXIOMS = (
    "between a b c -> a != b /\\ b != c /\\ a != c",
    "between a b c -> between c b a",
    "between a b c -> ~ between a c b",
    "a != b /\\ onLine a l /\\ onLine b l /\\ onLine a m /\\ onLine b m -> l = m",
    "centre o k -> inside o k",
    "centre o k /\\ centre p k -> o = p",
    "~ (inside p k /\\ onCircle p k)",
    "sameSide a b l -> ~ onLine a l /\\ ~ onLine b l /\\ sameSide b a l",
)


class _Z3:
    """z3 sorts, predicates and the axioms, built once per validator."""

    def __init__(self, rlimit: int) -> None:
        import z3

        self.z3 = z3
        self.rlimit = rlimit
        self.sorts = {s: z3.DeclareSort(s) for s in SORTS}
        self.preds = {p: z3.Function(p, *(self.sorts[s] for s in sig), z3.BoolSort()) for p, sig in PRIMITIVES.items()}
        self.axioms = [self._axiom(text) for text in AXIOMS]
        self.solver = z3.Solver()
        self.solver.set("rlimit", rlimit)  # z3's step count per check, not wall-clock: the same on a loaded machine
        self.solver.add(*self.axioms)

    def _axiom(self, text: str):  # noqa: ANN202
        """``∀ vars. lhs → rhs`` (or ``∀ vars. f``); a variable's sort is read off the primitive it appears in."""
        from iclr26.dna.dsl import Or, atoms, parse_formula

        lhs, _, rhs = text.partition(" -> ")
        f = Or((Not(parse_formula(lhs)), parse_formula(rhs))) if rhs else parse_formula(lhs)
        sorts = {v: PRIMITIVES[a.pred][i] for a in atoms(f) if a.pred != "=" for i, v in enumerate(a.args)}
        env = {v: self.z3.Const(f"ax_{v}", self.sorts[s]) for v, s in sorts.items()}
        return self.z3.ForAll(list(env.values()), self.formula(f, env))

    def env(self, binders: Sequence[tuple[str, str]], prefix: str = "") -> dict:
        return {n: self.z3.Const(prefix + n, self.sorts[s]) for n, s in binders}

    def formula(self, f: Formula, env: Mapping):  # noqa: ANN201
        z3 = self.z3
        if isinstance(f, Atom):
            if f.pred == "=":
                return env[f.args[0]] == env[f.args[1]]
            return self.preds[f.pred](*(env[v] for v in f.args))
        if isinstance(f, Not):
            return z3.Not(self.formula(f.arg, env))
        parts = [self.formula(a, env) for a in f.args]
        return z3.And(*parts) if type(f).__name__ == "And" else z3.Or(*parts)

    def check(self, *constraints) -> str:  # noqa: ANN002
        """``"sat"``, ``"unsat"`` or ``"unknown"`` of axioms ∧ constraints."""
        self.solver.push()
        try:
            self.solver.add(*constraints)
            return str(self.solver.check())
        finally:
            self.solver.pop()


@dataclass(frozen=True)
class Validation:
    """The validator's verdict on one formalization.

    Attributes:
        ok: every check passed.
        stage: the first failed check: ``"syntax"``, ``"types"``, ``"binders"``, ``"contradiction"``,
            ``"trivial"``, or ``"ok"``.
        messages: feedback for the refine loop (empty when ``ok``).
        blamed: indices of the premise conjuncts (``("premise", i)``) or conclusion conjuncts
            (``("conclusion", i)``) the failure points at; empty when the failure is not local.
        statement: the parsed statement, or None on a syntax error.
    """

    ok: bool
    stage: str
    messages: tuple[str, ...] = ()
    blamed: tuple[tuple[str, int], ...] = ()
    statement: Statement | None = field(default=None, compare=False)


class Validator:
    """Checks formalizations (module docstring) and decides equivalence, with z3.

    Args:
        rlimit: z3 resource limit per query (``rlimit``, a count of solver steps: an answer does not depend on the
            machine's load); ``unknown`` counts as *not* proved (not equivalent, not trivial is assumed,
            contradiction not shown).

    Attributes:
        queries: z3 queries so far.
        unknowns: those of them that ran out of ``rlimit``.
    """

    def __init__(self, *, rlimit: int = 5_000_000) -> None:
        if isinstance(rlimit, bool) or not isinstance(rlimit, int) or rlimit < 1:
            raise ValueError(f"rlimit must be an integer >= 1, got {rlimit!r}")
        self._z = _Z3(rlimit)
        self.queries = 0
        self.unknowns = 0

    def _check(self, *constraints) -> str:  # noqa: ANN002
        self.queries += 1
        answer = self._z.check(*constraints)
        self.unknowns += answer == "unknown"
        return answer

    def validate(
        self,
        text: str,
        library: Mapping[str, Definition],
        *,
        expected_binders: Sequence[tuple[str, str]] | None = None,
    ) -> Validation:
        """Run the checks in order and stop at the first failure.

        Args:
            text: the candidate statement.
            library: the abstractions it may use.
            expected_binders: ``(name, sort)`` pairs the informal statement names; None skips the faithfulness
                check.

        Returns:
            :class:`Validation`.
        """
        try:
            st = parse_statement(text)
        except DSLSyntaxError as err:
            return Validation(False, "syntax", (f"syntax error: {err}",))
        errors = statement_type_errors(st, library)
        if errors:
            blamed = _blame(st, library)
            return Validation(False, "types", tuple(f"type error: {e}" for e in errors), blamed, st)
        # faithfulness of variable names: the bound variables are exactly those the informal statement names
        if expected_binders is not None and set(st.binders) != set(expected_binders):
            got, want = set(st.binders), set(expected_binders)
            msgs = [f"variable '{n}' : {s} is not in the informal statement" for n, s in sorted(got - want)]
            msgs += [f"the informal statement names '{n}' : {s}, which is not bound" for n, s in sorted(want - got)]
            return Validation(False, "binders", tuple(msgs), (), st)
        env = self._z.env(st.binders)
        premises = expand(st.premises, library)
        # logical consistency 1: the premises must have a model with the System E axioms (not contradictory)
        if self._check(self._z.formula(premises, env)) == "unsat":
            blamed = tuple(("premise", i) for i in range(len(conjuncts(st.premises))))
            return Validation(False, "contradiction", ("the premises contradict each other (unsatisfiable)",),
                              blamed, st)  # fmt: skip
        goal = self._z.formula(expand(st.conclusion, library), env)
        # logical consistency 2: the conclusion must not follow from the axioms alone (not trivial)
        if self._check(self._z.z3.Not(goal)) == "unsat":
            blamed = tuple(("conclusion", i) for i in range(len(conjuncts(st.conclusion))))
            return Validation(False, "trivial", ("the conclusion is trivial: it holds without the premises",),
                              blamed, st)  # fmt: skip
        return Validation(True, "ok", (), (), st)

    def equivalent(
        self,
        candidate: str | Statement,
        gold: str | Statement,
        library: Mapping[str, Definition],
        gold_library: Mapping[str, Definition] | None = None,
    ) -> bool:
        """Whether ``candidate`` is semantically equivalent to ``gold`` (module docstring); False if unparsable,
        ill-typed, bound differently, or z3 cannot prove it within its resource limit (``rlimit``).

        Args:
            candidate: the formalization to judge (text or parsed).
            gold: the reference formalization.
            library: the abstractions of the candidate (e.g. the learned library).
            gold_library: those of the gold statement (default: ``library``).
        """
        gold_library = library if gold_library is None else gold_library
        try:
            c = parse_statement(candidate) if isinstance(candidate, str) else candidate
            g = parse_statement(gold) if isinstance(gold, str) else gold
        except DSLSyntaxError:
            return False
        if statement_type_errors(c, library) or set(c.binders) != set(g.binders):
            return False
        gold_errors = statement_type_errors(g, gold_library)
        if gold_errors:
            raise ValueError(f"gold: the reference formalization is ill-typed: {gold_errors[0]}")
        env = self._z.env(g.binders)
        p_c, p_g = (self._z.formula(expand(st.premises, lib), env) for st, lib in ((c, library), (g, gold_library)))
        q_c, q_g = (self._z.formula(expand(st.conclusion, lib), env) for st, lib in ((c, library), (g, gold_library)))
        # premises: axioms ⊨ P_c ↔ P_g; conclusions: axioms ∧ P_g ⊨ Q_c ↔ Q_g
        return self._check(p_c != p_g) == "unsat" and self._check(p_g, q_c != q_g) == "unsat"

    def same_definition(
        self,
        learned: Definition,
        library: Mapping[str, Definition],
        gold: Definition,
        gold_library: Mapping[str, Definition],
    ) -> bool:
        """Whether z3 proves ``learned``'s body (expanded with ``library``) equal to ``gold``'s (expanded with
        ``gold_library``) for every argument, under the axioms; the parameters align by ``learned``'s names.
        ``unknown`` counts as not proved."""
        env = self._z.env(learned.params)
        a = self._z.formula(expand(learned.body, library), env)
        b = self._z.formula(expand(gold.body, gold_library), env)
        return self._check(a != b) == "unsat"

    def satisfiable(self, f: Formula, binders: Sequence[tuple[str, str]], library: Mapping[str, Definition]) -> bool:
        """Whether axioms ∧ ``f`` has a model (an abstraction's body that is unsatisfiable is a useless one)."""
        return self._check(self._z.formula(expand(f, library), self._z.env(binders))) != "unsat"


def _blame(st: Statement, library: Mapping[str, Definition]) -> tuple[tuple[str, int], ...]:
    """The premise and conclusion conjuncts that are ill-typed on their own."""
    from iclr26.dna.dsl import type_errors

    env = dict(st.binders)
    out = []
    for role, f in (("premise", st.premises), ("conclusion", st.conclusion)):
        for i, part in enumerate(conjuncts(f)):
            if type_errors(part, env, library):
                out.append((role, i))
    return tuple(out)


def equivalent(candidate: str, gold: str, library: Mapping[str, Definition] | None = None) -> bool:
    """One-off :meth:`Validator.equivalent` with a fresh validator (both sides share ``library``)."""
    return Validator().equivalent(candidate, gold, library or {})
