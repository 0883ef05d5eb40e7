"""The symbolic validator's verdicts and the z3 equivalence checker on hand-written statements."""

from __future__ import annotations

import pytest

from iclr26.dna.dsl import parse_definition
from iclr26.dna.validator import Validator

LIB = {"segment": parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l /\\ a != b")}


@pytest.fixture(scope="module")
def v():
    return Validator()


def test_a_consistent_nontrivial_statement_passes(v):
    got = v.validate("forall (a b c : Point) (l : Line), segment a b l /\\ ~ onLine c l -> ~ between a c b", LIB)
    assert got.ok and got.stage == "ok" and got.messages == ()


@pytest.mark.parametrize(
    ("text", "stage", "message"),
    [
        # between a b a needs a != a (System E: between implies distinct ends)
        ("forall (a b : Point), between a b a -> a = b", "contradiction", "premises contradict"),
        # sameSide a b l excludes onLine a l, which segment a b l asserts
        ("forall (a b : Point) (l : Line), segment a b l /\\ sameSide a b l -> a = b", "contradiction", "contradict"),
        (
            "forall (a : Point) (l : Line), onLine a l -> onLine a l \\/ ~ onLine a l",
            "trivial",
            "conclusion is trivial",
        ),
        # the conclusion follows from the axioms alone: a point inside a circle is not on it
        ("forall (a : Point) (k : Circle), centre a k -> ~ (inside a k /\\ onCircle a k)", "trivial", "trivial"),
        ("forall (a : Point) (l : Line), onLine l a -> onLine a l", "types", "argument 1 of 'onLine' must be a Point"),
        ("forall (a : Point) (l : Line), segmnt a a l -> onLine a l", "types", "unknown predicate 'segmnt'"),
        ("forall (a : Point) (l : Line), onLine a l -> onLine a l )", "syntax", "syntax error"),
    ],
)
def test_validator_rejects_with_a_message(v, text, stage, message):
    got = v.validate(text, LIB)
    assert not got.ok and got.stage == stage
    assert any(message in m for m in got.messages), got.messages


def test_validator_blames_the_ill_typed_clause(v):
    got = v.validate("forall (a b : Point) (l : Line), onLine a l /\\ onLine l b -> a != b", LIB)
    assert got.stage == "types" and got.blamed == (("premise", 1),)


def test_binders_must_be_those_the_informal_statement_names(v):
    got = v.validate("forall (a b : Point) (l : Line), onLine a l -> onLine b l", LIB,
                     expected_binders=[("a", "Point"), ("c", "Point"), ("l", "Line")])  # fmt: skip
    assert got.stage == "binders"
    assert got.messages == ("variable 'b' : Point is not in the informal statement",
                            "the informal statement names 'c' : Point, which is not bound")  # fmt: skip


@pytest.mark.parametrize(
    ("cand", "gold"),
    [
        # premises reordered, abstraction vs its expansion
        (
            "forall (a b : Point) (l : Line), segment a b l -> ~ sameSide a b l",
            "forall (a b : Point) (l : Line), a != b /\\ onLine b l /\\ onLine a l -> ~ sameSide a b l",
        ),
        # between is symmetric (axiom), != is symmetric
        ("forall (a b c : Point), between a b c -> a != c", "forall (a b c : Point), between c b a -> c != a"),
        # an implied premise may be added: between a b c already gives a != b
        (
            "forall (a b c : Point), between a b c /\\ a != b -> onLine c c2",
            "forall (a b c : Point), between a b c -> onLine c c2",
        ),
    ],
)
def test_known_equivalent_pairs(v, cand, gold):
    if "c2" in cand:  # the third pair with a line variable bound
        cand = cand.replace("forall (a b c : Point)", "forall (a b c : Point) (c2 : Line)")
        gold = gold.replace("forall (a b c : Point)", "forall (a b c : Point) (c2 : Line)")
    assert v.equivalent(cand, gold, LIB)


@pytest.mark.parametrize(
    ("cand", "gold"),
    [
        # a premise is missing (a != b): the premises are not equivalent
        (
            "forall (a b : Point) (l : Line), onLine a l /\\ onLine b l -> ~ sameSide a b l",
            "forall (a b : Point) (l : Line), segment a b l -> ~ sameSide a b l",
        ),
        # a different conclusion
        ("forall (a b c : Point), between a b c -> a != c", "forall (a b c : Point), between a b c -> a = c"),
        # the middle point swapped
        ("forall (a b c : Point), between b a c -> a != c", "forall (a b c : Point), between a b c -> a != c"),
        # different binders
        ("forall (a b d : Point), between a b d -> a != d", "forall (a b c : Point), between a b c -> a != c"),
        # does not parse
        ("forall (a b c : Point), between a b c -> ", "forall (a b c : Point), between a b c -> a != c"),
    ],
)
def test_known_non_equivalent_pairs(v, cand, gold):
    assert not v.equivalent(cand, gold, LIB)


def test_equivalence_uses_each_sides_library(v):
    wrong = {"segment": parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l")}
    text = "forall (a b : Point) (l : Line), segment a b l -> ~ sameSide a b l"
    assert v.equivalent(text, text, LIB, LIB)
    assert not v.equivalent(text, text, wrong, LIB)


def test_same_definition_proves_equal_bodies_and_refutes_a_weaker_one(v):
    reordered = parse_definition("def segment (a b : Point) (l : Line) := a != b /\\ onLine b l /\\ onLine a l")
    weaker = parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l")
    assert v.same_definition(reordered, {}, LIB["segment"], LIB)
    assert not v.same_definition(weaker, {}, LIB["segment"], LIB)  # a = b on l satisfies it and not the gold one


def test_ill_typed_gold_is_an_error(v):
    with pytest.raises(ValueError, match="gold: the reference formalization is ill-typed"):
        v.equivalent("forall (a b : Point), a = b -> a = b", "forall (a b : Point), onLine a b -> a = b", {})
