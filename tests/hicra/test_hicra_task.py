"""The countdown task: problems, traces of each quality, the reward checker on malformed answers, the tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.hicra import Problem, Vocab, check_answer, make_problems, make_trace, split_problems


def test_problems_have_exactly_one_solving_operation():
    problems = make_problems(6)
    assert all(1 <= p.b <= p.a <= 6 for p in problems)
    # a = b = 2: 2 + 2 = 2 * 2 = 4 is ambiguous and dropped; 2 − 2 = 0 stays
    assert Problem(2, 2, 4) not in problems and Problem(2, 2, 0) in problems
    for p in problems:
        assert [op for op in "+-*" if eval(f"{p.a}{op}{p.b}") == p.target] == [p.solution_op]


def test_split_is_seeded_and_disjoint():
    problems = make_problems(8)
    train, held = split_problems(problems, held_out_frac=0.25, seed=3)
    assert len(held) == round(0.25 * len(problems)) and not set(train) & set(held)
    assert (train, held) == split_problems(problems, held_out_frac=0.25, seed=3)
    with pytest.raises(ValueError, match="held_out_frac"):
        split_problems(problems, held_out_frac=1.0, seed=0)


def test_trace_qualities():
    rng = np.random.default_rng(0)
    problems = make_problems(9)
    rewards = {k: [check_answer(p, make_trace(p, k, rng)).reward for p in problems] for k in ("correct", "premature")}
    assert all(r == 1.0 for r in rewards["correct"])
    assert 0.2 < np.mean(rewards["premature"]) < 0.6  # right only when the first try was
    trace = make_trace(Problem(7, 3, 21), "correct", np.random.default_rng(1))
    assert trace.endswith(("7 * 3", "3 * 7")) and "try 7 * 3 = 21 . yes ," in trace
    with pytest.raises(ValueError, match="kind"):
        make_trace(Problem(7, 3, 21), "sloppy", rng)


@pytest.mark.parametrize(
    ("completion", "finished", "status"),
    [
        ("try 7 * 3 = 21 . yes , so the answer is 7 * 3", True, "correct"),
        ("so the answer is 3 * 7", True, "correct"),  # + and * accept either order
        ("so the answer is 7 + 3", True, "wrong"),
        ("so the answer is 3 - 7", True, "wrong"),
        ("so the answer is 7 * 4", True, "wrong"),  # not the given numbers
        ("so the answer is 7 * 3", False, "malformed"),  # truncated
        ("so the answer is 7 * 3 .", True, "malformed"),  # text after the answer
        ("so the answer is 07 * 3", True, "malformed"),
        ("so the answer is 7 *", True, "malformed"),
        ("so the answer is 21", True, "malformed"),
        ("", True, "malformed"),
        ("try 7 * 3 = 21 . yes ,", True, "malformed"),
        ("the answeris 7 * 3", True, "malformed"),
    ],
)
def test_checker(completion, finished, status):
    check = check_answer(Problem(7, 3, 21), completion, finished=finished)
    assert check.status == status and check.reward == (1.0 if status == "correct" else 0.0)


def test_checker_rejects_non_text():
    with pytest.raises(TypeError, match="completion"):
        check_answer(Problem(7, 3, 21), None)


def test_vocab_round_trip_and_pieces():
    vocab = Vocab()
    text = "12 5 make 60 : try 12 * 5 = 60 . yes , therefore the answer is 12 * 5"
    ids = vocab.encode(text)
    assert vocab.decode(ids + [Vocab.EOS, 5]) == text
    assert vocab.piece_list(vocab.encode("120"))[:3] == [" 1", "2", "0"]
    with pytest.raises(ValueError, match="'maybe'"):
        vocab.encode("try maybe")
