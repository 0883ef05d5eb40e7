"""Benchmark of zoprox's squared distances against ``torch.cdist``: the distances alone and one sampler iteration.

Issue 18 measured ZOD-PS 1.9-5.5x slower than the same sampler with ``torch.cdist`` distances at N = 400-1600, with
O(N²·d) memory (the (N, N, d) tensor of differences). :func:`iclr26.zoprox.estimator.squared_distances` now uses
the centred product form ‖a − c‖² − 2 (a − c)·(b − c) + ‖b − c‖², chunked over the rows of ``a``. This script times,
interleaved round by round in one process on one thread:

- ``dist``: ``squared_distances(a, b)`` against ``torch.cdist(a, b).square()`` on (N, d) × (N, d) float64 points;
- ``iter``: one ZOD-PS iteration (:func:`iclr26.zoprox.sample`, N particles, M Monte Carlo samples, T sub-steps, a
  standard Gaussian potential) with the package's distances against the same iteration with the distances swapped
  for ``torch.cdist(a, b).square()`` (same random numbers);

and prints, for each size, the median of the per-round ratios package / cdist (and its min and max): the target is
≤ 1.05 for the iteration. The previous explicit-difference form is timed beside them (``--old``) at sizes where its
(N, N, d) tensor fits.

Usage::

    .venv/bin/python benchmarks/zoprox_distances.py --sizes 400,800,1600 --dims 5,50 --n-mc 50 --steps 10 --rounds 7
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


def old_sq(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The form before issue 18: an (n, m, d) tensor of differences."""
    return (a[:, None, :] - b[None, :, :]).square().sum(-1)


PACKAGE = est.squared_distances


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


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
    parser.add_argument("--old", action="store_true", help="also time the old (n, m, d) form where N*N*d <= 4e7")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(s) for s in args.dims.split(",")]
    print(
        f"threads={torch.get_num_threads()} M={args.n_mc} T={args.steps} rounds={args.rounds} "
        f"(ratio = package / cdist; median, min, max over rounds)"
    )
    print(
        f"{'what':<6}{'N':>6}{'d':>5}{'package ms':>12}{'cdist ms':>10}{'median':>9}{'min':>7}{'max':>7}{'old ms':>10}"
    )
    for d in dims:
        for n in sizes:
            gen = torch.Generator().manual_seed(n + d)
            a = torch.randn(n, d, dtype=torch.float64, generator=gen)
            b = torch.randn(n, d, dtype=torch.float64, generator=gen)
            x0 = torch.randn(n, d, dtype=torch.float64, generator=gen)
            err = float((PACKAGE(a, b) - old_sq(a, b)).abs().max()) if n * n * d <= 4e7 else float("nan")
            cases = {
                "dist": {"package": lambda a=a, b=b: PACKAGE(a, b), "cdist": lambda a=a, b=b: cdist_sq(a, b)},
                "iter": {
                    "package": one_iteration(PACKAGE, x0, args.n_mc, args.steps, 0),
                    "cdist": one_iteration(cdist_sq, x0, args.n_mc, args.steps, 0),
                },
            }
            if args.old and n * n * d <= 4e7:
                cases["dist"]["old"] = lambda a=a, b=b: old_sq(a, b)
                cases["iter"]["old"] = one_iteration(old_sq, x0, args.n_mc, args.steps, 0)
            for what, fns in cases.items():
                for fn in fns.values():  # warm-up
                    fn()
                times: dict[str, list[float]] = {name: [] for name in fns}
                for r in range(args.rounds):
                    order = list(fns) if r % 2 == 0 else list(reversed(fns))  # alternate who goes first
                    for name in order:
                        times[name].append(timed(fns[name]))
                ratios = [p / c for p, c in zip(times["package"], times["cdist"], strict=True)]
                old = f"{1e3 * statistics.median(times['old']):>10.2f}" if "old" in times else f"{'-':>10}"
                print(
                    f"{what:<6}{n:>6}{d:>5}{1e3 * statistics.median(times['package']):>12.2f}"
                    f"{1e3 * statistics.median(times['cdist']):>10.2f}{statistics.median(ratios):>9.3f}"
                    f"{min(ratios):>7.3f}{max(ratios):>7.3f}{old}"
                )
            if err == err:
                print(f"      max |package - explicit differences| at N={n}, d={d}: {err:.1e}")


if __name__ == "__main__":
    main()
