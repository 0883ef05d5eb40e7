"""The project's CDCL: answers agree with PySAT, and the three parts of RLAF's injection act as specified."""

from __future__ import annotations

import random

import numpy as np
import pytest
from cnfgen import RandomKCNF
from pysat.solvers import Solver

from iclr26.rlaf.cdcl import CDCLOptions, CDCLSolver, luby
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import random_3sat
from iclr26.rlaf.guidance import Guidance


def _pysat_answer(cnf: CNF, name: str) -> bool:
    with Solver(name=name, bootstrap_with=[list(c) for c in cnf.clauses]) as s:
        return bool(s.solve())


def test_luby_sequence():
    assert [luby(2.0, i) for i in range(15)] == [1, 1, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8]


def test_agrees_with_pysat_on_2000_random_formulas():
    # k-CNF with k in {2, 3, 4}, 6-25 variables, clause/variable ratio 2-6: a mix of SAT and UNSAT. Half the runs
    # are guided by a random parameterisation; some use tiny restart and learnt-clause limits so that restarts and
    # clause deletion happen. Every SAT model is checked; UNSAT answers are confirmed by two PySAT solvers.
    rng = random.Random(0)
    nprng = np.random.default_rng(0)
    counts = {"SAT": 0, "UNSAT": 0}
    for i in range(2000):
        n = rng.randint(6, 25)
        k = rng.choice([2, 3, 3, 4])
        cnf = CNF.from_clauses(RandomKCNF(k, n, int(n * rng.uniform(2.0, 6.0)), seed=i).clauses(), num_vars=n)
        guidance = None
        if i % 2:
            guidance = Guidance(polarity=nprng.random(n) < 0.5, weight=nprng.lognormal(0.0, 1.0, n))
        options = CDCLOptions(restart_base=2, learnt_fraction=0.05) if i % 3 == 0 else CDCLOptions()
        result = CDCLSolver(cnf, guidance, options=options).solve()
        assert result.status in ("SAT", "UNSAT")
        assert (result.status == "SAT") == _pysat_answer(cnf, "minisat22"), f"formula {i}"
        if result.status == "SAT":
            assert cnf.is_satisfied_by(result.model)
        else:
            assert not _pysat_answer(cnf, "glucose4")
        counts[result.status] += 1
    assert min(counts.values()) > 400  # both answers well represented


@pytest.mark.slow
def test_agrees_with_pysat_on_threshold_3sat():
    for seed in range(60):
        cnf = random_3sat(60, seed=seed)
        result = CDCLSolver(cnf, options=CDCLOptions(learnt_fraction=0.02)).solve()
        assert (result.status == "SAT") == _pysat_answer(cnf, "glucose4")


# clauses (1 ∨ 2), (1 ∨ ¬2), (3 ∨ 4): deciding ¬1 propagates 2 and conflicts; the learnt unit (1) is asserted at
# level 0 after bumping variables 1 and 2 by var_inc = 1.
CRAFTED = CNF(num_vars=4, clauses=((1, 2), (1, -2), (3, 4)))
CRAFTED_GUIDANCE = Guidance(polarity=np.array([False, True, True, True]), weight=np.array([1.0, 0.001, 0.5, 0.25]))


def _first(cnf: CNF, guidance: Guidance | None, injection=("activity", "bump", "phase")) -> tuple[int, ...]:
    options = CDCLOptions(record_decisions=8, injection=injection)
    return CDCLSolver(cnf, guidance, options=options).solve().first_decisions


def test_unguided_decisions_follow_index_order_default_phase_and_phase_saving():
    # all activities 0 → variable 1 first, phase false → conflict; after it, variable 2 (bumped to 1) is decided
    # with its saved phase (true, from the propagation), then variable 3 with the default phase false (4 propagates)
    assert _first(CRAFTED, None) == (-1, 2, -3)


def test_full_injection_scales_bumps_by_the_weight():
    # initial activities w = (1, 0.001, 0.5, 0.25) → decide 1 (polarity false) first; the conflict bumps variable 2
    # to 0.001 + 1·0.001 = 0.002 < 0.5, so variables 3, 4 (polarity true) come before 2
    assert _first(CRAFTED, CRAFTED_GUIDANCE) == (-1, 3, 4, 2)


