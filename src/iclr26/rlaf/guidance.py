"""The variable parameterisation ``W = (w, p)`` that RLAF injects into a solver's branching heuristic.

RLAF (Tönshoff & Grohe, ICLR 2026, arXiv 2505.16053): every variable ``x`` gets a weight ``w(x) > 0`` and a
polarity ``p(x) ∈ {0, 1}``. In a VSIDS solver the weight is the variable's initial activity and multiplies every
later activity bump of that variable, so the solver branches on ``argmax_x w(x)·Score(x)``; the polarity is the
value the variable is first assigned (the initial saved phase). Official code: ``toenshoff/RLAF``,
``solvers/glucose_weighted/core/{Dimacs.h,Solver.h,Solver.cc}`` (read for these facts, not copied).

Shape glossary: V variables; arrays are indexed by ``v - 1`` for DIMACS variable ``v``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Guidance"]


@dataclass(frozen=True, eq=False)
class Guidance:
    """One parameterisation ``W`` of a formula's ``V`` variables.

    Attributes:
        polarity: ``(V,)`` bool; ``True`` means "assign the variable true first" (``p(x) = 1``).
        weight: ``(V,)`` float64, finite and ``> 0``: initial VSIDS activity and bump multiplier ``w(x)``.
    """

    polarity: np.ndarray
    weight: np.ndarray

    def __post_init__(self) -> None:
        polarity = np.asarray(self.polarity)
        weight = np.asarray(self.weight, dtype=np.float64)
        if polarity.ndim != 1 or weight.ndim != 1 or polarity.shape != weight.shape:
            raise ValueError(
                f"polarity and weight must be 1-D arrays of equal length V, got shapes {polarity.shape} and "
                f"{weight.shape}"
            )
        if polarity.dtype != np.bool_:
            if not np.isin(polarity, (0, 1)).all():
                raise ValueError("polarity must hold 0/1 or booleans (1 = assign true first)")
            polarity = polarity.astype(bool)
        if not (np.isfinite(weight).all() and (weight > 0).all()):
            raise ValueError("weight must be finite and > 0 for every variable (it scales VSIDS activity)")
        object.__setattr__(self, "polarity", polarity)
        object.__setattr__(self, "weight", weight)

    @property
    def num_vars(self) -> int:
        """``V``."""
        return int(self.weight.shape[0])

    @classmethod
    def uniform(cls, num_vars: int, *, weight: float = 1.0, polarity: bool = False) -> Guidance:
        """All variables with the same weight and polarity (``polarity=False`` is MiniSat's default phase)."""
        return cls(polarity=np.full(num_vars, polarity), weight=np.full(num_vars, float(weight)))

    def phase_literals(self) -> list[int]:
        """The preferred literals as DIMACS integers (``+v`` if ``p = 1`` else ``-v``), for ``set_phases``."""
        signs = np.where(self.polarity, 1, -1)
        return (signs * np.arange(1, self.num_vars + 1)).tolist()
