"""The fact language: printing and parsing, and the two corpus rules against hand-expanded products."""

from __future__ import annotations

import pytest

from iclr26.dexploration.logic import Fact, ParseError, fact, parse_fact, poly, rule_add, rule_mul


def test_tokens_round_trip_and_canonical_order():
    f = Fact(poly({("y",): -3, ("x", "y"): 1, ("x",): 12}), "<=", -7)
    # degree-2 monomials first, then x before y; coefficient 1 omitted; 12 written digit by digit.
    assert f.tokens() == ["x", "*", "y", "+", "1", "2", "*", "x", "-", "3", "*", "y", "<=", "-", "7"]
    assert parse_fact(f.tokens()) == f


def test_parser_moves_constants_right_and_sums_repeated_monomials():
    # x + 2 + y * x - x <= 5  is  x*y <= 3
    assert fact("x + 2 + y * x - x <= 5") == Fact(poly({("x", "y"): 1}), "<=", 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [("x + y", "exactly one relation"), ("<= 3", "left-hand side is empty"), ("x y <= 3", "expected \\+ or -"),
     ("x + <= 3", "a term is missing"), ("x <= 0 3", "leading zero"), ("x <= 3 y", "unexpected token"),
     ("q <= 3", "expected a variable")],
)  # fmt: skip
def test_parser_names_the_problem(text, message):
    with pytest.raises(ParseError, match=message):
        fact(text)


def test_rule_add_and_sub_hand_values():
    # (x <= 2) + (-y <= -1): x - y <= 1
    assert rule_add(fact("x <= 2"), fact("- y <= - 1")) == fact("x - y <= 1")
    # (x - y <= 1) - (x + y = 3): -2y <= -2
    assert rule_add(fact("x - y <= 1"), fact("x + y = 3"), scale=-1) == fact("- 2 * y <= - 2")
    with pytest.raises(ValueError, match="only an equation"):
        rule_add(fact("x <= 1"), fact("y <= 1"), scale=-1)


def test_rule_mul_hand_expansion():
    # x <= 2 and -y <= -1: (2 - x)(-1 + y) >= 0  =>  -2 + 2y + x - xy >= 0  =>  xy - x - 2y <= -2
    assert rule_mul(fact("x <= 2"), fact("- y <= - 1")) == fact("x * y - x - 2 * y <= - 2")
    with pytest.raises(ValueError, match="two inequalities"):
        rule_mul(fact("x = 2"), fact("y <= 1"))


def test_holds_at_and_coq_text():
    f = fact("x * y - x - 2 * y <= - 2")
    # at (2, 1): 2 - 2 - 2 = -2 <= -2 holds; at (0, 0): 0 <= -2 fails
    assert f.holds_at({"x": 2, "y": 1}) and not f.holds_at({"x": 0, "y": 0})
    assert f.coq() == "(1) * x * y + (-1) * x + (-2) * y <= (-2)"
