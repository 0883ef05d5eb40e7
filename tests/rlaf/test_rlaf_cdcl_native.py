"""The compiled CDCL core makes the same search as the pure-Python reference, step for step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr26.common import native as native_module
from iclr26.rlaf.cdcl import CDCLOptions, CDCLSolver, native_core
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import coloring_3, random_3sat
from iclr26.rlaf.guidance import Guidance


def _trace(result):
    return (
        result.status,
        result.model,
        result.decisions,
        result.conflicts,
        result.propagations,
        result.restarts,
        result.first_decisions,
    )


def _formulas():
    """3-SAT below, at and above the threshold's size range and 3-colouring, with and without guidance."""
    rng = np.random.default_rng(7)
    cases = []
    for k in range(12):
        cnf = random_3sat(40 + 10 * (k % 4), seed=k) if k % 3 else coloring_3(20 + 2 * k, seed=k)
        guidance = None
        if k % 2:
            guidance = Guidance(
                polarity=rng.random(cnf.num_vars) < 0.5,
                weight=np.exp(0.5 * rng.standard_normal(cnf.num_vars)),
            )
        cases.append((cnf, guidance))
    return cases


@pytest.mark.parametrize("injection", [("activity", "bump", "phase"), ("activity", "phase"), ("phase",)])
def test_native_core_makes_the_same_search_as_the_python_reference(injection):
    # every counter, the model and the first 30 decisions agree, on SAT and UNSAT formulas, with learnt-clause
    # reductions (these formulas reach hundreds of conflicts) and with a conflict budget that stops some early
    for k, (cnf, guidance) in enumerate(_formulas()):
        options = {"injection": injection, "record_decisions": 30, "max_conflicts": 60 if k % 5 == 0 else None}
        python = CDCLSolver(cnf, guidance, options=CDCLOptions(backend="python", **options)).solve()
        native = CDCLSolver(cnf, guidance, options=CDCLOptions(**options)).solve()
        assert _trace(native) == _trace(python), f"formula {k}"


def test_native_core_matches_through_frequent_reductions_at_the_threshold():
    # the core compacts its clause arena after every reduction and keeps a watch without writing the clause when the
    # other watched literal is true; a small, slowly growing learnt limit makes dozens of reductions in
    # these runs of thousands of conflicts, where a difference in the watch lists or a clause's order would show
    options = {"learnt_fraction": 0.02, "learnt_growth": 1.02, "record_decisions": 50}
    conflicts = 0
    for k, cnf in enumerate((random_3sat(150, seed=11), random_3sat(150, seed=12), coloring_3(60, seed=5))):
        guidance = None if k != 1 else Guidance(polarity=np.arange(150) % 2 == 0, weight=np.linspace(0.5, 2.0, 150))
        python = CDCLSolver(cnf, guidance, options=CDCLOptions(backend="python", **options)).solve()
        native = CDCLSolver(cnf, guidance, options=CDCLOptions(**options)).solve()
        assert _trace(native) == _trace(python), f"formula {k}"
        conflicts += python.conflicts
    # the first limit is 0.02 * 640 clauses ~ 13 learnt clauses: thousands of conflicts mean many reductions
    assert conflicts > 2_000


def test_native_core_matches_through_activity_rescaling():
    # with var_decay 0.2, var_inc grows 5x per conflict and passes 1e100 after 143 conflicts: this run rescales
    # every activity by 1e-100 (and rebuilds the heap) at least twice
    cnf = random_3sat(120, seed=3)
    options = {"var_decay": 0.2, "record_decisions": 10}
    reference = CDCLSolver(cnf, options=CDCLOptions(backend="python", **options))
    python = reference.solve()
    native = CDCLSolver(cnf, options=CDCLOptions(**options)).solve()
    # without rescaling log10(var_inc) would be conflicts * log10(5); each rescale takes 100 off
    assert math.log10(reference.var_inc) < python.conflicts * math.log10(5) - 199
    assert _trace(native) == _trace(python)


def test_small_cases_of_the_native_core():
    # trivially UNSAT by units, a tautology only, no clause at all
    assert CDCLSolver(CNF(num_vars=1, clauses=((1,), (-1,)))).solve().status == "UNSAT"
    result = CDCLSolver(CNF(num_vars=2, clauses=((1, -1),))).solve()
    assert result.status == "SAT" and result.model == (-1, -2)  # default phase false, no conflicts
    assert CDCLSolver(CNF(num_vars=0, clauses=())).solve().status == "SAT"


def test_missing_core_raises_with_the_command_that_builds_it(monkeypatch):
    def missing(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(native_module.importlib, "import_module", missing)
    with pytest.raises(ImportError, match=r"not built: run `make install`.*backend='python'"):
        CDCLSolver(random_3sat(10, seed=0)).solve()


def test_backend_is_checked_and_the_core_rejects_inconsistent_buffers():
    with pytest.raises(ValueError, match="backend must be 'native' or 'python'"):
        CDCLOptions(backend="c")
    one = np.ones(2)
    with pytest.raises(ValueError, match="inconsistent buffer sizes"):
        native_core().solve(3, np.array([1, 2], np.int32), np.array([0, 2], np.intp), one, one, b"\0\0", 0.95,
                            100, 0.33, 1.1, 0, 0)  # fmt: skip
    with pytest.raises(ValueError, match="literal out of range"):
        native_core().solve(2, np.array([1, 5], np.int32), np.array([0, 2], np.intp), one, one, b"\0\0", 0.95,
                            100, 0.33, 1.1, 0, 0)  # fmt: skip
