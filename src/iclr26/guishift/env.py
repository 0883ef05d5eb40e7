"""A procedural GUI world: apps of screens with buttons, lists and text fields, rendered to small RGB images.

GUI-Shift: K-step GUI Transition as Self-supervised RL for GUI Agents, ICLR 2026, arXiv 2505.12493. The paper trains
on AndroidControl screenshots; this module is the stand-in that a CPU can explore (see the README's Deviations).

A :class:`World` holds a home screen (one launcher icon per app) and apps. An app is a tree of screens (its main screen
at the root, depth <= 2); every screen has a header row and up to seven content rows on a grid of ``cell``-pixel
cells (``G = size // cell`` cells a side):

- the header shows the app's name colour (cell 0) and the breadcrumb of screen titles from the main screen to this
  one (cells 1..3), so a screen names itself and its ancestors, as a title bar and a "Settings > Wi-Fi" path do;
- a button per child screen, filled with the child's title colour (a button labelled with the screen it opens);
- optionally a list (three rows, striped) that scrolls up/down through ``list_rows + max_offset`` items;
- optionally a text field (an outlined box, its outline the colour of the entered text token, grey when empty).

The state is ``(app, node, offset, text)`` (``app = -1``: home). Transitions are deterministic
(:func:`step`): ``click`` on a button opens its child, on a launcher icon its app's main screen; ``scroll`` moves the
list; ``navigate_back`` goes to the parent screen (from a main screen to home); ``open_app`` goes to the app's main
screen; ``input_text`` sets the field's token. Entering a screen resets its scroll and text. An action that changes
nothing (a click on empty space, back on the home screen, a scroll without a list ...) leaves the state as it was and
says why in :class:`StepResult.reason`.

Actions are the dicts of the official action schema (``UbiquitousLearning/UIShift``, ``train/grpo_uishift.py`` and
its prompt): ``{"action_type": "click", "x": .., "y": ..}``, ``{"action_type": "scroll", "direction": "up"}``,
``{"action_type": "navigate_back"}``, ``{"action_type": "open_app", "app_name": "app3"}``,
``{"action_type": "input_text", "text": "t2"}``. Ground-truth clicks carry the ``bbox`` ``[x1, y1, x2, y2]``
(inclusive pixels) of the element clicked, as the official data do.

Shape glossary: ``H = W = size`` pixels, ``G = size // cell`` grid cells a side, images are ``(H, W, 3)`` uint8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ACTION_TYPES",
    "DIRECTIONS",
    "App",
    "Element",
    "Screen",
    "State",
    "StepResult",
    "World",
    "app_name",
    "effective_actions",
    "generate_world",
    "optimal_first_actions",
    "render",
    "shortest_paths",
    "step",
    "text_name",
]

ACTION_TYPES = ("click", "scroll", "navigate_back", "open_app", "input_text")
DIRECTIONS = ("up", "down", "left", "right")
#: 27 colours: every RGB triple of the levels below; index 0 is never used for content (too dark on black).
_LEVELS = np.array([70, 160, 250], dtype=np.uint8)
PALETTE = np.stack(np.meshgrid(_LEVELS, _LEVELS, _LEVELS, indexing="ij"), axis=-1).reshape(-1, 3)
EMPTY_FIELD = np.array([90, 90, 90], dtype=np.uint8)

State = tuple[int, int, int, int]
"""``(app, node, offset, text)``: app (-1 for home), screen node in the app, list offset, text token (-1 empty)."""

HOME: State = (-1, 0, 0, -1)


def app_name(a: int) -> str:
    """The ``app_name`` string of app ``a`` in actions (``"app3"``)."""
    return f"app{a}"


def text_name(k: int) -> str:
    """The ``text`` string of text token ``k`` in actions (``"t2"``)."""
    return f"t{k}"


@dataclass(frozen=True)
class Element:
    """One element of a screen's element tree.

    Attributes:
        kind: ``"button"``, ``"icon"`` (home launcher), ``"list"`` or ``"field"``.
        bbox: ``(x1, y1, x2, y2)`` inclusive pixel box.
        target: the child node a button opens, the app an icon opens; -1 otherwise.
    """

    kind: str
    bbox: tuple[int, int, int, int]
    target: int = -1

    def contains(self, x: float, y: float) -> bool:
        """Whether ``(x, y)`` lies in the box, edges included (the official ``is_point_in_bbox``)."""
        x1, y1, x2, y2 = self.bbox
        return x1 <= x <= x2 and y1 <= y <= y2


@dataclass(frozen=True)
class Screen:
    """A screen of an app.

    Attributes:
        title: palette index of its title colour.
        parent: parent node (-1 for the main screen).
        depth: 0 for the main screen.
        elements: the element tree (buttons, then list and field if any).
        list_items: palette indices of the list's items (empty without a list).
        list_rows: rows of the list window.
    """

    title: int
    parent: int
    depth: int
    elements: tuple[Element, ...]
    list_items: tuple[int, ...] = ()
    list_rows: int = 0

    @property
    def max_offset(self) -> int:
        """Largest list offset (0 without a list)."""
        return max(len(self.list_items) - self.list_rows, 0)

    @property
    def has_field(self) -> bool:
        """Whether the screen has a text field."""
        return any(e.kind == "field" for e in self.elements)


@dataclass(frozen=True)
class App:
    """An app: its name index and its screens (node 0 is the main screen)."""

    name: int
    screens: tuple[Screen, ...]


@dataclass(frozen=True)
class World:
    """A home screen and the apps it launches.

    Attributes:
        apps: the apps; app ``a`` has name ``app_name(a)`` and name colour ``name_colors[a]``.
        icons: the home screen's launcher icons (``target`` = app index).
        name_colors: palette index of each app's name colour.
        text_colors: palette index of each text token's colour.
        size: image side in pixels.
        cell: grid cell side in pixels.
    """

    apps: tuple[App, ...]
    icons: tuple[Element, ...]
    name_colors: tuple[int, ...]
    text_colors: tuple[int, ...]
    size: int
    cell: int

    @property
    def grid(self) -> int:
        """Cells per side, ``G``."""
        return self.size // self.cell

    @property
    def n_apps(self) -> int:
        """Number of apps."""
        return len(self.apps)

    @property
    def n_text(self) -> int:
        """Number of text tokens."""
        return len(self.text_colors)

    def screen(self, state: State) -> Screen | None:
        """The app screen of ``state`` (None on the home screen)."""
        app, node, _, _ = state
        return None if app < 0 else self.apps[app].screens[node]

    def elements(self, state: State) -> tuple[Element, ...]:
        """The element tree of the screen shown in ``state``."""
        scr = self.screen(state)
        return self.icons if scr is None else scr.elements

    def states(self) -> list[State]:
        """Every reachable state, home first."""
        out = [HOME]
        for a, app in enumerate(self.apps):
            for n, scr in enumerate(app.screens):
                texts = range(-1, self.n_text) if scr.has_field else (-1,)
                out += [(a, n, o, t) for o in range(scr.max_offset + 1) for t in texts]
        return out


def _box(world_cell: int, col: int, row: int, width: int, height: int = 1) -> tuple[int, int, int, int]:
    c = world_cell
    return (col * c, row * c, (col + width) * c - 1, (row + height) * c - 1)


def generate_world(*, n_apps: int, n_text: int, size: int = 32, cell: int = 4, seed: int, branching: int = 2) -> World:
    """A random world of ``n_apps`` apps, each a tree of screens of depth <= 2.

    Args:
        n_apps: apps (and launcher icons); at most 12 fit on the home screen of an 8-cell grid.
        n_text: text tokens an input field accepts.
        size: image side ``H = W`` in pixels (a multiple of ``cell``, at least 8 cells).
        cell: grid cell side in pixels.
        seed: the draw; the same seed gives the same world.
        branching: children of the main and of each depth-1 screen.

    Returns:
        The :class:`World`.

    Raises:
        ValueError: for sizes that do not fit the layout (the message names the argument).
    """
    if cell < 2 or size % cell:
        raise ValueError(f"size must be a multiple of cell >= 2, got size={size}, cell={cell}")
    grid = size // cell
    if grid < 8:
        raise ValueError(f"size // cell must be >= 8 grid cells (header + 7 rows), got {grid}")
    n_slots = ((grid - 1) // 2) * ((grid + 1) // 2)  # icon slots: even rows >= 2 x even columns
    if not 1 <= n_apps <= n_slots:
        raise ValueError(f"n_apps must be in [1, {n_slots}] for a {grid}-cell grid, got {n_apps}")
    if not 1 <= n_text <= 26 - n_apps:
        raise ValueError(f"n_text must be in [1, {26 - n_apps}] (26 colours shared with the apps), got {n_text}")
    if not 1 <= branching <= 3:
        raise ValueError(f"branching must be in [1, 3], got {branching}")
    rng = np.random.default_rng(seed)
    colors = np.arange(1, len(PALETTE))
    # an app looks the same in every world (its name colour, as an app's icon does), and so does a text token
    name_colors = tuple(int(c) for c in colors[:n_apps])
    text_colors = tuple(int(c) for c in colors[::-1][:n_text])
    # home: icons one cell wide on even rows and even columns below the header, in random slots
    slots = [(col, row) for row in range(2, grid, 2) for col in range(0, grid, 2)]
    pick = rng.choice(len(slots), size=n_apps, replace=False)
    icons = tuple(Element("icon", _box(cell, *slots[i], 1), a) for a, i in enumerate(pick))
    apps = []
    for a in range(n_apps):
        # the tree: node 0 main; depth-1 children of 0, depth-2 children of those
        parents, depths = [-1], [0]
        for depth in (1, 2):
            for p in [i for i, d in enumerate(depths) if d == depth - 1]:
                for _ in range(branching):
                    parents.append(p)
                    depths.append(depth)
        titles = rng.choice(colors, size=len(parents), replace=False)
        screens = []
        for node, (parent, depth) in enumerate(zip(parents, depths, strict=True)):
            children = [i for i, p in enumerate(parents) if p == node]
            has_list = bool(rng.random() < 0.5) or not children
            has_field = bool(rng.random() < 0.5) or not children
            blocks = [("button", 1, child) for child in children]
            if has_list:
                blocks.append(("list", 3, -1))
            if has_field:
                blocks.append(("field", 1, -1))
            order = rng.permutation(len(blocks))
            spare = grid - 1 - sum(b[1] for b in blocks)
            row = 1
            elements, items, rows = [], (), 0
            for i in order:
                kind, height, target = blocks[i]
                gap = int(rng.integers(0, spare + 1)) if spare > 0 else 0
                spare -= gap
                row += gap
                if kind == "button":
                    width = int(rng.integers(2, min(4, grid) + 1))
                    col = int(rng.integers(0, grid - width + 1))
                    elements.append(Element("button", _box(cell, col, row, width), target))
                elif kind == "list":
                    elements.append(Element("list", _box(cell, 0, row, grid, 3)))
                    rows = 3
                    items = tuple(int(c) for c in rng.choice(colors, size=3 + 2, replace=True))
                else:
                    width = min(3, grid)
                    col = int(rng.integers(0, grid - width + 1))
                    elements.append(Element("field", _box(cell, col, row, width)))
                row += height
            screens.append(Screen(int(titles[node]), parent, depth, tuple(elements), items, rows))
        apps.append(App(a, tuple(screens)))
    return World(tuple(apps), icons, name_colors, text_colors, size, cell)


def render(world: World, state: State) -> np.ndarray:
    """The screenshot of ``state``: ``(H, W, 3)`` uint8 (see the module docstring for the layout)."""
    c, img = world.cell, np.zeros((world.size, world.size, 3), dtype=np.uint8)

    def fill(bbox: tuple[int, int, int, int], color: np.ndarray) -> None:
        x1, y1, x2, y2 = bbox
        img[y1 : y2 + 1, x1 : x2 + 1] = color

    app, node, offset, text = state
    if app < 0:
        for icon in world.icons:
            fill(icon.bbox, PALETTE[world.name_colors[icon.target]])
        return img
    screens = world.apps[app].screens
    fill(_box(c, 0, 0, 1), PALETTE[world.name_colors[app]])
    path, n = [], node
    while n >= 0:
        path.append(n)
        n = screens[n].parent
    for i, n in enumerate(reversed(path)):  # breadcrumb: main ... this screen
        fill(_box(c, 1 + i, 0, 1), PALETTE[screens[n].title])
    scr = screens[node]
    for e in scr.elements:
        x1, y1, x2, y2 = e.bbox
        if e.kind == "button":
            fill(e.bbox, PALETTE[screens[e.target].title])
        elif e.kind == "list":
            for r in range(scr.list_rows):
                ry = y1 + r * c
                img[ry : ry + c - 1 : 2, x1 : x2 + 1] = PALETTE[scr.list_items[offset + r]]  # striped rows
        elif e.kind == "field":
            color = EMPTY_FIELD if text < 0 else PALETTE[world.text_colors[text]]
            fill(e.bbox, color)
            img[y1 + 1 : y2, x1 + 1 : x2] = 0  # outline only
    return img


@dataclass(frozen=True)
class StepResult:
    """What an action did.

    Attributes:
        state: the next state (the same state when nothing changed).
        changed: whether the state changed.
        reason: ``"ok"`` or why nothing changed (``"malformed action: ..."``, ``"no clickable element at ..."``).
    """

    state: State
    changed: bool
    reason: str


def _malformed(state: State, why: str) -> StepResult:
    return StepResult(state, False, f"malformed action: {why}")


def step(world: World, state: State, action: Any) -> StepResult:
    """The deterministic transition of ``action`` (a dict of the official schema) from ``state``.

    Never raises on a bad action: a malformed or ineffective one returns the same state and the reason.
    """
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        return _malformed(state, "not a dict with a string 'action_type'")
    kind = action["action_type"].strip().lower()
    app, node, offset, text = state
    scr = world.screen(state)
    if kind == "click":
        try:
            x, y = float(action["x"]), float(action["y"])
        except (KeyError, TypeError, ValueError):
            return _malformed(state, "click needs numeric 'x' and 'y'")
        hit = next((e for e in world.elements(state) if e.contains(x, y) and e.kind in ("button", "icon")), None)
        if hit is None:
            return StepResult(state, False, f"no clickable element at ({x:g}, {y:g})")
        nxt = (hit.target, 0, 0, -1) if hit.kind == "icon" else (app, hit.target, 0, -1)
        return StepResult(nxt, True, "ok")
    if kind == "scroll":
        direction = str(action.get("direction", "")).strip().lower()
        if direction not in DIRECTIONS:
            return _malformed(state, f"scroll direction must be one of {DIRECTIONS}, got {action.get('direction')!r}")
        if scr is None or scr.list_rows == 0 or direction in ("left", "right"):
            return StepResult(state, False, f"nothing scrolls {direction} on this screen")
        new = offset + (1 if direction == "down" else -1)
        if not 0 <= new <= scr.max_offset:
            return StepResult(state, False, f"the list is at its {'end' if direction == 'down' else 'start'}")
        return StepResult((app, node, new, text), True, "ok")
    if kind == "navigate_back":
        if scr is None:
            return StepResult(state, False, "back on the home screen")
        return StepResult(HOME if scr.parent < 0 else (app, scr.parent, 0, -1), True, "ok")
    if kind == "open_app":
        name = str(action.get("app_name", "")).strip().lower()
        names = {app_name(a): a for a in range(world.n_apps)}
        if name not in names:
            return _malformed(state, f"unknown app_name {action.get('app_name')!r}")
        nxt = (names[name], 0, 0, -1)
        return StepResult(nxt, nxt != state, "ok" if nxt != state else "the app's main screen is already shown")
    if kind == "input_text":
        token = str(action.get("text", "")).strip().lower()
        tokens = {text_name(k): k for k in range(world.n_text)}
        if token not in tokens:
            return _malformed(state, f"unknown text {action.get('text')!r}")
        if scr is None or not scr.has_field:
            return StepResult(state, False, "no text field on this screen")
        if tokens[token] == text:
            return StepResult(state, False, "the field already holds this text")
        return StepResult((app, node, offset, tokens[token]), True, "ok")
    return _malformed(state, f"unknown action_type {action['action_type']!r}")


def _centre(bbox: tuple[int, int, int, int]) -> tuple[int, int]:
    x1, y1, x2, y2 = bbox
    return (x1 + x2 + 1) // 2, (y1 + y2 + 1) // 2


_SUCCESSORS: dict[int, tuple[World, dict[State, list[tuple[dict[str, Any], State]]]]] = {}


def successors(world: World, state: State) -> list[tuple[dict[str, Any], State]]:
    """``(action, next state)`` for every action of :func:`effective_actions`; memoised per world (the world is
    immutable), so searches and walks do not recompute transitions."""
    entry = _SUCCESSORS.get(id(world))
    if entry is None or entry[0] is not world:
        if len(_SUCCESSORS) > 256:
            _SUCCESSORS.clear()
        entry = _SUCCESSORS[id(world)] = (world, {})
    table = entry[1]
    if state not in table:
        table[state] = [(a, step(world, state, a).state) for a in effective_actions(world, state)]
    return table[state]


def effective_actions(world: World, state: State) -> list[dict[str, Any]]:
    """Every action that changes ``state``, one per distinct effect; clicks at the element's centre with its bbox."""
    out: list[dict[str, Any]] = []
    for e in world.elements(state):
        if e.kind in ("button", "icon"):
            x, y = _centre(e.bbox)
            out.append({"action_type": "click", "x": x, "y": y, "bbox": list(e.bbox)})
    out += [{"action_type": "scroll", "direction": d} for d in ("up", "down")]
    out.append({"action_type": "navigate_back"})
    out += [{"action_type": "open_app", "app_name": app_name(a)} for a in range(world.n_apps)]
    out += [{"action_type": "input_text", "text": text_name(k)} for k in range(world.n_text)]
    return [a for a in out if step(world, state, a).changed]


