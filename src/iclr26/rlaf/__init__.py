"""RLAF: Learning from Algorithm Feedback: One-Shot SAT Solver Guidance with GNNs (Tönshoff & Grohe, ICLR 2026).

arXiv 2505.16053, OpenReview NfWrLOKnfk; official code toenshoff/RLAF. A GNN gives every variable of a CNF
formula a weight and a polarity in one forward pass; they are injected into a SAT solver's branching heuristic
(initial VSIDS activity, scaled activity bumps, initial phase), and the GNN is trained with GRPO on the solver's
decision count. See ``README.md`` in this folder.

Drop-in components:

- :func:`guided_solve` and :class:`RLAFPolicy` (train, ``save``/``load``, ``guidance``);
- :func:`solve` on the project's :class:`CDCLSolver` (full mechanism) or a PySAT solver, :class:`SolverPool`;
- :class:`CNF`, :func:`read_dimacs` / :func:`read_dimacs_folder` / :func:`write_dimacs`, the generators
  :func:`random_3sat`, :func:`coloring_3`;
- :class:`GRPOTrainer` (GRPO core in :mod:`iclr26.common.grpo`), the supervised baseline
  :class:`LiteralPredictor`, the hand-made :func:`degree_guidance` baseline and the :func:`shuffled_guidance`
  control.
"""

import importlib
from typing import Any

# name -> defining module. Imported on first access (PEP 562), so that the solver pool's worker processes, which
# import this package to reach iclr26.rlaf.solvers, load the solver modules only and not torch.
_EXPORTS = {
    "CDCLOptions": "cdcl",
    "CDCLSolver": "cdcl",
    "CNF": "cnf",
    "DimacsError": "cnf",
    "memory_estimate": "cnf",
    "read_dimacs_folder": "cnf",
    "parse_dimacs": "cnf",
    "read_dimacs": "cnf",
    "to_dimacs": "cnf",
    "write_dimacs": "cnf",
    "coloring_3": "generators",
    "generate": "generators",
    "generate_balanced": "generators",
    "random_3sat": "generators",
    "GRPOSettings": "grpo_trainer",
    "GRPOTrainer": "grpo_trainer",
    "Guidance": "guidance",
    "degree_guidance": "guidance",
    "shuffled_guidance": "guidance",
    "variable_degrees": "guidance",
    "GuidedSolve": "guided",
    "guided_solve": "guided",
    "RLAFPolicy": "policy",
    "SolveResult": "result",
    "INJECTION_SUPPORT": "solvers",
    "SolverPool": "solvers",
    "SolveTask": "solvers",
    "solve": "solvers",
    "LiteralPredictor": "supervised",
    "backbone_labels": "supervised",
    "core_labels": "supervised",
    "train_supervised": "supervised",
}

__all__ = [
    "CDCLOptions",
    "CDCLSolver",
    "CNF",
    "DimacsError",
    "GRPOSettings",
    "GRPOTrainer",
    "Guidance",
    "GuidedSolve",
    "INJECTION_SUPPORT",
    "LiteralPredictor",
    "RLAFPolicy",
    "SolveResult",
    "SolveTask",
    "SolverPool",
    "backbone_labels",
    "coloring_3",
    "core_labels",
    "degree_guidance",
    "generate",
    "generate_balanced",
    "guided_solve",
    "memory_estimate",
    "parse_dimacs",
    "random_3sat",
    "shuffled_guidance",
    "read_dimacs",
    "read_dimacs_folder",
    "solve",
    "to_dimacs",
    "train_supervised",
    "variable_degrees",
    "write_dimacs",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'iclr26.rlaf' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"iclr26.rlaf.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
