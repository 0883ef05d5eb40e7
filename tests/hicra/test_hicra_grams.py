"""Strategic-Gram mining on a hand-made corpus, the planning mask across token boundaries, and the placebo."""

from __future__ import annotations

import pytest

from iclr26.hicra import (
    Vocab,
    cluster_counts,
    decoded_pieces,
    mine_strategic_grams,
    placebo_grams,
    planning_mask,
    planning_mask_batch,
)

CORPUS = [
    "we can use the fact that x = 2 . then y = 4 .",
    "first compute 3 + 4 . we can use the fact that it is odd .",
    "let us try a different approach . x = 5 . so the answer is 5",
    "we can use the fact that 7 > 2 . so the answer is 7",
    "so the answer is 9 . let us try a different approach .",
    "blah blah blah blah blah blah blah . so the answer is 1",
]


def test_miner_finds_the_known_grams_and_merges_sub_grams():
    grams = mine_strategic_grams(CORPUS, min_doc_frac=0.3, max_within=1.5)
    names = [c.name for c in grams.clusters]
    # df: "so the answer is" 4/6, "we can use the fact that" 3/6, "let us try a different approach" 2/6; the 6-word
    # phrases enter as their 5-word grams, and a tie in df and length names the cluster by the alphabetically first
    assert names == ["so the answer is", "can use the fact that", "let us try a different"]
    by_name = {c.name: c for c in grams.clusters}
    assert by_name["so the answer is"].doc_freq == pytest.approx(4 / 6)
    assert by_name["can use the fact that"].doc_freq == pytest.approx(3 / 6)
    # sub-grams of one phrase are one cluster (paraphrase merging by containment)
    assert {"we can use", "use the fact that", "we can use the fact"} <= set(by_name["can use the fact that"].members)
    # "blah blah blah" appears in one solution only, 5 times: high within-solution, low document frequency
    assert all("blah" not in g for g in grams.grams)


def test_within_solution_frequency_filter():
    # "check the sum" occurs 3 times in each of 4 solutions: within-solution frequency 3
    corpus = ["check the sum 1 . check the sum 2 . check the sum 3"] * 4 + ["x ."]
    assert len(mine_strategic_grams(corpus, min_doc_frac=0.5, max_within=2.0)) == 0
    kept = mine_strategic_grams(corpus, min_doc_frac=0.5, max_within=3.0)
    assert [(c.name, c.doc_freq, c.within_freq) for c in kept.clusters] == [("check the sum", 0.8, 3.0)]


def test_paraphrases_merge_by_word_overlap():
    corpus = ["so the answer is 1", "therefore the answer is 2", "so the answer is 3", "therefore the answer is 4"]
    # 4-grams only: {so, the, answer, is} vs {therefore, the, answer, is} have Jaccard 3/5
    merged = mine_strategic_grams(corpus, n_min=4, n_max=4, min_doc_frac=0.5, merge_jaccard=0.5)
    assert [(c.name, c.members, c.doc_freq) for c in merged.clusters] == [
        ("so the answer is", ("so the answer is", "therefore the answer is"), 1.0)
    ]
    assert cluster_counts(["so the answer is 4 . therefore the answer is 5"], merged) == {"so the answer is": 2}
    apart = mine_strategic_grams(corpus, n_min=4, n_max=4, min_doc_frac=0.5, merge_jaccard=0.7)
    assert [(c.name, c.doc_freq) for c in apart.clusters] == [
        ("so the answer is", 0.5),
        ("therefore the answer is", 0.5),
    ]


def test_mask_aligns_across_subword_pieces():
    # byte-level-BPE-like pieces: "backtrack" split in two, "again." glued to a full stop
    pieces = [" 3", "4", " .", " back", "track", " and", " try", " again", ".", " tryst"]
    mask = planning_mask(pieces, ["backtrack and try again"])
    assert mask == [False, False, False, True, True, True, True, True, False, False]
    # a gram word inside a longer word does not match ("try" in "tryst"), and case is ignored
    assert planning_mask([" TRY", " another", " way"], ["try another way"]) == [True, True, True]
    assert planning_mask([" tryst", " another", " way"], ["try another way"]) == [False, False, False]
    # a gram followed by more word characters ("is5") is no match: the word boundary fails
    assert planning_mask([" so", " the", " answer", " is5"], ["the answer is"]) == [False, False, False, False]


