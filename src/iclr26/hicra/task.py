"""The verifiable reasoning task of the HICRA reproduction: a two-number countdown searched by trial and backtracking.

A problem gives two numbers ``a ≥ b`` and a target ``t`` that exactly one of ``a + b``, ``a − b``, ``a * b`` reaches.
A solution *tries* an operation, *executes* it, checks the result against the target and either *backtracks* (a
planning move) or *commits* (another planning move)::

    prompt:     7 3 make 21 :
    completion: try 7 + 3 = 10 . no , let us try another way . try 7 * 3 = 21 . yes , so the answer is 7 * 3

The words of the moves ("let us try another way", "backtrack and try again", "so the answer is", "therefore the
answer is") are the planning phrases; the digits, operators and "yes"/"no" checks are execution. The supervised
start (SFT) is trained on *mixed-quality* traces (:func:`make_trace`): correct searches, searches that commit to an
answer after a failed check (a planning error), and searches with one arithmetic slip (an execution error). The
reward (:func:`check_answer`) is 1 for a well-formed final answer ``a op b`` that reaches the target, else 0.

The tokenizer (:class:`Vocab`) is word-level for words and symbols and digit-level for numbers, with GPT-2-style
pieces: a piece that starts a word carries its leading space (``" try"``, ``" 1"``), the following digits of a number
do not (``"2"``), so the planning-token mask is computed from decoded pieces exactly as for a subword tokenizer.

Deviations from the paper (which trains on competition mathematics): the task is generated in code, small enough for
a model trained from scratch on two CPU cores; its planning phrases are fixed templates with paraphrases rather than
free text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "BRANCH_PHRASES",
    "COMMIT_PHRASES",
    "OPS",
    "AnswerCheck",
    "Problem",
    "TraceKind",
    "Vocab",
    "check_answer",
    "make_problems",
    "make_trace",
    "split_problems",
]

OPS = ("+", "-", "*")
#: Paraphrases of the branching move after a failed check (the paper's "let's try a different approach").
BRANCH_PHRASES = ("let us try another way", "backtrack and try again", "try another way")
#: Paraphrases of the commit move (the paper's deduction "so the answer is").
COMMIT_PHRASES = ("so the answer is", "therefore the answer is")
WORDS = ("try", "make", "yes", "no", "let", "us", "another", "way", "backtrack", "and", "again", "so", "therefore")
WORDS = WORDS + ("the", "answer", "is")
SYMBOLS = ("+", "-", "*", "=", ".", ",", ":")
TraceKind = Literal["correct", "premature", "slip"]


def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


@dataclass(frozen=True)
class Problem:
    """One countdown problem: reach ``target`` from ``a`` and ``b`` (``a ≥ b``) with one of ``+ - *``.

    Attributes:
        a: the first number.
        b: the second number (``b ≤ a``, so ``a − b ≥ 0``).
        target: the value exactly one operation reaches.
    """

    a: int
    b: int
    target: int

    @property
    def prompt(self) -> str:
        """The prompt text, e.g. ``"7 3 make 21 :"``."""
        return f"{self.a} {self.b} make {self.target} :"

    @property
    def solution_op(self) -> str:
        """The one operation that reaches the target."""
        return next(op for op in OPS if _apply(self.a, op, self.b) == self.target)


def make_problems(max_number: int) -> list[Problem]:
    """Every problem with ``1 ≤ b ≤ a ≤ max_number`` whose target exactly one operation reaches.

    Args:
        max_number: the largest number in a problem (``≥ 2``).

    Returns:
        Problems in a fixed order (by ``a``, ``b``, operation).

    Raises:
        ValueError: if ``max_number < 2``.
    """
    if max_number < 2:
        raise ValueError(f"max_number must be >= 2, got {max_number}")
    out = []
    for a in range(1, max_number + 1):
        for b in range(1, a + 1):
            values = [_apply(a, op, b) for op in OPS]
            for v in values:
                if values.count(v) == 1:
                    out.append(Problem(a, b, v))
    return out


def split_problems(problems: Sequence[Problem], *, held_out_frac: float, seed: int) -> tuple[list, list]:
    """A seeded split into training and held-out problems (held-out ones are never trained on).

    Args:
        problems: all problems.
        held_out_frac: share held out, in (0, 1).
        seed: seed of the permutation.

    Returns:
        ``(train, held_out)``, each in the input order.

    Raises:
        ValueError: if ``held_out_frac`` is not in (0, 1) or a side would be empty.
    """
    if not 0.0 < held_out_frac < 1.0:
        raise ValueError(f"held_out_frac must lie in (0, 1), got {held_out_frac}")
    n_held = round(held_out_frac * len(problems))
    if n_held < 1 or n_held >= len(problems):
        raise ValueError(f"held_out_frac={held_out_frac} of {len(problems)} problems leaves a side empty")
    held = set(np.random.default_rng(seed).permutation(len(problems))[:n_held].tolist())
    train = [p for i, p in enumerate(problems) if i not in held]
    return train, [p for i, p in enumerate(problems) if i in held]


def make_trace(problem: Problem, kind: TraceKind, rng: np.random.Generator) -> str:
    """One solution trace of the given quality (the SFT data).

    - ``"correct"``: operations tried in a random order; a failed check is followed by a branching phrase, the
      matching one by a commit phrase and the right expression.
    - ``"premature"``: as correct, but at the first failed check the trace commits to the failed expression (a
      planning error; it is correct only if the first try was right, which then makes it a correct trace).
    - ``"slip"``: one tried result is off by 1 or 2 (an execution error); checks and moves follow the written
      result, so the answer is usually wrong.

    Args:
        problem: the problem.
        kind: the trace quality.
        rng: the random source (operation order, phrases, slips).

    Returns:
        The completion text (no prompt, no end-of-sequence marker).

    Raises:
        ValueError: for an unknown ``kind``.
    """
    if kind not in ("correct", "premature", "slip"):
        raise ValueError(f"kind must be 'correct', 'premature' or 'slip', got {kind!r}")
    order = [OPS[i] for i in rng.permutation(len(OPS))]
    slip_at = int(rng.integers(len(OPS))) if kind == "slip" else -1
    parts = []
    for i, op in enumerate(order):
        value = _apply(problem.a, op, problem.b)
        if i == slip_at:
            value = max(0, value + int(rng.choice([-2, -1, 1, 2])))
        parts.append(f"try {problem.a} {op} {problem.b} = {value} .")
        last = i == len(order) - 1
        if value == problem.target or last or kind == "premature":
            check = "yes" if value == problem.target else "no"
            commit = COMMIT_PHRASES[int(rng.integers(len(COMMIT_PHRASES)))]
            parts.append(f"{check} , {commit} {problem.a} {op} {problem.b}")
            break
        parts.append(f"no , {BRANCH_PHRASES[int(rng.integers(len(BRANCH_PHRASES)))]} .")
    return " ".join(parts)


_ANSWER = re.compile(r"(?:^|\s)answer is (\d+) ([-+*]) (\d+)$")


@dataclass(frozen=True)
class AnswerCheck:
    """The verdict of :func:`check_answer`.

    Attributes:
        reward: 1.0 for a correct answer, else 0.0.
        status: ``"correct"``, ``"wrong"`` (well-formed, misses the target or uses other numbers) or
            ``"malformed"`` (no final ``answer is a op b``, text after it, or not finished).
    """

    reward: float
    status: Literal["correct", "wrong", "malformed"]


def check_answer(problem: Problem, completion: str, *, finished: bool = True) -> AnswerCheck:
    """The task's reward: does the completion end in ``answer is x op y`` with ``{x, y} = {a, b}`` reaching the target?

    The final expression must be the last thing in the completion; ``x − y`` must be ``a − b`` (``a ≥ b``), ``+`` and
    ``*`` accept either order. Numbers with leading zeros and multiple spaces are malformed.

    Args:
        problem: the problem.
        completion: the decoded completion, without the end-of-sequence marker.
        finished: whether the completion ended with the end-of-sequence marker (a truncated one is malformed).

    Returns:
        :class:`AnswerCheck`.

    Raises:
        TypeError: if ``completion`` is not a string.
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    match = _ANSWER.search(completion.strip())
    if not finished or match is None:
        return AnswerCheck(0.0, "malformed")
    x_text, op, y_text = match.groups()
    if any(len(s) > 1 and s.startswith("0") for s in (x_text, y_text)):
        return AnswerCheck(0.0, "malformed")
    x, y = int(x_text), int(y_text)
    uses_numbers = (x, y) == (problem.a, problem.b) or (op != "-" and (y, x) == (problem.a, problem.b))
    # the verifiable outcome reward R(q, o): 1 for a correct final expression, 0 otherwise (no partial credit)
    if uses_numbers and _apply(x, op, y) == problem.target:
        return AnswerCheck(1.0, "correct")
    return AnswerCheck(0.0, "wrong")


