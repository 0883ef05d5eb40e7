"""Explore-on-Graph's rewards: answer-set F1, Hits@1 and the path reward, as the official ``reward_func.py`` scores.

Explore-on-Graph (EoG), "Explore-on-Graph: Incentivizing Autonomous Exploration of Large Language Models on
Knowledge Graphs with Path-refined Reward Modeling", ICLR 2026, arXiv 2602.21728. The paper trains with an outcome
reward ``R_out`` (answer-set F1 between predicted and gold entities) and, in its last stage, the joint reward
``R = R_out + R_path``. Every rule below was read in the official repository ``ysq111333/EoG``, file
``reward_func.py`` (functions ``parse_model_output``, ``extract_answers_from_text``, ``evaluate_hits_at_1``,
``evaluate_f1_score``, ``extract_triplets_from_reasoning``, ``flatten_reasoning_path``,
``evaluate_reasoning_path_match``); the code here is written anew from those rules.

Scoring one completion (:func:`eog_reward`):

1. **Parse.** The *reasoning* is the text before the first ``<answer>`` (case-insensitive, whitespace-stripped; the
   ``<think>`` block included); the *answer* is the content of the first ``<answer>…</answer>``, read as a Python
   literal (``ast.literal_eval``). No ``<answer>`` block or an answer that is not a literal makes the completion
   malformed: **every** component is 0 (the official function catches the exception and returns 0), and the reason
   is recorded here instead of raised.
2. **Answer list.** A list gives its items as stripped strings (empty ones dropped); a string that looks like a list
   is parsed as JSON (or, if that fails, split at commas outside double quotes); any other non-empty value is one
   answer (its ``str``); an empty value gives no answer.
3. **Hits@1** (official definition, lenient): 1 if *any* predicted answer equals, contains or is contained in
   *any* gold answer (lower-cased, stripped), else 0.
4. **F1** over the lower-cased, stripped answer sets: ``P = |pred ∩ gold| / |pred|``, ``R = |pred ∩ gold| / |gold|``,
   ``F1 = 2PR / (P + R)``; 0 without a predicted or a gold answer.
5. **Path reward.** Triples are extracted from the reasoning with one pattern, ``(s, r, o)`` or ``[s, r, o]`` (either
   bracket on either side; a field holds no comma or bracket), each field stripped of whitespace and of the quote
   characters ``" ' ``` ``; duplicates (case-insensitive) are dropped, the first kept. The gold reasoning path, a
   nested list of triples, is flattened in order (duplicates kept). Each extracted triple counts once if it equals
   (case-insensitive) some gold triple; ``R_path = min(1, matched / |flattened gold|)``; 0 without reasoning,
   extracted triples or gold triples.
6. **Combined reward** ``R = w_hits·Hits@1 + w_f1·F1 + w_path·R_path``. EoG's stages use ``(0, 1, 0)`` (RL phase 1,
   ``R_out``) and ``(0, 1, 1)`` (RL phase 2, ``R_out + R_path``); the released file sets ``(0, 0, 1)``.

Deviations: none in the scoring rules. Malformed outputs record their reason (:attr:`RewardBreakdown.reason`)
instead of printing it. ``answers_outside_graph`` is a diagnostic the official code does not compute; it never
enters the reward.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "F1_ONLY",
    "F1_PLUS_PATH",
    "OFFICIAL_RELEASED",
    "ParsedOutput",
    "RewardBreakdown",
    "RewardWeights",
    "answer_f1",
    "answer_list",
    "eog_reward",
    "extract_triples",
    "flatten_path",
    "hits_at_1",
    "parse_output",
    "path_reward",
]

Triple = tuple[str, str, str]

_REASONING = re.compile(r"^(.*?)<answer>", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
# reward_func.py, "Pattern 1": an opening ( or [, three comma-separated fields free of , ( ) [ ], a closing ) or ]
_FIELD = r"([^,\[\(\)\]]+)"
_TRIPLE = re.compile(r"[\[\(]" + _FIELD + r",\s*" + _FIELD + r",\s*" + _FIELD + r"[\]\)]", re.IGNORECASE)
_QUOTES = "\"'`"


@dataclass(frozen=True)
class ParsedOutput:
    """A completion split as the official parser splits it.

    Attributes:
        reasoning: the stripped text before the first ``<answer>`` ("" when there is none).
        answer: the predicted answers (:func:`answer_list`), or ``None`` when the output is malformed.
        reason: why it is malformed (``None`` when it is not).
    """

    reasoning: str
    answer: list[str] | None
    reason: str | None


def parse_output(text: str) -> ParsedOutput:
    """Split a completion into reasoning and answer list (module docstring, steps 1–2). Never raises."""
    m = _REASONING.search(text)
    reasoning = m.group(1).strip() if m else ""
    a = _ANSWER.search(text)
    if a is None:
        return ParsedOutput(reasoning, None, "no <answer>...</answer> block")
    content = a.group(1).strip()
    try:
        value = ast.literal_eval(content)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        return ParsedOutput(reasoning, None, f"answer is not a Python literal ({type(exc).__name__}): {content[:60]!r}")
    return ParsedOutput(reasoning, answer_list(value), None)


def answer_list(value: Any) -> list[str]:
    """The predicted answers of a parsed ``<answer>`` value (module docstring, step 2).

    Args:
        value: what ``ast.literal_eval`` returned (a list, a string, a number, ...).

    Returns:
        Stripped, non-empty answer strings, in order.
    """
    if not value:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip().replace("<answer>", "").replace("</answer>", "").strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = _split_outside_quotes(text[1:-1].strip())
            if parsed:
                return parsed
        else:
            if isinstance(parsed, list):
                return [str(v).strip() for v in parsed if str(v).strip()]
    return [text] if text else []


def _split_outside_quotes(content: str) -> list[str]:
    """Split at commas outside double quotes, each piece stripped of spaces and double quotes."""
    pieces, current, quoted = [], "", False
    for ch in content:
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            pieces.append(current)
            current = ""
        else:
            current += ch
    pieces.append(current)
    return [p.strip().strip('"') for p in pieces if p.strip() and p.strip().strip('"')]


def hits_at_1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Official Hits@1: 1 if any prediction equals, contains or is contained in any gold answer (lower-cased).

    Args:
        predicted: predicted answer strings.
        gold: gold answer strings.

    Returns:
        1.0 or 0.0 (0 when either list is empty).
    """
    preds = [p.lower().strip() for p in predicted if p.strip()]
    golds = [g.lower().strip() for g in gold]
    if not preds or not golds:
        return 0.0
    # Hits@1 (reward_func.py evaluate_hits_at_1): any prediction equal to, containing or inside any gold answer
    return float(any(p == g or g in p or p in g for p in preds for g in golds))


