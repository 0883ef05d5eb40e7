"""The exploration environment: the paper's deterministic MDP with three atomic actions.

State S_t = (Γ_t, Λ_t): Γ the ordered introduction context (typed variables ``v : Z`` and hypotheses), Λ the
derived facts. Initial state ([], []). Actions, written in the agent's token language (one action ends with ``;``):

1. ``INTRO v ;``        Introduce(v : Z): append a fresh integer variable to Γ.
2. ``HYP F ;``          Introduce(h : F): append a hypothesis to Γ; the *explosion check* rejects it when Γ would
                        become unsatisfiable (exact here: z3 decides it; the paper's check is a heuristic).
3. ``DEDUCE F ;``       Deduce(h : F): accepted only if Γ ∘ Λ ⊢ F (z3: Γ ∧ Λ ∧ ¬F unsatisfiable; the
                        reproduction's kernel is ``Z3Kernel(mode="products")``, one degree-2 certificate per
                        step); the unsat core is kept as the step's premises (and products).
4. ``SUBMIT ;``         Submit: the most recently deduced fact U becomes the conclusion; the output is the statement
                        Γ ⊢ U with its step-by-step proof (the deductions that U depends on, in order).

A rejected action leaves the state unchanged; its reason is counted (``Rejection`` reasons), never raised. With
``check=False`` the kernel is skipped (the unverified control of the reproduction): every well-formed action is
accepted, so a submitted statement may be false.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from iclr26.dexploration.kernel import Kernel
from iclr26.dexploration.logic import VARIABLES, Fact, ParseError, parse_fact

ActionKind = Literal["intro", "hyp", "deduce", "submit"]
KEYWORDS = {"INTRO": "intro", "HYP": "hyp", "DEDUCE": "deduce", "SUBMIT": "submit"}


class MalformedAction(ValueError):
    """An action that does not parse; ``reason`` is the counted category, the message the detail."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class Action:
    """One parsed action.

    Attributes:
        kind: intro, hyp, deduce or submit.
        var: the variable of an intro.
        fact: the fact of a hyp or deduce.
    """

    kind: ActionKind
    var: str | None = None
    fact: Fact | None = None

    def tokens(self) -> list[str]:
        """The action in the agent's token language, ending with ``;``."""
        if self.kind == "intro":
            return ["INTRO", str(self.var), ";"]
        if self.kind == "submit":
            return ["SUBMIT", ";"]
        assert self.fact is not None
        return [self.kind.upper(), *self.fact.tokens(), ";"]


def parse_action(tokens: Sequence[str]) -> Action:
    """Parse one action (with or without its final ``;``).

    Raises:
        MalformedAction: with reason ``empty``, ``unknown_keyword``, ``bad_variable``, ``bad_fact`` or
            ``trailing_tokens``.
    """
    toks = list(tokens)
    if toks and toks[-1] == ";":
        toks = toks[:-1]
    if not toks:
        raise MalformedAction("empty", "no tokens before ';'")
    kind = KEYWORDS.get(toks[0])
    if kind is None:
        raise MalformedAction("unknown_keyword", f"an action starts with INTRO, HYP, DEDUCE or SUBMIT, got {toks[0]!r}")
    if kind == "submit":
        if len(toks) > 1:
            raise MalformedAction("trailing_tokens", f"SUBMIT takes no argument, got {toks[1:]}")
        return Action("submit")
    if kind == "intro":
        if len(toks) != 2 or toks[1] not in VARIABLES:
            raise MalformedAction("bad_variable", f"INTRO takes one of {', '.join(VARIABLES)}, got {toks[1:]}")
        return Action("intro", var=toks[1])
    try:
        return Action(kind, fact=parse_fact(toks[1:]))  # type: ignore[arg-type]
    except ParseError as err:
        raise MalformedAction("bad_fact", str(err)) from None


@dataclass(frozen=True)
class Entry:
    """An element of the context: a variable, a hypothesis or a deduced step.

    Attributes:
        kind: ``"var"``, ``"hyp"`` or ``"step"``.
        name: ``x`` for a variable, ``h1``, ``h2``, ... for facts (numbered in order of acceptance).
        fact: the fact (None for a variable).
        premises: names of the facts a step used (the kernel's unsat core; empty for the unchecked control).
        products: products of bounds of premises the step used, each ``((name, sign), (name, sign))`` (see
            :class:`~iclr26.dexploration.kernel.Entailment`); the Coq replay asserts them before ``lia``.
    """

    kind: Literal["var", "hyp", "step"]
    name: str
    fact: Fact | None = None
    premises: tuple[str, ...] = ()
    products: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = ()


@dataclass(frozen=True)
class Statement:
    """A submitted statement Γ ⊢ U with its step-by-step proof.

    Attributes:
        binders: Γ in introduction order: variables and hypotheses (``Entry`` of kind var/hyp).
        steps: the deduced steps U depends on (transitively), in the order they were deduced; the last one is U.
        conclusion: U.
    """

    binders: tuple[Entry, ...]
    steps: tuple[Entry, ...]
    conclusion: Fact

    @property
    def hypotheses(self) -> list[Fact]:
        """The facts of Γ."""
        return [b.fact for b in self.binders if b.kind == "hyp" and b.fact is not None]

    @property
    def variables(self) -> list[str]:
        """The variables of Γ, in order."""
        return [b.name for b in self.binders if b.kind == "var"]

    def dag_depth(self) -> int:
        """Inference depth of U: hypotheses have depth 0, a step 1 + the deepest of its premises."""
        depth = {b.name: 0 for b in self.binders}
        for s in self.steps:
            depth[s.name] = 1 + max((depth.get(p, 0) for p in s.premises), default=0)
        return depth[self.steps[-1].name] if self.steps else 0

    def key(self) -> tuple:
        """Identity of the statement (Γ as a set of facts and variables, and U), for counting distinct outputs."""
        return (frozenset(self.variables), frozenset(f.text() for f in self.hypotheses), self.conclusion.text())


