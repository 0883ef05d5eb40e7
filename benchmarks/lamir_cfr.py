"""Benchmark of LAMIR's CFR+ (:func:`iclr26.lamir.solve_cfr_plus`) against OpenSpiel's C++ ``CFRPlusSolver``.

The contender is the solver a user of OpenSpiel would reach for: ``pyspiel.CFRPlusSolver``, OpenSpiel's C++
alternating-update CFR+. Both run CFR+ on the whole game (Kuhn: a chance root and 58 nodes; Leduc: 9457 nodes). Ours
runs on the flat subgame that the true model builds from the game's root (what the continual resolver hands to CFR+),
with the compiled loop (``lamir/_cfr.c``, the default backend; ``--backend python`` times the numpy loop, which gives
the same strategies bit for bit), OpenSpiel's on the ``pyspiel.Game``. Each timed call is a fresh solve of ``K``
iterations including the solver's construction (ours also computes the average profile's values; OpenSpiel's C++
average policy is read out), so the time per iteration is the call's time / ``K``.

The two run as paired rounds, interleaved in one process on one thread (the order swapped every round), and the
script prints, per game, the median over rounds of the per-round ratio package / OpenSpiel with its quartiles, which a
slow spell of a shared machine hits alike, and both solvers' game value of their average profiles as a check
(Kuhn: -1/18 ≈ -0.0556).

Usage (the committed output, ``benchmarks/lamir_cfr.txt``, came from this line)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lamir_cfr.py --rounds 40 --clock cpu

``--clock cpu`` (the default) times each call by the CPU time of its thread (``time.thread_time``), which other jobs
on a loaded machine inflate far less than the wall time of ``--clock wall`` (``perf_counter``).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version

import numpy as np
import pyspiel

from iclr26.lamir.games import tabulate_game
from iclr26.lamir.search import whole_game_subgame
from iclr26.lamir.subgame import Subgame, solve_cfr_plus

CLOCK = time.thread_time  # --clock wall: time.perf_counter


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = CLOCK()
    out = fn()
    return CLOCK() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="kuhn_poker,leduc_poker", help="OpenSpiel game names, comma-separated")
    parser.add_argument("--iterations", default="1000,30", help="CFR+ iterations K per timed call, one per game")
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds per game (after one warm-up)")
    parser.add_argument("--backend", choices=("native", "python"), default="native", help="the package's CFR+ loop")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="cpu",
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
        f"numpy {np.__version__}, open_spiel {version('open_spiel')}, {platform.machine()}, threads=1, "
        f"rounds={args.rounds} clock={args.clock} backend={args.backend}"
    )
    print("ratio = package / OpenSpiel per iteration, per round: median (quartiles)")
    print(
        f"{'game':<13}{'K':>6}{'package us/it':>15}{'OpenSpiel us/it':>17}{'ratio':>8}{'IQR':>14}"
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
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        print(
            f"{name:<13}{k:>6}{1e6 * statistics.median(times['package']):>15.1f}"
            f"{1e6 * statistics.median(times['openspiel']):>17.1f}{statistics.median(ratios):>8.3f}"
            f"{f'{q1:.3f}-{q3:.3f}':>14}{values['package']:>11.4f}{values['openspiel']:>10.4f}"
        )


if __name__ == "__main__":
    main()