def test_mask_on_task_vocab_and_batch():
    vocab = Vocab()
    ids = vocab.encode("try 12 + 3 = 15 . no , let us try another way .")
    pieces = vocab.piece_list(ids)
    assert "".join(pieces).strip() == "try 12 + 3 = 15 . no , let us try another way ."
    mask = planning_mask(pieces, ["try another way"])
    # tokens: try 1 2 + 3 = 1 5 . no , let us try another way . → the three gram tokens only
    assert [p for p, m in zip(pieces, mask, strict=True) if m] == [" try", " another", " way"]
    batch = planning_mask_batch([pieces, pieces[:3]], ["try another way"], width=len(pieces) + 2)
    assert batch.shape == (2, len(pieces) + 2) and int(batch.sum()) == 3
    with pytest.raises(ValueError, match="width"):
        planning_mask_batch([pieces], ["try another way"], width=2)
    with pytest.raises(TypeError, match="pieces"):
        planning_mask("try another way", ["try another way"])


def test_symbol_grams_match_at_whitespace_boundaries():
    pieces = [" =", " 1", "0", " .", " no"]
    assert planning_mask(pieces, ["= 10 ."]) == [True, True, True, True, False]
    assert planning_mask([" =", " 1", "0", "0"], ["= 10"]) == [False, False, False, False]


def test_decoded_pieces_by_incremental_decoding():
    table = {1: "let", 2: " us", 3: " try", 4: "!"}
    pieces = decoded_pieces(lambda ids: "".join(table[i] for i in ids), [1, 2, 3, 4])
    assert pieces == ["let", " us", " try", "!"]


def test_placebo_matches_count_and_avoids_the_mined_grams():
    vocab = Vocab()
    corpus = [
        "try 3 + 1 = 4 . yes , so the answer is 3 + 1",
        "try 3 * 2 = 6 . no , let us try another way . try 3 + 2 = 5 . yes , so the answer is 3 + 2",
        "try 4 - 1 = 3 . yes , so the answer is 4 - 1",
    ] * 3
    grams = mine_strategic_grams(corpus, min_doc_frac=0.2)
    placebo = placebo_grams(corpus, grams, tokenize=lambda t: vocab.piece_list(vocab.encode(t)), seed=0, n_draws=8)
    assert len(placebo) == len(grams)
    assert not set(placebo.grams) & set(grams.grams)
    for g in placebo.grams:
        assert not any(planning_mask([w + " " for w in g.split()], grams))  # no mined-gram occurrence inside
    again = placebo_grams(corpus, grams, tokenize=lambda t: vocab.piece_list(vocab.encode(t)), seed=0, n_draws=8)
    assert again == placebo  # deterministic given the seed


def test_miner_rejects_bad_input():
    with pytest.raises(ValueError, match="solutions"):
        mine_strategic_grams([])
    with pytest.raises(ValueError, match="solutions"):
        mine_strategic_grams("so the answer is")
    with pytest.raises(ValueError, match="n_min"):
        mine_strategic_grams(CORPUS, n_min=4, n_max=3)
    with pytest.raises(ValueError, match="min_doc_frac"):
        mine_strategic_grams(CORPUS, min_doc_frac=0.0)
    with pytest.raises(ValueError, match="max_within"):
        mine_strategic_grams(CORPUS, max_within=0.5)


def test_token_coverage_counts_marked_tokens_over_all_sequences():
    from iclr26.hicra.grams import token_coverage

    # "let me try" marks 3 of the 5 tokens of the first sequence, none of the 2 of the second: 3 / 7
    pieces = [["let", " me", " try", " 3", " +"], [" 4", " ="]]
    assert token_coverage(pieces, ["let me try"]) == pytest.approx(3 / 7)
    assert token_coverage([], ["let me try"]) == 0.0


def test_a_gram_in_every_solution_is_kept_unless_max_doc_frac_drops_it():
    corpus = [f"{c} so the answer is {i}" for i, c in enumerate(CORPUS)]  # "so the answer is" now in all six
    kept = {c.name: c.doc_freq for c in mine_strategic_grams(corpus, min_doc_frac=0.3, max_within=2.0).clusters}
    assert kept["so the answer is"] == 1.0  # high document, low within-solution frequency: the paper's filter keeps it
    dropped = mine_strategic_grams(corpus, min_doc_frac=0.3, max_within=2.0, max_doc_frac=0.9)
    assert "so the answer is" not in [c.name for c in dropped.clusters] and len(dropped.clusters) == len(kept) - 1
    with pytest.raises(ValueError, match="max_doc_frac"):
        mine_strategic_grams(corpus, min_doc_frac=0.5, max_doc_frac=0.4)