def answer_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Answer-set F1 ``2PR/(P+R)`` over lower-cased, stripped sets; 0 if either is empty (``R_out`` of EoG)."""
    pred = {p.lower().strip() for p in predicted if p.strip()}
    truth = {g.lower().strip() for g in gold}
    if not pred or not truth:
        return 0.0
    common = len(pred & truth)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(truth)
    # R_out (§3, reward_func.py): the answer-set F1 = 2PR / (P + R)
    return 2 * precision * recall / (precision + recall)


def extract_triples(reasoning: str) -> list[Triple]:
    """The ``(s, r, o)`` / ``[s, r, o]`` triples cited in a reasoning text, deduplicated case-insensitively.

    Args:
        reasoning: the text (usually :attr:`ParsedOutput.reasoning`).

    Returns:
        Triples of stripped, unquoted fields, in order of first appearance.
    """
    out: list[Triple] = []
    seen: set[Triple] = set()
    for m in _TRIPLE.finditer(reasoning):
        fields = tuple(g.strip().strip(_QUOTES).strip() for g in m.groups())
        if not all(fields):
            continue
        key = tuple(f.lower().strip() for f in fields)
        if key not in seen:
            seen.add(key)  # type: ignore[arg-type]
            out.append(fields)  # type: ignore[arg-type]
    return out


def flatten_path(reasoning_path: Any) -> list[Triple]:
    """Flatten a nested reasoning path (paths of triples, or triples) into triples, in order, duplicates kept.

    A list or tuple whose first three items are not lists counts as a triple (its first three items, as strings);
    any other list is expanded. Other values are ignored.
    """
    out: list[Triple] = []

    def visit(node: Any) -> None:
        if not isinstance(node, list | tuple):
            return
        if len(node) >= 3 and not any(isinstance(node[i], list | tuple) for i in range(3)):
            out.append((str(node[0]), str(node[1]), str(node[2])))
            return
        for child in node:
            visit(child)

    visit(reasoning_path)
    return out


def path_reward(reasoning: str, reasoning_path: Any) -> float:
    """``R_path = min(1, #extracted triples matching a gold triple / #flattened gold triples)`` (step 5).

    Args:
        reasoning: the reasoning text.
        reasoning_path: the gold path(s), nested lists of ``[s, r, o]``.

    Returns:
        The path reward in [0, 1].
    """
    if not reasoning:
        return 0.0
    extracted = extract_triples(reasoning)
    gold = flatten_path(reasoning_path)
    if not extracted or not gold:
        return 0.0
    gold_keys = [tuple(f.lower() for f in t) for t in gold]
    # each extracted triple counts at most once (the official inner loop breaks at its first match)
    matched = sum(1 for t in extracted if tuple(f.lower() for f in t) in gold_keys)
    # R_path (§3, reward_func.py evaluate_reasoning_path_match): matched / |flattened gold path|, clipped to 1
    return min(1.0, matched / len(gold))


@dataclass(frozen=True)
class RewardWeights:
    """Weights of ``R = w_hits·Hits@1 + w_f1·F1 + w_path·R_path``.

    Attributes:
        hits: weight of Hits@1.
        f1: weight of the answer-set F1 (``R_out``).
        path: weight of the path reward.
    """

    hits: float = 0.0
    f1: float = 1.0
    path: float = 0.0

    def __post_init__(self) -> None:
        for name in ("hits", "f1", "path"):
            if getattr(self, name) < 0:
                raise ValueError(f"RewardWeights.{name} must be >= 0, got {getattr(self, name)}")


#: RL phase 1 of EoG: the outcome reward ``R_out`` = F1.
F1_ONLY = RewardWeights(hits=0.0, f1=1.0, path=0.0)
#: RL phase 2 of EoG: ``R_out + R_path``.
F1_PLUS_PATH = RewardWeights(hits=0.0, f1=1.0, path=1.0)
#: The weights in the released ``reward_func.py`` (path term only).
OFFICIAL_RELEASED = RewardWeights(hits=0.0, f1=0.0, path=1.0)


@dataclass(frozen=True)
class RewardBreakdown:
    """One completion's scores.

    Attributes:
        hits_at_1: official (lenient) Hits@1.
        f1: answer-set F1.
        path: path reward.
        total: the weighted sum.
        valid: whether the output parsed.
        reason: why it did not parse (``None`` if it did).
        n_cited: distinct triples extracted from the reasoning (from the whole text when it has no ``<answer>``;
            a diagnostic, the path reward still reads the reasoning only).
        n_off_path: extracted triples not in the gold path (futile citations).
        answers_outside_graph: predicted answers that are no entity of the given graph (``None`` without a graph).
    """

    hits_at_1: float
    f1: float
    path: float
    total: float
    valid: bool
    reason: str | None
    n_cited: int
    n_off_path: int
    answers_outside_graph: int | None


def eog_reward(
    text: str,
    gold_answers: Sequence[str],
    reasoning_path: Any,
    *,
    weights: RewardWeights = F1_PLUS_PATH,
    graph: Sequence[Sequence[str]] | None = None,
) -> RewardBreakdown:
    """Score one completion (module docstring, steps 1–6). Never raises on a malformed completion.

    Args:
        text: the completion.
        gold_answers: the gold answer strings.
        reasoning_path: the gold path(s) (nested lists of triples).
        weights: the reward weights (default EoG's phase 2, ``R_out + R_path``).
        graph: the question's triples, only for the ``answers_outside_graph`` diagnostic.

    Returns:
        :class:`RewardBreakdown`; all components 0 for a malformed output.
    """
    parsed = parse_output(text)
    cited = extract_triples(parsed.reasoning or text)  # diagnostics: the whole text when there is no <answer>
    gold_keys = {tuple(f.lower() for f in t) for t in flatten_path(reasoning_path)}
    off_path = sum(1 for t in cited if tuple(f.lower() for f in t) not in gold_keys)
    if parsed.answer is None:
        return RewardBreakdown(0.0, 0.0, 0.0, 0.0, False, parsed.reason, len(cited), off_path, None)
    outside = None
    if graph is not None:
        entities = {str(x).lower().strip() for t in graph for x in (t[0], t[2])}
        outside = sum(1 for a in parsed.answer if a.lower().strip() not in entities)
    h = hits_at_1(parsed.answer, gold_answers)
    f = answer_f1(parsed.answer, gold_answers)
    p = path_reward(parsed.reasoning, reasoning_path)
    # R = R_out + R_path in RL phase 2 (§3); the weights select phase 1 (F1 only) or the released file's path only
    total = weights.hits * h + weights.f1 * f + weights.path * p
    return RewardBreakdown(h, f, p, total, True, None, len(cited), off_path, outside)