class Vocab:
    """Word-level tokens for words and symbols, digit-level for numbers; pieces carry GPT-2-style leading spaces.

    Ids: 0 ``<pad>``, 1 ``<bos>``, 2 ``<eos>``, then one per word/symbol and the digits. The piece of a token is
    its decoded text: ``" try"``, ``" ="``, ``" 1"`` for a word's first piece, ``"2"`` for a following digit; the
    special tokens decode to ``""``.
    """

    PAD, BOS, EOS = 0, 1, 2

    def __init__(self) -> None:
        self.pieces: list[str] = ["", "", ""]
        self.pieces += [" " + w for w in (*WORDS, *SYMBOLS)]
        self.pieces += [" " + d for d in "0123456789"] + list("0123456789")
        self._index = {p: i for i, p in enumerate(self.pieces) if p}

    def __len__(self) -> int:
        return len(self.pieces)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (words separated by single spaces; numbers split into digits).

        Raises:
            ValueError: naming the first word that is not in the vocabulary.
        """
        ids = []
        for word in text.split():
            if word.isdigit():
                ids.append(self._index[" " + word[0]])
                ids.extend(self._index[d] for d in word[1:])
            elif " " + word in self._index:
                ids.append(self._index[" " + word])
            else:
                raise ValueError(f"text: word {word!r} is not in the task vocabulary")
        return ids

    def piece_list(self, ids: Sequence[int]) -> list[str]:
        """The decoded text of each token (what the planning mask aligns to)."""
        return [self.pieces[int(i)] for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` up to the first ``<eos>`` (special tokens decode to nothing)."""
        out = []
        for i in ids:
            if int(i) == self.EOS:
                break
            out.append(self.pieces[int(i)])
        return "".join(out).strip()
