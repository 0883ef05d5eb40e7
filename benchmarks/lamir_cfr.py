"""Benchmark of LAMIR's CFR+ (:func:`iclr26.lamir.solve_cfr_plus`) against OpenSpiel's C++ ``CFRPlusSolver``.

Issue 18 measured the package's CFR+ 8.6x slower per iteration than OpenSpiel's C++ solver on Kuhn poker (and 6.5x
faster on Leduc poker); 70-90 % of its time went to the forward/backward passes. The passes now gather every array
that does not depend on σ once per subgame (``subgame._Passes``), and since session 6 the iterations run in a compiled
loop (``lamir/_cfr.c``, the default backend); the results are bit-for-bit those of the earlier passes
(``tests/lamir/test_lamir_subgame.py`` checks it against a copy of them, ``test_lamir_cfr_native.py`` the C loop
against the numpy loop). ``--backend python`` times the numpy loop instead.

Both solvers run alternating-update CFR+ on the whole game (Kuhn: a chance root and 58 nodes; Leduc: 9457 nodes).
Ours runs on the flat subgame that the true model builds from the game's root (what the continual resolver hands
to CFR+), OpenSpiel's on the ``pyspiel.Game``. Each timed call is a fresh solve of ``K`` iterations including the
solver's construction (ours also computes the average profile's values; OpenSpiel's C++ average policy is read out), so
the time per iteration is the call's time / ``K``. The two run interleaved round by round in one process on one
thread, the first alternating; the script prints the median of the per-round ratios package / OpenSpiel (with min
and max) and both solvers' game value of their average profiles as a sanity check (Kuhn: -1/18 ≈ -0.0556). Target
(issue 18): ≤ 2x on Kuhn, and keep the lead on Leduc.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lamir_cfr.py --rounds 15 --clock cpu

``--clock cpu`` times each call by its thread's CPU time (robust to a loaded machine); ``--clock wall`` (default) by
``perf_counter``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyspiel

from iclr26.lamir.games import tabulate_game
from iclr26.lamir.search import whole_game_subgame
from iclr26.lamir.subgame import Subgame, solve_cfr_plus

CLOCK = time.perf_counter  # --clock cpu: time.thread_time, the CPU time of this thread (robust to a loaded machine)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = CLOCK()
    out = fn()
    return CLOCK() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="kuhn_poker,leduc_poker", help="OpenSpiel game names, comma-separated")
    parser.add_argument("--iterations", default="1000,30", help="CFR+ iterations K per timed call, one per game")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per game (after one warm-up)")
    parser.add_argument("--backend", choices=("native", "python"), default="native", help="the package's CFR+ loop")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this thread's CPU time (one thread: excludes waiting on a loaded machine)",
    )
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    names = args.games.split(",")
    iterations = [int(k) for k in args.iterations.split(",")]
    if len(iterations) != len(names):
        parser.error(f"--iterations needs one count per game ({len(names)}), got {args.iterations}")
    print(
        f"numpy {np.__version__}, rounds={args.rounds} clock={args.clock} "
        "(ratio = package / OpenSpiel per iteration; median, min, max)"
    )
    print(
        f"{'game':<13}{'K':>6}{'package us/it':>15}{'OpenSpiel us/it':>17}{'median':>8}{'min':>7}{'max':>7}"
        f"{'value pkg':>11}{'value OS':>10}"
    )
    for name, k in zip(names, iterations, strict=True):
        game = pyspiel.load_game(name)
        sg = whole_game_subgame(tabulate_game(game, allow_chance=True))

        def package(sg: Subgame = sg, k: int = k) -> object:
            return solve_cfr_plus(sg, iterations=k, backend=args.backend)

        def openspiel(game: pyspiel.Game = game, k: int = k) -> object:
            solver = pyspiel.CFRPlusSolver(game)
            for _ in range(k):
                solver.evaluate_and_update_policy()
            return solver.tabular_average_policy()  # a copy: average_policy() dies with its solver

        fns = {"package": package, "openspiel": openspiel}
        # warm-up, and the game value of each solver's average profile (outside the timed calls)
        values = {
            "package": package().value,
            "openspiel": float(pyspiel.expected_returns(game.new_initial_state(), openspiel(), -1, True)[0]),
        }
        times: dict[str, list[float]] = {n: [] for n in fns}
        for r in range(args.rounds):
            for n in list(fns) if r % 2 == 0 else list(reversed(fns)):
                times[n].append(timed(fns[n])[0] / k)
        ratios = [p / c for p, c in zip(times["package"], times["openspiel"], strict=True)]
        print(
            f"{name:<13}{k:>6}{1e6 * statistics.median(times['package']):>15.1f}"
            f"{1e6 * statistics.median(times['openspiel']):>17.1f}{statistics.median(ratios):>8.2f}"
            f"{min(ratios):>7.2f}{max(ratios):>7.2f}{values['package']:>11.4f}{values['openspiel']:>10.4f}"
        )


if __name__ == "__main__":
    main()
