"""The rule-based reward of GUI-Shift: ``R = R_format + R_action``.

GUI-Shift, ICLR 2026, arXiv 2505.12493, §4 (rule-based reward). The rules follow the official reward script,
``UbiquitousLearning/UIShift``, ``train/grpo_uishift.py`` (``format_reward`` and ``action_reward``; the trainer sums
the two reward functions):

- ``R_format = 1`` when the completion contains ``<answer>...</answer>`` (regex ``<answer>.*?</answer>``, DOTALL);
- ``R_action = 1`` when the predicted JSON action has the ground truth's ``action_type`` (lower-cased, not
  stripped) and
    - click: the point ``(x, y)`` lies in the ground truth's ``bbox`` (edges included); without a bbox the point
      must equal the ground-truth point;
    - scroll: the ``direction`` is equal after strip/lower;
    - open_app: the ``app_name`` is equal after strip/lower;
    - input_text: the ``text`` is equal after strip/lower;
    - navigate_back: the type alone;
- anything malformed (no JSON object, no ``action_type``, a missing or non-numeric field) gives ``R_action = 0``.
  As in the script, the answer is the content of the first ``<answer>`` tag, or the whole completion without one,
  with an optional ```` ```json ```` fence removed.

Here every score also says *why* (:class:`ActionScore.reason`), and nothing raises on bad input.

Deviation: none in the rules. The script's catch-all ``except`` is replaced by explicit checks that give the same
rewards with a reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ActionScore", "action_reward", "best_action_reward", "format_reward", "parse_answer", "to_completion"]

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


@dataclass(frozen=True)
class ActionScore:
    """``R_action`` of one prediction and why.

    Attributes:
        reward: 1.0 or 0.0.
        reason: ``"ok"`` or the first rule that failed (``"wrong action_type ..."``, ``"click outside bbox"``,
            ``"malformed: ..."``).
    """

    reward: float
    reason: str


def format_reward(completion: str) -> float:
    """``R_format``: 1.0 when the completion has an ``<answer>...</answer>`` span, else 0.0."""
    return 1.0 if isinstance(completion, str) and _ANSWER.search(completion) else 0.0  # the official regex check


def to_completion(action: dict[str, Any]) -> str:
    """The completion text of an action, ``<answer>{json}</answer>`` (the format the official prompt asks for)."""
    return f"<answer>{json.dumps(action)}</answer>"


def parse_answer(completion: str) -> dict[str, Any] | str:
    """The action dict of a completion, or a string saying why it is malformed (the official script's parsing)."""
    if not isinstance(completion, str):
        return f"malformed: completion is {type(completion).__name__}, not text"
    match = _ANSWER.search(completion)
    answer = match.group(1).strip() if match else completion.strip()
    fence = _FENCE.search(answer)
    if fence:
        answer = fence.group(1)
    answer = answer.replace("\\n", "").strip()
    try:
        parsed = json.loads(answer)
    except (json.JSONDecodeError, ValueError):
        return "malformed: the answer is not JSON"
    if not isinstance(parsed, dict):
        return "malformed: the answer is not a JSON object"
    return parsed


def _norm(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) else None


def action_reward(pred: dict[str, Any] | str, gt: dict[str, Any]) -> ActionScore:
    """``R_action`` of the predicted action ``pred`` (a dict, or a completion text) against ``gt``.

    Args:
        pred: the predicted action dict, or a completion string (parsed by :func:`parse_answer`).
        gt: the ground-truth action dict (``bbox`` ``[x1, y1, x2, y2]`` for a click).

    Returns:
        :class:`ActionScore`; never raises.
    """
    if isinstance(pred, str):
        pred = parse_answer(pred)
        if isinstance(pred, str):
            return ActionScore(0.0, pred)
    if not isinstance(pred, dict):
        return ActionScore(0.0, f"malformed: prediction is {type(pred).__name__}, not a dict")
    raw = pred.get("action_type")
    # the script compares pred["action_type"].lower() with gt["action_type"].lower() (no strip)
    kind = raw.lower() if isinstance(raw, str) else None
    want = str(gt.get("action_type", "")).lower()
    if kind is None:
        return ActionScore(0.0, "malformed: no string action_type")
    if kind != want:  # R_action = 1 needs the right type first, then the type's own parameter check
        return ActionScore(0.0, f"wrong action_type {kind!r}, expected {want!r}")
    if kind == "click":
        try:
            x, y = float(pred["x"]), float(pred["y"])
        except (KeyError, TypeError, ValueError):
            return ActionScore(0.0, "malformed: click needs numeric x and y")
        if "bbox" in gt:
            x1, y1, x2, y2 = (float(v) for v in gt["bbox"])
            # official is_point_in_bbox: x1 <= x <= x2 and y1 <= y <= y2 (edges count)
            inside = x1 <= x <= x2 and y1 <= y <= y2
            return ActionScore(1.0, "ok") if inside else ActionScore(0.0, "click outside bbox")
        same = x == float(gt["x"]) and y == float(gt["y"])
        return ActionScore(1.0, "ok") if same else ActionScore(0.0, "click not at the exact point")
    # scroll: same direction; open_app: same app name; input_text: same text (strip, lower); navigate_back: type only
    field = {"scroll": "direction", "open_app": "app_name", "input_text": "text"}.get(kind)
    if field is None:
        return ActionScore(1.0, "ok") if kind == "navigate_back" else ActionScore(0.0, f"unknown type {kind!r}")
    got = _norm(pred.get(field))
    if got is None:
        return ActionScore(0.0, f"malformed: {kind} needs a string {field}")
    return ActionScore(1.0, "ok") if got == _norm(gt.get(field)) else ActionScore(0.0, f"wrong {field} {got!r}")


def best_action_reward(pred: dict[str, Any] | str, gts: list[dict[str, Any]]) -> ActionScore:
    """``R_action`` against a set of equally correct ground truths (e.g. every first action of a shortest path):
    1.0 if any accepts ``pred``; otherwise the reason of the first."""
    if not gts:
        return ActionScore(0.0, "no ground truth")
    scores = [action_reward(pred, gt) for gt in gts]
    return next((s for s in scores if s.reward == 1.0), scores[0])