def shortest_paths(world: World, start: State, max_depth: int) -> dict[State, tuple[int, list[dict[str, Any]]]]:
    """Every state within ``max_depth`` effective actions of ``start``, with its shortest distance and every first
    action of a shortest path to it (breadth-first search; all actions cost 1). ``start`` maps to ``(0, [])``."""
    moves = successors(world, start)
    firsts = [a for a, _ in moves]
    depth: dict[State, int] = {start: 0}
    first: dict[State, set[int]] = {start: set()}
    level: list[State] = []
    for i, (_, s) in enumerate(moves):
        if s not in depth:
            depth[s], first[s] = 1, set()
            level.append(s)
        first[s].add(i)
    # a state at depth d+1 collects the first-action sets of all its depth-d predecessors; expanding level by level
    # completes every set before it is propagated
    for d in range(1, max_depth):
        nxt: list[State] = []
        for s in level:
            for _, t in successors(world, s):
                if t not in depth:
                    depth[t], first[t] = d + 1, set()
                    nxt.append(t)
                if depth[t] == d + 1:
                    first[t] |= first[s]
        level = nxt
    return {s: (depth[s], [firsts[i] for i in sorted(first[s])]) for s in depth}


def optimal_first_actions(world: World, start: State, goal: State, max_depth: int = 8) -> tuple[int, list[dict]]:
    """Shortest-path distance from ``start`` to ``goal`` and every first action on a shortest path.

    Returns:
        ``(d, actions)``; ``d = 0`` and no actions when ``start == goal``; ``d = -1`` and no actions when the goal is
        farther than ``max_depth``.
    """
    return shortest_paths(world, start, max_depth).get(goal, (-1, []))
