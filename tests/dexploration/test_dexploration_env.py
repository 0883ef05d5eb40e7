"""The exploration environment: each action's acceptance and rejection on hand-made contexts."""

from __future__ import annotations

import pytest

from iclr26.dexploration.env import Action, ExplorationEnv, MalformedAction, parse_action
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact


def _env(check: bool = True) -> ExplorationEnv:
    env = ExplorationEnv(Z3Kernel(mode="products"), check=check)
    for a in ("INTRO x ;", "INTRO y ;", "HYP x <= 2 ;", "HYP - y <= - 1 ;"):
        assert env.step_tokens(a.split()).accepted
    return env


def test_deduce_accepts_entailed_facts_with_their_premises():
    env = _env()
    # x <= 2 and y >= 1 give x - y <= 1 (sum); the unsat core names both hypotheses.
    res = env.deduce(fact("x - y <= 1"))
    assert res.accepted and env.entries[-1].premises == ("h1", "h2")
    # (2 - x)(y - 1) >= 0 gives x*y - x - 2*y <= -2 (non-linear, still decided)
    assert env.deduce(fact("x * y - x - 2 * y <= - 2")).accepted


def test_deduce_rejects_what_does_not_follow():
    env = _env()
    # x = 2, y = 1 satisfies the context with x - y = 1 > 0
    res = env.deduce(fact("x - y <= 0"))
    assert not res.accepted and res.reason == "not_entailed" and env.rejections["not_entailed"] == 1
    assert len(env.entries) == 4  # the state is unchanged
    assert env.deduce(fact("z <= 1")).reason == "unbound_variable"
    assert env.deduce(fact("x <= 2")).reason == "duplicate_fact"


def test_explosion_check_rejects_contradictory_hypotheses():
    env = _env()
    res = env.introduce_hypothesis(fact("x = 5"))  # x <= 2 and x = 5 have no solution
    assert not res.accepted and res.reason == "explosion"
    assert env.introduce_hypothesis(fact("x = 1")).accepted


def test_introduce_rejects_duplicates_and_unknown_names():
    env = _env()
    assert env.step_tokens("INTRO x ;".split()).reason == "duplicate_variable"
    assert env.step_tokens("INTRO q ;".split()).reason == "bad_variable"
    assert env.step_tokens("INTRO z ;".split()).accepted


@pytest.mark.parametrize(
    ("tokens", "reason"),
    [(";", "empty"), ("FOO x ;", "unknown_keyword"), ("DEDUCE x + ;", "bad_fact"), ("SUBMIT x ;", "trailing_tokens"),
     ("INTRO x y ;", "bad_variable"), ("HYP x <= <= 1 ;", "bad_fact")],
)  # fmt: skip
def test_malformed_actions_are_counted_never_raised(tokens, reason):
    env = _env()
    res = env.step_tokens(tokens.split())
    assert not res.accepted and res.reason == reason and env.rejections[reason] == 1
    with pytest.raises(MalformedAction, match=reason):
        parse_action(tokens.split())


def test_submit_outputs_the_statement_with_the_steps_it_needs():
    env = _env()
    assert env.submit().reason == "nothing_deduced"
    env.deduce(fact("2 * x <= 4"))  # h3, from h1 only
    env.deduce(fact("x * y - x - 2 * y <= - 2"))  # h4, from h1 and h2
    env.deduce(fact("x * y + x - 3 * y <= 1"))  # h5 = h4 + (x - y <= 1): uses h4 and the hypotheses
    res = env.submit()
    assert res.done and res.statement is not None
    st = res.statement
    assert st.conclusion == fact("x * y + x - 3 * y <= 1")
    assert [b.name for b in st.binders] == ["x", "y", "h1", "h2"]
    assert "h3" not in [s.name for s in st.steps] and st.steps[-1].name == "h5"
    assert st.dag_depth() == 2  # h4 (depth 1) -> h5 (depth 2)


def test_unchecked_control_accepts_false_steps():
    env = _env(check=False)
    assert env.deduce(fact("x - y <= 0")).accepted  # false, but the kernel is off
    assert env.introduce_hypothesis(fact("x = 5")).accepted  # contradictory, accepted


def test_action_tokens_round_trip():
    a = Action("deduce", fact=fact("x - y <= 1"))
    assert parse_action(a.tokens()) == a
    assert parse_action(["SUBMIT", ";"]) == Action("submit")
