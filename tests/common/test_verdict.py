"""The three-valued verdict: a failed gate makes it inconclusive whatever the comparison says."""

from __future__ import annotations

import pytest

from iclr26.common.experiment import Outcome
from iclr26.common.verdict import HELD, INCONCLUSIVE, NOT_HELD, Gate, Verdict, status_of


def _decide(gates, held):
    return Verdict.decide(gates, held=held, evidence={"x": 1}, measurement="gap +0.1")


def test_gates_decide_before_the_comparison():
    ok, bad = Gate("learned", True, {"acc": 0.9}), Gate("metric_separates", False, {"trivial": 0.0})
    assert _decide([ok], True).status == HELD
    assert _decide([ok], False).status == NOT_HELD
    for held in (True, False):
        v = _decide([ok, bad], held)
        assert v.status == INCONCLUSIVE and v.failed_gates == ("metric_separates",) and not v.held
        assert v.measurement == "gap +0.1; gate failed: metric_separates"
    v = _decide([ok, bad], True)
    assert v.evidence["gates"] == {
        "learned": {"passed": True, "acc": 0.9},
        "metric_separates": {"passed": False, "trivial": 0.0},
    }


def test_malformed_verdicts_are_refused():
    with pytest.raises(ValueError, match="unique"):
        _decide([Gate("a", True), Gate("a", True)], True)
    with pytest.raises(ValueError, match="'gates'"):
        Verdict.decide([], held=True, evidence={"gates": 1}, measurement="m")
    with pytest.raises(ValueError, match="failed gate"):
        Verdict(INCONCLUSIVE, {}, "m")
    with pytest.raises(ValueError, match="one of"):
        Verdict("maybe", {}, "m")


def test_outcome_carries_the_verdict_and_old_records_read_as_two_values():
    v = _decide([Gate("g", False)], True)
    out = Outcome.of(v, metrics={"m": 1})
    assert out.claim_held == INCONCLUSIVE and out.failed_gates == ("g",) and out.evidence == v.evidence
    assert (status_of(True), status_of(False), status_of("inconclusive")) == (HELD, NOT_HELD, INCONCLUSIVE)
    with pytest.raises(ValueError):
        status_of(None)
