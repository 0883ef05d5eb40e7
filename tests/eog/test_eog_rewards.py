"""The reward functions against hand-computed cases of the official reward_func.py's behaviour."""

from __future__ import annotations

import pytest

from iclr26.eog.rewards import (
    F1_ONLY,
    F1_PLUS_PATH,
    OFFICIAL_RELEASED,
    RewardWeights,
    answer_f1,
    answer_list,
    eog_reward,
    extract_triples,
    flatten_path,
    hits_at_1,
    parse_output,
    path_reward,
)

GOLD_PATH = [[["Paris", "capital_of", "France"], ["France", "currency", "Euro"]]]


def test_parse_splits_reasoning_and_answer_case_insensitively():
    out = parse_output('<think> (a, r, b) </think>\n<ANSWER> ["b", "c"] </Answer> trailing')
    assert out.reasoning == "<think> (a, r, b) </think>"
    assert out.answer == ["b", "c"] and out.reason is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<think>x</think> no answer tag", "no <answer>"),
        ("<think>x</think><answer>[b, c</answer>", "not a Python literal"),
        ("<answer>Paris</answer>", "not a Python literal"),  # a bare name is no literal: the official code raises
        ("<answer>['a']", "no <answer>"),  # unclosed block
    ],
)
def test_malformed_outputs_record_the_reason(text, reason):
    out = parse_output(text)
    assert out.answer is None and reason in out.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([" a ", "", "b", 3], ["a", "b", "3"]),  # list items as stripped strings, empty ones dropped
        ("a, b", ["a, b"]),  # a plain string is ONE answer (the official split result is discarded)
        ('["x", "y"]', ["x", "y"]),  # a string holding a JSON list
        ('[x, "y, z"]', ["x", "y, z"]),  # invalid JSON: split at commas outside double quotes
        (0, []),
        ([], []),
        (5, ["5"]),
        (("a", "b"), ["('a', 'b')"]),  # a tuple is not a list: its str is one answer
    ],
)
def test_answer_list_follows_the_official_extraction(value, expected):
    assert answer_list(value) == expected


def test_hits_at_1_is_lenient_any_match_with_containment():
    assert hits_at_1(["Washington"], ["Washington, D.C."]) == 1.0  # prediction contained in gold
    assert hits_at_1(["the city of PARIS"], ["paris"]) == 1.0  # gold contained in prediction, case-insensitive
    assert hits_at_1(["wrong", "Paris"], ["paris"]) == 1.0  # any predicted answer, not only the first
    assert hits_at_1(["Lyon"], ["Paris"]) == 0.0
    assert hits_at_1([], ["Paris"]) == 0.0 and hits_at_1(["Paris"], []) == 0.0


def test_f1_by_hand():
    # pred {a, b, c}, gold {a, d}: P = 1/3, R = 1/2, F1 = 2·(1/6)/(5/6) = 0.4
    assert answer_f1(["a", "b", "c"], ["a", "d"]) == pytest.approx(0.4)
    # duplicates and case collapse in the sets: {a} vs {a}
    assert answer_f1(["A", "a", " a "], ["a"]) == 1.0
    assert answer_f1(["x"], ["a"]) == 0.0 and answer_f1([], ["a"]) == 0.0


def test_extract_triples_brackets_quotes_case_and_duplicates():
    text = "(Paris, capital_of, France) then [paris, CAPITAL_OF, france] and ('France', \"currency\", `Euro`) (x, y, z]"
    assert extract_triples(text) == [
        ("Paris", "capital_of", "France"),  # the lower-case repeat is dropped, the first spelling kept
        ("France", "currency", "Euro"),
        ("x", "y", "z"),  # either bracket on either side
    ]
    # a field cannot hold a comma or a bracket: a four-field tuple and a nested one give nothing
    assert extract_triples("(Washington, D.C., capital, USA)") == []
    assert extract_triples("((a, b), r, o)") == []


