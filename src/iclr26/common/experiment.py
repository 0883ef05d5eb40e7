"""The contract between a paper's reproduction and the `iclr26 run` command.

A paper registers its reproduction by defining, in ``iclr26/<module>/experiment.py``::

    EXPERIMENT = Experiment(config_cls=MyConfig, run=run)

    def run(config: MyConfig, ctx: RunContext) -> Outcome:
        arms = {name: ctx.unit(f"train-{name}", lambda name=name: train_arm(config, name)) for name in ARMS}
        fig = ...; ctx.save_plot(fig, "loss.png")
        return Outcome.of(verdict(measurements, config), metrics={...}, timings={...})

The CLI builds the config (scale preset, ``--seed``, ``--set``), creates the run folder, calls ``run`` and writes
``result.json`` from the :class:`Outcome` (see :mod:`iclr26.common.records`), then the plots.

The contract every reproduction follows:

- **Units of work.** The expensive parts of a run (an arm x seed, a study) go through :meth:`RunContext.unit`, which
  stores each finished unit's result in the run folder atomically, with its key and a digest of the run's config;
  ``iclr26 run M --resume RUN_DIR`` checks every stored unit before any work (:func:`check_units`: a damaged file,
  or one of another unit or config, stops the resume with a line naming it), skips the finished units of a killed run
  and produces the same record as an uninterrupted run. Before and after every unit
  the global RNGs are reseeded from the master seed and the unit's key, so a skipped unit does not shift the random
  draws of the code that follows it. A unit's result must be picklable and hold no live objects (no modules or
  optimisers: their parameters as tensors are fine).
- **Deterministic verdicts.** The verdict (``held``, ``not held`` or ``inconclusive``, :mod:`iclr26.common.verdict`)
  and its ``evidence`` are functions of the seeded measurements only, computed by the paper's pure
  ``verdict(measurements, config)``.
  Wall-clock and CPU times go to ``Outcome.timings``, which the record keeps apart; two runs of one config and seed
  give identical records apart from ``started_utc``, ``wall_time_s``, ``timings`` and ``resumed_units``.
- **Thresholds with sources.** Every threshold or tolerance of a verdict is a config field whose help text gives its
  source; ``evidence["thresholds"]`` lists them (:func:`iclr26.common.config.threshold`).
- **Plots after the record.** :meth:`RunContext.save_plot` only registers a figure; the runner saves the plots after
  ``result.json`` is written, and a plot that fails to save is noted in the record, never loses the measurements.
- **Data parallelism (opt-in).** A reproduction whose trainers run under ``torchrun`` (DDP through
  :mod:`iclr26.common.distributed`) declares ``Experiment(..., data_parallel=True)``. Then every rank runs ``run``:
  every rank computes every unit (a unit may hold collectives), rank 0's result of a unit is broadcast so that all
  ranks continue alike, and only rank 0 writes units, the record, plots and checkpoints. On ``--resume`` rank 0
  reads the finished units back and broadcasts them to every rank.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tqdm.auto import tqdm

from iclr26.common.config import ExperimentConfig
from iclr26.common.distributed import SINGLE, World, broadcast_object
from iclr26.common.seeding import derive_seed, seed_everything
from iclr26.common.verdict import INCONCLUSIVE, STATUSES, Status, Verdict

if TYPE_CHECKING:
    import torch
    from matplotlib.figure import Figure

C = TypeVar("C", bound=ExperimentConfig)
T = TypeVar("T")

#: Longest plot name or unit key; the runner checks before any work that the output folder takes names this long.
MAX_NAME_LEN = 64
UNITS_DIR = "units"
_PLOT_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.png$")
_UNIT_KEY = re.compile(r"^[A-Za-z0-9_.=+-]+$")


@dataclass(frozen=True)
class Outcome:
    """What a reproduction returns; the CLI turns it into ``result.json``.

    Attributes:
        metrics: every measured quantity, JSON-able (numbers, lists, nested dicts). Non-finite floats are allowed
            (a diverged run) and are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
        claim_held: the verdict on the paper's headline claim (the catalog's text): ``"held"``, ``"not held"`` or
            ``"inconclusive"`` (:mod:`iclr26.common.verdict`).
        evidence: the few numbers the verdict rests on, e.g. ``{"loss_gap": 0.004, "tolerance": 0.02}``.
        measurement: one line for the report's "our measurement" column.
        notes: optional caveats shown in the record (e.g. "differences within seed spread").
        timings: wall-clock and CPU-time measurements (seconds, ratios of times). They vary between identical runs,
            so they are kept apart from ``metrics`` and never decide ``claim_held``.
        failed_gates: the gates that failed when the verdict is ``inconclusive`` (the record names them).
    """

    metrics: dict[str, Any]
    claim_held: Status
    evidence: dict[str, Any]
    measurement: str
    notes: str = ""
    timings: dict[str, Any] = field(default_factory=dict)
    failed_gates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.claim_held not in STATUSES:
            raise TypeError(f"Outcome.claim_held must be one of {STATUSES}, got {self.claim_held!r}")
        if (self.claim_held == INCONCLUSIVE) != bool(self.failed_gates):
            raise ValueError("Outcome: an inconclusive verdict names its failed gates, and only it does")
        if not self.measurement.strip():
            raise ValueError("Outcome.measurement must be a non-empty one-line summary")

    @classmethod
    def of(
        cls,
        verdict: Verdict,
        *,
        metrics: dict[str, Any],
        timings: dict[str, Any] | None = None,
        notes: str | None = None,
    ) -> Outcome:
        """The outcome of a run whose claim check is ``verdict`` (``notes`` default to the verdict's)."""
        return cls(
            metrics=metrics,
            claim_held=verdict.status,
            evidence=verdict.evidence,
            measurement=verdict.measurement,
            notes=verdict.notes if notes is None else notes,
            timings=timings or {},
            failed_gates=verdict.failed_gates,
        )


def _cpu() -> torch.device:
    """The CPU device (torch imported when a context is made, not when this module is)."""
    import torch

    return torch.device("cpu")


@dataclass
class RunContext:
    """What a running reproduction may use: its output folder, units of work, plots, progress bars and a log.

    Attributes:
        out_dir: the run folder (``runs/<module>/<stamp>``).
        seed: the run's master seed (also ``config.seed``).
        quiet: disable progress bars (tests, non-interactive use).
        figures: plot name -> figure, registered by :meth:`save_plot`; the runner saves them after the record.
        units: keys of every unit of the run so far, in the order the run reached them.
        resumed_units: those of them read back from an earlier, interrupted run of this folder.
        world: the processes of a data-parallel run (:mod:`iclr26.common.distributed`); only rank 0 writes files,
            shows progress bars and logs. A reproduction hands it to every helper that shards or reduces.
        device: the device the config's ``device`` field names, resolved once by the runner (this rank's GPU under
            torchrun); the CPU for a config without one. A reproduction hands it down instead of resolving again.
        config_digest: :func:`config_digest` of the run's config, stored with every unit and checked when read back.
        on_unit: called after each unit is stored (the runner keeps the run's elapsed time up to date with it).
    """

    out_dir: Path
    seed: int
    quiet: bool = False
    figures: dict[str, Figure] = field(default_factory=dict)
    units: list[str] = field(default_factory=list)
    resumed_units: list[str] = field(default_factory=list)
    world: World = SINGLE
    device: torch.device = field(default_factory=_cpu)
    config_digest: str = ""
    on_unit: Callable[[], None] | None = None

    @property
    def plots(self) -> list[str]:
        """Names of the plots registered so far."""
        return list(self.figures)

    def save_plot(self, fig: Figure, name: str) -> None:
        """Register ``fig`` as the PNG plot ``name`` of this run; it is saved after ``result.json`` is written.

        Raises:
            ValueError: if ``name`` is not a plain ``*.png`` file name of at most 64 characters, or is taken.
        """
        if not _PLOT_NAME.match(name) or len(name) > MAX_NAME_LEN:
            raise ValueError(
                f"plot name {name!r}: use a plain file name ending in .png (letters, digits, _.-), "
                f"at most {MAX_NAME_LEN} characters"
            )
        if name in self.figures:
            raise ValueError(f"plot name {name!r} is registered twice in one run")
        self.figures[name] = fig

    def unit(self, key: str, compute: Callable[[], T]) -> T:
        """The result of one unit of work: read back from the run folder if a resumed run finished it, else computed
        now and stored atomically before it is returned.

        Before ``compute`` runs, and after the unit whether it ran or was read back, the global RNGs (Python, NumPy,
        torch) are reseeded from the master seed and ``key``: an uninterrupted and a resumed run draw the same
        numbers everywhere.

        In a data-parallel run every rank calls ``unit`` with the same key: rank 0 decides whether the unit is
        finished (and reads it back), every rank computes an unfinished one, rank 0's result is broadcast and only
        rank 0 stores it. Every rank returns rank 0's value, so all ranks take the same path afterwards.

        Args:
            key: a name unique within the run (letters, digits, ``_.=+-``, at most 64 characters), stable across
                runs of one config, e.g. ``"train-kern-seed1"``.
            compute: the work; its result must be picklable.

        Returns:
            What ``compute`` returned (or returned in the interrupted run).

        Raises:
            ValueError: for a malformed key or one used twice in a run.
        """
        if not _UNIT_KEY.match(key) or len(key) > MAX_NAME_LEN:
            raise ValueError(f"unit key {key!r}: use letters, digits and _.=+- only, at most {MAX_NAME_LEN} characters")
        if key in self.units:
            raise ValueError(f"unit key {key!r} is used twice in one run; every unit needs its own key")
        path = self.out_dir / UNITS_DIR / f"{key}.pkl"
        main, parallel = self.world.is_main, self.world.is_distributed
        finished = path.is_file() if main else None
        if parallel:
            finished = broadcast_object(finished)  # rank 0's folder decides, shared file system or not
        if finished:
            value = None
            if main:
                value = read_unit(path, key=key, config_digest=self.config_digest)
            if parallel:
                value = broadcast_object(value)
            self.resumed_units.append(key)
        else:
            seed_everything(derive_seed(self.seed, "unit", key))
            value = compute()
            if parallel:
                value = broadcast_object(value)  # every rank continues with rank 0's result
            if main:
                _write_pickle_atomic(
                    path, {"key": key, "config": self.config_digest, "index": len(self.units), "value": value}
                )
                if self.on_unit is not None:
                    self.on_unit()
        self.units.append(key)
        seed_everything(derive_seed(self.seed, "after-unit", key))
        return value

    def progress(self, iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "") -> tqdm:
        """A progress bar on stderr (disabled when ``quiet``)."""
        return tqdm(
            iterable,
            total=total,
            desc=desc,
            file=sys.stderr,
            disable=self.quiet or not self.world.is_main,
            dynamic_ncols=True,
            mininterval=0.5,
            leave=False,
        )

    def log(self, message: str) -> None:
        """One line of progress information on stderr (kept out of progress bars' way)."""
        if not self.quiet and self.world.is_main:
            tqdm.write(message, file=sys.stderr)


class UnitError(ValueError):
    """A stored unit of work cannot be trusted (damaged, or of another unit or config); the message names the file
    and the fix."""


def config_digest(module: str, config_values: dict[str, Any]) -> str:
    """A digest of a run's module and config (its ``to_dict()``), stored with every unit of the run."""
    text = json.dumps({"module": module, "config": config_values}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_unit(path: Path, *, key: str, config_digest: str) -> Any:
    """The value of the unit stored at ``path``, after checking that it is whole and belongs to this run.

    Raises:
        UnitError: naming the file, if it cannot be read, is not a unit, holds another key than its name says, or was
            stored by a run of another config.
    """
    fix = f"delete {path} and resume again (the unit is recomputed)"
    try:
        with path.open("rb") as fh:
            data = pickle.load(fh)
    except Exception as err:  # noqa: BLE001 - any failure to read a unit back means it cannot be trusted
        raise UnitError(f"unit file {path} is damaged ({type(err).__name__}); {fix}") from None
    if not isinstance(data, dict) or not {"key", "config", "value"} <= set(data):
        raise UnitError(f"unit file {path} is not a unit of work of this version; {fix}")
    if data["key"] != key:
        raise UnitError(f"unit file {path} holds unit {data['key']!r}, not {key!r} (files swapped?); {fix}")
    if data["config"] != config_digest:
        raise UnitError(f"unit file {path} was written by a run of another config; {fix}")
    return data["value"]


def check_units(run_dir: Path, config_digest: str) -> list[str]:
    """Check every stored unit of ``run_dir`` before a resume does any work; returns their keys.

    Raises:
        UnitError: for the first unit file that :func:`read_unit` refuses.
    """
    keys = []
    for path in sorted((Path(run_dir) / UNITS_DIR).glob("*.pkl")):
        read_unit(path, key=path.stem, config_digest=config_digest)
        keys.append(path.stem)
    return keys


def _write_pickle_atomic(path: Path, data: Any) -> None:
    """Pickle ``data`` to ``path`` via a temporary file and a rename: a killed writer never leaves half a unit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Experiment(Generic[C]):
    """A reproduction entry point: its config class and its ``run(config, ctx) -> Outcome`` function.

    Attributes:
        config_cls: the config dataclass (scales, ``--set``).
        run: the reproduction.
        data_parallel: whether ``run`` may be started under ``torchrun`` with more than one process (its trainers
            shard data and average gradients through :mod:`iclr26.common.distributed`); a module without it is
            refused there before any work.
    """

    config_cls: type[C]
    run: Callable[[C, RunContext], Outcome]
    data_parallel: bool = False
