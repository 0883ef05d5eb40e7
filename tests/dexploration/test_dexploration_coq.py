"""Certificates compiled by coqc: a trajectory's file compiles, a wrong step is rejected, batches isolate it.

These tests need ``coqc`` (Coq 8.16, installed by ``make install``); they fail, never skip, without it.
"""

from __future__ import annotations

import shutil

import pytest

from iclr26.dexploration.coq import CoqCertifier, CoqNotFound, bare_coq, coq_file, coqc_path, run_coqc
from iclr26.dexploration.env import Entry, ExplorationEnv, Statement
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact
from iclr26.dexploration.transform import exploratory_transformation
from tests.dexploration.test_dexploration_transform import PROOF


@pytest.fixture(autouse=True)
def _coqc_is_installed():
    assert shutil.which("coqc"), "coqc is missing: run `make install` (apt-get install -y coq) before the tests"


def _explored() -> Statement:
    """The hand-written proof's trajectory replayed through the checked environment."""
    env = ExplorationEnv(Z3Kernel(mode="products"))
    for action in exploratory_transformation(PROOF):
        res = env.step(action)
        assert res.accepted, res.reason
    assert res.statement is not None
    return res.statement


def _wrong() -> Statement:
    binders = (Entry("var", "x"), Entry("var", "y"), Entry("hyp", "h1", fact("x <= 2")),
               Entry("hyp", "h2", fact("- y <= - 1")))  # fmt: skip
    step = Entry("step", "h3", fact("x - y <= 0"), ("h1", "h2"))  # false at x = 2, y = 1
    return Statement(binders, (step,), step.fact)


def test_coqc_path_explains_how_to_install(monkeypatch):
    assert coqc_path()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CoqNotFound, match="make install"):
        coqc_path()


def test_trajectory_certificate_compiles_and_wrong_step_is_rejected():
    good = _explored()
    text = coq_file([good])
    # Facts are named in acceptance order: h1 = x <= 2, h2 = 2x <= 4 (deduced before y), h3 = -y <= -1, h4 the
    # product. The kernel's unsat core shows U = h4 + 2 h1 + h3 directly, so h2 and h5 are not in the proof; Γ keeps
    # the interleaved binder order.
    assert "forall (x : Z) (h1 : (1) * x <= (2)) (y : Z) (h3 : (-1) * y <= (-1))," in text
    assert "assert (h4 : (1) * x * y + (-1) * x + (-2) * y <= (-2)) by (first [clear - h1 h3;" in text
    assert "exact h6.\nQed." in text
    assert run_coqc(text).ok
    bad = run_coqc(coq_file([_wrong()]))
    assert not bad.ok and "Error" in bad.output


def _equation_product() -> Statement:
    """A step whose kernel certificate multiplies both bounds of an equation (signs +1 and -1)."""
    env = ExplorationEnv(Z3Kernel(mode="products"))
    # (2 - x)(x + y - 3) = 0 from x <= 2 and x + y = 3: -x^2 - xy + 5x + 2y = 6
    for a in ("INTRO x ;", "INTRO y ;", "HYP x <= 2 ;", "HYP x + y = 3 ;",
              "DEDUCE - x * x - x * y + 5 * x + 2 * y = 6 ;", "SUBMIT ;"):  # fmt: skip
        res = env.step_tokens(a.split())
        assert res.accepted, (a, res.reason)
    assert res.statement is not None
    assert -1 in [sign for pair in res.statement.steps[0].products for _, sign in pair]
    return res.statement


def test_certifier_isolates_the_wrong_statement_in_a_batch():
    good = _explored()
    assert CoqCertifier().certify([good, _wrong(), _equation_product(), good]) == [True, False, True, True]
    assert CoqCertifier().certify([]) == []


def test_bare_provers_lia_fails_where_nia_multiplies_hypotheses():
    binders = (Entry("var", "x"), Entry("var", "y"), Entry("hyp", "h1", fact("x <= 2")),
               Entry("hyp", "h2", fact("- y <= - 1")))  # fmt: skip
    linear = Statement(binders, (), fact("x - y <= 1"))
    product = Statement(binders, (), fact("x * y - x - 2 * y <= - 2"))  # needs (2 - x)(y - 1) >= 0
    res = bare_coq([linear, product])
    assert res == {"lia": [True, False], "nia": [True, True]}