@dataclass(frozen=True)
class StepResult:
    """What one action did.

    Attributes:
        accepted: whether the state changed.
        reason: ``"ok"`` or the rejection reason.
        done: whether the episode ended (a submission).
        statement: the submitted statement, on an accepted SUBMIT.
    """

    accepted: bool
    reason: str
    done: bool = False
    statement: Statement | None = None


@dataclass
class ExplorationEnv:
    """The exploration MDP (module docstring) over a :class:`~iclr26.dexploration.kernel.Kernel`.

    Args:
        kernel: decides Deduce and the explosion check.
        check: use the kernel (False: the unverified control, every well-formed action accepted).
        max_facts: most hypotheses + deductions in the context (a bound on the episode's state).
    """

    kernel: Kernel
    check: bool = True
    max_facts: int = 16
    entries: list[Entry] = field(default_factory=list)
    rejections: Counter = field(default_factory=Counter)
    accepted: int = 0

    @property
    def variables(self) -> list[str]:
        """The introduced variables, in order."""
        return [e.name for e in self.entries if e.kind == "var"]

    @property
    def facts(self) -> list[Entry]:
        """Hypotheses and steps, in order."""
        return [e for e in self.entries if e.kind != "var"]

    def _reject(self, reason: str) -> StepResult:
        self.rejections[reason] += 1
        return StepResult(False, reason)

    def step_tokens(self, tokens: Sequence[str]) -> StepResult:
        """Parse and apply one action; a malformed one is rejected with its reason, never raised."""
        try:
            action = parse_action(tokens)
        except MalformedAction as err:
            return self._reject(err.reason)
        return self.step(action)

    def step(self, action: Action) -> StepResult:
        """Apply one parsed action (module docstring)."""
        if action.kind == "intro":
            return self.introduce_variable(str(action.var))
        if action.kind == "hyp":
            assert action.fact is not None
            return self.introduce_hypothesis(action.fact)
        if action.kind == "deduce":
            assert action.fact is not None
            return self.deduce(action.fact)
        return self.submit()

    def introduce_variable(self, v: str) -> StepResult:
        """Introduce(v : Z); rejected if ``v`` is unknown or already introduced."""
        if v not in VARIABLES:
            return self._reject("bad_variable")
        if v in self.variables:
            return self._reject("duplicate_variable")
        self.entries.append(Entry("var", v))
        self.accepted += 1
        return StepResult(True, "ok")

    def _fact_admissible(self, f: Fact) -> str | None:
        if not f.variables <= set(self.variables):
            return "unbound_variable"
        if len(self.facts) >= self.max_facts:
            return "context_full"
        if any(e.fact == f for e in self.facts):
            return "duplicate_fact"
        return None

    def introduce_hypothesis(self, f: Fact) -> StepResult:
        """Introduce(h : F), then the explosion check: rejected if Γ ∘ Λ ∧ F is unsatisfiable (or undecided)."""
        problem = self._fact_admissible(f)
        if problem:
            return self._reject(problem)
        if self.check:
            # explosion check: a hypothesis that makes Γ ∘ Λ contradictory would let anything be deduced
            sat = self.kernel.satisfiable([*(e.fact for e in self.facts if e.fact is not None), f])
            if sat is not True:
                return self._reject("explosion" if sat is False else "explosion_undecided")
        self.entries.append(Entry("hyp", f"h{len(self.facts) + 1}", f))
        self.accepted += 1
        return StepResult(True, "ok")

    def deduce(self, f: Fact) -> StepResult:
        """Deduce(h : F): accepted iff Γ ∘ Λ ⊢ F (kernel); the unsat core becomes the step's premises."""
        problem = self._fact_admissible(f)
        if problem:
            return self._reject(problem)
        premises: tuple[str, ...] = ()
        products: tuple = ()
        if self.check:
            ctx = self.facts
            # Deduce(h : F) needs Γ ∘ Λ ⊢ F: every accepted step is verified, so every submission is provable
            ans = self.kernel.entails([e.fact for e in ctx if e.fact is not None], f)
            if ans.proved is not True:
                return self._reject("not_entailed" if ans.proved is False else "kernel_undecided")
            premises = tuple(ctx[i].name for i in ans.used)
            products = tuple(((ctx[i].name, si), (ctx[j].name, sj)) for (i, si), (j, sj) in ans.products)
        self.entries.append(Entry("step", f"h{len(self.facts) + 1}", f, premises, products))
        self.accepted += 1
        return StepResult(True, "ok")

    def submit(self) -> StepResult:
        """Submit: the latest deduced fact becomes U; the output keeps Γ and the steps U depends on."""
        steps = [e for e in self.entries if e.kind == "step"]
        if not steps:
            return self._reject("nothing_deduced")
        goal = steps[-1]
        if self.check:
            # proof extraction: only the deductions U transitively depends on (via the unsat-core premises)
            needed = {goal.name}
            for s in reversed(steps):
                if s.name in needed:
                    needed.update(s.premises)
            kept = tuple(s for s in steps if s.name in needed)
        else:
            kept = tuple(steps)  # unverified: no dependency information, the whole derivation is the proof
        binders = tuple(e for e in self.entries if e.kind in ("var", "hyp"))
        assert goal.fact is not None
        self.accepted += 1
        return StepResult(True, "ok", done=True, statement=Statement(binders, kept, goal.fact))
