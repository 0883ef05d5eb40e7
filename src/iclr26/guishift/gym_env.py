"""The GUI world as a goal-conditioned gymnasium environment.

GUI-Shift, ICLR 2026, arXiv 2505.12493. An episode starts on a random screen of a :class:`~iclr26.guishift.env.World`
with a goal screen at shortest distance ``1..max_distance``; the agent sees both screenshots (the goal given as a
screen, the paper's "target screenshot" setting) and acts until it reaches the goal (reward 1, terminated) or runs out
of steps (truncated). An action that changes nothing, or a malformed one, costs a step, earns 0 and is explained in
``info["reason"]``; it never raises.

Observation: ``{"screen": (H, W, 3) uint8, "goal": (H, W, 3) uint8}``. Action: a ``Dict`` of indices,
``{"action_type": 0..4, "x": 0..W-1, "y": 0..H-1, "direction": 0..3, "app": 0..n_apps-1, "text": 0..n_text-1}``,
turned into the official action schema by :func:`index_action` (only the fields the type needs are read). Official
action dicts can also be passed to :meth:`GUIEnv.step` directly.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from iclr26.guishift.data import random_state
from iclr26.guishift.env import (
    ACTION_TYPES,
    DIRECTIONS,
    State,
    World,
    app_name,
    render,
    shortest_paths,
    step,
    text_name,
)

__all__ = ["GUIEnv", "index_action"]


def index_action(action: dict[str, Any]) -> dict[str, Any]:
    """A ``Dict``-space action of indices → the official action dict (``{"action_type": "click", "x": 5, ...}``)."""
    kind = ACTION_TYPES[int(action["action_type"])]
    if kind == "click":
        return {"action_type": kind, "x": int(action["x"]), "y": int(action["y"])}
    if kind == "scroll":
        return {"action_type": kind, "direction": DIRECTIONS[int(action["direction"])]}
    if kind == "open_app":
        return {"action_type": kind, "app_name": app_name(int(action["app"]))}
    if kind == "input_text":
        return {"action_type": kind, "text": text_name(int(action["text"]))}
    return {"action_type": kind}


class GUIEnv(gym.Env):
    """Goal-conditioned GUI navigation in a procedural world (module docstring).

    Args:
        world: the world to act in.
        max_distance: largest shortest distance from start to goal.
        max_steps: steps before truncation.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, world: World, *, max_distance: int = 4, max_steps: int = 8, render_mode: str | None = None):
        if max_distance < 1:
            raise ValueError(f"max_distance must be >= 1, got {max_distance}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.world, self.max_distance, self.max_steps = world, max_distance, max_steps
        self.render_mode = render_mode
        img = spaces.Box(0, 255, shape=(world.size, world.size, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict({"screen": img, "goal": img})
        self.action_space = spaces.Dict({
            "action_type": spaces.Discrete(len(ACTION_TYPES)),
            "x": spaces.Discrete(world.size),
            "y": spaces.Discrete(world.size),
            "direction": spaces.Discrete(len(DIRECTIONS)),
            "app": spaces.Discrete(world.n_apps),
            "text": spaces.Discrete(world.n_text),
        })  # fmt: skip
        self.state: State = (-1, 0, 0, -1)
        self.goal: State = self.state
        self.steps = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"screen": render(self.world, self.state), "goal": render(self.world, self.goal)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """A new episode: a random start and a goal at distance ``1..max_distance`` (``options`` may fix
        ``"start"`` and ``"goal"`` states)."""
        super().reset(seed=seed)
        options = options or {}
        while True:
            start = options.get("start") or random_state(self.world, self.np_random)
            if "goal" in options:
                goal = options["goal"]
                break
            d = int(self.np_random.integers(1, self.max_distance + 1))
            at_d = sorted(s for s, (dist, _) in shortest_paths(self.world, start, d).items() if dist == d)
            if at_d:
                goal = at_d[int(self.np_random.integers(len(at_d)))]
                break
        self.state, self.goal, self.steps = start, goal, 0
        return self._obs(), {"state": self.state, "goal": self.goal}

    def step(self, action: dict[str, Any]):
        """Apply ``action`` (a ``Dict``-space sample of indices, or an official action dict with a string
        ``action_type``)."""
        self.steps += 1
        try:
            official = action if isinstance(action.get("action_type"), str) else index_action(action)
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as err:
            official, reason = None, f"malformed action: {err!r}"
        if official is not None:
            result = step(self.world, self.state, official)
            self.state, reason = result.state, result.reason
        reached = self.state == self.goal
        info = {"reason": reason, "state": self.state, "goal": self.goal}
        return self._obs(), float(reached), reached, (not reached and self.steps >= self.max_steps), info

    def render(self) -> np.ndarray:
        """The current screenshot, ``(H, W, 3)`` uint8."""
        return render(self.world, self.state)
