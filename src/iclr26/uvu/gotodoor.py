"""The GoToDoor task family of ``minigrid`` as a multi-task offline-RL benchmark with task encodings ``z``.

Environment: ``minigrid.envs.GoToDoorEnv`` itself (minigrid 3.2; its own dynamics, rewards and termination): a room
of random size with one door of a distinct colour on each wall; the mission "go to the <colour> door" succeeds when
the agent performs ``done`` on a cell next to that door (reward ``1 - 0.9 t / T_max``); ``done`` elsewhere or
``toggle`` ends the episode with reward 0. A *task* is a minigrid seed: it fixes the layout, the start pose and the
target colour. We use minigrid's dynamics directly (fast enough for the few thousand transitions and the few hundred
evaluation roll-outs used here) but replace its egocentric image observation with a fully observed symbolic state
(below), so that small MLPs suffice on a CPU.

Features: the state ``s`` is the agent's one-hot x, y and direction plus, for each wall (top, bottom, left, right),
its door's one-hot x, y and colour; the task code ``z`` is the one-hot target colour.

Glossary: ``D_s`` state features, ``Z`` = 6 colours (task code size), ``T`` steps of an episode.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from minigrid.core.constants import COLOR_NAMES, DIR_TO_VEC
from minigrid.envs.gotodoor import GoToDoorEnv

NUM_ACTIONS = 7  # minigrid: left, right, forward, pickup, drop, toggle, done
DONE = 6
WALLS = ("top", "bottom", "left", "right")


@dataclass(frozen=True)
class Task:
    """One GoToDoor task (a minigrid seed) and its layout.

    Attributes:
        seed: the minigrid seed that generates it.
        doors: per wall (top, bottom, left, right) the door's ``(x, y, colour index)``.
        target_wall: index into :data:`WALLS` of the target door.
        target_color: colour index (into ``minigrid.core.constants.COLOR_NAMES``) of the target door.
    """

    seed: int
    doors: tuple[tuple[int, int, int], ...]
    target_wall: int
    target_color: int


@dataclass(frozen=True)
class Rollout:
    """The outcome of running a deterministic policy on one task.

    Attributes:
        success: the episode ended with ``done`` next to the target door.
        discounted_return: ``Σ_t γ^t r_t`` (the true ``Q^π(s_0, π(s_0), z)``; 0 on failure).
        steps: actions taken (up to the loop that was detected, for a policy that cycles).
    """

    success: bool
    discounted_return: float
    steps: int


@dataclass(frozen=True)
class Episode:
    """Logged transitions of one episode, as arrays of length ``T``.

    Attributes:
        states: ``(T, D_s)``; actions: ``(T,)``; rewards: ``(T,)``; next_states: ``(T, D_s)``;
        dones: ``(T,)`` (1 only for a true termination; a cut-off episode ends with 0); task: colour index.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_states: np.ndarray
    dones: np.ndarray
    task: int


