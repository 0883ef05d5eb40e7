"""The contract between a paper's reproduction and the `iclr26 run` command.

A paper registers its reproduction by defining, in ``iclr26/<module>/experiment.py``::

    EXPERIMENT = Experiment(config_cls=MyConfig, run=run)

    def run(config: MyConfig, ctx: RunContext) -> Outcome:
        for step in ctx.progress(range(config.steps), desc="train"):
            ...
        fig = ...; savefig(fig, ctx.plot_path("loss.png"))
        return Outcome(metrics={...}, claim_held=..., evidence={...}, measurement="...")

The CLI builds the config (scale preset, ``--seed``, ``--set``), creates the run folder, calls ``run`` and writes
``result.json`` from the :class:`Outcome` (see :mod:`iclr26.common.records`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from tqdm.auto import tqdm

from iclr26.common.config import ExperimentConfig

C = TypeVar("C", bound=ExperimentConfig)

_PLOT_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.png$")


@dataclass(frozen=True)
class Outcome:
    """What a reproduction returns; the CLI turns it into ``result.json``.

    Attributes:
        metrics: every measured quantity, JSON-able (numbers, lists, nested dicts). Non-finite floats are allowed
            (a diverged run) and are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
        claim_held: whether the paper's headline claim (the catalog's text) held in this run.
        evidence: the few numbers the verdict rests on, e.g. ``{"loss_gap": 0.004, "tolerance": 0.02}``.
        measurement: one line for the report's "our measurement" column.
        notes: optional caveats shown in the record (e.g. "differences within seed spread").
    """

    metrics: dict[str, Any]
    claim_held: bool
    evidence: dict[str, Any]
    measurement: str
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.claim_held, bool):
            raise TypeError(f"Outcome.claim_held must be a bool, got {type(self.claim_held).__name__}")
        if not self.measurement.strip():
            raise ValueError("Outcome.measurement must be a non-empty one-line summary")


@dataclass
class RunContext:
    """What a running reproduction may use: its output folder, progress bars and a log.

    Attributes:
        out_dir: the run folder (``runs/<module>/<stamp>``); plots go here via :meth:`plot_path`.
        seed: the run's master seed (also ``config.seed``).
        quiet: disable progress bars (tests, non-interactive use).
        plots: names of the plots registered so far (filled by :meth:`plot_path`).
    """

    out_dir: Path
    seed: int
    quiet: bool = False
    plots: list[str] = field(default_factory=list)

    def plot_path(self, name: str) -> Path:
        """The path for a PNG plot called ``name`` inside the run folder; the record lists it.

        Raises:
            ValueError: if ``name`` is not a plain ``*.png`` file name.
        """
        if not _PLOT_NAME.match(name):
            raise ValueError(f"plot name {name!r}: use a plain file name ending in .png (letters, digits, _.-)")
        if name not in self.plots:
            self.plots.append(name)
        return self.out_dir / name

    def progress(self, iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "") -> tqdm:
        """A progress bar on stderr (disabled when ``quiet``)."""
        return tqdm(
            iterable,
            total=total,
            desc=desc,
            file=sys.stderr,
            disable=self.quiet,
            dynamic_ncols=True,
            mininterval=0.5,
            leave=False,
        )

    def log(self, message: str) -> None:
        """One line of progress information on stderr (kept out of progress bars' way)."""
        if not self.quiet:
            tqdm.write(message, file=sys.stderr)


@dataclass(frozen=True)
class Experiment(Generic[C]):
    """A reproduction entry point: its config class and its ``run(config, ctx) -> Outcome`` function."""

    config_cls: type[C]
    run: Callable[[C, RunContext], Outcome]
