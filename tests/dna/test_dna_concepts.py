"""Phase I: concept extraction, the concept dependency graph (CDG) and the abstraction library."""

from __future__ import annotations

import pytest

from iclr26.dna.concepts import CDG, ConceptAnalysis, CycleError, Library, build_cdg, extract_concepts
from iclr26.dna.corpus import CONCEPTS, LITERALS, clause_phrases, concept_analysis, gold_library
from iclr26.dna.dsl import parse_definition


def _analyser(table: dict[str, tuple[str, ...] | None]):
    """Hand-made analyses: a tuple of dependencies, or None for a concept the DSL cannot express."""
    calls: list[str] = []

    def analyse(name: str) -> ConceptAnalysis:
        calls.append(name)
        deps = table[name]
        if deps is None:
            return ConceptAnalysis("impossible", analysis="needs angles")
        return ConceptAnalysis("needs_dependencies" if deps else "directly_expressible", deps)

    return analyse, calls


def test_cdg_queue_enqueues_dependencies_and_orders_leaves_first():
    # square -> rectangle -> (quad, right); quad -> segment; right is impossible; 'segment' is never a seed
    table = {"square": ("rectangle",), "rectangle": ("quad", "right"), "quad": ("segment",), "segment": (),
             "right": None, "circle": ()}  # fmt: skip
    analyse, calls = _analyser(table)
    g = build_cdg(["square", "circle"], analyse)
    # breadth-first: seeds first, then their dependencies in discovery order; each concept analysed once
    assert calls == ["square", "circle", "rectangle", "quad", "right", "segment"]
    order = g.topological_order()
    assert order == ["circle", "right", "segment", "quad", "rectangle", "square"]
    for c, d in g.edges():
        assert order.index(d) < order.index(c)
    # longest chain square -> rectangle -> quad -> segment: 4 nodes
    assert g.stats() == {"size": 6, "edges": 4, "depth": 4, "directly_expressible": 2, "needs_dependencies": 3,
                         "impossible": 1}  # fmt: skip


def test_cdg_cycle_is_reported_with_its_path():
    analyse, _ = _analyser({"a": ("b",), "b": ("c",), "c": ("a",), "d": ()})
    with pytest.raises(CycleError, match="cycle: a -> b -> c -> a") as err:
        build_cdg(["d", "a"], analyse)
    assert err.value.cycle == ("a", "b", "c", "a")
    g = CDG({"x": ConceptAnalysis("needs_dependencies", ("x",))})
    with pytest.raises(CycleError, match="x -> x"):
        g.topological_order()


def test_concept_analysis_checks_status_consistency():
    with pytest.raises(ValueError, match="status must be one of"):
        ConceptAnalysis("maybe")
    with pytest.raises(ValueError, match="must list its concept_dependencies"):
        ConceptAnalysis("needs_dependencies")
    with pytest.raises(ValueError, match="has no concept_dependencies"):
        ConceptAnalysis("directly_expressible", ("x",))


def test_catalogue_cdg_depth_and_order():
    g = build_cdg(list(CONCEPTS), concept_analysis)
    # inscribed -> formTriangle -> segment is the longest chain; diameter -> chord
    assert g.depth() == 3 and g.stats()["edges"] == 3
    order = g.topological_order()
    assert order.index("segment") < order.index("formTriangle") < order.index("inscribed")
    assert order.index("chord") < order.index("diameter")


def test_extraction_counts_statements_and_drops_what_the_dsl_has():
    texts = ["Let a be a point. Assume a lies on l; b and c are on opposite sides of l. Then a lies outside k.",
             "Let x be a point. Assume x and y are on opposite sides of m. Then x lies on m."]  # fmt: skip
    got = extract_concepts(texts, clause_phrases(), in_dsl=LITERALS)
    assert got == {"oppositeSides": 2, "outside": 1}
    assert extract_concepts(texts, clause_phrases(), in_dsl=LITERALS, min_count=2) == {"oppositeSides": 2}


def test_library_rejects_ill_typed_and_duplicate_definitions_and_documents():
    lib = Library()
    seg = parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l /\\ a != b")
    lib.add(seg, "{0} and {1} are two distinct points of {2}")
    with pytest.raises(ValueError, match="already in the library"):
        lib.add(seg)
    with pytest.raises(ValueError, match="argument 1 of 'onLine' must be a Point"):
        lib.add(parse_definition("def bad (l : Line) := onLine l l"))
    assert lib.docs() == ["segment a:Point b:Point l:Line -- a and b are two distinct points of l"]


def test_reuse_ratio_hand_computed():
    lib = Library()
    lib.add(parse_definition("def segment (a b : Point) (l : Line) := onLine a l /\\ onLine b l /\\ a != b"))
    lib.add(parse_definition("def two (a b c : Point) (l : Line) := segment a b l /\\ segment b c l"))
    # written: 3 + 2 = 5 literals; expanded: 3 + 6 = 9
    assert lib.reuse_ratio() == pytest.approx(9 / 5)
    # the gold library: formTriangle (6 written, 12 expanded) and inscribed (4 written, 15 expanded) reuse
    assert gold_library().reuse_ratio() > 1.5
