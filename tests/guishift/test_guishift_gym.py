"""The GUI world as a gymnasium environment (gymnasium comes with the rl extra)."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")  # the rl extra; only the gymnasium wrapper needs it

from gymnasium.utils.env_checker import check_env  # noqa: E402

from iclr26.guishift.env import HOME, generate_world  # noqa: E402
from iclr26.guishift.gym_env import GUIEnv, index_action  # noqa: E402


@pytest.fixture
def env():
    return GUIEnv(generate_world(n_apps=3, n_text=2, seed=1), max_steps=3)


def test_passes_gymnasium_check_env(env):
    check_env(env, skip_render_check=True)


def test_reaching_the_goal_pays_1_and_terminates(env):
    obs, info = env.reset(seed=0, options={"start": HOME, "goal": (1, 0, 0, -1)})
    assert info["goal"] == (1, 0, 0, -1)
    _, reward, terminated, truncated, info = env.step({"action_type": 3, "x": 0, "y": 0, "direction": 0, "app": 1,
                                                       "text": 0})  # fmt: skip
    assert (reward, terminated, truncated, info["reason"]) == (1.0, True, False, "ok")


def test_invalid_actions_pay_0_with_the_reason_and_truncate(env):
    env.reset(seed=0, options={"start": HOME, "goal": (1, 0, 0, -1)})
    reasons = []
    for action in ({"action_type": "navigate_back"}, {"nonsense": 1}, {"action_type": 0, "x": 31, "y": 0}):
        _, reward, terminated, truncated, info = env.step(action)
        assert reward == 0.0 and not terminated and info["state"] == HOME
        reasons.append(info["reason"])
    assert reasons[0] == "back on the home screen" and "malformed" in reasons[1]
    assert "no clickable element" in reasons[2] or "malformed" in reasons[2]
    assert truncated  # max_steps = 3


def test_index_action_maps_to_the_official_schema():
    assert index_action({"action_type": 1, "direction": 1}) == {"action_type": "scroll", "direction": "down"}
    assert index_action({"action_type": 4, "text": 1}) == {"action_type": "input_text", "text": "t1"}
    with pytest.raises(ValueError, match="max_steps"):
        GUIEnv(generate_world(n_apps=2, n_text=2, seed=0), max_steps=0)
