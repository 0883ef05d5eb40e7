"""The baseline's bounded prover and the z3 pass@k difficulty check."""

from __future__ import annotations

from iclr26.dexploration.env import Entry, Statement
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact
from iclr26.dexploration.prover import bounded_prove, z3_pass_at_k

BINDERS = (Entry("var", "x"), Entry("var", "y"), Entry("hyp", "h1", fact("x <= 2")),
           Entry("hyp", "h2", fact("- y <= - 1")))  # fmt: skip
U = fact("x * y + x - 3 * y <= 1")  # = mul(h1, h2) + 2 h1 + h2: one product, then linear


def test_bounded_prover_needs_one_level_for_one_product():
    assert bounded_prove(BINDERS, U, depth=0).statement is None  # linear reasoning alone cannot reach x*y
    res = bounded_prove(BINDERS, U, depth=1)
    assert res.statement is not None and res.queries == 2  # one check before, one after level 1
    steps = res.statement.steps
    assert steps[-1].fact == U
    assert fact("x * y - x - 2 * y <= - 2") in [s.fact for s in steps]  # the product step is in the proof
    # every step of the found proof follows from its named premises
    k = Z3Kernel()
    known = {b.name: b.fact for b in BINDERS if b.fact is not None}
    for s in steps:
        assert k.entails([known[p] for p in s.premises], s.fact).proved is True
        known[s.name] = s.fact


def test_bounded_prover_fails_on_false_goals_and_respects_the_fact_budget():
    assert bounded_prove(BINDERS, fact("x * y <= 0"), depth=2).statement is None  # false at x = 2, y = 1
    res = bounded_prove(BINDERS, fact("x * y <= 0"), depth=2, max_facts=3)
    assert res.statement is None and res.candidates > 0


def test_z3_pass_at_k():
    st = Statement(BINDERS, (), U)
    assert z3_pass_at_k(st, k=2, rlimit=2_000_000)
    assert not z3_pass_at_k(Statement(BINDERS, (), fact("x * y <= 0")), k=2, rlimit=2_000_000)
