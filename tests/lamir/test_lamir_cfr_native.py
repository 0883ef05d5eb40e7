"""The compiled CFR+ loop gives the numpy loop's average strategies bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.common import native as native_module
from iclr26.lamir import subgame as subgame_module
from iclr26.lamir.games import tabulate_game
from iclr26.lamir.search import whole_game_subgame
from iclr26.lamir.subgame import SubgameBuilder, solve_cfr_plus


def _whole_game(name: str):
    import pyspiel

    return whole_game_subgame(tabulate_game(pyspiel.load_game(name), allow_chance=True))


def _random_subgame(seed: int):
    """Two weighted roots over random simultaneous-move trees: forced players, chance nodes, depth 1-3 leaves."""
    rng = np.random.default_rng(seed)
    b = SubgameBuilder()
    count = iter(range(10_000))

    def node(depth: int) -> int:
        if depth == 0 or rng.random() < 0.2:
            return b.terminal(float(rng.normal()))
        if rng.random() < 0.25:
            k = int(rng.integers(2, 4))
            return b.chance([node(depth - 1) for _ in range(k)], list(rng.dirichlet(np.ones(k))))
        sizes = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        infosets = tuple(
            b.infoset(p, ("i", p, sizes[p], next(count) % 3), tuple(range(sizes[p]))) if sizes[p] > 1 else -1
            for p in (0, 1)
        )
        children = np.array([[node(depth - 1) for _ in range(sizes[1])] for _ in range(sizes[0])])
        return b.decision(infosets, children)

    return b.finalize([node(3), node(3)], [0.7, 0.2])


def _cases():
    return {"kuhn": _whole_game("kuhn_poker"), "random-1": _random_subgame(1), "random-2": _random_subgame(2)}


@pytest.mark.parametrize("path_table", [True, False])
@pytest.mark.parametrize("name", ["kuhn", "random-1", "random-2"])
def test_native_loop_equals_the_numpy_loop_bit_for_bit(name, path_table, monkeypatch):
    if not path_table:  # the numpy reaches layer by layer; the C loop always goes layer by layer
        monkeypatch.setattr(subgame_module.CfrPasses, "PATH_TABLE_LIMIT", 0)
    sg = _cases()[name]
    for iterations in (1, 7, 400):
        native = solve_cfr_plus(sg, iterations=iterations)
        python = solve_cfr_plus(sg, iterations=iterations, backend="python")
        for p in (0, 1):
            assert native.strategy[p].tobytes() == python.strategy[p].tobytes(), (name, iterations, p)
        assert native.value == python.value


def test_native_loop_on_leduc_equals_the_numpy_loop():
    sg = _whole_game("leduc_poker")  # 9457 nodes, depth 11
    native = solve_cfr_plus(sg, iterations=4)
    python = solve_cfr_plus(sg, iterations=4, backend="python")
    for p in (0, 1):
        np.testing.assert_array_equal(native.strategy[p], python.strategy[p])
    assert native.strategy[0].std() > 0  # the strategies have moved away from uniform


def test_backend_and_missing_core_errors(monkeypatch):
    sg = _random_subgame(3)
    with pytest.raises(ValueError, match="backend must be 'native' or 'python'"):
        solve_cfr_plus(sg, iterations=1, backend="c")

    def missing(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(native_module.importlib, "import_module", missing)
    with pytest.raises(ImportError, match=r"CFR\+ loop iclr26.lamir._cfr is not built: run `make install`.*python"):
        solve_cfr_plus(sg, iterations=1)


def test_the_core_checks_its_arrays():
    core = native_module.compiled_core("iclr26.lamir._cfr", what="CFR+ loop", fallback="")

    sg = _random_subgame(4)
    passes = subgame_module.CfrPasses(sg)
    avg = tuple(np.zeros(size) for size in passes.sizes)
    good = passes.native_arrays(avg)
    core.solve(2, sg.num_nodes, 1, good)  # accepted
    bad_index = list(good)
    bad_index[3] = good[3].copy()
    bad_index[3][0] = sg.num_nodes  # an edge child past the last node
    with pytest.raises(ValueError, match="indices out of range"):
        core.solve(2, sg.num_nodes, 1, bad_index)
    bad_dtype = list(good)
    bad_dtype[2] = good[2].astype(np.float64)
    with pytest.raises(ValueError, match="array 2 must be int64"):
        core.solve(2, sg.num_nodes, 1, bad_dtype)
    with pytest.raises(ValueError, match="sequence of 32 buffers"):
        core.solve(2, sg.num_nodes, 1, good[:-1])
    read_only = list(good)
    read_only[0] = good[0].copy()
    read_only[0].flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        core.solve(2, sg.num_nodes, 1, read_only)
