"""Guidance through real solvers (PySAT): what each solver takes, and that it changes the solver's decisions."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pysat
import pytest
from pysat.solvers import Solver, SolverNames

from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import random_3sat
from iclr26.rlaf.guidance import Guidance, degree_guidance, variable_degrees
from iclr26.rlaf.result import SolveResult
from iclr26.rlaf.solvers import INJECTION_SUPPORT, SolverPool, SolveTask, solve, verify_result


def test_pysat_release_is_pinned():
    # Solver.set_activities appeared in the 1.9 development releases; the extra pins the one tested here
    assert pysat.__version__ == "1.9.dev17"


@pytest.mark.parametrize("name", sorted(n for n in INJECTION_SUPPORT if n != "cdcl"))
def test_support_table_matches_what_pysat_implements(name):
    with Solver(name=name, bootstrap_with=[[1, 2]]) as engine:
        engine.set_phases([1, -2])  # every listed solver takes phases
        if "activity" in INJECTION_SUPPORT[name]:
            engine.set_activities({1: 2.0, 2: 1.0})
        else:
            with pytest.raises(NotImplementedError):
                engine.set_activities({1: 2.0})
        assert engine.solve()


def test_only_ergo_takes_activities_in_this_pysat():
    # One might expect Solver.set_activities on Glucose 3/4 and MiniSat 2.2. In python-sat 1.9.dev17 it forwards
    # to Ergo only and raises NotImplementedError for every other solver; try every solver of the build.
    accepted, refused = set(), set()
    for key, aliases in vars(SolverNames).items():
        if key.startswith("_") or not isinstance(aliases, tuple):
            continue
        if key == "cryptosat" and importlib.util.find_spec("pycryptosat") is None:
            continue  # CryptoMiniSat needs the separate pycryptosat package, not installed
        with Solver(name=aliases[0], bootstrap_with=[[1, 2]]) as engine:
            try:
                engine.set_activities({1: 2.0, 2: 1.0})
            except NotImplementedError:
                refused.add(key)
            else:
                accepted.add(key)
    assert accepted == {"ergo"}
    assert {"glucose3", "glucose4", "glucose42", "minisat22", "cadical195", "lingeling"} <= refused
    assert len(accepted | refused) >= 20  # the whole build was tried (20 solvers in 1.9.dev17), not a short list


# exactly one of 1, 2, 3 is true: with every phase "true", the first decision fixes the model
EXACTLY_ONE = CNF(num_vars=3, clauses=((1, 2, 3), (-1, -2), (-1, -3), (-2, -3)))


@pytest.mark.parametrize(("weights", "chosen"), [([1.0, 2.0, 1.0], 2), ([1.0, 1.0, 2.0], 3), ([2.0, 1.0, 1.0], 1)])
def test_ergo_activities_decide_which_variable_comes_first(weights, chosen):
    guidance = Guidance(polarity=np.ones(3, dtype=bool), weight=np.array(weights))
    result = solve(EXACTLY_ONE, guidance, solver="ergo")
    assert result.injection == ("activity", "phase")
    assert result.model[chosen - 1] == chosen and sum(lit > 0 for lit in result.model) == 1
    # the project's CDCL makes the same first decision
    assert solve(EXACTLY_ONE, guidance, solver="cdcl").model == result.model


@pytest.mark.parametrize("name", ["glucose4", "minisat22", "cadical153"])
def test_phases_decide_the_first_values(name):
    # (1 ∨ 2) ∧ (3 ∨ 4): the preferred phases are a model, and the solver returns it
    cnf = CNF(num_vars=4, clauses=((1, 2), (3, 4)))
    for polarity in ([True, False, True, False], [False, True, False, True]):
        result = solve(cnf, Guidance(polarity=np.array(polarity), weight=np.ones(4)), solver=name)
        assert result.injection == ("phase",)
        assert list(result.model) == [v if p else -v for v, p in zip(range(1, 5), polarity, strict=True)]


def test_guidance_changes_glucose_decision_counts():
    # decisions are read from accum_stats; phases alone move them on a threshold formula
    cnf = random_3sat(80, seed=5)
    base = solve(cnf, solver="glucose4")
    counts = {base.decisions}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        guided = solve(cnf, Guidance(polarity=rng.random(80) < 0.5, weight=np.ones(80)), solver="glucose4")
        assert guided.status == base.status
        counts.add(guided.decisions)
    assert len(counts) > 1 and base.decisions > 0


def test_unsat_answers_agree_across_solvers():
    for seed in range(12):
        cnf = random_3sat(40, seed=seed)
        rng = np.random.default_rng(seed)
        guidance = Guidance(polarity=rng.random(40) < 0.5, weight=rng.lognormal(0.0, 0.5, 40))
        answers = {solve(cnf, guidance, solver=name).status for name in ("cdcl", "ergo", "glucose4", "minisat22")}
        assert len(answers) == 1


def test_conflict_budget_through_pysat():
    holes = 7
    var = lambda p, h: p * holes + h + 1  # noqa: E731
    clauses = [tuple(var(p, h) for h in range(holes)) for p in range(holes + 1)]
    clauses += [(-var(p, h), -var(q, h)) for h in range(holes) for p in range(holes + 1) for q in range(p)]
    php = CNF.from_clauses(clauses)
    assert solve(php, solver="glucose4", max_conflicts=3).status == "UNKNOWN"


def test_errors_name_solver_and_parts():
    g = Guidance.uniform(3)
    with pytest.raises(ValueError, match=r"solver 'glucose4' cannot take injection \['activity'\]"):
        solve(EXACTLY_ONE, g, solver="glucose4", injection=("activity", "phase"))
    with pytest.raises(ValueError, match="solver must be one of"):
        solve(EXACTLY_ONE, g, solver="march")
    with pytest.raises(ValueError, match="injection was given without guidance"):
        solve(EXACTLY_ONE, solver="cdcl", injection=("phase",))
    with pytest.raises(ValueError, match="at least one part"):
        solve(EXACTLY_ONE, g, solver="cdcl", injection=())
    with pytest.raises(ValueError, match="guidance has 2 variables, the formula 3"):
        solve(EXACTLY_ONE, Guidance.uniform(2))


def test_a_wrong_model_is_caught():
    bad = SolveResult(
        status="SAT",
        model=(1, 1, 1),
        decisions=0,
        conflicts=0,
        propagations=0,
        restarts=0,
        wall_time_s=0.0,
        solver="fake",
    )
    with pytest.raises(RuntimeError, match="does not satisfy"):
        verify_result(EXACTLY_ONE, bad)


def test_pool_returns_results_in_task_order():
    cnfs = [random_3sat(n, seed=n) for n in (20, 60, 25, 50, 30, 40)]
    tasks = [SolveTask(c, solver=s) for c in cnfs for s in ("cdcl", "glucose4")]
    serial = SolverPool(1).map(tasks)
    with SolverPool(2) as pool:
        parallel = pool.map(tasks)
    assert [(r.solver, r.decisions, r.model) for r in parallel] == [(r.solver, r.decisions, r.model) for r in serial]
    with pytest.raises(RuntimeError, match="must be entered"):
        SolverPool(2).map(tasks)


def test_degree_heuristic_by_hand():
    cnf = CNF(num_vars=3, clauses=((1, 2), (1, -3), (1, 2)))
    # degrees (3, 2, 1): mean 2, population std sqrt(2/3), z = (+-1.2247, 0)
    assert variable_degrees(cnf).tolist() == [3.0, 2.0, 1.0]
    g = degree_guidance(cnf, scale=0.01)
    z = 1 / math.sqrt(2 / 3)
    assert g.weight == pytest.approx([1 + 0.01 * z, 1.0, 1 - 0.01 * z])
    assert g.polarity.tolist() == [True, True, True]
    # equal degrees: every weight 1
    assert degree_guidance(CNF(num_vars=2, clauses=((1, 2), (-1, -2)))).weight.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"scale=1.0 gives a non-positive weight .* use scale < 0.816"):
        degree_guidance(cnf, scale=1.0)
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        degree_guidance(cnf, scale=0.0)
