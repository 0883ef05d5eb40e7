"""Phase II: clause trees (decompose/compose), the arms' call budgets, the refine loop, and Phase I's formalization."""

from __future__ import annotations

import pytest
from dna_doubles import Scripted, gold_answer

from iclr26.dna.concepts import Library
from iclr26.dna.corpus import Clause, gold_library, make_item
from iclr26.dna.dsl import parse_statement
from iclr26.dna.pipeline import (
    ClauseNode,
    ClauseTree,
    compose,
    compose_text,
    decompose,
    decompose_informal,
    formalize,
    learn_library,
    parse_clause,
)
from iclr26.dna.validator import Validator

ITEM = make_item("t", [Clause("formTriangle", ("a", "b", "c", "l", "m", "n")), Clause("onLine", ("d", "l"))],
                 [Clause("notBetween", ("a", "d", "b"))], "test")  # fmt: skip


@pytest.fixture(scope="module")
def validator():
    return Validator()


def _lit(text: str) -> ClauseNode:
    from iclr26.dna.dsl import parse_formula

    return ClauseNode("lit", parse_formula(text))


TREES = [
    ClauseTree((("a", "Point"), ("l", "Line")), (_lit("onLine a l"),), (_lit("~ onLine a l"),)),
    ClauseTree(
        (("a", "Point"), ("b", "Point"), ("l", "Line")),
        (_lit("a != b"), ClauseNode("or", None, (_lit("onLine a l"), ClauseNode("and", None, (
            _lit("onLine b l"), _lit("~ sameSide a b l")))))),
        (_lit("a = b"), ClauseNode("or", None, (_lit("between a b a"), _lit("segment a b l")))),
    ),
]  # fmt: skip


@pytest.mark.parametrize("tree", TREES)
def test_decompose_after_compose_is_the_identity_on_well_formed_trees(tree):
    assert decompose(compose(tree)) == tree


def test_compose_after_decompose_is_the_identity_on_statements():
    st = parse_statement("forall (a b : Point) (l : Line), a != b /\\ (onLine a l \\/ onLine b l) -> ~ (a = b \\/ "
                         "sameSide a b l) /\\ onLine a l")  # fmt: skip
    assert compose(decompose(st)) == st
    assert len(decompose(st).premises) == 2 and len(decompose(st).conclusions) == 2


def test_malformed_trees_are_rejected():
    with pytest.raises(ValueError, match="needs at least 2 children"):
        compose(ClauseTree((("a", "Point"),), (ClauseNode("and", None, (_lit("a = a"),)),), (_lit("a = a"),)))
    with pytest.raises(ValueError, match="at least one premise"):
        compose(ClauseTree((("a", "Point"),), (), (_lit("a = a"),)))


def test_informal_decomposition_recovers_binders_and_clauses():
    tree = decompose_informal(ITEM.informal)
    assert tree.binders_text == "a, b, c, d be points, l, m, n be lines"
    assert tree.binders == ITEM.binders
    assert tree.premises == ("a, b, c form a triangle with sides l, m, n", "d lies on l")
    assert tree.conclusions == ("d is not between a and b",)
    assert parse_clause(tree.premises[0]) == ITEM.premises[0]
    with pytest.raises(ValueError, match="matches no known template"):
        parse_clause("a is near b")
    with pytest.raises(ValueError, match="expected 'Let <variables>"):
        decompose_informal("Suppose a lies on l.")


def test_compose_text_keeps_each_clause_in_its_scope():
    # clause 1 is a disjunction: without its parentheses it would swallow clause 2
    got = compose_text("(a b : Point) (l : Line)", ["onLine a l \\/ onLine b l", "a != b"], ["~ sameSide a b l"])
    assert got == "forall (a b : Point) (l : Line), (onLine a l \\/ onLine b l) /\\ a != b -> ~ sameSide a b l"