def test_flatten_keeps_order_and_duplicates():
    nested = [[["a", "r", "b"], ["b", "s", "c"]], [["a", "r", "b"]], ["x", "y", "z", "extra"]]
    assert flatten_path(nested) == [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "b"), ("x", "y", "z")]
    assert flatten_path([]) == [] and flatten_path("not a path") == []


def test_path_reward_by_hand():
    # both gold triples cited (one with other case), plus an off-path triple: 2 / 2
    text = "(paris, CAPITAL_OF, france) (France, currency, Euro) (France, borders, Spain)"
    assert path_reward(text, GOLD_PATH) == 1.0
    # one of two: 1/2; citing it twice still counts once
    assert path_reward("(Paris, capital_of, France) [Paris, capital_of, France]", GOLD_PATH) == 0.5
    # duplicate gold triples stay in the denominator: gold [t1, t2, t1, t3] (4), all of t1, t2, t3 cited: 3/4
    t1, t2, t3 = ["a", "r", "b"], ["b", "s", "c"], ["b", "u", "d"]
    cited = "(a, r, b) (b, s, c) (b, u, d)"
    assert path_reward(cited, [[t1, t2], [t1, t3]]) == pytest.approx(0.75)
    assert path_reward("", GOLD_PATH) == 0.0 and path_reward(cited, []) == 0.0
    assert path_reward("Paris capital_of France", GOLD_PATH) == 0.0  # not in bracket form: not extracted


def test_combined_reward_and_weights():
    text = '<think>(Paris, capital_of, France)</think><answer>["Euro", "Franc"]</answer>'
    # F1: P = 1/2, R = 1 → 2/3; Hits@1 = 1; path = 1/2
    r = eog_reward(text, ["Euro"], GOLD_PATH, weights=RewardWeights(hits=0.5, f1=2.0, path=3.0))
    assert (r.hits_at_1, r.f1, r.path) == (1.0, pytest.approx(2 / 3), 0.5)
    assert r.total == pytest.approx(0.5 * 1 + 2 * 2 / 3 + 3 * 0.5)
    assert eog_reward(text, ["Euro"], GOLD_PATH, weights=F1_ONLY).total == pytest.approx(2 / 3)
    assert eog_reward(text, ["Euro"], GOLD_PATH, weights=F1_PLUS_PATH).total == pytest.approx(2 / 3 + 0.5)
    assert eog_reward(text, ["Euro"], GOLD_PATH, weights=OFFICIAL_RELEASED).total == 0.5
    with pytest.raises(ValueError, match="path"):
        RewardWeights(path=-1.0)


def test_malformed_output_scores_zero_even_with_a_perfect_path():
    text = "<think>(Paris, capital_of, France) (France, currency, Euro)</think> the answer is Euro"
    r = eog_reward(text, ["Euro"], GOLD_PATH)
    assert (r.total, r.hits_at_1, r.f1, r.path, r.valid) == (0.0, 0.0, 0.0, 0.0, False)
    assert "no <answer>" in r.reason and r.n_cited == 2 and r.n_off_path == 0


def test_empty_answer_and_answers_outside_the_graph():
    graph = [["Paris", "capital_of", "France"], ["France", "currency", "Euro"]]
    # an empty list parses: no answer credit, but the path term is still paid (as in the official code)
    r = eog_reward("<think>(France, currency, Euro)</think><answer>[]</answer>", ["Euro"], GOLD_PATH, graph=graph)
    assert r.valid and (r.hits_at_1, r.f1, r.path, r.total) == (0.0, 0.0, 0.5, 0.5)
    assert r.answers_outside_graph == 0
    # an entity outside the graph is counted by the diagnostic and gets no F1
    r = eog_reward('<answer>["Berlin", "Euro"]</answer>', ["Euro"], GOLD_PATH, graph=graph, weights=F1_ONLY)
    assert r.answers_outside_graph == 1 and r.f1 == pytest.approx(2 / 3) and r.path == 0.0
