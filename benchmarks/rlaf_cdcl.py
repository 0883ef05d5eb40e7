"""RLAF's own CDCL core against MiniSat 2.2, Glucose 4 and CaDiCaL (PySAT), per instance, on the same formulas.

For each size ``n`` the script draws ``--formulas`` random 3-SAT formulas at the satisfiability threshold (the rlaf
generator, ``⌊4.258n + 58.26n^(-2/3)⌋`` clauses, about half satisfiable) and solves each one, unguided, with every
solver in turn (the order rotated per formula, so that a slow spell of a shared machine hits all alike). A solver's
time covers building it from the clause list and the search, as in ``iclr26.rlaf.solve``. Every solver's answer
(SAT/UNSAT) is checked against the others' on every formula. Per size it prints, per solver, the median time per
instance and the median decisions, and the median over formulas of the paired ratio ours / contender per instance
with its interquartile range. Per instance is the fair figure: the solvers make different searches (MiniSat makes
more, cheaper decisions), so a time per decision compares different work.

Usage::

    .venv/bin/python benchmarks/rlaf_cdcl.py --sizes 100,150,200 --formulas 10 --clock cpu

``--clock cpu`` times each solve by this thread's CPU time (every solver runs in it; robust to a loaded machine);
``--clock wall`` by ``perf_counter``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from pysat.solvers import Solver

from iclr26.rlaf.cdcl import CDCLSolver
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import random_3sat

#: The contenders from PySAT: MiniSat 2.2 and Glucose 4 (the paper's base solver family), CaDiCaL 1.5.3 and 1.9.5.
CONTENDERS = ("minisat22", "glucose4", "cadical153", "cadical195")


def _ours(cnf: CNF) -> tuple[bool, int]:
    result = CDCLSolver(cnf).solve()
    return result.status == "SAT", result.decisions


def _pysat(name: str) -> Callable[[CNF], tuple[bool, int]]:
    def run(cnf: CNF) -> tuple[bool, int]:
        with Solver(name=name, bootstrap_with=[list(c) for c in cnf.clauses]) as solver:
            sat = bool(solver.solve())
            return sat, int(solver.accum_stats()["decisions"])

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,150,200", help="variables n, comma-separated")
    parser.add_argument("--formulas", type=int, default=10, help="formulas per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="cpu",
        help="cpu (default): this thread's CPU time (every solver runs in this thread; robust to load); wall: "
        "perf_counter",
    )
    args = parser.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    solvers = {"iclr26 cdcl": _ours, **{name: _pysat(name) for name in CONTENDERS}}
    names = list(solvers)
    print(
        f"random 3-SAT at the threshold, {args.formulas} formulas per size, unguided, one thread; "
        f"clock={args.clock}; ratio = ours / contender per instance, median [IQR] over formulas"
    )
    print(f"{'n':>4} {'solver':<12}{'ms/instance':>12}{'decisions':>11}{'ours/it':>10}{'IQR':>16}")
    for n in (int(x) for x in args.sizes.split(",")):
        times: dict[str, list[float]] = {name: [] for name in names}
        decisions: dict[str, list[int]] = {name: [] for name in names}
        answers = []
        for k in range(args.formulas):
            cnf = random_3sat(n, seed=args.seed * 100_003 + n * 1_000 + k)
            found = {}
            for name in names[k % len(names) :] + names[: k % len(names)]:
                start = clock()
                found[name], count = solvers[name](cnf)
                times[name].append(clock() - start)
                decisions[name].append(count)
            if len(set(found.values())) != 1:
                raise SystemExit(f"n={n} formula {k}: the solvers disagree: {found}")
            answers.append(found["iclr26 cdcl"])
        ours = times["iclr26 cdcl"]
        for name in names:
            ratios = [a / b for a, b in zip(ours, times[name], strict=True)]
            q1, q3 = np.quantile(ratios, [0.25, 0.75])
            print(
                f"{n:>4} {name:<12}{statistics.median(times[name]) * 1e3:>12.2f}"
                f"{statistics.median(decisions[name]):>11.0f}{statistics.median(ratios):>10.3f}"
                f"{f'[{q1:.3f}, {q3:.3f}]':>16}"
            )
        print(f"     answers agree on all {args.formulas} formulas ({sum(answers)} SAT)")


if __name__ == "__main__":
    main()
