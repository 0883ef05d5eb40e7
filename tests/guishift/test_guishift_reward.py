"""The rule reward against the cases of the official script (UbiquitousLearning/UIShift, train/grpo_uishift.py)."""

from __future__ import annotations

import pytest

from iclr26.guishift.reward import action_reward, best_action_reward, format_reward, parse_answer, to_completion

CLICK = {"action_type": "click", "x": 410, "y": 701, "bbox": [89, 668, 732, 734]}  # an item of the official data


@pytest.mark.parametrize(
    ("x", "y", "reward"),
    [
        (89, 668, 1.0),  # top-left corner: x1 <= x and y1 <= y hold with equality
        (732, 734, 1.0),  # bottom-right corner: x <= x2 and y <= y2 hold with equality
        (732.5, 700, 0.0),  # half a pixel right of the right edge
        (88.99, 700, 0.0),
        (400, 735, 0.0),  # one pixel below the bottom edge
    ],
)
def test_click_counts_the_box_edges(x, y, reward):
    assert action_reward({"action_type": "click", "x": x, "y": y}, CLICK).reward == reward


def test_click_outside_says_why_and_without_bbox_needs_the_exact_point():
    assert action_reward({"action_type": "click", "x": 0, "y": 0}, CLICK).reason == "click outside bbox"
    exact = {"action_type": "click", "x": 5, "y": 7}
    assert action_reward({"action_type": "click", "x": 5.0, "y": 7}, exact).reward == 1.0
    assert action_reward({"action_type": "click", "x": 5, "y": 8}, exact).reward == 0.0


def test_wrong_type_is_zero_with_the_reason():
    score = action_reward({"action_type": "scroll", "direction": "up"}, CLICK)
    assert score.reward == 0.0 and "wrong action_type 'scroll'" in score.reason


def test_type_is_lower_cased_but_not_stripped_as_in_the_script():
    assert action_reward({"action_type": "CLICK", "x": 100, "y": 700}, CLICK).reward == 1.0
    assert action_reward({"action_type": " click", "x": 100, "y": 700}, CLICK).reward == 0.0


@pytest.mark.parametrize(
    ("pred", "gt", "reward"),
    [
        ({"action_type": "scroll", "direction": " UP "}, {"action_type": "scroll", "direction": "up"}, 1.0),
        ({"action_type": "scroll", "direction": "down"}, {"action_type": "scroll", "direction": "up"}, 0.0),
        ({"action_type": "open_app", "app_name": "kayak"}, {"action_type": "open_app", "app_name": "Kayak"}, 1.0),
        ({"action_type": "open_app", "app_name": "Gmail"}, {"action_type": "open_app", "app_name": "Kayak"}, 0.0),
        ({"action_type": "input_text", "text": " Hello"}, {"action_type": "input_text", "text": "hello "}, 1.0),
        ({"action_type": "input_text"}, {"action_type": "input_text", "text": "hello"}, 0.0),
        ({"action_type": "navigate_back", "x": 3}, {"action_type": "navigate_back"}, 1.0),
    ],
)
def test_exact_match_rules_per_type(pred, gt, reward):
    assert action_reward(pred, gt).reward == reward


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("<answer>click at 3, 4</answer>", "not JSON"),
        ("<answer>[1, 2]</answer>", "not a JSON object"),
        ('<answer>{"x": 1, "y": 2}</answer>', "no string action_type"),
        ('<answer>{"action_type": "click", "x": "left", "y": 2}</answer>', "numeric x and y"),
        ('<answer>{"action_type": "click", "y": 2}</answer>', "numeric x and y"),
        ("", "not JSON"),
    ],
)
def test_malformed_output_is_zero_with_the_reason_and_never_raises(completion, reason):
    score = action_reward(completion, CLICK)
    assert score.reward == 0.0 and reason in score.reason


def test_non_text_and_non_dict_predictions_are_zero():
    assert action_reward(None, CLICK).reward == 0.0  # type: ignore[arg-type]
    assert "malformed" in action_reward(["click"], CLICK).reason  # type: ignore[arg-type]
    assert best_action_reward({"action_type": "navigate_back"}, []).reason == "no ground truth"


def test_format_reward_and_the_answer_parsing_of_the_script():
    good = to_completion({"action_type": "navigate_back"})
    assert good == '<answer>{"action_type": "navigate_back"}</answer>'
    assert format_reward(good) == 1.0
    assert format_reward('{"action_type": "navigate_back"}') == 0.0
    assert format_reward("<answer>\nmulti\nline</answer>") == 1.0  # DOTALL
    # without the tag the script scores the whole completion: R_action can be 1 while R_format is 0
    assert action_reward('{"action_type": "navigate_back"}', {"action_type": "navigate_back"}).reward == 1.0
    fenced = '<answer>```json\n{"action_type": "scroll", "direction": "up"}\n```</answer>'
    assert parse_answer(fenced) == {"action_type": "scroll", "direction": "up"}


def test_completion_text_and_dict_give_the_same_reward():
    preds = [{"action_type": "click", "x": x, "y": 700} for x in (0, 89, 400, 733)]
    for pred in preds:
        assert action_reward(to_completion(pred), CLICK) == action_reward(pred, CLICK)


def test_best_of_several_ground_truths():
    back = {"action_type": "navigate_back"}
    assert best_action_reward(back, [CLICK, back]).reward == 1.0
    assert best_action_reward({"action_type": "click", "x": 0, "y": 0}, [CLICK, back]).reason == "click outside bbox"