def test_without_bump_scaling_the_bump_dominates_the_small_weight():
    # same initial activities, but the bump adds 1: variable 2 reaches 1.001 > 0.5 and is decided right away
    assert _first(CRAFTED, CRAFTED_GUIDANCE, ("activity", "phase")) == (-1, 2, 3, 4)


def test_phase_only_injection_keeps_the_unguided_order():
    # activities stay 0 (index order); only the first values come from p: 1 false, then 2, 3, 4 true (3 true leaves
    # 4 unconstrained, so 4 is a decision too; unguided, 3 false propagates 4)
    assert _first(CRAFTED, CRAFTED_GUIDANCE, ("phase",)) == (-1, 2, 3, 4)


def test_uniform_weights_reproduce_the_unguided_search():
    # w ≡ c: activity = c·(1 + unguided activity), the same order; polarity false = MiniSat's default
    for seed in range(5):
        cnf = random_3sat(40, seed=seed)
        base = CDCLSolver(cnf, options=CDCLOptions(record_decisions=20)).solve()
        guided = CDCLSolver(cnf, Guidance.uniform(40, weight=3.7), options=CDCLOptions(record_decisions=20)).solve()
        assert (guided.decisions, guided.conflicts, guided.first_decisions) == (
            base.decisions,
            base.conflicts,
            base.first_decisions,
        )


def test_guidance_changes_the_cost_and_runs_are_deterministic():
    cnf = random_3sat(50, seed=3)
    rng = np.random.default_rng(1)
    guidance = Guidance(polarity=rng.random(50) < 0.5, weight=rng.lognormal(0.0, 1.0, 50))
    a, b = CDCLSolver(cnf, guidance).solve(), CDCLSolver(cnf, guidance).solve()
    assert (a.decisions, a.conflicts, a.propagations, a.model) == (b.decisions, b.conflicts, b.propagations, b.model)
    assert a.decisions != CDCLSolver(cnf).solve().decisions
    assert a.injection == ("activity", "bump", "phase")


def _pigeonhole(pigeons: int, holes: int) -> CNF:
    var = lambda p, h: p * holes + h + 1  # noqa: E731
    clauses = [tuple(var(p, h) for h in range(holes)) for p in range(pigeons)]
    clauses += [(-var(p, h), -var(q, h)) for h in range(holes) for p in range(pigeons) for q in range(p + 1, pigeons)]
    return CNF.from_clauses(clauses, num_vars=pigeons * holes)


def test_conflict_budget_gives_unknown_and_small_cases():
    hard = _pigeonhole(7, 6)
    budget = CDCLSolver(hard, options=CDCLOptions(max_conflicts=5)).solve()
    assert budget.status == "UNKNOWN" and budget.conflicts == 5 and budget.model is None
    assert CDCLSolver(_pigeonhole(4, 3)).solve().status == "UNSAT"
    assert CDCLSolver(CNF(num_vars=0, clauses=())).solve().model == ()
    trivially = CDCLSolver(CNF(num_vars=1, clauses=((1,), (-1,)))).solve()
    assert trivially.status == "UNSAT" and trivially.decisions == 0
    # a tautology and a duplicated literal are harmless
    odd = CDCLSolver(CNF(num_vars=2, clauses=((1, -1), (2, 2), (-2, 1)))).solve()
    assert odd.status == "SAT" and odd.model == (1, 2)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="guidance has 3 variables but the formula has 4"):
        CDCLSolver(CRAFTED, Guidance.uniform(3))
    with pytest.raises(ValueError, match="var_decay"):
        CDCLOptions(var_decay=1.0)
    with pytest.raises(ValueError, match="injection parts"):
        CDCLOptions(injection=("weights",))
    with pytest.raises(ValueError, match="learnt_fraction must be > 0, got 0.0"):
        CDCLOptions(learnt_fraction=0.0)
    with pytest.raises(ValueError, match="learnt_growth must be >= 1, got 0.5"):
        CDCLOptions(learnt_growth=0.5)
    with pytest.raises(ValueError, match="weight must be finite and > 0"):
        Guidance(polarity=np.zeros(2, dtype=bool), weight=np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="polarity must hold 0/1"):
        Guidance(polarity=np.array([0, 2]), weight=np.ones(2))
