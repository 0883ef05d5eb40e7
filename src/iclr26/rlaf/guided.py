"""The drop-in: solve a CNF formula with a solver guided by a trained RLAF policy, in one call.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053): one GNN forward pass gives every variable a weight and a
polarity (the policy's mode at evaluation time), which are injected into the solver's branching heuristic; the
solver then runs unchanged. Usage::

    policy = RLAFPolicy.load("rlaf_3sat.pt")
    out = guided_solve(read_dimacs("formula.cnf"), policy, solver="glucose4")
    out.result.status, out.result.model, out.result.decisions, out.total_time_s
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.guidance import Guidance
from iclr26.rlaf.policy import RLAFPolicy
from iclr26.rlaf.result import SolveResult
from iclr26.rlaf.solvers import solve

__all__ = ["GuidedSolve", "guided_solve"]


@dataclass(frozen=True)
class GuidedSolve:
    """A guided solver call.

    Attributes:
        result: the solver's answer (status, verified model, decisions, wall time of the solver call).
        guidance: the parameterisation that was injected (``None`` for an unguided call).
        inference_time_s: time of the GNN forward pass.
    """

    result: SolveResult
    guidance: Guidance | None
    inference_time_s: float

    @property
    def total_time_s(self) -> float:
        """GNN inference plus solving (the paper's "time" adds GPU and CPU time the same way)."""
        return self.inference_time_s + self.result.wall_time_s


def guided_solve(
    cnf: CNF,
    policy: RLAFPolicy | str | Path | None,
    solver: str = "cdcl",
    *,
    injection: tuple[str, ...] | None = None,
    max_conflicts: int | None = None,
) -> GuidedSolve:
    """Solve ``cnf`` with ``solver`` guided by ``policy``'s mode parameterisation.

    Args:
        cnf: the formula.
        policy: a trained :class:`RLAFPolicy`, the path of a saved one, or ``None`` for the unguided solver.
        solver: ``"cdcl"`` (full mechanism) or a PySAT solver name (see :data:`iclr26.rlaf.solvers.INJECTION_SUPPORT`:
            ``"ergo"`` takes activities and phases, ``"glucose4"`` and most others phases only).
        injection: the parts to inject (``None``: all the solver supports).
        max_conflicts: conflict budget (``None``: none).

    Returns:
        :class:`GuidedSolve`; ``result.injection`` records what reached the solver.

    Raises:
        TypeError: naming the argument, if ``cnf`` is not a :class:`CNF` or ``policy`` is none of the above.
        ValueError: from :meth:`RLAFPolicy.load` for a file that is not a saved policy.
    """
    if not isinstance(cnf, CNF):
        raise TypeError(
            f"guided_solve: cnf must be a CNF (read one with read_dimacs), got {type(cnf).__name__} {cnf!r:.60}"
        )
    if not (policy is None or isinstance(policy, RLAFPolicy | str | Path)):
        raise TypeError(
            "guided_solve: policy must be an RLAFPolicy, the path of a saved one (str or Path), or None for the "
            f"unguided solver, got {type(policy).__name__} {policy!r:.60}"
        )
    if isinstance(policy, str | Path):
        policy = RLAFPolicy.load(policy)
    guidance = None
    start = perf_counter()
    if policy is not None:
        guidance = policy.guidance([cnf])[0]
    inference = perf_counter() - start
    result = solve(cnf, guidance, solver=solver, injection=injection, max_conflicts=max_conflicts)
    return GuidedSolve(result=result, guidance=guidance, inference_time_s=inference)
