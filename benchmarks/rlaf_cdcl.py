"""Benchmark of RLAF's own CDCL solver against PySAT's MiniSat 2.2 and Glucose 4 on the same random 3-SAT (issue 18).

For each size ``n`` the script draws ``--formulas`` random 3-SAT formulas at the threshold (the rlaf generator,
ratio ~4.26) and solves each one, unguided, with every solver in turn (the order rotated per formula, so that a slow
spell of a shared machine hits all alike). A solver's time covers building it from the clause list and the search,
as in ``iclr26.rlaf.solve``. Per size it prints the medians of the time per instance, of the decisions, and of the
time per decision, and the median over formulas of the paired ratio package / contender, per instance and per
decision. ``--python`` adds the pure-Python reference (``CDCLOptions(backend="python")``), which makes the same
decisions as the native core.

Usage::

    .venv/bin/python benchmarks/rlaf_cdcl.py --sizes 50,100,150,200,250 --formulas 10 --clock cpu

``--clock cpu`` times each solve by this thread's CPU time (every solver runs in it; robust to a loaded machine);
``--clock wall`` (default) by ``perf_counter``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from pysat.solvers import Solver

from iclr26.rlaf.cdcl import CDCLOptions, CDCLSolver
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import random_3sat


def _ours(backend: str) -> Callable[[CNF], int]:
    def run(cnf: CNF) -> int:
        return CDCLSolver(cnf, options=CDCLOptions(backend=backend)).solve().decisions

    return run


def _pysat(name: str) -> Callable[[CNF], int]:
    def run(cnf: CNF) -> int:
        with Solver(name=name, bootstrap_with=[list(c) for c in cnf.clauses]) as solver:
            solver.solve()
            return int(solver.accum_stats()["decisions"])

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,100,150,200,250", help="variables n, comma-separated")
    parser.add_argument("--formulas", type=int, default=10, help="formulas per size")
    parser.add_argument("--python", action="store_true", help="also time the pure-Python reference (slow)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this thread's CPU time (every solver runs in this thread; robust to load)",
    )
    args = parser.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    solvers = {"iclr26 cdcl": _ours("native"), "minisat22": _pysat("minisat22"), "glucose4": _pysat("glucose4")}
    if args.python:
        solvers["iclr26 python"] = _ours("python")
    names = list(solvers)
    print(
        f"random 3-SAT at the threshold, {args.formulas} formulas per size, unguided; times in ms (clock={args.clock})"
    )
    print(
        f"{'n':>4} {'solver':<14}{'ms/instance':>12}{'decisions':>11}{'us/decision':>13}"
        f"{'ours/it (instance)':>20}{'ours/it (decision)':>20}"
    )
    for n in (int(x) for x in args.sizes.split(",")):
        times: dict[str, list[float]] = {name: [] for name in names}
        decisions: dict[str, list[int]] = {name: [] for name in names}
        for k in range(args.formulas):
            cnf = random_3sat(n, seed=args.seed * 100_003 + n * 1_000 + k)
            for name in names[k % len(names) :] + names[: k % len(names)]:
                start = clock()
                decisions[name].append(solvers[name](cnf))
                times[name].append(clock() - start)
        ours_t, ours_d = times["iclr26 cdcl"], decisions["iclr26 cdcl"]
        for name in names:
            per_decision = [t / max(d, 1) for t, d in zip(times[name], decisions[name], strict=True)]
            ours_per_decision = [t / max(d, 1) for t, d in zip(ours_t, ours_d, strict=True)]
            ratio_instance = statistics.median(a / b for a, b in zip(ours_t, times[name], strict=True))
            ratio_decision = statistics.median(a / b for a, b in zip(ours_per_decision, per_decision, strict=True))
            print(
                f"{n:>4} {name:<14}{statistics.median(times[name]) * 1e3:>12.2f}"
                f"{statistics.median(decisions[name]):>11.0f}{statistics.median(per_decision) * 1e6:>13.2f}"
                f"{ratio_instance:>20.3f}{ratio_decision:>20.3f}"
            )


if __name__ == "__main__":
    main()