class GoToDoorFamily:
    """Tasks, features, an expert, data collection and policy roll-outs for ``GoToDoorEnv(size)``.

    Args:
        size: grid size of ``GoToDoorEnv`` (rooms of 5..size cells a side), ``>= 5``.
    """

    def __init__(self, size: int) -> None:
        if size < 5:
            raise ValueError(f"size must be >= 5 (minigrid's GoToDoor minimum), got {size}")
        self.size = size
        self.env = GoToDoorEnv(size=size)
        self.door_dim = 2 * size + len(COLOR_NAMES)
        self.state_dim = 2 * size + 4 + len(WALLS) * self.door_dim
        self.task_dim = len(COLOR_NAMES)

    def reset(self, seed: int) -> Task:
        """Reset the environment to task ``seed`` and describe it."""
        self.env.reset(seed=seed)
        grid = self.env.grid
        found = []
        for x in range(grid.width):
            for y in range(grid.height):
                cell = grid.get(x, y)
                if cell is not None and cell.type == "door":
                    found.append((x, y, COLOR_NAMES.index(cell.color)))
        top = next(d for d in found if d[1] == 0)
        left = next(d for d in found if d[0] == 0)
        rest = [d for d in found if d not in (top, left)]
        bottom = max(rest, key=lambda d: d[1])
        right = next(d for d in rest if d != bottom)
        doors = (top, bottom, left, right)
        target = tuple(int(v) for v in self.env.target_pos)
        wall = next(i for i, d in enumerate(doors) if (d[0], d[1]) == target)
        return Task(seed=seed, doors=doors, target_wall=wall, target_color=COLOR_NAMES.index(self.env.target_color))

    def features(self, task: Task) -> np.ndarray:
        """``(D_s,)`` float32 features of the environment's current state (agent pose + the task's layout)."""
        f = np.zeros(self.state_dim, dtype=np.float32)
        x, y = (int(v) for v in self.env.agent_pos)
        f[x] = 1.0
        f[self.size + y] = 1.0
        f[2 * self.size + int(self.env.agent_dir)] = 1.0
        for k, (dx, dy, colour) in enumerate(task.doors):
            base = 2 * self.size + 4 + k * self.door_dim
            f[base + dx] = 1.0
            f[base + self.size + dy] = 1.0
            f[base + 2 * self.size + colour] = 1.0
        return f

    def task_code(self, task: Task) -> np.ndarray:
        """``z``: the one-hot target colour, ``(Z,)`` float32."""
        z = np.zeros(self.task_dim, dtype=np.float32)
        z[task.target_color] = 1.0
        return z

    def _pose(self) -> tuple[tuple[int, int], int]:
        return (int(self.env.agent_pos[0]), int(self.env.agent_pos[1])), int(self.env.agent_dir)

    def expert_action(self) -> int:
        """A shortest-path action to the target door (breadth-first search over poses), ``done`` next to it."""
        tx, ty = (int(v) for v in self.env.target_pos)

        def at_goal(p: tuple[int, int]) -> bool:
            return (p[0] == tx and abs(p[1] - ty) == 1) or (p[1] == ty and abs(p[0] - tx) == 1)

        start = self._pose()
        if at_goal(start[0]):
            return DONE
        first: dict[tuple[tuple[int, int], int], int | None] = {start: None}
        queue = deque([start])
        while queue:
            pos, direction = queue.popleft()
            for action in (0, 1, 2):
                if action == 0:
                    nxt = (pos, (direction - 1) % 4)
                elif action == 1:
                    nxt = (pos, (direction + 1) % 4)
                else:
                    fwd = (pos[0] + int(DIR_TO_VEC[direction][0]), pos[1] + int(DIR_TO_VEC[direction][1]))
                    cell = self.env.grid.get(*fwd)
                    nxt = (fwd, direction) if cell is None or cell.can_overlap() else (pos, direction)
                if nxt in first:
                    continue
                first[nxt] = action if first[(pos, direction)] is None else first[(pos, direction)]
                if at_goal(nxt[0]):
                    return int(first[nxt])
                queue.append(nxt)
        raise RuntimeError("no path to the target door: the room layout is not a GoToDoor room")

    def collect(self, task: Task, *, epsilon: float, max_steps: int | None, rng: np.random.Generator) -> Episode:
        """One ε-noisy expert episode of ``task``, cut off after ``max_steps`` actions (``None``: run to the end).

        With probability ``epsilon`` an action is drawn uniformly from all 7 minigrid actions, else the expert's.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps must be >= 1 or None (run to the end), got {max_steps}")
        self.reset(task.seed)
        rows: list[tuple[np.ndarray, int, float, np.ndarray, float]] = []
        while max_steps is None or len(rows) < max_steps:
            s = self.features(task)
            a = int(rng.integers(NUM_ACTIONS)) if rng.random() < epsilon else self.expert_action()
            _, r, terminated, truncated, _ = self.env.step(a)
            rows.append((s, a, float(r), self.features(task), float(terminated)))
            if terminated or truncated:
                break
        return Episode(
            states=np.stack([r[0] for r in rows]),
            actions=np.array([r[1] for r in rows], dtype=np.int64),
            rewards=np.array([r[2] for r in rows], dtype=np.float32),
            next_states=np.stack([r[3] for r in rows]),
            dones=np.array([r[4] for r in rows], dtype=np.float32),
            task=task.target_color,
        )

    def rollout(self, task: Task, policy, *, gamma: float) -> Rollout:
        """Run the deterministic ``policy(features, task_code) -> action`` on ``task`` from its start.

        A deterministic policy in these deterministic dynamics cycles forever once a pose repeats: the roll-out
        stops there with failure (return 0, exactly what the time limit would give).
        """
        self.reset(task.seed)
        z = self.task_code(task)
        visited: set[tuple[tuple[int, int], int]] = set()
        ret, discount, steps = 0.0, 1.0, 0
        while True:
            pose = self._pose()
            if pose in visited:
                return Rollout(success=False, discounted_return=0.0, steps=steps)
            visited.add(pose)
            _, r, terminated, truncated, _ = self.env.step(int(policy(self.features(task), z)))
            steps += 1
            ret += discount * float(r)
            discount *= gamma
            if terminated or truncated:
                return Rollout(success=float(r) > 0.0, discounted_return=ret, steps=steps)
