"""Benchmark of zoprox's squared distances against ``torch.cdist``: the distances alone and one sampler iteration.

:func:`iclr26.zoprox.estimator.squared_distances` uses the centred product form ‖a − c‖² − 2 (a − c)·(b − c) +
‖b − c‖², chunked over the rows of ``a`` (O(N·M) memory). This script times, interleaved round by round in one process
on one thread:

- ``dist``: ``squared_distances(a, b)`` against ``torch.cdist(a, b).square()`` on (N, d) × (N, d) float64 points;
- ``iter``: one ZOD-PS iteration (:func:`iclr26.zoprox.sample`, N particles, M Monte Carlo samples, T sub-steps, a
  standard Gaussian potential) with the package's distances against the same iteration with the distances swapped
  for ``torch.cdist(a, b).square()`` (same random numbers);

and prints, for each size, the median of the per-round ratios package / cdist with their interquartile range, min and
max, and the largest difference from explicit differences (the (N, N, d) form) where that tensor fits in memory.

``--clock cpu`` (the default) times by the CPU time of this thread (``time.thread_time``; torch runs on that one
thread), which other jobs on a loaded machine inflate far less than the wall time of ``--clock wall``.

Usage (the committed output is ``benchmarks/zoprox_distances.txt``)::

    .venv/bin/python benchmarks/zoprox_distances.py --sizes 400,800,1600 --dims 5,50 --rounds 9 --clock cpu
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import iclr26.zoprox.estimator as est
from iclr26.zoprox import sample


def cdist_sq(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The contender: ``torch.cdist`` (matrix-multiply path for large inputs), squared."""
    return torch.cdist(a, b).square()


def explicit_sq(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The reference: an (n, m, d) tensor of explicit differences."""
    return (a[:, None, :] - b[None, :, :]).square().sum(-1)


PACKAGE = est.squared_distances


CLOCK = time.thread_time  # --clock wall: time.perf_counter


def timed(fn: Callable[[], object]) -> float:
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


def quartiles(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles (the interquartile range of the per-round ratios)."""
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def one_iteration(dist: Callable, x0: torch.Tensor, n_mc: int, steps: int, seed: int) -> Callable[[], object]:
    def run() -> object:
        est.squared_distances = dist  # the estimator looks the function up at call time
        try:
            return sample(
                lambda x: 0.5 * x.square().sum(-1),
                x0,
                1,
                0.5,
                n_mc,
                n_diffusion_steps=steps,
                generator=torch.Generator().manual_seed(seed),
            )
        finally:
            est.squared_distances = PACKAGE

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="400,800,1600", help="particle counts N, comma-separated")
    parser.add_argument("--dims", default="5,50", help="dimensions d, comma-separated")
    parser.add_argument("--n-mc", type=int, default=50, help="Monte Carlo samples M per particle and sub-step")
    parser.add_argument("--steps", type=int, default=10, help="diffusion sub-steps T")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per size (after one warm-up)")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="thread CPU time (default) or wall-clock time"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(s) for s in args.dims.split(",")]
    print(
        f"threads={torch.get_num_threads()} M={args.n_mc} T={args.steps} rounds={args.rounds} clock={args.clock} "
        f"torch={torch.__version__} (ratio = package / cdist; median, IQR, min, max over rounds)"
    )
    print(f"{'what':<6}{'N':>6}{'d':>5}{'package ms':>12}{'cdist ms':>10}{'median':>9}{'IQR':>14}{'min':>7}{'max':>7}")
    for d in dims:
        for n in sizes:
            gen = torch.Generator().manual_seed(n + d)
            a = torch.randn(n, d, dtype=torch.float64, generator=gen)
            b = torch.randn(n, d, dtype=torch.float64, generator=gen)
            x0 = torch.randn(n, d, dtype=torch.float64, generator=gen)
            err = float((PACKAGE(a, b) - explicit_sq(a, b)).abs().max()) if n * n * d <= 4e7 else float("nan")
            cases = {
                "dist": {"package": lambda a=a, b=b: PACKAGE(a, b), "cdist": lambda a=a, b=b: cdist_sq(a, b)},
                "iter": {
                    "package": one_iteration(PACKAGE, x0, args.n_mc, args.steps, 0),
                    "cdist": one_iteration(cdist_sq, x0, args.n_mc, args.steps, 0),
                },
            }
            for what, fns in cases.items():
                for fn in fns.values():  # warm-up
                    fn()
                times: dict[str, list[float]] = {name: [] for name in fns}
                for r in range(args.rounds):
                    order = list(fns) if r % 2 == 0 else list(reversed(fns))  # alternate who goes first
                    for name in order:
                        times[name].append(timed(fns[name]))
                ratios = [p / c for p, c in zip(times["package"], times["cdist"], strict=True)]
                q1, q3 = quartiles(ratios)
                print(
                    f"{what:<6}{n:>6}{d:>5}{1e3 * statistics.median(times['package']):>12.2f}"
                    f"{1e3 * statistics.median(times['cdist']):>10.2f}{statistics.median(ratios):>9.3f}"
                    f"{f'{q1:.3f}-{q3:.3f}':>14}{min(ratios):>7.3f}{max(ratios):>7.3f}"
                )
            if err == err:
                print(f"      max |package - explicit differences| at N={n}, d={d}: {err:.1e}")


if __name__ == "__main__":
    main()
