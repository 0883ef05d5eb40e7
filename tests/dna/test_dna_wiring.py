"""Wiring: each arm differs from its baseline in what the paper changes, and nothing else.

DNA vs direct: DNA decomposes (one request per clause plus the quantifiers) and may use the library's abstractions;
direct sends the whole statement without them. DNA vs decomposition only: the same requests, the abstractions
allowed or not. DNA vs the placebo library: the same names, signatures and documentation, definitions that differ.
"""

from __future__ import annotations

from dna_doubles import Scripted, gold_answer

from iclr26.dna.corpus import CONCEPTS, Clause, gold_library, make_item
from iclr26.dna.dsl import And, Not, Or, expand
from iclr26.dna.experiment import LibraryResult, as_library
from iclr26.dna.pipeline import formalize
from iclr26.dna.validator import Validator

ITEM = make_item("w", [Clause("onLine", ("a", "l")), Clause("segment", ("a", "b", "l"))],
                 [Clause("notBetween", ("a", "d", "b"))], "test")  # fmt: skip


def requests(arm: str) -> list:
    t = Scripted(lambda r: gold_answer(r, {ITEM.informal: ITEM.formal}))
    formalize([ITEM.informal], arm, t, gold_library(), Validator(), budget=[ITEM.n_clauses + 1])
    return t.requests


def test_dna_decomposes_with_the_library_and_direct_translates_whole_without_it():
    dna, direct, decompose = requests("dna"), requests("direct"), requests("decompose")
    assert [r.kind for r in direct] == ["statement"] and not direct[0].library
    assert sorted(r.kind for r in dna) == ["binders"] + ["clause"] * ITEM.n_clauses
    assert all(r.library for r in dna)
    # decomposition only: the very same requests, abstractions not allowed
    assert [(r.kind, r.text) for r in decompose] == [(r.kind, r.text) for r in dna]
    assert not any(r.library for r in decompose)


def test_the_placebo_library_keeps_names_and_signatures_and_changes_every_definition():
    gold = gold_library()
    learned = LibraryResult([gold.definitions[n].text() for n in gold.definitions], list(gold.definitions), {}, 0,
                            0, len(gold.definitions))  # fmt: skip
    real, placebo = as_library(learned), as_library(learned, placebo=True)
    v = Validator()
    assert list(placebo.definitions) == list(real.definitions)
    for name, d in real.definitions.items():
        p = placebo.definitions[name]
        assert p.params == d.params and placebo.phrases[name] == real.phrases[name] == CONCEPTS[name].phrase
        a, b = expand(d.body, real.definitions), expand(p.body, placebo.definitions)
        differ = Or((And((a, Not(b))), And((Not(a), b))))  # some arguments satisfy one body and not the other
        assert v.satisfiable(differ, d.params, {})
