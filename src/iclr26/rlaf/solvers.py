"""Solving with guidance, on the project's own CDCL or on a real solver through PySAT, one call or many in parallel.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053) injects ``W = (w, p)`` into a solver's branching heuristic:
initial VSIDS activity ``w(x)``, every bump of ``x`` multiplied by ``w(x)``, first value ``p(x)`` (see
:mod:`iclr26.rlaf.cdcl`). What each solver can take (``INJECTION_SUPPORT``):

- ``"cdcl"``, the project's solver (:mod:`iclr26.rlaf.cdcl`): all three parts, ``("activity", "bump", "phase")``.
- ``"ergo"`` (PySAT 1.9.dev17): ``Solver.set_activities`` (initial activities; PySAT also resets the bump
  increment, and variables left out get activity 0) and ``Solver.set_phases``: ``("activity", "phase")``.
  In python-sat 1.9.dev17 ``Solver.set_activities`` forwards to Ergo only: for every other solver, Glucose 3/4/4.2
  and MiniSat 2.2 included, it raises ``NotImplementedError`` ("Setting variable activities is unsupported by this
  solver"), and the compiled ``pysolvers`` module has a user-activity entry point for Ergo only (``ergo_setacts``).
  Checked on every solver of that build in ``tests/rlaf/test_rlaf_injection.py``.
- Glucose 3/4/4.2, MiniSat 2.2, Maple*, Minicard, Gluecard, MergeSat, Lingeling, CaDiCaL 1.5.3/1.9.5:
  ``Solver.set_phases`` only, ``("phase",)``, the polarity-only ablation. PySAT documents that Glucose, MiniSat
  2.2, Maple* and Minicard use the phases as initial saved phases (RLAF's semantics), while Lingeling always
  respects them; PySAT's CaDiCaL wrappers switch CaDiCaL's "lucky" phase search off before setting them.

The cost is read from the solver: ``decisions`` (RLAF's reward is ``-decisions``; PySAT's ``accum_stats``), with
the wall time beside it. Every SAT answer is checked against the formula before it is returned.

Parallel calls: :class:`SolverPool` runs a list of :class:`SolveTask` in worker processes and returns the results
in task order, whatever order the workers finish in.

Deviations: the bump scaling reaches no PySAT solver (there is no hook for it), so PySAT runs receive a part of the
mechanism only; the official code instead passes ``W`` to patched solver binaries in a ``c weight`` DIMACS line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from time import perf_counter

from iclr26.rlaf.cdcl import INJECTION_PARTS, CDCLOptions, CDCLSolver
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.guidance import Guidance
from iclr26.rlaf.result import SolveResult

__all__ = ["INJECTION_SUPPORT", "SolveTask", "SolverPool", "available_workers", "solve", "verify_result"]

_PHASES_ONLY = ("phase",)
INJECTION_SUPPORT: dict[str, tuple[str, ...]] = {
    "cdcl": INJECTION_PARTS,
    "ergo": ("activity", "phase"),
    **{
        name: _PHASES_ONLY
        for name in (
            "glucose3",
            "glucose4",
            "glucose42",
            "minisat22",
            "maplechrono",
            "maplecm",
            "maplesat",
            "mergesat3",
            "minicard",
            "gluecard3",
            "gluecard4",
            "lingeling",
            "cadical153",
            "cadical195",
        )
    },
}


def verify_result(cnf: CNF, result: SolveResult) -> SolveResult:
    """Check a SAT answer's model against the formula; return the result unchanged if it holds.

    Raises:
        RuntimeError: if the solver claims SAT with a model that violates a clause (a solver bug).
    """
    if result.status == "SAT" and (result.model is None or not cnf.is_satisfied_by(result.model)):
        raise RuntimeError(f"{result.solver} returned SAT with a model that does not satisfy the formula")
    return result


def _resolve_injection(solver: str, guidance: Guidance | None, injection: Sequence[str] | None) -> tuple[str, ...]:
    if solver not in INJECTION_SUPPORT:
        raise ValueError(f"solver must be one of {', '.join(sorted(INJECTION_SUPPORT))}, got {solver!r}")
    supported = INJECTION_SUPPORT[solver]
    if guidance is None:
        if injection:
            raise ValueError("injection was given without guidance; pass guidance=Guidance(...) or injection=None")
        return ()
    if injection is None:
        return supported
    if not injection:
        raise ValueError("injection must name at least one part; for the unguided solver pass guidance=None")
    unknown = [part for part in injection if part not in INJECTION_PARTS]
    if unknown:
        raise ValueError(f"injection parts must be 'activity', 'bump' or 'phase', got {unknown}")
    missing = [part for part in injection if part not in supported]
    if missing:
        raise ValueError(
            f"solver {solver!r} cannot take injection {missing}: it supports {supported}; use solver='cdcl' "
            f"for the full mechanism or drop those parts"
        )
    return tuple(part for part in supported if part in injection)


def solve(
    cnf: CNF,
    guidance: Guidance | None = None,
    *,
    solver: str = "cdcl",
    injection: Sequence[str] | None = None,
    max_conflicts: int | None = None,
) -> SolveResult:
    """Solve ``cnf`` with ``solver``, guided by ``guidance`` if given.

    Args:
        cnf: the formula.
        guidance: the parameterisation ``W`` (``None``: the unguided base solver).
        solver: ``"cdcl"`` (own solver, full mechanism) or a PySAT solver name from ``INJECTION_SUPPORT``.
        injection: the parts of ``W`` to inject; ``None`` means all the solver supports. For ``"cdcl"``,
            ``("activity", "phase")`` switches bump scaling off (the part ``"ergo"`` takes), ``("phase",)`` leaves
            only the polarities (the part Glucose takes).
        max_conflicts: conflict budget; ``UNKNOWN`` when it runs out (``None``: no limit).

    Returns:
        :class:`SolveResult` (SAT models verified).

    Raises:
        ValueError: for an unknown solver, guidance of the wrong length, or an injection the solver cannot take.
    """
    parts = _resolve_injection(solver, guidance, injection)
    if guidance is not None and guidance.num_vars != cnf.num_vars:
        raise ValueError(f"guidance has {guidance.num_vars} variables, the formula {cnf.num_vars}")
    if max_conflicts is not None and max_conflicts < 1:
        raise ValueError(f"max_conflicts must be >= 1 or None, got {max_conflicts}")
    if solver == "cdcl":
        options = CDCLOptions(max_conflicts=max_conflicts, injection=parts or INJECTION_PARTS)
        return verify_result(cnf, CDCLSolver(cnf, guidance, options=options).solve())
    return verify_result(cnf, _solve_pysat(cnf, guidance, solver, parts, max_conflicts))


def _solve_pysat(
    cnf: CNF, guidance: Guidance | None, solver: str, parts: tuple[str, ...], max_conflicts: int | None
) -> SolveResult:
    from pysat.solvers import Solver

    start = perf_counter()
    with Solver(name=solver, bootstrap_with=[list(c) for c in cnf.clauses]) as engine:
        if guidance is not None and "activity" in parts:
            # RLAF: initial VSIDS activity w(x) (PySAT: the given values, bump increment reset to 1)
            engine.set_activities({v + 1: float(w) for v, w in enumerate(guidance.weight)})
        if guidance is not None and "phase" in parts:
            # RLAF: first value p(x) (initial saved phase)
            engine.set_phases(guidance.phase_literals())
        if max_conflicts is None:
            answer = engine.solve()
        else:
            engine.conf_budget(max_conflicts)
            answer = engine.solve_limited()
        stats = engine.accum_stats()
        raw_model = engine.get_model() if answer else None
    wall = perf_counter() - start
    status = "UNKNOWN" if answer is None else ("SAT" if answer else "UNSAT")
    model = None
    if raw_model is not None:
        # PySAT omits variables that occur in no clause; they are free, so complete the model with "false"
        assigned = {abs(lit): lit for lit in raw_model}
        model = tuple(assigned.get(v, -v) for v in range(1, cnf.num_vars + 1))
    return SolveResult(
        status=status,
        model=model,
        decisions=int(stats["decisions"]),
        conflicts=int(stats["conflicts"]),
        propagations=int(stats["propagations"]),
        restarts=int(stats["restarts"]),
        wall_time_s=wall,
        solver=solver,
        injection=parts,
    )


@dataclass(frozen=True)
class SolveTask:
    """One solver call for :class:`SolverPool` (the arguments of :func:`solve`)."""

    cnf: CNF
    guidance: Guidance | None = None
    solver: str = "cdcl"
    injection: tuple[str, ...] | None = None
    max_conflicts: int | None = None


def _run_task(task: SolveTask) -> SolveResult:
    return solve(
        task.cnf, task.guidance, solver=task.solver, injection=task.injection, max_conflicts=task.max_conflicts
    )


def available_workers() -> int:
    """The CPU cores this process may use (``os.sched_getaffinity``; ``os.cpu_count`` where that is missing)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class SolverPool:
    """Solver calls in worker processes, results in task order. Use as a context manager.

    Workers are started with ``forkserver`` (no fork of a process holding torch threads) and kept for the pool's
    life; with ``workers=1`` tasks run in this process.

    Args:
        workers: worker processes (default: :func:`available_workers`).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = available_workers() if workers is None else workers
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        self._executor: Executor | None = None

    def __enter__(self) -> SolverPool:
        if self.workers > 1:
            self._executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=get_context("forkserver"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def map(self, tasks: Sequence[SolveTask]) -> list[SolveResult]:
        """Solve every task; ``result[i]`` belongs to ``tasks[i]``."""
        if self._executor is None:
            if self.workers > 1:
                raise RuntimeError("SolverPool with workers > 1 must be entered (use 'with SolverPool() as pool')")
            return [_run_task(t) for t in tasks]
        chunk = max(1, len(tasks) // (4 * self.workers))
        return list(self._executor.map(_run_task, tasks, chunksize=chunk))
