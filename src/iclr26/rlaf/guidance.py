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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from iclr26.rlaf.cnf import CNF

__all__ = ["Guidance", "degree_guidance", "shuffled_guidance", "variable_degrees"]


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


def variable_degrees(cnf: CNF) -> np.ndarray:
    """``(V,)`` occurrences of each variable in the clauses, either literal counted."""
    lits = np.fromiter((abs(lit) for clause in cnf.clauses for lit in clause), dtype=np.int64)
    return np.bincount(lits - 1, minlength=cnf.num_vars).astype(np.float64)


def degree_guidance(cnf: CNF, *, scale: float = 0.01) -> Guidance:
    """The hand-made degree heuristic, a baseline for learned guidance.

    ``w(x) = 1 + scale · z(x)`` with ``z`` the variable's degree standardised over the formula
    (``z = (deg − mean) / std``; 0 for every variable when all degrees are equal), and every polarity true. On
    SATLIB's uf50-218 it gave a decision ratio of 0.748 against the learned policy's 0.703, and RLAF's trained
    policies look like it (all polarities true, weights correlated 0.95 with degree): a learned policy should beat it.

    Args:
        cnf: the formula.
        scale: the weight's slope per standard deviation of degree, > 0 (the reproduction uses 0.01).

    Raises:
        ValueError: if ``scale`` is not a finite positive number, or so large that a weight is not positive.
    """
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale}")
    degree = variable_degrees(cnf)
    spread = degree.std()
    z = (degree - degree.mean()) / spread if spread > 0 else np.zeros_like(degree)
    # frequent variables get a larger VSIDS weight, all polarities true: what trained RLAF policies were seen to learn
    weight = 1.0 + scale * z
    if cnf.num_vars and weight.min() <= 0:
        raise ValueError(
            f"scale={scale} gives a non-positive weight ({weight.min():.3g}) to the least frequent variable; "
            f"use scale < {1.0 / -z.min():.3g} for this formula"
        )
    return Guidance(polarity=np.ones(cnf.num_vars, dtype=bool), weight=weight)


def shuffled_guidance(guidance: Guidance, seed: int) -> Guidance:
    """The same weights and polarities given to a random permutation of the variables: a control for learned guidance.

    It keeps everything about ``guidance`` that does not depend on which variable is which (the spread of the
    weights, the share of true polarities) and drops what does. A policy whose gain survives this shuffle has
    learned a distribution of values, not a per-variable guidance.

    Args:
        guidance: the parameterisation to shuffle.
        seed: seed of the permutation (one permutation moves weight and polarity together).

    Returns:
        ``Guidance(polarity[π], weight[π])`` for a uniformly random permutation ``π`` of the ``V`` variables.
    """
    # keeps the values' distribution, breaks which variable receives which value
    order = np.random.default_rng(seed).permutation(guidance.num_vars)
    return Guidance(polarity=guidance.polarity[order], weight=guidance.weight[order])
