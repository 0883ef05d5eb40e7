"""What every sampler of this module returns: final samples, snapshots along the run, and what they cost.

Shape glossary: ``N`` particles (or independent chains), ``d`` dimension, ``S`` recorded snapshots, ``K`` iterations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from iclr26.zoprox.oracle import PotentialOracle, as_oracle

Progress = Callable[[Iterable[int]], Iterable[int]]


@dataclass(frozen=True)
class SampleResult:
    """The outcome of one sampler run.

    Attributes:
        samples: ``(N, d)`` the particles after the last iteration.
        snapshots: ``(S, N, d)`` particles at the recorded iterations (the initial state first).
        snapshot_iters: ``(S,)`` iteration index of each snapshot (0 = initial state).
        snapshot_evals: ``(S,)`` potential evaluations spent up to each snapshot.
        snapshot_grads: ``(S,)`` gradient evaluations spent up to each snapshot.
        snapshot_rounds: ``(S,)`` sequential batched oracle calls up to each snapshot (parallel-oracle cost).
        snapshot_wall: ``(S,)`` seconds since the start of the run at each snapshot.
        n_iters: iterations run.
        n_evals: potential evaluations in total.
        n_grads: gradient evaluations in total.
        n_rounds: sequential batched oracle calls in total.
        wall_time_s: wall-clock seconds of the run.
        diagnostics: per-iteration ``(K,)`` series named by the sampler (e.g. ``ess_mean`` for the zeroth-order
            proximal sampler, ``acceptance`` for Metropolis samplers, ``trials_mean`` for rejection samplers).
    """

    samples: torch.Tensor
    snapshots: torch.Tensor
    snapshot_iters: torch.Tensor
    snapshot_evals: torch.Tensor
    snapshot_grads: torch.Tensor
    snapshot_rounds: torch.Tensor
    snapshot_wall: torch.Tensor
    n_iters: int
    n_evals: int
    n_grads: int
    n_rounds: int
    wall_time_s: float
    diagnostics: dict[str, torch.Tensor] = field(default_factory=dict)


class Recorder:
    """Collects snapshots and the oracle's counts relative to the start of one run.

    Snapshots are taken at the initial state, at the last planned iteration and every ``record_every`` iterations
    counted back from it (iterations K, K − r, K − 2r, …). Aligning the grid on the end, not on the start, puts a
    snapshot exactly at the end of each equal share of a query budget even for a sampler that pays an initial
    evaluation (random-walk Metropolis, MALA).

    Args:
        oracle: the oracle whose counters are read (they are not reset; the start values are subtracted).
        record_every: snapshot every this many iterations, counted back from ``n_iters``.
        n_iters: total iterations planned.
    """

    def __init__(self, oracle: PotentialOracle, *, record_every: int, n_iters: int) -> None:
        check_count("record_every", record_every)
        self.oracle = oracle
        self.record_every = record_every
        self.n_iters = n_iters
        self._start = (oracle.n_evals, oracle.n_grads, oracle.n_rounds)
        self._t0 = time.perf_counter()
        self._rows: list[tuple[int, int, int, int, float]] = []
        self._snaps: list[torch.Tensor] = []
        self.diagnostics: dict[str, list[float]] = {}

    def counts(self) -> tuple[int, int, int]:
        """(evaluations, gradients, rounds) spent since the start."""
        e0, g0, r0 = self._start
        return self.oracle.n_evals - e0, self.oracle.n_grads - g0, self.oracle.n_rounds - r0

    def record(self, iteration: int, x: torch.Tensor, *, force: bool = False) -> None:
        """Snapshot ``x`` after ``iteration`` if it is due (the first, the last, every ``record_every`` before it)."""
        due = iteration == 0 or (self.n_iters - iteration) % self.record_every == 0
        if due or force:
            self._snaps.append(x.detach().clone())
            self._rows.append((iteration, *self.counts(), time.perf_counter() - self._t0))

    def add(self, **values: float) -> None:
        """Append one value per named per-iteration diagnostic."""
        for key, value in values.items():
            self.diagnostics.setdefault(key, []).append(float(value))

    def result(self, x: torch.Tensor, n_iters: int) -> SampleResult:
        """Freeze the run into a :class:`SampleResult` with final samples ``x``."""
        if not self._rows or self._rows[-1][0] != n_iters:
            self.record(n_iters, x, force=True)
        iters, evals, grads, rounds, wall = zip(*self._rows, strict=True)
        n_evals, n_grads, n_rounds = self.counts()
        return SampleResult(
            samples=x.detach().clone(),
            snapshots=torch.stack(self._snaps),
            snapshot_iters=torch.tensor(iters),
            snapshot_evals=torch.tensor(evals),
            snapshot_grads=torch.tensor(grads),
            snapshot_rounds=torch.tensor(rounds),
            snapshot_wall=torch.tensor(wall, dtype=torch.float64),
            n_iters=n_iters,
            n_evals=n_evals,
            n_grads=n_grads,
            n_rounds=n_rounds,
            wall_time_s=time.perf_counter() - self._t0,
            diagnostics={k: torch.tensor(v, dtype=torch.float64) for k, v in self.diagnostics.items()},
        )


class RunStart(NamedTuple):
    """What every sampler of this module sets up before its first iteration.

    Attributes:
        oracle: the counted potential.
        x: ``(N, d)`` the checked initial particles in the computation dtype.
        recorder: the snapshot recorder of the run (its counts start now).
    """

    oracle: PotentialOracle
    x: torch.Tensor
    recorder: Recorder


def start_run(
    potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor],
    x0: torch.Tensor,
    *,
    n_iters: int,
    dtype: torch.dtype | None,
    record_every: int,
) -> RunStart:
    """Wrap ``potential``, check ``x0`` and ``n_iters``, and start the recorder (no snapshot is taken yet).

    Raises:
        ValueError: naming ``x0``, ``n_iters`` or ``record_every`` when they are invalid.
    """
    oracle = as_oracle(potential)
    x = initial_particles(x0, dtype)
    check_count("n_iters", n_iters, 0)
    return RunStart(oracle, x, Recorder(oracle, record_every=record_every, n_iters=n_iters))


def iterations(n_iters: int, progress: Progress | None) -> Iterable[int]:
    """The iteration indices 1..K, wrapped by ``progress`` (e.g. a tqdm bar) when given."""
    steps = range(1, n_iters + 1)
    return progress(steps) if progress is not None else steps


def initial_particles(x0: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """``x0`` checked (a finite ``(N, d)`` tensor) and cast to ``dtype`` (``None``: keep a float dtype).

    Raises:
        ValueError: naming ``x0`` if it is not a finite 2-D floating tensor.
    """
    if not isinstance(x0, torch.Tensor) or x0.dim() != 2 or x0.shape[0] < 1 or x0.shape[1] < 1:
        shape = tuple(x0.shape) if isinstance(x0, torch.Tensor) else type(x0).__name__
        raise ValueError(f"x0: expected initial particles as a non-empty (n_particles, d) tensor, got {shape}")
    if dtype is None and not x0.is_floating_point():
        raise ValueError(f"x0: expected a floating dtype, got {x0.dtype}; pass dtype=torch.float64")
    x = x0.detach().to(dtype=dtype or x0.dtype).clone()
    if not torch.isfinite(x).all():
        raise ValueError("x0: initial particles contain NaN or inf")
    return x


def check_positive(name: str, value: float) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a finite number > 0."""
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name}: must be a finite number > 0, got {value}")


def check_count(name: str, value: int, minimum: int = 1) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is an int >= ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name}: must be an integer >= {minimum}, got {value!r}")
