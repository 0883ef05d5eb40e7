"""The generated corpus and the ``data`` file format."""

from __future__ import annotations

import json

import pytest

from iclr26.common.seeding import numpy_rng
from iclr26.dna.corpus import CONCEPTS, Clause, generate_corpus, gold_library, load_jsonl, make_item, save_jsonl
from iclr26.dna.validator import Validator


def test_make_item_writes_informal_and_gold_formal_text():
    it = make_item("x", [Clause("segment", ("a", "b", "l")), Clause("centre", ("o", "k"))],
                   [Clause("notOnLine", ("o", "l"))], "test")  # fmt: skip
    assert it.informal == ("Let a, b, o be points, l be a line, k be a circle. Assume a and b are two distinct "
                           "points of l; o is the centre of k. Then o does not lie on l.")  # fmt: skip
    assert it.formal == ("forall (a b o : Point) (l : Line) (k : Circle), segment a b l /\\ centre o k -> "
                         "~ onLine o l")  # fmt: skip
    assert it.n_clauses == 3 and it.concepts == ("segment",)


def test_generated_statements_pass_the_validator_and_respect_the_concept_split():
    v = Validator()
    seen = [c for c in CONCEPTS if c not in ("outside", "diameter")]
    items = generate_corpus(numpy_rng(0), 12, min_clauses=2, max_clauses=5, concepts=seen, concept_prob=0.7,
                            validator=v)  # fmt: skip
    lib = gold_library().definitions
    assert all(v.validate(it.formal, lib, expected_binders=it.binders).ok for it in items)
    assert all(2 <= it.n_clauses <= 5 for it in items)
    assert not any({"outside", "diameter"} & set(it.concepts) for it in items)
    assert any(it.concepts for it in items)
    again = generate_corpus(numpy_rng(0), 12, min_clauses=2, max_clauses=5, concepts=seen, concept_prob=0.7,
                            validator=v)  # fmt: skip
    assert [it.formal for it in again] == [it.formal for it in items]


def test_data_file_round_trips(tmp_path):
    items = generate_corpus(numpy_rng(1), 3, min_clauses=2, max_clauses=4, concepts=list(CONCEPTS), concept_prob=0.5)
    path = tmp_path / "data.jsonl"
    save_jsonl(items, path)
    back = load_jsonl(path)
    assert [(b.id, b.informal, b.formal, b.binders, b.premises, b.conclusions) for b in back] == [
        (a.id, a.informal, a.formal, a.binders, a.premises, a.conclusions) for a in items
    ]


GOOD = {"id": "g1", "informal": "Let a be a point, l be a line. Assume a lies on l. Then a lies on l.",
        "formal": "forall (a : Point) (l : Line), onLine a l -> onLine a l"}  # fmt: skip


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ("{oops", "line 2: not JSON"),
        ({**GOOD, "formal": ""}, "line 2: field 'formal' must be a non-empty string"),
        ({k: v for k, v in GOOD.items() if k != "id"}, "line 2: field 'id' must be a non-empty string"),
        ({**GOOD, "informal": "a lies on l"}, "line 2: field 'informal': expected 'Let <variables>"),
        (
            {**GOOD, "informal": GOOD["informal"].replace("lies on", "is near")},
            "line 2: field 'informal': clause 'a is near l' matches no known template",
        ),
        (
            {**GOOD, "formal": "forall (a : Point) (l : Line), onLine l a -> onLine a l"},
            "line 2: field 'formal': argument 1 of 'onLine' must be a Point",
        ),
        ({**GOOD, "formal": "forall (a : Point) (l : Line), onLine a l ->"}, "line 2: field 'formal': unexpected"),
        (
            {**GOOD, "formal": "forall (b : Point) (l : Line), onLine b l -> onLine b l"},
            "line 2: field 'formal': binders .* differ from the informal statement's",
        ),
    ],
)
def test_data_loader_names_line_and_field(tmp_path, row, match):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + (row if isinstance(row, str) else json.dumps(row)) + "\n")
    with pytest.raises(ValueError, match=match):
        load_jsonl(path)


def test_data_loader_missing_and_empty_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_jsonl(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no statements"):
        load_jsonl(tmp_path / "empty.jsonl")
