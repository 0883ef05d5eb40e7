"""The GUI world: deterministic transitions, the rendered layout, bad actions, shortest paths."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.guishift.env import (
    HOME,
    PALETTE,
    effective_actions,
    generate_world,
    optimal_first_actions,
    render,
    shortest_paths,
    step,
)


@pytest.fixture(scope="module")
def world():
    return generate_world(n_apps=4, n_text=3, seed=7)


def _click(element):
    x1, y1, x2, y2 = element.bbox
    return {"action_type": "click", "x": (x1 + x2) / 2, "y": (y1 + y2) / 2}


def test_same_seed_same_world_and_screens(world):
    again = generate_world(n_apps=4, n_text=3, seed=7)
    assert again == world
    for s in world.states()[:50]:
        assert np.array_equal(render(world, s), render(again, s))
        for a in effective_actions(world, s):
            assert step(world, s, a) == step(again, s, a)  # deterministic transitions
    assert generate_world(n_apps=4, n_text=3, seed=8) != world


def test_click_icon_opens_app_and_button_opens_its_child(world):
    icon = world.icons[2]
    assert step(world, HOME, _click(icon)).state == (2, 0, 0, -1)
    main = world.apps[2].screens[0]
    button = next(e for e in main.elements if e.kind == "button")
    res = step(world, (2, 0, 0, -1), _click(button))
    assert res.changed and res.state == (2, button.target, 0, -1)
    # the child's header breadcrumb ends with its title, and the button on the parent shows the same colour
    c = world.cell
    child = world.apps[2].screens[button.target]
    img = render(world, res.state)
    assert np.array_equal(img[0, 2 * c], PALETTE[child.title])  # cell 2 of the header: depth-1 title
    assert np.array_equal(render(world, (2, 0, 0, -1))[button.bbox[1], button.bbox[0]], PALETTE[child.title])
    assert np.array_equal(img[0, 0], PALETTE[world.name_colors[2]])  # cell 0: the app's name colour


def test_back_open_app_scroll_and_text(world):
    assert step(world, (1, 0, 0, -1), {"action_type": "navigate_back"}).state == HOME
    child = world.apps[1].screens[1]
    assert step(world, (1, 1, 0, -1), {"action_type": "navigate_back"}).state == (1, child.parent, 0, -1)
    assert step(world, (1, 1, 0, -1), {"action_type": "open_app", "app_name": "App3"}).state == (3, 0, 0, -1)
    a, n = next((a, n) for a, app in enumerate(world.apps) for n, s in enumerate(app.screens) if s.list_rows)
    scr = world.apps[a].screens[n]
    down = step(world, (a, n, 0, -1), {"action_type": "scroll", "direction": "down"})
    assert down.state == (a, n, 1, -1)
    assert step(world, (a, n, 0, -1), {"action_type": "scroll", "direction": "up"}).reason == "the list is at its start"
    end = (a, n, scr.max_offset, -1)
    assert not step(world, end, {"action_type": "scroll", "direction": "down"}).changed
    a, n = next((a, n) for a, app in enumerate(world.apps) for n, s in enumerate(app.screens) if s.has_field)
    typed = step(world, (a, n, 0, -1), {"action_type": "input_text", "text": "t2"})
    assert typed.state == (a, n, 0, 2)
    assert (
        step(world, typed.state, {"action_type": "input_text", "text": "t2"}).reason
        == "the field already holds this text"
    )
    assert not np.array_equal(render(world, typed.state), render(world, (a, n, 0, -1)))


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("click", "malformed"),
        ({"action_type": 3}, "malformed"),
        ({"action_type": "tap"}, "unknown action_type"),
        ({"action_type": "click", "x": "a", "y": 1}, "numeric"),
        ({"action_type": "click", "x": 1}, "numeric"),
        ({"action_type": "click", "x": 1000, "y": 1000}, "no clickable element"),
        ({"action_type": "scroll", "direction": "sideways"}, "direction"),
        ({"action_type": "open_app", "app_name": "nope"}, "unknown app_name"),
        ({"action_type": "input_text", "text": "zzz"}, "unknown text"),
        ({"action_type": "navigate_back"}, "back on the home screen"),
        ({"action_type": "input_text", "text": "t0"}, "no text field"),
    ],
)
def test_bad_actions_leave_the_state_and_say_why(world, action, reason):
    res = step(world, HOME, action)
    assert res.state == HOME and not res.changed and reason in res.reason


def test_effective_actions_all_change_the_state(world):
    for s in world.states():
        for a in effective_actions(world, s):
            assert step(world, s, a).changed


def test_shortest_paths_hand_checked(world):
    # home -> app 1's main screen: one step, by its icon or by open_app
    d, firsts = optimal_first_actions(world, HOME, (1, 0, 0, -1))
    assert d == 1
    assert sorted(a["action_type"] for a in firsts) == ["click", "open_app"]
    # a depth-2 screen -> home: open_app of any app (to its main screen), then back: 2 steps; back first needs 3
    # (depth 1, main, home)
    deep = next(n for n, s in enumerate(world.apps[0].screens) if s.depth == 2)
    d, firsts = optimal_first_actions(world, (0, deep, 0, -1), HOME)
    assert d == 2 and firsts == [{"action_type": "open_app", "app_name": f"app{a}"} for a in range(4)]
    # a depth-2 screen -> another app's main: one open_app
    assert optimal_first_actions(world, (0, deep, 0, -1), (2, 0, 0, -1)) == (
        1, [{"action_type": "open_app", "app_name": "app2"}])  # fmt: skip
    assert optimal_first_actions(world, HOME, HOME) == (0, [])
    assert optimal_first_actions(world, HOME, (0, deep, 0, -1), max_depth=2) == (-1, [])
    # every state the search reaches at depth d is reached by d steps of its first actions and not fewer
    paths = shortest_paths(world, HOME, 3)
    assert {d for d, _ in paths.values()} == {0, 1, 2, 3}
    for s, (d, firsts) in paths.items():
        for a in firsts:
            nxt = step(world, HOME, a).state
            assert optimal_first_actions(world, nxt, s, max_depth=3)[0] == d - 1


def test_bad_world_sizes_name_the_argument():
    with pytest.raises(ValueError, match="n_apps"):
        generate_world(n_apps=13, n_text=2, seed=0)
    with pytest.raises(ValueError, match="size"):
        generate_world(n_apps=2, n_text=2, size=30, seed=0)
    with pytest.raises(ValueError, match="n_text"):
        generate_world(n_apps=12, n_text=20, seed=0)
