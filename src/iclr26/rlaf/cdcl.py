"""A compact CDCL solver with RLAF's full guidance mechanism: weighted initial activity, weighted bumps, phases.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053) injects a parameterisation ``W = (w, p)`` into Glucose by
(i) starting each variable's VSIDS activity at ``w(x)`` instead of 0, (ii) multiplying every activity bump of ``x``
by ``w(x)``, so that the solver branches on ``argmax w(x)·Score(x)``, and (iii) making ``p(x)`` the first value
tried, phase saving staying on (official code: ``solvers/glucose_weighted/core/Solver.{h,cc}``: ``newVar`` and
``varBumpActivity``; read for these facts, not copied). PySAT exposes (i) and (iii) at most (see
:mod:`iclr26.rlaf.solvers`), so the complete mechanism lives here, in a MiniSat-style solver of our own.

The search (one iteration of the loop in :meth:`CDCLSolver.solve`):

1. Unit-propagate the trail with two watched literals per clause.
2. On a conflict: derive the first-UIP clause (bumping every variable met by ``var_inc · w(x)``), shrink it by
   MiniSat's basic minimisation, backjump to its second-highest level, assert it; decay activities by growing
   ``var_inc ← var_inc / var_decay``; stop with UNSAT on a conflict at level 0.
3. Otherwise: restart when the Luby budget of conflicts is spent; drop the worse half of the learnt clauses (by
   LBD, glue clauses kept) when there are too many; decide the unassigned variable of highest activity with its
   saved phase (initially ``p(x)``), or stop with SAT when none is left.

Literals inside the solver: variable index ``u = v - 1``; literal ``2u`` is "v true", ``2u + 1`` is "v false";
``lit ^ 1`` negates. The activity order is a binary heap with lazy deletion (``heapq``): an entry is valid when its
variable is unassigned and its key equals the current activity; ties go to the lower variable index.

Two implementations of this one search: the compiled core ``iclr26.rlaf._cdcl`` (C, built by ``make install``; the
default, ``backend="native"``) and this module's pure-Python code (``backend="python"``), the readable reference.
They make the same decisions, conflicts, propagations and restarts in the same order (the equivalence is tested on a
fixed set of formulas and guidances); the native one is 20-50x faster (``benchmarks/rlaf_cdcl.py``).

Deviations from Glucose 4 (the paper's base solver), all to keep the solver short and its cost deterministic:
Luby restarts (MiniSat 2.2) instead of Glucose's LBD-queue restarts; a fixed ``var_decay`` (Glucose ramps it from
0.8 to 0.95); basic instead of recursive clause minimisation; no preprocessing, no random decisions (RLAF runs
Glucose with ``rnd-freq=0`` too), no clause-activity bumping (learnt clauses are ranked by LBD, then age).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from time import perf_counter
from types import ModuleType
from typing import Literal, NamedTuple

import numpy as np

from iclr26.common.native import compiled_core
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.guidance import Guidance
from iclr26.rlaf.result import SolveResult

__all__ = ["INJECTION_PARTS", "CDCLOptions", "CDCLSolver", "luby"]

_RESCALE_LIMIT = 1e100
INJECTION_PARTS = ("activity", "bump", "phase")


@dataclass(frozen=True)
class CDCLOptions:
    """Settings of :class:`CDCLSolver` (defaults: MiniSat 2.2's values where it has one).

    Attributes:
        var_decay: VSIDS decay; ``var_inc`` grows by ``1 / var_decay`` per conflict (MiniSat 2.2: 0.95).
        restart_base: conflicts in one Luby unit (MiniSat 2.2: 100).
        learnt_fraction: the first learnt-clause limit as a fraction of the input clauses (MiniSat 2.2: 1/3).
        learnt_growth: factor of the limit after each reduction (MiniSat 2.2: 1.1).
        max_conflicts: stop with ``UNKNOWN`` after this many conflicts (``None``: no limit).
        injection: which parts of the guidance act (any subset of the three; all three is RLAF):
            ``"activity"`` initial activity ``w(x)``, ``"bump"`` bumps times ``w(x)``, ``"phase"`` first value
            ``p(x)``. ``("activity", "phase")`` is what PySAT's Ergo takes, ``("phase",)`` what Glucose takes.
        record_decisions: how many of the first decisions to return in ``SolveResult.first_decisions``.
        backend: ``"native"`` (the compiled core, default) or ``"python"`` (the pure-Python reference; same
            search, 20-50x slower).
    """

    var_decay: float = 0.95
    restart_base: int = 100
    learnt_fraction: float = 1.0 / 3.0
    learnt_growth: float = 1.1
    max_conflicts: int | None = None
    injection: tuple[str, ...] = ("activity", "bump", "phase")
    record_decisions: int = 0
    backend: Literal["native", "python"] = "native"

    def __post_init__(self) -> None:
        if not 0.0 < self.var_decay < 1.0:
            raise ValueError(f"var_decay must be in (0, 1), got {self.var_decay}")
        if self.restart_base < 1:
            raise ValueError(f"restart_base must be >= 1, got {self.restart_base}")
        if self.learnt_fraction <= 0:
            raise ValueError(f"learnt_fraction must be > 0, got {self.learnt_fraction}")
        if self.learnt_growth < 1.0:
            raise ValueError(f"learnt_growth must be >= 1, got {self.learnt_growth}")
        if self.max_conflicts is not None and self.max_conflicts < 1:
            raise ValueError(f"max_conflicts must be >= 1 or None, got {self.max_conflicts}")
        unknown = [part for part in self.injection if part not in INJECTION_PARTS]
        if unknown:
            raise ValueError(f"injection parts must be among {INJECTION_PARTS}, got {unknown}")
        if self.record_decisions < 0:
            raise ValueError(f"record_decisions must be >= 0, got {self.record_decisions}")
        if self.backend not in ("native", "python"):
            raise ValueError(f"backend must be 'native' or 'python', got {self.backend!r}")


def native_core() -> ModuleType:
    """The compiled core ``iclr26.rlaf._cdcl``.

    Raises:
        ImportError: if it was not built, with the command that builds it.
    """
    return compiled_core(
        "iclr26.rlaf._cdcl", what="CDCL core", fallback="CDCLOptions(backend='python') runs the pure-Python reference"
    )


def luby(base: float, index: int) -> float:
    """The Luby sequence ``1, 1, 2, 1, 1, 2, 4, 1, ...`` scaled by powers of ``base``: ``base ** k`` at ``index``.

    Args:
        base: the growth factor (2 for the classic sequence).
        index: 0-based position in the sequence.
    """
    size, seq = 1, 0
    while size < index + 1:
        seq += 1
        size = 2 * size + 1
    x = index
    while size - 1 != x:
        size = (size - 1) >> 1
        seq -= 1
        x %= size
    return base**seq


class Learnt(NamedTuple):
    """A clause derived by conflict analysis.

    Attributes:
        clause: solver literals, the asserting literal first and a literal of ``back_level`` second.
        back_level: the decision level to backjump to (the second-highest level in the clause, 0 for a unit).
        lbd: literal block distance, the number of distinct decision levels in the clause.
    """

    clause: list[int]
    back_level: int
    lbd: int


class CDCLSolver:
    """Conflict-driven clause learning with VSIDS, restarts, phase saving, and RLAF guidance.

    With guidance ``W = (w, p)``: ``activity(x) = w(x)`` at the start, every bump adds ``var_inc · w(x)``, the first
    value tried for ``x`` is ``p(x)``. Without guidance: activities start at 0, bumps add ``var_inc``, the first
    value is false (MiniSat's default).

    Args:
        cnf: the formula.
        guidance: the parameterisation ``W`` (``None``: the unguided solver).
        options: solver settings.

    Raises:
        ValueError: if the guidance does not have one entry per variable.
    """

    def __init__(self, cnf: CNF, guidance: Guidance | None = None, *, options: CDCLOptions | None = None) -> None:
        if guidance is not None and guidance.num_vars != cnf.num_vars:
            raise ValueError(
                f"guidance has {guidance.num_vars} variables but the formula has {cnf.num_vars}; "
                f"give one weight and polarity per variable"
            )
        self.cnf = cnf
        self.guidance = guidance
        self.options = options or CDCLOptions()
        self.injection = self.options.injection if guidance is not None else ()

    # ---------------------------------------------------------------- state
    def _reset(self) -> None:
        n = self.cnf.num_vars
        self.value = [0] * (2 * n)  # per literal: 1 true, -1 false, 0 unassigned
        self.level = [0] * n
        self.reason = [-1] * n  # clause index, -1 for decisions and level-0 units
        self.trail: list[int] = []
        self.trail_lim: list[int] = []
        self.qhead = 0
        self.seen = [False] * n
        self.clauses: list[list[int] | None] = []  # None marks a deleted learnt clause
        self.lbd: list[int] = []
        self.learnts: list[int] = []
        self.watches: list[list[int]] = [[] for _ in range(2 * n)]
        self.var_inc = 1.0
        parts = self.injection
        weights = self.guidance.weight.tolist() if self.guidance is not None else [1.0] * n
        # RLAF: initial activity w(x) (Glucose's newVar(weight_init = w)); unguided: 0
        self.activity = list(weights) if "activity" in parts else [0.0] * n
        # RLAF: activity(x) += var_inc · w(x) (Glucose's varBumpActivity with var_weight_scale); unguided: var_inc
        self.bump_scale = list(weights) if "bump" in parts else [1.0] * n
        # RLAF: first value tried = p(x), phase saving overwrites it later; unguided: false (MiniSat's default)
        self.phase = self.guidance.polarity.tolist() if "phase" in parts else [False] * n
        self.heap = [(-self.activity[u], u) for u in range(n)]
        heapq.heapify(self.heap)
        self.decisions = self.conflicts = self.propagations = self.restarts = 0
        self.first_decisions: list[int] = []

    def _assign(self, lit: int, reason: int) -> None:
        value = self.value
        value[lit] = 1
        value[lit ^ 1] = -1
        u = lit >> 1
        self.level[u] = len(self.trail_lim)
        self.reason[u] = reason
        self.trail.append(lit)

    def _add_clause(self, lits: list[int], *, learnt: bool, lbd: int = 0) -> int:
        index = len(self.clauses)
        self.clauses.append(lits)
        self.lbd.append(lbd)
        self.watches[lits[0]].append(index)
        self.watches[lits[1]].append(index)
        if learnt:
            self.learnts.append(index)
        return index

    def _load(self) -> bool:
        """Add the input clauses (duplicates merged, tautologies dropped); ``False`` if trivially UNSAT."""
        for clause in self.cnf.clauses:
            lits = sorted({2 * (abs(x) - 1) + (x < 0) for x in clause})
            if any(lits[i] ^ 1 == lits[i + 1] for i in range(len(lits) - 1)):
                continue  # tautology: x and ¬x, always satisfied
            if not lits:
                return False
            if len(lits) == 1:
                lit = lits[0]
                if self.value[lit] == -1:
                    return False
                if self.value[lit] == 0:
                    self._assign(lit, -1)
                continue
            self._add_clause(lits, learnt=False)
        return True

    # ---------------------------------------------------------------- propagation
    def _propagate(self) -> int:
        """Unit propagation over the two watched literals; the index of a conflicting clause, or -1."""
        value, trail, clauses, watches = self.value, self.trail, self.clauses, self.watches
        assign = self._assign
        qhead = self.qhead
        conflict = -1
        while qhead < len(trail) and conflict < 0:
            false_lit = trail[qhead] ^ 1
            qhead += 1
            self.propagations += 1
            ws = watches[false_lit]
            i = j = 0
            end = len(ws)
            while i < end:
                ci = ws[i]
                i += 1
                c = clauses[ci]
                if c is None:
                    continue  # deleted learnt clause: drop the watch
                if c[0] == false_lit:
                    c[0], c[1] = c[1], false_lit
                first = c[0]
                if value[first] == 1:
                    ws[j] = ci
                    j += 1
                    continue
                for k in range(2, len(c)):
                    lk = c[k]
                    if value[lk] != -1:
                        c[1] = lk
                        c[k] = false_lit
                        watches[lk].append(ci)
                        break
                else:
                    ws[j] = ci
                    j += 1
                    if value[first] == -1:
                        conflict = ci
                        while i < end:
                            ws[j] = ws[i]
                            j += 1
                            i += 1
                    else:
                        assign(first, ci)
            del ws[j:]
        self.qhead = qhead
        return conflict

    # ---------------------------------------------------------------- VSIDS
    def _bump(self, u: int) -> None:
        # RLAF: activity(x) += var_inc · w(x)
        a = self.activity[u] + self.var_inc * self.bump_scale[u]
        self.activity[u] = a
        if a > _RESCALE_LIMIT:
            self.activity = [x * 1e-100 for x in self.activity]
            self.var_inc *= 1e-100
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        value, activity = self.value, self.activity
        self.heap = [(-activity[u], u) for u in range(len(activity)) if value[2 * u] == 0]
        heapq.heapify(self.heap)

    def _pick_branch_var(self) -> int:
        """The unassigned variable of highest activity (lowest index on ties), or -1 if all are assigned."""
        heap, value, activity = self.heap, self.value, self.activity
        while heap:
            neg_act, u = heapq.heappop(heap)
            if value[2 * u] == 0 and -neg_act == activity[u]:
                return u
        return -1

    # ---------------------------------------------------------------- conflict analysis
    def _analyze(self, conflict: int) -> Learnt:
        """First-UIP learning from the conflicting clause, with MiniSat's basic minimisation."""
        clauses, level, reason, trail, seen = self.clauses, self.level, self.reason, self.trail, self.seen
        current = len(self.trail_lim)
        learnt = [0]
        marked: list[int] = []
        pending = 0
        p = -1
        index = len(trail) - 1
        clause = clauses[conflict]
        while True:
            for q in clause if p < 0 else clause[1:]:  # clause[0] is p itself for a reason clause
                u = q >> 1
                if not seen[u] and level[u] > 0:
                    seen[u] = True
                    marked.append(u)
                    self._bump(u)
                    if level[u] >= current:
                        pending += 1
                    else:
                        learnt.append(q)
            while not seen[trail[index] >> 1]:
                index -= 1
            p = trail[index]
            index -= 1
            u = p >> 1
            seen[u] = False
            pending -= 1
            if pending == 0:
                break
            clause = clauses[reason[u]]
        learnt[0] = p ^ 1
        # MiniSat's basic minimisation: drop q if every other literal of its reason is already in the clause
        kept = [learnt[0]]
        for q in learnt[1:]:
            r = reason[q >> 1]
            if r < 0 or any(not seen[x >> 1] and level[x >> 1] > 0 for x in clauses[r][1:]):
                kept.append(q)
        for u in marked:
            seen[u] = False
        if len(kept) == 1:
            return Learnt(clause=kept, back_level=0, lbd=1)
        best = max(range(1, len(kept)), key=lambda i: level[kept[i] >> 1])
        kept[1], kept[best] = kept[best], kept[1]
        lbd = len({level[x >> 1] for x in kept})
        return Learnt(clause=kept, back_level=level[kept[1] >> 1], lbd=lbd)

    def _backtrack(self, target: int) -> None:
        if len(self.trail_lim) <= target:
            return
        value, reason, phase, activity, heap, trail = (
            self.value,
            self.reason,
            self.phase,
            self.activity,
            self.heap,
            self.trail,
        )
        limit = self.trail_lim[target]
        for i in range(len(trail) - 1, limit - 1, -1):
            lit = trail[i]
            u = lit >> 1
            value[lit] = 0
            value[lit ^ 1] = 0
            reason[u] = -1
            phase[u] = not lit & 1  # phase saving: remember the value the variable had
            heapq.heappush(heap, (-activity[u], u))
        del trail[limit:]
        del self.trail_lim[target:]
        self.qhead = limit
        if len(heap) > 8 * len(activity) + 64:
            self._rebuild_heap()

    def _reduce_learnts(self) -> None:
        """Delete the worse half of the learnt clauses: highest LBD first, older first; glue (LBD <= 2) kept."""
        clauses, reason, value = self.clauses, self.reason, self.value

        def locked(ci: int) -> bool:
            first = clauses[ci][0]
            return value[first] == 1 and reason[first >> 1] == ci

        ranked = sorted(self.learnts, key=lambda ci: (-self.lbd[ci], ci))
        budget = len(ranked) // 2
        survivors = set(self.learnts)
        for ci in ranked:
            if budget == 0:
                break
            if self.lbd[ci] <= 2 or locked(ci):
                continue
            clauses[ci] = None  # watches are dropped lazily during propagation
            survivors.discard(ci)
            budget -= 1
        self.learnts = sorted(survivors)

    # ---------------------------------------------------------------- search
    def solve(self) -> SolveResult:
        """Run the search to the end (or to ``max_conflicts``) and return the answer with the statistics."""
        start = perf_counter()
        if self.options.backend == "native":
            status, model, counts, first = self._solve_native()
        else:
            self._reset()
            status = self._search()
            model = None
            if status == "SAT":
                model = tuple((u + 1) if self.value[2 * u] == 1 else -(u + 1) for u in range(self.cnf.num_vars))
            counts = (self.decisions, self.conflicts, self.propagations, self.restarts)
            first = self.first_decisions
        return SolveResult(
            status=status,
            model=model,
            decisions=counts[0],
            conflicts=counts[1],
            propagations=counts[2],
            restarts=counts[3],
            wall_time_s=perf_counter() - start,
            solver="cdcl",
            injection=tuple(part for part in INJECTION_PARTS if part in self.injection),
            first_decisions=tuple(first),
        )

    def _solve_native(self) -> tuple[str, tuple[int, ...] | None, tuple[int, int, int, int], list[int]]:
        """The same search in the compiled core; the guidance enters as the three arrays of :meth:`_reset`."""
        core = native_core()
        n, parts, opts = self.cnf.num_vars, self.injection, self.options
        weights = self.guidance.weight if self.guidance is not None else np.ones(n)
        activity = np.ascontiguousarray(weights if "activity" in parts else np.zeros(n), dtype=np.float64)
        bump = np.ascontiguousarray(weights if "bump" in parts else np.ones(n), dtype=np.float64)
        phase = self.guidance.polarity if "phase" in parts else np.zeros(n, dtype=bool)
        literals, offsets = _flat_clauses(self.cnf)
        status, values, decisions, conflicts, propagations, restarts, first = core.solve(
            n,
            literals,
            offsets,
            activity,
            bump,
            np.ascontiguousarray(phase, dtype=np.uint8),
            opts.var_decay,
            opts.restart_base,
            opts.learnt_fraction,
            opts.learnt_growth,
            opts.max_conflicts or 0,
            opts.record_decisions,
        )
        model = None
        if status == 1:
            signs = np.where(np.frombuffer(values, dtype=np.uint8) == 1, 1, -1)
            model = tuple((signs * np.arange(1, n + 1)).tolist())
        return ("UNSAT", "SAT", "UNKNOWN")[status], model, (decisions, conflicts, propagations, restarts), first

    def _search(self) -> str:
        opts = self.options
        if not self._load() or self._propagate() >= 0:
            return "UNSAT"
        max_learnts = max(opts.learnt_fraction * len(self.clauses), 10.0)
        restart_index = 0
        restart_budget = luby(2.0, restart_index) * opts.restart_base
        since_restart = 0
        while True:
            conflict = self._propagate()
            if conflict >= 0:
                self.conflicts += 1
                since_restart += 1
                if not self.trail_lim:
                    return "UNSAT"
                learnt = self._analyze(conflict)
                self._backtrack(learnt.back_level)
                if len(learnt.clause) == 1:
                    self._assign(learnt.clause[0], -1)
                else:
                    index = self._add_clause(learnt.clause, learnt=True, lbd=learnt.lbd)
                    self._assign(learnt.clause[0], index)
                # VSIDS decay, done by growing the increment
                self.var_inc /= opts.var_decay
                if opts.max_conflicts is not None and self.conflicts >= opts.max_conflicts:
                    return "UNKNOWN"
                continue
            if since_restart >= restart_budget:
                self._backtrack(0)
                self.restarts += 1
                restart_index += 1
                restart_budget = luby(2.0, restart_index) * opts.restart_base
                since_restart = 0
            if len(self.learnts) - len(self.trail) >= max_learnts:
                self._reduce_learnts()
                max_learnts *= opts.learnt_growth
            u = self._pick_branch_var()
            if u < 0:
                return "SAT"
            self.decisions += 1
            lit = 2 * u + (0 if self.phase[u] else 1)
            if len(self.first_decisions) < opts.record_decisions:
                self.first_decisions.append((u + 1) if lit & 1 == 0 else -(u + 1))
            self.trail_lim.append(len(self.trail))
            self._assign(lit, -1)


def _flat_clauses(cnf: CNF) -> tuple[np.ndarray, np.ndarray]:
    """The clauses as one int32 array of DIMACS literals and the ``(C + 1,)`` offsets of each clause in it."""
    sizes = np.fromiter((len(c) for c in cnf.clauses), dtype=np.intp, count=len(cnf.clauses))
    offsets = np.zeros(len(sizes) + 1, dtype=np.intp)
    np.cumsum(sizes, out=offsets[1:])
    literals = np.fromiter((lit for c in cnf.clauses for lit in c), dtype=np.int32, count=int(offsets[-1]))
    return literals, offsets