@pytest.mark.parametrize("arm", ["direct", "abstract", "decompose", "dna"])
def test_a_gold_translator_gives_equivalent_outputs_in_one_pass(arm, validator):
    lib = gold_library()
    t = Scripted(lambda r: gold_answer(r, {ITEM.informal: ITEM.formal}))
    out = formalize([ITEM.informal], arm, t, lib, validator, budget=[6])[0]
    one_pass = 1 if arm in ("direct", "abstract") else 1 + ITEM.n_clauses  # binders + 3 clauses
    assert out.calls == one_pass and out.rounds == 0
    assert out.prompt_tokens == 3 * one_pass and out.completion_tokens == 2 * one_pass
    defs = lib.definitions if arm in ("abstract", "dna") else {}
    assert validator.equivalent(out.text, ITEM.formal, defs, lib.definitions)
    assert all(r.library == (arm in ("abstract", "dna")) for r in t.requests)


def test_dna_refines_the_blamed_clause_with_feedback(validator):
    lib = gold_library()

    def answer(r):
        if r.kind == "clause" and r.text == "d lies on l" and r.sample == 0:
            return "onLine l d"  # ill-typed first attempt
        return gold_answer(r)

    t = Scripted(answer)
    out = formalize([ITEM.informal], "dna", t, lib, validator, budget=[6])[0]
    assert out.calls == 5 and out.rounds == 1
    redo = t.requests[4]
    assert redo.text == "d lies on l" and redo.sample == 1 and redo.previous == "onLine l d"
    assert "argument 1 of 'onLine' must be a Point" in redo.feedback
    assert validator.equivalent(out.text, ITEM.formal, lib.definitions)


def test_dna_refines_a_contradiction_and_stops_at_the_budget(validator):
    lib = gold_library()
    t = Scripted(lambda r: "a = b" if r.kind == "clause" and r.text == "d lies on l" else gold_answer(r))
    # a = b contradicts the triangle (a != b): every premise is blamed; budget 4 leaves no call for a repair
    out = formalize([ITEM.informal], "dna", t, lib, validator, budget=[4])[0]
    assert out.calls == 4 and out.validator_stage == "contradiction"
    t2 = Scripted(t.answer)
    out2 = formalize([ITEM.informal], "dna", t2, lib, validator, budget=[7])[0]
    assert out2.calls == 7  # 4 for the pass, then the 2 premises, then 1 call left for the next round
    assert "contradict" in t2.requests[4].feedback


def test_direct_resamples_until_it_compiles_within_the_budget(validator):
    t = Scripted(lambda r: "not a statement" if r.sample < 2 else gold_answer(r, {ITEM.informal: ITEM.formal}))
    out = formalize([ITEM.informal], "direct", t, Library(), validator, budget=[5])[0]
    assert out.calls == 3 and [r.sample for r in t.requests] == [0, 1, 2]
    t2 = Scripted(lambda r: "not a statement")
    assert formalize([ITEM.informal], "direct", t2, Library(), validator, budget=[5])[0].calls == 5


def test_budget_below_one_pass_is_an_error(validator):
    with pytest.raises(ValueError, match="budget 2 is below the 4 calls of one pass"):
        formalize([ITEM.informal], "dna", Scripted(gold_answer), gold_library(), validator, budget=[2])
    with pytest.raises(ValueError, match="arm must be one of"):
        formalize([ITEM.informal], "best", Scripted(gold_answer), gold_library(), validator, budget=[9])


def test_learn_library_with_a_gold_translator_recovers_the_gold_definitions(validator):
    from iclr26.dna.dsl import expand

    order = ["segment", "chord", "formTriangle", "diameter"]
    t = Scripted(gold_answer)
    lib, report = learn_library(order, t, validator, repair_rounds=1)
    assert report.learned == tuple(order) and report.dropped == {}
    assert report.calls == 3 + 3 + 6 + 3  # one call per definition clause
    gold = gold_library().definitions
    for name in order:
        d = lib.definitions[name]
        assert expand(d.body, lib.definitions) == expand(gold[name].body, gold)
    # a concept whose clauses never compile is dropped after the repair rounds
    lib2, report2 = learn_library(["segment"], Scripted(lambda r: "???"), validator, repair_rounds=1)
    assert len(lib2) == 0 and "does not compile" in report2.dropped["segment"] and report2.calls == 6
