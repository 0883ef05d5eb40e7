"""EuclidDSL: parsing, canonical text, type checking and abstraction expansion."""

from __future__ import annotations

import pytest

from iclr26.dna.dsl import (
    And,
    Atom,
    Definition,
    DSLSyntaxError,
    Not,
    Or,
    expand,
    parse_definition,
    parse_formula,
    parse_statement,
    render,
    statement_type_errors,
    type_errors,
)

SEGMENT = parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l /\\ a != b")


def test_parse_builds_the_expected_tree_and_render_round_trips():
    st = parse_statement("forall (a b c : Point) (l : Line), onLine a l /\\ ~ onLine c l -> between a b c \\/ a = c")
    assert st.binders == (("a", "Point"), ("b", "Point"), ("c", "Point"), ("l", "Line"))
    assert st.premises == And((Atom("onLine", ("a", "l")), Not(Atom("onLine", ("c", "l")))))
    assert st.conclusion == Or((Atom("between", ("a", "b", "c")), Atom("=", ("a", "c"))))
    assert parse_statement(st.text()) == st


def test_precedence_and_parentheses():
    # /\ binds tighter than \/ ; a parenthesised conjunction inside a conjunction is flattened
    assert parse_formula("onLine a l \\/ onLine b l /\\ onLine c l") == Or(
        (Atom("onLine", ("a", "l")), And((Atom("onLine", ("b", "l")), Atom("onLine", ("c", "l")))))
    )
    assert parse_formula("(onLine a l /\\ onLine b l) /\\ onLine c l") == parse_formula(
        "onLine a l /\\ onLine b l /\\ onLine c l"
    )
    f = parse_formula("~ (onLine a l \\/ a != b)")
    assert f == Not(Or((Atom("onLine", ("a", "l")), Not(Atom("=", ("a", "b"))))))
    assert parse_formula(render(f)) == f


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("forall (a : Point), onLine a l ) -> a = a", "unexpected ')' at line 1, column 32; expected one of '->'"),
        ("forall (a : Point), onLine a l ->", "unexpected end of input"),
        ("forall (a : Point), a # b -> a = a", "unexpected character '#'"),
        ("forall a : Point, a = a -> a = a", "expected one of '('"),
    ],
)
def test_syntax_errors_say_where_and_what(text, fragment):
    with pytest.raises(DSLSyntaxError, match=None) as err:
        parse_statement(text)
    assert fragment in str(err.value)


def test_type_errors_name_the_problem():
    env = {"a": "Point", "l": "Line", "k": "Circle"}
    assert type_errors(parse_formula("onLine a l"), env, {}) == []
    assert type_errors(parse_formula("onLine l a"), env, {}) == [
        "argument 1 of 'onLine' must be a Point, but 'l' is a Line",
        "argument 2 of 'onLine' must be a Line, but 'a' is a Point",
    ]
    assert type_errors(parse_formula("onLine a"), env, {}) == ["'onLine' takes 2 arguments (Point Line), got 1 in "
                                                                "'onLine a'"]  # fmt: skip
    assert "unknown predicate 'segment'" in type_errors(parse_formula("segment a a l"), env, {})[0]
    assert type_errors(parse_formula("segment a a l"), env, {"segment": SEGMENT}) == []
    assert type_errors(parse_formula("onLine x l"), env, {}) == ["unbound variable 'x' in 'onLine x l'"]
    assert type_errors(parse_formula("a = l"), env, {}) == ["'a = l' compares a Point with a Line"]
    st = parse_statement("forall (a a : Point) (l : Line), onLine a l -> onLine a l")
    assert statement_type_errors(st, {}) == ["variable 'a' is bound twice"]


def test_expand_substitutes_parameters_recursively():
    tri = parse_definition("def two (a b c : Point) (l : Line) := segment a b l /\\ segment b c l")
    lib = {"segment": SEGMENT, "two": tri}
    # two p q r m = segment p q m /\ segment q r m = (onLine p m /\ onLine q m /\ p != q) /\ (onLine q m ...)
    got = expand(parse_formula("two p q r m"), lib)
    assert got == parse_formula("onLine p m /\\ onLine q m /\\ p != q /\\ onLine q m /\\ onLine r m /\\ q != r")
    with pytest.raises(ValueError, match="takes 3 arguments"):
        expand(parse_formula("segment p q"), lib)
    loop = {"f": Definition("f", (("a", "Point"),), Atom("g", ("a",))),
            "g": Definition("g", (("a", "Point"),), Atom("f", ("a",)))}  # fmt: skip
    with pytest.raises(ValueError, match="cycle"):
        expand(Atom("f", ("x",)), loop)
