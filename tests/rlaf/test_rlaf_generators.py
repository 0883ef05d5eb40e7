"""Problem families: the paper's formulas, their structure, seeded determinism, balanced sets."""

from __future__ import annotations

import pytest
from pysat.solvers import Solver

from iclr26.rlaf.generators import coloring_3, generate, generate_balanced, random_3sat, threshold_clauses


def test_threshold_clause_count():
    # ⌊4.258·50 + 58.26/50^(2/3)⌋ = ⌊212.9 + 58.26/13.572⌋ = ⌊217.19⌋ = 217
    # ⌊4.258·200 + 58.26/200^(2/3)⌋ = ⌊851.6 + 58.26/34.200⌋ = ⌊853.30⌋ = 853
    assert threshold_clauses(50) == 217
    assert threshold_clauses(200) == 853
    with pytest.raises(ValueError, match="num_vars must be >= 3"):
        threshold_clauses(2)


def test_random_3sat_structure_and_determinism():
    cnf = random_3sat(40, seed=7)
    assert cnf.num_vars == 40 and cnf.num_clauses == threshold_clauses(40)
    assert all(len(c) == 3 and len({abs(x) for x in c}) == 3 for c in cnf.clauses)
    assert random_3sat(40, seed=7) == cnf
    assert random_3sat(40, seed=8) != cnf


def test_coloring_structure():
    # 3n variables; n "some colour" clauses, 3n "at most one colour" pairs, 3 clauses per edge
    cnf = coloring_3(20, seed=3)
    assert cnf.num_vars == 60
    positive_triples = [c for c in cnf.clauses if len(c) == 3 and all(x > 0 for x in c)]
    binary_negative = [c for c in cnf.clauses if len(c) == 2 and all(x < 0 for x in c)]
    assert len(positive_triples) == 20
    assert len(binary_negative) == cnf.num_clauses - 20
    assert (len(binary_negative) - 3 * 20) % 3 == 0  # 3 per edge after the 60 at-most-one pairs
    assert coloring_3(20, seed=3) == cnf
    with pytest.raises(ValueError, match="average_degree"):
        coloring_3(4, seed=0, average_degree=5.0)


def test_generate_is_reproducible_and_seed_dependent():
    a = generate("3sat", 20, 5, seed=0)
    assert [i.cnf for i in a] == [i.cnf for i in generate("3sat", 20, 5, seed=0)]
    assert [i.cnf for i in a] != [i.cnf for i in generate("3sat", 20, 5, seed=1)]
    assert len({i.seed for i in a}) == 5 and all(i.satisfiable is None for i in a)
    with pytest.raises(ValueError, match="family must be one of"):
        generate("sudoku", 20, 5, seed=0)


@pytest.mark.parametrize(("family", "size"), [("3sat", 25), ("3col", 30)])
def test_balanced_sets_are_balanced_alternating_and_correctly_labelled(family, size):
    insts = generate_balanced(family, size, 6, seed=11)
    assert [i.satisfiable for i in insts] == [True, False] * 3
    for inst in insts:
        with Solver(name="minisat22", bootstrap_with=[list(c) for c in inst.cnf.clauses]) as s:
            assert s.solve() == inst.satisfiable
    assert [i.cnf for i in insts] == [i.cnf for i in generate_balanced(family, size, 6, seed=11)]


def test_balanced_errors():
    with pytest.raises(ValueError, match="count must be even"):
        generate_balanced("3sat", 20, 3, seed=0)
    with pytest.raises(ValueError, match="raise max_draws"):
        generate_balanced("3sat", 20, 4, seed=0, max_draws=1)
