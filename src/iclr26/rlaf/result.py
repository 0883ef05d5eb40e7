"""What one solver call returns, whichever solver ran it (the project's own CDCL or a PySAT solver)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SolveResult", "Status"]

Status = Literal["SAT", "UNSAT", "UNKNOWN"]


@dataclass(frozen=True)
class SolveResult:
    """One solver run on one formula.

    Attributes:
        status: ``"SAT"``, ``"UNSAT"``, or ``"UNKNOWN"`` when a conflict budget ran out.
        model: for SAT, one DIMACS literal per variable (``+v`` true, ``-v`` false); otherwise ``None``.
        decisions: branching decisions, RLAF's cost measure (the reward is ``-decisions``).
        conflicts: conflicts analysed.
        propagations: literals propagated.
        restarts: restarts performed.
        wall_time_s: wall-clock time of the solver call (building the solver included).
        solver: the solver's name (``"cdcl"``, ``"glucose4"``, ``"ergo"``, ...).
        injection: which parts of the guidance reached the solver: a subset of ``("activity", "bump", "phase")``
            (empty for an unguided run).
        first_decisions: the first decisions as DIMACS literals, where the solver exposes them (own CDCL only).
    """

    status: Status
    model: tuple[int, ...] | None
    decisions: int
    conflicts: int
    propagations: int
    restarts: int
    wall_time_s: float
    solver: str
    injection: tuple[str, ...] = ()
    first_decisions: tuple[int, ...] = ()
